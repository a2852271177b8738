"""Manifests -> model: every kind, the pod rules, the errors and the warnings."""

from __future__ import annotations

import logging
from pathlib import Path
from typing import Any

import pytest

from volcanolib import ManifestError, PodGroupPhase, QuantityError, QueueState, TaskStatus
from volcanolib.api.resource import PODS
from volcanolib.kube import Cluster, ManifestLoader, load_manifests


def node(name: str = "n1", *, allocatable: dict[str, Any] | None = None, **extra: Any) -> dict[str, Any]:
    status: dict[str, Any] = {"allocatable": allocatable or {"cpu": "4", "memory": "8Gi", "pods": "110"}}
    status.update(extra.pop("status", {}))
    return {
        "apiVersion": "v1",
        "kind": "Node",
        "metadata": {"name": name, **extra.pop("metadata", {})},
        "spec": extra.pop("spec", {}),
        "status": status,
    }


def pod(
    name: str,
    *,
    ns: str = "ns1",
    group: str | None = "pg1",
    requests: dict[str, Any] | None = None,
    spec: dict[str, Any] | None = None,
    meta: dict[str, Any] | None = None,
    status: dict[str, Any] | None = None,
) -> dict[str, Any]:
    metadata: dict[str, Any] = {"name": name, "namespace": ns, **(meta or {})}
    if group is not None:
        metadata.setdefault("annotations", {})["scheduling.k8s.io/group-name"] = group
    body: dict[str, Any] = {
        "schedulerName": "volcano",
        "containers": [{"name": "c", "resources": {"requests": requests if requests is not None else {"cpu": "1"}}}],
    }
    body.update(spec or {})
    return {
        "apiVersion": "v1",
        "kind": "Pod",
        "metadata": metadata,
        "spec": body,
        "status": status or {"phase": "Pending"},
    }


def pod_group(name: str = "pg1", *, ns: str = "ns1", **spec: Any) -> dict[str, Any]:
    status = spec.pop("status", {})
    return {
        "apiVersion": "scheduling.volcano.sh/v1beta1",
        "kind": "PodGroup",
        "metadata": {"name": name, "namespace": ns},
        "spec": {"minMember": 1, **spec},
        "status": status,
    }


def queue(name: str, **spec: Any) -> dict[str, Any]:
    meta = spec.pop("metadata", {})
    status = spec.pop("status", {})
    return {
        "apiVersion": "scheduling.volcano.sh/v1beta1",
        "kind": "Queue",
        "metadata": {"name": name, **meta},
        "spec": spec,
        "status": status,
    }


def priority_class(name: str, value: int, **extra: Any) -> dict[str, Any]:
    return {
        "apiVersion": "scheduling.k8s.io/v1",
        "kind": "PriorityClass",
        "metadata": {"name": name},
        "value": value,
        **extra,
    }


def load(*objects: dict[str, Any], scheduler_name: str = "volcano") -> Cluster:
    loader = ManifestLoader(scheduler_name=scheduler_name)
    loader.add_objects(objects, source="scenario.yaml")
    return loader.load()


def task(cluster: Cluster, name: str) -> Any:
    return next(t for t in cluster.tasks if t.name == name)


# ---------------------------------------------------------------------- nodes


def test_node_fields() -> None:
    raw = node(
        "n1",
        allocatable={"cpu": "3900m", "memory": "7Gi", "pods": "30", "nvidia.com/gpu": "2"},
        metadata={"labels": {"zone": "a", "gen": 3}},
        spec={"unschedulable": True, "taints": [{"key": "gpu", "value": "true", "effect": "NoSchedule"}, {"key": "x"}]},
        status={
            "capacity": {"cpu": "4", "memory": "8Gi", "pods": "30"},
            "images": [{"names": ["img:1", "img@sha"], "sizeBytes": 100}],
        },
    )
    (info,) = load(raw).nodes
    assert info.allocatable.milli_cpu == 3900 and info.allocatable.get("nvidia.com/gpu") == 2000
    assert info.allocatable.get(PODS) == 30 and info.capability.milli_cpu == 4000
    assert info.node.labels == {"zone": "a", "gen": "3"}
    assert info.node.unschedulable is True
    assert [(t.key, t.value, t.effect) for t in info.node.taints] == [
        ("gpu", "true", "NoSchedule"),
        ("x", "", "NoSchedule"),
    ]
    assert info.node.images == {"img:1": 100, "img@sha": 100}
    assert info.ready and info.node.manifest is raw


