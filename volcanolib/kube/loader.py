"""Kubernetes manifests -> the volcanolib model.

:class:`ManifestLoader` reads Nodes, Pods, PodGroups, Queues,
PriorityClasses, HyperNodes, Volcano Jobs (expanded as Volcano's job controller would,
see :mod:`volcanolib.kube.jobs`) and Deployments, ReplicaSets and StatefulSets
(expanded into pods as Kubernetes' controllers would, see
:mod:`volcanolib.manifests.workloads`; pods without a PodGroup get their
owner's, see :mod:`volcanolib.manifests.owners`), as ``kubectl get -o yaml`` or ``-o json``
prints them, single objects, ``kind: List`` dumps or multi-document files,
and builds a :class:`Cluster`, ready to feed an
:class:`~volcanolib.cache.memory.InMemoryCache`::

    loader = ManifestLoader(scheduler_name="volcano")
    loader.add_file("cluster.yaml")
    cluster = loader.load()
    cache = cluster.to_cache()

Bad input (a missing required field, a bad quantity, the same object twice)
raises :class:`~volcanolib.errors.ManifestError` naming the file, the object
and the field. A dangling reference (a pod naming a PodGroup that does not
exist, a PodGroup naming a missing queue) and an unknown kind are warnings:
the job is then not scheduled and :attr:`Cluster.unschedulable` says why.
"""

from __future__ import annotations

import logging
import re
from collections.abc import Iterable, Mapping, Sequence
from pathlib import Path
from typing import Any, Final

import attrs

from volcanolib._gc import gc_paused
from volcanolib.api.hypernode import HyperNode, HyperNodeMember, LabelRequirement, MemberType
from volcanolib.api.job import PodGroup
from volcanolib.api.node import Node, NodeInfo, Taint
from volcanolib.api.queue import QueueInfo, QueueState
from volcanolib.api.resource import PODS
from volcanolib.api.task import VALID_STATUSES, TaskInfo, in_statuses
from volcanolib.cache.memory import InMemoryCache
from volcanolib.errors import ManifestError
from volcanolib.kube.jobs import expand_job
from volcanolib.manifests import fields as f
from volcanolib.manifests.admission import QueueFacts, validate_queue
from volcanolib.manifests.documents import parse_documents, read_documents, source_name
from volcanolib.manifests.fields import Ref
from volcanolib.manifests.keys import HIERARCHY_KEY, HIERARCHY_WEIGHTS_KEY
from volcanolib.manifests.pods import DEFAULT_PREEMPTION_POLICY, PodReader, PriorityClassInfo, read_pod_group
from volcanolib.manifests.workloads import WORKLOAD_GROUPS, WORKLOAD_KINDS, Workloads

__all__ = ["Cluster", "ManifestLoader", "PriorityClassInfo", "cluster_queue_facts", "load_manifests", "require_objects"]

log = logging.getLogger("volcanolib.kube")


# kind -> (API groups it is read from, cluster scoped); "" is the core group.
_KINDS: Final[Mapping[str, tuple[frozenset[str], bool]]] = {
    "Node": (frozenset({""}), True),
    "Pod": (frozenset({""}), False),
    "PriorityClass": (frozenset({"scheduling.k8s.io"}), True),
    "Queue": (frozenset({"scheduling.volcano.sh"}), True),
    "PodGroup": (frozenset({"scheduling.volcano.sh"}), False),
    "Job": (frozenset({"batch.volcano.sh"}), False),
    "HyperNode": (frozenset({"topology.volcano.sh"}), True),
    # expanded into pods as their Kubernetes controllers would (volcanolib.manifests.workloads)
    "Deployment": (WORKLOAD_GROUPS, False),
    "ReplicaSet": (WORKLOAD_GROUPS, False),
    "StatefulSet": (WORKLOAD_GROUPS, False),
}
_NODE_READY: Final = "Ready"


