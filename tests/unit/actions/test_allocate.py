"""allocate: gang commits, queue turns, node choice, fit errors, plugin failures, determinism."""

from __future__ import annotations

from collections.abc import Mapping, Sequence

import pytest

from volcanolib import Registry, hookimpl
from volcanolib.api.job import JobInfo, PodGroupPhase
from volcanolib.api.node import NodeInfo
from volcanolib.api.queue import QueueInfo
from volcanolib.api.resource import Resource
from volcanolib.api.task import ALLOCATED_STATUSES, TaskInfo, TaskStatus
from volcanolib.framework.config import Arguments
from volcanolib.framework.session import Session
from volcanolib.framework.status import Status, Vote
from volcanolib.testing import FakeCache, build_node, build_pod_group, build_queue, build_task, run_session

S = TaskStatus


class TGang:
    """Gang rules: ready and pipelined at ``min_available``, per-role minimums ignored."""

    def __init__(self, arguments: Arguments) -> None:
        pass

    @hookimpl
    def job_ready(self, ssn: object, job: JobInfo) -> bool:
        return job.ready_task_num() >= job.min_available

    @hookimpl
    def job_pipelined(self, ssn: object, job: JobInfo) -> Vote:
        placed = job.ready_task_num() + job.waiting_task_num()
        return Vote.PERMIT if placed >= job.min_available else Vote.REJECT

    @hookimpl
    def job_valid(self, ssn: object, job: JobInfo) -> Status:
        if job.valid_task_num() < job.min_available:
            return Status.unschedulable("NotEnoughTasks")
        return Status.success()


class TRoles:
    """Readiness with per-role minimums, as Volcano's gang computes it."""

    def __init__(self, arguments: Arguments) -> None:
        pass

    @hookimpl
    def job_ready(self, ssn: object, job: JobInfo) -> bool:
        return job.check_task_ready() and job.is_ready()

    @hookimpl
    def job_pipelined(self, ssn: object, job: JobInfo) -> Vote:
        return Vote.PERMIT if job.check_task_pipelined() and job.is_pipelined() else Vote.REJECT


class TShare:
    """Jobs and queues with fewer placed tasks first (a stand-in for drf and proportion)."""

    def __init__(self, arguments: Arguments) -> None:
        pass

    @hookimpl
    def job_order_key(self, ssn: object, job: JobInfo) -> int:
        return job.count(ALLOCATED_STATUSES)

    @hookimpl
    def queue_order_key(self, ssn: Session, queue: QueueInfo) -> int:
        return sum(j.count(ALLOCATED_STATUSES) for j in ssn.jobs.values() if j.queue == queue.name)


class TLabels:
    """Predicate: a task with a ``want`` label runs only on nodes with the same ``role`` label."""

    calls = 0

    def __init__(self, arguments: Arguments) -> None:
        pass

    @hookimpl
    def predicate(self, ssn: object, task: TaskInfo, node: NodeInfo) -> Status:
        TLabels.calls += 1
        assert task.pod is not None
        want = task.pod.labels.get("want")
        if want is not None and node.node.labels.get("role") != want:
            return Status.unresolvable("node(s) didn't match Pod's node selector")
        return Status.success()


class TScore:
    """Scores nodes by the ``score`` argument (node name -> score)."""

    def __init__(self, arguments: Arguments) -> None:
        self.scores: Mapping[str, float] = arguments.get("score", {})

    @hookimpl
    def batch_node_order(self, ssn: object, task: TaskInfo, nodes: Sequence[NodeInfo]) -> Mapping[str, float]:
        return {n.name: float(self.scores.get(n.name, 0)) for n in nodes}


class TQuota:
    """Queues named in ``overused`` are overused; tasks named in ``refuse`` are not allocatable."""

    def __init__(self, arguments: Arguments) -> None:
        self.overused_queues = set(arguments.get("overused", ()))
        self.refused = set(arguments.get("refuse", ()))

    @hookimpl
    def overused(self, ssn: object, queue: QueueInfo) -> bool:
        return queue.name in self.overused_queues

    @hookimpl
    def allocatable(self, ssn: object, queue: QueueInfo, task: TaskInfo) -> bool:
        return task.name not in self.refused


class TBoom:
    """Fails in ``job_ready`` for the job named by ``job``."""

    def __init__(self, arguments: Arguments) -> None:
        self.job = arguments.get("job")

    @hookimpl
    def job_ready(self, ssn: object, job: JobInfo) -> bool:
        if job.name == self.job:
            raise RuntimeError("kaboom")
        return True


