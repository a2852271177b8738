"""Volcano's CI configuration (examples/topology) loads and runs unchanged on a cluster with HyperNodes."""

from __future__ import annotations

import logging
from pathlib import Path

import pytest

from volcanolib.api.hypernode import JOB_ALLOCATED_HYPER_NODE
from volcanolib.sim.runner import load_scenario, run_scenario

EXAMPLE = Path(__file__).resolve().parents[2] / "examples" / "topology"


@pytest.fixture(scope="module")
def result():  # type: ignore[no-untyped-def]
    scenario = load_scenario([EXAMPLE / "cluster.yaml"], conf=EXAMPLE / "volcano-scheduler-ci.conf", sessions=2)
    return run_scenario(scenario)


def test_configuration_loads_without_unknown_arguments(caplog: pytest.LogCaptureFixture) -> None:
    with caplog.at_level(logging.WARNING):
        scenario = load_scenario([EXAMPLE / "cluster.yaml"], conf=EXAMPLE / "volcano-scheduler-ci.conf", sessions=1)
        run_scenario(scenario)
    assert scenario.warnings == []
    assert not [r for r in caplog.records if "argument" in r.getMessage()]
    names = [plugin.name for tier in scenario.config.tiers for plugin in tier.plugins]
    assert "sla" in names and "network-topology-aware" in names


def test_every_job_runs(result) -> None:  # type: ignore[no-untyped-def]
    assert not result.plugin_errors
    assert {uid: r.scheduled for uid, r in result.pod_groups.items()} == {
        "default/serving": 2,
        "default/train-hard": 4,
        "default/train-soft": 2,
        "default/batch": 2,
    }


def test_hard_job_stays_in_the_rack_with_room(result) -> None:  # type: ignore[no-untyped-def]
    nodes = {node for pod, node in result.binds.items() if pod.startswith("default/train-hard-")}
    assert nodes == {"b-0", "b-1", "b-2", "b-3"}
    group = next(pg for pg in result.cache.jobs() if pg.uid == "default/train-hard").pod_group
    assert group.annotations[JOB_ALLOCATED_HYPER_NODE] == "rack-b"


def test_soft_job_follows_its_first_worker(result) -> None:  # type: ignore[no-untyped-def]
    nodes = [node for pod, node in sorted(result.binds.items()) if pod.startswith("default/train-soft-")]
    assert len(nodes) == 2
    assert nodes[0][0] == nodes[1][0]
    group = next(pg for pg in result.cache.jobs() if pg.uid == "default/train-soft").pod_group
    assert group.annotations[JOB_ALLOCATED_HYPER_NODE] == f"rack-{nodes[0][0]}"