@pytest.mark.parametrize(
    ("conditions", "ready"),
    [
        (None, True),
        ([{"type": "Ready", "status": "True"}], True),
        ([{"type": "Ready", "status": "False"}], False),
        ([{"type": "Ready", "status": "Unknown"}], False),
        ([{"type": "MemoryPressure", "status": "True"}], True),
    ],
)
def test_node_readiness_follows_the_ready_condition(conditions: Any, ready: bool) -> None:
    (info,) = load(node(status={"conditions": conditions} if conditions else {})).nodes
    assert info.ready is ready
    assert info.not_ready_reason == ("" if ready else "NotReady")


def test_node_without_pods_may_hold_110_with_a_warning(caplog: pytest.LogCaptureFixture) -> None:
    with caplog.at_level(logging.WARNING, logger="volcanolib"):
        cluster = load(node(allocatable={"cpu": "4"}))
    assert cluster.nodes[0].allocatable.get(PODS) == 110
    assert any("may hold 110 pods" in w and "n1" in w for w in cluster.warnings)
    assert any("may hold 110 pods" in r.getMessage() for r in caplog.records)


def test_node_capacity_stands_in_for_missing_allocatable() -> None:
    raw = node()
    raw["status"] = {"capacity": {"cpu": "2", "memory": "1Gi", "pods": "5"}}
    (info,) = load(raw).nodes
    assert info.allocatable.milli_cpu == 2000 and info.allocatable.get(PODS) == 5


def test_node_without_resources_is_an_error() -> None:
    raw = node()
    raw["status"] = {}
    with pytest.raises(ManifestError) as info:
        load(raw)
    assert str(info.value) == (
        "scenario.yaml: Node n1: status.allocatable: missing required field: status.allocatable (or status.capacity)"
    )


# ---------------------------------------------------------------------- pods


def test_pod_request_sums_containers_takes_init_max_and_adds_one_pod() -> None:
    spec = {
        "containers": [
            {"name": "a", "resources": {"requests": {"cpu": "1", "memory": "1Gi"}}},
            {"name": "b", "resources": {"requests": {"cpu": "500m", "nvidia.com/gpu": "1"}}},
        ],
        "initContainers": [
            {"name": "i1", "resources": {"requests": {"cpu": "2", "memory": "512Mi"}}},
            {"name": "i2", "resources": {"requests": {"memory": "3Gi"}}},
        ],
    }
    (t,) = load(pod_group(), pod("p1", spec=spec)).tasks
    assert t.resreq.milli_cpu == 2000
    assert t.resreq.memory == 3 * 2**30
    assert t.resreq.get("nvidia.com/gpu") == 1000
    assert t.resreq.get(PODS) == 1


def test_pod_request_counts_sidecars_overhead_and_defaults_requests_to_limits() -> None:
    spec = {
        "containers": [{"name": "a", "resources": {"requests": {"cpu": "1"}, "limits": {"cpu": "2", "memory": "1Gi"}}}],
        "initContainers": [
            {"name": "sidecar", "restartPolicy": "Always", "resources": {"requests": {"cpu": "1"}}},
            {"name": "setup", "resources": {"requests": {"cpu": "3"}}},
        ],
        "overhead": {"cpu": "100m"},
    }
    (t,) = load(pod_group(), pod("p1", spec=spec)).tasks
    # containers 1 + sidecar 1 = 2; setup runs next to the sidecar: 3 + 1 = 4; plus overhead
    assert t.resreq.milli_cpu == 4100
    assert t.resreq.memory == 2**30  # the limit stands in for the missing request


