"""Preempt's node order by class, with each class's answer remembered, is the order node by node.

:meth:`Placement._preemption_order_by_class` keeps, per preemptor signature
(plan token, request, role), each class value's answer (passes for
preemption, fits as it is, score) and reuses it for later preemptors and
when a node comes back to a state seen before. Every order it gives during
real preempt actions is checked against the plain per-node order (every node
checked and scored afresh, then the nodes that neither fit nor hold a
possible victim left out), and the positions of :class:`VictimNodes` against
a scan of every node; the decisions must match the run without node classes.
"""

from __future__ import annotations

import random
from collections.abc import Iterator
from typing import Any

import pytest

from tests.unit.actions.test_node_classes import CONF, PREEMPT, decisions
from volcanolib.api.job import PodGroupPhase
from volcanolib.api.node import NodeInfo
from volcanolib.api.task import TaskInfo, TaskStatus
from volcanolib.framework.nodeclass import NodeClassPlan
from volcanolib.framework.placement import Placement, PredicateCache, VictimNodes
from volcanolib.testing import FakeCache, build_node, build_pod_group, build_task, run_session


def full_cluster(seed: int, *, roles: bool) -> FakeCache:
    """Nodes full of low-priority pods and high-priority gangs that must preempt (W3's shape, small)."""
    rng = random.Random(seed)
    cache = FakeCache()
    cache.add_priority_class("low", 10)
    cache.add_priority_class("high", 1000)
    nodes = 8
    for i in range(nodes):
        cache.add_node(build_node(f"n{i}", "16", "64Gi", labels={"zone": "ab"[i % 2]}))
    # A small empty node: a 4-cpu preemptor fits it as it is, an 8-cpu one does not.
    cache.add_node(build_node("spare", "4", "16Gi", labels={"zone": "a"}))
    slots = [f"n{i}" for i in range(nodes) for _ in range(4)]
    rng.shuffle(slots)
    for j in range(len(slots) // 4):
        cache.add_pod_group(
            build_pod_group(f"low{j}", min_member=1, phase=PodGroupPhase.RUNNING, priority_class_name="low")
        )
        for k, node in enumerate(slots[j * 4 : (j + 1) * 4]):
            cache.add_task(
                build_task(
                    f"low{j}-{k}",
                    job=f"low{j}",
                    cpu="4",
                    memory="16Gi",
                    node=node,
                    priority=10,
                    priority_class_name="low",
                )
            )
    for j in range(3):
        size = rng.randint(3, 6)
        cache.add_pod_group(build_pod_group(f"high{j}", min_member=size, priority_class_name="high"))
        # A selector that some roles' tasks fail on some nodes: their role then has recorded failures.
        selector = {"zone": "a"} if roles and j == 1 else None
        for k in range(size):
            cache.add_task(
                build_task(
                    f"high{j}-{k}",
                    job=f"high{j}",
                    # Another request: other answers for the same classes.
                    cpu="8" if j == 0 else "4",
                    memory="16Gi",
                    priority=1000,
                    priority_class_name="high",
                    role="worker" if roles else "",
                    node_selector=selector,
                )
            )
    return cache


class OrderCheck:
    """Wraps preempt's order by class: each order is compared with the per-node order."""

    def __init__(self) -> None:
        self.compared = 0
        self.orders = 0

    def install(self, monkeypatch: pytest.MonkeyPatch) -> None:
        original = Placement._preemption_order_by_class
        check = self

        def checked(
            placement: Placement, task: TaskInfo, plan: NodeClassPlan, cache: PredicateCache, holding: VictimNodes
        ) -> Iterator[NodeInfo]:
            role = cache._key(task)
            remembered = plan.pointwise and (role is None or not cache._failed.get(role))
            got = list(original(placement, task, plan, cache, holding))
            check.orders += 1
            alive = list(holding.alive())
            nodes = holding.nodes
            assert alive == [i for i, node in enumerate(nodes) if holding._holds(node)]
            if remembered:
                check.compared += 1
                assert [n.name for n in got] == [n.name for n in plain_order(placement, task, holding)]
            return iter(got)

        monkeypatch.setattr(Placement, "_preemption_order_by_class", checked)


def plain_order(placement: Placement, task: TaskInfo, holding: VictimNodes) -> list[NodeInfo]:
    """Every node checked and scored afresh, best first; those that neither fit nor hold a victim left out."""
    ssn: Any = placement._ssn
    feasible = placement.feasible(task, cache=PredicateCache(False), for_preempt=True)
    ranked = ssn.sorted_by_score(task, feasible) if feasible else []
    alive = set(holding.alive())
    position = {node.name: i for i, node in enumerate(holding.nodes)}
    req = task.init_resreq
    return [n for n in ranked if n.first_insufficient(req) is None or position[n.name] in alive]


def preempt_conf(enabled: bool) -> str:
    return CONF.format(actions="enqueue, allocate, preempt", enabled=str(enabled).lower())


def outcome(cache: FakeCache, conf: str, seed: int) -> tuple[Any, ...]:
    result = run_session(cache, conf, seed=seed)
    return (
        [t.key for t, _ in result.evictions],
        sorted((t.key, node) for t, node in result.pipelined),
        [str(err) for err in result.plugin_errors],
    )


@pytest.mark.parametrize("roles", [False, True])
@pytest.mark.parametrize("seed", range(6))
def test_remembered_orders_are_the_per_node_orders(seed: int, roles: bool, monkeypatch: pytest.MonkeyPatch) -> None:
    plain = outcome(full_cluster(seed, roles=roles), preempt_conf(False), seed)
    check = OrderCheck()
    check.install(monkeypatch)
    by_class = outcome(full_cluster(seed, roles=roles), preempt_conf(True), seed)
    assert by_class == plain
    # The comparison means something: tasks preempted, through remembered answers.
    assert len(plain[0]) >= 3
    assert check.compared >= 3


def test_a_role_with_recorded_failures_takes_the_plain_path(monkeypatch: pytest.MonkeyPatch) -> None:
    check = OrderCheck()
    check.install(monkeypatch)
    outcome(full_cluster(1, roles=True), preempt_conf(True), 1)
    # The zone-a gang's role fails on zone-b nodes: after its first task, its orders are not remembered.
    assert check.compared < check.orders


def test_nodes_coming_back_to_a_state_reuse_its_answer(monkeypatch: pytest.MonkeyPatch) -> None:
    asked: list[int] = []
    original = Placement.feasible

    def counting(placement: Placement, task: TaskInfo, nodes: Any = None, **kwargs: Any) -> list[NodeInfo]:
        if kwargs.get("for_preempt") and nodes is not None:
            asked.append(len(nodes))
        return original(placement, task, nodes, **kwargs)

    monkeypatch.setattr(Placement, "feasible", counting)
    cache = full_cluster(0, roles=False)
    preemptors = sum(1 for t in cache.tasks() if t.status is TaskStatus.PENDING)
    result = run_session(cache, preempt_conf(True), seed=0)
    assert len(result.evictions) >= 6
    # Every preemptor finds its order, but classes already answered are not checked again.
    assert sum(asked) < preemptors * 2


@pytest.mark.parametrize("seed", range(25))
def test_random_clusters_order_as_node_by_node(seed: int, monkeypatch: pytest.MonkeyPatch) -> None:
    check = OrderCheck()
    check.install(monkeypatch)
    assert decisions(seed, True, PREEMPT) == decisions(seed, False, PREEMPT)


def test_some_random_clusters_compare_remembered_orders(monkeypatch: pytest.MonkeyPatch) -> None:
    check = OrderCheck()
    check.install(monkeypatch)
    for seed in range(15):
        decisions(seed, True, PREEMPT)
    assert check.compared > 5
