"""The expect block: parsing every key, and the readable differences."""

from __future__ import annotations

from typing import Any

import pytest

from volcanolib import ManifestError, PodGroupPhase, Resource
from volcanolib.sim import compare, parse_expect
from volcanolib.sim.expect import EXPECT_KEYS
from volcanolib.sim.runner import PodGroupReport


class FakeResult:
    """Just the fields compare() reads."""

    def __init__(self, **fields: Any) -> None:
        self.binds: dict[str, str] = fields.get("binds", {})
        self.evictions: list[str] = fields.get("evictions", [])
        self.pipelined: dict[str, str] = fields.get("pipelined", {})
        self.pod_groups: dict[str, PodGroupReport] = fields.get("pod_groups", {})
        self.node_scores: dict[str, dict[str, float]] = fields.get("node_scores", {})


def group(phase: str = "Running", **allocated: str) -> PodGroupReport:
    return PodGroupReport(PodGroupPhase(phase), 2, 2, "q1", Resource.from_list({**allocated, "pods": 2}))


def diff(expect: dict[str, Any], **result: Any) -> list[str]:
    return compare(parse_expect(expect), FakeResult(**result))  # type: ignore[arg-type]


def test_every_key_parses() -> None:
    exp = parse_expect(
        {
            "binds": {"ns/p1": "n1"},
            "bindCount": 2,
            "evictions": ["ns/p9"],
            "evictCount": 1,
            "podGroupPhases": {"ns/pg": "Running"},
            "pipelined": {"ns/p4": ["n2", "n3"], "ns/p5": "n1"},
            "podGroupAllocated": {"ns/pg": {"cpu": "2", "memory": "2Gi"}},
            "nodeScores": {"ns/p1": {"n1": 150, "n2": 0}},
            "nodeScoreTolerance": 0.01,
        }
    )
    assert exp.binds == {"ns/p1": "n1"} and exp.bind_count == 2
    assert exp.evictions == frozenset({"ns/p9"}) and exp.evict_count == 1
    assert exp.pod_group_phases == {"ns/pg": PodGroupPhase.RUNNING}
    assert exp.pipelined == {"ns/p4": ("n2", "n3"), "ns/p5": ("n1",)}
    assert exp.pod_group_allocated is not None
    res, listed = exp.pod_group_allocated["ns/pg"]
    assert res.milli_cpu == 2000 and listed == {"cpu", "memory"}
    assert exp.node_scores == {"ns/p1": {"n1": 150.0, "n2": 0.0}} and exp.node_score_tolerance == 0.01
    assert set(EXPECT_KEYS) == {
        "binds",
        "bindCount",
        "evictions",
        "evictCount",
        "podGroupPhases",
        "pipelined",
        "podGroupAllocated",
        "nodeScores",
        "nodeScoreTolerance",
    }


def test_empty_lists_and_maps_are_checks_too() -> None:
    exp = parse_expect({"binds": {}, "evictions": []})
    assert exp.binds == {} and exp.evictions == frozenset() and not exp.is_empty()
    assert parse_expect({}).is_empty()


@pytest.mark.parametrize(
    ("expect", "message"),
    [
        ({"bindcount": 1}, "expect: bindcount: unknown key 'bindcount' (did you mean 'bindCount'?)"),
        ({"whatever": 1}, "expect: whatever: unknown key 'whatever'; known keys: binds,"),
        ({"bindCount": -1}, "expect: bindCount: expected a count"),
        ({"bindCount": True}, "expect: bindCount: expected a count"),
        ({"binds": ["p1"]}, "expect: binds: expected a mapping"),
        ({"evictions": "p1"}, "expect: evictions: expected a list of pods"),
        ({"podGroupPhases": {"ns/pg": "Done"}}, "expect: podGroupPhases.ns/pg: unknown phase 'Done'"),
        ({"pipelined": {"ns/p": []}}, "expect: pipelined.ns/p: expected a node or a non-empty list of nodes"),
        ({"podGroupAllocated": {"ns/pg": {"cpu": "x"}}}, "expect: podGroupAllocated.ns/pg.cpu: invalid quantity 'x'"),
        ({"nodeScores": {"ns/p": {"n1": "high"}}}, "expect: nodeScores.ns/p.n1: expected a number"),
        ({"nodeScoreTolerance": -1}, "expect: nodeScoreTolerance: must not be negative"),
        ([1], "expect: expect: expected a mapping"),
    ],
)
def test_bad_expect_blocks(expect: Any, message: str) -> None:
    with pytest.raises(ManifestError) as info:
        parse_expect(expect, source="s.yaml")
    assert str(info.value).startswith(f"s.yaml: {message}"), str(info.value)


