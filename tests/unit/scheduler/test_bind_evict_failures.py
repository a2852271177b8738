"""Binders and evictors that fail: over many cycles nothing is lost, bound twice or evicted twice.

A seeded binder (evictor) fails a fraction of its calls, some by reporting
tasks as failed, some by raising. After every cycle the cache's bookkeeping
must be exact (``InMemoryCache.consistency_problems``); at the end every task
has been bound exactly once (or evicted exactly once) and runs.
"""

from __future__ import annotations

import random
from collections.abc import Callable, Sequence

import pytest

from volcanolib import InMemoryCache, Scheduler, Session, TaskInfo, TaskStatus
from volcanolib.testing import build_node, build_pod_group, build_queue, build_task

CONF = """
actions: "enqueue, allocate, preempt, reclaim, backfill"
tiers:
- plugins:
  - name: priority
  - name: gang
  - name: conformance
- plugins:
  - name: drf
  - name: predicates
  - name: proportion
  - name: nodeorder
  - name: binpack
"""


class FlakyBinder:
    """Fails each task with probability ``fail``, and raises for a whole batch with probability ``crash``."""

    def __init__(self, seed: int, fail: float = 0.3, crash: float = 0.1) -> None:
        self.rng = random.Random(seed)
        self.fail = fail
        self.crash = crash
        #: Successful binds per task key.
        self.bound: dict[str, int] = {}
        self.failures = 0

    def bind(self, tasks: Sequence[TaskInfo]) -> Sequence[TaskInfo]:
        if self.rng.random() < self.crash:
            self.failures += len(tasks)
            raise ConnectionError("binder unreachable")
        failed = [t for t in tasks if self.rng.random() < self.fail]
        self.failures += len(failed)
        for task in tasks:
            if task not in failed:
                self.bound[task.key] = self.bound.get(task.key, 0) + 1
        return failed


class FlakyEvictor:
    """Refuses each eviction with probability ``fail``."""

    def __init__(self, seed: int, fail: float = 0.4) -> None:
        self.rng = random.Random(seed)
        self.fail = fail
        #: Successful evictions per task key.
        self.evicted: dict[str, int] = {}
        self.failures = 0

    def evict(self, task: TaskInfo, reason: str) -> None:
        if self.rng.random() < self.fail:
            self.failures += 1
            raise RuntimeError("eviction refused")
        self.evicted[task.key] = self.evicted.get(task.key, 0) + 1


def _gang_cluster(cache: InMemoryCache, seed: int) -> int:
    rng = random.Random(seed)
    for i in range(8):
        cache.add_node(build_node(f"n{i}", cpu="8", memory="16Gi"))
    total = 0
    for j in range(14):
        size = rng.randint(1, 5)
        cache.add_pod_group(build_pod_group(f"job{j}", min_member=rng.randint(1, size), creation_timestamp=float(j)))
        for t in range(size):
            cpu = rng.choice(["500m", "1", "2"])
            cache.add_task(build_task(f"job{j}-t-{t}", job=f"job{j}", cpu=cpu, memory="1Gi"))
            total += 1
    return total


def _assert_consistent(cache: InMemoryCache) -> None:
    assert cache.consistency_problems() == []


def test_every_task_is_bound_exactly_once_through_a_failing_binder() -> None:
    for seed in range(3):
        binder = FlakyBinder(seed)
        cache = InMemoryCache(binder=binder)
        total = _gang_cluster(cache, seed)
        scheduler = Scheduler(cache, CONF, seed=seed)
        for _ in range(60):
            scheduler.run_once()
            _assert_consistent(cache)
            cache.start_bound_tasks()
            _assert_consistent(cache)
            if all(t.status is TaskStatus.RUNNING for t in cache.tasks()):
                break
        assert binder.failures > 0, "the binder never failed: the test proves nothing"
        assert len(cache.tasks()) == total
        assert {t.status for t in cache.tasks()} == {TaskStatus.RUNNING}
        assert set(binder.bound) == {t.key for t in cache.tasks()}
        assert set(binder.bound.values()) == {1}
        failed = [e for e in cache.events if e.reason == "FailedBinding"]
        assert failed, "failed binds are reported as events"


