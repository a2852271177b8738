"""``volcanolib kubelet-sim``: fake kubelets, so that a cluster without machines runs pods to the end.

A :class:`KubeletSim` registers nodes with a capacity and labels, keeps them
Ready (a Lease in ``kube-node-lease`` renewed as a kubelet renews it, and the
node's ``Ready`` condition), and plays the part of each node's kubelet for
the pods bound to it:

* a bound pod turns ``Running`` (all its containers started and ready)
  ``pod_startup`` seconds after the kubelet first sees it;
* a running pod with the annotation ``volcanolib.io/duration`` ends that
  long after it started: ``Succeeded``, or ``Failed`` when
  ``volcanolib.io/exit-code`` is not 0 (the vocabulary of ``volcanolib
  replay``, read by the same code); without the annotation it runs until it
  is deleted; a pod that someone else ended (its status written
  ``Succeeded`` or ``Failed``) is left so;
* a deleted pod (one with a ``deletionTimestamp``) is removed, as a kubelet
  removes it once its containers have stopped, after its grace period or
  ``termination_grace`` seconds, whichever is shorter.

Nothing runs: no container, no image, no network. A pod ends as a process
would, whatever its ``restartPolicy`` (a real kubelet restarts the
containers of an ``Always`` pod instead).
"""

from __future__ import annotations

import argparse
import heapq
import itertools
import logging
import signal
import threading
import time
from collections.abc import Callable, Mapping, Sequence
from typing import Any, Final, TextIO

import attrs

from volcanolib.api.quantity import parse_quantity
from volcanolib.errors import ManifestError
from volcanolib.kube.live._client import STRATEGIC_MERGE_PATCH, ApiError, KubeApi
from volcanolib.kube.live._reflector import Reflector
from volcanolib.kube.live.leader import _micro_time
from volcanolib.manifests.fields import Ref, format_timestamp, timestamp
from volcanolib.replay.inputs import parse_duration, pod_timing

__all__ = ["KubeletSim", "NodeShape", "add_parser", "node_manifest"]

log = logging.getLogger("volcanolib.kube.live")

#: How long a node's Lease lasts, as a kubelet writes it (seconds).
LEASE_SECONDS: Final = 40
LEASE_NAMESPACE: Final = "kube-node-lease"


@attrs.frozen
class NodeShape:
    """The capacity and labels of the nodes to register."""

    cpu: str = "8"
    memory: str = "32Gi"
    pods: str = "110"
    gpu: str = "0"
    labels: Mapping[str, str] = attrs.field(factory=dict)


def node_manifest(name: str, shape: NodeShape, now: float | None = None) -> dict[str, Any]:
    """The Node a kubelet registers for ``name``: capacity, labels, a ``Ready`` condition."""
    capacity = {"cpu": shape.cpu, "memory": shape.memory, "pods": shape.pods}
    if parse_quantity(shape.gpu) > 0:
        capacity["nvidia.com/gpu"] = shape.gpu
    labels = {"kubernetes.io/hostname": name, "kubernetes.io/os": "linux", "type": "kubelet-sim", **shape.labels}
    return {
        "apiVersion": "v1",
        "kind": "Node",
        "metadata": {"name": name, "labels": labels},
        "status": {
            "capacity": capacity,
            "allocatable": dict(capacity),
            "conditions": [_ready_condition(time.time() if now is None else now)],
            "nodeInfo": {"kubeletVersion": "kubelet-sim", "operatingSystem": "linux", "architecture": "amd64"},
        },
    }


def _ready_condition(now: float) -> dict[str, str]:
    stamp = format_timestamp(now)
    return {
        "type": "Ready",
        "status": "True",
        "reason": "KubeletReady",
        "message": "kubelet-sim is posting ready status",
        "lastHeartbeatTime": stamp,
        "lastTransitionTime": stamp,
    }


class _Pods:
    """The reflector's handler: every bound pod, by uid, handed to the simulator as it changes."""

    def __init__(self, sim: KubeletSim) -> None:
        self.sim = sim

    def replace(self, items: list[dict[str, Any]]) -> None:
        seen = {p["metadata"]["uid"] for p in items}
        for uid in [uid for uid in list(self.sim.pods) if uid not in seen]:
            self.sim.forget(uid)
        for pod in items:
            self.sim.observe(pod)

    def event(self, kind: str, obj: dict[str, Any]) -> None:
        if kind == "DELETED":
            self.sim.forget(obj["metadata"]["uid"])
        else:
            self.sim.observe(obj)