@attrs.define(eq=False)
class Cluster:
    """The model objects a set of manifests describes, in the order they were given."""

    nodes: list[NodeInfo] = attrs.field(factory=list)
    tasks: list[TaskInfo] = attrs.field(factory=list)
    pod_groups: list[PodGroup] = attrs.field(factory=list)
    queues: list[QueueInfo] = attrs.field(factory=list)
    priority_classes: list[PriorityClassInfo] = attrs.field(factory=list)
    #: HyperNodes (``topology.volcano.sh``), the network topology.
    hyper_nodes: list[HyperNode] = attrs.field(factory=list)
    #: What the loader found questionable (each also logged as a warning).
    warnings: list[str] = attrs.field(factory=list)
    #: Job (``namespace/podgroup``) -> why it cannot be scheduled (a missing queue or PodGroup).
    unschedulable: dict[str, str] = attrs.field(factory=dict)
    #: The newest ``creationTimestamp`` among the objects (seconds since the epoch; 0 when none).
    newest_timestamp: float = 0.0
    #: The pods made for Deployments, ReplicaSets and StatefulSets, by ``(namespace, name)``,
    #: with where their workload was read.
    generated: dict[tuple[str, str], tuple[dict[str, Any], Ref]] = attrs.field(factory=dict)

    def to_cache(self, cache: InMemoryCache | None = None, *, default_queue: str = "default") -> InMemoryCache:
        """Feed copies of every object to a cache (a new :class:`InMemoryCache` by default) and return it.

        Nodes keep their order, which is the order sessions see them in. The
        cache changes its own copies as it schedules, so the cluster stays as
        loaded and can feed any number of caches.
        """
        cache = cache if cache is not None else InMemoryCache(default_queue=default_queue)
        with gc_paused():
            self._feed(cache)
        return cache

    def _feed(self, cache: InMemoryCache) -> None:
        for pc in self.priority_classes:
            cache.add_priority_class(pc.name, pc.value, global_default=pc.global_default)
        for queue in self.queues:
            cache.add_queue(queue.clone())
        for hyper_node in self.hyper_nodes:
            cache.add_hyper_node(hyper_node)
        for node in self.nodes:
            cache.add_node(node)
        for pg in self.pod_groups:
            cache.add_pod_group(pg.clone())
        for task in self.tasks:
            cache.add_task(task.clone())


def _api_group(api_version: str) -> str:
    return api_version.rpartition("/")[0] if "/" in api_version else ""


def _is_list(obj: Mapping[str, Any], kind: str) -> bool:
    """Whether an object of ``kind`` is a list of objects (``kind: List``, or ``PodList`` and alike with ``items``)."""
    return kind == "List" or (kind.endswith("List") and "items" in obj)


def _holds_objects(doc: Any) -> bool:
    """Whether a document holds an object: anything but a list of objects whose items hold none."""
    if not isinstance(doc, dict) or not isinstance(doc.get("kind"), str) or not _is_list(doc, doc["kind"]):
        return True
    items = doc.get("items")
    if items is None:
        return False
    return not isinstance(items, list) or any(_holds_objects(item) for item in items)


def require_objects(docs: Sequence[Any], *, source: str) -> None:
    """Refuse a file of manifests that holds no object, as ``kubectl apply`` does.

    A file without a document (empty, only comments) and a file whose
    documents are lists without items (``kind: List`` with ``items: []`` or
    ``items: null``, what ``kubectl get -o yaml`` prints for an empty
    namespace) hold no object.

    :raises ManifestError: "no objects passed", naming the file.
    """
    if not docs:
        raise ManifestError("no objects passed: the file holds no document", source=source)
    if not any(_holds_objects(doc) for doc in docs):
        raise ManifestError("no objects passed: the file's List has no items", source=source)


