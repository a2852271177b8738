"""One victim order: its queue, its first victim and its sorted list agree with live comparisons.

:class:`VictimOrder` chooses between a composite key (every order involved
is key-based) and pairwise comparisons; both must give Volcano's order, on
random victim sets.
"""

from __future__ import annotations

import functools
import heapq
import random
from typing import Any, ClassVar

import attrs
import pytest

from volcanolib import Registry, hookimpl
from volcanolib.api.job import JobInfo, PodGroupPhase
from volcanolib.api.queue import QueueInfo
from volcanolib.api.task import TaskInfo, TaskStatus
from volcanolib.framework.queues import PriorityQueue
from volcanolib.framework.session import Session
from volcanolib.framework.victims import VictimOrder, validate_victims
from volcanolib.plugins.priority import PriorityPlugin
from volcanolib.testing import FakeCache, build_node, build_pod_group, build_queue, build_task, open_session

CONF = """
actions: "reclaim"
tiers:
- plugins:
  - name: priority
  - name: gang
  - name: conformance
- plugins:
  - name: drf
  - name: proportion
"""

# The same plugins, plus one that orders jobs and victim queues by comparison only.
COMPARED_CONF = """
actions: "reclaim"
tiers:
- plugins:
  - name: priority
  - name: byname
- plugins:
  - name: drf
  - name: proportion
"""


class ByName:
    """Orders jobs by the last character of their name and victim queues by name, without keys."""

    name: ClassVar[str] = "byname"

    def __init__(self, arguments: Any) -> None:
        pass

    @hookimpl
    def job_order(self, left: JobInfo, right: JobInfo) -> int:
        a, b = left.name[-1], right.name[-1]
        return -1 if a < b else (1 if a > b else 0)

    @hookimpl
    def victim_queue_order(self, left: QueueInfo, right: QueueInfo, preemptor: TaskInfo) -> int:
        if {left.name, right.name} == {"qa", "qc"}:
            return -1 if left.name == "qc" else 1
        return 0


def _random_session(
    seed: int, priorities: int = 3, conf: str = CONF, **kwargs: Any
) -> tuple[Session, list[TaskInfo], TaskInfo]:
    rng = random.Random(seed)
    cache = FakeCache()
    for q in ("qa", "qb", "qc"):
        cache.add_queue(build_queue(q, weight=rng.randint(1, 3)))
    for n in range(4):
        cache.add_node(build_node(f"n{n}", "64", "256Gi"))
    victims = []
    for j in range(6):
        queue = rng.choice(["qa", "qb", "qc"])
        cache.add_pod_group(
            build_pod_group(f"j{j}", min_member=rng.randint(1, 3), queue=queue, phase=PodGroupPhase.RUNNING)
        )
        for k in range(rng.randint(1, 5)):
            task = build_task(
                f"j{j}-{k}",
                job=f"j{j}",
                cpu=str(rng.randint(1, 4)),
                node=f"n{rng.randrange(4)}",
                status=rng.choice([TaskStatus.RUNNING, TaskStatus.RUNNING, TaskStatus.BOUND]),
                priority=rng.randint(0, priorities),
            )
            cache.add_task(task)
            victims.append(task.key)
    cache.add_pod_group(build_pod_group("pre", queue=rng.choice(["qa", "qb"]), phase=PodGroupPhase.INQUEUE))
    cache.add_task(build_task("pre-0", job="pre", cpu="2"))
    ssn = open_session(cache, conf, seed=seed, **kwargs)
    tasks = [t for job in ssn.jobs.values() for t in job.tasks.values() if t.key in victims]
    rng.shuffle(tasks)
    preemptor = next(t for job in ssn.jobs.values() for t in job.tasks.values() if t.key == "default/pre-0")
    return ssn, tasks, preemptor


def _sessions(seed: int, priorities: int = 3) -> list[tuple[Session, list[TaskInfo], TaskInfo]]:
    """A session whose orders are all key-based, and one where some are comparisons only."""
    return [
        _random_session(seed, priorities),
        _random_session(seed, priorities, COMPARED_CONF, registry=Registry(plugins={"byname": ByName})),
    ]


