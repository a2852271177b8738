"""capacity, with predicates and gang, on cases of Volcano's own capacity tests, run as scenarios.

Each case is written here as a scenario (nodes, queues, PodGroups, pods, the
expected binds / evictions / pipelined pods / phases) and checked with the
scenario runner, so the plugins are exercised by the real actions.
"""

from __future__ import annotations

from pathlib import Path
from typing import Any

import pytest
import yaml

from volcanolib.sim.runner import check_scenario

FLAT_TIERS = [
    {
        "plugins": [
            {
                "name": "capacity",
                "enableQueueOrder": True,
                "enableReclaimable": True,
                "enabledAllocatable": True,
                "enablePreemptive": True,
                "enableJobEnqueued": False,
                "enablePredicate": False,
            },
            {"name": "predicates", "enablePredicate": True, "enableNodeOrder": False},
            {
                "name": "gang",
                "enableJobOrder": False,
                "enableJobReady": False,
                "enableJobPipelined": False,
                "enableJobStarving": True,
                "enablePreemptable": False,
                "enableReclaimable": False,
            },
        ]
    }
]
HIERARCHY_TIERS = [
    {
        "plugins": [
            {**FLAT_TIERS[0]["plugins"][0], "enableHierarchy": True, "enableJobEnqueued": True},
            FLAT_TIERS[0]["plugins"][1],
            FLAT_TIERS[0]["plugins"][2],
        ]
    }
]


def rl(cpu: str = "", memory: str = "", **scalars: str) -> dict[str, str]:
    out = {}
    if cpu:
        out["cpu"] = cpu
    if memory:
        out["memory"] = memory
    out.update({k.replace("__", "/").replace("_", "."): v for k, v in scalars.items()})
    return out


def node(name: str, res: dict[str, str], labels: dict[str, str] | None = None) -> dict[str, Any]:
    return {
        "apiVersion": "v1",
        "kind": "Node",
        "metadata": {"name": name, "labels": labels or {}},
        "status": {"allocatable": res, "capacity": res, "conditions": [{"type": "Ready", "status": "True"}]},
    }


def queue(
    name: str,
    deserved: dict[str, str] | None = None,
    capability: dict[str, str] | None = None,
    *,
    parent: str = "",
    priority: int = 0,
    state: str = "Open",
    guarantee: dict[str, str] | None = None,
) -> dict[str, Any]:
    spec: dict[str, Any] = {"weight": 1}
    if deserved:
        spec["deserved"] = deserved
    if capability:
        spec["capability"] = capability
    if parent:
        spec["parent"] = parent
    if priority:
        spec["priority"] = priority
    if guarantee:
        spec["guarantee"] = {"resource": guarantee}
    return {
        "apiVersion": "scheduling.volcano.sh/v1beta1",
        "kind": "Queue",
        "metadata": {"name": name},
        "spec": spec,
        "status": {"state": state},
    }


def group(name: str, queue_name: str, phase: str, min_member: int = 1, min_resources: Any = None) -> dict[str, Any]:
    spec: dict[str, Any] = {"minMember": min_member, "queue": queue_name}
    if min_resources is not None:
        spec["minResources"] = min_resources
    return {
        "apiVersion": "scheduling.volcano.sh/v1beta1",
        "kind": "PodGroup",
        "metadata": {"name": name, "namespace": "ns1"},
        "spec": spec,
        "status": {"phase": phase},
    }


def pod(name: str, node_name: str, res: dict[str, str], pg: str, *, preemptable: bool = True) -> dict[str, Any]:
    labels = {} if preemptable else {"volcano.sh/preemptable": "false"}
    return {
        "apiVersion": "v1",
        "kind": "Pod",
        "metadata": {
            "name": name,
            "namespace": "ns1",
            "labels": labels,
            "annotations": {"scheduling.k8s.io/group-name": pg},
        },
        "spec": {
            "schedulerName": "volcano",
            "nodeName": node_name,
            "containers": [{"name": "c", "resources": {"requests": res}}],
        },
        "status": {"phase": "Running" if node_name else "Pending"},
    }