class ManifestLoader:
    """Collects manifests, then builds the model in one pass (:meth:`load`).

    Objects may be added in any order: a Pod may come before the
    PriorityClass it names. Adding checks only the envelope (``kind``,
    ``metadata.name``, duplicates); :meth:`load` reads the fields.

    :param scheduler_name: the scheduler this cluster is simulated for;
        pods with another ``spec.schedulerName`` only occupy their node.
    :param default_queue: the queue that always exists, and of PodGroups
        that name none.
    """

    def __init__(self, *, scheduler_name: str = "volcano", default_queue: str = "default") -> None:
        self.scheduler_name = scheduler_name
        self.default_queue = default_queue
        self._objects: dict[str, list[tuple[Mapping[str, Any], Ref]]] = {kind: [] for kind in _KINDS}
        self._seen: dict[tuple[str, str, str], Ref] = {}
        self._ignored: dict[str, int] = {}
        self._warnings: list[str] = []
        #: Log each warning as well as listing it in :attr:`Cluster.warnings`.
        self.log_warnings = True
        self._known_queues: list[QueueInfo] = []
        self._known_classes: list[PriorityClassInfo] = []

    def know(self, *, queues: Iterable[QueueInfo] = (), priority_classes: Iterable[PriorityClassInfo] = ()) -> None:
        """Name objects that exist where the manifests go (a live cluster), without loading them.

        References see them (a PodGroup naming one of the queues, a pod one
        of the PriorityClasses), and so does Volcano's admission of Jobs
        (the queue exists and is Open); they are not part of the
        :class:`Cluster` that :meth:`load` returns.

        .. versionadded:: 0.2
        """
        self._known_queues.extend(queues)
        self._known_classes.extend(priority_classes)

    # ------------------------------------------------------------------ input

    def add_file(self, path: str | Path) -> None:
        """Add every object of a YAML or JSON file (one object, a ``kind: List``, or several documents).

        :raises ManifestError: naming the file when it cannot be read or parsed.
        """
        source = source_name(path)
        docs = read_documents(path)
        for i, doc in enumerate(docs):
            self.add(doc, source=source, where=f"document {i + 1}" if len(docs) > 1 else "")

    def add_text(self, text: str, *, source: str = "<text>") -> None:
        """Add every object of YAML or JSON text."""
        docs = parse_documents(text, source=source)
        for i, doc in enumerate(docs):
            self.add(doc, source=source, where=f"document {i + 1}" if len(docs) > 1 else "")

    def add_objects(self, objects: Iterable[Any], *, source: str | None = None, field: str = "objects") -> None:
        """Add a sequence of objects (``field`` names the list in errors, e.g. ``objects``)."""
        for i, obj in enumerate(objects):
            self.add(obj, source=source, where=f"{field}[{i}]")

    def add(self, obj: Any, *, source: str | None = None, where: str = "") -> None:
        """Add one object; a ``kind: List`` adds its items.

        :raises ManifestError: when the object has no kind or name, or
            repeats one already added.
        """
        ref = Ref(source, where)
        if not isinstance(obj, dict):
            ref.fail(f"expected a Kubernetes object (a mapping), got {f._type_name(obj)}")
        kind = obj.get("kind")
        if not isinstance(kind, str) or not kind:
            ref.fail("missing required field: kind", "kind")
        ref.kind = kind
        if _is_list(obj, kind):
            items = f.seq(obj.get("items"), ref, "items")
            prefix = f"{where}.items" if where else "items"
            for i, item in enumerate(items):
                self.add(item, source=source, where=f"{prefix}[{i}]")
            return
        api_version = f.string(obj.get("apiVersion"), ref, "apiVersion")
        known = _KINDS.get(kind)
        if known is None or (api_version and _api_group(api_version) not in known[0]):
            label = f"{kind} ({api_version})" if api_version else kind
            self._ignored[label] = self._ignored.get(label, 0) + 1
            return
        meta = f.mapping(obj.get("metadata"), ref, "metadata")
        name = f.string(meta.get("name"), ref, "metadata.name")
        if not name:
            ref.fail("missing required field: metadata.name", "metadata.name")
        ref.name = name
        if not known[1]:
            ref.namespace = f.string(meta.get("namespace"), ref, "metadata.namespace") or "default"
        key = (kind, ref.namespace, name)
        first = self._seen.get(key)
        if first is not None:
            ref.fail(f"duplicate object: already defined at {first.location or 'an earlier object'}")
        self._seen[key] = ref
        self._objects[kind].append((obj, ref))

    # ------------------------------------------------------------------ output

    def _warn(self, message: str) -> None:
        self._warnings.append(message)
        if self.log_warnings:
            log.warning("%s", message)

    def load(self) -> Cluster:
        """Read every object added and return the cluster they describe.

        :raises ManifestError: naming the file, object and field at fault.
        """
        with gc_paused():
            return self._load()

    def _load(self) -> Cluster:
        cluster = Cluster()
        self._warnings = []
        newest = 0.0
        for label, count in sorted(self._ignored.items()):
            self._warn(f"ignored {count} object(s) of kind {label}: volcanolib does not read this kind")

        classes: dict[str, PriorityClassInfo] = {pc.name: pc for pc in self._known_classes}
        for obj, ref in self._objects["PriorityClass"]:
            pc = _priority_class(obj, ref)
            classes[pc.name] = pc
            cluster.priority_classes.append(pc)
        defaults = [pc.name for pc in cluster.priority_classes if pc.global_default]
        if len(defaults) > 1:
            self._warn(f"several PriorityClasses are the global default ({', '.join(defaults)}); {defaults[0]} is used")
            for pc in cluster.priority_classes:
                if pc.global_default and pc.name != defaults[0]:
                    classes[pc.name] = attrs.evolve(pc, global_default=False)
            cluster.priority_classes = [classes[pc.name] for pc in cluster.priority_classes]

        queue_names = {self.default_queue, *(q.name for q in self._known_queues)}
        for obj, ref in self._objects["Queue"]:
            queue = _queue(obj, ref)
            queue_names.add(queue.name)
            cluster.queues.append(queue)
            newest = max(newest, queue.creation_timestamp)
            if queue.weight == 0:
                self._warn(
                    f"{ref.label}: spec.weight is 0, which Volcano's admission makes 1 and its CRD refuses; "
                    "the scheduler gives such a queue nothing"
                )
        for queue in cluster.queues:
            if queue.parent is not None and queue.parent not in queue_names and queue.parent != "root":
                self._warn(f"Queue {queue.name}: parent queue {queue.parent!r} does not exist")

        node_names: set[str] = set()
        missing_pods: list[str] = []
        for obj, ref in self._objects["Node"]:
            node = _node(obj, ref)
            if not _declares_pods(obj):
                missing_pods.append(node.name)
            node_names.add(node.name)
            cluster.nodes.append(node)
        if missing_pods:
            self._warn(
                f"{_count(missing_pods, 'node')} without 'pods' in status.allocatable may hold 110 pods "
                f"(the kubelet default): {_some(missing_pods)}"
            )

        hyper_names: set[str] = set()
        for obj, ref in self._objects["HyperNode"]:
            hyper_node = _hyper_node(obj, ref)
            hyper_names.add(hyper_node.name)
            cluster.hyper_nodes.append(hyper_node)
        for hyper_node in cluster.hyper_nodes:
            for member in hyper_node.members:
                if member.type is MemberType.HYPER_NODE and member.exact not in hyper_names:
                    self._warn(f"HyperNode {hyper_node.name}: member HyperNode {member.exact!r} does not exist")
                elif member.type is MemberType.NODE and member.exact and member.exact not in node_names:
                    self._warn(f"HyperNode {hyper_node.name}: member node {member.exact!r} does not exist")

        groups: dict[str, PodGroup] = {}
        for obj, ref in self._objects["PodGroup"]:
            pg = read_pod_group(obj, ref, self.default_queue)
            groups[f"{pg.namespace}/{pg.name}"] = pg
            newest = max(newest, pg.creation_timestamp)

        pods = list(self._objects["Pod"])
        workloads = Workloads([item for kind in WORKLOAD_KINDS for item in self._objects[kind]], pods)
        generated = workloads.pods()
        pods.extend(generated)
        cluster.generated = {(ref.namespace, ref.name): (pod, ref) for pod, ref in generated}
        pod_names = {(ref.namespace, ref.name) for _, ref in pods}
        depends_on: list[str] = []
        queue_facts = cluster_queue_facts([*self._known_queues, *cluster.queues], self.default_queue)
        for obj, ref in self._objects["Job"]:
            expansion = expand_job(
                obj,
                ref,
                priority_classes={name: pc.value for name, pc in classes.items()},
                scheduler_name=self.scheduler_name,
                existing_groups=groups,
                existing_pods=pod_names,
                queues=queue_facts,
            )
            if expansion.pod_group is not None:
                pg_ref = Ref(ref.source, ref.where, "PodGroup", expansion.pod_group["metadata"]["name"], ref.namespace)
                pg = read_pod_group(expansion.pod_group, pg_ref, self.default_queue)
                groups[f"{pg.namespace}/{pg.name}"] = pg
            for pod in expansion.pods:
                pods.append((pod, Ref(ref.source, ref.where, "Pod", pod["metadata"]["name"], ref.namespace)))
            if expansion.depends_on_ignored:
                depends_on.append(f"{ref.namespace}/{ref.name} (task {', '.join(expansion.depends_on_ignored)})")
        if depends_on:
            one = len(depends_on) == 1
            self._warn(
                f"{_count(depends_on, 'Volcano Job')} {'uses' if one else 'use'} dependsOn, which volcanolib "
                "does not follow yet: the pods of those tasks are created with the others' and may be scheduled "
                f"before the tasks they depend on: {_some(depends_on)}"
            )

        reader = PodReader(
            self.scheduler_name,
            classes,
            default_queue=self.default_queue,
            owner_annotations=workloads.owner_annotations,
        )
        unknown_nodes: dict[str, int] = {}
        uids: dict[str, Ref] = {}
        for obj, ref in pods:
            task = reader.read(obj, ref)
            if task is None:
                continue
            other = uids.setdefault(task.uid, ref)
            if other is not ref:
                ref.fail(f"duplicate uid {task.uid!r}: {other.label} has it too", "metadata.uid")
            cluster.tasks.append(task)
            newest = max(newest, task.creation_timestamp)
            if task.node_name and task.node_name not in node_names:
                unknown_nodes[task.node_name] = unknown_nodes.get(task.node_name, 0) + 1
        for node_name, count in sorted(unknown_nodes.items()):
            self._warn(f"{count} pod(s) are placed on node {node_name!r}, which does not exist")
        for class_name, count in sorted(reader.missing_classes.items()):
            self._warn(f"PriorityClass {class_name!r} does not exist: {count} pod(s) naming it get priority 0")
        if reader.foreign_grouped:
            one = len(reader.foreign_grouped) == 1
            self._warn(
                f"{_count(reader.foreign_grouped, 'pending pod')} naming a PodGroup "
                f"{'belongs' if one else 'belong'} to another scheduler than {self.scheduler_name!r} "
                f"and {'is' if one else 'are'} ignored: {_some(reader.foreign_grouped)}"
            )
        for key, pg in reader.generated.items():
            groups.setdefault(key, pg)
        cluster.pod_groups = list(groups.values())

        members: dict[str, int] = {}
        valid: dict[str, int] = {}
        for task in cluster.tasks:
            if task.job:
                members[task.job] = members.get(task.job, 0) + 1
                if in_statuses(task.status, VALID_STATUSES):
                    valid[task.job] = valid.get(task.job, 0) + 1
        short = [
            f"{key} ({valid.get(key, 0)} of {pg.min_member})"
            for key, pg in groups.items()
            if valid.get(key, 0) < pg.min_member
        ]
        if short:
            one = len(short) == 1
            self._warn(
                f"{_count(short, 'PodGroup')} {'has' if one else 'have'} fewer pods that can run than minMember "
                f"and {'is' if one else 'are'} not scheduled (NotEnoughTasks): {_some(short)}"
            )
        for job, count in members.items():
            if job not in groups:
                reason = f"PodGroup {job} does not exist"
                cluster.unschedulable[job] = reason
                self._warn(f"{count} pod(s) name PodGroup {job}, which does not exist: they are not scheduled")
        for key, pg in groups.items():
            if pg.queue not in queue_names:
                reason = f"queue {pg.queue!r} of PodGroup {key} does not exist"
                cluster.unschedulable[key] = reason
                self._warn(f"PodGroup {key}: queue {pg.queue!r} does not exist: the job is not scheduled")

        cluster.newest_timestamp = newest
        cluster.warnings = list(self._warnings)
        return cluster