def test_best_effort_pod_still_requests_one_pod() -> None:
    (t,) = load(pod_group(), pod("p1", requests={})).tasks
    assert t.best_effort and t.resreq.get(PODS) == 1


@pytest.mark.parametrize(
    ("phase", "deleting", "node_name", "status"),
    [
        ("Running", True, "n1", TaskStatus.RELEASING),
        ("Running", False, "n1", TaskStatus.RUNNING),
        ("Pending", True, "", TaskStatus.RELEASING),
        ("Pending", False, "", TaskStatus.PENDING),
        ("Pending", False, "n1", TaskStatus.BOUND),
        ("Succeeded", False, "n1", TaskStatus.SUCCEEDED),
        ("Failed", True, "n1", TaskStatus.FAILED),
        ("Unknown", False, "n1", TaskStatus.UNKNOWN),
        (None, False, "", TaskStatus.PENDING),
    ],
)
def test_task_status_from_phase_deletion_and_node(
    phase: str | None, deleting: bool, node_name: str, status: TaskStatus
) -> None:
    meta = {"deletionTimestamp": "2024-05-01T10:00:00Z"} if deleting else {}
    raw = pod("p1", meta=meta, spec={"nodeName": node_name}, status={"phase": phase} if phase else {})
    (t,) = load(node(), pod_group(), raw).tasks
    assert t.status is status and t.node_name == node_name


def test_unknown_pod_phase_is_an_error() -> None:
    with pytest.raises(ManifestError, match=r"Pod ns1/p1: status.phase: unknown pod phase 'Runing'"):
        load(pod_group(), pod("p1", status={"phase": "Runing"}))


def test_priority_rules(caplog: pytest.LogCaptureFixture) -> None:
    cluster = load(
        priority_class("high", 1000),
        priority_class("base", 5, globalDefault=True),
        pod_group(),
        pod("explicit", spec={"priority": 7, "priorityClassName": "high"}),
        pod("named", spec={"priorityClassName": "high"}),
        pod("defaulted"),
        pod("missing", spec={"priorityClassName": "nope"}),
        pod("annotated", spec={"priorityClassName": "high"}, meta={"annotations": {"volcano.sh/task-priority": "3"}}),
    )
    assert task(cluster, "explicit").priority == 7
    assert task(cluster, "named").priority == 1000
    assert task(cluster, "defaulted").priority == 5
    assert task(cluster, "missing").priority == 0
    assert task(cluster, "annotated").priority == 3
    assert any("PriorityClass 'nope' does not exist" in w for w in cluster.warnings)


def test_no_priority_class_means_zero() -> None:
    (t,) = load(pod_group(), pod("p1")).tasks
    assert t.priority == 0


def test_preemption_policy_comes_from_the_pod_or_its_class() -> None:
    cluster = load(
        priority_class("never", 10, preemptionPolicy="Never"),
        pod_group(),
        pod("a", spec={"priorityClassName": "never"}),
        pod("b", spec={"priorityClassName": "never", "preemptionPolicy": "PreemptLowerPriority"}),
        pod("c"),
    )
    assert task(cluster, "a").pod.preemption_policy == "Never"
    assert task(cluster, "b").pod.preemption_policy == "PreemptLowerPriority"
    assert task(cluster, "c").pod.preemption_policy == "PreemptLowerPriority"


