"""Helpers for the live adapter's tests."""

from __future__ import annotations

import contextlib
import time
from collections.abc import Callable, Iterator
from pathlib import Path
from typing import Any, Protocol

import pytest
from kube_api import KubeApiServer, make_queue

from volcanolib.kube.live.cache import KubernetesCache
from volcanolib.scheduler import CycleResult, Scheduler


class ApiServer(Protocol):
    """What a test may do with any API server it runs against (the stand-in, or a real one).

    Objects are named as the stand-in names them (``"pods"``, ``"nodes"``,
    ``"podgroups"``); a real server's handle implements these through its API.
    """

    def create(self, resource: str, obj: dict[str, Any], namespace: str | None = None) -> dict[str, Any]: ...

    def get(self, resource: str, name: str, namespace: str = "default") -> dict[str, Any]: ...

    def find(self, resource: str, name: str, namespace: str = "default") -> dict[str, Any] | None: ...

    def list(self, resource: str, namespace: str | None = None) -> list[dict[str, Any]]: ...

    def delete(self, resource: str, name: str, namespace: str = "default", grace_period: int | None = None) -> None: ...

    def outage(self) -> contextlib.AbstractContextManager[None]:
        """The server is gone inside the block (connections refused, open ones cut) and back after it."""
        ...

    def write_kubeconfig(self, path: str | Path, namespace: str = "default") -> Path: ...

    def requests(self, method: str | None = None, contains: str = "") -> list[tuple[str, str, int]]:
        """The requests answered so far, oldest first, as ``(method, path with query, status code)``, filtered.

        A real server gives them from its audit log; tests read it to show what a client did (or did not) send.
        """
        ...


def eventually(check: Callable[[], Any], timeout: float = 10.0, what: str = "condition") -> Any:
    """Poll ``check`` until it returns something true; fail after ``timeout`` seconds."""
    deadline = time.monotonic() + timeout
    while True:
        value = check()
        if value:
            return value
        if time.monotonic() > deadline:
            raise AssertionError(f"timed out waiting for {what}")
        time.sleep(0.02)


def cycle(scheduler: Scheduler, cache: KubernetesCache) -> CycleResult:
    """One scheduling cycle, then wait for its binds and writes to be answered."""
    result = scheduler.run_once()
    assert cache.flush(10)
    return result


def settle(server: KubeApiServer, cache: KubernetesCache, timeout: float = 10.0) -> None:
    """Wait until the cache has seen every pod the server holds, as the server holds it."""

    def same() -> bool:
        pods = {p["metadata"]["uid"]: p for p in server.list("pods")}
        with cache.lock:
            tasks = {t.uid: t for t in cache.tasks()}
            if set(pods) != set(tasks):
                return False
            return all((p["spec"].get("nodeName") or "") == tasks[uid].node_name for uid, p in pods.items())

    eventually(same, timeout, "the cache to match the server")


def api_server(request: pytest.FixtureRequest, *, kubelet: bool = True, **standin_options: Any) -> Iterator[Any]:
    """The ``server`` and ``api_server`` fixtures' body: the stand-in (with these options) or the real server emptied.

    :param kubelet: on the real server, remove deleted pods as their kubelets
        would (the stand-in does by itself, unless ``pod_deletion_delay=None``).
    """
    if request.param == "standin":
        srv = KubeApiServer(**standin_options).start()
        srv.create("queues", make_queue("default"))
        yield srv
        srv.stop()
        return
    from realcluster import RealServer

    cluster = request.getfixturevalue("real_cluster")
    cluster.reset()
    handle = RealServer(cluster)
    handle.create("queues", make_queue("default"))
    if kubelet:
        handle.finalize_deleted_pods()
    try:
        yield handle
    finally:
        handle.close()
