"""The resource types the stand-in serves, and the discovery documents built from them."""

from __future__ import annotations

from dataclasses import dataclass, field
from functools import cached_property
from typing import Any

ALL_VERBS = ("create", "delete", "deletecollection", "get", "list", "patch", "update", "watch")


@dataclass(frozen=True)
class ResourceType:
    """One REST resource (``pods``, ``podgroups`` ...) with its group, version and scope.

    :param group: API group, ``""`` for the core group.
    :param version: API version inside the group.
    :param plural: the URL name (``pods``).
    :param kind: the object kind (``Pod``).
    :param namespaced: whether objects live in a namespace.
    :param short_names: kubectl short names.
    :param subresources: subresource names served (``status``, ``binding``, ``eviction``).
    :param crd: whether the type is a custom resource (lists carry kind and apiVersion on
        items; an update needs ``metadata.resourceVersion``).
    :param field_labels: the field selector labels accepted besides ``metadata.name`` and
        ``metadata.namespace``.
    """

    group: str
    version: str
    plural: str
    kind: str
    namespaced: bool
    short_names: tuple[str, ...] = ()
    subresources: tuple[str, ...] = ()
    crd: bool = False
    field_labels: tuple[str, ...] = ()
    categories: tuple[str, ...] = field(default=())

    @property
    def api_version(self) -> str:
        """``v1`` for the core group, ``group/version`` otherwise."""
        return f"{self.group}/{self.version}" if self.group else self.version

    @property
    def key(self) -> tuple[str, str]:
        """``(group, plural)``: how the store names the type."""
        return (self.group, self.plural)

    def list_item(self, raw: bytes) -> bytes:
        """An object's JSON as an item of a list: a built-in type's list items carry no kind
        and apiVersion (the API server encodes them without type metadata), a custom
        resource's do. ``raw`` must start with kind then apiVersion, as the store writes it."""
        prefix = self._type_prefix
        if self.crd or not raw.startswith(prefix):
            return raw
        return b"{" + raw[len(prefix) :]

    @cached_property
    def _type_prefix(self) -> bytes:
        return f'{{"kind":"{self.kind}","apiVersion":"{self.api_version}",'.encode()

    @property
    def singular(self) -> str:
        """The lower-case kind, as discovery reports it."""
        return self.kind.lower()


POD_FIELDS = ("spec.nodeName", "spec.schedulerName", "status.phase", "spec.restartPolicy", "status.podIP")

RESOURCES: tuple[ResourceType, ...] = (
    ResourceType("", "v1", "namespaces", "Namespace", False, ("ns",), ("status",), field_labels=("status.phase",)),
    ResourceType("", "v1", "nodes", "Node", False, ("no",), ("status",), field_labels=("spec.unschedulable",)),
    ResourceType(
        "",
        "v1",
        "pods",
        "Pod",
        True,
        ("po",),
        ("status", "binding", "eviction"),
        field_labels=POD_FIELDS,
        categories=("all",),
    ),
    ResourceType(
        "",
        "v1",
        "events",
        "Event",
        True,
        ("ev",),
        field_labels=(
            "involvedObject.kind",
            "involvedObject.name",
            "involvedObject.namespace",
            "involvedObject.uid",
            "involvedObject.apiVersion",
            "involvedObject.resourceVersion",
            "involvedObject.fieldPath",
            "reason",
            "reportingComponent",
            "source",
            "type",
        ),
    ),
    ResourceType("", "v1", "configmaps", "ConfigMap", True, ("cm",)),
    ResourceType("", "v1", "secrets", "Secret", True),
    ResourceType("", "v1", "services", "Service", True, ("svc",), ("status",)),
    ResourceType("", "v1", "resourcequotas", "ResourceQuota", True, ("quota",), ("status",)),
    ResourceType("", "v1", "persistentvolumeclaims", "PersistentVolumeClaim", True, ("pvc",), ("status",)),
    ResourceType("", "v1", "persistentvolumes", "PersistentVolume", False, ("pv",), ("status",)),
    ResourceType("scheduling.k8s.io", "v1", "priorityclasses", "PriorityClass", False, ("pc",)),
    ResourceType("coordination.k8s.io", "v1", "leases", "Lease", True),
    ResourceType("policy", "v1", "poddisruptionbudgets", "PodDisruptionBudget", True, ("pdb",), ("status",)),
    ResourceType("networking.k8s.io", "v1", "networkpolicies", "NetworkPolicy", True, ("netpol",)),
    # workload objects are stored, not run: no Deployment or ReplicaSet controller makes their pods
    ResourceType("apps", "v1", "deployments", "Deployment", True, ("deploy",), ("status",)),
    ResourceType("apps", "v1", "replicasets", "ReplicaSet", True, ("rs",), ("status",)),
    ResourceType("apps", "v1", "statefulsets", "StatefulSet", True, ("sts",), ("status",)),
    ResourceType("apps", "v1", "daemonsets", "DaemonSet", True, ("ds",), ("status",)),
    ResourceType("storage.k8s.io", "v1", "csinodes", "CSINode", False),
    ResourceType("storage.k8s.io", "v1", "storageclasses", "StorageClass", False, ("sc",)),
    ResourceType(
        "scheduling.volcano.sh", "v1beta1", "podgroups", "PodGroup", True, ("pg", "podgroup-v1beta1"), crd=True
    ),
    ResourceType(
        "scheduling.volcano.sh", "v1beta1", "queues", "Queue", False, ("q", "queue-v1beta1"), ("status",), crd=True
    ),
    ResourceType("batch.volcano.sh", "v1alpha1", "jobs", "Job", True, ("vcjob", "vj"), ("status",), crd=True),
    ResourceType("bus.volcano.sh", "v1alpha1", "commands", "Command", True, crd=True),
    ResourceType("topology.volcano.sh", "v1alpha1", "hypernodes", "HyperNode", False, ("hn",), ("status",), crd=True),
    ResourceType("nodeinfo.volcano.sh", "v1alpha1", "numatopologies", "Numatopology", False, ("numatopo",), crd=True),
)

