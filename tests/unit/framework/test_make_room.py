"""make_room: evict in victim order until the preemptor fits, then pipeline it; undo otherwise."""

from __future__ import annotations

from volcanolib import InMemoryCache, NodeInfo, TaskInfo, TaskStatus, build_node, build_pod_group, build_task
from volcanolib.framework.session import Session
from volcanolib.framework.victims import VictimOrder, make_room
from volcanolib.testing import open_session

CONF = "actions: allocate\ntiers: [{plugins: [{name: priority}, {name: gang}]}]\n"


def _session(running: int, node_cpu: str = "4") -> Session:
    cache = InMemoryCache()
    cache.add_node(build_node("n1", cpu=node_cpu, memory="16Gi"))
    cache.add_pod_group(build_pod_group("low", min_member=1))
    cache.add_pod_group(build_pod_group("high", min_member=1))
    for i in range(running):
        cache.add_task(build_task(f"low-{i}", job="low", cpu="1", node="n1", priority=1))
    cache.add_task(build_task("high-0", job="high", cpu="2", priority=10))
    return open_session(cache, CONF)


def _parts(ssn: Session) -> tuple[TaskInfo, NodeInfo, list[TaskInfo]]:
    (task,) = ssn.jobs["default/high"].tasks.values()
    node = ssn.nodes["n1"]
    victims = [t for t in node.tasks.values() if t.status is TaskStatus.RUNNING]
    return task, node, victims


def test_evicts_only_as_many_as_needed_and_pipelines() -> None:
    ssn = _session(running=4)
    task, node, victims = _parts(ssn)
    stmt = ssn.statement()
    order = VictimOrder(ssn, task).queue(victims)

    def fits() -> bool:
        return node.fits_future_idle(task.init_resreq)

    assert make_room(ssn, stmt, task, node, order, fits, "test", check_first=True)
    assert task.status is TaskStatus.PIPELINED
    assert sum(t.status is TaskStatus.RELEASING for t in victims) == 2
    assert len(stmt.operations) == 3


def test_without_check_first_a_fitting_task_still_evicts_one_victim() -> None:
    ssn = _session(running=1)
    task, node, victims = _parts(ssn)
    stmt = ssn.statement()

    def fits() -> bool:
        return node.fits_future_idle(task.init_resreq)

    assert fits()
    assert make_room(ssn, stmt, task, node, victims, fits, "test", check_first=False)
    assert [t.status for t in victims] == [TaskStatus.RELEASING]
    # With no victim at all the task fitting as it is gets pipelined.
    ssn2 = _session(running=0)
    task2, node2, _ = _parts(ssn2)
    stmt2 = ssn2.statement()
    assert make_room(ssn2, stmt2, task2, node2, [], lambda: True, "test", check_first=False)
    assert task2.status is TaskStatus.PIPELINED


def test_when_the_task_never_fits_every_eviction_is_undone() -> None:
    ssn = _session(running=2, node_cpu="2")
    task, node, victims = _parts(ssn)
    idle_before = node.idle.clone()
    stmt = ssn.statement()
    assert not make_room(ssn, stmt, task, node, victims, lambda: False, "test", check_first=True)
    assert all(t.status is TaskStatus.RUNNING for t in victims)
    assert task.status is TaskStatus.PENDING
    assert node.idle == idle_before and node.releasing.is_empty()
    assert len(stmt.operations) == 0
