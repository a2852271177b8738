import attrs
import pytest

from volcanolib.api.job import JobInfo, PodGroupPhase
from volcanolib.api.node import NodeInfo
from volcanolib.api.resource import PODS, Resource
from volcanolib.api.task import TaskStatus
from volcanolib.errors import ResourceError
from volcanolib.testing import build_node, build_pod_group, build_task

S = TaskStatus


def job_with(statuses: list[TaskStatus], *, min_member: int = 2, roles: list[str] | None = None, **kw) -> JobInfo:
    job = JobInfo.from_pod_group(build_pod_group("pg", min_member=min_member, **kw))
    for i, st in enumerate(statuses):
        role = roles[i] if roles else ""
        node = "n1" if st not in (S.PENDING,) else ""
        job.add_task_info(build_task(f"pg-{role or 't'}-{i}", job="pg", status=st, node=node, role=role))
    return job


def test_counts_and_allocated_follow_status_changes() -> None:
    job = job_with([S.PENDING, S.PENDING, S.RUNNING])
    assert job.ready_task_num() == 1
    assert job.allocated.milli_cpu == 1000
    task = next(iter(job.tasks_in(S.PENDING)))
    job.update_task_status(task, S.ALLOCATED)
    assert job.ready_task_num() == 2
    assert job.allocated.milli_cpu == 2000
    assert job.is_ready()
    job.update_task_status(task, S.PIPELINED)
    assert job.allocated.milli_cpu == 1000
    assert not job.is_ready() and job.is_pipelined() and not job.is_starving()


def test_best_effort_pending_counts_for_ready_not_starving() -> None:
    job = JobInfo.from_pod_group(build_pod_group("pg", min_member=2))
    job.add_task_info(build_task("pg-t-0", job="pg", node="n1"))
    job.add_task_info(build_task("pg-t-1", job="pg", cpu=None, memory=None))
    assert job.pending_best_effort_task_num() == 1
    assert job.is_ready()
    assert job.is_starving()


def test_role_minimums() -> None:
    job = job_with(
        [S.RUNNING, S.PENDING, S.RUNNING],
        min_member=3,
        roles=["ps", "worker", "worker"],
        min_task_member={"ps": 1, "worker": 2},
    )
    assert job.check_task_valid()
    assert not job.check_task_ready()
    assert job.check_task_starving()
    worker = next(t for t in job.tasks_in(S.PENDING))
    job.update_task_status(worker, S.PIPELINED)
    assert job.check_task_pipelined() and not job.check_task_ready()


def test_role_minimums_ignored_when_job_minimum_is_smaller() -> None:
    job = job_with([S.PENDING], min_member=1, roles=["w"], min_task_member={"w": 3})
    assert job.check_task_valid() and job.check_task_ready()


def test_clone_is_independent() -> None:
    job = job_with([S.PENDING, S.RUNNING])
    copy = job.clone()
    task = next(iter(copy.tasks_in(S.PENDING)))
    copy.update_task_status(task, S.ALLOCATED)
    assert job.ready_task_num() == 1 and copy.ready_task_num() == 2
    copy.pod_group.phase = PodGroupPhase.RUNNING
    assert job.pod_group.phase is PodGroupPhase.INQUEUE


def test_fit_error_message() -> None:
    job = job_with([S.PENDING, S.RUNNING], min_member=3)
    assert job.fit_error().startswith("pod group is not ready, 1 Pending, 1 Running, 3 minAvailable")


def test_node_accounting_by_status() -> None:
    node = build_node("n1", cpu="4", memory="8Gi", pods=10)
    running = build_task("a", node="n1")
    releasing = build_task("b", node="n1", status=S.RELEASING)
    pipelined = build_task("c", node="n1", status=S.PIPELINED)
    for t in (running, releasing, pipelined):
        node.add_task(t)
    assert node.idle.milli_cpu == 2000 and node.used.milli_cpu == 2000
    assert node.releasing.milli_cpu == 1000 and node.pipelined.milli_cpu == 1000
    assert node.future_idle().milli_cpu == 2000
    assert node.idle.get(PODS) == 8
    running.status = S.RELEASING
    node.update_task(running)
    assert node.releasing.milli_cpu == 2000 and node.used.milli_cpu == 2000
    for t in (running, releasing, pipelined):
        node.remove_task(t)
    assert node.idle == node.allocatable and node.used == Resource(0, 0, {PODS: 0})


