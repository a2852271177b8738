"""pytest fixtures that run the stand-in API server.

Registered for the whole test suite by ``tests/conftest.py``; a test asks for
``kube_api`` (a running :class:`~kube_api.server.KubeApiServer`, whose ``url`` a client
points at) or for ``kube_api_factory`` to start servers with other options.
"""

from __future__ import annotations

from collections.abc import Callable, Iterator
from pathlib import Path
from typing import Any

import pytest

from .server import KubeApiServer


@pytest.fixture
def kube_api_factory() -> Iterator[Callable[..., KubeApiServer]]:
    """Start stand-in servers with the given options (see :class:`KubeApiServer`); all are
    stopped when the test ends."""
    started: list[KubeApiServer] = []

    def start(**options: Any) -> KubeApiServer:
        server = KubeApiServer(**options).start()
        started.append(server)
        return server

    yield start
    for server in reversed(started):
        server.stop()


@pytest.fixture
def kube_api(kube_api_factory: Callable[..., KubeApiServer]) -> KubeApiServer:
    """A running stand-in API server on 127.0.0.1 and a free port, default options."""
    return kube_api_factory()


@pytest.fixture
def kube_api_kubeconfig(kube_api: KubeApiServer, tmp_path: Path) -> Path:
    """A kubeconfig file pointing at :func:`kube_api`."""
    return kube_api.write_kubeconfig(tmp_path / "kubeconfig")