def run(tmp_path: Path, actions: str, tiers: Any, objects: list[dict[str, Any]], **expect: Any) -> None:
    scenario = {
        "name": "case",
        "scheduler": {"actions": actions, "tiers": tiers},
        "objects": objects,
        "expect": {"binds": {}, "evictions": [], **expect},
    }
    path = tmp_path / "scenario.yaml"
    path.write_text(yaml.safe_dump(scenario))
    outcome = check_scenario(path)
    assert outcome.error is None, outcome.error
    assert outcome.ok, outcome.differences


N2 = rl("2", "4Gi", pods="10")


def test_flat_reclaim_when_allocated_below_deserved(tmp_path: Path) -> None:
    objects = [
        node("n1", N2, {"selector": "worker"}),
        node("n2", N2),
        queue("q3", rl("2", "4Gi")),
        queue("q4", rl("2", "4Gi")),
        group("pg5", "q3", "Running"),
        group("pg6", "q4", "Inqueue"),
        pod("p5", "n1", rl("2", "4Gi"), "pg5", preemptable=False),
        pod("p6", "n2", rl("2", "4Gi"), "pg5"),
        pod("p7", "", rl("2", "4Gi"), "pg6"),
    ]
    run(tmp_path, "allocate, reclaim", FLAT_TIERS, objects, evictions=["ns1/p6"], pipelined={"ns1/p7": ["n2"]})


def test_flat_reclaim_of_a_scalar_only_task(tmp_path: Path) -> None:
    n = rl("2", "4Gi", nvidia_com__A100="10", pods="10")
    objects = [
        node("n3", n, {"selector": "worker"}),
        node("n4", n),
        queue("q5", rl("2", "4Gi", nvidia_com__A100="10")),
        queue("q6", rl("2", "4Gi", nvidia_com__A100="10")),
        group("pg7", "q5", "Running"),
        group("pg8", "q6", "Running"),
        group("pg9", "q6", "Inqueue"),
        pod("p8", "n3", rl("0", "0Gi", nvidia_com__A100="10"), "pg7", preemptable=False),
        pod("p9", "n4", rl("0", "0Gi", nvidia_com__A100="10"), "pg7"),
        pod("p10", "n3", rl("2", "4Gi"), "pg8"),
        pod("p11", "n4", rl("2", "4Gi"), "pg8"),
        pod("p12", "", rl("0", "0Gi", nvidia_com__A100="10"), "pg9"),
    ]
    run(tmp_path, "allocate, reclaim", FLAT_TIERS, objects, evictions=["ns1/p9"], pipelined={"ns1/p12": ["n4"]})


def test_flat_queue_priority_orders_allocation(tmp_path: Path) -> None:
    objects = [
        node("n5", N2),
        node("n6", N2),
        queue("q7", None, rl("2", "4Gi"), priority=5),
        queue("q8", None, rl("2", "4Gi"), priority=1),
        queue("q9", None, rl("2", "4Gi"), priority=10),
        group("pg10", "q7", "Running"),
        group("pg11", "q8", "Inqueue"),
        group("pg12", "q9", "Inqueue"),
        pod("p13", "n5", rl("2", "4Gi"), "pg10"),
        pod("p14", "", rl("2", "4Gi"), "pg11"),
        pod("p15", "", rl("2", "4Gi"), "pg12"),
    ]
    run(tmp_path, "allocate, reclaim", FLAT_TIERS, objects, binds={"ns1/p15": "n6"})


def test_flat_no_reclaim_when_request_exceeds_deserved(tmp_path: Path) -> None:
    objects = [
        node("n1", N2),
        queue("q12", rl("1", "2Gi"), rl("4", "4Gi")),
        queue("q13", rl("0", "0Gi"), rl("2", "2Gi")),
        group("pg19", "q12", "Running"),
        group("pg20", "q12", "Inqueue"),
        group("pg21", "q13", "Running"),
        pod("p19", "n1", rl("1", "1Gi"), "pg19"),
        pod("p20", "", rl("1", "2Gi"), "pg20"),
        pod("p21", "n1", rl("1", "1Gi"), "pg21"),
    ]
    run(tmp_path, "allocate, reclaim", FLAT_TIERS, objects, pipelined={})


