"""``meta.k8s.io/v1`` Table answers, for kubectl's human-readable ``get`` (it asks with
``Accept: application/json;as=Table;v=v1;g=meta.k8s.io``): the columns kubectl shows for pods
and nodes, NAME and AGE for the other types, and each row's object as PartialObjectMetadata."""

from __future__ import annotations

import calendar
import time
from collections.abc import Iterable
from typing import Any

from .resources import ResourceType

Obj = dict[str, Any]

_NAME = {"name": "Name", "type": "string", "format": "name", "description": "Name", "priority": 0}
_AGE = {"name": "Age", "type": "string", "format": "", "description": "Age", "priority": 0}


def _col(name: str, priority: int = 0, kind: str = "string") -> dict[str, Any]:
    return {"name": name, "type": kind, "format": "", "description": name, "priority": priority}


COLUMNS: dict[str, list[dict[str, Any]]] = {
    "pods": [
        _NAME,
        _col("Ready"),
        _col("Status"),
        _col("Restarts", kind="string"),
        _AGE,
        _col("IP", 1),
        _col("Node", 1),
        _col("Nominated Node", 1),
        _col("Readiness Gates", 1),
    ],
    "nodes": [_NAME, _col("Status"), _col("Roles"), _AGE, _col("Version"), _col("Internal-IP", 1)],
}


def wants_table(accept: str) -> bool:
    """Whether an Accept header asks for a Table."""
    return "as=Table" in accept


def age(timestamp: str | None, now: float | None = None) -> str:
    """Age as kubectl prints it (``42s``, ``5m10s``, ``3h``, ``2d``)."""
    if not timestamp:
        return "<unknown>"
    try:
        then = calendar.timegm(time.strptime(timestamp, "%Y-%m-%dT%H:%M:%SZ"))
    except ValueError:
        return "<invalid>"
    secs = max(0, int((time.time() if now is None else now) - then))
    if secs < 120:
        return f"{secs}s"
    minutes = secs // 60
    if minutes < 10:
        return f"{minutes}m{secs % 60}s" if secs % 60 else f"{minutes}m"
    if minutes < 180:
        return f"{minutes}m"
    hours = minutes // 60
    if hours < 48:
        return f"{hours}h"
    return f"{hours // 24}d"


def _cells(rt: ResourceType, obj: Obj) -> list[Any]:
    meta = obj.get("metadata") or {}
    created = age(meta.get("creationTimestamp"))
    if rt.plural == "pods":
        spec, status = obj.get("spec") or {}, obj.get("status") or {}
        containers = spec.get("containers") or []
        statuses = status.get("containerStatuses") or []
        ready = sum(1 for c in statuses if c.get("ready"))
        if not statuses and any(
            c.get("type") == "Ready" and c.get("status") == "True" for c in status.get("conditions") or []
        ):
            ready = len(containers)  # no kubelet reports containers here: the pod's Ready condition stands for them
        restarts = sum(int(c.get("restartCount") or 0) for c in statuses)
        phase = status.get("reason") or status.get("phase") or "Unknown"
        if meta.get("deletionTimestamp"):
            phase = "Terminating"
        return [
            meta.get("name"),
            f"{ready}/{len(containers)}",
            phase,
            str(restarts),
            created,
            status.get("podIP") or "<none>",
            spec.get("nodeName") or "<none>",
            status.get("nominatedNodeName") or "<none>",
            "<none>",
        ]
    if rt.plural == "nodes":
        conds = {c.get("type"): c.get("status") for c in (obj.get("status") or {}).get("conditions") or []}
        state = "Ready" if conds.get("Ready") == "True" else "NotReady" if "Ready" in conds else "Unknown"
        if (obj.get("spec") or {}).get("unschedulable"):
            state += ",SchedulingDisabled"
        labels = meta.get("labels") or {}
        roles = sorted(k.split("/", 1)[1] for k in labels if k.startswith("node-role.kubernetes.io/")) or ["<none>"]
        info = (obj.get("status") or {}).get("nodeInfo") or {}
        addrs = {a.get("type"): a.get("address") for a in (obj.get("status") or {}).get("addresses") or []}
        return [
            meta.get("name"),
            state,
            ",".join(roles),
            created,
            info.get("kubeletVersion") or "",
            addrs.get("InternalIP") or "<none>",
        ]
    return [meta.get("name"), created]


def _partial(obj: Obj) -> Obj:
    return {"kind": "PartialObjectMetadata", "apiVersion": "meta.k8s.io/v1", "metadata": obj.get("metadata") or {}}


def table(rt: ResourceType, objs: Iterable[Obj], list_meta: Obj | None = None) -> Obj:
    """A Table of ``objs``, with the list's metadata (resourceVersion, continue)."""
    return {
        "kind": "Table",
        "apiVersion": "meta.k8s.io/v1",
        "metadata": list_meta or {},
        "columnDefinitions": COLUMNS.get(rt.plural, [_NAME, _AGE]),
        "rows": [{"cells": _cells(rt, o), "object": _partial(o)} for o in objs],
    }
