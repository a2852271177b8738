"""Deployments, ReplicaSets and StatefulSets -> the pods their Kubernetes controllers would create.

A scenario may describe a workload the way one applies it: a Deployment or a
ReplicaSet of ``replicas`` pods, a StatefulSet. The manifest loader makes the
pods, as Kubernetes' controllers would, so that a Volcano demo of a
Deployment schedules offline:

* a Deployment gets a ReplicaSet ``<deployment>-<template hash>`` (unless
  the scenario holds a ReplicaSet it controls), with the Deployment's
  annotations, its ``replicas`` and its template, labelled with
  ``pod-template-hash``;
* a ReplicaSet gets ``replicas`` pods ``<replicaset>-<suffix>`` from its
  template, less the pods the scenario already holds that it controls;
* a StatefulSet gets the pods ``<statefulset>-<ordinal>`` that the scenario
  does not hold.

Each pod has the owner's controller reference (so that its PodGroup is the
owner's, see :mod:`volcanolib.manifests.owners`) and the owner's
``creationTimestamp``. ``replicas`` defaults to 1. Names and uids are made
deterministically (Kubernetes draws pod suffixes at random): an owner
without ``metadata.uid`` gets ``<kind>-<name>`` as its uid. DaemonSets are
not expanded (their pods are per node).
"""

from __future__ import annotations

import copy
import json
from collections.abc import Iterable, Mapping
from typing import Any, Final

import attrs

from volcanolib.manifests import fields as f
from volcanolib.manifests.fields import Ref

__all__ = ["WORKLOAD_GROUPS", "WORKLOAD_KINDS", "Workloads", "template_hash"]

#: The kinds expanded into pods.
WORKLOAD_KINDS: Final = ("Deployment", "ReplicaSet", "StatefulSet")
#: The API groups they are read from.
WORKLOAD_GROUPS: Final = frozenset({"apps", "extensions"})
TEMPLATE_HASH_LABEL: Final = "pod-template-hash"
STATEFUL_POD_NAME_LABEL: Final = "statefulset.kubernetes.io/pod-name"
#: Kubernetes' alphabet for generated name suffixes (no vowels, no look-alikes).
_ALPHANUMS: Final = "bcdfghjklmnpqrstvwxz2456789"


def _safe_encode(text: str) -> str:
    return "".join(_ALPHANUMS[ord(c) % len(_ALPHANUMS)] for c in text)


def _fnv32a(data: bytes) -> int:
    h = 0x811C9DC5
    for byte in data:
        h = ((h ^ byte) * 0x01000193) & 0xFFFFFFFF
    return h


def template_hash(template: Mapping[str, Any]) -> str:
    """A short stable hash of a pod template, in the alphabet Kubernetes uses for ``pod-template-hash``."""
    return _safe_encode(str(_fnv32a(json.dumps(template, sort_keys=True, default=str).encode())))


@attrs.frozen
class _Owner:
    kind: str
    name: str
    namespace: str
    uid: str
    api_version: str
    annotations: Mapping[str, str]
    replicas: int
    template: Mapping[str, Any]
    created: Any
    ref: Ref = attrs.field(eq=False)
    #: The workload's own owner references (a ReplicaSet's Deployment).
    owner_refs: tuple[Mapping[str, Any], ...] = ()

    def controller_ref(self) -> dict[str, Any]:
        return {
            "apiVersion": self.api_version,
            "kind": self.kind,
            "name": self.name,
            "uid": self.uid,
            "controller": True,
            "blockOwnerDeletion": True,
        }


def _owner(obj: Mapping[str, Any], ref: Ref) -> _Owner:
    meta = f.mapping(obj.get("metadata"), ref, "metadata")
    spec = f.mapping(obj.get("spec"), ref, "spec")
    template = f.mapping(spec.get("template"), ref, "spec.template")
    if not template:
        ref.fail("missing required field: spec.template", "spec.template")
    f.mapping(template.get("metadata"), ref, "spec.template.metadata")
    f.mapping(template.get("spec"), ref, "spec.template.spec")
    kind = ref.kind
    return _Owner(
        kind=kind,
        name=ref.name,
        namespace=ref.namespace,
        uid=f.string(meta.get("uid"), ref, "metadata.uid") or f"{kind.lower()}-{ref.name}",
        api_version=f.string(obj.get("apiVersion"), ref, "apiVersion") or "apps/v1",
        annotations=f.string_map(meta.get("annotations"), ref, "metadata.annotations"),
        replicas=f.integer(spec.get("replicas"), ref, "spec.replicas", 1, minimum=0),
        template=template,
        created=meta.get("creationTimestamp"),
        ref=ref,
        owner_refs=tuple(
            f.mapping(r, ref, f"metadata.ownerReferences[{i}]")
            for i, r in enumerate(f.seq(meta.get("ownerReferences"), ref, "metadata.ownerReferences"))
        ),
    )


