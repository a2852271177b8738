"""backfill: best-effort tasks only, predicates without a resource check, order, fit errors."""

from __future__ import annotations

from collections.abc import Mapping, Sequence

from volcanolib import Registry, hookimpl
from volcanolib.api.job import JobInfo, PodGroupPhase
from volcanolib.api.node import NodeInfo
from volcanolib.api.task import TaskInfo
from volcanolib.framework.config import Arguments
from volcanolib.framework.status import Status
from volcanolib.testing import FakeCache, build_node, build_pod_group, build_queue, build_task, run_session

PLACED: list[str] = []


class TGang:
    """Ready at ``min_available`` placed tasks; records every placement."""

    def __init__(self, arguments: Arguments) -> None:
        pass

    @hookimpl
    def job_ready(self, ssn: object, job: JobInfo) -> bool:
        return job.ready_task_num() >= job.min_available

    @hookimpl
    def on_allocate(self, ssn: object, event: object) -> None:
        PLACED.append(event.task.name)  # type: ignore[attr-defined]


class TLabels:
    """Predicate: a task with a ``want`` label runs only on nodes with the same ``role`` label."""

    def __init__(self, arguments: Arguments) -> None:
        pass

    @hookimpl
    def predicate(self, ssn: object, task: TaskInfo, node: NodeInfo) -> Status:
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


class TPre:
    """Pre-predicate failing for tasks named in ``refuse``."""

    def __init__(self, arguments: Arguments) -> None:
        self.refused = set(arguments.get("refuse", ()))

    @hookimpl
    def pre_predicate(self, ssn: object, task: TaskInfo) -> Status:
        return Status.unresolvable("volume not ready") if task.name in self.refused else Status.success()


REGISTRY = Registry(plugins={"t-gang": TGang, "t-labels": TLabels, "t-score": TScore, "t-pre": TPre})


def conf(*plugins: str) -> str:
    lines = ['actions: "backfill"', "tiers:", "- plugins:"]
    for entry in plugins:
        name, _, arguments = entry.partition(" ")
        lines.append(f"  - name: {name}")
        if arguments:
            lines.append(f"    arguments: {arguments}")
    return "\n".join(lines) + "\n"


def best_effort(name: str, job: str, **kw: object) -> TaskInfo:
    return build_task(name, job=job, cpu=None, memory=None, **kw)  # type: ignore[arg-type]


def test_only_best_effort_tasks_are_placed_and_without_a_resource_check() -> None:
    cache = FakeCache()
    cache.add_node(build_node("n1", cpu="1", memory="1Gi"))
    cache.add_pod_group(build_pod_group("j"))
    cache.add_task(build_task("hog", job="j", cpu="1", memory="1Gi", node="n1"))
    cache.add_task(best_effort("be", "j"))
    cache.add_task(build_task("sized", job="j", cpu="1", memory="1Gi"))
    run_session(cache, conf("t-gang"), registry=REGISTRY)
    assert cache.bound == {"default/be": "n1"}


def test_tasks_go_queue_by_queue_then_job_by_job() -> None:
    cache = FakeCache()
    cache.add_node(build_node("n1"))
    cache.add_queue(build_queue("qa"))
    cache.add_queue(build_queue("qb"))
    cache.add_pod_group(build_pod_group("b1", queue="qb", creation_timestamp=0.0))
    cache.add_pod_group(build_pod_group("a2", queue="qa", creation_timestamp=2.0))
    cache.add_pod_group(build_pod_group("a1", queue="qa", creation_timestamp=1.0))
    for job in ("b1", "a2", "a1"):
        for i in (1, 0):
            cache.add_task(best_effort(f"{job}-t-{i}", job))
    PLACED.clear()
    run_session(cache, conf("t-gang"), registry=REGISTRY)
    assert PLACED == ["a1-t-0", "a1-t-1", "a2-t-0", "a2-t-1", "b1-t-0", "b1-t-1"]


def test_the_best_scored_node_is_used() -> None:
    cache = FakeCache()
    for name in ("n1", "n2", "n3"):
        cache.add_node(build_node(name))
    cache.add_pod_group(build_pod_group("j"))
    cache.add_task(best_effort("be", "j"))
    run_session(cache, conf("t-gang", "t-score {score: {n2: 5, n3: 1}}"), registry=REGISTRY)
    assert cache.bound == {"default/be": "n2"}


def test_a_gang_of_best_effort_tasks_is_bound_once_ready() -> None:
    cache = FakeCache()
    cache.add_node(build_node("n1", labels={"role": "a"}))
    cache.add_pod_group(build_pod_group("j", min_member=3))
    cache.add_task(best_effort("j-t-0", "j"))
    cache.add_task(best_effort("j-t-1", "j"))
    cache.add_task(best_effort("j-t-2", "j", labels={"want": "b"}))
    result = run_session(cache, conf("t-gang", "t-labels"), registry=REGISTRY)
    assert cache.bound == {}  # two placed, the third fits nowhere: the gang is not ready
    job = result.session.jobs["default/j"]  # type: ignore[union-attr]
    errors = job.nodes_fit_errors["default-j-t-2"]
    assert errors.error() == "0/1 nodes are available: 1 node(s) didn't match Pod's node selector."


def test_pre_predicate_failures_are_recorded_for_every_node_and_others_go_on() -> None:
    cache = FakeCache()
    cache.add_node(build_node("n1"))
    cache.add_node(build_node("n2"))
    cache.add_pod_group(build_pod_group("j"))
    cache.add_task(best_effort("j-t-0", "j"))
    cache.add_task(best_effort("j-t-1", "j"))
    result = run_session(cache, conf("t-gang", "t-pre {refuse: [j-t-0]}"), registry=REGISTRY)
    assert list(cache.bound) == ["default/j-t-1"]
    job = result.session.jobs["default/j"]  # type: ignore[union-attr]
    assert job.nodes_fit_errors["default-j-t-0"].error() == "0/2 nodes are available: 2 volume not ready."


def test_pending_jobs_are_not_backfilled() -> None:
    cache = FakeCache()
    cache.add_node(build_node("n1"))
    cache.add_pod_group(build_pod_group("j", phase=PodGroupPhase.PENDING))
    cache.add_task(best_effort("be", "j"))
    run_session(cache, conf("t-gang"), registry=REGISTRY)
    assert cache.bound == {}
