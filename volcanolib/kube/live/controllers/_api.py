"""What the controllers read and write through the API server: stores kept by watches, and plain writes.

A :class:`Store` is a reflector's handler: it holds every object of one
kind, and passes each change after the first list to a callback (the first
list only fills it: the controllers take over from the stores once every
kind is listed). A list that replaces the store later (after a ``410``) is
passed on as the changes it makes.

:class:`Writer` sends the controllers' writes (from any thread) and says
which failed; an object that already exists (on create) or is already
gone (on delete) is not a failure.
"""

from __future__ import annotations

import logging
import threading
from collections.abc import Callable, Mapping
from typing import Any, Final
from urllib.parse import quote

from volcanolib.kube.live._client import MERGE_PATCH, ApiError, KubeApi

__all__ = ["KINDS", "Store", "Writer", "merge_patch", "object_key"]

log = logging.getLogger("volcanolib.kube.live.controllers")

#: Kinds by name: (API prefix, plural, namespaced).
KINDS: Final[Mapping[str, tuple[str, str, bool]]] = {
    "Pod": ("/api/v1", "pods", True),
    "Namespace": ("/api/v1", "namespaces", False),
    "Service": ("/api/v1", "services", True),
    "ConfigMap": ("/api/v1", "configmaps", True),
    "Secret": ("/api/v1", "secrets", True),
    "NetworkPolicy": ("/apis/networking.k8s.io/v1", "networkpolicies", True),
    "Job": ("/apis/batch.volcano.sh/v1alpha1", "jobs", True),
    "PodGroup": ("/apis/scheduling.volcano.sh/v1beta1", "podgroups", True),
    "Queue": ("/apis/scheduling.volcano.sh/v1beta1", "queues", False),
    "Command": ("/apis/bus.volcano.sh/v1alpha1", "commands", True),
    "PriorityClass": ("/apis/scheduling.k8s.io/v1", "priorityclasses", False),
    "ReplicaSet": ("/apis/apps/v1", "replicasets", True),
    "StatefulSet": ("/apis/apps/v1", "statefulsets", True),
    "DaemonSet": ("/apis/apps/v1", "daemonsets", True),
    "batch/Job": ("/apis/batch/v1", "jobs", True),
}

#: What a store passes on: (kind, event type, the object, the object it replaces or ``None``).
Notify = Callable[[str, str, dict[str, Any], "dict[str, Any] | None"], None]


def object_key(obj: Mapping[str, Any]) -> str:
    """``namespace/name``, or ``name`` for a cluster-scoped object."""
    meta = obj.get("metadata") or {}
    namespace = meta.get("namespace") or ""
    return f"{namespace}/{meta.get('name', '')}" if namespace else str(meta.get("name", ""))


def collection_path(kind: str, namespace: str = "") -> str:
    """The path of a kind's collection (in one namespace when given)."""
    prefix, plural, namespaced = KINDS[kind]
    if namespaced and namespace:
        return f"{prefix}/namespaces/{quote(namespace)}/{plural}"
    return f"{prefix}/{plural}"


def object_path(kind: str, namespace: str, name: str, subresource: str = "") -> str:
    """The path of one object (and of its subresource)."""
    path = f"{collection_path(kind, namespace)}/{quote(name)}"
    return f"{path}/{subresource}" if subresource else path


class Store:
    """Every object of one kind, as the watch last showed it (a reflector's handler).

    :param kind: the kind (``Pod``, ``Job`` ...).
    :param notify: called with each change after the first list.
    """

    def __init__(self, kind: str, notify: Notify) -> None:
        self.kind = kind
        self.notify = notify
        self.lock = threading.Lock()
        self._objects: dict[str, dict[str, Any]] = {}
        self._listed = False

    def replace(self, items: list[dict[str, Any]]) -> None:
        """Hold exactly ``items``; after the first list, pass on what changed."""
        new = {object_key(obj): obj for obj in items}
        with self.lock:
            old, self._objects = self._objects, new
            first, self._listed = not self._listed, True
        if first:
            return
        for key, obj in new.items():
            before = old.get(key)
            if before is None:
                self.notify(self.kind, "ADDED", obj, None)
            elif _version(before) != _version(obj):
                self.notify(self.kind, "MODIFIED", obj, before)
        for key, obj in old.items():
            if key not in new:
                self.notify(self.kind, "DELETED", obj, obj)

    def event(self, kind: str, obj: dict[str, Any]) -> None:
        """Apply one watch event and pass it on."""
        key = object_key(obj)
        with self.lock:
            before = self._objects.get(key)
            if kind == "DELETED":
                self._objects.pop(key, None)
            else:
                self._objects[key] = obj
        self.notify(self.kind, kind, obj, before)

    def get(self, namespace: str, name: str) -> dict[str, Any] | None:
        """The object of that name (``namespace`` empty for a cluster-scoped kind), or ``None``."""
        with self.lock:
            return self._objects.get(f"{namespace}/{name}" if namespace else name)

    def items(self) -> list[dict[str, Any]]:
        """Every object, in the order the store got them."""
        with self.lock:
            return list(self._objects.values())


