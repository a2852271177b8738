"""The written-out paths of choosing by node class give what the general ones give.

Class values for the usual numbers of key functions, a node log read after
one change, a draw from one best class, and the best classes' members kept
between answers: each is checked against the general form it stands for.
"""

from __future__ import annotations

import random
from collections.abc import Callable, Hashable
from types import SimpleNamespace

import pytest

from volcanolib.api.node import NodeInfo
from volcanolib.api.resource import Resource
from volcanolib.framework.nodeclass import (
    Answer,
    ClassAnswers,
    NodeClasses,
    NodeClassPlan,
    Refusal,
    _class_value,
    resource_key,
    static_resource_key,
)
from volcanolib.framework.placement import NodeChanges, Placement


def _nodes(count: int, seed: int) -> list[NodeInfo]:
    rng = random.Random(seed)
    nodes = []
    for i in range(count):
        node = NodeInfo(f"n{i:02d}", Resource(milli_cpu=rng.choice([4000, 8000]), memory=2**33))
        _take(node, rng.choice([0, 1000, 2000]))
        nodes.append(node)
    return nodes


def _take(node: NodeInfo, cpu: float) -> None:
    node.idle.milli_cpu -= cpu
    node.used.milli_cpu += cpu


KEYS: list[Callable[[NodeInfo], Hashable]] = [
    lambda node: node.name[-1] in "02468",
    lambda node: (len(node.name), node.idle.milli_cpu > 3000),
    lambda node: None,
    lambda node: node.name[:2],
    lambda node: node.allocatable.milli_cpu,
]


@pytest.mark.parametrize("count", range(len(KEYS) + 1))
def test_written_out_class_values_are_the_general_form(count: int) -> None:
    nodes = _nodes(12, count)
    static = [static_resource_key(node) for node in nodes]
    keys = tuple(KEYS[:count])
    value = _class_value(static, keys)
    for position, node in enumerate(nodes):
        assert value(position, node) == (static[position], resource_key(node), *[key(node) for key in keys])


def _since(nodes: list[NodeInfo], log: list[str], mark: int) -> list[int]:
    where = {node.name: i for i, node in enumerate(nodes)}
    return [where[name] for name in dict.fromkeys(log[mark:]) if name in where]


def test_the_node_log_read_after_one_change_as_after_many() -> None:
    nodes = _nodes(6, 1)
    rng = random.Random(2)
    log: list[str] = []
    changes = NodeChanges(nodes, log)
    for _ in range(60):
        # Names of other sessions' nodes may be logged too: they are not positions here.
        log.append(rng.choice([node.name for node in nodes] + ["gone"]))
        for mark in range(len(log) + 1):
            assert changes.since(mark) == _since(nodes, log, mark)


def test_a_draw_from_one_class_is_the_draw_across_classes() -> None:
    classes = NodeClasses(NodeChanges(_nodes(3, 0), []))
    for seed in range(40):
        members = sorted(random.Random(seed).sample(range(500), 1 + seed % 7))
        fast = SimpleNamespace(_ssn=SimpleNamespace(rng=random.Random(seed)))
        drawn = [Placement._draw(fast, classes, [members]) for _ in range(5)]  # type: ignore[arg-type]
        plain = random.Random(seed)
        expected = []
        for _ in range(5):
            rank = plain.randrange(len(members)) if len(members) > 1 else 0
            expected.append(NodeClasses.nth([members], rank))
        assert drawn == expected


def test_the_best_classes_members_follow_every_change() -> None:
    nodes = _nodes(16, 3)
    log: list[str] = []
    classes = NodeClasses(NodeChanges(nodes, log))
    plan = NodeClassPlan(("parity",), (KEYS[0],), pointwise=True)
    view = ClassAnswers()

    def ask(reps: list[NodeInfo]) -> list[Answer | Refusal]:
        # Nodes with little free cpu refuse; the others score by free cpu.
        return [
            (True, rep.idle.milli_cpu) if rep.idle.milli_cpu >= 2000 else Refusal(False, ("Insufficient cpu",))
            for rep in reps
        ]

    rng = random.Random(5)
    for _ in range(80):
        node = rng.choice(nodes)
        _take(node, rng.choice([-1000, 1000]) if node.idle.milli_cpu > 1000 else -1000)
        log.append(node.name)
        part = classes.partition(plan)
        view.update(part, nodes, ask)
        best = view.best()
        expected = [part.classes[key] for key in best[1]] if best is not None else []
        assert sorted(map(sorted, view.best_members())) == sorted(map(sorted, expected))
        # The answers are those of asking every class now.
        answers = {key: ask([nodes[members[0]]])[0] for key, members in part.classes.items()}
        top = max((a for a in answers.values() if not isinstance(a, Refusal)), default=None)
        assert (best[0] if best is not None else None) == top
