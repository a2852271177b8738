"""The timeline of a replay: what people and the cluster do from outside, at given times.

A replay file's ``replay.timeline`` lists actions, each at a time ``at``: a
duration from the start of the replay (``90s``, ``1h``, or seconds) or an
RFC 3339 time (``2024-05-01T10:00:00Z``, on the clock of the
``creationTimestamp`` s). Each entry has ``at`` and exactly one action:

=============  =============================================  =====================================
action         value                                          what happens
=============  =============================================  =====================================
``deletePod``  ``ns/name``                                    the pod is deleted (its Job sees PodEvicted)
``cordon``     a node name                                    the node takes no new pods
``uncordon``   a node name                                    it takes pods again
``drain``      a node name                                    cordoned, and its pods evicted
``taint``      ``{node, key, value, effect}``                 a taint added; ``NoExecute`` evicts the
                                                              pods that do not tolerate it
``untaint``    ``{node, key}``                                the node's taints of that key removed
``addNode``    a Node manifest                                the node joins the cluster
``removeNode`` a node name                                    the node leaves; its pods are gone at once
``suspendJob`` ``ns/name`` of a Volcano Job                   ``vcctl job suspend`` (AbortJob)
``resumeJob``  ``ns/name``                                    ``vcctl job resume`` (ResumeJob)
``scaleJob``   ``{job, task, replicas[, minAvailable]}``      the task's replicas changed (an update)
``deleteJob``  ``ns/name``                                    the Job is deleted
=============  =============================================  =====================================

An action on an object that does not exist at that moment (a pod not made
yet, or already gone) does nothing. Names are checked when the files load:
nodes must be in the files or added by the timeline, Jobs must be Volcano Jobs of the
files, and pods bare pods of the files or pods of their Jobs
(``<job>-<task>-<index>``).

.. versionadded:: 0.2
"""

from __future__ import annotations

from collections.abc import Mapping, Sequence
from typing import Any, Final

import attrs

from volcanolib.api.node import NodeInfo, Taint
from volcanolib.api.outcomes import parse_duration
from volcanolib.errors import ManifestError
from volcanolib.kube.loader import _node
from volcanolib.manifests import fields as f
from volcanolib.manifests.fields import Ref

__all__ = ["ACTIONS", "Action", "check_timeline", "parse_timeline"]

#: The actions a timeline entry may take.
ACTIONS: Final = (
    "deletePod",
    "cordon",
    "uncordon",
    "drain",
    "taint",
    "untaint",
    "addNode",
    "removeNode",
    "suspendJob",
    "resumeJob",
    "scaleJob",
    "deleteJob",
)
_NODE_ACTIONS: Final = frozenset({"cordon", "uncordon", "drain", "removeNode"})
_JOB_ACTIONS: Final = frozenset({"suspendJob", "resumeJob", "deleteJob"})
_EFFECTS: Final = ("NoSchedule", "PreferNoSchedule", "NoExecute")


@attrs.frozen
class Action:
    """One entry of the timeline."""

    #: Seconds: from the start when ``relative``, else since the epoch.
    at: float
    relative: bool
    #: One of :data:`ACTIONS`.
    kind: str
    #: The object acted on: ``namespace/name`` of a pod or Job, or a node name.
    target: str
    #: ``taint``: the taint added; ``untaint``: its key.
    taint: Taint | None = None
    #: ``addNode``: the node.
    node: NodeInfo | None = None
    #: ``scaleJob``: the task, its new replicas and (when given) minAvailable.
    task: str = ""
    replicas: int = 0
    min_available: int | None = None
    #: Where it was written, for messages: ``replay.timeline[2]``.
    field: str = ""
    #: The file it was read from.
    source: str = ""


def _name(value: Any, source: str, field: str) -> str:
    if not isinstance(value, str) or not value.strip():
        raise ManifestError(f"expected a name, got {value!r}", source=source, field=field)
    return value.strip()


def _namespaced(value: Any, source: str, field: str) -> str:
    name = _name(value, source, field)
    return name if "/" in name else f"default/{name}"


def _at(value: Any, source: str, field: str) -> tuple[float, bool]:
    if isinstance(value, str) and "T" in value and ("Z" in value or "+" in value):
        ref = Ref(source, "", "")
        return f.timestamp(value, ref, field), False
    try:
        return parse_duration(value), True
    except ValueError as exc:
        raise ManifestError(f"{exc}, or an RFC 3339 time", source=source, field=field) from None


