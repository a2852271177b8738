"""preempt: victim choice and order, per-node rollback, eligibility, commit rule, topology-aware variant."""

from __future__ import annotations

from collections.abc import Mapping, Sequence

import attrs

from volcanolib import Registry, hookimpl
from volcanolib.api.job import JobInfo
from volcanolib.api.node import NodeInfo
from volcanolib.api.queue import QueueInfo
from volcanolib.api.task import ALLOCATED_STATUSES, TaskInfo, TaskStatus, in_statuses
from volcanolib.framework.config import Arguments
from volcanolib.framework.session import Session
from volcanolib.framework.status import Status, Vote
from volcanolib.testing import FakeCache, build_node, build_pod_group, build_task, run_session

S = TaskStatus


class TPrio:
    """Priority rules: higher job and task priority first; lower-priority work may be preempted."""

    def __init__(self, arguments: Arguments) -> None:
        pass

    @hookimpl
    def job_order_key(self, ssn: object, job: JobInfo) -> int:
        return -job.priority

    @hookimpl
    def task_order_key(self, ssn: object, task: TaskInfo) -> int:
        return -task.priority

    @hookimpl
    def job_starving(self, ssn: object, job: JobInfo) -> bool:
        return job.is_starving()

    @hookimpl
    def job_pipelined(self, ssn: object, job: JobInfo) -> Vote:
        return Vote.PERMIT if job.is_pipelined() else Vote.REJECT

    @hookimpl
    def preemptable(self, ssn: Session, preemptor: TaskInfo, preemptees: Sequence[TaskInfo]) -> list[TaskInfo]:
        mine = ssn.jobs[preemptor.job]
        out = []
        for task in preemptees:
            theirs = ssn.jobs[task.job]
            if theirs is mine:
                if task.priority < preemptor.priority:
                    out.append(task)
            elif theirs.priority < mine.priority:
                out.append(task)
        return out


class TBlock:
    """Nodes in ``nodes`` fail the predicate (plain Unschedulable); tasks in ``refuse`` are not allocatable.

    With ``cap`` (milli-cpu), a queue may not take a task that would bring what it holds above it.
    """

    def __init__(self, arguments: Arguments) -> None:
        self.nodes = set(arguments.get("nodes", ()))
        self.refused = set(arguments.get("refuse", ()))
        self.cap: float | None = arguments.get("cap")

    @hookimpl
    def predicate(self, ssn: object, task: TaskInfo, node: NodeInfo) -> Status:
        return Status.unschedulable("port in use") if node.name in self.nodes else Status.success()

    @hookimpl
    def allocatable(self, ssn: Session, queue: QueueInfo, task: TaskInfo) -> bool:
        if task.name in self.refused:
            return False
        if self.cap is None:
            return True
        held = sum(
            t.resreq.milli_cpu
            for job in ssn.jobs.values()
            if job.queue == queue.name
            for t in job.tasks.values()
            if in_statuses(t.status, ALLOCATED_STATUSES)
        )
        return held + task.resreq.milli_cpu <= self.cap


class TScore:
    """Scores nodes by the ``score`` argument (node name -> score)."""

    def __init__(self, arguments: Arguments) -> None:
        self.scores: Mapping[str, float] = arguments.get("score", {})

    @hookimpl
    def batch_node_order(self, ssn: object, task: TaskInfo, nodes: Sequence[NodeInfo]) -> Mapping[str, float]:
        return {n.name: float(self.scores.get(n.name, 0)) for n in nodes}


REGISTRY = Registry(plugins={"t-prio": TPrio, "t-block": TBlock, "t-score": TScore})


def conf(*plugins: str, extra: str = "") -> str:
    lines = ['actions: "preempt"', "tiers:", "- plugins:"]
    for entry in plugins:
        name, _, arguments = entry.partition(" ")
        lines.append(f"  - name: {name}")
        if arguments:
            lines.append(f"    arguments: {arguments}")
    if extra:
        lines.append(extra)
    return "\n".join(lines) + "\n"


def cluster() -> FakeCache:
    cache = FakeCache()
    cache.add_priority_class("low", 1)
    cache.add_priority_class("mid", 5)
    cache.add_priority_class("high", 10)
    return cache


