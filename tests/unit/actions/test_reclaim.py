"""reclaim: only from other, reclaimable queues the plugins allow; commit rule; skipped preemptors."""

from __future__ import annotations

from collections.abc import Sequence

import attrs

from volcanolib import Registry, hookimpl
from volcanolib.api.job import JobInfo
from volcanolib.api.queue import QueueInfo
from volcanolib.api.task import TaskInfo, TaskStatus
from volcanolib.framework.config import Arguments
from volcanolib.framework.session import Session
from volcanolib.framework.status import Vote
from volcanolib.testing import FakeCache, build_node, build_pod_group, build_queue, build_task, run_session

S = TaskStatus


class TGang:
    """Starving below ``min_available``; pipelined at it."""

    def __init__(self, arguments: Arguments) -> None:
        pass

    @hookimpl
    def job_starving(self, ssn: object, job: JobInfo) -> bool:
        return job.is_starving()

    @hookimpl
    def job_pipelined(self, ssn: object, job: JobInfo) -> Vote:
        return Vote.PERMIT if job.is_pipelined() else Vote.REJECT


class TShare:
    """Queues listed in ``overused`` are above their share: they give up tasks and reclaim nothing.

    Queues listed in ``closed`` may not reclaim for their tasks (``preemptive``). With
    ``anything: true`` every candidate may be reclaimed.
    """

    def __init__(self, arguments: Arguments) -> None:
        self.over = set(arguments.get("overused", ()))
        self.closed = set(arguments.get("closed", ()))
        self.anything = bool(arguments.get("anything", False))

    @hookimpl
    def overused(self, ssn: object, queue: QueueInfo) -> bool:
        return queue.name in self.over

    @hookimpl
    def preemptive(self, ssn: object, queue: QueueInfo, tasks: Sequence[TaskInfo]) -> bool:
        return queue.name not in self.closed

    @hookimpl
    def reclaimable(self, ssn: Session, reclaimer: TaskInfo, reclaimees: Sequence[TaskInfo]) -> list[TaskInfo]:
        return [t for t in reclaimees if self.anything or ssn.jobs[t.job].queue in self.over]


REGISTRY = Registry(plugins={"t-gang": TGang, "t-share": TShare})


def conf(share_arguments: str) -> str:
    return (
        'actions: "reclaim"\ntiers:\n- plugins:\n  - name: t-gang\n'
        f"  - name: t-share\n    arguments: {share_arguments}\n"
    )


def two_queues(*, victim_queue_reclaimable: bool | None = None, victim_status: TaskStatus = S.RUNNING) -> FakeCache:
    """q1 runs two 1-cpu tasks on a full 2-cpu node; q2 has a job waiting for 1 cpu."""
    cache = FakeCache()
    cache.add_node(build_node("n1", cpu="2"))
    cache.add_queue(build_queue("q1", reclaimable=victim_queue_reclaimable))
    cache.add_queue(build_queue("q2"))
    cache.add_pod_group(build_pod_group("old", queue="q1"))
    cache.add_task(build_task("old-0", job="old", node="n1", status=victim_status))
    cache.add_task(build_task("old-1", job="old", node="n1", status=victim_status))
    cache.add_pod_group(build_pod_group("new", queue="q2"))
    cache.add_task(build_task("new-0", job="new"))
    return cache


def test_an_overused_queue_gives_up_a_task() -> None:
    cache = two_queues()
    result = run_session(cache, conf("{overused: [q1]}"), registry=REGISTRY)
    assert len(cache.evicted) == 1
    assert [(t.key, node) for t, node in result.pipelined] == [("default/new-0", "n1")]


def test_a_queue_that_is_not_overused_is_left_alone() -> None:
    cache = two_queues()
    result = run_session(cache, conf("{overused: []}"), registry=REGISTRY)
    assert cache.evicted == []
    assert result.pipelined == ()
    ssn = result.session
    assert ssn is not None
    assert all(t.status is S.RUNNING for t in ssn.jobs["default/old"].tasks.values())


def test_an_overused_queue_reclaims_nothing_for_itself() -> None:
    cache = two_queues()
    run_session(cache, conf("{overused: [q1, q2]}"), registry=REGISTRY)
    assert cache.evicted == []


def test_a_queue_that_may_not_reclaim_leaves_others_alone() -> None:
    cache = two_queues()
    run_session(cache, conf("{overused: [q1], closed: [q2]}"), registry=REGISTRY)
    assert cache.evicted == []


def test_tasks_of_a_non_reclaimable_queue_or_not_running_are_not_candidates() -> None:
    locked = two_queues(victim_queue_reclaimable=False)
    run_session(locked, conf("{overused: [q1]}"), registry=REGISTRY)
    assert locked.evicted == []
    bound = two_queues(victim_status=S.BOUND)
    run_session(bound, conf("{overused: [q1]}"), registry=REGISTRY)
    assert bound.evicted == []


def test_a_task_with_preemption_policy_never_reclaims_nothing() -> None:
    cache = two_queues()
    task = cache.get_task("default-new-0")
    assert task is not None and task.pod is not None
    task.pod = attrs.evolve(task.pod, preemption_policy="Never")
    run_session(cache, conf("{overused: [q1]}"), registry=REGISTRY)
    assert cache.evicted == []


def test_evictions_are_sent_only_when_the_gang_is_pipelined() -> None:
    cache = two_queues()
    cache.add_pod_group(build_pod_group("new", queue="q2", min_member=3))
    cache.add_task(build_task("new-1", job="new"))
    cache.add_task(build_task("new-2", job="new"))
    result = run_session(cache, conf("{overused: [q1]}"), registry=REGISTRY)
    assert cache.evicted == []  # two tasks could be made room for, the gang needs three
    assert result.pipelined == ()


def test_victims_come_from_the_queue_served_last_and_only_as_many_as_needed() -> None:
    cache = FakeCache()
    cache.add_node(build_node("n1", cpu="4"))
    for name in ("qa", "qb", "qc"):
        cache.add_queue(build_queue(name))
    for queue in ("qa", "qb"):
        cache.add_pod_group(build_pod_group(f"{queue}-job", queue=queue))
        cache.add_task(build_task(f"{queue}-0", job=f"{queue}-job", node="n1"))
        cache.add_task(build_task(f"{queue}-1", job=f"{queue}-job", node="n1"))
    cache.add_pod_group(build_pod_group("new", queue="qc"))
    cache.add_task(build_task("new-0", job="new"))
    run_session(cache, conf("{overused: [qa, qb]}"), registry=REGISTRY)
    # Without a victim queue order, the reverse of the queue order (by name) decides: qb gives first.
    assert len(cache.evicted) == 1 and cache.evicted[0].startswith("default/qb-")


def test_the_same_input_gives_the_same_evictions() -> None:
    def once() -> list[str]:
        cache = two_queues()
        run_session(cache, conf("{overused: [q1]}"), registry=REGISTRY)
        return cache.evicted

    first = once()
    assert first == once() == ["default/old-1"]


def test_tasks_of_the_reclaimers_own_queue_are_not_candidates() -> None:
    cache = FakeCache()
    cache.add_node(build_node("n1", cpu="1"))
    cache.add_queue(build_queue("q2"))
    cache.add_pod_group(build_pod_group("neighbour", queue="q2"))
    cache.add_task(build_task("neighbour-0", job="neighbour", node="n1"))
    cache.add_pod_group(build_pod_group("new", queue="q2"))
    cache.add_task(build_task("new-0", job="new"))
    run_session(cache, conf("{anything: true}"), registry=REGISTRY)
    assert cache.evicted == []
