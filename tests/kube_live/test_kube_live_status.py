"""PodGroup status writes through the stand-in: only what changed, once, in order, coalesced, counts eventually."""

from __future__ import annotations

import threading
import time
from collections.abc import Callable
from typing import Any

import attrs
import pytest
from conftest_helpers import cycle, eventually, settle
from kube_api import KubeApiServer, make_node, make_pod, make_podgroup, make_queue

from volcanolib.api.job import PodGroupPhase
from volcanolib.kube.live._client import KubeApi
from volcanolib.kube.live.cache import KubernetesCache
from volcanolib.scheduler import Scheduler


class Spy:
    """A :class:`KubeApi` that remembers the body of every PodGroup PATCH it sends."""

    def __init__(self, api: KubeApi) -> None:
        self.api = api
        self.patches: list[tuple[str, dict[str, Any]]] = []
        self._lock = threading.Lock()

    def request(self, method: str, path: str, **kwargs: Any) -> Any:
        if method == "PATCH" and "/podgroups/" in path:
            with self._lock:
                self.patches.append((path.rsplit("/", 1)[1], kwargs["body"]["status"]))
        return self.api.request(method, path, **kwargs)

    def of(self, name: str) -> list[dict[str, Any]]:
        with self._lock:
            return [status for group, status in self.patches if group == name]


def _patches(server: KubeApiServer, name: str = "") -> int:
    return len(server.requests("PATCH", f"/podgroups/{name}"))


def _running_groups(server: KubeApiServer, make_cache: Callable[..., KubernetesCache], **options: Any) -> Any:
    """Two groups of two pods bound on one node, their status settled; the cache and scheduler."""
    server.create("nodes", make_node("n0", cpu="8"))
    for group in ("a", "b"):
        server.create("podgroups", make_podgroup(group, min_member=2))
        for i in range(2):
            server.create("pods", make_pod(f"{group}-{i}", cpu="1", group=group))
    cache = make_cache(**options)
    spy = Spy(cache.status.api)
    cache.status.api = spy  # type: ignore[assignment]
    scheduler = Scheduler(cache)
    for _ in range(3):  # bind; then Running (bound); then nothing changes
        cycle(scheduler, cache)
        settle(server, cache)
    eventually(lambda: server.get("podgroups", "a").get("status", {}).get("phase") == "Running", what="a Running")
    return cache, scheduler, spy


def test_unchanged_groups_get_no_patch_and_a_phase_change_is_written_once_with_only_what_changed(
    server: KubeApiServer, make_cache: Callable[..., KubernetesCache]
) -> None:
    cache, scheduler, spy = _running_groups(server, make_cache)
    first, second = spy.of("a")[:2]
    assert set(first) == {"phase", "conditions", "running", "succeeded", "failed"}  # nothing known: all of it
    assert first["phase"] == "Inqueue" and second["phase"] == "Running"  # Binding, then Bound
    assert second == {"phase": "Running"}  # the condition and the counts did not change
    before = _patches(server)
    for _ in range(4):
        cycle(scheduler, cache)
        time.sleep(0.05)
    assert _patches(server) == before  # nothing changed: not one request

    server.delete("pods", "b-1", grace_period=0)  # b falls below its minMember: its phase moves
    eventually(lambda: cache.get_task(server_uid(cache, "b-1")) is None, what="b-1 gone")
    cycle(scheduler, cache)
    for _ in range(3):
        cycle(scheduler, cache)
    assert _patches(server, "a") == len(spy.of("a")) == 2  # a never changed
    # b: below its minMember it is Pending with an Unschedulable condition, then enqueued again.
    assert [status["phase"] for status in spy.of("b")] == ["Inqueue", "Running", "Pending", "Inqueue"]
    assert [sorted(status) for status in spy.of("b")[1:]] == [["phase"], ["conditions", "phase"], ["phase"]]
    assert server.get("podgroups", "b")["status"]["phase"] == "Inqueue"


def server_uid(cache: KubernetesCache, name: str) -> str:
    return cache.pods.known.get(f"default/{name}", "")


