"""Binds under faults: lost answers, an API server gone mid-bind, ``429`` with Retry-After, conflicts.

Tests taking ``api_server`` hold against every server of ``API_SERVERS`` (the
faults a real API server produces by itself: a pod bound or deleted
meanwhile, a restart); those taking ``server`` inject faults only the
stand-in can (answers lost, delays, ``429``).
"""

from __future__ import annotations

import threading
import time
from collections.abc import Callable
from pathlib import Path

import pytest
from conftest_helpers import ApiServer, cycle, eventually, settle
from kube_api import KubeApiServer, make_node, make_pod, make_podgroup

from volcanolib.api.task import TaskStatus
from volcanolib.kube.live import load_api
from volcanolib.kube.live._backoff import BACKOFF_CAP
from volcanolib.kube.live.cache import KubernetesCache
from volcanolib.scheduler import Scheduler


def bind_posts(server: KubeApiServer, name: str) -> list[int]:
    """Status codes of the binding requests made for one pod (0: no answer was sent)."""
    return [code for _method, _path, code in server.requests("POST", f"/pods/{name}/binding")]


def make_counting(make: Callable[..., KubernetesCache], **options: object) -> tuple[KubernetesCache, list[str]]:
    """A cache whose failure reports (bind, throttled, eviction) are recorded in the list returned."""
    seen: list[str] = []
    return make(on_failure=seen.append, **options), seen


def uid_of(server: ApiServer, name: str) -> str:
    return str(server.get("pods", name)["metadata"]["uid"])


def _bind_directly(kubeconfig: Path, name: str, node: str) -> None:
    """Bind a pod through the API, as another scheduler (or an earlier attempt) would."""
    body = {"apiVersion": "v1", "kind": "Binding", "metadata": {"name": name}, "target": {"name": node}}
    load_api(str(kubeconfig)).request("POST", f"/api/v1/namespaces/default/pods/{name}/binding", body=body)


# ------------------------------------------------------------------ the outcome of a bind is unknown


def test_binds_in_flight_when_the_server_goes_away_keep_their_node_until_the_watch_shows_them(
    server: KubeApiServer, make_cache: Callable[..., KubernetesCache]
) -> None:
    server.create("nodes", make_node("n0", cpu="4", pods="20"))
    for i in range(5):
        server.create("pods", make_pod(f"p{i}", cpu="1"))
    cache, seen = make_counting(make_cache)
    scheduler = Scheduler(cache)
    server.delay(1.0, 4, method="POST", resource="pods", subresource="binding")
    result = scheduler.run_once()
    placed = sorted(t.name for t, _ in result.binds)
    assert len(placed) == 4  # the fifth does not fit
    (left,) = {f"p{i}" for i in range(5)} - set(placed)
    # The binds reach the server, which holds them; it goes away before answering (they take effect).
    eventually(lambda: all(f.remaining == 0 for f in server.store.faults), what="the binds to arrive")
    with server.outage():
        assert cache.flush(10)  # the binder got no answers, and could not read the pods
        # The server took them before it went (the stand-in finishes them while away; a real one before).
        eventually(lambda: len(server.requests("POST", "/binding")) == 4, what="the binds to take effect")
        # The outcome is unknown: each task keeps its node, and so its resources.
        for name in placed:
            task = cache.get_task(uid_of(server, name))
            assert task is not None and task.node_name == "n0" and task.status is TaskStatus.BOUND
        assert len(cache.unresolved) == 4
        node = cache.get_node("n0")
        assert node is not None and node.idle.milli_cpu == 0
        assert cache.consistency_problems() == []
        assert scheduler.run_once().binds == ()  # nothing is placed on the node meanwhile
        assert seen == []
    # The watch shows the binds took effect: nothing is sent again, nothing counts as failed.
    eventually(lambda: len(cache.unresolved) == 0, what="the watch to resolve the binds")
    settle(server, cache)
    for name in placed:
        assert bind_posts(server, name) == [201]
        assert server.get("pods", name)["spec"]["nodeName"] == "n0"
    assert seen == []
    assert [e.reason for e in cache.events if e.object == f"Pod default/{placed[0]}"][-1] == "Scheduled"
    cycle(scheduler, cache)
    assert not server.get("pods", left)["spec"].get("nodeName")  # never over-committed
    assert cache.consistency_problems() == []


