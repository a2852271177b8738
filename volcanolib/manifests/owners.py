"""The PodGroup Volcano's PodGroup controller makes for pods that name none: one per owner.

A pod of Volcano's scheduler without the ``scheduling.k8s.io/group-name``
annotation (a plain pod, or one of a ReplicaSet, Deployment, StatefulSet,
DaemonSet or batch Job) gets a PodGroup named ``podgroup-<uid>``, where the
uid is that of the pod's controlling owner (its first owner reference with
``controller: true``), or the pod's own when it has none: all pods of one
ReplicaSet share one group. The group has ``minMember`` 1, or the owner's
``scheduling.volcano.sh/group-min-member`` annotation; ``minResources`` of
``minMember`` such pods; the pod's PriorityClass; the queue of the pod's
``scheduling.volcano.sh/queue-name`` annotation (else ``default``, which
admission may turn into the namespace's queue); the owners' annotations that
start with ``volcano.sh/``; the pod's preemptable, cooldown, revocable-zone
and disruption-budget annotations and labels; the network topology of its
``volcano.sh/network-topology-*`` annotations; and the pod's owner
references (the pod itself when it has no controller).

One rule, rendered two ways: :func:`owner_group` gives the facts, which the
manifest loader turns into its model and the live PodGroup controller into a
manifest (:meth:`OwnerGroup.manifest`).
"""

from __future__ import annotations

from collections.abc import Collection, Mapping
from typing import Any, Final

import attrs

from volcanolib.manifests.keys import GROUP_MIN_MEMBER_KEY, GROUP_NAME_ANNOTATION, PREEMPTABLE_KEY, SCHEDULING_QUEUE_KEY

__all__ = [
    "GROUP_MIN_MEMBER_KEY",
    "GROUP_NAME_KEY",
    "POD_GROUP_PREFIX",
    "SCHEDULING_QUEUE_KEY",
    "OwnerGroup",
    "controller_ref",
    "group_name",
    "needs_group",
    "owner_group",
]

#: The annotation naming a pod's PodGroup.
GROUP_NAME_KEY: Final = GROUP_NAME_ANNOTATION
#: The prefix of the groups' names.
POD_GROUP_PREFIX: Final = "podgroup-"
#: Owner annotations with this prefix are copied to the group.
_INHERITED_PREFIX: Final = "volcano.sh/"
#: Owner kinds whose annotations are read.
OWNER_KINDS: Final = ("ReplicaSet", "DaemonSet", "StatefulSet", "Job")
_PREEMPTABLE: Final = PREEMPTABLE_KEY
_COOLDOWN: Final = "volcano.sh/cooldown-time"
_COPIED_ANNOTATIONS: Final = (_PREEMPTABLE, _COOLDOWN, "volcano.sh/revocable-zone")
_COPIED_LABELS: Final = (_PREEMPTABLE, _COOLDOWN)
_JDB_KEYS: Final = ("volcano.sh/jdb-min-available", "volcano.sh/jdb-max-unavailable")
_TOPOLOGY_MODE: Final = "volcano.sh/network-topology-mode"
_TOPOLOGY_TIER: Final = "volcano.sh/network-topology-highest-tier"


@attrs.frozen
class OwnerGroup:
    """The PodGroup made for the pods of one owner."""

    name: str
    namespace: str
    #: The uid of the owner the group is named after (the pod's, without a controller).
    owner_uid: str
    min_member: int
    #: The queue the pod names, or empty (``default`` once admitted).
    queue: str
    priority_class_name: str
    annotations: Mapping[str, str]
    labels: Mapping[str, str]
    #: The group's owner references, in API form.
    owner_references: tuple[Mapping[str, Any], ...]
    #: ``(mode, highest tier allowed or None)`` from the pod's annotations, or ``None``.
    network_topology: tuple[str, int | None] | None = None

    def manifest(self, min_resources: Mapping[str, str] | None = None) -> dict[str, Any]:
        """The PodGroup in API form, Pending, as the PodGroup controller creates it.

        :param min_resources: ``spec.minResources`` (``minMember`` pods' requests), as quantities.
        """
        spec: dict[str, Any] = {"minMember": self.min_member}
        if self.queue:
            spec["queue"] = self.queue
        if self.priority_class_name:
            spec["priorityClassName"] = self.priority_class_name
        if min_resources is not None:
            spec["minResources"] = dict(min_resources)
        if self.network_topology is not None:
            mode, tier = self.network_topology
            spec["networkTopology"] = {"mode": mode} if tier is None else {"mode": mode, "highestTierAllowed": tier}
        return {
            "apiVersion": "scheduling.volcano.sh/v1beta1",
            "kind": "PodGroup",
            "metadata": {
                "name": self.name,
                "namespace": self.namespace,
                "annotations": dict(self.annotations),
                "labels": dict(self.labels),
                "ownerReferences": [dict(ref) for ref in self.owner_references],
            },
            "spec": spec,
            "status": {"phase": "Pending"},
        }