def load_manifests(
    paths: Iterable[str | Path], *, scheduler_name: str = "volcano", default_queue: str = "default"
) -> Cluster:
    """Load manifest files (YAML or JSON) into a :class:`Cluster`.

    :raises ManifestError: naming the file, object and field at fault.
    """
    loader = ManifestLoader(scheduler_name=scheduler_name, default_queue=default_queue)
    for path in paths:
        loader.add_file(path)
    return loader.load()


def _count(items: list[str], noun: str) -> str:
    return f"{len(items)} {noun}{'s' if len(items) != 1 else ''}"


def _some(items: list[str], limit: int = 5) -> str:
    shown = ", ".join(items[:limit])
    return shown + (f" and {len(items) - limit} more" if len(items) > limit else "")


def _declares_pods(obj: Mapping[str, Any]) -> bool:
    status = obj.get("status")
    if not isinstance(status, dict):
        return False
    for field in ("allocatable", "capacity"):
        value = status.get(field)
        if isinstance(value, dict) and PODS in value:
            return True
    return False


# ---------------------------------------------------------------------- kinds


def _priority_class(obj: Mapping[str, Any], ref: Ref) -> PriorityClassInfo:
    if obj.get("value") is None:
        ref.fail("missing required field: value", "value")
    return PriorityClassInfo(
        ref.name,
        f.integer(obj.get("value"), ref, "value", 0),
        global_default=bool(f.boolean(obj.get("globalDefault"), ref, "globalDefault", False)),
        preemption_policy=f.string(obj.get("preemptionPolicy"), ref, "preemptionPolicy") or DEFAULT_PREEMPTION_POLICY,
    )


