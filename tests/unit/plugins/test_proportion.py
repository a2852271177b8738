"""proportion: water-filled deserved shares, queue order, quota checks, reclaim and admission."""

from __future__ import annotations

import pytest

from volcanolib.api.job import PodGroupPhase
from volcanolib.api.queue import QueueState
from volcanolib.api.task import TaskStatus
from volcanolib.framework.status import Vote
from volcanolib.testing import (
    FakeCache,
    build_node,
    build_pod_group,
    build_queue,
    build_resource,
    build_task,
    open_session,
)

CONF = """
actions: ""
tiers:
- plugins:
    - name: proportion
"""
GI = 1024**3


def add_job(
    cache: FakeCache,
    name: str,
    queue: str,
    running: int = 0,
    pending: int = 0,
    *,
    cpu: str | None = "1",
    memory: str | None = "1Gi",
    **pg: object,
) -> None:
    cache.add_pod_group(build_pod_group(name, queue=queue, **pg))  # type: ignore[arg-type]
    for i in range(running):
        cache.add_task(build_task(f"{name}-r-{i}", job=name, cpu=cpu, memory=memory, node="n1"))
    for i in range(pending):
        cache.add_task(build_task(f"{name}-p-{i}", job=name, cpu=cpu, memory=memory))


def deserved(ssn: object, queue: str) -> tuple[float, float, float]:
    attr = ssn.plugins["proportion"].queue_attrs[queue]  # type: ignore[attr-defined]
    d = attr.deserved
    return d.milli_cpu, d.memory, d.get("pods")


def test_water_fill_redistributes_what_a_capped_queue_cannot_take() -> None:
    cache = FakeCache()
    cache.add_node(build_node("n1", cpu="8", memory="100Gi", pods=100))
    cache.add_queue(build_queue("q1", weight=3, capability=build_resource(cpu="2")))
    cache.add_queue(build_queue("q2", weight=1))
    add_job(cache, "a", "q1", pending=6)
    add_job(cache, "b", "q2", pending=6)
    ssn = open_session(cache, CONF)
    # q1 is capped at 2 cpu (memory 0 in the capability means unbounded); q2 gets the rest it asks for.
    assert deserved(ssn, "q1") == (2000, 6 * GI, 6)
    assert deserved(ssn, "q2") == (6000, 6 * GI, 6)


def test_water_fill_by_weight_when_demand_exceeds_the_cluster() -> None:
    cache = FakeCache()
    cache.add_node(build_node("n1", cpu="8", memory="100Gi", pods=100))
    cache.add_queue(build_queue("q1", weight=3))
    cache.add_queue(build_queue("q2", weight=1))
    add_job(cache, "a", "q1", pending=10, memory="100Mi")
    add_job(cache, "b", "q2", pending=10, memory="100Mi")
    ssn = open_session(cache, CONF)
    assert deserved(ssn, "q1")[0] == pytest.approx(6000)
    assert deserved(ssn, "q2")[0] == pytest.approx(2000)


def test_guarantee_is_granted_beyond_request_and_reserved_from_others() -> None:
    cache = FakeCache()
    cache.add_node(build_node("n1", cpu="8", memory="100Gi"))
    cache.add_queue(build_queue("q1", guarantee=build_resource(cpu="3")))
    cache.add_queue(build_queue("q2"))
    add_job(cache, "a", "q1", pending=1)
    add_job(cache, "b", "q2", pending=10)
    ssn = open_session(cache, CONF)
    assert deserved(ssn, "q1")[0] == 3000
    # q2 can never get the 3 cpu guaranteed to q1.
    assert deserved(ssn, "q2") == (5000, 10 * GI, 10)
    view = ssn.plugins["proportion"].queue_view("q2")
    assert view is not None and view["real_capability"]["cpu"] == "5"


def test_queue_order_priority_then_share_and_keys_agree() -> None:
    cache = FakeCache()
    cache.add_node(build_node("n1", cpu="12", memory="100Gi"))
    cache.add_queue(build_queue("busy", priority=5))
    cache.add_queue(build_queue("idle", priority=1))
    cache.add_queue(build_queue("half", priority=1))
    add_job(cache, "a", "busy", running=2, pending=2)
    add_job(cache, "b", "idle", pending=2)
    add_job(cache, "c", "half", running=1, pending=1)
    ssn = open_session(cache, CONF)
    busy, idle, half = (ssn.queues[n] for n in ("busy", "idle", "half"))
    views = {n: ssn.plugins["proportion"].queue_view(n) for n in ("busy", "idle", "half")}
    assert views["busy"]["share"] == pytest.approx(0.5)
    assert views["idle"]["share"] == 0
    assert views["half"]["share"] == pytest.approx(0.5)
    assert ssn.compare_queues(busy, idle) < 0
    assert ssn.compare_queues(idle, half) < 0
    assert [q.name for q in sorted([half, idle, busy], key=ssn.queue_key)] == ["busy", "idle", "half"]