@pytest.mark.parametrize(
    ("annotations", "labels", "expected"),
    [
        ({}, {}, True),
        ({"volcano.sh/preemptable": "false"}, {"volcano.sh/preemptable": "true"}, False),
        ({}, {"volcano.sh/preemptable": "false"}, False),
        ({"volcano.sh/preemptable": "maybe"}, {}, False),
        ({"volcano.sh/preemptable": "true"}, {}, True),
    ],
)
def test_preemptable_annotation_then_label_then_true(
    annotations: dict[str, str], labels: dict[str, str], expected: bool
) -> None:
    (t,) = load(pod_group(), pod("p1", meta={"annotations": dict(annotations), "labels": labels})).tasks
    assert t.preemptable is expected


def test_role_template_uid_and_creation_time() -> None:
    cluster = load(
        pod_group(),
        pod(
            "a",
            meta={
                "annotations": {"volcano.sh/task-spec": "ps", "volcano.sh/template-uid": "job-ps"},
                "uid": "u-1",
                "creationTimestamp": "2024-05-01T10:00:00Z",
            },
        ),
        pod("b", meta={"labels": {"volcano.sh/task-spec": "worker"}}),
    )
    a, b = task(cluster, "a"), task(cluster, "b")
    assert (a.uid, a.role, a.template, a.creation_timestamp) == ("u-1", "ps", "job-ps", 1714557600.0)
    assert (b.uid, b.role, b.creation_timestamp) == ("ns1-b", "worker", 0.0)
    assert a.job == "ns1/pg1"


def test_pod_fields_for_predicates() -> None:
    spec = {
        "nodeSelector": {"zone": "a"},
        "tolerations": [{"key": "gpu", "operator": "Exists"}],
        "affinity": {"nodeAffinity": {}},
        "containers": [
            {
                "name": "c",
                "image": "img:1",
                "ports": [{"containerPort": 80, "hostPort": 8080}],
                "resources": {"requests": {"cpu": "1"}},
            }
        ],
    }
    (t,) = load(pod_group(), pod("p1", spec=spec)).tasks
    assert t.pod.node_selector == {"zone": "a"}
    assert t.pod.tolerations == ({"key": "gpu", "operator": "Exists"},)
    assert t.pod.affinity == {"nodeAffinity": {}}
    assert t.pod.images == ("img:1",)
    assert t.pod.host_ports == (("TCP", "0.0.0.0", 8080),)


def test_pods_of_other_schedulers_only_occupy_their_node() -> None:
    cluster = load(
        node(),
        pod_group(),
        pod(
            "placed",
            group=None,
            spec={"schedulerName": "default-scheduler", "nodeName": "n1"},
            status={"phase": "Running"},
        ),
        pod("waiting", group=None, spec={"schedulerName": "default-scheduler"}),
        pod("no-name", group="pg1", spec={"schedulerName": None}),
    )
    assert [t.name for t in cluster.tasks] == ["placed"]
    assert cluster.tasks[0].job == ""
    assert any(
        "1 pending pod naming a PodGroup belongs to another scheduler" in w and "is ignored: ns1/no-name" in w
        for w in cluster.warnings
    )
    cache = cluster.to_cache()
    snap = cache.snapshot()
    assert snap.nodes["n1"].idle.milli_cpu == 3000


def test_pod_without_group_gets_one_like_volcanos_podgroup_controller() -> None:
    owner = {"apiVersion": "apps/v1", "kind": "ReplicaSet", "name": "rs", "uid": "rs-uid", "controller": True}
    cluster = load(
        queue("batch"),
        pod("solo", group=None, meta={"uid": "solo-uid", "annotations": {"volcano.sh/preemptable": "false"}}),
        pod(
            "r1",
            group=None,
            meta={"ownerReferences": [owner], "annotations": {"scheduling.volcano.sh/queue-name": "batch"}},
        ),
        pod("r2", group=None, meta={"ownerReferences": [owner]}),
        pod("done", group=None, status={"phase": "Succeeded"}),
    )
    groups = {f"{g.namespace}/{g.name}": g for g in cluster.pod_groups}
    assert set(groups) == {"ns1/podgroup-solo-uid", "ns1/podgroup-rs-uid"}
    solo = groups["ns1/podgroup-solo-uid"]
    assert (solo.min_member, solo.queue, solo.phase) == (1, "default", PodGroupPhase.PENDING)
    assert solo.min_resources is not None and solo.min_resources.milli_cpu == 1000
    assert solo.annotations == {"volcano.sh/preemptable": "false"}
    assert groups["ns1/podgroup-rs-uid"].queue == "batch"
    assert task(cluster, "r2").job == "ns1/podgroup-rs-uid"
    assert task(cluster, "solo").pod.annotations["scheduling.k8s.io/group-name"] == "podgroup-solo-uid"
    assert all(t.name != "done" for t in cluster.tasks)