def test_flat_no_reclaim_from_a_queue_without_the_scalar(tmp_path: Path) -> None:
    objects = [
        node("n7", rl("4", "8Gi", nvidia_com__gpu="4", pods="10")),
        queue("queue14", rl("2", "4Gi", nvidia_com__gpu="2")),
        queue("queue15"),
        queue("queue16", rl("2", "4Gi", nvidia_com__gpu="2")),
        group("pg22", "queue14", "Running"),
        group("pg23", "queue15", "Running"),
        group("pg24", "queue16", "Running"),
        group("pg25", "queue16", "Inqueue"),
        pod("p22", "n7", rl("2", "4Gi"), "pg22"),
        pod("p23", "n7", rl("0", "0Gi", nvidia_com__gpu="1"), "pg23"),
        pod("p24", "n7", rl("2", "1Gi", nvidia_com__gpu="1"), "pg24"),
        pod("p25", "", rl("2", "3Gi", nvidia_com__gpu="1"), "pg25"),
    ]
    run(tmp_path, "allocate, reclaim", FLAT_TIERS, objects, pipelined={})


@pytest.mark.parametrize(("state", "binds"), [("Open", {"ns1/pod3": "n1"}), ("Closed", {})])
def test_enqueue_and_allocate_cpu_only_job_when_memory_over_deserved(
    tmp_path: Path, state: str, binds: dict[str, str]
) -> None:
    tiers = [
        {
            "plugins": [
                {
                    "name": "capacity",
                    "enabledAllocatable": True,
                    "enablePreemptive": True,
                    "enabledOverused": True,
                    "enableJobEnqueued": True,
                }
            ]
        }
    ]
    n = rl("3", "3G", pods="10")
    objects = [
        node("n1", n),
        node("n2", n),
        queue("q1", rl("2", "2G"), rl("2", "2G"), state=state),
        queue("q2", rl("2", "2G"), rl("3", "3G")),
        group("pg1", "q1", "Running", min_resources=rl("1", "3G")),
        group("pg2", "q2", "Running", min_resources=rl("3", "1G")),
        group("pg3", "q1", "Pending", min_resources=rl("1", "0G")),
        pod("pod1", "n1", rl("1", "3G"), "pg1"),
        pod("pod2", "n2", rl("3", "1G"), "pg2"),
        pod("pod3", "", rl("1", "0G"), "pg3"),
    ]
    run(tmp_path, "enqueue, allocate", tiers, objects, binds=binds)


N8 = rl("8", "8Gi", pods="11")


def hq(name: str, parent: str, deserved: Any = None, capability: Any = None) -> dict[str, Any]:
    return queue(name, deserved, capability, parent=parent)


def test_hierarchy_gang_fits_leaf_and_parent(tmp_path: Path) -> None:
    objects = [
        node("n1", N8),
        queue("root"),
        hq("q3", "root", rl("4", "4Gi", pods="10"), rl("4", "4Gi", pods="10")),
        hq("q4", "root", rl("2", "2Gi", pods="1"), rl("4", "4Gi", pods="4")),
        hq("q31", "q3", rl("2", "2Gi", pods="2"), rl("4", "4Gi", pods="4")),
        hq("q32", "q3", rl("2", "2Gi", pods="2"), rl("4", "4Gi", pods="4")),
        group("pg3", "q31", "Inqueue", min_member=2),
        pod("p3", "", rl("2", "2Gi"), "pg3"),
        pod("p4", "", rl("2", "2Gi"), "pg3"),
    ]
    run(tmp_path, "enqueue, reclaim, allocate", HIERARCHY_TIERS, objects, binds={"ns1/p3": "n1", "ns1/p4": "n1"})