# Subresources whose verbs differ from the main resource's.
_SUBRESOURCE_VERBS = {
    "status": ("get", "patch", "update"),
    "binding": ("create",),
    "eviction": ("create",),
}


def by_path(resources: tuple[ResourceType, ...]) -> dict[tuple[str, str, str], ResourceType]:
    """Index resources by ``(group, version, plural)``."""
    return {(r.group, r.version, r.plural): r for r in resources}


def group_versions(resources: tuple[ResourceType, ...]) -> dict[str, list[str]]:
    """Map each non-core group to its versions, in first-seen order."""
    out: dict[str, list[str]] = {}
    for r in resources:
        if r.group and r.version not in out.setdefault(r.group, []):
            out[r.group].append(r.version)
    return out


def api_versions_doc() -> dict[str, Any]:
    """The ``/api`` document (``APIVersions``)."""
    return {
        "kind": "APIVersions",
        "versions": ["v1"],
        "serverAddressByClientCIDRs": [{"clientCIDR": "0.0.0.0/0", "serverAddress": "127.0.0.1"}],
    }


def api_group_list_doc(resources: tuple[ResourceType, ...]) -> dict[str, Any]:
    """The ``/apis`` document (``APIGroupList``)."""
    groups = []
    for name, versions in group_versions(resources).items():
        groups.append(_group_doc(name, versions))
    return {"kind": "APIGroupList", "apiVersion": "v1", "groups": groups}


def api_group_doc(resources: tuple[ResourceType, ...], group: str) -> dict[str, Any] | None:
    """The ``/apis/<group>`` document (``APIGroup``), or None for an unknown group."""
    versions = group_versions(resources).get(group)
    if versions is None:
        return None
    return {"kind": "APIGroup", "apiVersion": "v1", **_group_doc(group, versions)}


def _group_doc(name: str, versions: list[str]) -> dict[str, Any]:
    gvs = [{"groupVersion": f"{name}/{v}", "version": v} for v in versions]
    return {"name": name, "versions": gvs, "preferredVersion": gvs[0]}


def resource_list_doc(resources: tuple[ResourceType, ...], group: str, version: str) -> dict[str, Any] | None:
    """The ``/api/v1`` or ``/apis/<group>/<version>`` document (``APIResourceList``)."""
    chosen = [r for r in resources if r.group == group and r.version == version]
    if not chosen:
        return None
    entries: list[dict[str, Any]] = []
    for r in chosen:
        main: dict[str, Any] = {
            "name": r.plural,
            "singularName": r.singular,
            "namespaced": r.namespaced,
            "kind": r.kind,
            "verbs": list(ALL_VERBS),
        }
        if r.short_names:
            main["shortNames"] = list(r.short_names)
        if r.categories:
            main["categories"] = list(r.categories)
        entries.append(main)
        for sub in r.subresources:
            kind = {"binding": "Binding", "eviction": "Eviction"}.get(sub, r.kind)
            sub_entry: dict[str, Any] = {
                "name": f"{r.plural}/{sub}",
                "singularName": "",
                "namespaced": r.namespaced,
                "kind": kind,
                "verbs": list(_SUBRESOURCE_VERBS.get(sub, ("get", "patch", "update"))),
            }
            if sub == "eviction":
                sub_entry["group"] = "policy"
                sub_entry["version"] = "v1"
            entries.append(sub_entry)
    return {
        "kind": "APIResourceList",
        "apiVersion": "v1",
        "groupVersion": f"{group}/{version}" if group else version,
        "resources": entries,
    }


def openapi_v3_root(resources: tuple[ResourceType, ...]) -> dict[str, Any]:
    """The ``/openapi/v3`` discovery document: one entry per group-version."""
    paths = {}
    for r in resources:
        prefix = f"apis/{r.group}/{r.version}" if r.group else f"api/{r.version}"
        paths[prefix] = {"serverRelativeURL": f"/openapi/v3/{prefix}?hash=standin"}
    return {"paths": paths}


def openapi_v3_doc(resources: tuple[ResourceType, ...], group: str, version: str) -> dict[str, Any] | None:
    """A minimal OpenAPI v3 document for one group-version: the object paths with a PATCH
    operation that takes ``fieldValidation``, which is how kubectl learns that the server
    validates fields itself (so it needs no schema)."""
    chosen = [r for r in resources if r.group == group and r.version == version]
    if not chosen:
        return None
    paths: dict[str, Any] = {}
    for r in chosen:
        prefix = f"/apis/{r.group}/{r.version}" if r.group else f"/api/{r.version}"
        scope = "/namespaces/{namespace}" if r.namespaced else ""
        gvk = {"group": r.group, "version": r.version, "kind": r.kind}
        op = {
            "x-kubernetes-group-version-kind": gvk,
            "parameters": [{"name": "fieldValidation", "in": "query", "schema": {"type": "string"}}],
            "responses": {"200": {"description": "OK"}},
        }
        paths[f"{prefix}{scope}/{r.plural}/{{name}}"] = {"patch": op}
    return {
        "openapi": "3.0.0",
        "info": {"title": "Kubernetes", "version": "v1.32.0"},
        "paths": paths,
        "components": {"schemas": {}},
    }