class TReject:
    """Rejects every job at enqueue."""

    def __init__(self, arguments: Arguments) -> None:
        pass

    @hookimpl
    def job_enqueueable(self, ssn: object, job: JobInfo) -> Vote:
        return Vote.REJECT


REGISTRY = Registry(
    plugins={
        "t-gang": TGang,
        "t-roles": TRoles,
        "t-share": TShare,
        "t-labels": TLabels,
        "t-score": TScore,
        "t-quota": TQuota,
        "t-boom": TBoom,
        "t-reject": TReject,
    }
)


def conf(*plugins: str, actions: str = "allocate", extra: str = "") -> str:
    """One tier of ``plugins``; ``"name {yaml}"`` gives a plugin its arguments."""
    lines = [f'actions: "{actions}"', "tiers:", "- plugins:"]
    for entry in plugins:
        name, _, arguments = entry.partition(" ")
        lines.append(f"  - name: {name}")
        if arguments:
            lines.append(f"    arguments: {arguments}")
    if extra:
        lines.append(extra)
    return "\n".join(lines) + "\n"


def add_job(cache: FakeCache, name: str, tasks: int, *, min_member: int = 1, cpu: str = "1", **pg: object) -> None:
    cache.add_pod_group(build_pod_group(name, min_member=min_member, **pg))  # type: ignore[arg-type]
    for i in range(tasks):
        cache.add_task(build_task(f"{name}-t-{i}", job=name, cpu=cpu, memory="1Gi"))


def test_gang_is_never_partly_bound() -> None:
    cache = FakeCache()
    cache.add_node(build_node("n1", cpu="2", memory="8Gi"))
    add_job(cache, "big", 3, min_member=3)
    result = run_session(cache, conf("t-gang"), registry=REGISTRY)
    assert cache.bound == {}
    assert result.pipelined == ()
    job = result.session.jobs["default/big"]  # type: ignore[union-attr]
    assert all(t.status is S.PENDING and not t.node_name for t in job.tasks.values())
    assert job.nodes_fit_errors["default-big-t-2"].error() == "0/1 nodes are available: 1 Insufficient cpu."


def test_a_small_gang_still_fits_after_a_big_one_is_undone() -> None:
    cache = FakeCache()
    cache.add_node(build_node("n1", cpu="2", memory="8Gi"))
    add_job(cache, "big", 3, min_member=3, creation_timestamp=1.0)
    add_job(cache, "small", 2, min_member=2, creation_timestamp=2.0)
    run_session(cache, conf("t-gang"), registry=REGISTRY)
    assert cache.bound == {"default/small-t-0": "n1", "default/small-t-1": "n1"}


def test_ready_jobs_go_back_in_line_one_task_per_turn() -> None:
    cache = FakeCache()
    cache.add_node(build_node("n1", cpu="4", memory="8Gi"))
    add_job(cache, "a", 3, creation_timestamp=1.0)
    add_job(cache, "b", 3, creation_timestamp=2.0)
    run_session(cache, conf("t-gang", "t-share"), registry=REGISTRY)
    assert list(cache.bound) == ["default/a-t-0", "default/b-t-0", "default/a-t-1", "default/b-t-1"]


def test_queues_take_turns_and_an_overused_queue_is_left_out() -> None:
    cache = FakeCache()
    cache.add_node(build_node("n1", cpu="8", memory="16Gi"))
    for name in ("q1", "q2", "q3"):
        cache.add_queue(build_queue(name))
    add_job(cache, "a", 2, queue="q1")
    add_job(cache, "b", 2, queue="q2")
    add_job(cache, "c", 2, queue="q3")
    run_session(cache, conf("t-gang", "t-share", "t-quota {overused: [q2]}"), registry=REGISTRY)
    assert list(cache.bound) == ["default/a-t-0", "default/c-t-0", "default/a-t-1", "default/c-t-1"]


def test_a_task_the_queue_cannot_take_is_skipped() -> None:
    cache = FakeCache()
    cache.add_node(build_node("n1", cpu="8", memory="16Gi"))
    add_job(cache, "a", 3)
    run_session(cache, conf("t-gang", "t-quota {refuse: [a-t-1]}"), registry=REGISTRY)
    assert set(cache.bound) == {"default/a-t-0", "default/a-t-2"}