def _unknown_bind(server: KubeApiServer, pod: str, read_after: float) -> None:
    """The next bind of ``pod`` gets no answer and does not take effect; the first read of the pod
    fails (503), the next is answered ``read_after`` seconds late."""
    server.drop_answers(1, method="POST", resource="pods", subresource="binding", apply=False)
    server.fail_next(1, 503, method="GET", resource="pods", name=pod)
    server.delay(read_after, 1, method="GET", resource="pods", name=pod)


def test_an_unknown_bind_found_unbound_once_the_server_answers_is_retried_as_a_failed_bind(
    server: KubeApiServer, make_cache: Callable[..., KubernetesCache]
) -> None:
    server.create("nodes", make_node("n0"))
    server.create("pods", make_pod("p"))
    cache, seen = make_counting(make_cache)
    scheduler = Scheduler(cache)
    uid = uid_of(server, "p")
    _unknown_bind(server, "p", read_after=1.0)
    cycle(scheduler, cache)
    eventually(lambda: uid in cache.unresolved, what="the bind to be unresolved")
    task = cache.get_task(uid)
    assert task is not None and task.node_name == "n0" and task.status is TaskStatus.BOUND
    # The read answers: unbound, so the bind failed and the task is Pending again ...
    eventually(lambda: uid not in cache.unresolved, what="the read to answer")
    task = cache.get_task(uid)
    assert task is not None and task.status is TaskStatus.PENDING and task.node_name == ""
    assert seen == ["bind"]
    assert [e.reason for e in cache.events if e.object == "Pod default/p"][-1] == "FailedBinding"
    # ... and the next cycle binds it.
    cycle(scheduler, cache)
    assert bind_posts(server, "p") == [0, 201]
    assert server.get("pods", "p")["spec"]["nodeName"] == "n0"


def test_an_unknown_bind_whose_pod_is_deleted_releases_its_node(
    server: KubeApiServer, make_cache: Callable[..., KubernetesCache]
) -> None:
    server.create("nodes", make_node("n0", cpu="1"))
    server.create("pods", make_pod("p", cpu="1"))
    cache, seen = make_counting(make_cache)
    uid = uid_of(server, "p")
    _unknown_bind(server, "p", read_after=3.0)
    cycle(Scheduler(cache), cache)
    eventually(lambda: uid in cache.unresolved, what="the bind to be unresolved")
    server.delete("pods", "p", grace_period=0)
    eventually(lambda: cache.get_task(uid) is None, what="the deletion to be seen")
    assert uid not in cache.unresolved
    node = cache.get_node("n0")
    assert node is not None and node.idle.milli_cpu == 1000
    assert cache.consistency_problems() == []
    assert seen == []  # released, not failed


# ------------------------------------------------------------------ an answer lost, a conflict


def test_a_bind_that_took_effect_without_an_answer_is_not_sent_again_and_is_a_success(
    server: KubeApiServer, make_cache: Callable[..., KubernetesCache]
) -> None:
    server.create("nodes", make_node("n0"))
    server.create("pods", make_pod("a"))
    cache, seen = make_counting(make_cache, bind_workers=1)  # one connection, kept alive between binds
    scheduler = Scheduler(cache)
    cycle(scheduler, cache)
    assert bind_posts(server, "a") == [201]
    server.create("pods", make_pod("b"))
    eventually(lambda: cache.get_task(uid_of(server, "b")) is not None, what="the new pod")
    server.drop_answers(1, method="POST", resource="pods", subresource="binding")
    cycle(scheduler, cache)
    assert bind_posts(server, "b") == [201]  # taken, its answer lost: read again, not sent again
    assert server.get("pods", "b")["spec"]["nodeName"] == "n0"
    assert seen == []
    reasons = [e.reason for e in cache.events if e.object == "Pod default/b"]
    assert "FailedBinding" not in reasons and reasons[-1] == "Scheduled"
    settle(server, cache)
    task = cache.get_task(uid_of(server, "b"))
    assert task is not None and task.node_name == "n0" and task.status is TaskStatus.BOUND


