"""Watch events -> cache calls, one translator per kind.

Each translator reads objects with the manifest loader's own readers (the
same fields, defaults and errors as ``volcanolib simulate``), and applies them
to an :class:`~volcanolib.cache.memory.InMemoryCache` with its ordinary
methods. ``replace`` reconciles a complete list with what the translator
knew (objects missing from the list are deleted), so a relist after a
``410 Gone`` neither loses nor duplicates anything.
"""

from __future__ import annotations

import logging
from collections.abc import Callable, Collection
from typing import TYPE_CHECKING, Any

from volcanolib.api.task import GROUP_NAME_ANNOTATION, TaskInfo, TaskStatus, allocated_status
from volcanolib.errors import ManifestError
from volcanolib.kube.live._effectors import group_state, observed_state
from volcanolib.kube.loader import _hyper_node, _node, _priority_class, _queue
from volcanolib.manifests.fields import Ref
from volcanolib.manifests.pods import PodReader, PriorityClassInfo, read_pod_group

if TYPE_CHECKING:
    from volcanolib.kube.live.cache import KubernetesCache

__all__ = [
    "HyperNodeTranslator",
    "NodeTranslator",
    "PodGroupTranslator",
    "PodTranslator",
    "PriorityClassTranslator",
    "QueueTranslator",
]

log = logging.getLogger("volcanolib.kube.live")

#: Metadata a status write changes (a CRD without a status subresource moves its generation too).
_VOLATILE = frozenset({"resourceVersion", "generation", "managedFields"})


def _meta(obj: dict[str, Any]) -> dict[str, Any]:
    meta = obj.get("metadata")
    return meta if isinstance(meta, dict) else {}


def _key(obj: dict[str, Any]) -> str:
    meta = _meta(obj)
    namespace = meta.get("namespace")
    name = str(meta.get("name", ""))
    return f"{namespace}/{name}" if namespace else name


class _Translator:
    """Shared list reconciliation: ``replace`` = apply every item, delete the rest."""

    kind = ""

    def __init__(self, cache: KubernetesCache) -> None:
        self.cache = cache
        #: Objects applied, by ``namespace/name`` (or name): their resourceVersion.
        self.known: dict[str, str] = {}

    def replace(self, items: list[dict[str, Any]]) -> None:
        """Make the cache hold exactly ``items`` of this kind."""
        with self.cache.lock:
            seen = set()
            for obj in items:
                seen.add(_key(obj))
                self.apply(obj)
            for key in [k for k in self.known if k not in seen]:
                self.delete(key)

    def event(self, kind: str, obj: dict[str, Any]) -> None:
        """Apply one watch event."""
        with self.cache.lock:
            if kind == "DELETED":
                self.delete(_key(obj))
            else:
                self.apply(obj)

    def ref(self, obj: dict[str, Any]) -> Ref:
        meta = _meta(obj)
        return Ref(None, "", self.kind, str(meta.get("name", "")), str(meta.get("namespace", "") or ""))

    def unchanged(self, key: str, obj: dict[str, Any]) -> bool:
        """Whether the object's resourceVersion is the one already applied (then it is skipped)."""
        version = str(_meta(obj).get("resourceVersion", ""))
        return bool(version) and self.known.get(key) == version

    def apply(self, obj: dict[str, Any]) -> None:
        raise NotImplementedError

    def delete(self, key: str) -> None:
        raise NotImplementedError

    def bad(self, obj: dict[str, Any], exc: ManifestError) -> None:
        log.warning("ignoring %s: %s", self.ref(obj).label, exc)