class ListedBinder:
    """Binds every task except those named in ``fail``: those it returns, with a reason or alone."""

    def __init__(self, fail: dict[str, str | None]) -> None:
        self.fail = fail

    def bind(self, tasks: Sequence[TaskInfo]) -> Sequence[TaskInfo | tuple[TaskInfo, str]]:
        out: list[TaskInfo | tuple[TaskInfo, str]] = []
        for task in tasks:
            if task.name in self.fail:
                why = self.fail[task.name]
                out.append(task if why is None else (task, why))
        return out


def _two_gangs(cache: InMemoryCache) -> Scheduler:
    cache.add_node(build_node("n0", cpu="16", memory="16Gi"))
    for name in ("a", "b"):
        cache.add_pod_group(build_pod_group(name, min_member=2))
        for t in range(2):
            cache.add_task(build_task(f"{name}-t-{t}", job=name, cpu="1", memory="1Gi"))
    return Scheduler(cache, CONF)


def test_the_result_lists_only_binds_that_took_effect_and_the_failed_ones_apart() -> None:
    cache = InMemoryCache(binder=ListedBinder({"a-t-1": "node agent timed out", "b-t-0": None}))
    result = _two_gangs(cache).run_once()
    assert sorted((t.key, node) for t, node in result.binds) == [("default/a-t-0", "n0"), ("default/b-t-1", "n0")]
    assert sorted((t.key, node, why) for t, node, why in result.failed_binds) == [
        ("default/a-t-1", "n0", "node agent timed out"),
        ("default/b-t-0", "n0", "the binder reported a failure"),
    ]
    # the tasks of the result are the session's, as for the binds
    assert result.session is not None
    assert all(result.session.jobs[t.job].tasks[t.uid] is t for t, _, _ in result.failed_binds)
    events = {e.object: e.message for e in cache.events if e.reason == "FailedBinding"}
    assert events == {
        "Pod default/a-t-1": "binding to n0 failed: node agent timed out",
        "Pod default/b-t-0": "binding to n0 failed: the binder reported a failure",
    }
    assert {t.key for t in cache.tasks() if t.status is TaskStatus.PENDING} == {"default/a-t-1", "default/b-t-0"}
    _assert_consistent(cache)


def test_a_raising_binder_fails_the_batch_with_its_exception_as_the_reason() -> None:
    class Down:
        def bind(self, tasks: Sequence[TaskInfo]) -> Sequence[TaskInfo]:
            raise ConnectionError("api server unreachable")

    cache = InMemoryCache(binder=Down())
    result = _two_gangs(cache).run_once()
    assert result.binds == ()
    assert len(result.failed_binds) == 4
    assert {why for _, _, why in result.failed_binds} == {"binder raised ConnectionError: api server unreachable"}
    messages = {e.message for e in cache.events if e.reason == "FailedBinding"}
    assert messages == {"binding to n0 failed: binder raised ConnectionError: api server unreachable"}
    _assert_consistent(cache)


def test_the_session_sees_the_cache_it_was_given() -> None:
    """The session's cache passes every call through: a cache's own attributes stay reachable."""
    cache = InMemoryCache()
    seen: list[object] = []
    _two_gangs(cache).run_once(before_actions=lambda ssn: seen.append(ssn.cache.events))
    assert seen == [cache.events]