def test_idle_nodes_win_over_pipelining_whatever_the_scores() -> None:
    cache = FakeCache()
    cache.add_node(build_node("n1", cpu="2", memory="8Gi"))
    cache.add_node(build_node("n2", cpu="2", memory="8Gi"))
    cache.add_pod_group(build_pod_group("old", phase=PodGroupPhase.RUNNING))
    cache.add_task(build_task("old-0", job="old", cpu="2", node="n1", status=S.RELEASING))
    add_job(cache, "new", 1)
    result = run_session(cache, conf("t-gang", "t-score {score: {n1: 100, n2: 0}}"), registry=REGISTRY)
    assert cache.bound == {"default/new-t-0": "n2"}
    assert result.pipelined == ()


def test_a_pipelined_but_not_ready_job_keeps_its_reservations_unbound() -> None:
    cache = FakeCache()
    cache.add_node(build_node("n1", cpu="2", memory="8Gi"))
    cache.add_pod_group(build_pod_group("old", phase=PodGroupPhase.RUNNING))
    cache.add_task(build_task("old-0", job="old", cpu="1", node="n1", status=S.RELEASING))
    add_job(cache, "gang", 2, min_member=2, creation_timestamp=1.0)
    add_job(cache, "late", 1, creation_timestamp=2.0)
    result = run_session(cache, conf("t-gang"), registry=REGISTRY)
    assert cache.bound == {}
    gang = result.session.jobs["default/gang"]  # type: ignore[union-attr]
    statuses = sorted(str(t.status) for t in gang.tasks.values())
    assert statuses == ["Allocated", "Pipelined"]
    assert [t.key for t, _ in result.pipelined] == ["default/gang-t-1"]
    # The reservation is kept: the later job finds no room.
    late = result.session.jobs["default/late"]  # type: ignore[union-attr]
    assert "default-late-t-0" in late.nodes_fit_errors


def test_best_effort_tasks_are_left_to_backfill() -> None:
    cache = FakeCache()
    cache.add_node(build_node("n1"))
    cache.add_pod_group(build_pod_group("be"))
    cache.add_task(build_task("be-0", job="be", cpu=None, memory=None))
    run_session(cache, conf("t-gang"), registry=REGISTRY)
    assert cache.bound == {}


def test_pending_jobs_are_admitted_only_when_enqueue_is_not_configured() -> None:
    def build() -> FakeCache:
        cache = FakeCache()
        cache.add_node(build_node("n1"))
        add_job(cache, "p", 1, phase=PodGroupPhase.PENDING, min_resources=Resource(1000, 0))
        return cache

    without = build()
    result = run_session(without, conf("t-gang"), registry=REGISTRY)
    assert without.bound == {"default/p-t-0": "n1"}
    assert result.session.jobs["default/p"].pod_group.phase is not PodGroupPhase.PENDING  # type: ignore[union-attr]
    with_enqueue = build()
    run_session(with_enqueue, conf("t-gang", "t-reject", actions="enqueue, allocate"), registry=REGISTRY)
    assert with_enqueue.bound == {}


def test_fit_errors_explain_every_node() -> None:
    cache = FakeCache()
    cache.add_node(build_node("n1", cpu="1", labels={"role": "master"}))
    cache.add_node(build_node("n2", cpu="4", labels={"role": "worker"}))
    cache.add_node(build_node("n3", cpu="4", labels={"role": "worker"}))
    cache.add_pod_group(build_pod_group("j"))
    cache.add_task(build_task("j-0", job="j", cpu="2", labels={"want": "master"}))
    result = run_session(cache, conf("t-gang", "t-labels"), registry=REGISTRY)
    errors = result.session.jobs["default/j"].nodes_fit_errors["default-j-0"]  # type: ignore[union-attr]
    assert errors.error() == "0/3 nodes are available: 1 Insufficient cpu, 2 node(s) didn't match Pod's node selector."


def roles_cache(minimums: dict[str, int]) -> FakeCache:
    """Volcano's master/worker case: one master node and one worker node, 1 cpu each."""
    cache = FakeCache()
    cache.add_node(build_node("n1", cpu="1", labels={"role": "master"}))
    cache.add_node(build_node("n2", cpu="1", labels={"role": "worker"}))
    cache.add_pod_group(build_pod_group("pg", min_member=2, min_task_member=minimums))
    for i, role in enumerate(("master", "master", "worker", "worker")):
        cache.add_task(build_task(f"p{i}", job="pg", role=role, labels={"want": role}, creation_timestamp=i))
    return cache