class NodeTranslator(_Translator):
    """Nodes: added, replaced when what the scheduler reads changes, removed."""

    kind = "Node"

    def __init__(self, cache: KubernetesCache) -> None:
        super().__init__(cache)
        self._seen: dict[str, tuple[Any, ...]] = {}

    def apply(self, obj: dict[str, Any]) -> None:
        key = _key(obj)
        meta = _meta(obj)
        status = obj.get("status") or {}
        # Kubelets rewrite their Node every few seconds (heartbeats): only what the scheduler reads counts.
        ready = [
            c.get("status") for c in status.get("conditions") or () if isinstance(c, dict) and c.get("type") == "Ready"
        ]
        signature = (
            meta.get("labels"),
            meta.get("annotations"),
            obj.get("spec"),
            status.get("allocatable"),
            status.get("capacity"),
            ready,
            status.get("images"),
        )
        self.known[key] = str(meta.get("resourceVersion", ""))
        if self._seen.get(key) == signature:
            return
        try:
            info = _node(obj, self.ref(obj))
        except ManifestError as exc:
            self.bad(obj, exc)
            return
        self._seen[key] = signature
        self.cache.add_node(info)

    def delete(self, key: str) -> None:
        self.known.pop(key, None)
        self._seen.pop(key, None)
        self.cache.delete_node(key)


class QueueTranslator(_Translator):
    """Queues, and the allocated resources their status last held.

    A Queue whose change is only in what the scheduler writes (its
    ``status.allocated``, the echo of a status write) is not replaced in the
    cache: the next session then resumes from the last one instead of
    treating the queue as new.
    """

    kind = "Queue"

    def __init__(self, cache: KubernetesCache) -> None:
        super().__init__(cache)
        #: Each applied queue's metadata (less its versions), spec and state, by name.
        self._signatures: dict[str, tuple[dict[str, Any], Any, Any]] = {}

    def apply(self, obj: dict[str, Any]) -> None:
        key = _key(obj)
        if self.unchanged(key, obj):
            return
        meta = _meta(obj)
        status = obj.get("status") or {}
        # What the scheduler reads of a Queue: all but its versions and the allocated it writes itself.
        signature = (
            {k: v for k, v in meta.items() if k not in _VOLATILE},
            obj.get("spec"),
            status.get("state") if isinstance(status, dict) else status,
        )
        if self._signatures.get(key) == signature:
            self.known[key] = str(meta.get("resourceVersion", ""))
            self.cache.status.observe_queue(key, status.get("allocated") or {})
            return
        try:
            queue = _queue(obj, self.ref(obj))
        except ManifestError as exc:
            self.bad(obj, exc)
            return
        self.known[key] = str(meta.get("resourceVersion", ""))
        self._signatures[key] = signature
        self.cache.status.observe_queue(key, status.get("allocated") or {})
        self.cache.add_queue(queue)
        self.cache.queue_weight_seen(key, str(meta.get("uid", "")), queue.weight == 0)

    def delete(self, key: str) -> None:
        self.known.pop(key, None)
        self._signatures.pop(key, None)
        self.cache.status.forget_queue(key)
        self.cache.queue_weight_seen(key, "", False)
        self.cache.delete_queue(key)


class PriorityClassTranslator(_Translator):
    """PriorityClasses: for job priorities (the cache) and pod priorities (the pod reader)."""

    kind = "PriorityClass"

    def __init__(self, cache: KubernetesCache, reader: PodReader) -> None:
        super().__init__(cache)
        self.reader = reader
        self.classes: dict[str, PriorityClassInfo] = {}
        reader.priority_classes = self.classes

    def apply(self, obj: dict[str, Any]) -> None:
        key = _key(obj)
        if self.unchanged(key, obj):
            return
        try:
            pc = _priority_class(obj, self.ref(obj))
        except ManifestError as exc:
            self.bad(obj, exc)
            return
        self.known[key] = str(_meta(obj).get("resourceVersion", ""))
        self.classes[key] = pc
        self.cache.add_priority_class(pc.name, pc.value, global_default=pc.global_default)
        self._default()

    def delete(self, key: str) -> None:
        self.known.pop(key, None)
        self.classes.pop(key, None)
        self.cache.delete_priority_class(key)
        self._default()

    def _default(self) -> None:
        self.reader.global_default = next((pc for pc in self.classes.values() if pc.global_default), None)


