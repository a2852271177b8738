"""Watches through the stand-in: dropped streams, 410 Gone, bookmarks, relists."""

from __future__ import annotations

from collections import Counter
from collections.abc import Callable
from pathlib import Path

import pytest
from conftest_helpers import eventually, settle
from kube_api import KubeApiServer, make_node, make_pod, make_podgroup

from volcanolib.errors import CacheError
from volcanolib.kube.live import load_api
from volcanolib.kube.live.cache import KubernetesCache
from volcanolib.scheduler import Scheduler


def _pods_reflector(cache: KubernetesCache):  # type: ignore[no-untyped-def]
    return next(r for r in cache.reflectors if r.kind == "pods")


def _assert_same(server: KubeApiServer, cache: KubernetesCache) -> None:
    settle(server, cache)
    uids = [t.uid for t in cache.tasks()]
    assert not [uid for uid, n in Counter(uids).items() if n > 1]
    jobs = {j.uid: sorted(t.name for t in j.tasks.values()) for j in cache.jobs()}
    expected: dict[str, list[str]] = {}
    for pod in server.list("pods"):
        group = pod["metadata"].get("annotations", {}).get("scheduling.k8s.io/group-name")
        if group:
            expected.setdefault(f"default/{group}", []).append(pod["metadata"]["name"])
    assert {k: v for k, v in jobs.items() if v} == {k: sorted(v) for k, v in expected.items()}
    assert cache.consistency_problems() == []


def test_watches_dropped_mid_stream_lose_and_duplicate_nothing(
    server: KubeApiServer, make_cache: Callable[..., KubernetesCache]
) -> None:
    server.create("nodes", make_node("n0", cpu="64", memory="256Gi", pods="500"))
    server.create("podgroups", make_podgroup("g", min_member=1))
    cache = make_cache()
    reflector = _pods_reflector(cache)
    server.drop_watches_after(7)  # every watch opened from now on is cut after 7 events
    for round_ in range(6):
        opened = reflector.watches
        for i in range(round_ * 10, round_ * 10 + 10):
            server.create("pods", make_pod(f"p{i}", group="g", node_name="n0" if i % 2 else None))
        server.delete("pods", f"p{round_ * 10 + 4}", grace_period=0)
        server.drop_watches(abrupt=True)
        eventually(lambda: reflector.watches > opened + 1, what="the watch to reconnect")  # noqa: B023
    server.drop_watches_after(None)
    _assert_same(server, cache)
    assert reflector.watches > 3  # it did reconnect
    assert reflector.lists == 1  # from the last version seen, without listing again


def test_410_gone_relists_and_reconciles_deletions_missed_meanwhile(
    server: KubeApiServer, make_cache: Callable[..., KubernetesCache]
) -> None:
    server.create("nodes", make_node("n0", pods="200"))
    server.create("podgroups", make_podgroup("g", min_member=1))
    for i in range(10):
        server.create("pods", make_pod(f"p{i}", group="g", cpu="100m"))
    cache = make_cache()
    reflector = _pods_reflector(cache)
    # Freeze the cache (its watch thread waits for the lock) while the server changes and forgets
    # its history: on reconnect the old version is 410 Gone and the pods must be listed again.
    with cache.lock:
        server.expire_history(drop_watches=True)
        server.delete("pods", "p3", grace_period=0)
        server.delete("pods", "p4", grace_period=0)
        server.create("pods", make_pod("late", group="g", cpu="100m"))
        server.expire_history(drop_watches=True)
    eventually(lambda: reflector.lists >= 2, what="a relist")
    _assert_same(server, cache)
    names = sorted(t.name for t in cache.tasks())
    assert names == sorted([f"p{i}" for i in range(10) if i not in (3, 4)] + ["late"])


def test_bookmarks_move_the_resource_version_on(
    server: KubeApiServer, make_cache: Callable[..., KubernetesCache]
) -> None:
    server.set_bookmark_interval(0.05)
    cache = make_cache()
    nodes = next(r for r in cache.reflectors if r.kind == "nodes")
    before = nodes.resource_version
    server.create("pods", make_pod("elsewhere"))  # a change the nodes watch only hears of by bookmark
    eventually(lambda: nodes.resource_version != before, what="a bookmark")
    assert nodes.lists == 1


def test_node_heartbeats_do_not_touch_the_cache(
    server: KubeApiServer, make_cache: Callable[..., KubernetesCache]
) -> None:
    server.create("nodes", make_node("n0"))
    cache = make_cache()
    cache.snapshot()
    node = server.get("nodes", "n0")
    node["status"]["conditions"][0]["lastHeartbeatTime"] = "2030-01-01T00:00:00Z"
    server.update("nodes", node)
    node = server.get("nodes", "n0")
    node["metadata"].setdefault("labels", {})["zone"] = "a"
    server.create("nodes", make_node("marker"))
    eventually(lambda: len(cache.snapshot().nodes) == 2, what="the marker node")
    assert cache.snapshot().nodes["n0"].node is not None
    server.update("nodes", node)
    eventually(lambda: cache.snapshot().nodes["n0"].node.labels.get("zone") == "a", what="the label")  # type: ignore[union-attr]


def test_no_snapshot_until_every_kind_is_listed(server: KubeApiServer, kubeconfig: Path) -> None:
    server.create("nodes", make_node("n0"))
    server.fail_next(-1, 404, method="GET", resource="podgroups")  # as if the CRD were not installed yet
    cache = KubernetesCache(load_api(str(kubeconfig)))
    cache.start()
    try:
        assert not cache.wait_ready(1.0)
        with pytest.raises(CacheError, match="still listing podgroups"):
            cache.snapshot()
        # A refusal, not an absence: retried after 0.5 s doubling to 30 s, not about every second.
        reflector = next(r for r in cache.reflectors if r.kind == "podgroups")
        assert reflector.refusals.history and not reflector.backoff.history
        server.clear_faults()  # the CRD appears: the next attempt lists it
        assert cache.wait_ready(30)
        assert list(cache.snapshot().nodes) == ["n0"]
    finally:
        cache.stop()


def test_a_relist_while_binds_are_in_flight_keeps_them_assumed(
    server: KubeApiServer, make_cache: Callable[..., KubernetesCache]
) -> None:
    server.create("nodes", make_node("n0", pods="50"))
    for i in range(5):
        server.create("pods", make_pod(f"p{i}", cpu="100m"))
    cache = make_cache()
    reflector = _pods_reflector(cache)
    server.delay(1.0, 5, method="POST", resource="pods", subresource="binding")
    result = Scheduler(cache).run_once()
    assert len(result.binds) == 5
    # The binds are held by the server; meanwhile the watch loses its history and lists again,
    # and the list still shows every pod unbound.
    server.expire_history(drop_watches=True)
    eventually(lambda: reflector.lists >= 2, what="a relist")
    assert all(t.node_name == "n0" for t in cache.tasks())  # still assumed, not Pending again
    assert cache.flush(30)
    settle(server, cache)
    assert cache.consistency_problems() == []
    again = Scheduler(cache).run_once()
    assert again.binds == ()
    assert len(server.requests("POST", "/binding")) == 5