def test_a_bind_that_did_not_take_effect_without_an_answer_is_sent_again_after_a_read(
    server: KubeApiServer, make_cache: Callable[..., KubernetesCache]
) -> None:
    server.create("nodes", make_node("n0"))
    server.create("pods", make_pod("p"))
    cache, seen = make_counting(make_cache)
    server.drop_answers(1, method="POST", resource="pods", subresource="binding", apply=False)
    cycle(Scheduler(cache), cache)
    assert bind_posts(server, "p") == [0, 201]
    assert [code for _m, _p, code in server.requests("GET", "/pods/p")] == [200]  # read before sending again
    assert server.get("pods", "p")["spec"]["nodeName"] == "n0"
    assert seen == []


def test_a_conflict_for_a_pod_already_bound_to_the_same_node_is_a_success(
    api_server: ApiServer, api_kubeconfig: Path, make_api_cache: Callable[..., KubernetesCache]
) -> None:
    api_server.create("nodes", make_node("n0"))
    api_server.create("pods", make_pod("p"))
    cache, seen = make_counting(make_api_cache)
    with cache.lock:  # the watch cannot show the bind before the cycle decides it again
        _bind_directly(api_kubeconfig, "p", "n0")
        result = Scheduler(cache).run_once()
    assert cache.flush(10)
    assert [(t.name, node) for t, node in result.binds] == [("p", "n0")]
    assert seen == []
    reasons = [e.reason for e in cache.events if e.object == "Pod default/p"]
    assert "FailedBinding" not in reasons and reasons[-1] == "Scheduled"
    settle(api_server, cache)  # type: ignore[arg-type]
    task = cache.get_task(uid_of(api_server, "p"))
    assert task is not None and task.node_name == "n0" and task.status is TaskStatus.BOUND


def test_a_conflict_for_a_pod_bound_to_another_node_is_a_failure_and_the_pod_keeps_that_node(
    api_server: ApiServer, api_kubeconfig: Path, make_api_cache: Callable[..., KubernetesCache]
) -> None:
    api_server.create("nodes", make_node("n0", cpu="2"))
    api_server.create("nodes", make_node("n1", cpu="1"))
    api_server.create("pods", make_pod("p"))
    cache, seen = make_counting(make_api_cache)
    with cache.lock:
        _bind_directly(api_kubeconfig, "p", "n1")
        result = Scheduler(cache).run_once()
    assert cache.flush(10)
    assert [(t.name, node) for t, node in result.binds] == [("p", "n0")]
    assert seen == ["bind"]
    settle(api_server, cache)  # type: ignore[arg-type]
    task = cache.get_task(uid_of(api_server, "p"))
    assert task is not None and task.node_name == "n1"
    assert cache.consistency_problems() == []


def test_a_bind_for_a_pod_deleted_meanwhile_drops_its_task(
    api_server: ApiServer, make_api_cache: Callable[..., KubernetesCache]
) -> None:
    api_server.create("nodes", make_node("n0", cpu="1"))
    api_server.create("pods", make_pod("p", cpu="1"))
    cache, seen = make_counting(make_api_cache)
    uid = uid_of(api_server, "p")
    with cache.lock:
        api_server.delete("pods", "p", grace_period=0)
        Scheduler(cache).run_once()
    assert cache.flush(10)
    eventually(lambda: cache.get_task(uid) is None, what="the task to go")
    assert seen == ["bind"]
    node = cache.get_node("n0")
    assert node is not None and node.idle.milli_cpu == 1000


# ------------------------------------------------------------------ 429 and Retry-After