def test_binds_are_the_complete_set() -> None:
    assert diff({"binds": {"a": "n1", "b": "n2", "c": "n1"}}, binds={"a": "n1", "b": "n3", "d": "n1"}) == [
        "binds: b expected on n2, bound to n3",
        "binds: c expected on n1, not bound",
        "binds: d bound to n1, not expected",
    ]
    assert diff({"binds": {}}, binds={}) == []


def test_counts() -> None:
    assert diff({"bindCount": 1, "evictCount": 0}, binds={"a": "n1", "b": "n1"}, evictions=["x"]) == [
        "bindCount: expected 1, got 2",
        "evictCount: expected 0, got 1",
    ]


def test_evictions_are_the_complete_set() -> None:
    assert diff({"evictions": ["a", "b"]}, evictions=["b", "c"]) == [
        "evictions: a expected, not evicted",
        "evictions: c evicted, not expected",
    ]


def test_pod_group_phases() -> None:
    assert diff(
        {"podGroupPhases": {"ns/pg": "Inqueue", "ns/gone": "Pending"}}, pod_groups={"ns/pg": group("Running")}
    ) == [
        "podGroupPhases: ns/gone expected Pending, no such PodGroup",
        "podGroupPhases: ns/pg expected Inqueue, got Running",
    ]


def test_pipelined_any_of_several_nodes() -> None:
    expect = {"pipelined": {"a": ["n2", "n3"], "b": "n1", "c": ["n1", "n2", "n3"]}}
    assert diff(expect, pipelined={"a": "n3", "b": "n2"}) == [
        "pipelined: b expected on n1, pipelined on n2",
        "pipelined: c expected on n1, n2 or n3, not pipelined",
    ]


def test_pod_group_allocated_checks_listed_and_held_dimensions() -> None:
    groups = {"ns/pg": group(cpu="2", memory="1Gi", **{"nvidia.com/gpu": "1"})}
    assert diff({"podGroupAllocated": {"ns/pg": {"cpu": "2", "memory": "2Gi"}}}, pod_groups=groups) == [
        "podGroupAllocated: ns/pg memory expected 2Gi, got 1Gi",
        "podGroupAllocated: ns/pg nvidia.com/gpu expected 0, got 1",
    ]
    assert (
        diff(
            {"podGroupAllocated": {"ns/pg": {"cpu": "2000m", "memory": "1Gi", "nvidia.com/gpu": 1}}}, pod_groups=groups
        )
        == []
    )
    assert diff({"podGroupAllocated": {"ns/x": {}}}, pod_groups=groups) == ["podGroupAllocated: ns/x: no such PodGroup"]


def test_node_scores_with_tolerance() -> None:
    scores = {"p": {"n1": 150.004, "n2": 0.0}}
    assert diff({"nodeScores": {"p": {"n1": 150, "n2": 0}}, "nodeScoreTolerance": 0.01}, node_scores=scores) == []
    assert diff({"nodeScores": {"p": {"n1": 150, "n3": 1}, "q": {"n1": 0}}}, node_scores=scores) == [
        "nodeScores: p on n1 expected 150, got 150.004 (tolerance 1e-06)",
        "nodeScores: p on n3: no such node in the session",
        "nodeScores: q is not a pod of any job in the first session",
    ]
