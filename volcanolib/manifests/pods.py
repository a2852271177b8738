"""Pods -> tasks: requests, status, priority, and groups for pods without one."""

from __future__ import annotations

from collections.abc import Callable, Collection, Hashable, Mapping
from typing import Any, Final

import attrs

from volcanolib.api.hypernode import NetworkTopology
from volcanolib.api.job import ConditionType, PodGroup, PodGroupCondition, PodGroupPhase
from volcanolib.api.resource import PODS, Resource
from volcanolib.api.task import (
    GROUP_NAME_ANNOTATION,
    PREEMPTABLE_KEY,
    TASK_SPEC_KEY,
    TEMPLATE_UID_KEY,
    Pod,
    TaskInfo,
    TaskStatus,
    content_template,
    parse_bool,
    task_priority,
)
from volcanolib.manifests import fields as f
from volcanolib.manifests.fields import Ref
from volcanolib.manifests.owners import group_name, owner_group

__all__ = ["PodReader", "PriorityClassInfo", "pod_request", "read_pod_group"]

DEFAULT_PREEMPTION_POLICY: Final = "PreemptLowerPriority"
_PHASES: Final = ("Pending", "Running", "Succeeded", "Failed", "Unknown")
_S = TaskStatus


@attrs.frozen
class PriorityClassInfo:
    """A PriorityClass: its value, whether it is the cluster default, and its preemption policy."""

    name: str
    value: int
    global_default: bool = False
    preemption_policy: str = DEFAULT_PREEMPTION_POLICY


def _container_request(container: Any, ref: Ref, field: str) -> Resource:
    container = f.mapping(container, ref, field)
    res_field = f"{field}.resources"
    spec = f.mapping(container.get("resources"), ref, res_field)
    requests = f.mapping(spec.get("requests"), ref, f"{res_field}.requests")
    request = f.resources(requests, ref, f"{res_field}.requests")
    limits = spec.get("limits")
    if limits:
        # The API server defaults a missing request to the limit.
        limits = f.mapping(limits, ref, f"{res_field}.limits")
        missing = {name: qty for name, qty in limits.items() if name not in requests}
        if missing:
            request.add(f.resources(missing, ref, f"{res_field}.limits"))
    return request


def pod_request(spec: Mapping[str, Any], ref: Ref, field: str = "spec") -> Resource:
    """A pod's effective request, as the scheduler counts it.

    The sum of the containers' requests (a missing request defaults to the
    limit); restartable (sidecar) init containers are added to it; every
    other init container raises each dimension to its own request plus the
    sidecars started before it; then the pod overhead and ``pods: 1``.

    :raises ManifestError: naming the field of a bad quantity, or when the
        pod has no containers.
    """
    containers = f.seq(spec.get("containers"), ref, f"{field}.containers")
    if not containers:
        ref.fail("missing required field: a pod needs at least one container", f"{field}.containers")
    total = Resource()
    for i, container in enumerate(containers):
        total.add(_container_request(container, ref, f"{field}.containers[{i}]"))
    init_containers = spec.get("initContainers")
    if init_containers:
        sidecars = Resource()
        init_max = Resource()
        for i, container in enumerate(f.seq(init_containers, ref, f"{field}.initContainers")):
            cfield = f"{field}.initContainers[{i}]"
            request = _container_request(container, ref, cfield)
            if container.get("restartPolicy") == "Always":
                total.add(request)
                sidecars.add(request)
                init_max.set_max(sidecars)
            else:
                init_max.set_max(request.add(sidecars))
        total.set_max(init_max)
    overhead = spec.get("overhead")
    if overhead:
        total.add(f.resources(overhead, ref, f"{field}.overhead"))
    total.scalars[PODS] = 1
    return total


def task_status(phase: str, deleting: bool, node_name: str) -> TaskStatus:
    """The task status of a pod (Volcano's table: phase, deletion, placement)."""
    if phase == "Running":
        return _S.RELEASING if deleting else _S.RUNNING
    if phase == "Pending":
        if deleting:
            return _S.RELEASING
        return _S.BOUND if node_name else _S.PENDING
    if phase == "Succeeded":
        return _S.SUCCEEDED
    if phase == "Failed":
        return _S.FAILED
    return _S.UNKNOWN


def _host_ports(containers: list[Any], ref: Ref) -> tuple[tuple[str, str, int], ...]:
    ports: list[tuple[str, str, int]] = []
    for i, container in enumerate(containers):
        if not isinstance(container, dict):
            continue
        for j, port in enumerate(f.seq(container.get("ports"), ref, f"spec.containers[{i}].ports")):
            if isinstance(port, dict) and port.get("hostPort"):
                host_port = f.integer(port["hostPort"], ref, f"spec.containers[{i}].ports[{j}].hostPort", 0)
                ports.append((str(port.get("protocol") or "TCP"), str(port.get("hostIP") or "0.0.0.0"), host_port))
    return tuple(ports)