def _start_and_cycle(server: KubeApiServer, cache: KubernetesCache, scheduler: Scheduler, pod: str) -> None:
    """The pod's kubelet starts it; once the cache has seen that, one cycle."""
    server.set_pod_phase(pod, "Running")
    eventually(lambda: cache.get_task(server_uid(cache, pod)).status.name == "RUNNING", what=f"{pod} Running")
    cycle(scheduler, cache)


def test_counts_alone_are_held_until_the_interval_then_written(
    server: KubeApiServer, make_cache: Callable[..., KubernetesCache]
) -> None:
    cache, scheduler, spy = _running_groups(server, make_cache, count_interval=4.0)
    before = len(spy.of("a"))
    # Counts last written at the first write: sent now, or held if that was less than 4 s ago.
    _start_and_cycle(server, cache, scheduler, "a-0")
    _start_and_cycle(server, cache, scheduler, "a-1")
    assert cache.status.writer.held == 1  # within 4 s of the last counts: held
    assert server.get("podgroups", "a")["status"]["running"] < 2
    # No cycle runs meanwhile: the held counts are sent when they come due.
    eventually(lambda: server.get("podgroups", "a")["status"]["running"] == 2, timeout=15, what="the counts")
    assert spy.of("a")[before:][-1] == {"running": 2}
    assert len(spy.of("a")[before:]) <= 2
    assert server.get("podgroups", "a")["status"]["phase"] == "Running"
    for _ in range(3):
        cycle(scheduler, cache)
    assert len(spy.of("a")[before:]) <= 2  # and nothing after


def test_held_counts_are_written_when_the_cache_stops(
    server: KubeApiServer, make_cache: Callable[..., KubernetesCache]
) -> None:
    cache, scheduler, spy = _running_groups(server, make_cache, count_interval=3600)
    before = len(spy.of("a"))
    _start_and_cycle(server, cache, scheduler, "a-0")
    assert cache.status.writer.held == 1
    assert server.get("podgroups", "a")["status"]["running"] == 0
    cache.stop(5)
    assert spy.of("a")[before:] == [{"running": 1}]
    assert server.get("podgroups", "a")["status"]["running"] == 1


def test_a_later_status_replaces_a_queued_one_and_writes_stay_in_order(
    server: KubeApiServer, make_cache: Callable[..., KubernetesCache]
) -> None:
    cache, _scheduler, spy = _running_groups(server, make_cache)
    before = _patches(server, "a")
    job = cache.snapshot().jobs["default/a"]
    server.delay(1.0, 1, method="PATCH", resource="podgroups")
    sent = len(spy.of("a"))
    for phase in (PodGroupPhase.PENDING, PodGroupPhase.INQUEUE, PodGroupPhase.UNKNOWN, PodGroupPhase.RUNNING):
        job.pod_group = attrs.evolve(job.pod_group, phase=phase)
        cache.status.update_pod_group(job)  # the first is in flight (delayed); the others wait behind it
        eventually(lambda: len(spy.of("a")) > sent, what="the first write in flight")
    assert cache.flush(10)
    phases = [status["phase"] for status in spy.of("a")[-2:]]
    assert phases == ["Pending", "Running"]  # Inqueue and Unknown were replaced before they were sent
    assert _patches(server, "a") == before + 2
    assert cache.status.writer.coalesced >= 2
    assert server.get("podgroups", "a")["status"]["phase"] == "Running"


def test_a_write_that_gets_no_answer_is_sent_again_under_later_fields(
    server: KubeApiServer, make_cache: Callable[..., KubernetesCache]
) -> None:
    cache, _scheduler, spy = _running_groups(server, make_cache)
    job = cache.snapshot().jobs["default/a"]
    server.fail_next(1, 503, method="PATCH", resource="podgroups")
    job.pod_group = attrs.evolve(job.pod_group, phase=PodGroupPhase.PENDING, running=7)
    cache.status.update_pod_group(job)
    eventually(lambda: server.get("podgroups", "a")["status"]["phase"] == "Pending", what="the retry")
    status = server.get("podgroups", "a")["status"]
    assert (status["phase"], status["running"]) == ("Pending", 7)
    assert [s["phase"] for s in spy.of("a")[-2:]] == ["Pending", "Pending"]  # refused, then sent again


