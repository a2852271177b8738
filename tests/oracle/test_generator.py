"""The random scenario generator of the differential tests, checked without the oracle."""

from __future__ import annotations

import json
from fractions import Fraction
from pathlib import Path
from typing import Any

import pytest

from tests.oracle.generator import AREAS, generate
from volcanolib.api.quantity import parse_quantity
from volcanolib.sim.runner import SimulationResult, load_scenario, run_scenario

SEEDS = range(20)


def _objects(scenario: dict[str, Any], kind: str) -> list[dict[str, Any]]:
    return [o for o in scenario["objects"] if o["kind"] == kind]


#: What the seeds of an area must make volcanolib do at least once besides binding a pod and
#: leaving one pending, so that the area's feature is exercised.
EXERCISES: dict[str, set[str]] = {
    "preempt": {"evict", "pipelined"},
    "preempt-topology": {"evict", "pipelined"},
    "reclaim": {"evict", "pipelined"},
    "priority": {"evict"},
    "drf": {"evict"},
    "capacity": {"evict"},
    "multi-session": {"evict", "pipelined", "bind after the first session"},
}


def _signs(result: SimulationResult) -> set[str]:
    signs = set()
    if result.binds:
        signs.add("bind")
    if result.unschedulable:
        signs.add("pending")
    if result.evictions:
        signs.add("evict")
    if any(session["pipelined"] for session in result.per_session):
        signs.add("pipelined")
    if any(session["binds"] for session in result.per_session[1:]):
        signs.add("bind after the first session")
    return signs


@pytest.mark.parametrize("area", AREAS)
def test_each_seed_loads_and_runs_in_volcanolib(area: str, tmp_path: Path) -> None:
    seen: set[str] = set()
    for seed in SEEDS:
        path = tmp_path / f"{area}-{seed}.json"
        path.write_text(json.dumps(generate(seed, area)))
        scenario = load_scenario([path])
        # A malformed object shows as a warning: a dangling reference, an unknown key or class.
        odd = [w for w in scenario.warnings if "NotEnoughTasks" not in w]
        assert odd == [], f"{area} seed {seed}: {odd}"
        result = run_scenario(scenario, per_session=True)
        assert result.plugin_errors == [], f"{area} seed {seed}"
        assert len(result.per_session) == scenario.sessions
        seen |= _signs(result)
    assert {"bind", "pending", *EXERCISES.get(area, ())} <= seen


@pytest.mark.parametrize("area", AREAS)
def test_a_seed_gives_the_same_scenario(area: str) -> None:
    assert json.dumps(generate(7, area)) == json.dumps(generate(7, area))


@pytest.mark.parametrize("area", AREAS)
def test_seeds_give_different_scenarios(area: str) -> None:
    texts = {json.dumps(generate(seed, area)["objects"], sort_keys=True) for seed in SEEDS}
    assert len(texts) == len(SEEDS)


@pytest.mark.parametrize("area", AREAS)
def test_objects_are_complete_and_refer_to_what_exists(area: str) -> None:
    for seed in SEEDS:
        scenario = generate(seed, area)
        assert 2 <= len(_objects(scenario, "Node")) <= 8
        pods = _objects(scenario, "Pod")
        assert len(pods) <= 40
        queues = {q["metadata"]["name"] for q in _objects(scenario, "Queue")} | {"default", "root"}
        groups = {(g["metadata"]["namespace"], g["metadata"]["name"]) for g in _objects(scenario, "PodGroup")}
        classes = {c["metadata"]["name"] for c in _objects(scenario, "PriorityClass")}
        for group in _objects(scenario, "PodGroup"):
            assert group["spec"]["queue"] in queues
            if "priorityClassName" in group["spec"]:
                assert group["spec"]["priorityClassName"] in classes
        for pod in pods:
            meta, spec = pod["metadata"], pod["spec"]
            assert (meta["namespace"], meta["annotations"]["scheduling.k8s.io/group-name"]) in groups
            assert spec["schedulerName"] == scenario["schedulerName"]
            assert spec["containers"], meta["name"]
            if "priorityClassName" in spec:
                assert spec["priorityClassName"] in classes
            requests = spec["containers"][0]["resources"].get("requests", {})
            # Only backfill's best-effort pods ask for nothing; extended resources are requested as limited.
            assert requests or area == "backfill", meta["name"]
            for name, value in spec["containers"][0]["resources"].get("limits", {}).items():
                assert requests[name] == value


def _amounts(quantities: dict[str, str]) -> dict[str, Fraction]:
    return {name: parse_quantity(value) for name, value in quantities.items()}


@pytest.mark.parametrize("area", AREAS)
def test_placed_pods_fit_their_nodes(area: str) -> None:
    for seed in SEEDS:
        scenario = generate(seed, area)
        free = {n["metadata"]["name"]: _amounts(n["status"]["allocatable"]) for n in _objects(scenario, "Node")}
        for pod in _objects(scenario, "Pod"):
            node = pod["spec"].get("nodeName")
            if node:
                requests = _amounts({**pod["spec"]["containers"][0]["resources"].get("requests", {}), "pods": "1"})
                for name, amount in requests.items():
                    free[node][name] = free[node].get(name, Fraction(0)) - amount
        for node, left in free.items():
            assert all(v >= 0 for v in left.values()), f"{area} seed {seed}: {node} overcommitted: {left}"


def test_configurations_name_only_volcano_actions() -> None:
    volcano_actions = {"enqueue", "allocate", "backfill", "preempt", "reclaim", "shuffle"}
    for area in AREAS:
        for seed in range(5):
            actions = generate(seed, area)["scheduler"]["actions"]
            assert {a.strip() for a in actions.split(",")} <= volcano_actions


def test_an_unknown_area_is_refused() -> None:
    with pytest.raises(ValueError, match="unknown area 'gangpreempt'"):
        generate(0, "gangpreempt")