def _node(obj: Mapping[str, Any], ref: Ref) -> NodeInfo:
    meta = f.mapping(obj.get("metadata"), ref, "metadata")
    spec = f.mapping(obj.get("spec"), ref, "spec")
    status = f.mapping(obj.get("status"), ref, "status")
    if status.get("allocatable") is not None:
        allocatable = f.resources(status.get("allocatable"), ref, "status.allocatable")
    elif status.get("capacity") is not None:
        allocatable = f.resources(status.get("capacity"), ref, "status.capacity")
    else:
        ref.fail("missing required field: status.allocatable (or status.capacity)", "status.allocatable")
    if PODS not in allocatable.scalars:
        capacity_pods = f.mapping(status.get("capacity"), ref, "status.capacity").get(PODS)
        if capacity_pods is not None:
            allocatable.scalars[PODS] = f.resources({PODS: capacity_pods}, ref, "status.capacity").scalars[PODS]
    capacity = f.optional_resources(status.get("capacity"), ref, "status.capacity")
    taints = []
    for i, raw in enumerate(f.seq(spec.get("taints"), ref, "spec.taints")):
        taint = f.mapping(raw, ref, f"spec.taints[{i}]")
        key = f.string(taint.get("key"), ref, f"spec.taints[{i}].key")
        if not key:
            ref.fail("missing required field: key", f"spec.taints[{i}].key")
        taints.append(
            Taint(
                key,
                f.string(taint.get("value"), ref, f"spec.taints[{i}].value"),
                f.string(taint.get("effect"), ref, f"spec.taints[{i}].effect") or "NoSchedule",
            )
        )
    images: dict[str, int] = {}
    for i, raw in enumerate(f.seq(status.get("images"), ref, "status.images")):
        image = f.mapping(raw, ref, f"status.images[{i}]")
        size = f.integer(image.get("sizeBytes"), ref, f"status.images[{i}].sizeBytes", 0)
        for name in f.seq(image.get("names"), ref, f"status.images[{i}].names"):
            images[str(name)] = size
    ready, reason = True, ""
    for i, raw in enumerate(f.seq(status.get("conditions"), ref, "status.conditions")):
        cond = f.mapping(raw, ref, f"status.conditions[{i}]")
        if cond.get("type") == _NODE_READY:
            value = f.string(cond.get("status"), ref, f"status.conditions[{i}].status")
            ready = value == "True"
            reason = "" if ready else "NotReady"
    node = Node(
        ref.name,
        labels=f.string_map(meta.get("labels"), ref, "metadata.labels"),
        annotations=f.string_map(meta.get("annotations"), ref, "metadata.annotations"),
        taints=tuple(taints),
        unschedulable=bool(f.boolean(spec.get("unschedulable"), ref, "spec.unschedulable", False)),
        images=images,
        manifest=obj,
    )
    info = NodeInfo(
        ref.name, allocatable, node=node, capability=capacity if capacity is not None else allocatable.clone()
    )
    info.ready = ready
    info.not_ready_reason = reason
    return info