class KubeletSim:
    """Fake kubelets for some nodes (see the module).

    :param api: the connection.
    :param nodes: the names of the nodes to register and run; ``None``: play
        the kubelet of every node (registering none), for nodes made by
        someone else.
    :param shape: the capacity and labels of the nodes registered.
    :param pod_startup: seconds from bind to ``Running``; ``None``: pods are
        not started (someone else sets their phase), only removed once deleted.
    :param termination_grace: the longest a deleted pod stays, in seconds.
    :param heartbeat: seconds between two renewals of a node's Lease.
    :param status_interval: seconds between two updates of a node's ``Ready`` condition.
    """

    def __init__(
        self,
        api: KubeApi,
        nodes: Sequence[str] | None,
        *,
        shape: NodeShape = NodeShape(),
        pod_startup: float | None = 1.0,
        termination_grace: float = 0.0,
        heartbeat: float = 10.0,
        status_interval: float = 60.0,
    ) -> None:
        self.api = api
        self.nodes = None if nodes is None else tuple(nodes)
        self.shape = shape
        self.pod_startup = pod_startup
        self.termination_grace = termination_grace
        self.heartbeat = heartbeat
        self.status_interval = status_interval
        #: The pods bound to these nodes, as last seen, by uid.
        self.pods: dict[str, dict[str, Any]] = {}
        #: Pods started, ended and removed so far.
        self.started = self.ended = self.removed = 0
        self._planned: dict[str, str] = {}  # uid -> the step planned ("start", "end", "remove")
        self._done: dict[str, set[str]] = {}  # uid -> the steps taken (a late event may show an earlier state)
        self._timers: list[tuple[float, int, str, str]] = []
        self._order = itertools.count()
        self._bad: set[str] = set()  # pods whose annotations were reported
        self._lock = threading.Condition()
        self._stop = threading.Event()
        self._threads: list[threading.Thread] = []
        self.reflector = Reflector(
            api, "pods", "/api/v1/pods", _Pods(self), query={"fieldSelector": "spec.nodeName!="}, watch_timeout=300
        )

    # ------------------------------------------------------------------ lifecycle

    def start(self) -> None:
        """Register the nodes, then keep them Ready and run their pods (in background threads)."""
        now = time.time()
        for name in self.nodes or ():
            self._register(name, now)
        self.reflector.start()
        self._spawn("kubelet-sim-pods", self._run_timers)
        if self.nodes:
            self._spawn("kubelet-sim-heartbeat", self._run_heartbeats)

    def wait_ready(self, timeout: float | None = None) -> bool:
        """Wait until the pods bound to the nodes have been listed."""
        return self.reflector.wait_synced(timeout)

    def stop(self) -> None:
        """Stop renewing and running pods (the nodes stay registered, as a stopped kubelet's do)."""
        self._stop.set()
        with self._lock:
            self._lock.notify_all()
        self.reflector.stop()
        for thread in self._threads:
            thread.join(5)

    def _spawn(self, name: str, target: Callable[[], None]) -> None:
        thread = threading.Thread(target=target, name=name, daemon=True)
        thread.start()
        self._threads.append(thread)

    # ------------------------------------------------------------------ nodes

    def _register(self, name: str, now: float) -> None:
        try:
            node = self.api.request("POST", "/api/v1/nodes", body=node_manifest(name, self.shape, now))
        except ApiError as exc:
            if exc.status != 409:
                raise
            node = self.api.request("GET", f"/api/v1/nodes/{name}")  # registered before: Ready again
            self._post_ready(name, now)
        self._renew(name, node["metadata"]["uid"], now)

    def _post_ready(self, name: str, now: float) -> None:
        body = {"status": {"conditions": [_ready_condition(now)]}}
        self.api.request("PATCH", f"/api/v1/nodes/{name}/status", body=body, content_type=STRATEGIC_MERGE_PATCH)

    def _renew(self, name: str, uid: str, now: float) -> None:
        path = f"/apis/coordination.k8s.io/v1/namespaces/{LEASE_NAMESPACE}/leases"
        spec = {"holderIdentity": name, "leaseDurationSeconds": LEASE_SECONDS, "renewTime": _micro_time(now)}
        try:
            self.api.request("PATCH", f"{path}/{name}", body={"spec": spec}, content_type=STRATEGIC_MERGE_PATCH)
        except ApiError as exc:
            if exc.status != 404:
                raise
            owner = {"apiVersion": "v1", "kind": "Node", "name": name, "uid": uid}
            lease = {"metadata": {"name": name, "ownerReferences": [owner]}, "spec": spec}
            self.api.request("POST", path, body=lease)

    def _run_heartbeats(self) -> None:
        uids: dict[str, str] = {}
        last_status = time.monotonic()
        while not self._stop.wait(self.heartbeat):
            now = time.time()
            post_status = time.monotonic() - last_status >= self.status_interval
            for name in self.nodes or ():
                try:
                    if name not in uids:
                        uids[name] = self.api.request("GET", f"/api/v1/nodes/{name}")["metadata"]["uid"]
                    self._renew(name, uids[name], now)
                    if post_status:
                        self._post_ready(name, now)
                except ApiError as exc:
                    log.warning("kubelet-sim: node %s: heartbeat failed: %s", name, exc)
            if post_status:
                last_status = time.monotonic()

    # ------------------------------------------------------------------ pods

    def _mine(self, pod: Mapping[str, Any]) -> bool:
        node = (pod.get("spec") or {}).get("nodeName") or ""
        return bool(node) and (self.nodes is None or node in self.nodes)

    def observe(self, pod: dict[str, Any]) -> None:
        """A pod was listed or changed: plan its next step."""
        if not self._mine(pod):
            return
        meta = pod["metadata"]
        uid = meta["uid"]
        phase = (pod.get("status") or {}).get("phase") or "Pending"
        now = time.time()
        with self._lock:
            self.pods[uid] = pod
            done = self._done.get(uid, ())
            if "remove" in done:
                return
            if meta.get("deletionTimestamp"):
                grace = meta.get("deletionGracePeriodSeconds")
                wait = self.termination_grace if grace is None else min(float(grace), self.termination_grace)
                self._plan(uid, "remove", now + wait)
            elif phase in ("Succeeded", "Failed"):  # ended, by us or by someone else: nothing more to run
                if self._planned.get(uid) in ("start", "end"):
                    del self._planned[uid]
            elif phase == "Pending" and self.pod_startup is not None and "start" not in done:
                self._plan(uid, "start", now + self.pod_startup)
            elif phase == "Running" and "end" not in done:
                end = self._end_time(pod)
                if end is not None:
                    self._plan(uid, "end", end)

    def forget(self, uid: str) -> None:
        """A pod is gone: nothing more to do for it."""
        with self._lock:
            self.pods.pop(uid, None)
            self._planned.pop(uid, None)
            self._done.pop(uid, None)
            self._bad.discard(uid)

    def _plan(self, uid: str, step: str, due: float) -> None:
        if self._planned.get(uid) == step:
            return  # planned already (the first sighting counts)
        self._planned[uid] = step
        heapq.heappush(self._timers, (due, next(self._order), uid, step))
        self._lock.notify_all()

    def _end_time(self, pod: Mapping[str, Any]) -> float | None:
        """When a running pod ends, from its duration annotation and start time; ``None``: never."""
        meta = pod["metadata"]
        ref = Ref(None, "", "Pod", meta.get("name", ""), meta.get("namespace", ""))
        try:
            timing = pod_timing(meta.get("annotations") or {}, ref)
            started = (pod.get("status") or {}).get("startTime")
            start = timestamp(started, ref, "status.startTime") if started else time.time()
        except ManifestError as exc:
            if meta["uid"] not in self._bad:
                self._bad.add(meta["uid"])
                log.warning("kubelet-sim: %s; the pod runs until it is deleted", exc)
            return None
        return None if timing.duration is None else start + timing.duration

    def _run_timers(self) -> None:
        while not self._stop.is_set():
            with self._lock:
                now = time.time()
                if not self._timers or self._timers[0][0] > now:
                    wait = None if not self._timers else self._timers[0][0] - now
                    self._lock.wait(min(wait, 1.0) if wait is not None else 1.0)
                    continue
                _due, _order, uid, step = heapq.heappop(self._timers)
                pod = self.pods.get(uid)
                if pod is None or self._planned.get(uid) != step:
                    continue  # gone, or a later step replaced this one
                del self._planned[uid]
                self._done.setdefault(uid, set()).add(step)
            try:
                self._act(step, pod)
            except ApiError as exc:
                if exc.status == 404:
                    continue  # the pod is gone
                log.warning("kubelet-sim: %s %s: %s; trying again in a second", step, _key(pod), exc)
                with self._lock:
                    self._done.get(uid, set()).discard(step)
                    if uid in self.pods:
                        self._plan(uid, step, time.time() + 1.0)

    def _act(self, step: str, pod: dict[str, Any]) -> None:
        meta = pod["metadata"]
        path = f"/api/v1/namespaces/{meta['namespace']}/pods/{meta['name']}"
        now = time.time()
        if step == "remove":
            options = {"gracePeriodSeconds": 0, "preconditions": {"uid": meta["uid"]}}
            self.api.request("DELETE", path, body=options)
            self.removed += 1
        elif step == "start":
            status = _running_status(pod, now)
            answer = self.api.request(
                "PATCH", f"{path}/status", body={"status": status}, content_type=STRATEGIC_MERGE_PATCH
            )
            self.started += 1
            self.observe(answer)  # plans its end
        else:
            self.api.request(
                "PATCH",
                f"{path}/status",
                body={"status": self._ended_status(pod, now)},
                content_type=STRATEGIC_MERGE_PATCH,
            )
            self.ended += 1

    def _ended_status(self, pod: Mapping[str, Any], now: float) -> dict[str, Any]:
        meta = pod["metadata"]
        ref = Ref(None, "", "Pod", meta.get("name", ""), meta.get("namespace", ""))
        code = pod_timing(meta.get("annotations") or {}, ref).exit_code
        stamp = format_timestamp(now)
        started = (pod.get("status") or {}).get("startTime") or stamp
        reason = "Completed" if code == 0 else "Error"
        return {
            "phase": "Succeeded" if code == 0 else "Failed",
            "conditions": [
                {"type": kind, "status": "False", "reason": "PodCompleted", "lastTransitionTime": stamp}
                for kind in ("Ready", "ContainersReady")
            ],
            "containerStatuses": [
                {
                    **_container_status(container, ready=False),
                    "state": {
                        "terminated": {"exitCode": code, "reason": reason, "startedAt": started, "finishedAt": stamp}
                    },
                }
                for container in (pod.get("spec") or {}).get("containers") or ()
            ],
        }