class PodReader:
    """Turns Pod manifests into tasks.

    :param scheduler_name: the scheduler's name, or several names; pods
        with another ``spec.schedulerName`` are not scheduled, they only
        occupy their node, if they have one.
    :param priority_classes: PriorityClasses by name.
    :param default_queue: the queue of groups made for pods without one.
    :param owner_annotations: the merged annotations of a pod's owners, given
        its namespace and metadata (read for the groups made for pods without one).
    """

    def __init__(
        self,
        scheduler_name: str | Collection[str],
        priority_classes: Mapping[str, PriorityClassInfo],
        *,
        default_queue: str = "default",
        owner_annotations: Callable[[str, Mapping[str, Any]], Mapping[str, str]] | None = None,
    ) -> None:
        self.scheduler_names = frozenset((scheduler_name,) if isinstance(scheduler_name, str) else scheduler_name)
        self.priority_classes = priority_classes
        self.global_default = next((pc for pc in priority_classes.values() if pc.global_default), None)
        self.default_queue = default_queue
        self.owner_annotations = owner_annotations
        #: PodGroups made for pods of this scheduler that name none, by ``namespace/name``.
        self.generated: dict[str, PodGroup] = {}
        #: Missing PriorityClass name -> pods naming it.
        self.missing_classes: dict[str, int] = {}
        #: Pending pods of other schedulers that name a PodGroup (probably a missing schedulerName).
        self.foreign_grouped: list[str] = []
        #: Pods of other schedulers occupying a node.
        self.foreign_placed = 0
        # Equal requests share one object (a task's request never changes): most pods ask alike.
        self._requests: dict[Hashable, Resource] = {}

    def read(self, obj: Mapping[str, Any], ref: Ref) -> TaskInfo | None:
        """Return the task for one Pod, or ``None`` when the pod plays no part.

        A pod of another scheduler plays a part only while it occupies a
        node (it is then a task of no job); a finished pod without a group
        plays none.

        :raises ManifestError: naming the field at fault.
        """
        meta = f.mapping(obj.get("metadata"), ref, "metadata")
        spec = f.mapping(obj.get("spec"), ref, "spec")
        status = f.mapping(obj.get("status"), ref, "status")
        name, namespace = ref.name, ref.namespace
        annotations = f.string_map(meta.get("annotations"), ref, "metadata.annotations")
        labels = f.string_map(meta.get("labels"), ref, "metadata.labels")
        node_name = f.string(spec.get("nodeName"), ref, "spec.nodeName")
        phase = f.string(status.get("phase"), ref, "status.phase") or "Pending"
        if phase not in _PHASES:
            ref.fail(f"unknown pod phase {phase!r} (expected one of {', '.join(_PHASES)})", "status.phase")
        deleting = meta.get("deletionTimestamp") is not None
        status_ = task_status(phase, deleting, node_name)
        scheduler = f.string(spec.get("schedulerName"), ref, "spec.schedulerName") or "default-scheduler"
        ours = scheduler in self.scheduler_names
        group = annotations.get(GROUP_NAME_ANNOTATION, "")
        if not ours:
            if not node_name or status_ & (_S.SUCCEEDED | _S.FAILED):
                if group and status_ is _S.PENDING:
                    self.foreign_grouped.append(f"{namespace}/{name} (schedulerName {scheduler!r})")
                return None
            self.foreign_placed += 1
        elif not group and status_ & (_S.SUCCEEDED | _S.FAILED):
            return None
        request = pod_request(spec, ref)
        request = self._requests.setdefault(request.key(), request)
        uid = f.string(meta.get("uid"), ref, "metadata.uid") or f"{namespace}-{name}"

        class_name = f.string(spec.get("priorityClassName"), ref, "spec.priorityClassName")
        pclass = self.priority_classes.get(class_name) if class_name else self.global_default
        if spec.get("priority") is not None:
            priority = f.integer(spec.get("priority"), ref, "spec.priority", 0)
        else:
            if class_name and pclass is None:
                self.missing_classes[class_name] = self.missing_classes.get(class_name, 0) + 1
            priority = pclass.value if pclass is not None else 0
        policy = f.string(spec.get("preemptionPolicy"), ref, "spec.preemptionPolicy") or (
            pclass.preemption_policy if pclass is not None else DEFAULT_PREEMPTION_POLICY
        )

        if ours and not group:
            created = f.timestamp(meta.get("creationTimestamp"), ref, "metadata.creationTimestamp")
            group = self._generate_group(obj, uid, request, created, ref)
            annotations[GROUP_NAME_ANNOTATION] = group
        job = f"{namespace}/{group}" if ours and group else ""

        preemptable = _preemptable(annotations, labels)
        role = annotations.get(TASK_SPEC_KEY) or labels.get(TASK_SPEC_KEY, "")
        containers = f.seq(spec.get("containers"), ref, "spec.containers")
        pod = Pod(
            name,
            namespace,
            uid=uid,
            labels=labels,
            annotations=annotations,
            node_selector=f.string_map(spec.get("nodeSelector"), ref, "spec.nodeSelector"),
            affinity=f.mapping(spec.get("affinity"), ref, "spec.affinity") or None,
            tolerations=tuple(f.seq(spec.get("tolerations"), ref, "spec.tolerations")),
            host_ports=_host_ports(containers, ref),
            topology_spread_constraints=tuple(
                f.seq(spec.get("topologySpreadConstraints"), ref, "spec.topologySpreadConstraints")
            ),
            images=tuple(str(c.get("image") or "") for c in containers if isinstance(c, dict) and c.get("image")),
            priority_class_name=class_name,
            preemption_policy=policy,
            scheduler_name=scheduler,
            nominated_node_name=f.string(status.get("nominatedNodeName"), ref, "status.nominatedNodeName"),
            manifest=obj,
        )
        return TaskInfo(
            uid=uid,
            name=name,
            namespace=namespace,
            job=job,
            resreq=request,
            status=status_,
            node_name=node_name,
            priority=task_priority(pod, priority),
            preemptable=preemptable,
            role=role,
            template=annotations.get(TEMPLATE_UID_KEY, "") or _template(job, role, labels, annotations, spec),
            creation_timestamp=f.timestamp(meta.get("creationTimestamp"), ref, "metadata.creationTimestamp"),
            pod=pod,
        )

    def _generate_group(
        self, obj: Mapping[str, Any], uid: str, request: Resource, creation_timestamp: float, ref: Ref
    ) -> str:
        """The group Volcano's PodGroup controller makes for the pod's owner (:mod:`volcanolib.manifests.owners`)."""
        meta = f.mapping(obj.get("metadata"), ref, "metadata")
        for i, owner in enumerate(f.seq(meta.get("ownerReferences"), ref, "metadata.ownerReferences")):
            f.mapping(owner, ref, f"metadata.ownerReferences[{i}]")
        name = group_name(meta, uid)
        key = f"{ref.namespace}/{name}"
        if key not in self.generated:
            owners = self.owner_annotations(ref.namespace, meta) if self.owner_annotations is not None else None
            group = owner_group(obj, uid, owner_annotations=owners)
            min_resources = request.clone()
            if group.min_member != 1:
                min_resources = min_resources.multi(group.min_member)
            self.generated[key] = PodGroup(
                name,
                ref.namespace,
                min_member=group.min_member,
                queue=group.queue or self.default_queue,
                priority_class_name=group.priority_class_name,
                min_resources=min_resources,
                phase=PodGroupPhase.PENDING,
                annotations=dict(group.annotations),
                labels=dict(group.labels),
                creation_timestamp=creation_timestamp,
                uid=name,
                network_topology=_topology(group.network_topology),
            )
        return name


