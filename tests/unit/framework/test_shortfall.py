"""What a waiting gang is short of: written after Volcano's text in its condition and its pods' reasons."""

from __future__ import annotations

from volcanolib.api.job import ConditionType, JobInfo
from volcanolib.api.resource import Resource
from volcanolib.framework.shortfall import ALLOCATE, ENQUEUE, QueueShortfall, count_room, gang_shortfall
from volcanolib.testing import (
    FakeCache,
    build_node,
    build_pod_group,
    build_queue,
    build_resource,
    build_task,
    open_session,
    run_session,
)

WITH_QUEUES = """
actions: "enqueue, allocate, backfill"
tiers:
- plugins:
  - name: priority
  - name: gang
- plugins:
  - name: drf
  - name: proportion
"""
GANG_ONLY = """
actions: "enqueue, allocate, backfill"
tiers:
- plugins:
  - name: priority
  - name: gang
"""


def cluster(nodes: int = 3, cpu: str = "4") -> FakeCache:
    cache = FakeCache()
    for i in range(nodes):
        cache.add_node(build_node(f"n{i}", cpu=cpu, memory="8Gi"))
    return cache


def add_gang(cache: FakeCache, name: str, pods: int, cpu: str, *, queue: str = "default", **group: object) -> None:
    cache.add_pod_group(build_pod_group(name, min_member=pods, queue=queue, **group))  # type: ignore[arg-type]
    for i in range(pods):
        cache.add_task(build_task(f"{name}-{i}", job=name, cpu=cpu))


def unschedulable(job: JobInfo) -> tuple[str, str]:
    (cond,) = [c for c in job.pod_group.conditions if c.type is ConditionType.UNSCHEDULABLE]
    return cond.reason, cond.message


def test_a_queue_that_cannot_admit_the_gang_is_named_with_the_numbers() -> None:
    cache = cluster()
    cache.add_queue(build_queue("q1", capability=build_resource(cpu="6")))
    add_gang(cache, "big", 3, "3", queue="q1", phase="Pending", min_resources=build_resource(cpu="9"))
    job = run_session(cache, WITH_QUEUES).session.jobs["default/big"]  # type: ignore[union-attr]
    reason, message = unschedulable(job)
    assert reason == "NotEnoughResources"  # Volcano's reason, compared with Volcano's by the oracle tests
    volcano = (
        "3/3 tasks in gang unschedulable: pod group is not ready, 3 Pending, 3 minAvailable; Pending: 3 Unschedulable"
    )
    assert message == (
        f"{volcano}. Short of queue room: queue q1 is short of cpu 3 for this gang (proportion): "
        "the jobs it admitted keep cpu 0 as their minimum, "
        "the gang's minResources ask cpu 9 more, its capability is cpu 6."
    )
    # Its pods were never checked against the nodes: their reason is the gang's.
    assert {job.task_scheduling_reason(t) for t in job.tasks.values()} == {("Unschedulable", message)}


def test_nodes_too_small_for_the_gang_say_how_many_found_room() -> None:
    cache = cluster(nodes=2)
    add_gang(cache, "wide", 3, "3")  # two nodes of 4 cpu hold two pods of 3 cpu
    job = run_session(cache, GANG_ONLY).session.jobs["default/wide"]  # type: ignore[union-attr]
    _, message = unschedulable(job)
    assert message == (
        "1/3 tasks in gang unschedulable: pod group is not ready, 3 Pending, 3 minAvailable; "
        "Pending: 1 Unschedulable, 2 Schedulable. Origin reason is wide-2: 0/2 nodes are available: "
        "2 Insufficient cpu. Short of nodes: the gang needs 3 more pod(s), room was found for 2; "
        "the next, default/wide-2, asks cpu 3, memory 1Gi and fits no node."
    )
    reason, pod_message = job.task_scheduling_reason(job.tasks["default-wide-2"])
    assert reason == "Unschedulable"
    assert pod_message == "0/2 nodes are available: 2 Insufficient cpu. " + job.shortfall
    assert job.shortfall.startswith("Short of nodes: the gang needs 3 more pod(s), room was found for 2")


def test_a_queue_whose_deserved_share_is_reached_is_named() -> None:
    cache = cluster()
    cache.add_queue(build_queue("q1", weight=1))
    cache.add_queue(build_queue("q2", weight=1))
    add_gang(cache, "a", 1, "6", queue="q1")
    add_gang(cache, "b", 2, "3500m", queue="q2")
    ssn = run_session(cache, WITH_QUEUES).session
    assert ssn is not None
    short = gang_shortfall(ssn, ssn.jobs["default/b"])
    (queue,) = short.queue
    assert (queue.plugin, queue.queue, queue.step, queue.limit_name) == ("proportion", "q2", ALLOCATE, "deserved")
    assert queue.need.milli_cpu == 7000  # the two pods the gang needs
    assert queue.short.milli_cpu == queue.held.milli_cpu + 7000 - queue.limit.milli_cpu > 0
    assert "queue q2 is short of cpu" in unschedulable(ssn.jobs["default/b"])[1]


def test_a_ready_job_and_a_job_with_room_have_no_shortfall() -> None:
    cache = cluster()
    add_gang(cache, "fits", 2, "1")
    ssn = run_session(cache, WITH_QUEUES).session
    assert ssn is not None
    job = ssn.jobs["default/fits"]
    assert job.shortfall == ""
    assert not [c for c in job.pod_group.conditions if c.type is ConditionType.UNSCHEDULABLE]
    assert gang_shortfall(ssn, job).empty
    # The next snapshot's copy carries no note of the last session's.
    cache2 = cluster(nodes=1, cpu="1")
    add_gang(cache2, "big", 1, "2")
    first = run_session(cache2, GANG_ONLY).session
    assert first is not None and first.jobs["default/big"].shortfall
    assert cache2.snapshot().jobs["default/big"].shortfall == ""


def test_check_names_only_the_resources_asked_for_and_strictly() -> None:
    limit = build_resource(cpu="6", memory="1Gi")
    held = build_resource(cpu="2", memory="4Gi")
    assert QueueShortfall.check("p", "q", ENQUEUE, "capability", limit, held, build_resource(cpu="4")) is None
    short = QueueShortfall.check("p", "q", ENQUEUE, "capability", limit, held, build_resource(cpu="5"))
    assert short is not None
    assert short.short == Resource(milli_cpu=1000)
    assert short.to_dict()["short"] == {"cpu": "1"}
    assert short.to_dict()["need"] == {"cpu": "5"}


def test_count_room_counts_nodes_and_pods_by_idle_resources() -> None:
    cache = FakeCache()
    cache.add_node(build_node("n0", cpu="8", memory="8Gi"))  # room for 2
    cache.add_node(build_node("n1", cpu="5", memory="8Gi"))  # room for 1
    cache.add_node(build_node("n2", cpu="2", memory="8Gi"))  # none
    cache.add_node(build_node("n3", cpu="8", memory="512Mi"))  # none: memory
    add_gang(cache, "g", 5, "3", phase="Inqueue")
    ssn = open_session(cache, GANG_ONLY)
    tasks = sorted(ssn.jobs["default/g"].tasks.values(), key=lambda t: t.name)
    room = count_room(ssn.node_list, tasks)
    assert (room.nodes, room.room, room.pending, room.total_nodes) == (2, 3, 5, 4)
    assert room.text() == (
        "2 of 4 nodes have cpu 3, memory 1Gi idle, room for 3 of the 5 pending pod(s) like default/g-0"
    )
    assert count_room(ssn.node_list, tasks[:1]).room == 1  # never more than the pods asked about
    ssn.close()