def test_node_accounting_after_status_moves_equals_a_fresh_count() -> None:
    import random

    rng = random.Random(11)
    statuses = [S.PENDING, S.ALLOCATED, S.PIPELINED, S.BINDING, S.BOUND, S.RUNNING, S.RELEASING]
    node = build_node("n1", cpu="64", memory="64Gi", pods=20)
    tasks = [build_task(f"t-{i}", node="n1", cpu=f"{rng.randint(1, 3)}", status=rng.choice(statuses)) for i in range(8)]
    for task in tasks:
        node.add_task(task)
    for _ in range(400):
        task = rng.choice(tasks)
        task.status = rng.choice(statuses)
        node.update_task(task)
        fresh = build_node("n1", cpu="64", memory="64Gi", pods=20)
        for other in tasks:
            fresh.add_task(other)
        columns = ("idle", "used", "releasing", "pipelined")
        assert [getattr(node, c) for c in columns] == [getattr(fresh, c) for c in columns]
        assert node.accounted_status(task) is task.status


def test_node_refuses_wrong_node_and_duplicates() -> None:
    node = build_node("n1")
    with pytest.raises(ResourceError):
        node.add_task(build_task("a", node="n2"))
    task = build_task("a", node="n1")
    node.add_task(task)
    with pytest.raises(ResourceError):
        node.add_task(task)
    with pytest.raises(ResourceError):
        node.remove_task(build_task("zz", node="n1"))


def test_node_without_pods_gets_kubelet_default() -> None:
    node = NodeInfo("n", Resource.from_list({"cpu": "1"}))
    assert node.pod_capacity == 110 and node.idle.get(PODS) == 110


def test_task_clone_copies_every_field() -> None:
    import attrs

    from volcanolib.api.task import TaskInfo
    from volcanolib.testing import build_task

    task = build_task("t-0", job="j", role="w", node="n1", status=S.RUNNING, priority=7, labels={"a": "b"})
    task.last_transaction = ("n0", S.ALLOCATED)
    copy = task.clone()
    # Every field, whatever fields are added later, must be copied.
    for field in attrs.fields(TaskInfo):
        assert getattr(copy, field.name) == getattr(task, field.name), field.name
    copy.status = S.RELEASING
    assert task.status is S.RUNNING


def test_ready_count_follows_every_status_move() -> None:
    import random

    from volcanolib.api.task import READY_STATUSES

    rng = random.Random(7)
    statuses = list(S)
    job = job_with([rng.choice(statuses) for _ in range(12)])
    for _ in range(300):
        task = rng.choice(list(job.tasks.values()))
        job.update_task_status(task, rng.choice(statuses))
        assert job.ready_task_num() == job.count(READY_STATUSES)
        assert job.clone().ready_task_num() == job.ready_task_num()
    victim = next(iter(job.tasks.values()))
    job.delete_task_info(victim)
    assert job.ready_task_num() == job.count(READY_STATUSES)


def test_node_names_read_like_a_list_of_the_nodes_at_recording_time() -> None:
    from volcanolib.api.fiterrors import FitErrors, NodeNames

    nodes = [build_node(f"n{i}") for i in range(5)]
    positions = [4, 0, 2]
    names = NodeNames(nodes, positions)
    positions.append(1)  # the positions were copied
    assert list(names) == ["n4", "n0", "n2"] and len(names) == 3
    assert names[1] == "n0" and names[-1] == "n2" and names[1:] == ["n0", "n2"]
    assert "n2" in names and "n1" not in names
    errors = FitErrors(total_nodes=5)
    errors.set_group_error("t", names, ["Insufficient cpu"])
    errors.set_group_error("t", NodeNames(nodes, [2, 3]), ["Insufficient memory"])
    assert errors.error() == "0/5 nodes are available: 2 Insufficient cpu, 2 Insufficient memory."
    assert sorted(errors.nodes) == ["n0", "n2", "n3", "n4"]
    assert errors.nodes["n2"].reasons == ["Insufficient memory"]