def cluster_queue_facts(queues: Iterable[QueueInfo], default_queue: str = "default") -> dict[str, QueueFacts]:
    """What admission needs of the queues a cluster holds, with ``root`` and the default queue, which always exist."""
    facts = {"root": QueueFacts("root"), default_queue: QueueFacts(default_queue, parent="root")}
    for queue in queues:
        facts[queue.name] = QueueFacts(queue.name, queue.state.value, queue.parent or "")
    return facts


def _queue(obj: Mapping[str, Any], ref: Ref) -> QueueInfo:
    # A Queue read from a cluster (a dump, a watch) is stored: the schema's rules hold, Volcano's
    # mutating webhook has already run (or did not, as with a stand-in server), and the scheduler
    # takes it as it is.
    validate_queue(obj, ref, created=False)
    meta = f.mapping(obj.get("metadata"), ref, "metadata")
    spec = f.mapping(obj.get("spec"), ref, "spec")
    status = f.mapping(obj.get("status"), ref, "status")
    annotations = f.string_map(meta.get("annotations"), ref, "metadata.annotations")
    guarantee = f.mapping(spec.get("guarantee"), ref, "spec.guarantee")
    state = f.string(status.get("state"), ref, "status.state") or "Open"
    try:
        queue_state = QueueState(state)
    except ValueError:
        ref.fail(f"unknown queue state {state!r} (expected Open, Closed, Closing or Unknown)", "status.state")
    parent = f.string(spec.get("parent"), ref, "spec.parent") or None
    return QueueInfo(
        ref.name,
        weight=f.integer(spec.get("weight"), ref, "spec.weight", 1, minimum=0),
        capability=f.optional_resources(spec.get("capability"), ref, "spec.capability"),
        guarantee=f.resources(guarantee.get("resource"), ref, "spec.guarantee.resource"),
        deserved=f.optional_resources(spec.get("deserved"), ref, "spec.deserved"),
        reclaimable=f.boolean(spec.get("reclaimable"), ref, "spec.reclaimable", None),
        state=queue_state,
        priority=f.integer(spec.get("priority"), ref, "spec.priority", 0),
        parent=parent,
        hierarchy=annotations.get(HIERARCHY_KEY, ""),
        hierarchy_weights=annotations.get(HIERARCHY_WEIGHTS_KEY, ""),
        creation_timestamp=f.timestamp(meta.get("creationTimestamp"), ref, "metadata.creationTimestamp"),
        annotations=annotations,
    )