class HyperNodeTranslator(_Translator):
    """HyperNodes (``topology.volcano.sh/v1alpha1``): the network topology, read as the manifest loader reads it."""

    kind = "HyperNode"

    def apply(self, obj: dict[str, Any]) -> None:
        key = _key(obj)
        if self.unchanged(key, obj):
            return
        try:
            hyper_node = _hyper_node(obj, self.ref(obj))
        except ManifestError as exc:
            self.bad(obj, exc)
            return
        self.known[key] = str(_meta(obj).get("resourceVersion", ""))
        self.cache.add_hyper_node(hyper_node)

    def delete(self, key: str) -> None:
        self.known.pop(key, None)
        self.cache.delete_hyper_node(key)


class PodGroupTranslator(_Translator):
    """PodGroups (``scheduling.volcano.sh/v1beta1``): they replace any group made for pods without one.

    A PodGroup some of whose pods name another scheduler belongs to that
    scheduler (Volcano's, during a switch-over): it is kept out of the cache,
    so this scheduler neither schedules it nor writes its status, until no
    such pod is left.
    """

    kind = "PodGroup"

    def __init__(self, cache: KubernetesCache) -> None:
        super().__init__(cache)
        #: The last object of every PodGroup, by ``namespace/name``.
        self.objects: dict[str, dict[str, Any]] = {}
        #: Groups of other schedulers: their pods of those schedulers, by pod key.
        self.foreign: dict[str, set[str]] = {}
        #: The group each pod of another scheduler names, by pod key.
        self.foreign_pods: dict[str, str] = {}
        #: Each applied group's metadata (less its versions) and spec, by ``namespace/name``.
        self._signatures: dict[str, tuple[dict[str, Any], Any]] = {}

    def apply(self, obj: dict[str, Any]) -> None:
        key = _key(obj)
        self.objects[key] = obj
        if self.unchanged(key, obj):
            return
        meta = _meta(obj)
        self.known[key] = str(meta.get("resourceVersion", ""))
        if key in self.foreign:
            return
        status = obj.get("status") or {}
        # What the scheduler reads besides the status (the versions move with every status write).
        signature = ({k: v for k, v in meta.items() if k not in _VOLATILE}, obj.get("spec"))
        if self._signatures.get(key) == signature:
            own = self.cache.cached_pod_group(key)
            if own is not None and group_state(own) == observed_state(status):
                # A status write of ours coming back: the cache holds this already.
                self.cache.status.observe_pod_group(key, status)
                return
            if own is not None and self.cache.status.queued_before(key, status):
                # An earlier write of ours coming back while a later one is on its way: the cache holds that one.
                return
        try:
            pg = read_pod_group(obj, self.ref(obj), self.cache.default_queue)
        except ManifestError as exc:
            self.bad(obj, exc)
            return
        self._signatures[key] = signature
        self.cache.shadow_groups.discard(key)
        self.cache.status.observe_pod_group(key, status)
        self.cache.add_pod_group(pg)

    def delete(self, key: str) -> None:
        self.known.pop(key, None)
        self.objects.pop(key, None)
        self._signatures.pop(key, None)
        self.cache.status.forget_pod_group(key)
        namespace, _, name = key.partition("/")
        self.cache.delete_pod_group(namespace, name)

    def note_pod(self, pod: str, group: str | None, foreign: bool) -> None:
        """Note which group a pod names (``None``: none, or the pod is gone) and whether it is another scheduler's."""
        previous = self.foreign_pods.pop(pod, None)
        if previous is not None and (previous != group or not foreign):
            members = self.foreign[previous]
            members.discard(pod)
            if not members:
                del self.foreign[previous]
                obj = self.objects.get(previous)
                if obj is not None:  # this scheduler's again
                    self.known.pop(previous, None)
                    self.apply(obj)
        if group is not None and foreign:
            members = self.foreign.setdefault(group, set())
            if not members and group in self.cache.pod_group_keys():
                namespace, _, name = group.partition("/")
                self.cache.delete_pod_group(namespace, name)
            members.add(pod)
            self.foreign_pods[pod] = group


