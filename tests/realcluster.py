"""A real Kubernetes API server for the tests: kube-apiserver and etcd built from their Go modules.

``tools/controlplane.py`` builds and runs it (as ``tools/cluster`` does by
hand); this module gives the tests:

* ``real_cluster`` (session fixture): one :class:`RealCluster` for the whole
  run, with an audit log; :meth:`RealCluster.reset` empties it between tests;
* ``make_control_plane`` (fixture): dedicated control planes with other
  flags (a watch cache off, a restart), removed when the test ends;
* :class:`RealServer`: the stand-in's handle (``create``, ``get``,
  ``requests`` ...) on the real server, for one client identity, so that a
  test written for the stand-in runs on both.

Without ``go`` on PATH these fixtures skip their test ("needs go to build
the control plane"); with ``VOLCANOLIB_REQUIRE_GO=1`` (CI) a missing ``go``
or a failed build fails it instead.

The control plane runs kube-controller-manager's garbage collector and its
ReplicaSet, Deployment, StatefulSet, ServiceAccount and namespace
controllers (see ``oracle/cmd/cluster``). What else the tests need of a
cluster is done here: a namespace with its ``default`` ServiceAccount at
once (the ServiceAccount controller makes it a moment later), tokens of
ServiceAccounts (the TokenRequest API), a new Queue's ``Open`` state
(Volcano's queue controller), and removing deleted pods (their kubelet:
:meth:`RealServer.finalize_deleted_pods` runs a
:class:`~volcanolib.kube.live.kubelet.KubeletSim` that only does that).
"""

from __future__ import annotations

import contextlib
import itertools
import json
import sys
import time
from collections.abc import Callable, Collection, Iterator
from pathlib import Path
from typing import Any

import pytest
import yaml

sys.path.insert(0, str(Path(__file__).resolve().parents[1] / "tools"))

from controlplane import BuildError, ControlPlane, GoMissing
from gotools import unavailable

from volcanolib.kube.live import load_api
from volcanolib.kube.live._client import MERGE_PATCH, STRATEGIC_MERGE_PATCH, ApiError, KubeApi

__all__ = ["RealCluster", "RealServer", "start_control_plane"]

Obj = dict[str, Any]

#: plural (or plural.group) -> (the API path prefix, namespaced)
RESOURCES: dict[str, tuple[str, bool]] = {
    "pods": ("/api/v1", True),
    "nodes": ("/api/v1", False),
    "namespaces": ("/api/v1", False),
    "events": ("/api/v1", True),
    "serviceaccounts": ("/api/v1", True),
    "configmaps": ("/api/v1", True),
    "podgroups": ("/apis/scheduling.volcano.sh/v1beta1", True),
    "queues": ("/apis/scheduling.volcano.sh/v1beta1", False),
    "jobs.batch.volcano.sh": ("/apis/batch.volcano.sh/v1alpha1", True),
    # The stand-in's names: "jobs" are Volcano's, as there.
    "jobs": ("/apis/batch.volcano.sh/v1alpha1", True),
    "commands": ("/apis/bus.volcano.sh/v1alpha1", True),
    "secrets": ("/api/v1", True),
    "services": ("/api/v1", True),
    "networkpolicies": ("/apis/networking.k8s.io/v1", True),
    "replicasets": ("/apis/apps/v1", True),
    "deployments": ("/apis/apps/v1", True),
    "daemonsets": ("/apis/apps/v1", True),
    "jobs.batch": ("/apis/batch/v1", True),
    "statefulsets": ("/apis/apps/v1", True),
    "hypernodes": ("/apis/topology.volcano.sh/v1alpha1", False),
    "priorityclasses": ("/apis/scheduling.k8s.io/v1", False),
    "leases": ("/apis/coordination.k8s.io/v1", True),
    "poddisruptionbudgets": ("/apis/policy/v1", True),
    "clusterroles": ("/apis/rbac.authorization.k8s.io/v1", False),
    "clusterrolebindings": ("/apis/rbac.authorization.k8s.io/v1", False),
}
#: What :meth:`RealCluster.reset` removes (namespaced ones in every namespace), in this order: the
#: owners whose controllers make pods first, so that none is made again once the pods are gone.
RESET = ("deployments", "statefulsets", "replicasets", "daemonsets", "jobs.batch", "pods", "podgroups",
         "jobs.batch.volcano.sh", "commands", "services", "secrets", "networkpolicies", "poddisruptionbudgets",
         "events", "queues", "nodes", "hypernodes", "priorityclasses")  # fmt: skip