def _compared(order: VictimOrder, tasks: list[TaskInfo]) -> PriorityQueue[TaskInfo]:
    """Volcano's victims queue: a heap comparing live."""
    return PriorityQueue(functools.cmp_to_key(order.compare), tasks)


def test_both_paths_are_taken() -> None:
    (keyed, _, p1), (compared, _, p2) = _sessions(0)
    assert VictimOrder(keyed, p1)._keyed and not VictimOrder(compared, p2)._keyed
    keyed.close()
    compared.close()


@pytest.mark.parametrize("seed", range(25))
def test_the_queue_pops_like_live_comparisons(seed: int) -> None:
    for ssn, tasks, preemptor in _sessions(seed):
        try:
            order = VictimOrder(ssn, preemptor)
            queue = order.queue(tasks)
            compared = _compared(order, tasks)
            assert len(queue) == len(tasks)
            assert [queue.pop().key for _ in range(len(tasks))] == [compared.pop().key for _ in range(len(tasks))]
            assert not queue and queue.peek() is None
            with pytest.raises(IndexError):
                queue.pop()
        finally:
            ssn.close()


@pytest.mark.parametrize("seed", range(40))
def test_first_is_the_first_the_queue_gives(seed: int) -> None:
    # Few priorities, so that jobs and tasks often tie; some victims lose their job.
    for ssn, tasks, preemptor in _sessions(seed, priorities=1):
        rng = random.Random(seed)
        try:
            if seed % 4 == 0:
                for gone in rng.sample(sorted({t.job for t in tasks}), 2):
                    del ssn.jobs[gone]
            order = VictimOrder(ssn, preemptor)
            for size in range(1, len(tasks) + 1):
                subset = rng.sample(tasks, size)
                first = order.first(subset)
                assert first is _compared(order, subset).pop()
                # A queue's peek gives it too, and its first pop agrees.
                queue = order.queue(subset)
                assert queue.peek() is first and queue.pop() is first
            assert order.first([]) is None
        finally:
            ssn.close()


@pytest.mark.parametrize("seed", range(25))
def test_first_of_victims_of_one_queue_skips_the_queue_key(seed: int) -> None:
    # All victims in one queue: the queue key decides nothing, so it is not taken (and the answer is unchanged).
    ssn, tasks, preemptor = _random_session(seed, priorities=1)
    try:
        calls: list[str] = []
        queue_key = ssn.queue_key

        def counted(queue: QueueInfo) -> object:
            calls.append(queue.name)
            return queue_key(queue)

        ssn.queue_key = counted
        order = VictimOrder(ssn, preemptor)
        by_queue: dict[str, list[TaskInfo]] = {}
        for task in tasks:
            by_queue.setdefault(ssn.jobs[task.job].queue, []).append(task)
        for subset in by_queue.values():
            assert order.first(subset) is _compared(order, subset).pop()
        assert calls == []
        if len(by_queue) > 1:
            assert order.first(tasks) is _compared(order, tasks).pop()
            assert sorted(calls) == sorted(by_queue)
    finally:
        ssn.close()


@pytest.mark.parametrize("seed", range(25))
def test_sorted_is_a_stable_sort_by_live_comparisons(seed: int) -> None:
    for ssn, tasks, preemptor in _sessions(seed, priorities=1):
        try:
            order = VictimOrder(ssn, preemptor)
            expected = sorted(tasks, key=functools.cmp_to_key(order.compare))
            assert [t.key for t in order.sorted(tasks)] == [t.key for t in expected]
        finally:
            ssn.close()


