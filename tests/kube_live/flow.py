"""The whole Volcano flow around an API server: volcanolib's scheduler, its controllers, and a kubelet.

:class:`FlowCluster` talks to the API server over HTTP only (the official
client's configuration, through :class:`~volcanolib.kube.live.KubeApi`), so
the tests written on it run unchanged against each backend of
:func:`start_backend`: the in-process stand-in (``tests/kube_api``), started
with ``run_bound_pods`` so that a bound pod turns Running as a kubelet would
start it; and the real control plane (``tests/realcluster.py``: etcd,
kube-apiserver and kube-controller-manager's controllers) with
``volcanolib kubelet-sim`` playing every node's kubelet. Pods end
(Succeeded, Failed with an exit code) when a test says so, as
:meth:`FlowCluster.pod_phase` writes them: the status a kubelet would write.

The scheduler (``volcanolib serve``'s :class:`~volcanolib.kube.live.serve.Server`)
and the controllers (:class:`~volcanolib.kube.live.controllers.ControllerManager`)
run on threads; :meth:`FlowCluster.stop_controllers` and
:meth:`FlowCluster.start_controllers` kill and restart the controllers mid-run.
"""

from __future__ import annotations

import copy
import json
import threading
from collections.abc import Callable, Iterator
from contextlib import contextmanager
from dataclasses import dataclass
from pathlib import Path
from typing import TYPE_CHECKING, Any

from conftest_helpers import eventually
from kube_api import KubeApiServer, make_node, make_queue
from urllib3.exceptions import HTTPError

from volcanolib.kube.live import KubeApi, load_api
from volcanolib.kube.live._client import ApiError, watch_lines
from volcanolib.kube.live.controllers import ControllerManager
from volcanolib.kube.live.controllers._api import collection_path, object_path
from volcanolib.kube.live.kubelet import KubeletSim, NodeShape
from volcanolib.kube.live.serve import Server

if TYPE_CHECKING:
    from realcluster import RealCluster

#: The API servers the flow tests run against (see :func:`start_backend`).
BACKENDS = ("standin", "real")
#: Seconds from a bind to Running on the real server (kubelet-sim's ``--pod-startup``).
POD_STARTUP = 0.1

# Kinds by resource name, for collection_path.
_KINDS = {
    "pods": "Pod",
    "nodes": None,
    "jobs": "Job",
    "podgroups": "PodGroup",
    "queues": "Queue",
    "commands": "Command",
    "services": "Service",
    "configmaps": "ConfigMap",
    "secrets": "Secret",
    "networkpolicies": "NetworkPolicy",
    "events": None,
    "replicasets": "ReplicaSet",
}


def _path(resource: str, namespace: str = "", name: str = "", sub: str = "") -> str:
    if resource == "nodes":
        base = "/api/v1/nodes"
        return f"{base}/{name}" if name else base
    if resource == "events":
        return f"/api/v1/namespaces/{namespace}/events" if namespace else "/api/v1/events"
    if resource == "deployments":
        base = f"/apis/apps/v1/namespaces/{namespace}/deployments"
        return f"{base}/{name}" if name else base
    kind = _KINDS[resource]
    assert kind is not None
    if name:
        return object_path(kind, namespace, name, sub)
    return collection_path(kind, namespace)


@dataclass(frozen=True)
class Backend:
    """A running API server of :func:`start_backend`."""

    kubeconfig: Path
    #: Whether kube-controller-manager's controllers run there (Deployments make ReplicaSets and pods,
    #: the garbage collector deletes what a deleted owner owned).
    controller_manager: bool


@contextmanager
def start_backend(
    name: str, tmp_path: Path, *, nodes: int = 2, cpu: str = "8", real: RealCluster | None = None
) -> Iterator[Backend]:
    """Start an API server with ``nodes`` nodes and a kubelet of its kind; yield it.

    ``standin``: the in-process stand-in, whose bound pods turn Running at
    once and whose deleted pods go 50 ms later; no controller-manager.
    ``real``: ``real``, the test run's real control plane, emptied;
    kubelet-sim registers the nodes and plays their kubelets: a bound pod
    turns Running :data:`POD_STARTUP` seconds after it is seen, runs until a
    test writes its end (kubelet-sim ends only pods with a duration
    annotation, which these have not), and a deleted one is removed at once.
    """
    names = [f"n{i}" for i in range(nodes)]
    if name == "standin":
        server = KubeApiServer(run_bound_pods=True, pod_deletion_delay=0.05).start()
        try:
            for node in names:
                server.create("nodes", make_node(node, cpu=cpu))
            yield Backend(Path(server.write_kubeconfig(tmp_path / "kubeconfig")), controller_manager=False)
        finally:
            server.stop()
        return
    if name != "real" or real is None:
        raise LookupError(f"unknown flow backend {name!r}, or 'real' without the real cluster")
    real.reset()
    kubeconfig = real.write_kubeconfig(tmp_path / "kubeconfig")
    kubelet = KubeletSim(load_api(str(kubeconfig)), names, shape=NodeShape(cpu=cpu), pod_startup=POD_STARTUP)
    kubelet.start()
    try:
        assert kubelet.wait_ready(30), "kubelet-sim did not list the pods"
        yield Backend(kubeconfig, controller_manager=True)
    finally:
        kubelet.stop()