#: Leases that are the control plane's own (kube-system) are kept; these namespaces' are removed.
LEASE_NAMESPACES = ("default", "kube-node-lease", "volcano-system", "volcanolib-system")
VERBS = {"get": "GET", "list": "GET", "watch": "GET", "create": "POST", "update": "PUT", "patch": "PATCH",
         "delete": "DELETE", "deletecollection": "DELETE"}  # fmt: skip
TEST_USER = "volcanolib-test"


def start_control_plane(**options: Any) -> ControlPlane:
    """Build and start a control plane; skip the test when ``go`` is missing (unless CI requires it)."""
    try:
        return ControlPlane(**options).start()
    except GoMissing:
        unavailable("needs go to build the control plane")
    except BuildError as exc:
        unavailable(f"the control plane did not build: {exc}")


class RealCluster:
    """A running control plane and an admin connection to it, with what the tests need of a controller-manager."""

    def __init__(self, plane: ControlPlane) -> None:
        self.plane = plane
        self.admin: KubeApi = load_api(str(plane.kubeconfig))
        self._tokens: dict[tuple[str, str], str] = {}
        #: Namespaces made (with their default ServiceAccount) by :meth:`create`.
        self._namespaces: set[str] = {"default"}
        self._audit_offset = 0
        self._audit: list[Obj] = []
        self._markers = itertools.count()

    # ------------------------------------------------------------------ objects

    def path(self, resource: str, namespace: str | None = None, name: str = "", subresource: str = "") -> str:
        """The API path of a collection, an object or an object's subresource."""
        prefix, namespaced = RESOURCES[resource]
        plural = resource.partition(".")[0]
        path = f"{prefix}/namespaces/{namespace}/{plural}" if namespaced and namespace else f"{prefix}/{plural}"
        if name:
            path += f"/{name}"
        if subresource:
            path += f"/{subresource}"
        return path

    def _ns(self, resource: str, namespace: str | None) -> str | None:
        return (namespace or "default") if RESOURCES[resource][1] else None

    def create(self, resource: str, obj: Obj, namespace: str | None = None) -> Obj:
        """Create an object; a status it carries is then written through the status subresource when there is one.

        The namespace is made first when it does not exist (the stand-in takes any namespace).
        """
        ns = self._ns(resource, namespace or (obj.get("metadata") or {}).get("namespace"))
        if ns is not None and resource not in ("namespaces", "serviceaccounts") and ns not in self._namespaces:
            self.ensure_namespace(ns)
            self._namespaces.add(ns)
        created: Obj = self.admin.request("POST", self.path(resource, ns), body=obj)
        status = obj.get("status")
        if resource in ("pods", "queues") and status and status != {"phase": "Pending"}:
            name = created["metadata"]["name"]
            created = self.patch(resource, name, {"status": status}, ns or "default", subresource="status")
        return created

    def get(self, resource: str, name: str, namespace: str = "default") -> Obj:
        """One object. :raises ApiError: 404 when absent."""
        obj: Obj = self.admin.request("GET", self.path(resource, self._ns(resource, namespace), name))
        return obj

    def find(self, resource: str, name: str, namespace: str = "default") -> Obj | None:
        """One object, or None."""
        try:
            return self.get(resource, name, namespace)
        except ApiError as exc:
            if exc.status == 404:
                return None
            raise

    def list_objects(self, resource: str, namespace: str | None = None) -> list[Obj]:
        """Every object of a type (in one namespace when given), sorted by namespace and name."""
        answer = self.admin.request("GET", self.path(resource, namespace if RESOURCES[resource][1] else None))
        kind = answer.get("kind", "").removesuffix("List")
        items: list[Obj] = [
            {"apiVersion": answer.get("apiVersion"), "kind": kind, **item} for item in answer.get("items") or ()
        ]
        return sorted(items, key=lambda o: (o["metadata"].get("namespace", ""), o["metadata"]["name"]))

    list = list_objects

    def update(self, resource: str, obj: Obj, subresource: str = "") -> Obj:
        """Replace an object (a stale ``metadata.resourceVersion`` is a ``409``)."""
        meta = obj["metadata"]
        path = self.path(resource, self._ns(resource, meta.get("namespace")), meta["name"], subresource)
        answer: Obj = self.admin.request("PUT", path, body=obj)
        return answer

    def patch(
        self,
        resource: str,
        name: str,
        patch: Any,
        namespace: str = "default",
        subresource: str = "",
        content_type: str = MERGE_PATCH,
    ) -> Obj:
        """Patch an object (JSON merge patch by default)."""
        path = self.path(resource, self._ns(resource, namespace), name, subresource)
        answer: Obj = self.admin.request("PATCH", path, body=patch, content_type=content_type)
        return answer

    def delete(self, resource: str, name: str, namespace: str = "default", grace_period: int | None = None) -> None:
        """Delete an object (a bound pod is removed by its kubelet unless ``grace_period=0``)."""
        body = None if grace_period is None else {"gracePeriodSeconds": grace_period}
        self.admin.request("DELETE", self.path(resource, self._ns(resource, namespace), name), body=body)

    def set_pod_phase(self, name: str, phase: str, namespace: str = "default") -> Obj:
        """Set a pod's phase and Ready condition, as its kubelet would."""
        ready = {"type": "Ready", "status": "True" if phase == "Running" else "False"}
        status = {"phase": phase, "conditions": [ready]}
        return self.patch("pods", name, {"status": status}, namespace, "status", STRATEGIC_MERGE_PATCH)

    def bind(self, name: str, node: str, namespace: str = "default") -> None:
        """Bind a pod as another scheduler would."""
        body = {"apiVersion": "v1", "kind": "Binding", "metadata": {"name": name}, "target": {"name": node}}
        self.admin.request("POST", self.path("pods", namespace, name, "binding"), body=body)

    # ------------------------------------------------------------------ what a controller-manager would do

    def ensure_namespace(self, name: str) -> None:
        """Create a namespace with its ``default`` ServiceAccount (left in place by :meth:`reset`)."""
        for resource, obj in (("namespaces", {"metadata": {"name": name}}),
                              ("serviceaccounts", {"metadata": {"name": "default", "namespace": name}})):  # fmt: skip
            try:
                self.create(resource, obj)
            except ApiError as exc:
                if exc.status != 409:
                    raise

    def service_account(self, name: str, namespace: str = "default", *, cluster_role: str | None = None) -> str:
        """Make a ServiceAccount (bound to ``cluster_role`` when given) and return a token for it."""
        key = (namespace, name)
        if key in self._tokens:
            return self._tokens[key]
        self.ensure_namespace(namespace)
        try:
            self.create("serviceaccounts", {"metadata": {"name": name, "namespace": namespace}})
        except ApiError as exc:
            if exc.status != 409:
                raise
        if cluster_role is not None:
            binding = {
                "metadata": {"name": f"{namespace}-{name}-{cluster_role}"},
                "roleRef": {"apiGroup": "rbac.authorization.k8s.io", "kind": "ClusterRole", "name": cluster_role},
                "subjects": [{"kind": "ServiceAccount", "name": name, "namespace": namespace}],
            }
            try:
                self.create("clusterrolebindings", binding)
            except ApiError as exc:
                if exc.status != 409:
                    raise
        request = {"apiVersion": "authentication.k8s.io/v1", "kind": "TokenRequest",
                   "spec": {"expirationSeconds": 86400}}  # fmt: skip
        answer = self.admin.request("POST", self.path("serviceaccounts", namespace, name, "token"), body=request)
        self._tokens[key] = token = str(answer["status"]["token"])
        return token

    def apply_manifests(self, path: Path, *, skip: Collection[str] = ()) -> None:
        """Create (or replace) the objects of a YAML file, as ``kubectl apply`` would for new objects.

        :param skip: kinds not to apply (a ``Deployment`` of ``deploy/``, whose image is not there).
        """
        kinds = {"Namespace": "namespaces", "ServiceAccount": "serviceaccounts", "ClusterRole": "clusterroles",
                 "ClusterRoleBinding": "clusterrolebindings"}  # fmt: skip
        for doc in yaml.safe_load_all(path.read_text()):
            if not doc or doc["kind"] in skip:
                continue
            resource = kinds[doc["kind"]]
            try:
                self.create(resource, doc)
            except ApiError as exc:
                if exc.status != 409:
                    raise
                current = self.get(resource, doc["metadata"]["name"], doc["metadata"].get("namespace", "default"))
                self.update(resource, {**doc, "metadata": {**doc["metadata"], **_version(current)}})

    def write_kubeconfig(self, path: str | Path, token: str | None = None, namespace: str = "default") -> Path:
        """A kubeconfig for this server: the admin's credentials, or a bearer token."""
        path = Path(path)
        if token is None:
            path.write_text(self.plane.kubeconfig.read_text())
            return path
        admin = yaml.safe_load(self.plane.kubeconfig.read_text())
        cluster = admin["clusters"][0]["cluster"]
        config = {
            "apiVersion": "v1",
            "kind": "Config",
            "clusters": [{"name": "real", "cluster": cluster}],
            "users": [{"name": "real", "user": {"token": token}}],
            "contexts": [{"name": "real", "context": {"cluster": "real", "user": "real", "namespace": namespace}}],
            "current-context": "real",
        }
        path.write_text(json.dumps(config, indent=2))
        return path

    def reset(self) -> None:
        """Remove every object a test may have made (namespaces, ServiceAccounts and role bindings stay)."""
        namespaces = [n["metadata"]["name"] for n in self.list_objects("namespaces")]
        for resource in RESET:
            if resource == "priorityclasses":  # the built-in system-* classes stay
                for pc in self.list_objects(resource):
                    if not pc["metadata"]["name"].startswith("system-"):
                        self.delete(resource, pc["metadata"]["name"])
                continue
            query = {"gracePeriodSeconds": 0} if resource == "pods" else {}
            for ns in namespaces if RESOURCES[resource][1] else [None]:
                self.admin.request("DELETE", self.path(resource, ns), query=query)
        for ns in LEASE_NAMESPACES:
            if ns in namespaces:
                self.admin.request("DELETE", self.path("leases", ns))

    # ------------------------------------------------------------------ etcd and the process

    def compact(self) -> int:
        """Compact etcd's history to now (see :meth:`ControlPlane.compact`)."""
        return self.plane.compact()

    def restart(self) -> None:
        """Stop the control plane and start it again, same ports and data."""
        self.plane.restart()

    @contextlib.contextmanager
    def outage(self) -> Iterator[None]:
        """The control plane is stopped inside the block (connections refused) and started again after it."""
        self.plane.stop()
        try:
            yield
        finally:
            self.plane.start()

    # ------------------------------------------------------------------ the audit log

    def _read_audit(self) -> None:
        log = self.plane.audit_log
        assert log is not None, "started without an audit log"
        with log.open("rb") as f:
            f.seek(self._audit_offset)
            data = f.read()
        end = data.rfind(b"\n") + 1
        self._audit_offset += end
        seen = {e["auditID"] for e in self._audit[-2000:]}
        for line in data[:end].splitlines():
            event = json.loads(line)
            if event.get("stage") in ("ResponseStarted", "ResponseComplete") and event["auditID"] not in seen:
                seen.add(event["auditID"])
                self._audit.append(event)

    def audit(self, user: str, api: KubeApi) -> list[Obj]:
        """Every audit event of ``user`` so far: a request of ``api`` (as ``user``) marks the log's end."""
        marker = f"audit-marker-{next(self._markers)}"
        api.request("GET", "/version", query={"marker": marker})
        deadline = time.monotonic() + 10
        while True:
            self._read_audit()
            if any(marker in e.get("requestURI", "") for e in self._audit[-200:]):
                break
            if time.monotonic() > deadline:
                raise AssertionError("the audit log did not show the marker request within 10 s")
            time.sleep(0.02)
        return [e for e in self._audit if e["user"]["username"] == user and "audit-marker-" not in e["requestURI"]]