def test_a_stale_session_cannot_bind_a_task_twice() -> None:
    """A second scheduler binds everything while the first is between its snapshot and its binds."""
    binder = FlakyBinder(0, fail=0.0, crash=0.0)
    cache = InMemoryCache(binder=binder)
    cache.add_node(build_node("n0", cpu="16", memory="16Gi"))
    cache.add_pod_group(build_pod_group("a", min_member=2))
    for t in range(2):
        cache.add_task(build_task(f"a-t-{t}", job="a", cpu="1", memory="1Gi"))
    racing = Scheduler(cache, CONF)
    stale = Scheduler(cache, CONF)
    result = stale.run_once(before_actions=lambda ssn: racing.run_once())
    assert result.binds == ()  # it tried, and nothing it tried took effect
    assert {(t.key, node) for t, node, _ in result.failed_binds} == {("default/a-t-0", "n0"), ("default/a-t-1", "n0")}
    assert {reason for _, _, reason in result.failed_binds} == {"already on node n0"}
    assert binder.bound == {"default/a-t-0": 1, "default/a-t-1": 1}
    refused = [e for e in cache.events if e.reason == "FailedScheduling"]
    assert len(refused) == 2
    _assert_consistent(cache)


def test_a_stale_session_cannot_place_a_task_on_a_node_that_filled_up() -> None:
    binder = FlakyBinder(0, fail=0.0, crash=0.0)
    cache = InMemoryCache(binder=binder)
    cache.add_node(build_node("n0", cpu="4", memory="16Gi"))
    cache.add_pod_group(build_pod_group("a", min_member=1))
    cache.add_task(build_task("a-t-0", job="a", cpu="2", memory="1Gi"))

    def race(ssn: Session) -> None:
        cache.add_pod_group(build_pod_group("b", min_member=1))
        cache.add_task(build_task("b-t-0", job="b", node="n0", cpu="3", memory="1Gi"))

    Scheduler(cache, CONF).run_once(before_actions=race)
    task = cache.get_task("default-a-t-0")
    assert task is not None and task.status is TaskStatus.PENDING and not task.node_name
    assert binder.bound == {}
    _assert_consistent(cache)


def _preempt_cluster(cache: InMemoryCache, seed: int) -> tuple[int, int]:
    """Low-priority work fills two queues' nodes; high-priority gangs arrive in both queues."""
    rng = random.Random(seed)
    cache.add_priority_class("low", 1)
    cache.add_priority_class("high", 1000)
    cache.add_queue(build_queue("q1"))
    cache.add_queue(build_queue("q2"))
    for i in range(6):
        cache.add_node(build_node(f"n{i}", cpu="4", memory="16Gi"))
    low = 0
    for j in range(6):
        queue = "q1" if j < 4 else "q2"
        cache.add_pod_group(build_pod_group(f"low{j}", queue=queue, priority_class_name="low", phase="Running"))
        for t in range(4):
            cache.add_task(build_task(f"low{j}-t-{t}", job=f"low{j}", node=f"n{j}", cpu="1", memory="1Gi", priority=1))
            low += 1
    high = 0
    for j in range(4):
        queue = "q1" if j % 2 == 0 else "q2"
        size = rng.randint(1, 3)
        cache.add_pod_group(
            build_pod_group(f"high{j}", queue=queue, min_member=size, priority_class_name="high", creation_timestamp=j)
        )
        for t in range(size):
            cache.add_task(build_task(f"high{j}-t-{t}", job=f"high{j}", cpu="1", memory="1Gi", priority=1000))
            high += 1
    return low, high