# ---------------------------------------------------------------------- pod groups, queues, priority classes


def test_pod_group_fields() -> None:
    raw = pod_group(
        minMember=3,
        queue="q1",
        priorityClassName="high",
        minResources={"cpu": "2", "nvidia.com/gpu": "0"},
        minTaskMember={"ps": 1, "worker": 2},
        status={
            "phase": "Running",
            "running": 3,
            "conditions": [
                {
                    "type": "Scheduled",
                    "status": "True",
                    "reason": "tasks in gang are ready to be scheduled",
                    "transitionID": "x",
                    "lastTransitionTime": "2024-05-01T10:00:00Z",
                },
                {"type": "SomethingElse", "status": "True"},
            ],
        },
    )
    raw["metadata"].update(uid="pg-uid", annotations={"a": "b"}, labels={"l": "v"})
    (pg,) = load(queue("q1"), raw).pod_groups
    assert (pg.min_member, pg.queue, pg.priority_class_name, pg.phase) == (3, "q1", "high", PodGroupPhase.RUNNING)
    assert pg.min_resources is not None and pg.min_resources.milli_cpu == 2000
    assert pg.min_resources.scalars["nvidia.com/gpu"] == 0
    assert pg.min_task_member == {"ps": 1, "worker": 2}
    assert pg.running == 3 and pg.uid == "pg-uid" and pg.annotations == {"a": "b"} and pg.labels == {"l": "v"}
    assert [c.reason for c in pg.conditions] == ["tasks in gang are ready to be scheduled"]


def test_pod_group_defaults() -> None:
    raw = pod_group()
    raw["spec"] = {}
    (pg,) = load(raw).pod_groups
    assert (pg.min_member, pg.queue, pg.phase, pg.min_resources) == (0, "default", PodGroupPhase.PENDING, None)


def test_queue_fields_and_zero_entries_are_kept() -> None:
    raw = queue(
        "q1",
        weight=3,
        capability={"cpu": "8", "hugepages-1Gi": "0"},
        deserved={"cpu": "4"},
        guarantee={"resource": {"memory": "1Gi"}},
        reclaimable=False,
        priority=5,
        parent="root",
        metadata={"annotations": {"volcano.sh/hierarchy": "root/eng", "volcano.sh/hierarchy-weights": "1/2"}},
        status={"state": "Closed"},
    )
    (q,) = load(raw).queues
    assert q.weight == 3 and q.capability is not None and q.capability.milli_cpu == 8000
    assert q.capability.scalars == {"hugepages-1Gi": 0}
    assert q.deserved is not None and q.deserved.milli_cpu == 4000
    assert q.guarantee.memory == 2**30
    assert (q.reclaimable, q.priority, q.parent, q.state) == (False, 5, "root", QueueState.CLOSED)
    assert (q.hierarchy, q.hierarchy_weights) == ("root/eng", "1/2")


def test_queue_defaults_and_the_default_and_root_queues_always_exist() -> None:
    (q,) = load(queue("q1")).queues
    # A stored queue is read as it is: an unset reclaimable stays unset (the scheduler takes it as true)
    assert (q.weight, q.capability, q.deserved, q.reclaimable, q.state, q.parent) == (
        1,
        None,
        None,
        None,
        QueueState.OPEN,
        None,
    )
    cache = load(queue("q1")).to_cache()
    assert {x.name for x in cache.queues()} == {"default", "root", "q1"}