def test_after_the_first_pop_the_queue_compares_live() -> None:
    # drf serves the job with the smaller share first, so the larger share gives up first;
    # each eviction lowers its job's share, and the queue must notice (pinned against the
    # victims queue as it was before the redesign).
    cache = FakeCache()
    cache.add_node(build_node("n0", "64", "256Gi"))
    for job, cpu, count in (("a", "4", 3), ("b", "5", 2)):
        cache.add_pod_group(build_pod_group(job, phase=PodGroupPhase.RUNNING))
        for i in range(count):
            cache.add_task(build_task(f"{job}-{i}", job=job, cpu=cpu, memory="1Gi", node="n0"))
    cache.add_pod_group(build_pod_group("pre", phase=PodGroupPhase.INQUEUE))
    cache.add_task(build_task("pre-0", job="pre", cpu="1"))
    ssn = open_session(cache, "actions: ''\ntiers:\n- plugins:\n  - name: priority\n  - name: drf\n")
    try:
        victims = sorted(
            (t for j in ("default/a", "default/b") for t in ssn.jobs[j].tasks.values()), key=lambda t: t.key
        )
        order = VictimOrder(ssn, ssn.jobs["default/pre"].tasks["default-pre-0"])
        assert [t.job for t in order.sorted(victims)] == ["default/a"] * 3 + ["default/b"] * 2
        queue = order.queue(victims)
        stmt = ssn.statement()
        popped = []
        while queue:
            victim = queue.pop()
            popped.append(victim.name)
            stmt.evict(victim, "test")
        # Shares 12 > 10, then 8 < 10: b goes before the last a. The heap keeps the arrangement it
        # had before the first pop (as Volcano's does), so the order is not a re-sort after each change.
        assert popped == ["a-2", "a-1", "b-1", "b-0", "a-0"]
        stmt.discard()
    finally:
        ssn.close()


def test_validate_victims_adds_the_victims_to_the_future_idle() -> None:
    cache = FakeCache()
    cache.add_node(build_node("n0", "4", "8Gi"))
    cache.add_pod_group(build_pod_group("run"))
    for i in range(2):
        cache.add_task(build_task(f"run-{i}", job="run", cpu="2", node="n0"))
    cache.add_pod_group(build_pod_group("pre"))
    cache.add_task(build_task("pre-0", job="pre", cpu="3"))
    ssn = open_session(cache, "actions: ''\ntiers: []\n")
    node = ssn.nodes["n0"]
    one, two = sorted(ssn.jobs["default/run"].tasks.values(), key=lambda t: t.name)
    preemptor = ssn.jobs["default/pre"].tasks["default-pre-0"]
    assert not validate_victims(preemptor, node, [])
    assert not validate_victims(preemptor, node, [one])
    assert validate_victims(preemptor, node, [one, two])
    ssn.close()


def test_the_docstring_example_runs() -> None:
    import doctest

    from volcanolib.framework import victims

    result = doctest.testmod(victims)
    assert result.attempted and not result.failed


@pytest.mark.parametrize("seed", range(25))
def test_the_heap_by_rank_is_the_heap_by_frozen_key(seed: int) -> None:
    # The queue heapifies each victim's rank in the frozen order; heapifying the frozen keys
    # themselves must arrange the victims the same way (later pops compare live from there).
    ssn, tasks, preemptor = _random_session(seed, priorities=1)
    try:
        rng = random.Random(seed)
        if seed % 3 == 0:
            del ssn.jobs[rng.choice(sorted({t.job for t in tasks}))]
        order = VictimOrder(ssn, preemptor)
        key = order._frozen_key(order._key_parts(tasks))
        by_key = [(key(task), count, task) for count, task in enumerate(tasks)]
        heapq.heapify(by_key)
        queue = order.queue(tasks)
        assert [entry[2] for entry in queue._built()] == [entry[2] for entry in by_key]
    finally:
        ssn.close()


def _evicting_pops(seed: int) -> list[str]:
    """Pop every victim, evicting each before the next pop (so later keys change)."""
    ssn, tasks, preemptor = _random_session(seed, priorities=1)
    try:
        queue = VictimOrder(ssn, preemptor).queue(tasks)
        stmt = ssn.statement()
        popped = []
        while queue:
            victim = queue.pop()
            popped.append(victim.key)
            stmt.evict(victim, "test")
        stmt.discard()
        return popped
    finally:
        ssn.close()


@pytest.mark.parametrize("seed", range(30))
def test_a_first_pop_without_the_heap_pops_like_one_with_it(seed: int, monkeypatch: pytest.MonkeyPatch) -> None:
    # With local task keys the first pop takes the first victim without building the heap, which a
    # second pop builds from the job keys taken at the first; without them the heap is built at once.
    ssn, _, _ = _random_session(seed)
    assert ssn.task_keys_are_local
    ssn.close()
    deferred = _evicting_pops(seed)
    monkeypatch.setattr(PriorityPlugin, "traits", attrs.evolve(PriorityPlugin.traits, local_task_keys=False))
    assert _evicting_pops(seed) == deferred
