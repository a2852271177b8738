"""Helpers for the live adapter's tests."""

from __future__ import annotations

import time
from collections.abc import Callable
from typing import Any

from kube_api import KubeApiServer

from volcanolib.kube.live.cache import KubernetesCache
from volcanolib.scheduler import CycleResult, Scheduler


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