def test_priority_class_needs_a_value() -> None:
    raw = priority_class("high", 1)
    del raw["value"]
    with pytest.raises(ManifestError, match="PriorityClass high: value: missing required field"):
        load(raw)


# ---------------------------------------------------------------------- lists, references, errors


def test_list_dumps_are_flattened_and_nested_lists_too(tmp_path: Path) -> None:
    path = tmp_path / "dump.yaml"
    path.write_text(
        "apiVersion: v1\nkind: List\nitems:\n"
        "- {apiVersion: v1, kind: Node, metadata: {name: n1}, status: {allocatable: {cpu: '1', pods: '1'}}}\n"
        "- apiVersion: v1\n  kind: PodList\n  items:\n"
        "  - {apiVersion: v1, kind: Node, metadata: {name: n2}, status: {allocatable: {cpu: '1', pods: '1'}}}\n"
        "---\n"
        "apiVersion: v1\nkind: Node\nmetadata: {name: n3}\nstatus: {allocatable: {cpu: '1', pods: '1'}}\n"
    )
    cluster = load_manifests([path])
    assert [n.name for n in cluster.nodes] == ["n1", "n2", "n3"]


def test_unknown_kinds_are_one_warning_per_kind() -> None:
    cluster = load(
        {"apiVersion": "v1", "kind": "Service", "metadata": {"name": "a"}},
        {"apiVersion": "v1", "kind": "Service", "metadata": {"name": "b"}},
        {"apiVersion": "batch/v1", "kind": "Job", "metadata": {"name": "k8s-job"}},
        {"apiVersion": "apps/v1", "kind": "DaemonSet", "metadata": {"name": "d"}},
    )
    assert cluster.warnings == [
        "ignored 1 object(s) of kind DaemonSet (apps/v1): volcanolib does not read this kind",
        "ignored 1 object(s) of kind Job (batch/v1): volcanolib does not read this kind",
        "ignored 2 object(s) of kind Service (v1): volcanolib does not read this kind",
    ]


def test_dangling_references_are_warnings_and_unschedulable_reasons() -> None:
    cluster = load(pod_group("pg1", queue="nope"), pod("p1"), pod("p2", group="ghost"))
    assert cluster.unschedulable == {
        "ns1/ghost": "PodGroup ns1/ghost does not exist",
        "ns1/pg1": "queue 'nope' of PodGroup ns1/pg1 does not exist",
    }
    assert any("ns1/ghost, which does not exist" in w for w in cluster.warnings)
    assert any("queue 'nope' does not exist" in w for w in cluster.warnings)
    snap = cluster.to_cache().snapshot()
    assert snap.jobs == {} and set(snap.skipped_jobs) == {"ns1/ghost", "ns1/pg1"}


def test_pod_groups_with_fewer_pods_that_can_run_than_min_member_are_a_warning(
    caplog: pytest.LogCaptureFixture,
) -> None:
    caplog.set_level(logging.WARNING, logger="volcanolib")
    cluster = load(
        pod_group("short", minMember=3),
        pod("s1", group="short"),
        pod("s2", group="short", status={"phase": "Failed"}),  # a failed pod does not count, as for gang
        pod_group("whole", minMember=2),
        pod("w1", group="whole"),
        pod("w2", group="whole", status={"phase": "Succeeded"}),
        pod_group("empty", minMember=1),
    )
    expected = (
        "2 PodGroups have fewer pods that can run than minMember and are not scheduled (NotEnoughTasks): "
        "ns1/short (1 of 3), ns1/empty (0 of 1)"
    )
    assert expected in cluster.warnings
    assert expected in caplog.messages
    one = load(pod_group("pg1", minMember=2), pod("p1"))
    assert (
        "1 PodGroup has fewer pods that can run than minMember and is not scheduled (NotEnoughTasks): "
        "ns1/pg1 (1 of 2)" in one.warnings
    )
    assert not any("NotEnoughTasks" in w for w in load(pod_group("pg1", minMember=1), pod("p1")).warnings)