def test_a_failed_role_that_cannot_reach_its_minimum_stops_the_job() -> None:
    cache = roles_cache({"master": 2, "worker": 0})
    result = run_session(cache, conf("t-roles", "t-labels"), registry=REGISTRY)
    assert cache.bound == {}
    job = result.session.jobs["default/pg"]  # type: ignore[union-attr]
    assert set(job.nodes_fit_errors) == {"default-p1"}  # the workers were never tried


def test_allocation_goes_on_with_other_roles_when_they_can_still_make_the_gang() -> None:
    cache = roles_cache({"master": 1, "worker": 1})
    result = run_session(cache, conf("t-roles", "t-labels"), registry=REGISTRY)
    assert cache.bound == {"default/p0": "n1", "default/p2": "n2"}
    job = result.session.jobs["default/pg"]  # type: ignore[union-attr]
    assert "Insufficient cpu" in job.nodes_fit_errors["default-p1"].error()


def test_later_tasks_of_a_failed_role_are_skipped() -> None:
    cache = FakeCache()
    cache.add_node(build_node("n1", cpu="1", labels={"role": "master"}))
    cache.add_node(build_node("n2", cpu="1", labels={"role": "worker"}))
    cache.add_pod_group(build_pod_group("pg", min_member=2))
    for i, (role, want) in enumerate((("a", "master"), ("b", "gpu"), ("b", "gpu"), ("c", "worker"))):
        cache.add_task(build_task(f"p{i}", job="pg", role=role, labels={"want": want}, creation_timestamp=i))
    result = run_session(cache, conf("t-roles", "t-labels"), registry=REGISTRY)
    job = result.session.jobs["default/pg"]  # type: ignore[union-attr]
    assert "skipped" in job.nodes_fit_errors["default-p2"].error()
    assert cache.bound == {"default/p0": "n1", "default/p3": "n2"}


@pytest.mark.parametrize(("enabled", "expected_calls"), [(True, 4), (False, 5)])
def test_predicate_failures_are_reused_within_a_role(enabled: bool, expected_calls: int) -> None:
    cache = FakeCache()
    for name, role in (("n1", "gpu"), ("n2", "cpu"), ("n3", "cpu")):
        cache.add_node(build_node(name, cpu="1", labels={"role": role}))
    cache.add_pod_group(build_pod_group("pg", min_member=2))
    for i in range(2):
        cache.add_task(build_task(f"p{i}", job="pg", role="w", labels={"want": "cpu"}, creation_timestamp=i))
    TLabels.calls = 0
    args = f"configurations:\n- name: allocate\n  arguments: {{predicateErrorCacheEnable: {str(enabled).lower()}}}"
    run_session(cache, conf("t-gang", "t-labels", extra=args), registry=REGISTRY)
    assert set(cache.bound) == {"default/p0", "default/p1"}
    # p0 checks n1, n2, n3; p1 skips n1 (cached failure) and n2 (now full), checks n3.
    assert TLabels.calls == expected_calls


def test_a_failing_plugin_discards_only_its_job() -> None:
    cache = FakeCache()
    cache.add_node(build_node("n1", cpu="8", memory="16Gi"))
    add_job(cache, "bad", 2, min_member=2, creation_timestamp=1.0)
    add_job(cache, "good", 2, min_member=2, creation_timestamp=2.0)
    result = run_session(cache, conf("t-boom {job: bad}"), registry=REGISTRY)
    assert set(cache.bound) == {"default/good-t-0", "default/good-t-1"}
    assert [e.plugin for e in result.plugin_errors] == ["t-boom"]
    bad = result.session.jobs["default/bad"]  # type: ignore[union-attr]
    assert all(t.status is S.PENDING for t in bad.tasks.values())
    assert result.session.nodes["n1"].idle.milli_cpu == 6000  # type: ignore[union-attr]


def test_the_same_input_gives_the_same_placements() -> None:
    def once(seed: int) -> dict[str, str]:
        cache = FakeCache()
        for i in range(8):
            cache.add_node(build_node(f"n{i}", cpu="2", memory="8Gi"))
        add_job(cache, "a", 6)
        run_session(cache, conf("t-gang"), registry=REGISTRY, seed=seed)
        return cache.bound

    first = once(7)
    assert once(7) == first
    assert len(first) == 6
    assert len(set(first.values())) > 1  # ties between equal nodes are really broken