def test_a_throttled_bind_pauses_the_whole_binder_and_writes_nothing(
    server: KubeApiServer, make_cache: Callable[..., KubernetesCache]
) -> None:
    server.create("nodes", make_node("n0", pods="20"))
    server.create("pods", make_pod("a", cpu="100m"))
    cache, seen = make_counting(make_cache)
    scheduler = Scheduler(cache)
    server.fail_next(2, 429, method="POST", resource="pods", subresource="binding", retry_after=2)
    scheduler.run_once()
    eventually(lambda: bind_posts(server, "a") == [429], what="the first refusal")
    # Another pod is bound while the binder pauses: it waits too.
    server.create("pods", make_pod("b", cpu="100m"))
    eventually(lambda: cache.get_task(uid_of(server, "b")) is not None, what="the new pod")
    cycle(scheduler, cache)
    assert cache.flush(20)
    assert server.get("pods", "a")["spec"]["nodeName"] == "n0"
    assert server.get("pods", "b")["spec"]["nodeName"] == "n0"
    timed = server.timed_requests("POST", "/binding")
    assert [code for _t, _m, _p, code in timed].count(429) == 2 and len(timed) == 4
    first_refusal = timed[0][0]
    first_b = next(t for t, _m, path, _code in timed if "/pods/b/" in path)
    assert first_b >= first_refusal + 2.0  # b waited out the pause that a's refusal started
    assert seen == ["throttled", "throttled"]
    # A throttled bind reads nothing, writes no condition and posts no FailedBinding event.
    assert server.requests("GET", "/pods/a") == []
    assert server.requests("PATCH", "/pods/a/status") == []
    assert all(e.reason != "FailedBinding" for e in cache.events)


def test_a_bind_throttled_too_often_fails_as_client_go_would(
    server: KubeApiServer, make_cache: Callable[..., KubernetesCache], monkeypatch: pytest.MonkeyPatch
) -> None:
    import volcanolib.kube.live._binder as binder

    server.create("nodes", make_node("n0"))
    server.create("pods", make_pod("p"))
    cache, seen = make_counting(make_cache)
    monkeypatch.setattr(binder, "MAX_THROTTLED", 2)
    server.fail_next(-1, 429, method="POST", resource="pods", subresource="binding", retry_after=0)
    cycle(Scheduler(cache), cache)
    assert bind_posts(server, "p") == [429, 429, 429]
    assert seen == ["throttled", "throttled", "bind"]
    task = cache.get_task(uid_of(server, "p"))
    assert task is not None and task.status is TaskStatus.PENDING


# ------------------------------------------------------------------ the watch after an outage


def test_after_an_outage_the_watches_retry_at_most_about_a_second_apart_and_scheduling_resumes(
    api_server: ApiServer, api_kubeconfig: Path
) -> None:
    from volcanolib.kube.live.serve import Server

    api_server.create("nodes", make_node("n0", pods="20"))
    serve = Server(load_api(str(api_kubeconfig)), period=0.05)
    stop = threading.Event()
    thread = threading.Thread(target=serve.run, args=(stop,), daemon=True)
    thread.start()
    try:
        eventually(lambda: serve.cycles > 0, what="a cycle")
        with api_server.outage():
            time.sleep(4.0)  # long enough for a back-off doubling from 0.1 s to pass 1 s
        back = time.monotonic()
        api_server.create("podgroups", make_podgroup("after", min_member=1))
        api_server.create("pods", make_pod("after-0", group="after"))
        eventually(lambda: api_server.get("pods", "after-0")["spec"].get("nodeName"), 30, "the pod to bind")
        print(f"bound {time.monotonic() - back:.2f} s after the server came back")
        waits = [w for r in serve.cache.reflectors for w in r.backoff.history]
        assert len(waits) >= 5 * 4  # every kind kept trying ...
        assert max(waits) <= BACKOFF_CAP  # ... at most a second apart
    finally:
        stop.set()
        thread.join(10)
