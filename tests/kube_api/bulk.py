"""Object builders and a fast loader of large clusters into the stand-in (benchmarks, scale tests)."""

from __future__ import annotations

from collections.abc import Iterator
from dataclasses import dataclass
from typing import TYPE_CHECKING, Any

if TYPE_CHECKING:
    from .server import KubeApiServer

GROUP_ANNOTATION = "scheduling.k8s.io/group-name"


def make_node(
    name: str,
    cpu: str = "8",
    memory: str = "32Gi",
    pods: str = "110",
    labels: dict[str, str] | None = None,
    ready: bool = True,
    unschedulable: bool = False,
    taints: list[dict[str, str]] | None = None,
) -> dict[str, Any]:
    """A Node with the given allocatable resources and a Ready condition."""
    resources = {"cpu": cpu, "memory": memory, "pods": pods}
    spec: dict[str, Any] = {}
    if unschedulable:
        spec["unschedulable"] = True
    if taints:
        spec["taints"] = taints
    return {
        "apiVersion": "v1",
        "kind": "Node",
        "metadata": {"name": name, "labels": {"kubernetes.io/hostname": name, **(labels or {})}},
        "spec": spec,
        "status": {
            "capacity": dict(resources),
            "allocatable": resources,
            "conditions": [{"type": "Ready", "status": "True" if ready else "False", "reason": "KubeletReady"}],
        },
    }


def make_pod(
    name: str,
    namespace: str = "default",
    cpu: str = "1",
    memory: str = "1Gi",
    scheduler_name: str = "volcano",
    group: str | None = None,
    node_name: str | None = None,
    phase: str | None = None,
    priority_class: str | None = None,
    labels: dict[str, str] | None = None,
) -> dict[str, Any]:
    """A one-container Pod requesting ``cpu`` and ``memory``, in PodGroup ``group`` when given,
    bound to ``node_name`` when given (phase Running unless ``phase`` says otherwise)."""
    meta: dict[str, Any] = {"name": name, "namespace": namespace}
    if labels:
        meta["labels"] = dict(labels)
    if group:
        meta["annotations"] = {GROUP_ANNOTATION: group}
    spec: dict[str, Any] = {
        "schedulerName": scheduler_name,
        "containers": [{"name": "main", "image": "busybox", "resources": {"requests": {"cpu": cpu, "memory": memory}}}],
    }
    if priority_class:
        spec["priorityClassName"] = priority_class
    status: dict[str, Any] = {"phase": phase or "Pending"}
    if node_name:
        spec["nodeName"] = node_name
        status["phase"] = phase or "Running"
        if status["phase"] == "Running":
            status["conditions"] = [{"type": "Ready", "status": "True"}]
    return {"apiVersion": "v1", "kind": "Pod", "metadata": meta, "spec": spec, "status": status}


def make_podgroup(
    name: str, namespace: str = "default", min_member: int = 1, queue: str = "default", phase: str = "Pending"
) -> dict[str, Any]:
    """A ``scheduling.volcano.sh/v1beta1`` PodGroup."""
    return {
        "apiVersion": "scheduling.volcano.sh/v1beta1",
        "kind": "PodGroup",
        "metadata": {"name": name, "namespace": namespace},
        "spec": {"minMember": min_member, "queue": queue},
        "status": {"phase": phase},
    }


def make_queue(name: str, weight: int = 1, parent: str | None = None, reclaimable: bool = True) -> dict[str, Any]:
    """A ``scheduling.volcano.sh/v1beta1`` Queue, state Open."""
    spec: dict[str, Any] = {"weight": weight, "reclaimable": reclaimable}
    if parent:
        spec["parent"] = parent
    return {
        "apiVersion": "scheduling.volcano.sh/v1beta1",
        "kind": "Queue",
        "metadata": {"name": name},
        "spec": spec,
        "status": {"state": "Open"},
    }


@dataclass(frozen=True)
class LoadedCluster:
    """What :func:`load_cluster` created."""

    nodes: int
    running_pods: int
    pending_pods: int
    podgroups: int
    resource_version: int


def cluster_objects(
    nodes: int,
    running_pods: int = 0,
    pending_pods: int = 0,
    *,
    group_size: int = 1,
    namespace: str = "default",
    scheduler_name: str = "volcano",
    queue: str = "default",
    node_cpu: str = "32",
    node_memory: str = "128Gi",
    pod_cpu: str = "100m",
    pod_memory: str = "128Mi",
) -> list[tuple[str, Iterator[dict[str, Any]]]]:
    """The objects of a synthetic cluster, as ``(resource, objects)`` in creation order: the
    queues ``root`` and ``queue``; ``nodes`` Ready nodes ``node-00000``...; one PodGroup
    (``minMember = group_size``) per ``group_size`` consecutive pods; ``running_pods`` pods
    spread round-robin over the nodes (phase Running), then ``pending_pods`` unbound pods.
    """
    if nodes <= 0 and running_pods:
        raise ValueError("running pods need at least one node")
    width = max(5, len(str(max(nodes, running_pods + pending_pods))))
    total = running_pods + pending_pods
    groups = (total + group_size - 1) // group_size if total else 0
    node_names = [f"node-{i:0{width}d}" for i in range(nodes)]

    def queues() -> Iterator[dict[str, Any]]:
        yield make_queue("root")
        if queue != "root":
            yield make_queue(queue)

    def podgroups() -> Iterator[dict[str, Any]]:
        for g in range(groups):
            running = (g + 1) * group_size <= running_pods
            yield make_podgroup(
                f"pg-{g:0{width}d}", namespace, group_size, queue, phase="Running" if running else "Pending"
            )

    def pods() -> Iterator[dict[str, Any]]:
        for i in range(total):
            yield make_pod(
                f"pod-{i:0{width}d}",
                namespace,
                cpu=pod_cpu,
                memory=pod_memory,
                scheduler_name=scheduler_name,
                group=f"pg-{i // group_size:0{width}d}",
                node_name=node_names[i % nodes] if i < running_pods else None,
            )

    return [
        ("queues", queues()),
        ("nodes", (make_node(n, cpu=node_cpu, memory=node_memory) for n in node_names)),
        ("podgroups", podgroups()),
        ("pods", pods()),
    ]


def load_cluster(
    server: KubeApiServer, nodes: int, running_pods: int = 0, pending_pods: int = 0, **options: Any
) -> LoadedCluster:
    """Load the cluster of :func:`cluster_objects` into the server without HTTP.

    Every object gets its resourceVersion, UID and ``ADDED`` event as if created through
    the API (a test checks that both ways give the same objects); 5,000 nodes and 50,000
    pods load in a few seconds.

    :param options: the keyword options of :func:`cluster_objects`.
    """
    counts = {}
    for resource, objs in cluster_objects(nodes, running_pods, pending_pods, **options):
        counts[resource] = server.create_many(resource, objs)
    return LoadedCluster(nodes, running_pods, pending_pods, counts["podgroups"], server.resource_version)
