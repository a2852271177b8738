"""Fixtures for the live adapter's tests: the stand-in API server and caches watching it."""

from __future__ import annotations

from collections.abc import Callable, Iterator
from pathlib import Path
from typing import Any

import pytest
from kube_api import KubeApiServer, make_queue

from volcanolib.kube.live import load_api
from volcanolib.kube.live.cache import KubernetesCache


@pytest.fixture
def server() -> Iterator[KubeApiServer]:
    """A running stand-in API server with the default queue."""
    srv = KubeApiServer().start()
    srv.create("queues", make_queue("default"))
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