def test_overused_counts_the_pods_dimension() -> None:
    cache = FakeCache()
    cache.add_node(build_node("n1", cpu="8", memory="100Gi"))
    cache.add_queue(build_queue("full"))
    cache.add_queue(build_queue("podsleft"))
    cache.add_queue(build_queue("empty"))
    add_job(cache, "a", "full", running=2)
    add_job(cache, "b", "podsleft", running=2)
    cache.add_task(build_task("b-be-0", job="b", cpu=None, memory=None))
    ssn = open_session(cache, CONF)
    assert ssn.overused(ssn.queues["full"])
    # cpu and memory are at deserved, but one more pod is deserved: not overused.
    assert not ssn.overused(ssn.queues["podsleft"])
    # A queue without jobs has no state: no opinion.
    assert not ssn.overused(ssn.queues["empty"])
    assert ssn.plugins["proportion"].queue_view("empty") is None


def enqueue_cluster(cpu_cap: str = "2", q1_state: QueueState = QueueState.OPEN) -> FakeCache:
    cache = FakeCache()
    cache.add_node(build_node("n1", cpu="2", memory="2G"))
    cache.add_node(build_node("n2", cpu="2", memory="2G"))
    cap1 = build_resource(cpu=cpu_cap, memory="2G")
    cache.add_queue(build_queue("q1", capability=cap1, state=q1_state))
    cache.add_queue(build_queue("q2", capability=build_resource(cpu="3", memory="3G")))
    running = PodGroupPhase.RUNNING
    cache.add_pod_group(
        build_pod_group("pg1", queue="q1", phase=running, min_resources=build_resource(cpu="1", memory="2G"))
    )
    cache.add_task(build_task("pod1", job="pg1", cpu="1", memory="2G", node="n1"))
    cache.add_pod_group(
        build_pod_group("pg2", queue="q2", phase=running, min_resources=build_resource(cpu="2", memory="1G"))
    )
    cache.add_task(build_task("pod2", job="pg2", cpu="2", memory="1G", node="n2"))
    pending = PodGroupPhase.PENDING
    cache.add_pod_group(
        build_pod_group("pg3", queue="q1", phase=pending, min_resources=build_resource(cpu="1", memory="0"))
    )
    cache.add_task(build_task("pod3", job="pg3", cpu="1", memory="0"))
    return cache


def test_cpu_only_job_is_admitted_and_allocatable_while_memory_is_over_deserved() -> None:
    ssn = open_session(enqueue_cluster(), CONF)
    pg3 = ssn.jobs["default/pg3"]
    q1 = ssn.queues["q1"]
    assert ssn.job_enqueueable(pg3)
    pod3 = pg3.tasks["default-pod3"]
    assert ssn.allocatable(q1, pod3)
    assert not ssn.overused(q1)
    # A task that also wants memory would exceed q1's deserved 2G.
    greedy = build_task("pg3-x-0", job="pg3", cpu="1", memory="1G")
    assert not ssn.allocatable(q1, greedy)


def test_allocatable_is_strict_on_requested_dimensions() -> None:
    ssn = open_session(enqueue_cluster(), CONF)
    q1 = ssn.queues["q1"]
    pod3 = ssn.jobs["default/pg3"].tasks["default-pod3"]
    stmt = ssn.statement()
    stmt.allocate(pod3, ssn.nodes["n1"])
    # q1 now holds exactly its deserved 2 cpu: one more millicore is too much.
    assert not ssn.allocatable(q1, build_task("pg3-y-0", job="pg3", cpu="1m", memory=None))
    stmt.discard()
    assert ssn.allocatable(q1, build_task("pg3-y-0", job="pg3", cpu="1", memory=None))


def test_closed_queue_rejects_admission_and_allocation() -> None:
    ssn = open_session(enqueue_cluster(q1_state=QueueState.CLOSED), CONF)
    pg3 = ssn.jobs["default/pg3"]
    assert ssn.plugins["proportion"].job_enqueueable(ssn, pg3) == Vote.REJECT
    assert not ssn.job_enqueueable(pg3)
    assert not ssn.allocatable(ssn.queues["q1"], pg3.tasks["default-pod3"])