def running(cache: FakeCache, job: str, node: str, *tasks: tuple[str, str, int], prio: str = "low") -> None:
    """A running job; each task is ``(name, cpu, task priority)``."""
    cache.add_pod_group(build_pod_group(job, min_member=1, priority_class_name=prio))
    for name, cpu, priority in tasks:
        cache.add_task(build_task(name, job=job, cpu=cpu, node=node, priority=priority))


def preemptor(cache: FakeCache, job: str, *cpus: str, min_member: int = 1, prio: str = "high") -> None:
    cache.add_pod_group(build_pod_group(job, min_member=min_member, priority_class_name=prio))
    for i, cpu in enumerate(cpus):
        cache.add_task(build_task(f"{job}-{i}", job=job, cpu=cpu))


def test_victims_go_lowest_priority_first_and_only_as_many_as_needed() -> None:
    cache = cluster()
    cache.add_node(build_node("n1", cpu="3"))
    running(cache, "low", "n1", ("l-0", "1", 3), ("l-1", "1", 1), ("l-2", "1", 2))
    preemptor(cache, "hi", "2")
    result = run_session(cache, conf("t-prio"), registry=REGISTRY)
    assert cache.evicted == ["default/l-1", "default/l-2"]
    assert [(t.key, node) for t, node in result.pipelined] == [("default/hi-0", "n1")]
    assert cache.bound == {}


def test_a_node_where_the_preemptor_still_does_not_fit_loses_nothing() -> None:
    cache = cluster()
    cache.add_node(build_node("n1", cpu="2"))
    cache.add_node(build_node("n2", cpu="2"))
    running(cache, "low1", "n1", ("a-0", "500m", 1), ("a-1", "500m", 1))
    running(cache, "low2", "n2", ("b-0", "2", 1))
    preemptor(cache, "hi", "1")
    # n1 scores best, but the queue (3 cpu held, 2 allowed) may take the preemptor only once 2 cpu are
    # gone, and n1's victims hold 1 cpu: n1's evictions are undone, n2's victim makes room.
    text = conf("t-prio", "t-block {cap: 2000}", "t-score {score: {n1: 10, n2: 1}}")
    result = run_session(cache, text, registry=REGISTRY)
    assert cache.evicted == ["default/b-0"]
    assert [node for _, node in result.pipelined] == ["n2"]
    ssn = result.session
    assert ssn is not None
    assert all(t.status is S.RUNNING for t in ssn.jobs["default/low1"].tasks.values())


def test_predicates_are_not_asked_again_once_victims_make_room() -> None:
    """As Volcano v1.14.1: a node a plain Unschedulable predicate failure left in gets the preemptor."""
    cache = cluster()
    cache.add_node(build_node("n1", cpu="2"))
    running(cache, "low", "n1", ("l-0", "1", 1), ("l-1", "1", 1))
    preemptor(cache, "hi", "1")
    result = run_session(cache, conf("t-prio", "t-block {nodes: [n1]}"), registry=REGISTRY)
    assert len(cache.evicted) == 1 and cache.evicted[0].startswith("default/l-")
    assert [(t.key, node) for t, node in result.pipelined] == [("default/hi-0", "n1")]


def test_nothing_is_evicted_when_the_queue_may_not_take_the_preemptor() -> None:
    cache = cluster()
    cache.add_node(build_node("n1", cpu="2"))
    running(cache, "low", "n1", ("l-0", "1", 1), ("l-1", "1", 1))
    preemptor(cache, "hi", "1")
    result = run_session(cache, conf("t-prio", "t-block {refuse: [hi-0]}"), registry=REGISTRY)
    assert cache.evicted == []
    assert result.pipelined == ()


def test_evictions_are_sent_only_when_the_whole_gang_is_pipelined() -> None:
    cache = cluster()
    cache.add_node(build_node("n1", cpu="3"))
    running(cache, "low", "n1", ("l-0", "1", 1), ("l-1", "1", 1), ("l-2", "1", 1))
    preemptor(cache, "hi", "2", "2", min_member=2)
    result = run_session(cache, conf("t-prio"), registry=REGISTRY)
    assert cache.evicted == []
    assert result.pipelined == ()
    ssn = result.session
    assert ssn is not None
    assert ssn.nodes["n1"].releasing.milli_cpu == 0