def _version(obj: Obj) -> Obj:
    return {"resourceVersion": obj["metadata"]["resourceVersion"]}


class RealServer:
    """The stand-in's handle (:class:`kube_api.KubeApiServer`'s state methods) on a real server.

    Objects are made and read as the admin; :meth:`requests` shows only the
    requests of the identity :meth:`write_kubeconfig` hands out (the
    ServiceAccount ``user`` of ``namespace``, bound to ``cluster_role``
    unless that is ``None``), as the stand-in's log shows only its clients'
    requests.
    """

    def __init__(
        self,
        cluster: RealCluster,
        user: str = TEST_USER,
        cluster_role: str | None = "cluster-admin",
        namespace: str = "default",
    ) -> None:
        self.cluster = cluster
        self.token = cluster.service_account(user, namespace, cluster_role=cluster_role)
        self.user = f"system:serviceaccount:{namespace}:{user}"
        self._api: KubeApi | None = None
        self._since = 0
        self._kubelet: Any = None
        self.clear_requests()

    def finalize_deleted_pods(self) -> None:
        """Remove deleted pods until :meth:`close`, as their kubelets would (see the module)."""
        from volcanolib.kube.live.kubelet import KubeletSim

        self._kubelet = KubeletSim(self.cluster.admin, None, pod_startup=None)
        self._kubelet.start()
        assert self._kubelet.wait_ready(30)

    def close(self) -> None:
        """Stop what :meth:`finalize_deleted_pods` started."""
        if self._kubelet is not None:
            self._kubelet.stop()
            self._kubelet = None

    def __getattr__(self, name: str) -> Any:
        if name in ("create", "get", "find", "list", "list_objects", "update", "patch", "delete", "set_pod_phase",
                    "bind", "compact", "restart", "outage"):  # fmt: skip
            return getattr(self.cluster, name)
        raise AttributeError(f"{name!r}: not available on the real server (a stand-in-only test?)")

    @property
    def url(self) -> str:
        return self.cluster.plane.url

    def write_kubeconfig(self, path: str | Path, namespace: str = "default") -> Path:
        """A kubeconfig with this handle's identity."""
        return self.cluster.write_kubeconfig(path, self.token, namespace)

    def _client(self) -> KubeApi:
        if self._api is None:
            import tempfile

            with tempfile.TemporaryDirectory() as tmp:
                self._api = load_api(str(self.write_kubeconfig(Path(tmp) / "kubeconfig")))
        return self._api

    def requests(self, method: str | None = None, contains: str = "") -> list[tuple[str, str, int]]:
        """This identity's requests since the handle was made (or cleared): ``(method, path with query, code)``."""
        rows = []
        for event in self.cluster.audit(self.user, self._client())[self._since :]:
            verb = VERBS.get(event["verb"], event["verb"].upper())
            code = int((event.get("responseStatus") or {}).get("code", 0))
            row = (verb, event["requestURI"], code)
            if (method is None or verb == method) and contains in row[1]:
                rows.append(row)
        return rows

    def clear_requests(self) -> None:
        """Forget the requests so far."""
        self._since = len(self.cluster.audit(self.user, self._client()))


# ---------------------------------------------------------------------- fixtures


@pytest.fixture(scope="session")
def real_cluster() -> Iterator[RealCluster]:
    """One real control plane for the test run (audit log on), emptied by each test that uses it."""
    plane = start_control_plane(audit=True)
    yield RealCluster(plane)
    plane.remove()


@pytest.fixture
def make_control_plane() -> Iterator[Callable[..., RealCluster]]:
    """Start dedicated control planes (``apiserver_args``, ``audit``); removed when the test ends."""
    started: list[RealCluster] = []

    def make(**options: Any) -> RealCluster:
        cluster = RealCluster(start_control_plane(**options))
        started.append(cluster)
        return cluster

    yield make
    for cluster in started:
        cluster.plane.remove()