def test_job_clone_equals_the_job_built_again_from_its_tasks() -> None:
    import random

    import attrs

    from volcanolib.api.job import PodGroupCondition

    rng = random.Random(3)
    statuses = list(S)
    job = job_with(
        [rng.choice(statuses) for _ in range(10)], roles=[rng.choice(["ps", "worker", ""]) for _ in range(10)]
    )
    job.pod_group.conditions.append(PodGroupCondition("Scheduled", "True", "tasks", ""))
    job.job_fit_errors = "why"
    job.schedule_start_timestamp = 5.0
    for round_ in range(60):
        task = rng.choice(list(job.tasks.values()))
        job.update_task_status(task, rng.choice(statuses))
        if round_ % 20 == 19:
            job.delete_task_info(task)
        copy = job.clone()
        fresh = JobInfo.from_pod_group(job.pod_group)
        for t in job.tasks.values():
            fresh.add_task_info(t.clone())
        for field in attrs.fields(JobInfo):
            if field.name in ("tasks", "task_status_index", "pod_group", "nodes_fit_errors"):
                continue
            if field.name in ("job_fit_errors", "schedule_start_timestamp"):
                assert getattr(copy, field.name) == getattr(job, field.name), field.name
            elif field.name == "_role_counts":
                nonzero = [
                    {r: {s: n for s, n in c.items() if n} for r, c in x._role_counts.items()} for x in (copy, fresh)
                ]
                assert {r: c for r, c in nonzero[0].items() if c} == nonzero[1], field.name
            elif field.name == "_role_pending_be":
                assert {r: n for r, n in copy._role_pending_be.items() if n} == fresh._role_pending_be, field.name
            else:
                assert getattr(copy, field.name) == getattr(fresh, field.name), field.name
        # The status index lists the tasks in task order, as building the job again does.
        assert [(s, list(b)) for s, b in copy.task_status_index.items()] == [
            (s, list(b)) for s, b in fresh.task_status_index.items()
        ]
        assert all(copy.tasks[uid] is t for b in copy.task_status_index.values() for uid, t in b.items())
        assert all(copy.tasks[uid] is not job.tasks[uid] for uid in job.tasks)
        assert copy.pod_group is not job.pod_group and copy.pod_group.conditions == job.pod_group.conditions
        assert copy.pod_group.conditions[0] is not job.pod_group.conditions[0]
        for field in attrs.fields(type(job.pod_group)):
            assert getattr(copy.pod_group, field.name) == getattr(job.pod_group, field.name), field.name
        assert copy.nodes_fit_errors == {}


def test_class_errors_summarise_and_expand_as_groups_recorded_one_by_one() -> None:
    import random
    from collections import Counter

    from volcanolib.api.fiterrors import FitErrors, NodeNames

    rng = random.Random(3)
    nodes = [build_node(f"n{i}") for i in range(10)]
    reasons = ["Insufficient cpu", "Insufficient memory", "node(s) had taints"]
    for trial in range(200):
        order = list(range(10))
        rng.shuffle(order)
        cuts = sorted(rng.sample(range(11), rng.randint(1, 4)))
        groups = [
            (NodeNames(nodes, order[start:end]), tuple(rng.sample(reasons, rng.randint(1, 2))))
            for start, end in zip(cuts, [*cuts[1:], 10], strict=False)
        ]
        one_by_one = FitErrors(total_nodes=10)
        for names, why in groups:
            one_by_one.set_group_error("t", names, why)
        by_class = FitErrors(total_nodes=10)
        counted = Counter[str]()
        for names, why in groups:
            for reason in why:
                if names:
                    counted[reason] += len(names)
        by_class.set_class_errors("t", groups, counted if trial % 2 else None)
        assert by_class.error() == one_by_one.error()
        assert {n: e.reasons for n, e in by_class.nodes.items()} == {n: e.reasons for n, e in one_by_one.nodes.items()}
        assert by_class.error() == one_by_one.error()  # counts kept after the groups were expanded


def test_fit_error_summary_of_node_groups_counts_as_node_by_node() -> None:
    import random

    from volcanolib.api.fiterrors import FitError, FitErrors, NodeNames

    rng = random.Random(2)
    nodes = [build_node(f"n{i}") for i in range(12)]
    reasons = ["Insufficient cpu", "Insufficient memory", "node(s) had taints", "node(s) didn't match"]
    for trial in range(300):
        grouped = FitErrors(total_nodes=12)
        one_by_one = FitErrors(total_nodes=12)
        shuffled = list(range(12))
        rng.shuffle(shuffled)
        cuts = sorted(rng.sample(range(13), rng.randint(1, 4)))
        overlapping = trial % 3 == 0
        for start, end in zip(cuts, [*cuts[1:], 12], strict=False):
            positions = shuffled[start:end] if not overlapping else rng.sample(range(12), rng.randint(0, 5))
            why = rng.sample(reasons, rng.randint(1, 2))
            grouped.set_group_error("t", NodeNames(nodes, positions), why)
            for p in positions:
                one_by_one.set_node_error(FitError("t", nodes[p].name, why))
        if trial % 5 == 0:
            extra = FitError("t", "n3", ["node(s) were unschedulable"])
            grouped.set_node_error(extra)
            one_by_one.set_node_error(extra)
        assert grouped.error() == one_by_one.error()


