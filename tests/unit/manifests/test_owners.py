"""The PodGroup per owner (Volcano's PodGroup controller) and the workloads the loader expands into pods."""

from __future__ import annotations

from pathlib import Path
from typing import Any

import pytest

from volcanolib.errors import ManifestError
from volcanolib.kube.loader import ManifestLoader
from volcanolib.manifests.owners import group_name, needs_group, owner_group
from volcanolib.replay import ReplayOptions, run_replay
from volcanolib.replay.inputs import load_objects
from volcanolib.sim import check_scenario
from volcanolib.sim.report import format_check


def pod(name: str, *, uid: str = "", owners: list[dict[str, Any]] | None = None, **meta: Any) -> dict[str, Any]:
    metadata: dict[str, Any] = {"name": name, "namespace": "ns1", **meta}
    if uid:
        metadata["uid"] = uid
    if owners is not None:
        metadata["ownerReferences"] = owners
    return {
        "apiVersion": "v1",
        "kind": "Pod",
        "metadata": metadata,
        "spec": {
            "schedulerName": "volcano",
            "priorityClassName": "high",
            "containers": [{"name": "c", "image": "x", "resources": {"requests": {"cpu": "1"}}}],
        },
    }


RS = {"apiVersion": "apps/v1", "kind": "ReplicaSet", "name": "rs", "uid": "rs-uid", "controller": True}


def test_the_group_is_named_after_the_controlling_owner_or_the_pod() -> None:
    assert group_name(pod("p", uid="p-uid")["metadata"], "p-uid") == "podgroup-p-uid"
    meta = pod("p", uid="p-uid", owners=[{**RS, "controller": False, "uid": "x"}, RS])["metadata"]
    assert group_name(meta, "p-uid") == "podgroup-rs-uid"


def test_owner_group_facts() -> None:
    raw = pod(
        "p",
        uid="p-uid",
        owners=[RS],
        annotations={
            "scheduling.volcano.sh/queue-name": "team",
            "volcano.sh/preemptable": "false",
            "volcano.sh/jdb-min-available": "2",
            "volcano.sh/jdb-max-unavailable": "1",
            "volcano.sh/network-topology-mode": "Soft",
            "volcano.sh/network-topology-highest-tier": "2",
            "other": "x",
        },
        labels={"volcano.sh/cooldown-time": "10m", "volcano.sh/revocable-zone": "z"},
    )
    owners = {"scheduling.volcano.sh/group-min-member": "3", "volcano.sh/team": "ml", "elsewhere/key": "no"}
    group = owner_group(raw, "p-uid", owner_annotations=owners)
    assert (group.name, group.min_member, group.queue, group.priority_class_name) == (
        "podgroup-rs-uid",
        3,
        "team",
        "high",
    )
    # owners' volcano.sh/ annotations, then the pod's own; one of the two disruption-budget keys
    assert group.annotations == {
        "volcano.sh/team": "ml",
        "volcano.sh/preemptable": "false",
        "volcano.sh/jdb-min-available": "2",
    }
    assert group.labels == {"volcano.sh/cooldown-time": "10m"}  # revocable-zone is copied from annotations only
    assert group.network_topology == ("soft", 2)
    assert group.owner_references == (RS,)
    manifest = group.manifest({"cpu": "3", "pods": "3"})
    assert manifest["spec"] == {
        "minMember": 3,
        "queue": "team",
        "priorityClassName": "high",
        "minResources": {"cpu": "3", "pods": "3"},
        "networkTopology": {"mode": "soft", "highestTierAllowed": 2},
    }
    assert manifest["status"] == {"phase": "Pending"}
    # without inheriting owners' annotations (Volcano's --inherit-owner-annotations=false)
    assert owner_group(raw, "p-uid", owner_annotations=owners, inherit=False).min_member == 1


@pytest.mark.parametrize("value", ["-2", "many", "99999999999"])
def test_a_bad_min_member_annotation_leaves_one(value: str) -> None:
    group = owner_group(pod("p", owners=[RS]), "u", owner_annotations={"scheduling.volcano.sh/group-min-member": value})
    assert group.min_member == 1


def test_a_plain_pod_owns_its_group() -> None:
    group = owner_group(pod("p", uid="p-uid"), "p-uid")
    assert group.owner_references == (
        {
            "apiVersion": "v1",
            "kind": "Pod",
            "name": "p",
            "uid": "p-uid",
            "controller": True,
            "blockOwnerDeletion": True,
        },
    )
    assert group.queue == "" and group.manifest()["spec"] == {"minMember": 1, "priorityClassName": "high"}


def test_which_pods_need_a_group() -> None:
    assert needs_group(pod("p"), {"volcano"})
    assert not needs_group(pod("p"), {"other"})
    assert not needs_group(pod("p", annotations={"scheduling.k8s.io/group-name": "g"}), {"volcano"})


# ---------------------------------------------------------------------- workloads in the loader


def template(**annotations: str) -> dict[str, Any]:
    return {
        "metadata": {"labels": {"app": "a"}, "annotations": annotations},
        "spec": {
            "schedulerName": "volcano",
            "containers": [{"name": "c", "image": "x", "resources": {"requests": {"cpu": "1"}}}],
        },
    }


def workload(kind: str, name: str, replicas: int | None, **meta: Any) -> dict[str, Any]:
    spec: dict[str, Any] = {"selector": {"matchLabels": {"app": "a"}}, "template": template()}
    if replicas is not None:
        spec["replicas"] = replicas
    return {"apiVersion": "apps/v1", "kind": kind, "metadata": {"name": name, "namespace": "ns1", **meta}, "spec": spec}