def test_a_phase_change_sends_held_counts_along_at_once(
    server: KubeApiServer, make_cache: Callable[..., KubernetesCache]
) -> None:
    cache, _scheduler, spy = _running_groups(server, make_cache, count_interval=3600)
    job = cache.snapshot().jobs["default/a"]
    job.pod_group = attrs.evolve(job.pod_group, running=1)
    cache.status.update_pod_group(job)
    assert cache.flush(10) and cache.status.writer.held == 1
    job.pod_group = attrs.evolve(job.pod_group, phase=PodGroupPhase.PENDING, running=2)
    cache.status.update_pod_group(job)
    assert cache.flush(10) and cache.status.writer.held == 0
    assert spy.of("a")[-1] == {"phase": "Pending", "running": 2}
    status = server.get("podgroups", "a")["status"]
    assert (status["phase"], status["running"]) == ("Pending", 2)


def _groups_applied(monkeypatch: Any) -> list[str]:
    """The names of the PodGroups the cache takes from the watch from now on, in order."""
    added: list[str] = []
    original = KubernetesCache.add_pod_group

    def add_pod_group(self: KubernetesCache, pg: Any) -> None:
        added.append(pg.name)
        original(self, pg)

    monkeypatch.setattr(KubernetesCache, "add_pod_group", add_pod_group)
    return added


def test_our_own_status_coming_back_leaves_the_cache_as_a_fresh_list_would(
    server: KubeApiServer, make_cache: Callable[..., KubernetesCache], monkeypatch: Any
) -> None:
    added = _groups_applied(monkeypatch)
    cache, _scheduler, spy = _running_groups(server, make_cache)
    assert len(spy.patches) == 4
    eventually(lambda: all(server.get("podgroups", g)["status"]["phase"] == "Running" for g in "ab"))
    time.sleep(0.2)  # the watch delivers the last status writes
    assert sorted(added) == ["a", "b"]  # listed once each; the four writes coming back were not applied again
    fresh = make_cache()
    mine, theirs = cache.snapshot().jobs, fresh.snapshot().jobs
    for key in ("default/a", "default/b"):
        a, b = mine[key].pod_group, theirs[key].pod_group
        assert a.status_key() == b.status_key()
        # Condition times and ids are not rewritten when the condition itself stays (as Volcano compares them).
        assert len(a.conditions) == len(b.conditions)
        assert all(x.same_as(y) for x, y in zip(a.conditions, b.conditions, strict=True))


def test_an_earlier_write_of_ours_coming_back_late_leaves_the_later_status(
    server: KubeApiServer, make_cache: Callable[..., KubernetesCache], monkeypatch: Any
) -> None:
    cache, _scheduler, _spy = _running_groups(server, make_cache)
    eventually(lambda: server.get("podgroups", "a")["status"]["phase"] == "Running")
    assert cache.flush(10)
    time.sleep(0.2)  # the watch delivers the last status writes
    earlier = server.get("podgroups", "a")
    job = cache.snapshot().jobs["default/a"]
    assert job.pod_group.phase is PodGroupPhase.RUNNING
    # A later status of the scheduler's, queued; then the watch shows the earlier one again, late.
    job.pod_group = attrs.evolve(job.pod_group, phase=PodGroupPhase.PENDING, running=1)
    cache.update_job_status(job, True)
    added = _groups_applied(monkeypatch)
    # As the watch delivers it: the version before the one the cache last read.
    earlier = {**earlier, "metadata": {**earlier["metadata"], "resourceVersion": "999998"}}
    cache.pod_groups.apply(earlier)
    assert added == []
    assert cache.snapshot().jobs["default/a"].pod_group.phase is PodGroupPhase.PENDING
    # A status nobody here wrote is taken as it comes.
    foreign = {
        **earlier,
        "metadata": {**earlier["metadata"], "resourceVersion": "999999"},
        "status": {**earlier["status"], "phase": "Unknown"},
    }
    cache.pod_groups.apply(foreign)
    assert added == ["a"]
    assert cache.snapshot().jobs["default/a"].pod_group.phase is PodGroupPhase.UNKNOWN