@pytest.mark.parametrize(
    ("statuses", "phase", "expected", "scheduled"),
    [
        # Enough scheduled tasks: Running, or Completed once every scheduled task finished.
        ([S.RUNNING, S.BOUND, S.PENDING], PodGroupPhase.INQUEUE, PodGroupPhase.RUNNING, 2),
        ([S.SUCCEEDED, S.FAILED], PodGroupPhase.RUNNING, PodGroupPhase.COMPLETED, 2),
        ([S.SUCCEEDED, S.RUNNING], PodGroupPhase.RUNNING, PodGroupPhase.RUNNING, 2),
        # A task Releasing from a node is not scheduled any more (Volcano v1.14.1).
        ([S.RUNNING, S.RELEASING], PodGroupPhase.RUNNING, PodGroupPhase.PENDING, 1),
        ([S.SUCCEEDED, S.RELEASING], PodGroupPhase.INQUEUE, PodGroupPhase.INQUEUE, 1),
        # Too few: Pending, except that admission (Inqueue) is kept.
        ([S.RUNNING, S.PENDING], PodGroupPhase.RUNNING, PodGroupPhase.PENDING, 1),
        ([S.ALLOCATED, S.PIPELINED], PodGroupPhase.INQUEUE, PodGroupPhase.INQUEUE, 0),
        ([S.PENDING, S.PENDING], PodGroupPhase.UNKNOWN, PodGroupPhase.PENDING, 0),
    ],
)
def test_phase_from_tasks(
    statuses: list[TaskStatus], phase: PodGroupPhase, expected: PodGroupPhase, scheduled: int
) -> None:
    job = job_with(statuses, phase=phase)
    assert job.scheduled_task_num() == scheduled
    assert job.phase_from_tasks() is expected


def test_a_releasing_task_without_a_node_is_not_scheduled() -> None:
    job = job_with([S.RUNNING], phase=PodGroupPhase.INQUEUE)
    job.add_task_info(build_task("pg-t-9", job="pg", status=S.RELEASING))
    assert job.scheduled_task_num() == 1
    assert job.phase_from_tasks() is PodGroupPhase.INQUEUE


def test_alike_pods_of_a_group_share_a_template() -> None:
    """Role-less pods of one group built alike share a template; any difference the scheduler reads splits them."""
    a, b = (build_task(f"p-{i}", job="g", cpu="1", memory="2Gi", labels={"app": "x"}, priority=i) for i in range(2))
    assert a.template == b.template and a.template.startswith("default/g/~")
    unlike = [
        build_task("q", job="g", cpu="2", memory="2Gi", labels={"app": "x"}),
        build_task("q", job="g", cpu="1", memory="2Gi", labels={"app": "y"}),
        build_task("q", job="g", cpu="1", memory="2Gi", labels={"app": "x"}, node_selector={"zone": "a"}),
        build_task("q", job="g", cpu="1", memory="2Gi", labels={"app": "x"}, priority_class_name="high"),
        build_task("q", job="h", cpu="1", memory="2Gi", labels={"app": "x"}),
    ]
    assert all(t.template != a.template for t in unlike)
    assert len({t.template for t in unlike}) == len(unlike)
    # The template follows the pod and the request when either is replaced, and a clone keeps it.
    assert b.pod is not None
    b.pod = attrs.evolve(b.pod, affinity={"podAntiAffinity": {}})
    assert b.template != a.template and b.template.startswith("default/g/~")
    b.resreq = a.resreq
    b.pod = a.pod
    assert b.template == a.template and b.clone().template == a.template
    # A role names the template; a pod without a group, or with a manifest, has its own; a given one stays.
    assert build_task("r", job="g", role="worker").template == "default/g/worker"
    assert build_task("s", cpu="1").template == build_task("s", cpu="1").uid
    c = build_task("t", job="g", cpu="1", memory="2Gi", labels={"app": "x"})
    assert c.pod is not None
    c.pod = attrs.evolve(c.pod, manifest={"kind": "Pod"})
    assert c.template == c.uid
    c.template = "given"
    c.pod = a.pod
    assert c.template == "given" and attrs.evolve(c).template == "given"


def test_fit_error_counts_as_the_reasons_of_every_task() -> None:
    from collections import Counter

    statuses = [S.PENDING, S.PENDING, S.PENDING, S.RUNNING, S.PIPELINED, S.RELEASING, S.SUCCEEDED]
    job = job_with(statuses, min_member=4)
    pending = list(job.tasks_in(S.PENDING))
    pending[0].last_transaction = ("n1", S.ALLOCATED)  # a discarded placement still reads as schedulable
    pending[1].last_transaction = ("n1", S.RELEASING)
    hist = Counter(str(t.status) for t in job.tasks.values()) + Counter({"minAvailable": job.min_available})
    reasons = Counter(job.task_scheduling_reason(t)[0] for t in pending)
    expected = ", ".join(sorted(f"{n} {r}" for r, n in hist.items()))
    expected += "; Pending: " + ", ".join(sorted(f"{n} {r}" for r, n in reasons.items()))
    assert job.fit_error() == f"pod group is not ready, {expected}"
    assert expected.endswith("; Pending: 1 Releasing, 1 Schedulable, 1 Unschedulable")