def load(*objects: dict[str, Any]) -> Any:
    loader = ManifestLoader()
    loader.add(
        {"apiVersion": "v1", "kind": "Node", "metadata": {"name": "n"}, "status": {"allocatable": {"cpu": "64"}}}
    )
    loader.add_objects(objects, source="s.yaml")
    return loader.load()


def test_a_deployment_becomes_a_replica_set_and_its_pods() -> None:
    deployment = workload("Deployment", "web", 5, annotations={"scheduling.volcano.sh/group-min-member": "2"})
    deployment["spec"]["template"] = template(**{"scheduling.volcano.sh/queue-name": "team"})
    cluster = load(deployment)
    assert len(cluster.tasks) == 5
    names = {t.name for t in cluster.tasks}
    (group,) = cluster.pod_groups
    rs_name = group.name.removeprefix("podgroup-replicaset-")
    assert all(name.startswith(f"{rs_name}-") for name in names) and rs_name.startswith("web-")
    assert (group.min_member, group.queue) == (2, "team")  # the ReplicaSet carries the Deployment's annotations
    assert group.min_resources is not None and group.min_resources.milli_cpu == 2000
    pods = [cluster.generated[("ns1", name)][0] for name in names]
    assert {p["metadata"]["labels"]["pod-template-hash"] for p in pods} == {rs_name.removeprefix("web-")}
    # the same Deployment expands the same way every time
    assert {t.name for t in load(deployment).tasks} == names


def test_a_deployment_whose_replica_set_is_given_is_not_expanded_twice() -> None:
    deployment = workload("Deployment", "web", 3, uid="d-uid")
    owned = {"apiVersion": "apps/v1", "kind": "Deployment", "name": "web", "uid": "d-uid", "controller": True}
    rs = workload("ReplicaSet", "web-abc", 2, uid="rs-uid", ownerReferences=[owned])
    cluster = load(deployment, rs)
    assert len(cluster.tasks) == 2 and {g.name for g in cluster.pod_groups} == {"podgroup-rs-uid"}


def test_replica_sets_count_the_pods_they_already_own_and_stateful_sets_their_ordinals() -> None:
    held = pod("rs-held", uid="h", owners=[RS])
    stateful = workload("StatefulSet", "db", 3)
    db1 = pod("db-1", uid="d1", owners=[{**RS, "kind": "StatefulSet", "name": "db", "uid": "statefulset-db"}])
    cluster = load(workload("ReplicaSet", "rs", 3, uid="rs-uid"), held, stateful, db1, workload("ReplicaSet", "z", 0))
    by_group: dict[str, set[str]] = {}
    for task in cluster.tasks:
        by_group.setdefault(task.job, set()).add(task.name)
    assert len(by_group["ns1/podgroup-rs-uid"]) == 3 and "rs-held" in by_group["ns1/podgroup-rs-uid"]
    assert by_group["ns1/podgroup-statefulset-db"] == {"db-0", "db-1", "db-2"}
    assert not any(name.startswith("z-") for names in by_group.values() for name in names)


def test_replicas_default_to_one_and_a_bad_workload_names_its_field() -> None:
    assert len(load(workload("ReplicaSet", "one", None)).tasks) == 1
    bad = workload("ReplicaSet", "bad", -1)
    with pytest.raises(ManifestError, match=r"s.yaml: ReplicaSet ns1/bad: spec.replicas: must be at least 0"):
        load(bad)
    bad = workload("StatefulSet", "bad", 1)
    del bad["spec"]["template"]
    with pytest.raises(ManifestError, match=r"StatefulSet ns1/bad: spec.template: missing required field"):
        load(bad)


def test_replay_runs_a_deployment_and_its_pods_arrive_with_it() -> None:
    deployment = workload("Deployment", "web", 2, creationTimestamp="2024-01-01T00:00:10Z")
    deployment["spec"]["template"] = template(**{"volcanolib.io/duration": "30s"})
    node = {"apiVersion": "v1", "kind": "Node", "metadata": {"name": "n"}, "status": {"allocatable": {"cpu": "4"}}}
    early = pod("early", creationTimestamp="2024-01-01T00:00:00Z", annotations={"volcanolib.io/duration": "5s"})
    record = run_replay(load_objects([node, early, deployment]), options=ReplayOptions())
    assert {p.phase for p in record.pods} == {"Succeeded"}
    web = [p for p in record.pods if p.name.startswith("ns1/web-")]
    assert len(web) == 2 and all(p.submitted == record.start + 10 for p in web)
    assert all(p.finished is not None and p.started is not None and p.finished - p.started == 30 for p in web)
    (first,) = [p for p in record.pods if p.name == "ns1/early"]
    assert first.submitted == record.start


SCENARIOS = sorted((Path(__file__).parent / "scenarios").glob("*.yaml"))


@pytest.mark.parametrize("path", SCENARIOS, ids=[p.stem for p in SCENARIOS])
def test_workload_scenario(path: Path) -> None:
    """Scenarios of workloads, kept out of tests/scenarios: Volcano has no ReplicaSet controller to compare with."""
    outcome = check_scenario(path)
    assert outcome.ok, format_check(outcome)


def test_the_workload_scenarios_are_there() -> None:
    assert len(SCENARIOS) == 2