def test_a_queue_status_write_coming_back_leaves_the_queue_but_a_spec_or_state_change_replaces_it(
    server: KubeApiServer, make_cache: Callable[..., KubernetesCache]
) -> None:
    for i in range(4):  # a session resumes the last one while fewer than half the nodes changed
        server.create("nodes", make_node(f"n{i}"))
    server.create("pods", make_pod("p"))
    cache = make_cache()
    scheduler = Scheduler(cache)
    queues = next(r for r in cache.reflectors if r.kind == "queues").handler
    assert [t.name for t, _ in cycle(scheduler, cache).binds] == ["p"]

    def seen(version: str) -> bool:
        return queues.known.get("default") == version

    # The session wrote the queue's allocated; once its echo is in, the next session resumes with the queue as it was.
    written = server.get("queues", "default")
    assert written["status"]["allocated"]["cpu"] == "1"
    eventually(lambda: seen(written["metadata"]["resourceVersion"]), what="the status echo")
    session = cycle(scheduler, cache).session
    assert session.delta is not None and session.delta.queues == frozenset()
    assert cache.status.writes["queue"] == 1

    server.patch("queues", "default", {"spec": {"weight": 3}})
    eventually(lambda: seen(server.get("queues", "default")["metadata"]["resourceVersion"]), what="the new weight")
    session = cycle(scheduler, cache).session
    assert session.delta is not None and session.delta.queues == frozenset({"default"})
    assert session.queues["default"].weight == 3

    server.patch("queues", "default", {"status": {"state": "Closed"}}, subresource="status")
    eventually(lambda: seen(server.get("queues", "default")["metadata"]["resourceVersion"]), what="the new state")
    session = cycle(scheduler, cache).session
    assert session.delta is not None and session.delta.queues == frozenset({"default"})
    assert str(session.queues["default"].state) == "Closed"


def test_a_queue_of_weight_0_is_warned_about_once_and_its_pods_say_why_they_wait(
    server: KubeApiServer, make_cache: Callable[..., KubernetesCache], caplog: pytest.LogCaptureFixture
) -> None:
    server.create("queues", make_queue("zero", weight=0))
    server.create("nodes", make_node("n0"))
    group = make_podgroup("g", min_member=1)
    group["spec"]["queue"] = "zero"
    server.create("podgroups", group)
    server.create("pods", make_pod("p", group="g"))
    cache = make_cache()
    scheduler = Scheduler(cache)
    for _ in range(3):
        cycle(scheduler, cache)
    server.patch("queues", "zero", {"metadata": {"labels": {"touched": "yes"}}}, namespace="")
    eventually(lambda: server.get("queues", "zero", namespace="")["metadata"].get("labels"), what="the update")
    cycle(scheduler, cache)
    assert not server.get("pods", "p")["spec"].get("nodeName")  # an empty node, and yet
    warnings = [r.getMessage() for r in caplog.records if "spec.weight 0" in r.getMessage()]
    assert len(warnings) == 1 and "Queue zero" in warnings[0]
    events = [e for e in server.list("events") if e["involvedObject"]["kind"] == "Queue"]
    assert [(e["reason"], e["type"], e["involvedObject"]["name"]) for e in events] == [
        ("InvalidWeight", "Warning", "zero")
    ]
    (cond,) = [c for c in server.get("pods", "p")["status"]["conditions"] if c["type"] == "PodScheduled"]
    assert cond["message"].startswith("queue zero has weight 0, which Volcano refuses (set spec.weight to 1 or more): ")
    # Given a weight, the queue's pod is scheduled, and nothing more is said about it.
    server.patch("queues", "zero", {"spec": {"weight": 1}}, namespace="")
    eventually(lambda: "zero" not in cache.zero_weight_queues, what="the new weight")
    cycle(scheduler, cache)
    assert server.get("pods", "p")["spec"]["nodeName"] == "n0"