def test_every_eviction_happens_once_through_a_failing_evictor() -> None:
    for seed in range(3):
        evictor = FlakyEvictor(seed)
        binder = FlakyBinder(seed + 100, fail=0.2, crash=0.05)
        cache = InMemoryCache(binder=binder, evictor=evictor)
        low, high = _preempt_cluster(cache, seed)
        scheduler = Scheduler(cache, CONF, seed=seed)
        gone: set[str] = set()
        for _ in range(40):
            scheduler.run_once()
            _assert_consistent(cache)
            gone |= {t.key for t in cache.finish_evictions()}
            cache.start_bound_tasks()
            _assert_consistent(cache)
            if all(t.status is TaskStatus.RUNNING for t in cache.tasks() if t.name.startswith("high")):
                break
        assert evictor.failures > 0 and evictor.evicted, "the evictor never failed or never succeeded"
        assert set(evictor.evicted.values()) == {1}  # never evicted twice
        assert gone == set(evictor.evicted)  # every eviction that went through, and only those, freed its pod
        remaining = {t.key for t in cache.tasks()}
        assert not remaining & gone
        assert len(remaining) + len(gone) == low + high  # no task lost
        highs = [t for t in cache.tasks() if t.name.startswith("high")]
        assert len(highs) == high and {t.status for t in highs} == {TaskStatus.RUNNING}
        assert all(binder.bound[t.key] == 1 for t in highs)
        assert {t.status for t in cache.tasks() if t.name.startswith("low")} <= {TaskStatus.RUNNING}


def test_a_stale_session_cannot_evict_a_task_twice() -> None:
    evictor = FlakyEvictor(0, fail=0.0)
    cache = InMemoryCache(evictor=evictor)
    _preempt_cluster(cache, 0)
    racing = Scheduler(cache, CONF)
    first: list[str] = []
    result = Scheduler(cache, CONF).run_once(
        before_actions=lambda ssn: first.extend(t.key for t, _ in racing.run_once().evictions)
    )
    assert first and set(evictor.evicted.values()) == {1}
    refused = {e.object for e in cache.events if e.reason == "FailedEviction"}
    assert refused and refused <= {f"Pod {key}" for key in first}
    assert not {t.key for t, _ in result.evictions} & set(first)
    assert result.session is not None
    for key in refused:  # undone in the stale session
        task = next(t for j in result.session.jobs.values() for t in j.tasks.values() if f"Pod {t.key}" == key)
        assert task.status is TaskStatus.RUNNING
    _assert_consistent(cache)


def _node_not_ready(cache: InMemoryCache) -> None:
    node = build_node("n0", cpu="4", memory="16Gi")
    node.ready = False
    node.not_ready_reason = "NotReady"
    cache.update_node(node)


def _task_failed(cache: InMemoryCache) -> None:
    cache.set_task_phase("default-a-t-0", TaskStatus.FAILED)


@pytest.mark.parametrize(
    ("race", "expected"), [(_task_failed, TaskStatus.FAILED), (_node_not_ready, TaskStatus.PENDING)]
)
def test_a_stale_session_cannot_bind_a_finished_task_or_onto_a_node_gone_not_ready(
    race: Callable[[InMemoryCache], None], expected: TaskStatus
) -> None:
    binder = FlakyBinder(0, fail=0.0, crash=0.0)
    cache = InMemoryCache(binder=binder)
    cache.add_node(build_node("n0", cpu="4", memory="16Gi"))
    cache.add_pod_group(build_pod_group("a", min_member=1))
    cache.add_task(build_task("a-t-0", job="a", cpu="1", memory="1Gi"))
    Scheduler(cache, CONF).run_once(before_actions=lambda ssn: race(cache))
    task = cache.get_task("default-a-t-0")
    assert task is not None and task.status is expected and not task.node_name
    assert binder.bound == {}
    assert [e.reason for e in cache.events] == ["FailedScheduling"]
    _assert_consistent(cache)


@pytest.mark.parametrize(("limit", "kept"), [(5, range(5, 11)), (None, range(40, 41))])
def test_the_cache_keeps_a_bounded_number_of_events(limit: int | None, kept: range) -> None:
    cache = InMemoryCache(max_events=limit)
    cache.add_node(build_node("n0", cpu="64", memory="64Gi"))
    cache.add_pod_group(build_pod_group("a", min_member=1))
    for t in range(40):
        cache.add_task(build_task(f"a-t-{t}", job="a", cpu="1", memory="1Gi"))
    Scheduler(cache, CONF).run_once()
    assert len(cache.events) in kept
    assert cache.events[-1].reason == "Scheduled"