def _key(pod: Mapping[str, Any]) -> str:
    return f"{pod['metadata'].get('namespace', '')}/{pod['metadata'].get('name', '')}"


def _container_status(container: Mapping[str, Any], *, ready: bool) -> dict[str, Any]:
    return {
        "name": container.get("name", ""),
        "image": container.get("image", ""),
        "imageID": "",
        "ready": ready,
        "started": ready,
        "restartCount": 0,
    }


def _running_status(pod: Mapping[str, Any], now: float) -> dict[str, Any]:
    stamp = format_timestamp(now)
    return {
        "phase": "Running",
        "startTime": stamp,
        "conditions": [
            {"type": kind, "status": "True", "lastTransitionTime": stamp}
            for kind in ("Initialized", "ContainersReady", "Ready")
        ],
        "containerStatuses": [
            {**_container_status(container, ready=True), "state": {"running": {"startedAt": stamp}}}
            for container in (pod.get("spec") or {}).get("containers") or ()
        ],
    }


# ---------------------------------------------------------------------- the command


def _seconds(text: str) -> float:
    try:
        return parse_duration(text)
    except ValueError as exc:
        raise argparse.ArgumentTypeError(str(exc)) from None


def _quantity(text: str) -> str:
    try:
        if parse_quantity(text) < 0:
            raise ValueError
    except ValueError:
        raise argparse.ArgumentTypeError(f"expected a quantity such as 8, 500m or 32Gi, got {text!r}") from None
    return text