class PodTranslator(_Translator):
    """Pods of the scheduler's names, and every pod placed on a node.

    A pod that stops being of interest (another scheduler's pod that
    finished) is deleted; one that becomes of interest (another scheduler's
    pod once bound) is added, as Kubernetes' filtering informers do. A pod
    whose task the cache holds as placed (a bind it has assumed) keeps that
    place while the pod still shows no node: the bind has not been observed
    yet. A pod of this scheduler without a PodGroup gets the group Volcano's
    podgroup controller would make for it (kept in memory only).

    :param names: the scheduler names whose pods are scheduled.
    :param observe: called with each applied pod's task and object
        (the status writer notes the pod's conditions).
    :param forget: called with the uid of each pod removed.
    :param groups: told which groups other schedulers' pods name.
    """

    kind = "Pod"

    def __init__(
        self,
        cache: KubernetesCache,
        reader: PodReader,
        names: Collection[str],
        observe: Callable[[TaskInfo, dict[str, Any]], None],
        forget: Callable[[str], None],
        groups: PodGroupTranslator,
    ) -> None:
        super().__init__(cache)
        self.groups = groups
        self.reader = reader
        self.names = frozenset(names)
        self.observe = observe
        self.forget = forget

    def apply(self, obj: dict[str, Any]) -> None:
        key = _key(obj)
        spec = obj.get("spec") or {}
        cache = self.cache
        meta = _meta(obj)
        foreign = spec.get("schedulerName", "default-scheduler") not in self.names
        annotations = meta.get("annotations")
        group = annotations.get(GROUP_NAME_ANNOTATION) if isinstance(annotations, dict) else None
        if foreign or key in self.groups.foreign_pods:
            self.groups.note_pod(key, f"{meta.get('namespace') or 'default'}/{group}" if group else None, foreign)
        if foreign and not spec.get("nodeName"):
            if key in self.known:
                self.delete(key)
            return
        uid = meta.get("uid")
        unresolved = cache.unresolved
        if unresolved and uid in unresolved and spec.get("nodeName"):
            unresolved.observed(str(uid), str(spec["nodeName"]))  # a bind whose answer was lost: now known
        old = cache.get_task(uid) if uid else None
        if (
            old is not None
            and old.status is TaskStatus.BOUND
            and old.node_name == spec.get("nodeName")
            and (obj.get("status") or {}).get("phase") == "Pending"
            and not meta.get("deletionTimestamp")
            and self.known.get(key) == uid
        ):
            # The bind this cache assumed, now observed: what the scheduler reads of the pod is unchanged.
            self.observe(old, obj)
            return
        reader = self.reader
        try:
            task = reader.read(obj, self.ref(obj))
        except ManifestError as exc:
            self.bad(obj, exc)
            task = None
        if reader.foreign_grouped:
            reader.foreign_grouped.clear()
        if task is None:
            if key in self.known:
                self.delete(key)
            return
        old_uid = self.known.get(key)
        if old_uid is not None and old_uid != task.uid:  # deleted and created again under the same name
            self.delete(key)
        old = cache.get_task(task.uid)
        self.known[key] = task.uid
        self.observe(task, obj)
        if old is not None and not task.node_name and allocated_status(old.status):
            return  # an assumed bind, not observed yet
        if old is not None and old.status is TaskStatus.RELEASING and allocated_status(task.status):
            return  # a view from before the deletion (an eviction of this cache's, say): deletions are not undone
        if task.job:
            generated = reader.generated.pop(task.job, None)
            if generated is not None and task.job not in cache.pod_group_keys():
                cache.shadow_groups.add(task.job)
                cache.add_pod_group(generated)
        cache.add_task(task)

    def delete(self, key: str) -> None:
        if key in self.groups.foreign_pods:
            self.groups.note_pod(key, None, False)
        uid = self.known.pop(key, None)
        if uid is not None:
            self.cache.unresolved.forget(uid)
            self.cache.delete_task(uid)
            self.forget(uid)