def _topology(value: tuple[str, int | None] | None) -> NetworkTopology | None:
    """The model of a group's network topology (the highest tier defaults to 1, as for PodGroups)."""
    if value is None:
        return None
    mode, tier = value
    return NetworkTopology(mode, 1 if tier is None else tier)


def _preemptable(annotations: Mapping[str, str], labels: Mapping[str, str]) -> bool:
    """Annotation, then label, ``volcano.sh/preemptable``; a value that is not a boolean means false."""
    for source in (annotations, labels):
        raw = source.get(PREEMPTABLE_KEY)
        if raw is not None:
            return bool(parse_bool(raw))
    return True


def _template(job: str, role: str, labels: Mapping[str, str], annotations: Mapping[str, str], spec: Any) -> str:
    """A template name shared by the pods of one job that differ only in name and node.

    A task role names the template, as Volcano's job controller makes them;
    other pods of a group share one when their labels, annotations and spec
    (but ``nodeName``) are the same, so plugins parse their constraints once.
    """
    if role or not job:
        return ""
    return content_template(job, (labels, annotations, _shared_spec(spec)))


# The API server's ServiceAccount admission adds to each pod a projected
# volume of its own (``kube-api-access-<random>``) and mounts it in every
# container: per pod, and nothing scheduling reads.
_TOKEN_VOLUME_PREFIX = "kube-api-access-"