def _dict(value: Any) -> Mapping[str, Any]:
    return value if isinstance(value, dict) else {}


def _strings(value: Any) -> dict[str, str]:
    return {str(k): str(v) for k, v in value.items()} if isinstance(value, dict) else {}


def controller_ref(meta: Mapping[str, Any]) -> Mapping[str, Any] | None:
    """The first owner reference with ``controller: true`` that has a uid, or ``None``."""
    refs = meta.get("ownerReferences")
    for ref in refs if isinstance(refs, list) else ():
        if isinstance(ref, dict) and ref.get("controller") is True and ref.get("uid"):
            return ref
    return None


def group_name(meta: Mapping[str, Any], uid: str) -> str:
    """``podgroup-<uid>`` of the pod's controlling owner, or of the pod (``uid``) when it has none."""
    owner = controller_ref(meta)
    return POD_GROUP_PREFIX + (str(owner["uid"]) if owner is not None else uid)


def needs_group(pod: Mapping[str, Any], scheduler_names: Collection[str]) -> bool:
    """Whether the PodGroup controller makes a group for this pod: ours, and naming no group."""
    spec = _dict(pod.get("spec"))
    meta = _dict(pod.get("metadata"))
    if str(spec.get("schedulerName") or "") not in scheduler_names:
        return False
    annotations = meta.get("annotations")
    return not (isinstance(annotations, dict) and annotations.get(GROUP_NAME_KEY))


def owner_group(
    pod: Mapping[str, Any],
    uid: str,
    *,
    owner_annotations: Mapping[str, str] | None = None,
    inherit: bool = True,
) -> OwnerGroup:
    """The group of the pod's owner, as Volcano's PodGroup controller builds it from this pod.

    :param pod: the pod manifest.
    :param uid: the pod's uid (``metadata.uid``, or the reader's stand-in when it has none).
    :param owner_annotations: the annotations of the pod's owners (ReplicaSet,
        DaemonSet, StatefulSet, batch Job), merged, the first owner's winning.
    :param inherit: read the owners' annotations (Volcano's
        ``--inherit-owner-annotations``, on by default).
    """
    meta = _dict(pod.get("metadata"))
    spec = _dict(pod.get("spec"))
    annotations = _strings(meta.get("annotations"))
    labels = _strings(meta.get("labels"))
    namespace = str(meta.get("namespace") or "default")
    owner = controller_ref(meta)
    owners = owner_annotations if inherit and owner_annotations else {}
    min_member = 1
    raw_min = owners.get(GROUP_MIN_MEMBER_KEY)
    if raw_min is not None:
        try:
            parsed = int(str(raw_min).strip())
        except ValueError:
            parsed = -1
        if 0 <= parsed < 2**31:  # a bad or negative value leaves 1, as Volcano does
            min_member = parsed
    group_annotations = {k: v for k, v in owners.items() if k.startswith(_INHERITED_PREFIX)}
    for key in _COPIED_ANNOTATIONS:
        if key in annotations:
            group_annotations[key] = annotations[key]
    for key in _JDB_KEYS:
        if key in annotations:
            group_annotations[key] = annotations[key]
            break
    group_labels: dict[str, str] = {key: labels[key] for key in _COPIED_LABELS if key in labels}
    if owner is not None:
        refs = tuple(r for r in meta.get("ownerReferences") or () if isinstance(r, dict))
    else:
        refs = (
            {
                "apiVersion": "v1",
                "kind": "Pod",
                "name": str(meta.get("name") or ""),
                "uid": uid,
                "controller": True,
                "blockOwnerDeletion": True,
            },
        )
    return OwnerGroup(
        name=group_name(meta, uid),
        namespace=namespace,
        owner_uid=str(owner["uid"]) if owner is not None else uid,
        min_member=min_member,
        queue=annotations.get(SCHEDULING_QUEUE_KEY, ""),
        priority_class_name=str(spec.get("priorityClassName") or ""),
        annotations=group_annotations,
        labels=group_labels,
        owner_references=refs,
        network_topology=_topology(annotations),
    )


def _topology(annotations: Mapping[str, str]) -> tuple[str, int | None] | None:
    """The network topology of the pod's annotations: mode hard unless ``soft``; the tier when it is a number."""
    if _TOPOLOGY_MODE not in annotations and _TOPOLOGY_TIER not in annotations:
        return None
    mode = annotations.get(_TOPOLOGY_MODE, "").lower()
    tier: int | None = None
    try:
        tier = int(annotations[_TOPOLOGY_TIER]) if _TOPOLOGY_TIER in annotations else None
    except ValueError:
        tier = None
    return ("soft" if mode == "soft" else "hard", tier)