def _hyper_node(obj: Mapping[str, Any], ref: Ref) -> HyperNode:
    spec = f.mapping(obj.get("spec"), ref, "spec")
    if spec.get("tier") is None:
        ref.fail("missing required field: spec.tier", "spec.tier")
    tier = f.integer(spec.get("tier"), ref, "spec.tier", 0, minimum=0)
    members = []
    for i, raw in enumerate(f.seq(spec.get("members"), ref, "spec.members")):
        field = f"spec.members[{i}]"
        member = f.mapping(raw, ref, field)
        type_text = f.string(member.get("type"), ref, f"{field}.type")
        try:
            member_type = MemberType(type_text)
        except ValueError:
            ref.fail(f"unknown member type {type_text!r} (expected Node or HyperNode)", f"{field}.type")
        selector = f.mapping(member.get("selector"), ref, f"{field}.selector")
        given = [key for key in ("exactMatch", "regexMatch", "labelMatch") if selector.get(key) is not None]
        if len(given) != 1:
            ref.fail("expected exactly one of exactMatch, regexMatch, labelMatch", f"{field}.selector")
        kind = given[0]
        where = f"{field}.selector.{kind}"
        body = f.mapping(selector.get(kind), ref, where)
        if kind != "exactMatch" and member_type is MemberType.HYPER_NODE:
            ref.fail("members of type HyperNode are named with exactMatch", where)
        if kind == "exactMatch":
            name = f.string(body.get("name"), ref, f"{where}.name")
            if not name:
                ref.fail("missing required field: name", f"{where}.name")
            members.append(HyperNodeMember(member_type, exact=name))
        elif kind == "regexMatch":
            pattern = f.string(body.get("pattern"), ref, f"{where}.pattern")
            if not pattern:
                ref.fail("missing required field: pattern", f"{where}.pattern")
            try:
                re.compile(pattern)
            except re.error as exc:
                ref.fail(f"invalid regular expression {pattern!r}: {exc}", f"{where}.pattern")
            members.append(HyperNodeMember(member_type, regex=pattern))
        else:
            requirements = []
            for j, expr_raw in enumerate(f.seq(body.get("matchExpressions"), ref, f"{where}.matchExpressions")):
                ewhere = f"{where}.matchExpressions[{j}]"
                expr = f.mapping(expr_raw, ref, ewhere)
                operator = f.string(expr.get("operator"), ref, f"{ewhere}.operator")
                if operator not in ("In", "NotIn", "Exists", "DoesNotExist"):
                    ref.fail(
                        f"unknown operator {operator!r} (expected In, NotIn, Exists or DoesNotExist)",
                        f"{ewhere}.operator",
                    )
                values = tuple(str(v) for v in f.seq(expr.get("values"), ref, f"{ewhere}.values"))
                requirements.append(LabelRequirement(f.string(expr.get("key"), ref, f"{ewhere}.key"), operator, values))
            labels = f.string_map(body.get("matchLabels"), ref, f"{where}.matchLabels")
            members.append(HyperNodeMember(member_type, match_labels=labels, match_expressions=tuple(requirements)))
    return HyperNode(ref.name, tier, tuple(members), tier_name=f.string(spec.get("tierName"), ref, "spec.tierName"))