def _positive_seconds(text: str) -> float:
    seconds = _seconds(text)
    if seconds <= 0:
        raise argparse.ArgumentTypeError(f"expected a duration of more than 0, got {text!r}")
    return seconds


def _count(text: str) -> int:
    try:
        value = int(text)
    except ValueError:
        value = -1
    if value < 1:
        raise argparse.ArgumentTypeError(f"expected a number of nodes of 1 or more, got {text!r}")
    return value


def _label(text: str) -> tuple[str, str]:
    key, sep, value = text.partition("=")
    if not sep or not key:
        raise argparse.ArgumentTypeError(f"expected KEY=VALUE, got {text!r}")
    return key, value


def add_parser(sub: Any) -> argparse.ArgumentParser:
    """Register the ``kubelet-sim`` command on an argparse sub-parser collection."""
    parser: argparse.ArgumentParser = sub.add_parser(
        "kubelet-sim",
        help="fake kubelets: register nodes and run the pods bound to them (extra 'kube')",
        description="Register nodes, keep them Ready, and run the pods bound to them as kubelets would, "
        "without containers: Running after a start-up delay, then Succeeded or Failed after the duration "
        "and exit code of their volcanolib.io/duration and volcanolib.io/exit-code annotations.",
    )
    parser.add_argument(
        "--kubeconfig", metavar="FILE", help="kubeconfig file (default: in-cluster, then ~/.kube/config)"
    )
    parser.add_argument("--nodes", type=_count, required=True, metavar="N", help="how many nodes to register")
    parser.add_argument("--prefix", default="sim-", help="node names are PREFIX0, PREFIX1, ... (default sim-)")
    parser.add_argument("--cpu", type=_quantity, default="8", help="each node's CPUs (default 8)")
    parser.add_argument("--memory", type=_quantity, default="32Gi", help="each node's memory (default 32Gi)")
    parser.add_argument("--pods", type=_quantity, default="110", help="each node's pod slots (default 110)")
    parser.add_argument("--gpu", type=_quantity, default="0", help="each node's nvidia.com/gpu (default none)")
    parser.add_argument(
        "--label", type=_label, action="append", default=[], metavar="KEY=VALUE", help="a node label (repeatable)"
    )
    parser.add_argument(
        "--pod-startup", type=_seconds, default=1.0, metavar="DURATION", help="bind to Running (default 1s)"
    )
    parser.add_argument(
        "--termination-grace",
        type=_seconds,
        default=0.0,
        metavar="DURATION",
        help="the longest a deleted pod stays before it is removed (default 0s)",
    )
    parser.add_argument(
        "--heartbeat",
        type=_positive_seconds,
        default=10.0,
        metavar="DURATION",
        help="node Lease renewal period (default 10s)",
    )
    parser.set_defaults(handler=run)
    return parser


def run(args: argparse.Namespace, out: TextIO) -> int:
    """Run ``volcanolib kubelet-sim`` until SIGTERM or SIGINT; return the exit status."""
    from volcanolib.kube.live._client import load_api

    api = load_api(args.kubeconfig)
    names = [f"{args.prefix}{i}" for i in range(args.nodes)]
    shape = NodeShape(args.cpu, args.memory, args.pods, args.gpu, dict(args.label))
    sim = KubeletSim(
        api, names, shape=shape, pod_startup=args.pod_startup, termination_grace=args.termination_grace,
        heartbeat=args.heartbeat,
    )  # fmt: skip
    stop = threading.Event()

    def request_stop(signum: int, frame: Any) -> None:
        stop.set()

    signal.signal(signal.SIGTERM, request_stop)
    signal.signal(signal.SIGINT, request_stop)
    sim.start()  # an ApiError (refused, unreachable) is one line from the command line
    out.write(f"volcanolib kubelet-sim: {len(names)} nodes ready ({names[0]} to {names[-1]})\n")
    out.flush()
    while not stop.wait(1.0):
        pass
    sim.stop()
    out.write(f"volcanolib kubelet-sim: {sim.started} pods started, {sim.ended} ended, {sim.removed} removed\n")
    return 0
