"""The object store behind the stand-in: objects by type and key, one global resourceVersion,
a bounded event history per type for watches, list snapshots for ``continue`` tokens, and the
few behaviours of controllers and kubelets a scheduler relies on (graceful pod deletion,
PriorityClass admission, PodDisruptionBudgets on eviction)."""

from __future__ import annotations

import base64
import copy
import gc
import json
import threading
import time
from collections import OrderedDict
from collections.abc import Callable, Iterable, Mapping
from typing import Any

from sortedcontainers import SortedDict

from . import disruption, errors
from .errors import ApiError
from .patch import PatchError, apply_patch
from .records import Event, Fault, History, Key, Obj, Stored, dumps, now_iso
from .resources import RESOURCES, ResourceType, by_path
from .selectors import SelectorError, match_expressions_selector, parse_field_selector, parse_label_selector

DEFAULT_NAMESPACES = ("default", "kube-system", "kube-public", "kube-node-lease")


class Store:
    """All objects and their history; every method is thread-safe.

    :param history_size: events kept per resource type for watches; a watch or list
        ``continue`` from further back gets ``410 Gone``.
    :param pod_deletion_delay: seconds a bound pod deleted with a grace period stays
        terminating (``deletionTimestamp`` set) before it is removed, as a kubelet would;
        capped by the grace period. ``None``: until :meth:`finalize_pod`.
    :param run_bound_pods: when true, a bound pod turns ``Running`` right after its binding,
        as a kubelet would start it.
    :param podgroup_status_subresource: serve ``podgroups/status`` (Volcano's CRD declares
        none, so by default a PodGroup's status is written with a full update).
    """

    def __init__(
        self,
        history_size: int = 10_000,
        pod_deletion_delay: float | None = 0.05,
        run_bound_pods: bool = False,
        podgroup_status_subresource: bool = False,
        resources: tuple[ResourceType, ...] = RESOURCES,
    ) -> None:
        if podgroup_status_subresource:
            resources = tuple(
                ResourceType(**{**r.__dict__, "subresources": ("status",)}) if r.plural == "podgroups" else r
                for r in resources
            )
        self.resources = resources
        self.types = by_path(resources)
        self.by_plural = {(r.group, r.plural): r for r in resources}
        lock = threading.Lock()
        self.cond = threading.Condition(lock)  # "with store.cond" holds the store's one lock
        # One condition per type on the same lock: a change wakes only that type's watches.
        self.changed = {r.key: threading.Condition(lock) for r in resources}
        self.uids: dict[str, tuple[tuple[str, str], Key]] = {}  # every stored object by UID
        self.dependents: dict[str, set[tuple[tuple[str, str], Key]]] = {}  # owner UID -> may-be dependents
        self.rv = 1
        self.uid_counter = 0
        self.tables: dict[tuple[str, str], SortedDict[Key, Stored]] = {r.key: SortedDict() for r in resources}
        self.history: dict[tuple[str, str], History] = {r.key: History(history_size) for r in resources}
        self.history_size = history_size
        self.snapshots: OrderedDict[int, tuple[int, list[Stored]]] = OrderedDict()
        self.snapshot_counter = 0
        self.pod_deletion_delay = pod_deletion_delay
        self.run_bound_pods = run_bound_pods
        self.faults: list[Fault] = []
        self.watch_generation = 0  # bumped to drop every open watch
        self.abrupt_drop = True
        self.watch_event_budget: int | None = None  # close each new watch after this many events
        self.bookmark_interval = 1.0
        self.stopping = False
        self.requests: list[tuple[str, str, int]] = []  # (method, path, status code)
        self.request_times: list[float] = []  # when each of those was answered (monotonic seconds)
        self.timers: list[threading.Timer] = []
        ns_type = self.by_plural[("", "namespaces")]
        for ns in DEFAULT_NAMESPACES:
            self.create(ns_type, "", {"metadata": {"name": ns}})

    # ------------------------------------------------------------------ helpers

    def type_of(self, group: str, plural: str) -> ResourceType:
        """The resource type named ``plural`` in ``group``.

        :raises KeyError: for an unknown type.
        """
        return self.by_plural[(group, plural)]

    def _next_uid(self) -> str:
        self.uid_counter += 1
        h = f"{self.uid_counter:032x}"
        return f"{h[:8]}-{h[8:12]}-4{h[13:16]}-8{h[17:20]}-{h[20:]}"

    def _commit(self, rt: ResourceType, key: Key, obj: Obj | None, etype: str, old: Stored | None) -> Stored:
        """Store a new version (or delete with ``obj`` None), record the event, wake watchers.

        Must be called with the lock held.
        """
        self.rv += 1
        rv = self.rv
        table = self.tables[rt.key]
        if obj is None:
            assert old is not None
            gone = old.copy()
            gone["metadata"]["resourceVersion"] = str(rv)
            stored = Stored(gone, rv)
            del table[key]
            self.uids.pop(gone["metadata"].get("uid", ""), None)
        else:
            obj["metadata"]["resourceVersion"] = str(rv)
            # kind and apiVersion first: a list of a built-in type drops them from its
            # items by cutting that prefix (see ResourceType.list_item).
            typed: Obj = {"kind": rt.kind, "apiVersion": rt.api_version}
            typed.update((k, v) for k, v in obj.items() if k not in typed)
            stored = Stored(typed, rv)
            table[key] = stored
            meta = typed["metadata"]
            self.uids[meta["uid"]] = (rt.key, key)
            for ref in meta.get("ownerReferences") or ():
                self.dependents.setdefault(ref.get("uid", ""), set()).add((rt.key, key))
        self.history[rt.key].append(Event(rv, etype, stored, old, key[0]))
        self.changed[rt.key].notify_all()
        if obj is None:
            self._collect_dependents(stored.obj["metadata"].get("uid", ""))
        return stored

    def _dependents(self, uid: str) -> list[tuple[ResourceType, Stored]]:
        """The objects that name ``uid`` among their ownerReferences."""
        out = []
        for tkey, key in sorted(self.dependents.get(uid, ())):
            st = self.tables[tkey].get(key)
            if st is not None and any(r.get("uid") == uid for r in st.obj["metadata"].get("ownerReferences") or ()):
                out.append((self.by_plural[tkey], st))
        return out

    def _collect_dependents(self, uid: str) -> None:
        """The garbage collector: delete the objects whose every owner is gone (background
        propagation, done at once)."""
        dependents = self._dependents(uid)
        self.dependents.pop(uid, None)
        for rt, st in dependents:
            refs = st.obj["metadata"].get("ownerReferences") or ()
            if not any(r.get("uid") in self.uids for r in refs) and not st.obj["metadata"].get("deletionTimestamp"):
                self._delete(rt, st, {})

    def _get(self, rt: ResourceType, ns: str, name: str) -> Stored:
        st = self.tables[rt.key].get((ns if rt.namespaced else "", name))
        if st is None:
            raise errors.not_found(rt.group, rt.plural, name)
        return st

    def _check_namespace(self, rt: ResourceType, ns: str) -> None:
        if rt.namespaced and ("", ns) not in self.tables[("", "namespaces")]:
            raise errors.not_found("", "namespaces", ns)

    # ------------------------------------------------------------------ reads

    def get(self, rt: ResourceType, ns: str, name: str) -> Stored:
        """The current version of one object.

        :raises ApiError: ``404`` when absent.
        """
        with self.cond:
            return self._get(rt, ns, name)

    def objects(self, rt: ResourceType, ns: str | None = None) -> list[Obj]:
        """Copies of every object of a type (in one namespace when ``ns`` is given)."""
        with self.cond:
            return [
                st.copy()
                for (kns, _), st in self.tables[rt.key].items()
                if ns is None or kns == ns or not rt.namespaced
            ]

    @staticmethod
    def make_filter(rt: ResourceType, label_selector: str, field_selector: str) -> Callable[[Obj], bool] | None:
        """Compile the two selectors of a list or watch into one predicate (None: no filtering).

        :raises ApiError: ``400`` for a selector the API server would refuse.
        """
        preds: list[Callable[[Obj], bool]] = []
        try:
            if label_selector:
                lp = parse_label_selector(label_selector)
                preds.append(lambda o: lp(o.get("metadata", {}).get("labels") or {}))
            if field_selector:
                preds.append(parse_field_selector(field_selector, rt.field_labels))
        except SelectorError as exc:
            raise errors.bad_request(str(exc)) from exc
        if not preds:
            return None
        return lambda o: all(p(o) for p in preds)

    def list_page(
        self,
        rt: ResourceType,
        ns: str | None,
        pred: Callable[[Obj], bool] | None,
        limit: int = 0,
        continue_token: str = "",
    ) -> tuple[int, list[Stored], str, int | None]:
        """One page of a list.

        :param ns: the namespace, or None for all namespaces.
        :param limit: page size; 0 for everything.
        :param continue_token: the token of the previous page.
        :returns: ``(list resourceVersion, items, continue token or "", remaining item count or None)``.
        :raises ApiError: ``410 Expired`` for a token whose snapshot is gone, ``400`` for a
            malformed token.
        """
        with self.cond:
            if continue_token:
                try:
                    tok = json.loads(base64.b64decode(continue_token))
                    snap_id, pos, list_rv = int(tok["id"]), int(tok["pos"]), int(tok["rv"])
                except (ValueError, KeyError, TypeError) as exc:
                    raise errors.bad_request(f"continue key is not valid: {exc}") from exc
                snap = self.snapshots.get(snap_id)
                if snap is None:
                    raise errors.expired(
                        "The provided continue parameter is too old to display a consistent list result. "
                        "You can start a new list without the continue parameter."
                    )
                self.snapshots.move_to_end(snap_id)
                items = snap[1]
            else:
                list_rv = self.rv
                pos = 0
                table = self.tables[rt.key]
                if ns is not None and rt.namespaced:
                    lo = table.bisect_left((ns, ""))
                    hi = table.bisect_left((ns + "\x00", ""))
                    items = list(table.values()[lo:hi])
                else:
                    items = list(table.values())
                snap_id = -1
        # Filtering and slicing need no lock: Stored objects never change.
        out: list[Stored] = []
        i = pos
        n = len(items)
        while i < n and (limit <= 0 or len(out) < limit):
            st = items[i]
            i += 1
            if pred is None or pred(st.obj):
                out.append(st)
        if i >= n or limit <= 0:
            return list_rv, out, "", None
        with self.cond:
            if snap_id < 0:
                self.snapshot_counter += 1
                snap_id = self.snapshot_counter
                self.snapshots[snap_id] = (list_rv, items)
                while len(self.snapshots) > 16:
                    self.snapshots.popitem(last=False)
        token = base64.b64encode(dumps({"id": snap_id, "pos": i, "rv": list_rv})).decode()
        remaining = n - i if pred is None else None
        return list_rv, out, token, remaining

    # ------------------------------------------------------------------ writes

    def create(self, rt: ResourceType, ns: str, body: Obj) -> Stored:
        """Create an object (metadata filled in as the API server does).

        :raises ApiError: ``409 AlreadyExists``, ``404`` for a missing namespace, ``422``
            for a missing name, ``403`` for an unknown PriorityClass.
        """
        with self.cond:
            return self._create(rt, ns, body)

    def _create(self, rt: ResourceType, ns: str, body: Obj, copy_body: bool = True) -> Stored:
        obj = copy.deepcopy(body) if copy_body else body
        meta = obj.setdefault("metadata", {})
        if not isinstance(meta, dict):
            raise errors.bad_request("metadata must be an object")
        name = meta.get("name") or ""
        if not name and meta.get("generateName"):
            name = f"{meta['generateName']}{self.uid_counter + 1:05x}"[-253:]
        if not name:
            raise errors.invalid(rt.kind, rt.group, rt.plural, "", "metadata.name", "Required value: name is required")
        body_ns = meta.get("namespace")
        if rt.namespaced:
            if body_ns and ns and body_ns != ns:
                raise errors.bad_request(
                    "the namespace of the provided object does not match the namespace sent on the request"
                )
            ns = ns or body_ns or "default"
            self._check_namespace(rt, ns)
            meta["namespace"] = ns
        else:
            ns = ""
            meta.pop("namespace", None)
        key = (ns, name)
        if key in self.tables[rt.key]:
            raise errors.already_exists(rt.group, rt.plural, name)
        meta["name"] = name
        meta["uid"] = self._next_uid()
        meta["creationTimestamp"] = now_iso()
        meta.pop("deletionTimestamp", None)
        meta.pop("resourceVersion", None)
        if rt.crd:
            meta["generation"] = 1
        obj["kind"] = rt.kind
        obj["apiVersion"] = rt.api_version
        self._admit(rt, obj)
        return self._commit(rt, key, obj, "ADDED", None)

    def _admit(self, rt: ResourceType, obj: Obj) -> None:
        """Defaults and admission the scheduler can observe."""
        if rt.plural == "pods":
            spec = obj.setdefault("spec", {})
            name = obj["metadata"]["name"]
            containers = spec.get("containers")
            if not containers:
                raise errors.invalid("Pod", "", "pods", name, "spec.containers", "Required value")
            for i, c in enumerate(containers):
                for field in ("name", "image"):
                    if not c.get(field):
                        raise errors.invalid("Pod", "", "pods", name, f"spec.containers[{i}].{field}", "Required value")
            spec.setdefault("schedulerName", "default-scheduler")
            spec.setdefault("terminationGracePeriodSeconds", 30)
            spec.setdefault("restartPolicy", "Always")
            pc_name = spec.get("priorityClassName")
            pcs = self.tables[("scheduling.k8s.io", "priorityclasses")]
            if pc_name:
                pc = pcs.get(("", pc_name))
                if pc is None:
                    name = obj["metadata"]["name"]
                    raise ApiError(
                        403, "Forbidden", f'pods "{name}" is forbidden: no PriorityClass with name {pc_name} was found'
                    )
                spec["priority"] = pc.obj.get("value", 0)
            elif "priority" not in spec and pcs:
                default = next((st.obj for st in pcs.values() if st.obj.get("globalDefault")), None)
                spec["priority"] = default.get("value", 0) if default else 0
                if default:
                    spec["priorityClassName"] = default["metadata"]["name"]
            elif "priority" not in spec:
                spec["priority"] = 0
            status = obj.setdefault("status", {})
            status.setdefault("phase", "Pending")
        elif rt.plural == "namespaces":
            obj.setdefault("spec", {"finalizers": ["kubernetes"]})
            obj.setdefault("status", {})["phase"] = "Active"
        elif rt.plural == "queues":
            obj.setdefault("status", {}).setdefault("state", "Open")

    def update(self, rt: ResourceType, ns: str, name: str, body: Obj, subresource: str = "") -> Stored:
        """Replace an object (PUT), or only its status with ``subresource="status"``.

        :raises ApiError: ``404``; ``409 Conflict`` for a stale ``metadata.resourceVersion``;
            ``422`` for a custom resource without one, or a forbidden pod spec change.
        """
        with self.cond:
            old = self._get(rt, ns, name)
            rv_text = (body.get("metadata") or {}).get("resourceVersion")
            if rv_text:
                if str(rv_text) != str(old.rv):
                    raise errors.conflict(rt.group, rt.plural, name, errors.STALE)
            elif rt.crd:
                raise errors.invalid(
                    rt.kind,
                    rt.group,
                    rt.plural,
                    name,
                    "metadata.resourceVersion",
                    "Invalid value: 0x0: must be specified for an update",
                )
            return self._replace(rt, old, copy.deepcopy(body), subresource)

    def patch(
        self, rt: ResourceType, ns: str, name: str, content_type: str, patch: Any, subresource: str = ""
    ) -> Stored:
        """Patch an object (merge, strategic merge or JSON patch), or only its status.

        :raises ApiError: ``404``; ``409`` when the patch carries a stale resourceVersion;
            ``422`` when the patch does not apply.
        """
        with self.cond:
            old = self._get(rt, ns, name)
            try:
                new = apply_patch(content_type, old.copy(), patch)
            except PatchError as exc:
                raise errors.invalid(rt.kind, rt.group, rt.plural, name, "patch", str(exc)) from exc
            if not isinstance(new, dict):
                raise errors.bad_request("the patch did not produce an object")
            rv_text = (new.get("metadata") or {}).get("resourceVersion")
            if rv_text and str(rv_text) != str(old.rv):
                raise errors.conflict(rt.group, rt.plural, name, errors.STALE)
            return self._replace(rt, old, new, subresource)

    def _replace(self, rt: ResourceType, old: Stored, new: Obj, subresource: str) -> Stored:
        prev = old.obj
        name = prev["metadata"]["name"]
        key = (prev["metadata"].get("namespace", ""), name)
        if subresource == "status":
            if "status" not in rt.subresources:
                raise errors.not_found(rt.group, rt.plural, name)
            obj = old.copy()
            obj["status"] = new.get("status", {})
        else:
            meta = new.setdefault("metadata", {})
            if meta.get("name", name) != name:
                raise errors.bad_request("the name of the object does not match the name on the URL")
            obj = new
            if "status" in rt.subresources:
                if "status" in prev:
                    obj["status"] = copy.deepcopy(prev["status"])
                else:
                    obj.pop("status", None)
            if rt.plural == "pods":
                self._check_pod_spec(prev, obj)
            for field in (
                "name",
                "namespace",
                "uid",
                "creationTimestamp",
                "deletionTimestamp",
                "deletionGracePeriodSeconds",
                "generation",
            ):
                if field in prev["metadata"]:
                    meta[field] = prev["metadata"][field]
                else:
                    meta.pop(field, None)
            if "generation" in prev["metadata"] and obj.get("spec") != prev.get("spec"):
                meta["generation"] = prev["metadata"]["generation"] + 1
        obj["kind"] = rt.kind
        obj["apiVersion"] = rt.api_version
        meta = obj["metadata"]
        if meta.get("deletionTimestamp") and not meta.get("finalizers") and prev["metadata"].get("finalizers"):
            return self._commit(rt, key, None, "DELETED", old)
        return self._commit(rt, key, obj, "MODIFIED", old)

    @staticmethod
    def _check_pod_spec(prev: Obj, new: Obj) -> None:
        """Pods accept only image, activeDeadlineSeconds, tolerations and scheduling gate changes."""

        def comparable(spec: Any) -> Any:
            spec = copy.deepcopy(spec or {})
            for field in ("activeDeadlineSeconds", "tolerations", "schedulingGates"):
                spec.pop(field, None)
            for group in ("containers", "initContainers"):
                for c in spec.get(group) or []:
                    c.pop("image", None)
            return spec

        old_spec, new_spec = prev.get("spec"), new.get("spec")
        if old_spec == new_spec:
            return
        name = prev["metadata"]["name"]
        if comparable(old_spec) != comparable(new_spec):
            raise errors.invalid(
                "Pod",
                "",
                "pods",
                name,
                "spec",
                "Forbidden: pod updates may not change fields other than `spec.containers[*].image`, "
                "`spec.initContainers[*].image`, `spec.activeDeadlineSeconds`, `spec.tolerations` "
                "(only additions to existing tolerations), `spec.schedulingGates`",
            )
        if (new_spec or {}).get("schedulingGates") and not (old_spec or {}).get("schedulingGates"):
            raise errors.invalid("Pod", "", "pods", name, "spec.schedulingGates", "Forbidden: only deletion is allowed")

    def delete(self, rt: ResourceType, ns: str, name: str, options: Mapping[str, Any] | None = None) -> Stored:
        """Delete an object, gracefully for a bound pod and for an object with finalizers.

        :param options: a ``DeleteOptions`` (``gracePeriodSeconds``, ``preconditions``).
        :returns: the object as last stored (with ``deletionTimestamp`` when deletion is
            graceful).
        :raises ApiError: ``404``; ``409`` when a precondition fails.
        """
        options = options or {}
        with self.cond:
            old = self._get(rt, ns, name)
            pre = options.get("preconditions") or {}
            meta = old.obj["metadata"]
            if pre.get("uid") and pre["uid"] != meta.get("uid"):
                raise errors.conflict(
                    rt.group,
                    rt.plural,
                    name,
                    f"Precondition failed: UID in precondition: {pre['uid']}, UID in object meta: {meta.get('uid')}",
                )
            if pre.get("resourceVersion") and str(pre["resourceVersion"]) != str(old.rv):
                raise errors.conflict(
                    rt.group,
                    rt.plural,
                    name,
                    f"Precondition failed: ResourceVersion in precondition: {pre['resourceVersion']}, "
                    f"ResourceVersion in object meta: {old.rv}",
                )
            return self._delete(rt, old, options)

    def _delete(self, rt: ResourceType, old: Stored, options: Mapping[str, Any]) -> Stored:
        meta = old.obj["metadata"]
        key = (meta.get("namespace", ""), meta["name"])
        if rt.plural == "namespaces":
            for other in self.resources:
                if other.namespaced:
                    table = self.tables[other.key]
                    for k in [k for k in table if k[0] == meta["name"]]:
                        if k in table:  # not yet collected as another object's dependent
                            self._commit(other, k, None, "DELETED", table[k])
            return self._commit(rt, key, None, "DELETED", old)
        if options.get("propagationPolicy") == "Orphan":
            uid = meta.get("uid", "")
            for dep_rt, dep in self._dependents(uid):
                orphan = dep.copy()
                refs = [r for r in orphan["metadata"]["ownerReferences"] if r.get("uid") != uid]
                orphan["metadata"]["ownerReferences"] = refs
                dep_meta = orphan["metadata"]
                self._commit(dep_rt, (dep_meta.get("namespace", ""), dep_meta["name"]), orphan, "MODIFIED", dep)
        grace: Any = options.get("gracePeriodSeconds")
        graceful = False
        if rt.plural == "pods":
            spec = old.obj.get("spec") or {}
            if grace is None:
                grace = spec.get("terminationGracePeriodSeconds", 30)
            phase = (old.obj.get("status") or {}).get("phase")
            graceful = bool(spec.get("nodeName")) and int(grace) > 0 and phase not in ("Succeeded", "Failed")
        if meta.get("finalizers") or graceful:
            shorter = graceful and int(grace) < int(meta.get("deletionGracePeriodSeconds", 0))
            if meta.get("deletionTimestamp") and not shorter:
                return old
            obj = old.copy()
            obj["metadata"]["deletionTimestamp"] = now_iso(time.time() + (int(grace) if graceful else 0))
            obj["metadata"]["deletionGracePeriodSeconds"] = int(grace) if graceful else 0
            stored = self._commit(rt, key, obj, "MODIFIED", old)
            if graceful and not meta.get("finalizers") and self.pod_deletion_delay is not None:
                delay = min(float(grace), self.pod_deletion_delay)
                timer = threading.Timer(delay, self.finalize_pod, (key[0], key[1], meta.get("uid")))
                timer.daemon = True
                self.timers = [t for t in self.timers if t.is_alive()]
                self.timers.append(timer)
                timer.start()
            return stored
        return self._commit(rt, key, None, "DELETED", old)

    def delete_collection(
        self,
        rt: ResourceType,
        ns: str | None,
        pred: Callable[[Obj], bool] | None,
        options: Mapping[str, Any] | None = None,
    ) -> list[Stored]:
        """Delete every matching object; returns what was deleted."""
        with self.cond:
            table = self.tables[rt.key]
            chosen = [
                st
                for (kns, _), st in table.items()
                if (ns is None or not rt.namespaced or kns == ns) and (pred is None or pred(st.obj))
            ]
            return [self._delete(rt, st, options or {}) for st in chosen]

    def finalize_pod(self, ns: str, name: str, uid: str | None = None) -> bool:
        """Remove a terminating pod, as its kubelet does when the containers have stopped.

        :returns: whether a pod was removed.
        """
        rt = self.by_plural[("", "pods")]
        with self.cond:
            st = self.tables[rt.key].get((ns, name))
            if st is None or not st.obj["metadata"].get("deletionTimestamp"):
                return False
            if uid is not None and st.obj["metadata"].get("uid") != uid:
                return False
            self._commit(rt, (ns, name), None, "DELETED", st)
            return True

    # ------------------------------------------------------------------ subresources

    def bind(self, ns: str, name: str, binding: Mapping[str, Any]) -> None:
        """Bind a pod to a node (``pods/binding``).

        :raises ApiError: ``404`` for a missing pod; ``409 Conflict`` when the pod is already
            bound, is terminating, still has scheduling gates, or its UID differs from the
            binding's.
        """
        rt = self.by_plural[("", "pods")]
        target = binding.get("target") or {}
        node = target.get("name") or ""
        if not node:
            raise errors.invalid("Binding", "", "bindings", name, "target.name", "Required value")
        with self.cond:
            old = self._get(rt, ns, name)
            meta = old.obj["metadata"]
            bmeta = binding.get("metadata") or {}
            if bmeta.get("uid") and bmeta["uid"] != meta.get("uid"):
                raise errors.conflict(
                    "",
                    "pods",
                    name,
                    f"Precondition failed: UID in precondition: {bmeta['uid']}, UID in object meta: {meta.get('uid')}",
                )
            if meta.get("deletionTimestamp"):
                raise errors.conflict(
                    "", "pods/binding", name, f"pod {name} is being deleted, cannot be assigned to a host"
                )
            if (old.obj.get("spec") or {}).get("schedulingGates"):
                raise errors.conflict("", "pods/binding", name, f"pod {name} has non-empty .spec.schedulingGates")
            current = (old.obj.get("spec") or {}).get("nodeName")
            if current:
                raise errors.conflict("", "pods/binding", name, f'pod {name} is already assigned to node "{current}"')
            pod = old.copy()
            pod["spec"]["nodeName"] = node
            if bmeta.get("annotations"):
                pod["metadata"].setdefault("annotations", {}).update(bmeta["annotations"])
            status = pod.setdefault("status", {})
            conds = [c for c in status.get("conditions") or [] if c.get("type") != "PodScheduled"]
            conds.append(
                {"type": "PodScheduled", "status": "True", "lastProbeTime": None, "lastTransitionTime": now_iso()}
            )
            status["conditions"] = conds
            stored = self._commit(rt, (ns, name), pod, "MODIFIED", old)
            if self.run_bound_pods:
                running = stored.copy()
                running["status"]["phase"] = "Running"
                running["status"]["startTime"] = now_iso()
                running["status"]["conditions"].append(
                    {"type": "Ready", "status": "True", "lastProbeTime": None, "lastTransitionTime": now_iso()}
                )
                self._commit(rt, (ns, name), running, "MODIFIED", stored)

    def evict(self, ns: str, name: str, eviction: Mapping[str, Any]) -> None:
        """Evict a pod (``pods/eviction``), honouring PodDisruptionBudgets.

        :raises ApiError: ``404`` for a missing pod; ``429 TooManyRequests`` when a budget
            allows no disruption; ``500`` when more than one budget selects the pod.
        """
        pods = self.by_plural[("", "pods")]
        pdbs = self.by_plural[("policy", "poddisruptionbudgets")]
        with self.cond:
            st = self._get(pods, ns, name)
            pod = st.obj
            if pod["metadata"].get("deletionTimestamp"):
                return
            labels = pod["metadata"].get("labels") or {}
            budgets = [
                b.obj
                for (bns, _), b in self.tables[pdbs.key].items()
                if bns == ns and match_expressions_selector((b.obj.get("spec") or {}).get("selector") or {})(labels)
            ]
            if len(budgets) > 1:
                raise errors.internal(
                    "This pod has more than one PodDisruptionBudget, which the eviction subresource does not support."
                )
            if budgets and disruption.healthy(pod):
                status = disruption.budget_status(budgets[0], self._namespace_pods(ns))
                if status["disruptionsAllowed"] <= 0:
                    raise errors.too_many_requests(
                        "Cannot evict pod as it would violate the pod's disruption budget.",
                        [{"reason": "DisruptionBudget", "message": disruption.budget_message(budgets[0], status)}],
                    )
            options = eviction.get("deleteOptions") or {}
            self._delete(pods, st, options)

    def _namespace_pods(self, ns: str) -> list[Obj]:
        pods = self.tables[("", "pods")]
        lo = pods.bisect_left((ns, ""))
        hi = pods.bisect_left((ns + "\x00", ""))
        return [st.obj for st in pods.values()[lo:hi]]

    def pdb_status(self, ns: str, name: str) -> dict[str, int]:
        """What the disruption controller would write into a budget's status."""
        rt = self.by_plural[("policy", "poddisruptionbudgets")]
        with self.cond:
            pdb = self._get(rt, ns, name).obj
            return disruption.budget_status(pdb, self._namespace_pods(ns))

    # ------------------------------------------------------------------ watches

    def watch_start(
        self, rt: ResourceType, rv_text: str, send_initial: bool = False
    ) -> tuple[int, list[Stored] | None]:
        """Where a new watch starts.

        :param send_initial: ``sendInitialEvents=true`` (a "watch list"): start with the
            current objects whatever ``rv_text`` says.
        :returns: ``(resourceVersion, initial objects)``; the initial objects (sent as
            ``ADDED``) are given when ``rv_text`` is empty or ``"0"``, or ``send_initial``.
        :raises ApiError: ``410`` when ``rv_text`` is older than the kept history, ``400``
            when it is not a number.
        """
        with self.cond:
            if rv_text in ("", "0") or send_initial:
                return self.rv, list(self.tables[rt.key].values())
            try:
                rv = int(rv_text)
            except ValueError as exc:
                raise errors.bad_request(f"invalid resource version: {rv_text}") from exc
            self.history[rt.key].since(rv)
            return rv, None

    def watch_next(self, rt: ResourceType, pos: int, timeout: float, generation: int) -> tuple[list[Event], int] | None:
        """Wait up to ``timeout`` for events of ``rt`` after ``pos``.

        :returns: ``(events, current resourceVersion)``, or None when the watch must end
            (server stopping or watches dropped).
        :raises ApiError: ``410`` when the history after ``pos`` was dropped.
        """
        history = self.history[rt.key]
        with self.cond:
            deadline = time.monotonic() + timeout
            while True:
                if self.stopping or self.watch_generation != generation:
                    return None
                events = history.since(pos)
                if events:
                    return events, self.rv
                left = deadline - time.monotonic()
                if left <= 0:
                    return [], self.rv
                self.changed[rt.key].wait(left)

    def _wake_all(self) -> None:
        for cond in self.changed.values():
            cond.notify_all()

    def drop_watches(self, abrupt: bool = True) -> None:
        """End every open watch stream now: abruptly (connection closed mid-stream) or cleanly."""
        with self.cond:
            self.abrupt_drop = abrupt
            self.watch_generation += 1
            self._wake_all()

    def expire_history(self, drop_watches: bool = True) -> None:
        """Forget every event and list snapshot so far: a watch or ``continue`` from any
        resourceVersion handed out so far gets ``410 Gone`` (as after an etcd compaction).

        The resourceVersion moves on by one first, so that even a client that has seen every
        event gets the ``410`` (a compaction after a write it does not watch).
        """
        with self.cond:
            self.rv += 1
            for h in self.history.values():
                h.expire(self.rv)
            self.snapshots.clear()
            if drop_watches:
                self.watch_generation += 1
            self._wake_all()

    # ------------------------------------------------------------------ faults

    def take_fault(self, method: str, plural: str | None, sub: str | None, name: str | None) -> Fault | None:
        """The first programmed fault matching a request, with its count used up by one."""
        with self.cond:
            for f in self.faults:
                if f.remaining != 0 and f.matches(method, plural, sub, name):
                    if f.remaining > 0:
                        f.remaining -= 1
                    return f
            self.faults = [f for f in self.faults if f.remaining != 0]
            return None

    def stop(self) -> None:
        """End every watch and pending kubelet timer."""
        with self.cond:
            self.stopping = True
            self._wake_all()
            timers = list(self.timers)
        for t in timers:
            t.cancel()

    def bulk_create(self, rt: ResourceType, objs: Iterable[Obj]) -> int:
        """Create many objects in one lock hold, without deep copies (the dicts become the store's).

        :returns: how many were created.
        """
        n = 0
        namespaces = self.tables[("", "namespaces")]
        # The cyclic garbage collector would walk every stored object again and again while
        # they pile up (half the cost of a large load); nothing here makes a cycle.
        collecting = gc.isenabled()
        gc.disable()
        try:
            with self.cond:
                for obj in objs:
                    ns = (obj.get("metadata") or {}).get("namespace") or "default" if rt.namespaced else ""
                    if rt.namespaced and ("", ns) not in namespaces:
                        self._create(self.by_plural[("", "namespaces")], "", {"metadata": {"name": ns}})
                    self._create(rt, ns, obj, copy_body=False)
                    n += 1
        finally:
            if collecting:
                gc.enable()
        return n


def find_type(
    types: Mapping[tuple[str, str, str], ResourceType], group: str, version: str, plural: str
) -> ResourceType:
    """The resource type at ``group/version/plural``.

    :raises ApiError: ``404`` when the stand-in does not serve it.
    """
    rt = types.get((group, version, plural))
    if rt is None:
        raise ApiError(404, "NotFound", "the server could not find the requested resource")
    return rt
