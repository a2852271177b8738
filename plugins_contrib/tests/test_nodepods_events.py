"""The pod lists kept through allocate/deallocate events: request sums, full nodes, the node an event changed."""

from __future__ import annotations

import random

from contrib_testkit import node, pod_task, random_moves, session
from volcanolib_contrib._nodepods import DEFAULT_MEMORY_REQUEST, DEFAULT_MILLI_CPU_REQUEST, NodePods, Usage

from volcanolib.api.resource import PODS, Resource
from volcanolib.api.task import TaskInfo, TaskStatus

_EXACT = float(2**53)


def _signed(u: Usage, task: TaskInfo, sign: int) -> None:
    """What applying a pod's request means, written with the sign as a factor."""
    req = task.resreq
    cpu, memory = req.milli_cpu, req.memory
    u.cpu += sign * cpu
    u.memory += sign * memory
    u.nz_cpu += sign * (cpu if cpu > 0 else DEFAULT_MILLI_CPU_REQUEST)
    u.nz_memory += sign * (memory if memory > 0 else DEFAULT_MEMORY_REQUEST)
    for name, value in req.scalars.items():
        if name != PODS:
            u.scalars[name] = u.scalars.get(name, 0.0) + sign * value
            if value % 1 or value >= _EXACT:
                u.exact = False
    if cpu % 1 or memory % 1 or u.memory >= _EXACT or u.cpu >= _EXACT:
        u.exact = False


def test_applying_either_sign_adds_the_signed_request() -> None:
    rng = random.Random(11)
    amounts = [0, 1, 0.5, 250, 3.25e9, 2**53, float("inf")]
    for _ in range(300):
        applied, reference = Usage(), Usage()
        for i in range(rng.randrange(1, 8)):
            scalars: dict[str, float] = {PODS: 1}
            if rng.random() < 0.4:
                scalars["example.com/gpu"] = rng.choice(amounts)
            req = Resource(rng.choice(amounts), rng.choice(amounts), scalars)
            task = TaskInfo(f"u{i}", f"t{i}", "default", "", req)
            sign = rng.choice((1, -1))
            applied.apply(task, sign)
            _signed(reference, task, sign)
        state = [repr((u.cpu, u.memory, u.nz_cpu, u.nz_memory, u.scalars, u.exact)) for u in (applied, reference)]
        assert state[0] == state[1]


def test_an_event_names_the_node_it_changed() -> None:
    ssn = session("actions: ''\ntiers:\n- plugins:\n  - name: predicates\n", [node("n1")], [pod_task("a", node="n1")])
    pods = NodePods(ssn)
    task = next(iter(ssn.nodes["n1"].tasks.values()))
    assert pods.deallocated(task) is ssn.nodes["n1"]
    assert pods.count(ssn.nodes["n1"]) == 0
    assert pods.allocated(task) is ssn.nodes["n1"]
    assert pods.count(ssn.nodes["n1"]) == 1
    elsewhere = pod_task("b", node="gone")
    assert pods.allocated(elsewhere) is None
    assert pods.deallocated(elsewhere) is None
    assert pods.epoch == 2


def test_full_nodes_follow_any_events_as_a_recount_would() -> None:
    rng = random.Random(5)
    nodes = [node(f"n{i}", pods=rng.randint(1, 3)) for i in range(4)]
    tasks = [pod_task(f"r{i}", job="r", node=f"n{i % 4}", status=TaskStatus.RUNNING) for i in range(5)]
    tasks += [pod_task(f"p{i}", job=f"j{i % 3}") for i in range(8)]
    ssn = session("actions: ''\ntiers:\n- plugins:\n  - name: predicates\n", nodes, tasks)
    plugin = ssn.plugins["predicates"]
    every = [t for job in ssn.jobs.values() for t in job.tasks.values()]
    for _ in range(30):
        stmt = random_moves(ssn, rng, every, 4)
        if rng.random() < 0.5:
            stmt.discard()
        else:
            stmt.commit()
        recount = {n.name for n in ssn.node_list if plugin._pods.count(n) >= n.pod_capacity}
        assert plugin._full == recount