def test_hierarchy_reclaim_from_sibling_over_deserved(tmp_path: Path) -> None:
    objects = [
        node("n1", N8),
        queue("root"),
        hq("q3", "root", rl("4", "4Gi", pods="10"), rl("4", "4Gi", pods="10")),
        hq("q31", "q3", rl("2", "2Gi", pods="2"), rl("4", "4Gi", pods="4")),
        hq("q32", "q3", rl("2", "2Gi", pods="2"), rl("4", "4Gi", pods="4")),
        hq("q4", "root", rl("2", "2Gi", pods="1"), rl("4", "4Gi", pods="4")),
        group("pg4", "q4", "Running"),
        group("pg5", "q31", "Running"),
        group("pg6", "q32", "Inqueue"),
        pod("p5", "n1", rl("4", "4Gi"), "pg4"),
        pod("p6", "n1", rl("2", "2Gi"), "pg5", preemptable=False),
        pod("p7", "n1", rl("2", "2Gi"), "pg5"),
        pod("p8", "", rl("2", "2Gi"), "pg6"),
    ]
    run(
        tmp_path,
        "enqueue, reclaim, allocate",
        HIERARCHY_TIERS,
        objects,
        evictions=["ns1/p7"],
        pipelined={"ns1/p8": ["n1"]},
    )


def test_hierarchy_capability_memory_inherited(tmp_path: Path) -> None:
    objects = [
        node("n1", N8),
        queue("root"),
        hq("q5", "root", None, rl("", "4Gi")),
        hq("q51", "q5", None, rl("", "2Gi")),
        group("pg9", "q51", "Running"),
        pod("p11", "", rl("1"), "pg9"),
    ]
    run(tmp_path, "enqueue, reclaim, allocate", HIERARCHY_TIERS, objects, binds={"ns1/p11": "n1"})


def test_hierarchy_enqueue_limited_by_ancestor_capability(tmp_path: Path) -> None:
    objects = [
        node("n1", N8),
        queue("root"),
        hq("q6", "root", None, rl("2", "4Gi")),
        hq("q61", "q6"),
        hq("q62", "q6"),
        group("pg10", "q61", "Pending", min_resources=rl("2", "4Gi")),
        group("pg11", "q62", "Pending", min_resources=rl("2", "4Gi")),
    ]
    run(
        tmp_path,
        "enqueue, reclaim, allocate",
        HIERARCHY_TIERS,
        objects,
        podGroupPhases={"ns1/pg10": "Inqueue", "ns1/pg11": "Pending"},
    )


def test_hierarchy_scalar_deserved(tmp_path: Path) -> None:
    objects = [
        node("n-gpu", rl("8", "8Gi", nvidia_com__gpu="8", pods="10")),
        queue("root"),
        hq("q8", "root", rl("4", "4Gi", nvidia_com__gpu="8")),
        hq("q81", "q8", rl("2", "2Gi", nvidia_com__gpu="4")),
        hq("q82", "q8", rl("2", "2Gi", nvidia_com__gpu="4")),
        group("pg12", "q81", "Inqueue"),
        pod("p12", "", rl("2", "2Gi", nvidia_com__gpu="1"), "pg12"),
    ]
    run(tmp_path, "enqueue, reclaim, allocate", HIERARCHY_TIERS, objects, binds={"ns1/p12": "n-gpu"})


def test_hierarchy_without_jobs_and_oversized_capabilities(tmp_path: Path) -> None:
    guarantee = rl("4", "3Gi")
    objects = [
        node("n1", N8),
        queue("root", None, rl("16", "16Gi")),
        hq("q10", "root", None, rl("10", "4Gi")),
        hq("q7", "root", None, rl("6", "4Gi")),
        {
            **hq("q71", "q7", None, rl("6", "4Gi")),
            "spec": {"parent": "q7", "capability": rl("6", "4Gi"), "guarantee": {"resource": guarantee}},
        },
        {
            **hq("q72", "q7", None, rl("6", "4Gi")),
            "spec": {"parent": "q7", "capability": rl("6", "4Gi"), "guarantee": {"resource": guarantee}},
        },
    ]
    run(tmp_path, "enqueue, reclaim, allocate", HIERARCHY_TIERS, objects)