def _action(entry: Any, index: int, source: str) -> Action:
    where = f"replay.timeline[{index}]"
    if not isinstance(entry, dict):
        raise ManifestError(f"expected a mapping with 'at' and one action, got {entry!r}", source=source, field=where)
    if "at" not in entry:
        raise ManifestError("missing required field: at", source=source, field=f"{where}.at")
    at, relative = _at(entry["at"], source, f"{where}.at")
    kinds = [key for key in entry if key != "at"]
    unknown = [key for key in kinds if key not in ACTIONS]
    if unknown:
        raise ManifestError(
            f"unknown action {unknown[0]!r} (expected one of {', '.join(ACTIONS)})",
            source=source,
            field=f"{where}.{unknown[0]}",
        )
    if len(kinds) != 1:
        raise ManifestError(f"expected exactly one action, got {len(kinds)}", source=source, field=where)
    kind = kinds[0]
    value = entry[kind]
    field = f"{where}.{kind}"
    common = {"at": at, "relative": relative, "kind": kind, "field": where, "source": source}
    if kind in _NODE_ACTIONS:
        return Action(target=_name(value, source, field), **common)
    if kind in _JOB_ACTIONS or kind == "deletePod":
        return Action(target=_namespaced(value, source, field), **common)
    ref = Ref(source, where, "")
    if kind in ("taint", "untaint"):
        spec = f.mapping(value, ref, field)
        node_name = _name(spec.get("node"), source, f"{field}.node")
        key = f.string(spec.get("key"), ref, f"{field}.key")
        if not key:
            raise ManifestError("missing required field: key", source=source, field=f"{field}.key")
        effect = f.string(spec.get("effect"), ref, f"{field}.effect") or "NoSchedule"
        if effect not in _EFFECTS:
            raise ManifestError(
                f"unknown effect {effect!r} (expected one of {', '.join(_EFFECTS)})",
                source=source,
                field=f"{field}.effect",
            )
        taint = Taint(key, f.string(spec.get("value"), ref, f"{field}.value"), effect)
        return Action(target=node_name, taint=taint, **common)
    if kind == "addNode":
        manifest = f.mapping(value, ref, field)
        meta = f.mapping(manifest.get("metadata"), ref, f"{field}.metadata")
        name = _name(meta.get("name"), source, f"{field}.metadata.name")
        node = _node(manifest, Ref(source, field, "Node", name))
        return Action(target=name, node=node, **common)
    # scaleJob
    spec = f.mapping(value, ref, field)
    job = _namespaced(spec.get("job"), source, f"{field}.job")
    task = _name(spec.get("task"), source, f"{field}.task")
    if spec.get("replicas") is None:
        raise ManifestError("missing required field: replicas", source=source, field=f"{field}.replicas")
    replicas = f.integer(spec.get("replicas"), ref, f"{field}.replicas", 0, minimum=0)
    minimum = None
    if spec.get("minAvailable") is not None:
        minimum = f.integer(spec.get("minAvailable"), ref, f"{field}.minAvailable", 0, minimum=0)
        if minimum > replicas:
            raise ManifestError(
                f"{minimum} is more than the task's {replicas} replicas", source=source, field=f"{field}.minAvailable"
            )
    return Action(target=job, task=task, replicas=replicas, min_available=minimum, **common)


def parse_timeline(entries: Any, *, source: str) -> list[Action]:
    """Read a ``replay.timeline`` list.

    :raises ManifestError: naming the file and the entry's field, for an
        entry without ``at``, with no action or several, an unknown action,
        or a value of the wrong shape.
    """
    if entries is None:
        return []
    if not isinstance(entries, list):
        raise ManifestError(f"expected a list of actions, got {entries!r}", source=source, field="replay.timeline")
    return [_action(entry, i, source) for i, entry in enumerate(entries)]


def check_timeline(
    actions: Sequence[Action],
    *,
    nodes: set[str],
    jobs: Mapping[str, Sequence[str]],
    pods: set[str],
) -> None:
    """Check that the actions name objects of the workload.

    :param nodes: the nodes of the files (those the timeline adds count too).
    :param jobs: per Volcano Job (``namespace/name``), its task names.
    :param pods: the bare pods of the files (``namespace/name``).
    :raises ManifestError: naming the file and the entry, for an unknown name.
    """
    known = set(nodes) | {a.target for a in actions if a.kind == "addNode"}
    for action in actions:
        where = f"{action.field}.{action.kind}"
        source = action.source
        if action.kind in _NODE_ACTIONS or action.kind in ("taint", "untaint"):
            if action.target not in known:
                raise ManifestError(f"no node named {action.target!r}", source=source, field=where)
        elif action.kind in _JOB_ACTIONS or action.kind == "scaleJob":
            tasks = jobs.get(action.target)
            if tasks is None:
                raise ManifestError(f"no Volcano Job named {action.target!r}", source=source, field=where)
            if action.kind == "scaleJob" and action.task not in tasks:
                raise ManifestError(
                    f"the Job has no task named {action.task!r} (it has {', '.join(tasks)})", source=source, field=where
                )
        elif action.kind == "deletePod" and action.target not in pods and not _job_pod(action.target, jobs):
            raise ManifestError(
                f"no pod named {action.target!r} (a bare pod of the files or a pod of one of their Jobs)",
                source=source,
                field=where,
            )


def _job_pod(pod: str, jobs: Mapping[str, Sequence[str]]) -> bool:
    namespace, _, name = pod.partition("/")
    for job, tasks in jobs.items():
        job_namespace, _, job_name = job.partition("/")
        if job_namespace != namespace:
            continue
        for task in tasks:
            prefix = f"{job_name}-{task}-"
            if name.startswith(prefix) and name[len(prefix) :].isdigit():
                return True
    return False
