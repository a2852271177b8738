"""A node class that empties and comes back gets its old key object back, within a bound."""

from __future__ import annotations

from collections.abc import Hashable

import pytest

from volcanolib.api.node import NodeInfo
from volcanolib.api.resource import Resource
from volcanolib.framework import nodeclass
from volcanolib.framework.nodeclass import NodeClasses, NodeClassPlan
from volcanolib.framework.placement import NodeChanges


def _zone(node: NodeInfo) -> Hashable:
    return node.name[0]


PLAN = NodeClassPlan(("zone",), (_zone,))


def _nodes() -> list[NodeInfo]:
    return [NodeInfo(name, Resource(milli_cpu=8000, memory=2**30)) for name in ("a1", "a2", "b1")]


def _take(node: NodeInfo, cpu: float) -> None:
    node.idle.milli_cpu -= cpu
    node.used.milli_cpu += cpu


def test_a_class_that_comes_back_has_its_old_key() -> None:
    nodes = _nodes()
    log: list[str] = []
    classes = NodeClasses(NodeChanges(nodes, log))
    part = classes.partition(PLAN)
    alone = part.key_of[2]
    _take(nodes[2], 1000)
    log.append("b1")
    part = classes.partition(PLAN)
    assert alone not in part.classes
    assert part.key_of[2] is not alone
    _take(nodes[2], -1000)
    log.append("b1")
    part = classes.partition(PLAN)
    assert part.key_of[2] is alone
    assert part.classes[alone] == [2]
    # The same classes as a fresh grouping, key for key.
    fresh = NodeClasses(NodeChanges(nodes, [])).partition(PLAN)
    assert part.classes == fresh.classes


def test_keys_of_empty_classes_are_forgotten_past_the_bound(monkeypatch: pytest.MonkeyPatch) -> None:
    monkeypatch.setattr(nodeclass, "_MAX_INTERNED", 2)
    nodes = _nodes()
    log: list[str] = []
    classes = NodeClasses(NodeChanges(nodes, log))
    for step in range(1, 8):
        _take(nodes[2], 100)
        log.append("b1")
        part = classes.partition(PLAN)
        assert len(part.interned) <= 2 + 2 * len(part.classes) + 1
        for key in part.classes:
            assert part.interned[key.value] is key  # type: ignore[attr-defined]
        assert part.classes == NodeClasses(NodeChanges(nodes, [])).partition(PLAN).classes, step