def test_a_preemptor_with_preemption_policy_never_evicts_nothing() -> None:
    cache = cluster()
    cache.add_node(build_node("n1", cpu="1"))
    running(cache, "low", "n1", ("l-0", "1", 1))
    preemptor(cache, "hi", "1")
    task = cache.get_task("default-hi-0")
    assert task is not None and task.pod is not None
    task.pod = attrs.evolve(task.pod, preemption_policy="Never")
    run_session(cache, conf("t-prio"), registry=REGISTRY)
    assert cache.evicted == []


def test_a_best_effort_preemptor_only_takes_best_effort_tasks() -> None:
    def build(victim_cpu: str | None) -> FakeCache:
        cache = cluster()
        cache.add_node(build_node("n1", cpu="4", pods=1))
        cache.add_pod_group(build_pod_group("low", priority_class_name="low"))
        cache.add_task(build_task("l-0", job="low", cpu=victim_cpu, memory=None, node="n1"))
        cache.add_pod_group(build_pod_group("hi", priority_class_name="high"))
        cache.add_task(build_task("hi-0", job="hi", cpu=None, memory=None))
        return cache

    sized = build("1")
    run_session(sized, conf("t-prio"), registry=REGISTRY)
    assert sized.evicted == []
    empty = build(None)
    run_session(empty, conf("t-prio"), registry=REGISTRY)
    assert empty.evicted == ["default/l-0"]


def test_within_a_job_a_pending_task_displaces_a_lower_priority_sibling() -> None:
    cache = cluster()
    cache.add_node(build_node("n1", cpu="1"))
    cache.add_pod_group(build_pod_group("job", min_member=2, priority_class_name="mid"))
    cache.add_task(build_task("job-low", job="job", cpu="1", node="n1", priority=1))
    cache.add_task(build_task("job-high", job="job", cpu="1", priority=10))
    result = run_session(cache, conf("t-prio"), registry=REGISTRY)
    assert cache.evicted == ["default/job-low"]
    assert [t.key for t, _ in result.pipelined] == ["default/job-high"]


def topology_case() -> FakeCache:
    cache = cluster()
    cache.add_node(build_node("n1", cpu="4"))
    running(cache, "ja", "n1", ("a", "1", 1), prio="low")
    running(cache, "jb", "n1", ("b", "2", 1), prio="mid")
    running(cache, "jc", "n1", ("c", "1", 1), prio="high")
    cache.add_priority_class("top", 100)
    preemptor(cache, "hi", "2", prio="top")
    return cache


def test_normal_preemption_evicts_in_victim_order_until_it_fits() -> None:
    cache = topology_case()
    result = run_session(cache, conf("t-prio"), registry=REGISTRY)
    assert cache.evicted == ["default/a", "default/b"]
    # One attempt (one node with victims allowed: a, b and c are all below the preemptor), for the metrics.
    assert result.session is not None
    assert (result.session.preemption_attempts, result.session.preemption_victims) == (1, 3)


TOPOLOGY = (
    "configurations:\n- name: preempt\n  arguments: {enableTopologyAwarePreemption: true, minCandidateNodesAbsolute: 3}"
)


def test_topology_aware_preemption_spares_victims_it_does_not_need() -> None:
    cache = topology_case()
    result = run_session(cache, conf("t-prio", extra=TOPOLOGY), registry=REGISTRY)
    assert cache.evicted == ["default/b"]
    assert [node for _, node in result.pipelined] == ["n1"]
    ssn = result.session
    assert ssn is not None
    assert (ssn.preemption_attempts, ssn.preemption_victims) == (1, 1)
    assert ssn.jobs["default/ja"].tasks["default-a"].status is S.RUNNING


