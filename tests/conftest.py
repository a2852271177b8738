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


#: Set by .ci/run: the tests that need Go (the oracle, the control plane) run, and a missing
#: Go or a failed build is a failure, never a skip.
REQUIRE_GO = os.environ.get("VOLCANOLIB_REQUIRE_GO") == "1"
_GO_LANE = "needs Go: run by .ci/run, `nox -s oracle`, or `pytest --go`"


def pytest_addoption(parser: pytest.Parser) -> None:
    parser.addoption("--runslow", action="store_true", default=False, help="run tests marked slow")
    parser.addoption(
        "--check-fast-paths",
        action="store_true",
        default=False,
        help="check every fast path against its reference in every test (VOLCANOLIB_CHECK_FAST_PATHS=1)",
    )
    parser.addoption(
        "--go",
        action="store_true",
        default=False,
        help="run the tests that build the oracle or the control plane with Go (marked go)",
    )


def pytest_configure(config: pytest.Config) -> None:
    if config.getoption("--check-fast-paths"):
        os.environ["VOLCANOLIB_CHECK_FAST_PATHS"] = "1"


#: Fixtures that start a real control plane (kube-apiserver and etcd built with Go).
_REAL_FIXTURES = frozenset({"real_cluster", "make_control_plane"})
#: Parameters of the live tests' server fixtures that pick the real API server.
_SERVER_PARAMS = ("server", "api_server")


def _needs_real_server(item: pytest.Item) -> bool:
    if _REAL_FIXTURES.intersection(getattr(item, "fixturenames", ())):
        return True
    params = getattr(getattr(item, "callspec", None), "params", {})
    return any(params.get(name) == "real" for name in _SERVER_PARAMS)


@pytest.hookimpl(tryfirst=True)
def pytest_collection_modifyitems(config: pytest.Config, items: list[pytest.Item]) -> None:
    """Mark the tests on a real API server ``go``; leave the slow soak and scale runs to ``nox -s soak``.

    The Go lane (the oracle, the real control plane) is left to .ci/run: deselected, not skipped.
    """
    for item in items:
        if "go" not in item.keywords and _needs_real_server(item):
            item.add_marker(pytest.mark.go)
    dropped: list[pytest.Item] = []
    if not config.getoption("--runslow"):
        dropped += [item for item in items if "slow" in item.keywords]
    if not (config.getoption("--go") or REQUIRE_GO):
        go = [item for item in items if "go" in item.keywords and item not in dropped]
        config.stash[_go_key] = len(go)
        workeroutput = getattr(config, "workeroutput", None)
        if workeroutput is not None:  # a pytest-xdist worker: the controller prints the summary
            workeroutput[_GO_OUTPUT] = len(go)
        dropped += go
    if dropped:
        config.hook.pytest_deselected(items=dropped)
        keep = set(map(id, dropped))
        items[:] = [item for item in items if id(item) not in keep]


_go_key = pytest.StashKey[int]()
_GO_OUTPUT = "volcanolib_go_deselected"


@pytest.hookimpl(optionalhook=True)
def pytest_testnodedown(node: object, error: object) -> None:
    """With pytest-xdist, the workers collect: carry their count of the Go lane to the controller's summary."""
    count = getattr(node, "workeroutput", {}).get(_GO_OUTPUT, 0)
    config: pytest.Config = node.config  # type: ignore[attr-defined]
    config.stash[_go_key] = max(config.stash.get(_go_key, 0), count)


def pytest_terminal_summary(terminalreporter: pytest.TerminalReporter, config: pytest.Config) -> None:
    """Say why the Go lane did not run, so that its absence is never silent."""
    count = config.stash.get(_go_key, 0)
    if count:
        terminalreporter.write_line(f"{count} tests deselected: {_GO_LANE}")