def test_pods_on_unknown_nodes_are_a_warning() -> None:
    cluster = load(pod_group(), pod("p1", spec={"nodeName": "gone"}, status={"phase": "Running"}))
    assert any("node 'gone', which does not exist" in w for w in cluster.warnings)


@pytest.mark.parametrize(
    ("obj", "message"),
    [
        (
            pod("p1", requests={"cpu": "lots"}),
            "scenario.yaml: Pod ns1/p1: spec.containers[0].resources.requests.cpu: invalid quantity 'lots'",
        ),
        (
            pod("p1", requests={"memory": "-1Gi"}),
            "scenario.yaml: Pod ns1/p1: spec.containers[0].resources.requests.memory: negative quantity '-1Gi'",
        ),
        (node(allocatable={"cpu": "1x"}), "scenario.yaml: Node n1: status.allocatable.cpu: invalid quantity '1x'"),
        (queue("q", capability={"cpu": "-2"}), "scenario.yaml: Queue q: spec.capability.cpu: negative quantity '-2'"),
        ({"kind": "Pod", "metadata": {}}, "scenario.yaml: Pod at objects[0]: metadata.name: missing required field"),
        ({"metadata": {"name": "x"}}, "scenario.yaml: object at objects[0]: kind: missing required field: kind"),
        ("just text", "scenario.yaml: object at objects[0]: expected a Kubernetes object (a mapping)"),
        (pod("p1", spec={"containers": "c"}), "scenario.yaml: Pod ns1/p1: spec.containers: expected a list, got 'c'"),
        (pod("p1", spec={"containers": []}), "scenario.yaml: Pod ns1/p1: spec.containers: missing required field"),
        (pod_group(minMember=-1), "scenario.yaml: PodGroup ns1/pg1: spec.minMember: must be at least 0, got -1"),
        (pod_group(minMember="two"), "scenario.yaml: PodGroup ns1/pg1: spec.minMember: expected an integer, got 'two'"),
        (
            pod_group(status={"phase": "Done"}),
            "scenario.yaml: PodGroup ns1/pg1: status.phase: unknown PodGroup phase 'Done'",
        ),
        (queue("q", status={"state": "Half"}), "scenario.yaml: Queue q: status.state: unknown queue state 'Half'"),
        (
            pod("p1", meta={"creationTimestamp": "yesterday"}),
            "scenario.yaml: Pod ns1/p1: metadata.creationTimestamp: expected an RFC 3339 time, got 'yesterday'",
        ),
        # Kubernetes names and other string fields are strings: a number is not written out as one
        (
            {"apiVersion": "v1", "kind": "Node", "metadata": {"name": 123}},
            "scenario.yaml: Node at objects[0]: metadata.name: expected a string, got the number 123 "
            "(quote it to make it a string)",
        ),
        (
            pod("p1", meta={"namespace": 7}),
            "scenario.yaml: Pod p1: metadata.namespace: expected a string, got the number 7",
        ),
        (
            pod("p1", spec={"containers": [{"name": "c"}], "nodeName": 1.5}),
            "scenario.yaml: Pod ns1/p1: spec.nodeName: expected a string, got the number 1.5",
        ),
        (pod_group(queue=3), "scenario.yaml: PodGroup ns1/pg1: spec.queue: expected a string, got the number 3"),
    ],
)
def test_bad_input_names_file_object_and_field(obj: Any, message: str) -> None:
    with pytest.raises(ManifestError) as info:
        load(obj)
    assert str(info.value).startswith(message), str(info.value)