class Workloads:
    """The workloads of a scenario and the pods their controllers would add.

    :param objects: ``(manifest, ref)`` of each Deployment, ReplicaSet and StatefulSet.
    :param pods: ``(manifest, ref)`` of the pods the scenario holds.
    :raises ManifestError: naming the field of a malformed workload.
    """

    def __init__(self, objects: Iterable[tuple[Mapping[str, Any], Ref]], pods: Iterable[tuple[Any, Ref]]) -> None:
        owners = [_owner(obj, ref) for obj, ref in objects]
        #: Pods the scenario holds per controlling owner uid, and their names.
        self._owned: dict[str, int] = {}
        self._names: set[tuple[str, str]] = set()
        for obj, ref in pods:
            self._names.add((ref.namespace, ref.name))
            meta = obj.get("metadata") if isinstance(obj, dict) else None
            for owner in (meta or {}).get("ownerReferences") or ():
                if isinstance(owner, dict) and owner.get("controller") is True:
                    key = str(owner.get("uid") or f"{str(owner.get('kind', '')).lower()}-{owner.get('name', '')}")
                    self._owned[key] = self._owned.get(key, 0) + 1
        deployments_with_sets: set[tuple[str, str]] = set()
        for o in owners:
            for raw in o.owner_refs if o.kind == "ReplicaSet" else ():
                if raw.get("kind") == "Deployment" and raw.get("controller") is True:
                    deployments_with_sets.add((o.namespace, str(raw.get("name") or "")))
        self._owners: list[_Owner] = []
        for o in owners:
            if o.kind == "Deployment":
                if (o.namespace, o.name) not in deployments_with_sets:
                    self._owners.append(_replica_set_of(o))
            else:
                self._owners.append(o)
        #: Annotations of the owners a pod may name, by ``(namespace, kind, name)``.
        self.annotations: dict[tuple[str, str, str], Mapping[str, str]] = {
            (o.namespace, o.kind, o.name): o.annotations for o in self._owners
        }

    def owner_annotations(self, namespace: str, meta: Mapping[str, Any]) -> dict[str, str]:
        """The merged annotations of a pod's owners that the scenario holds, the first owner's winning."""
        out: dict[str, str] = {}
        for owner in meta.get("ownerReferences") or ():
            if isinstance(owner, dict):
                found = self.annotations.get((namespace, str(owner.get("kind") or ""), str(owner.get("name") or "")))
                for key, value in (found or {}).items():
                    out.setdefault(key, value)
        return out

    def pods(self) -> list[tuple[dict[str, Any], Ref]]:
        """The pods the controllers would create, each with the ``Ref`` of its workload, in the workloads' order."""
        out: list[tuple[dict[str, Any], Ref]] = []
        for owner in self._owners:
            if owner.kind == "StatefulSet":
                indexes = [
                    i for i in range(owner.replicas) if (owner.namespace, f"{owner.name}-{i}") not in self._names
                ]
                names = [f"{owner.name}-{i}" for i in indexes]
            else:
                missing = owner.replicas - self._owned.get(owner.uid, 0)
                names = []
                n = 0
                while len(names) < missing:
                    name = f"{owner.name}-{_safe_encode(str(_fnv32a(f'{owner.uid}/{n}'.encode())))[:5]}"
                    n += 1
                    if (owner.namespace, name) not in self._names:
                        names.append(name)
            for name in names:
                self._names.add((owner.namespace, name))
                ref = Ref(owner.ref.source, owner.ref.where, "Pod", name, owner.namespace)
                out.append((_pod(owner, name), ref))
        return out


def _replica_set_of(deployment: _Owner) -> _Owner:
    """The ReplicaSet a Deployment's controller makes for its current template."""
    digest = template_hash(deployment.template)
    template = copy.deepcopy(dict(deployment.template))
    meta = dict(template.get("metadata") or {})
    meta["labels"] = {**(meta.get("labels") or {}), TEMPLATE_HASH_LABEL: digest}
    template["metadata"] = meta
    name = f"{deployment.name}-{digest}"
    return _Owner(
        kind="ReplicaSet",
        name=name,
        namespace=deployment.namespace,
        uid=f"replicaset-{name}",
        api_version="apps/v1",
        annotations=dict(deployment.annotations),
        replicas=deployment.replicas,
        template=template,
        created=deployment.created,
        ref=deployment.ref,
        owner_refs=(deployment.controller_ref(),),
    )


def _pod(owner: _Owner, name: str) -> dict[str, Any]:
    template = owner.template
    tmeta = template.get("metadata") or {}
    labels = dict(tmeta.get("labels") or {})
    if owner.kind == "StatefulSet":
        labels[STATEFUL_POD_NAME_LABEL] = name
    meta: dict[str, Any] = {
        "name": name,
        "namespace": owner.namespace,
        "labels": labels,
        "annotations": dict(tmeta.get("annotations") or {}),
        "ownerReferences": [owner.controller_ref()],
    }
    if owner.created is not None:
        meta["creationTimestamp"] = owner.created
    spec = copy.deepcopy(dict(template.get("spec") or {}))
    if owner.kind == "StatefulSet":
        spec.setdefault("hostname", name)
    return {"apiVersion": "v1", "kind": "Pod", "metadata": meta, "spec": spec, "status": {"phase": "Pending"}}