class FlowCluster:
    """An API server with volcanolib's scheduler and controllers running against it.

    :param backend: where the server is.
    :param period: seconds between two scheduling cycles.
    """

    def __init__(self, backend: Backend, *, period: float = 0.1) -> None:
        self.backend = backend
        self.kubeconfig = backend.kubeconfig
        self.api: KubeApi = load_api(str(backend.kubeconfig))
        self.period = period
        self._threads: dict[str, tuple[threading.Thread, threading.Event]] = {}
        self.controllers: ControllerManager | None = None
        self.scheduler: Server | None = None

    # ------------------------------------------------------------------ the parts

    def start_scheduler(self, **options: Any) -> None:
        """``volcanolib serve`` on a thread."""
        self.scheduler = Server(load_api(str(self.kubeconfig)), period=self.period, **options)
        self._start("scheduler", self.scheduler.run)

    def start_controllers(self, **options: Any) -> ControllerManager:
        """``volcanolib controllers`` on a thread; returns once they have taken the cluster over."""
        manager = ControllerManager(load_api(str(self.kubeconfig)), watch_timeout=30, **options)
        self.controllers = manager
        self._start("controllers", manager.run)
        assert manager.ready.wait(20), "the controllers did not start"
        return manager

    def stop_controllers(self) -> None:
        """Stop the controllers as a SIGTERM would (between two events)."""
        self._stop("controllers")

    def _start(self, name: str, run: Callable[[threading.Event], int]) -> None:
        stop = threading.Event()
        thread = threading.Thread(target=run, args=(stop,), name=f"flow-{name}", daemon=True)
        thread.start()
        self._threads[name] = (thread, stop)

    def _stop(self, name: str) -> None:
        thread, stop = self._threads.pop(name)
        stop.set()
        thread.join(20)
        assert not thread.is_alive(), f"{name} did not stop"

    def close(self) -> None:
        """Stop everything started."""
        for name in list(self._threads):
            self._stop(name)

    # ------------------------------------------------------------------ objects

    def create(self, resource: str, obj: dict[str, Any]) -> dict[str, Any]:
        """Create an object; a Queue's status is then written as Volcano's queue controller would."""
        namespace = (obj.get("metadata") or {}).get("namespace") or ("default" if resource != "queues" else "")
        if resource in ("nodes", "queues"):
            namespace = ""
        created: dict[str, Any] = self.api.request("POST", _path(resource, namespace), body=obj)
        if resource == "queues" and obj.get("status") and created.get("status") != obj["status"]:
            # a real server keeps no status given on create: it is the status subresource's
            self.patch("queues", created["metadata"]["name"], {"status": obj["status"]}, sub="status")
        return created

    def create_deployment(self, deployment: dict[str, Any]) -> dict[str, Any]:
        """Create a Deployment (in ``default``); return its ReplicaSet once its pods are all made.

        Where kube-controller-manager's controllers run (the real server), they
        make the ReplicaSet and its pods. The stand-in has none: the ReplicaSet
        (``<name>-0``, with the Deployment's annotations) and its pods
        (``<name>-0-<i>``) are made here as they would make them, owned by
        their controller.
        """
        made = self.create("deployments", deployment)
        name, replicas = deployment["metadata"]["name"], deployment["spec"]["replicas"]

        def owned_by(uid: str, objects: list[dict[str, Any]]) -> list[dict[str, Any]]:
            return [o for o in objects if any(r["uid"] == uid for r in o["metadata"].get("ownerReferences") or ())]

        if not self.backend.controller_manager:
            template = deployment["spec"]["template"]
            rs = self.create(
                "replicasets",
                {
                    "apiVersion": "apps/v1",
                    "kind": "ReplicaSet",
                    "metadata": {
                        "name": f"{name}-0",
                        "annotations": dict(deployment["metadata"].get("annotations") or {}),
                        "ownerReferences": [_controller_ref(made)],
                    },
                    "spec": {"replicas": replicas, "selector": deployment["spec"]["selector"], "template": template},
                },
            )
            for i in range(replicas):
                pod = copy.deepcopy(template)
                pod["metadata"] = {**pod.get("metadata", {}), "name": f"{name}-0-{i}"}
                pod["metadata"]["ownerReferences"] = [_controller_ref(rs)]
                self.create("pods", {"apiVersion": "v1", "kind": "Pod", **pod})
        uid = made["metadata"]["uid"]
        (rs,) = wait(lambda: owned_by(uid, self.list("replicasets")), f"the ReplicaSet of {name}")
        rs_uid = rs["metadata"]["uid"]
        wait(lambda: len(owned_by(rs_uid, self.list("pods"))) == replicas, f"the {replicas} pods of {name}")
        return rs

    def get(self, resource: str, name: str, namespace: str = "default") -> dict[str, Any] | None:
        ns = "" if resource in ("nodes", "queues") else namespace
        try:
            found: dict[str, Any] = self.api.request("GET", _path(resource, ns, name))
        except ApiError as exc:
            if exc.status == 404:
                return None
            raise
        return found

    def list(self, resource: str, namespace: str = "default") -> list[dict[str, Any]]:
        ns = "" if resource in ("nodes", "queues") else namespace
        items: list[dict[str, Any]] = self.api.request("GET", _path(resource, ns))["items"]
        return items

    def patch(self, resource: str, name: str, patch: Any, namespace: str = "default", sub: str = "") -> None:
        ns = "" if resource in ("nodes", "queues") else namespace
        self.api.request(
            "PATCH", _path(resource, ns, name, sub), body=patch, content_type="application/merge-patch+json"
        )

    def delete(self, resource: str, name: str, namespace: str = "default") -> None:
        ns = "" if resource in ("nodes", "queues") else namespace
        self.api.request("DELETE", _path(resource, ns, name))

    @contextmanager
    def job_phases(self, name: str, namespace: str = "default") -> Iterator[list[str]]:
        """Watch one Job from before it exists: the list of the phases the API server announced, as they come."""
        phases: list[str] = []
        path = _path("jobs", namespace)
        response = self.api.stream(path, query={"watch": "true", "fieldSelector": f"metadata.name={name}"}, timeout=120)

        def read() -> None:
            try:
                for line in watch_lines(response):
                    obj = json.loads(line)["object"]
                    phase = str(((obj.get("status") or {}).get("state") or {}).get("phase") or "")
                    if phase and phase != (phases[-1] if phases else ""):
                        phases.append(phase)
            except (OSError, ValueError, HTTPError):
                pass  # closed

        reader = threading.Thread(target=read, daemon=True)
        reader.start()
        try:
            yield phases
        finally:
            response.shutdown()  # the reader's read ends at once, not at the watch's timeout (urllib3 2.3+)
            response.close()
            reader.join(timeout=5)

    # ------------------------------------------------------------------ the kubelet's part

    def pod_phase(self, name: str, phase: str, namespace: str = "default", *, exit_code: int | None = None) -> None:
        """Write a pod's status as its kubelet would when the pod runs or ends."""
        status: dict[str, Any] = {"phase": phase}
        if exit_code is not None or phase in ("Succeeded", "Failed"):
            code = exit_code if exit_code is not None else (0 if phase == "Succeeded" else 1)
            state = {"terminated": {"exitCode": code, "reason": "Completed" if code == 0 else "Error"}}
            status["containerStatuses"] = [{"name": "c", "ready": False, "restartCount": 0, "state": state}]
        elif phase == "Running":
            status["containerStatuses"] = [{"name": "c", "ready": True, "restartCount": 0, "state": {"running": {}}}]
        self.patch("pods", name, {"status": status}, namespace, "status")

    # ------------------------------------------------------------------ waiting

    def job_phase(self, name: str, namespace: str = "default") -> str:
        job = self.get("jobs", name, namespace) or {}
        return str(((job.get("status") or {}).get("state") or {}).get("phase") or "")

    def pods(self, namespace: str = "default", prefix: str = "") -> dict[str, dict[str, Any]]:
        """The pods by name (those starting with ``prefix``), terminating ones included."""
        return {
            p["metadata"]["name"]: p for p in self.list("pods", namespace) if p["metadata"]["name"].startswith(prefix)
        }

    def running(self, namespace: str = "default", prefix: str = "") -> list[str]:
        """Names of the pods that are Running and bound, not terminating."""
        return sorted(
            name
            for name, p in self.pods(namespace, prefix).items()
            if (p.get("status") or {}).get("phase") == "Running"
            and p["spec"].get("nodeName")
            and not p["metadata"].get("deletionTimestamp")
        )


def wait(check: Callable[[], Any], what: str, timeout: float = 30.0) -> Any:
    """Poll ``check`` until it returns something true; fail after ``timeout`` seconds."""
    return eventually(check, timeout, what)


def _controller_ref(owner: dict[str, Any]) -> dict[str, Any]:
    """The owner reference a controller puts on what it makes."""
    meta = owner["metadata"]
    return {"apiVersion": owner["apiVersion"], "kind": owner["kind"], "name": meta["name"], "uid": meta["uid"],
            "controller": True, "blockOwnerDeletion": True}  # fmt: skip


@contextmanager
def flow_cluster(tmp_path: Path, backend: str = "standin", *, real: RealCluster | None = None) -> Iterator[FlowCluster]:
    """A backend of :func:`start_backend` with two nodes, the default queue and the scheduler running."""
    with start_backend(backend, tmp_path, real=real) as started:
        cluster = FlowCluster(started)
        try:
            if cluster.get("queues", "default") is None:
                cluster.create("queues", make_queue("default"))
            cluster.start_scheduler()
            yield cluster
        finally:
            cluster.close()