def test_bad_quantity_is_a_quantity_error() -> None:
    with pytest.raises(QuantityError):
        load(pod_group(), pod("p1", requests={"cpu": "1.2.3"}))


def test_duplicate_objects_name_both_places(tmp_path: Path) -> None:
    first, second = tmp_path / "a.yaml", tmp_path / "b.yaml"
    first.write_text("apiVersion: v1\nkind: Node\nmetadata: {name: n1}\nstatus: {allocatable: {cpu: '1'}}\n")
    second.write_text("apiVersion: v1\nkind: List\nitems:\n- {apiVersion: v1, kind: Node, metadata: {name: n1}}\n")
    with pytest.raises(ManifestError) as info:
        load_manifests([first, second])
    assert str(info.value) == f"{second}: Node n1: duplicate object: already defined at {first}"


def test_duplicate_pod_uids_are_an_error() -> None:
    with pytest.raises(ManifestError, match=r"Pod ns1/b: metadata.uid: duplicate uid 'u1': Pod ns1/a has it too"):
        load(pod_group(), pod("a", meta={"uid": "u1"}), pod("b", meta={"uid": "u1"}))


def test_same_name_in_two_namespaces_is_not_a_duplicate() -> None:
    cluster = load(pod_group(ns="a"), pod_group(ns="b"))
    assert len(cluster.pod_groups) == 2


def test_to_cache_keeps_node_order_and_builds_jobs() -> None:
    cluster = load(node("b"), node("a"), node("c"), pod_group(status={"phase": "Inqueue"}), pod("p1"), pod("p2"))
    snap = cluster.to_cache().snapshot()
    assert [n.name for n in snap.node_list] == ["b", "a", "c"]
    job = snap.jobs["ns1/pg1"]
    assert sorted(t.name for t in job.tasks.values()) == ["p1", "p2"]
    assert cluster.newest_timestamp == 0.0


def test_pods_asking_alike_share_one_request_object() -> None:
    cluster = load(
        pod_group(),
        pod("a", requests={"cpu": "1", "memory": "1Gi"}),
        pod("b", requests={"cpu": "1000m", "memory": "1024Mi"}),
        pod("c", requests={"cpu": "2", "memory": "1Gi"}),
    )
    a, b, c = (task(cluster, name) for name in "abc")
    assert a.resreq is b.resreq and a.resreq.milli_cpu == 1000
    assert c.resreq is not a.resreq and c.resreq.milli_cpu == 2000


def _with_token(name: str, token: str, *, extra_volume: str = "") -> dict[str, Any]:
    """A pod as a real API server stores it: its ServiceAccount token volume (a per-pod name) mounted."""
    projected = {"sources": [{"serviceAccountToken": {"path": "token"}}]}
    volumes: list[dict[str, Any]] = [{"name": token, "projected": projected}]
    mounts = [{"name": token, "mountPath": "/var/run/secrets/kubernetes.io/serviceaccount", "readOnly": True}]
    if extra_volume:
        volumes.append({"name": extra_volume, "emptyDir": {}})
        mounts.append({"name": extra_volume, "mountPath": "/data"})
    container = {"name": "c", "resources": {"requests": {"cpu": "1"}}, "volumeMounts": mounts}
    return pod(name, spec={"containers": [container], "volumes": volumes, "nodeName": ""})


def test_pods_differing_only_in_their_injected_token_volume_share_a_template() -> None:
    cluster = load(
        pod_group(),
        _with_token("a", "kube-api-access-x7k2p"),
        _with_token("b", "kube-api-access-9qzt4"),
        _with_token("c", "kube-api-access-m2v8d", extra_volume="scratch"),
    )
    a, b, c = task(cluster, "a"), task(cluster, "b"), task(cluster, "c")
    assert a.template == b.template and a.template.startswith("ns1/pg1/~")
    assert c.template != a.template  # a volume of the pod's own still tells it apart
