"""Fixtures for the live adapter's tests: an API server (the stand-in and the real one) and caches watching it.

Every test that takes ``server`` runs twice: against the in-process stand-in
(``tests/kube_api``) and against a real kube-apiserver with etcd
(``tests/realcluster.py``; skipped without ``go``, a failure with
``VOLCANOLIB_REQUIRE_GO=1``). The real server's handle offers the stand-in's
state methods (``create``, ``get``, ``patch``, ``delete``, ``set_pod_phase``,
``bind``, ``requests`` from its audit log ...); it is emptied before each test.

A test stays on the stand-in only when it needs a fault or a timing that only
the stand-in can produce on demand; :data:`STANDIN_ONLY` names each one and
why. Where the real server can produce the same situation another way, a test
in ``test_kube_live_real.py`` does it there.
"""

from __future__ import annotations

import contextlib
from collections.abc import Callable, Iterator
from pathlib import Path
from typing import Any

import pytest
from conftest_helpers import ApiServer, api_server
from kube_api import KubeApiServer

from volcanolib.kube.live import load_api
from volcanolib.kube.live.cache import KubernetesCache

#: Tests that run against the stand-in only, and why.
STANDIN_ONLY: dict[str, str] = {
    # Faults injected on requests (500, 404, 503 on demand, for ever or n times).
    "test_a_failed_bind_returns_the_task_to_pending_and_it_binds_next_cycle": "a 500 on one bind",
    "test_a_leader_that_cannot_renew_stops_binding_before_another_takes_over": "500 on every Lease update",
    "test_a_write_that_gets_no_answer_is_sent_again_under_later_fields": "a 503 on one PodGroup patch",
    "test_no_snapshot_until_every_kind_is_listed": "404 on the podgroups list, then none",
    "test_the_cluster_role_grants_exactly_what_serve_uses": (
        "a 500 on one bind to make serve re-read its pod; the real server's test runs serve with "
        "deploy/rbac.yaml's role and nothing else (test_kube_live_real.py)"
    ),
    # Requests held by the server for a time, to catch the adapter mid-flight.
    "test_a_pod_bound_elsewhere_meanwhile_is_never_bound_twice": (
        "the pod's re-read is held back; the real server's 409 and 404 on binds: test_kube_live_real.py"
    ),
    "test_sigterm_while_binds_are_in_flight_finishes_them_and_exits_cleanly": "binds held for a second",
    "test_a_later_status_replaces_a_queued_one_and_writes_stay_in_order": "one PodGroup patch held for a second",
    "test_a_relist_while_binds_are_in_flight_keeps_them_assumed": "binds held while the history expires",
    # Watch streams cut, history forgotten, bookmarks every 50 ms: the real server's expiry
    # (etcd compaction, 410 Gone) and restart are tests of test_kube_live_real.py.
    "test_watches_dropped_mid_stream_lose_and_duplicate_nothing": "watches cut after n events",
    "test_410_gone_relists_and_reconciles_deletions_missed_meanwhile": "history forgotten while the cache waits",
    "test_bookmarks_move_the_resource_version_on": "a bookmark every 50 ms (a real server: about one a minute)",
    # Objects the real server refuses.
    "test_a_queue_of_weight_0_is_warned_about_once_and_its_pods_say_why_they_wait": (
        "a Queue of weight 0, which Volcano's CRD refuses on a real server (minimum 1)"
    ),
}


#: Modules whose tests that take ``server`` use faults only the stand-in injects (answers lost,
#: outages on demand, Retry-After, requests held); their tests that hold on any server take
#: ``api_server`` instead.
STANDIN_ONLY_MODULES: dict[str, str] = {
    "test_kube_live_faults": "answers dropped, the server gone and back, 429 with Retry-After, on demand",
}


def pytest_generate_tests(metafunc: pytest.Metafunc) -> None:
    if "server" in metafunc.fixturenames:
        name = metafunc.function.__name__
        module = metafunc.module.__name__.rpartition(".")[2]
        only = name in STANDIN_ONLY or module in STANDIN_ONLY_MODULES
        metafunc.parametrize("server", ["standin"] if only else ["standin", "real"], indirect=True)
    if "api_server" in metafunc.fixturenames:
        metafunc.parametrize("api_server", ["standin", "real"], indirect=True)


@pytest.fixture
def server(request: pytest.FixtureRequest) -> Iterator[Any]:
    """A running API server with the default queue: the stand-in, or the real one emptied."""
    yield from api_server(request)


@pytest.fixture(name="api_server")
def any_api_server(request: pytest.FixtureRequest) -> Iterator[ApiServer]:
    """An API server for a test that holds on each: the stand-in, then the real one emptied."""
    yield from api_server(request)


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