def test_topology_aware_preemption_picks_the_node_with_the_least_important_victims() -> None:
    def once() -> list[str]:
        cache = cluster()
        for name in ("n1", "n2", "n3"):
            cache.add_node(build_node(name, cpu="1"))
        running(cache, "j1", "n1", ("v1", "1", 50))
        running(cache, "j2", "n2", ("v2", "1", 2))
        running(cache, "j3", "n3", ("v3", "1", 30))
        preemptor(cache, "hi", "1")
        run_session(cache, conf("t-prio", extra=TOPOLOGY), registry=REGISTRY, seed=3)
        return cache.evicted

    first = once()
    assert first == ["default/v2"]
    assert once() == first


def test_a_node_with_room_gets_the_preemptor_without_evictions() -> None:
    cache = cluster()
    cache.add_node(build_node("n1", cpu="2"))
    running(cache, "low", "n1", ("l-0", "1", 1))
    preemptor(cache, "hi", "1")
    result = run_session(cache, conf("t-prio"), registry=REGISTRY)
    assert cache.evicted == []
    assert [(t.key, node) for t, node in result.pipelined] == [("default/hi-0", "n1")]


def test_topology_aware_dry_runs_leave_bound_victims_bound() -> None:
    # Both nodes are dry-run (evict, check, undo); the node not chosen keeps its victim as it was.
    cache = cluster()
    for name in ("n1", "n2"):
        cache.add_node(build_node(name, cpu="1"))
    for job, node, priority in (("j1", "n1", 50), ("j2", "n2", 2)):
        cache.add_pod_group(build_pod_group(job, min_member=1, priority_class_name="low"))
        cache.add_task(build_task(f"v-{job}", job=job, cpu="1", node=node, priority=priority, status=S.BOUND))
    preemptor(cache, "hi", "1")
    result = run_session(cache, conf("t-prio", extra=TOPOLOGY), registry=REGISTRY)
    assert cache.evicted == ["default/v-j2"]
    ssn = result.session
    assert ssn is not None
    assert ssn.jobs["default/j1"].tasks["default-v-j1"].status is S.BOUND


def test_topology_aware_dry_runs_leave_the_tasks_they_try_as_they_were() -> None:
    # Volcano's dry runs work on copies; here they evict and undo, which must not leave a trace on a spared task.
    cache = cluster()
    cache.add_node(build_node("n1", cpu="4"))
    cache.add_pod_group(build_pod_group("ja", min_member=1, priority_class_name="low"))
    cache.add_task(build_task("a", job="ja", cpu="1", node="n1", priority=1, status=S.BOUND))
    running(cache, "jb", "n1", ("b", "2", 1), prio="mid")
    running(cache, "jc", "n1", ("c", "1", 1), prio="high")
    cache.add_priority_class("top", 100)
    preemptor(cache, "hi", "2", prio="top")
    result = run_session(cache, conf("t-prio", extra=TOPOLOGY), registry=REGISTRY)
    assert cache.evicted == ["default/b"]
    ssn = result.session
    assert ssn is not None
    spared = ssn.jobs["default/ja"].tasks["default-a"]
    assert spared.status is S.BOUND
    assert spared.last_transaction is None, "a tried and spared victim carries no record of an undone eviction"
    assert ssn.nodes["n1"].releasing.milli_cpu == 2000


def test_topology_aware_preemption_skips_nodes_whose_predicates_still_fail_after_the_evictions() -> None:
    def once(blocked: str) -> tuple[list[str], list[str]]:
        cache = cluster()
        for name in ("n1", "n2"):
            cache.add_node(build_node(name, cpu="1"))
        running(cache, "j1", "n1", ("v1", "1", 1), prio="low")
        running(cache, "j2", "n2", ("v2", "1", 1), prio="mid")
        preemptor(cache, "hi", "1")
        result = run_session(
            cache, conf("t-prio", f"t-block {{nodes: [{blocked}]}}", extra=TOPOLOGY), registry=REGISTRY
        )
        return cache.evicted, [node for _, node in result.pipelined]

    # n1 holds the least important victim, but the preemptor never passes there: n2 is the only candidate.
    assert once("n1") == (["default/v2"], ["n2"])
    # No node where a victim set makes the preemptor pass: nothing is evicted, nothing pipelined.
    assert once("n1, n2") == ([], [])
