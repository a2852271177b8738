"""Shared test settings."""

from __future__ import annotations

import os

import pytest
from hypothesis import HealthCheck, settings

# The stand-in Kubernetes API server's fixtures (kube_api, kube_api_factory,
# kube_api_kubeconfig), for every test that talks to a cluster.
pytest_plugins = ["kube_api.fixtures", "realcluster"]

settings.register_profile("ci", max_examples=60, deadline=None, suppress_health_check=[HealthCheck.too_slow])
settings.register_profile("dev", max_examples=40, deadline=None)
settings.load_profile("ci" if os.environ.get("CI") else "dev")


def pytest_addoption(parser: pytest.Parser) -> None:
    parser.addoption("--runslow", action="store_true", default=False, help="run tests marked slow")


def pytest_collection_modifyitems(config: pytest.Config, items: list[pytest.Item]) -> None:
    """Leave the slow soak and scale runs to ``nox -s soak`` (deselected, not skipped)."""
    if config.getoption("--runslow"):
        return
    slow = [item for item in items if "slow" in item.keywords]
    if slow:
        config.hook.pytest_deselected(items=slow)
        items[:] = [item for item in items if "slow" not in item.keywords]