def _shared_spec(spec: Any) -> Any:
    """``spec`` without what differs between otherwise equal pods: ``nodeName`` and the injected token volume."""
    if not isinstance(spec, Mapping):
        return spec
    volumes = spec.get("volumes")
    # The common case (files, dumps without a ServiceAccount): no copy unless the pod is placed.
    if not isinstance(volumes, list) or not any(_token_volume(v) for v in volumes):
        return {k: v for k, v in spec.items() if k != "nodeName"} if "nodeName" in spec else spec
    content = {k: v for k, v in spec.items() if k != "nodeName"}
    content["volumes"] = [v for v in volumes if not _token_volume(v)]
    for field in ("initContainers", "containers"):
        containers = content.get(field)
        if isinstance(containers, list):
            content[field] = [_without_token_mount(c) for c in containers]
    return content


def _token_volume(volume: Any) -> bool:
    return isinstance(volume, Mapping) and str(volume.get("name", "")).startswith(_TOKEN_VOLUME_PREFIX)


def _without_token_mount(container: Any) -> Any:
    mounts = container.get("volumeMounts") if isinstance(container, Mapping) else None
    if not isinstance(mounts, list):
        return container
    kept = [m for m in mounts if not _token_volume(m)]
    return {**container, "volumeMounts": kept} if len(kept) != len(mounts) else container


def read_pod_group(obj: Mapping[str, Any], ref: Ref, default_queue: str) -> PodGroup:
    """A PodGroup from its manifest (``scheduling.volcano.sh/v1beta1``), its queue defaulting to ``default_queue``.

    :raises ManifestError: naming the object and field of a bad value.

    .. versionadded:: 0.2
    """
    meta = f.mapping(obj.get("metadata"), ref, "metadata")
    spec = f.mapping(obj.get("spec"), ref, "spec")
    status = f.mapping(obj.get("status"), ref, "status")
    phase_text = f.string(status.get("phase"), ref, "status.phase") or "Pending"
    try:
        phase = PodGroupPhase(phase_text)
    except ValueError:
        names = ", ".join(p.value for p in PodGroupPhase)
        ref.fail(f"unknown PodGroup phase {phase_text!r} (expected one of {names})", "status.phase")
    min_task_member = {
        str(role): f.integer(n, ref, f"spec.minTaskMember.{role}", 0, minimum=0)
        for role, n in f.mapping(spec.get("minTaskMember"), ref, "spec.minTaskMember").items()
    }
    conditions = []
    for i, raw in enumerate(f.seq(status.get("conditions"), ref, "status.conditions")):
        field = f"status.conditions[{i}]"
        cond = f.mapping(raw, ref, field)
        try:
            ctype = ConditionType(f.string(cond.get("type"), ref, f"{field}.type"))
        except ValueError:
            continue  # a condition type the scheduler does not write
        conditions.append(
            PodGroupCondition(
                ctype,
                status=f.string(cond.get("status"), ref, f"{field}.status", "True"),
                reason=f.string(cond.get("reason"), ref, f"{field}.reason"),
                message=f.string(cond.get("message"), ref, f"{field}.message"),
                transition_id=f.string(cond.get("transitionID"), ref, f"{field}.transitionID"),
                last_transition_time=f.timestamp(cond.get("lastTransitionTime"), ref, f"{field}.lastTransitionTime"),
            )
        )
    return PodGroup(
        ref.name,
        ref.namespace,
        min_member=f.integer(spec.get("minMember"), ref, "spec.minMember", 0, minimum=0),
        queue=f.string(spec.get("queue"), ref, "spec.queue") or default_queue,
        priority_class_name=f.string(spec.get("priorityClassName"), ref, "spec.priorityClassName"),
        min_resources=f.optional_resources(spec.get("minResources"), ref, "spec.minResources"),
        min_task_member=min_task_member,
        phase=phase,
        conditions=conditions,
        running=f.integer(status.get("running"), ref, "status.running", 0, minimum=0),
        succeeded=f.integer(status.get("succeeded"), ref, "status.succeeded", 0, minimum=0),
        failed=f.integer(status.get("failed"), ref, "status.failed", 0, minimum=0),
        annotations=f.string_map(meta.get("annotations"), ref, "metadata.annotations"),
        labels=f.string_map(meta.get("labels"), ref, "metadata.labels"),
        creation_timestamp=f.timestamp(meta.get("creationTimestamp"), ref, "metadata.creationTimestamp"),
        uid=f.string(meta.get("uid"), ref, "metadata.uid"),
        network_topology=_network_topology(spec.get("networkTopology"), ref),
    )


def _network_topology(value: Any, ref: Ref) -> NetworkTopology | None:
    if value is None:
        return None
    raw = f.mapping(value, ref, "spec.networkTopology")
    mode = f.string(raw.get("mode"), ref, "spec.networkTopology.mode") or "hard"
    if mode not in ("hard", "soft"):
        ref.fail(f"unknown network topology mode {mode!r} (expected hard or soft)", "spec.networkTopology.mode")
    tier = f.integer(raw.get("highestTierAllowed"), ref, "spec.networkTopology.highestTierAllowed", 1, minimum=0)
    return NetworkTopology(mode, tier)