def _version(obj: Mapping[str, Any]) -> str:
    return str((obj.get("metadata") or {}).get("resourceVersion") or "")


def merge_patch(old: Any, new: Any) -> Any:
    """The JSON merge patch (RFC 7386) that turns ``old`` into ``new`` (``None`` deletes a key)."""
    if not isinstance(old, dict) or not isinstance(new, dict):
        return new
    patch: dict[str, Any] = {}
    for key, value in new.items():
        if key not in old:
            patch[key] = value
        elif old[key] != value:
            patch[key] = merge_patch(old[key], value)
    for key in old:
        if key not in new:
            patch[key] = None
    return patch


class Writer:
    """Plain writes to the API server (safe to call from several threads).

    :param api: the connection.
    :param may_write: asked before every write; ``False`` (a lost leader lease) drops it.
    """

    def __init__(self, api: KubeApi, may_write: Callable[[], bool] | None = None) -> None:
        self.api = api
        self.may_write = may_write
        #: Writes sent, by verb.
        self.counts: dict[str, int] = {}
        self._counting = threading.Lock()

    def _send(self, verb: str, method: str, path: str, body: Any = None, content_type: str | None = None) -> Any:
        if self.may_write is not None and not self.may_write():
            raise ApiError(0, f"{method} {path}: not leading: the write is dropped")
        with self._counting:
            self.counts[verb] = self.counts.get(verb, 0) + 1
        if content_type is None:
            return self.api.request(method, path, body=body)
        return self.api.request(method, path, body=body, content_type=content_type)

    def create(self, obj: Mapping[str, Any]) -> dict[str, Any] | None:
        """Create an object; ``None`` when one of that name exists.

        :raises ApiError: for any other refusal.
        """
        meta = obj.get("metadata") or {}
        kind = str(obj.get("kind"))
        if kind == "Job" and not str(obj.get("apiVersion", "")).startswith("batch.volcano.sh"):
            kind = "batch/Job"
        try:
            created: dict[str, Any] = self._send(
                "create", "POST", collection_path(kind, meta.get("namespace", "")), obj
            )
        except ApiError as exc:
            if exc.status == 409:
                return None
            raise
        return created

    def delete(self, kind: str, namespace: str, name: str, *, propagation: str | None = None) -> bool:
        """Delete an object; ``False`` when it is already gone.

        :raises ApiError: for any other refusal.
        """
        body = {"kind": "DeleteOptions", "apiVersion": "v1", "propagationPolicy": propagation} if propagation else None
        try:
            self._send("delete", "DELETE", object_path(kind, namespace, name), body)
        except ApiError as exc:
            if exc.status == 404:
                return False
            raise
        return True

    def patch(self, kind: str, namespace: str, name: str, patch: Any, subresource: str = "") -> bool:
        """Merge-patch an object (or its subresource); ``False`` when it is gone.

        :raises ApiError: for any other refusal.
        """
        try:
            self._send("patch", "PATCH", object_path(kind, namespace, name, subresource), patch, MERGE_PATCH)
        except ApiError as exc:
            if exc.status == 404:
                return False
            raise
        return True

    def get(self, kind: str, namespace: str, name: str) -> dict[str, Any] | None:
        """Read one object; ``None`` when it does not exist or cannot be read."""
        try:
            found: dict[str, Any] = self.api.request("GET", object_path(kind, namespace, name))
        except ApiError as exc:
            if exc.status not in (403, 404):
                log.info("cannot read %s %s/%s: %s", kind, namespace, name, exc)
            return None
        return found
