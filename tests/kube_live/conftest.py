"""Fixtures for the live adapter's tests: the stand-in API server and a cache watching it."""

from __future__ import annotations

import time
from collections.abc import Callable, Iterator
from pathlib import Path
from typing import Any

import pytest
from kube_api import KubeApiServer

from volcanolib.kube.live import load_api
from volcanolib.kube.live.cache import KubernetesCache
from volcanolib.scheduler import CycleResult, Scheduler


@pytest.fixture
def server() -> Iterator[KubeApiServer]:
    """A running stand-in API server with the default queue."""
    srv = KubeApiServer().start()
    srv.create("queues", {"apiVersion": "scheduling.volcano.sh/v1beta1", "kind": "Queue",
                          "metadata": {"name": "default"}, "spec": {"weight": 1}, "status": {"state": "Open"}})  # fmt: skip
    yield srv
    srv.stop()


@pytest.fixture
def kubeconfig(server: KubeApiServer, tmp_path: Path) -> Path:
    return Path(server.write_kubeconfig(tmp_path / "kubeconfig"))


@pytest.fixture
def make_cache(kubeconfig: Path) -> Iterator[Callable[..., KubernetesCache]]:
    """Start caches watching the server (stopped at the end of the test)."""
    caches: list[KubernetesCache] = []

    def make(**options: Any) -> KubernetesCache:
        cache = KubernetesCache(load_api(str(kubeconfig)), **options)
        cache.start()
        assert cache.wait_ready(10)
        caches.append(cache)
        return cache

    yield make
    for cache in caches:
        cache.stop(5)


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