def test_admission_checks_real_capability_and_reserves_in_the_permitting_vote() -> None:
    cache = FakeCache()
    cache.add_node(build_node("n1", cpu="8", memory="16Gi"))
    cache.add_queue(build_queue("q1", capability=build_resource(cpu="4")))
    running = PodGroupPhase.RUNNING
    pending = PodGroupPhase.PENDING
    # Running with 1 cpu of its 3-cpu minimum placed: 2 cpu stay reserved (inqueue).
    cache.add_pod_group(build_pod_group("run", queue="q1", phase=running, min_resources=build_resource(cpu="3")))
    cache.add_task(build_task("run-t-0", job="run", cpu="1", memory="1Gi", node="n1"))
    for name in ("new1", "new2"):
        cache.add_pod_group(build_pod_group(name, queue="q1", phase=pending, min_resources=build_resource(cpu="1")))
        cache.add_task(build_task(f"{name}-t-0", job=name, cpu="1", memory="1Gi"))
    cache.add_pod_group(build_pod_group("free", queue="q1", phase=pending))
    cache.add_task(build_task("free-t-0", job="free", cpu="1", memory="1Gi"))
    ssn = open_session(cache, CONF)
    view = ssn.plugins["proportion"].queue_view("q1")
    assert view is not None and view["inqueue"]["cpu"] == "2"
    new1, new2 = ssn.jobs["default/new1"], ssn.jobs["default/new2"]
    # 1 (min) + 1 (allocated) + 2 (inqueue) = 4 <= 4; the vote itself reserves new1's minimum.
    assert ssn.job_enqueueable(new1)
    assert view["inqueue"]["cpu"] == "2" and ssn.plugins["proportion"].queue_view("q1")["inqueue"]["cpu"] == "3"
    assert not ssn.job_enqueueable(new2)
    # Without minResources a job is always admitted to an open queue.
    assert ssn.job_enqueueable(ssn.jobs["default/free"])


def test_elastic_resources_are_given_back_for_admission() -> None:
    cache = FakeCache()
    cache.add_node(build_node("n1", cpu="8", memory="16Gi"))
    cache.add_queue(build_queue("q1", capability=build_resource(cpu="4")))
    running = PodGroupPhase.RUNNING
    cache.add_pod_group(build_pod_group("run", queue="q1", phase=running, min_resources=build_resource(cpu="1")))
    for i in range(4):
        cache.add_task(build_task(f"run-t-{i}", job="run", cpu="1", memory="1Gi", node="n1"))
    cache.add_pod_group(
        build_pod_group("new", queue="q1", phase=PodGroupPhase.PENDING, min_resources=build_resource(cpu="3"))
    )
    cache.add_task(build_task("new-t-0", job="new", cpu="1", memory="1Gi"))
    ssn = open_session(cache, CONF)
    # 3 (min) + 4 (allocated) - 3 (elastic: held beyond the 1-cpu minimum) = 4 <= 4.
    assert ssn.job_enqueueable(ssn.jobs["default/new"])


def test_reclaimable_takes_from_queues_above_deserved_until_back_within() -> None:
    cache = FakeCache()
    cache.add_node(build_node("n1", cpu="4", memory="100Gi"))
    cache.add_queue(build_queue("q1"))
    cache.add_queue(build_queue("q2"))
    add_job(cache, "a", "q1", running=4)
    add_job(cache, "b", "q2", pending=4)
    ssn = open_session(cache, CONF)
    assert deserved(ssn, "q1") == (2000, 4 * GI, 4)
    reclaimer = ssn.jobs["default/b"].tasks["default-b-p-0"]
    candidates = sorted(ssn.nodes["n1"].tasks.values(), key=lambda t: t.name)
    assert [t.name for t in ssn.reclaimable(reclaimer, candidates) or []] == ["a-r-0", "a-r-1"]


def test_preemptive_checks_the_tasks_together() -> None:
    cache = FakeCache()
    cache.add_node(build_node("n1", cpu="4", memory="100Gi"))
    cache.add_queue(build_queue("q1"))
    cache.add_queue(build_queue("q2"))
    add_job(cache, "a", "q1", running=4)
    add_job(cache, "b", "q2", pending=4)
    ssn = open_session(cache, CONF)
    q2 = ssn.queues["q2"]
    tasks = sorted(ssn.jobs["default/b"].tasks.values(), key=lambda t: t.name)
    assert ssn.preemptive(q2, tasks[:1])
    assert ssn.preemptive(q2, tasks[:2])
    assert not ssn.preemptive(q2, tasks[:3])


