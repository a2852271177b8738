"""A pod's own node constraints: nodeSelector and required node affinity, as the NodeAffinity filter reads them."""

from __future__ import annotations

from typing import Any

import pytest

from volcanolib.api.node import Node
from volcanolib.api.nodeselector import required_node_affinity

A = Node("a", labels={"zone": "z1", "gpus": "8", "model": "G2"})
B = Node("b", labels={"zone": "z2", "gpus": "2"})


def required(*terms: dict[str, Any]) -> dict[str, Any]:
    return {"nodeAffinity": {"requiredDuringSchedulingIgnoredDuringExecution": {"nodeSelectorTerms": list(terms)}}}


def expr(key: str, op: str, *values: str) -> dict[str, Any]:
    return {"matchExpressions": [{"key": key, "operator": op, "values": list(values)}]}


@pytest.mark.parametrize(
    ("selector", "affinity", "matched"),
    [
        ({}, None, {"a", "b"}),
        ({"zone": "z2"}, None, {"b"}),
        ({}, required(expr("model", "In", "G2", "V100")), {"a"}),
        ({}, required(expr("model", "NotIn", "G2")), {"b"}),
        ({}, required(expr("gpus", "Gt", "4")), {"a"}),
        ({}, required(expr("model", "DoesNotExist")), {"b"}),
        ({}, required(expr("zone", "In", "z1"), expr("zone", "In", "z2")), {"a", "b"}),  # any one term
        ({"zone": "z1"}, required(expr("zone", "In", "z2")), set()),  # the selector and a term
        ({}, required({"matchFields": [{"key": "metadata.name", "operator": "In", "values": ["b"]}]}), {"b"}),
        ({}, required(expr("model", "Bogus", "x")), set()),  # a malformed term matches nothing
        ({}, required(), set()),  # required, with no term: no node
    ],
)
def test_which_nodes_a_pod_admits(selector: dict[str, str], affinity: Any, matched: set[str]) -> None:
    rule = required_node_affinity(selector, affinity)
    assert {n.name for n in (A, B) if rule.matches(n)} == matched
    assert rule.trivial == (not selector and affinity is None)
