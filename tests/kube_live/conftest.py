"""Fixtures for the live adapter's tests: the stand-in API server and caches watching it."""

from __future__ import annotations

import contextlib
from collections.abc import Callable, Iterator
from pathlib import Path
from typing import Any

import pytest
from conftest_helpers import ApiServer
from kube_api import KubeApiServer, make_queue

from volcanolib.kube.live import load_api
from volcanolib.kube.live.cache import KubernetesCache

#: The API servers behind ``api_server``: tests that ask for it hold against each. A real
#: kube-apiserver joins this list where one can be started (it must offer the methods of
#: :class:`conftest_helpers.ApiServer`); faults only the stand-in can inject use ``server``.
API_SERVERS = ["standin"]


def _standin() -> KubeApiServer:
    srv = KubeApiServer().start()
    srv.create("queues", make_queue("default"))
    return srv


@pytest.fixture
def server() -> Iterator[KubeApiServer]:
    """A running stand-in API server with the default queue."""
    srv = _standin()
    yield srv
    srv.stop()


@pytest.fixture(params=API_SERVERS)
def api_server(request: pytest.FixtureRequest) -> Iterator[ApiServer]:
    """A running API server with the default queue: each of :data:`API_SERVERS` in turn."""
    if request.param != "standin":  # pragma: no cover - a server added to API_SERVERS needs its fixture here
        raise LookupError(f"no fixture starts the API server {request.param!r}")
    srv = _standin()
    yield srv
    srv.stop()


@pytest.fixture
def kubeconfig(server: KubeApiServer, tmp_path: Path) -> Path:
    return Path(server.write_kubeconfig(tmp_path / "kubeconfig"))


@pytest.fixture
def api_kubeconfig(api_server: ApiServer, tmp_path: Path) -> Path:
    """A kubeconfig for :func:`api_server`."""
    return Path(api_server.write_kubeconfig(tmp_path / "kubeconfig"))


@contextlib.contextmanager
def _caches(kubeconfig: Path) -> Iterator[Callable[..., KubernetesCache]]:
    """Start caches watching the server of ``kubeconfig`` (stopped when the block ends)."""
    caches: list[KubernetesCache] = []

    def make(**options: Any) -> KubernetesCache:
        cache = KubernetesCache(load_api(str(kubeconfig)), **options)
        cache.start()
        assert cache.wait_ready(10)
        caches.append(cache)
        return cache

    try:
        yield make
    finally:
        for cache in caches:
            cache.stop(5)


@pytest.fixture
def make_cache(kubeconfig: Path) -> Iterator[Callable[..., KubernetesCache]]:
    """Start caches watching the stand-in (stopped at the end of the test)."""
    with _caches(kubeconfig) as make:
        yield make


@pytest.fixture
def make_api_cache(api_kubeconfig: Path) -> Iterator[Callable[..., KubernetesCache]]:
    """Start caches watching :func:`api_server` (stopped at the end of the test)."""
    with _caches(api_kubeconfig) as make:
        yield make