def test_events_update_allocation_and_share() -> None:
    cache = FakeCache()
    cache.add_node(build_node("n1", cpu="4", memory="100Gi"))
    cache.add_queue(build_queue("q1"))
    cache.add_queue(build_queue("q2"))
    add_job(cache, "a", "q1", running=2, pending=2)
    add_job(cache, "b", "q2", pending=4)
    ssn = open_session(cache, CONF)
    plugin = ssn.plugins["proportion"]
    q1, q2 = ssn.queues["q1"], ssn.queues["q2"]
    assert ssn.compare_queues(q2, q1) < 0
    stmt = ssn.statement()
    for task in sorted(ssn.jobs["default/b"].tasks.values(), key=lambda t: t.name)[:2]:
        stmt.allocate(task, ssn.nodes["n1"])
    assert plugin.queue_view("q2")["allocated"]["cpu"] == "2"
    assert plugin.queue_view("q2")["share"] == pytest.approx(1.0)
    # cpu reached its deserved 2, memory (2Gi of 4Gi) and pods (2 of 4) did not: not overused.
    assert not ssn.overused(q2)
    stmt.evict(ssn.nodes["n1"].tasks["default/a-r-0"], "test")
    assert plugin.queue_view("q1")["share"] == pytest.approx(0.5)
    assert ssn.compare_queues(q1, q2) < 0
    stmt.discard()
    assert plugin.queue_view("q2")["share"] == 0
    assert plugin.queue_view("q1")["allocated"]["cpu"] == "2"


def test_pipelined_and_releasing_tasks_are_not_requested() -> None:
    cache = FakeCache()
    cache.add_node(build_node("n1", cpu="8", memory="100Gi"))
    cache.add_queue(build_queue("q1"))
    add_job(cache, "a", "q1", running=1, pending=1)
    cache.add_task(build_task("a-x-0", job="a", node="n1", status=TaskStatus.RELEASING))
    cache.add_task(build_task("a-x-1", job="a", node="n1", status=TaskStatus.PIPELINED))
    ssn = open_session(cache, CONF)
    view = ssn.plugins["proportion"].queue_view("q1")
    assert view is not None
    assert view["request"] == {"cpu": "2", "memory": "2Gi", "pods": "2"}
    assert view["allocated"]["cpu"] == "1"


def test_events_reach_the_queue_state_of_the_last_opening() -> None:
    cache = FakeCache()
    cache.add_node(build_node("n1", cpu="4", memory="100Gi"))
    cache.add_queue(build_queue("q1"))
    add_job(cache, "a", "q1", running=1, pending=2)
    ssn = open_session(cache, CONF)
    plugin = ssn.plugins["proportion"]
    pending = sorted(ssn.jobs["default/a"].tasks_in(TaskStatus.PENDING), key=lambda t: t.name)
    stmt = ssn.statement()
    stmt.allocate(pending[0], ssn.nodes["n1"])
    assert plugin.queue_view("q1")["allocated"]["cpu"] == "2"
    plugin.on_session_open(ssn)  # the queue's state is built again, from the session as it stands
    assert plugin.queue_view("q1")["allocated"]["cpu"] == "2"
    stmt.allocate(pending[1], ssn.nodes["n1"])
    assert plugin.queue_view("q1")["allocated"]["cpu"] == "3"
    stray = build_task("stray", job="elsewhere", cpu="1", node="n1")
    ssn._fire_allocate(stray)  # a task of a job the session does not have: no queue changes
    assert plugin.queue_view("q1")["allocated"]["cpu"] == "3"


def test_queue_figures_are_what_the_plugin_holds_for_each_queue_with_jobs() -> None:
    cache = FakeCache()
    cache.add_node(build_node("n1", cpu="8", memory="100Gi", pods=100))
    cache.add_queue(build_queue("q1", weight=3, capability=build_resource(cpu="2")))
    cache.add_queue(build_queue("q2", weight=1))
    cache.add_queue(build_queue("idle"))
    add_job(cache, "a", "q1", running=1, pending=5)
    add_job(cache, "b", "q2", pending=6)
    ssn = open_session(cache, CONF)
    figures = {f.name: f for f in ssn.plugins["proportion"].queue_figures()}
    assert set(figures) == {"q1", "q2"}
    q1, q2 = figures["q1"], figures["q2"]
    assert (q1.allocated.milli_cpu, q1.request.milli_cpu, q1.deserved.milli_cpu) == (1000, 6000, 2000)
    assert (q2.allocated.milli_cpu, q2.request.milli_cpu, q2.deserved.milli_cpu) == (0, 6000, 6000)
    assert (q1.weight, q2.weight) == (3, 1)
    assert q1.capability is not None and q1.capability.milli_cpu == 2000 and q2.capability is None
    assert q1.real_capability is not None and q1.real_capability.milli_cpu == 2000
    assert q1.share == pytest.approx(0.5) and not q1.overused  # 1 of 2 cpu (and 1 of 6Gi)
    # Copies: the next session may change the plugin's state, not the figures reported.
    q1.allocated.add(build_resource(cpu="1"))
    assert ssn.plugins["proportion"].queue_attrs["q1"].allocated.milli_cpu == 1000
