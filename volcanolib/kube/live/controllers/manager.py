"""``volcanolib controllers``: Volcano's job, PodGroup and queue controllers against a live cluster.

A second process beside ``volcanolib serve``, as Volcano runs its
controller manager beside its scheduler: each can restart, lead (Lease
``vc-controller-manager``) and be granted rights on its own. The manager
lists and watches what its controllers read (Jobs, pods, PodGroups, Queues,
Commands, PriorityClasses), and once every kind is listed hands the
controllers the cluster as it is (each takes it over), then feeds them the
changes, one at a time on one thread, and the time (policy timeouts,
TTLs, retries); a reaction's pod creations or deletions go out together.
SIGTERM (or SIGINT) stops it between two events.
"""

from __future__ import annotations

import argparse
import logging
import queue
import signal
import threading
import time
from collections.abc import Callable
from typing import Any, Final, TextIO

from volcanolib.kube.live._client import KubeApi
from volcanolib.kube.live._effectors import EventRecorder, Pool
from volcanolib.kube.live._reflector import Reflector
from volcanolib.kube.live.controllers._api import Store, Writer, collection_path
from volcanolib.kube.live.controllers.job import LiveJobController
from volcanolib.kube.live.controllers.podgroup import LivePodGroupController
from volcanolib.kube.live.controllers.queue import LiveQueueController

__all__ = ["CONTROLLERS", "ControllerManager", "add_parser", "run"]

log = logging.getLogger("volcanolib.kube.live.controllers")

#: The controllers the manager runs, and the kinds each reads.
CONTROLLERS: Final = {
    "job": ("Job", "Pod", "PodGroup", "Queue", "Command", "PriorityClass"),
    "podgroup": ("Pod", "PodGroup"),
    "queue": ("Queue", "PodGroup", "Command"),
}
LEASE_NAME: Final = "vc-controller-manager"
#: Seconds between two attempts at the PodGroups that could not be made.
_RETRY_EVERY: Final = 2.0

Handler = Callable[[str, dict[str, Any], "dict[str, Any] | None"], Any]


class ControllerManager:
    """The controllers of one ``volcanolib controllers`` process, without the command line (tests, embedding).

    :param api: the connection.
    :param controllers: which to run, of ``job``, ``podgroup``, ``queue``.
    :param scheduler_names: the scheduler names served (pods of these get PodGroups; Jobs default to the first).
    :param default_queue: the queue of a Job that names none.
    :param leader_elect: run only while holding the Lease ``vc-controller-manager``.
    :param lock_namespace: the Lease's namespace.
    :param lease: ``(lease_duration, renew_deadline, retry_period)`` in seconds.
    :param identity: this replica's name in the Lease.
    :param clock: wall-clock seconds.
    """

    def __init__(
        self,
        api: KubeApi,
        *,
        controllers: tuple[str, ...] = tuple(CONTROLLERS),
        scheduler_names: tuple[str, ...] = ("volcano",),
        default_queue: str = "default",
        leader_elect: bool = False,
        lock_namespace: str = "volcano-system",
        lease: tuple[float, float, float] = (15.0, 10.0, 2.0),
        identity: str | None = None,
        clock: Callable[[], float] = time.time,
        watch_timeout: int = 300,
    ) -> None:
        from volcanolib.kube.live.leader import LeaseElector

        unknown = [c for c in controllers if c not in CONTROLLERS]
        if unknown:
            raise ValueError(f"unknown controller {unknown[0]!r} (expected some of {', '.join(CONTROLLERS)})")
        self.api = api
        self.clock = clock
        self.elector: LeaseElector | None = None
        if leader_elect:
            duration, deadline, retry = lease
            self.elector = LeaseElector(
                api,
                lock_namespace,
                LEASE_NAME,
                identity=identity,
                lease_duration=duration,
                renew_deadline=deadline,
                retry_period=retry,
            )
        may_write = self.elector.is_leader if self.elector is not None else None
        self.writer = Writer(api, may_write)
        self.pool = Pool(2, "controller-events")
        self.recorder = EventRecorder(api, self.pool, "volcanolib-controllers", may_write=may_write)
        kinds = sorted({kind for name in controllers for kind in CONTROLLERS[name]})
        self.stores = {kind: Store(kind, self._notify) for kind in kinds}
        self.reflectors = [
            Reflector(api, kind, collection_path(kind), self.stores[kind], watch_timeout=watch_timeout)
            for kind in kinds
        ]
        self.job = (
            LiveJobController(
                self.writer,
                self.stores,
                self.recorder,
                clock,
                scheduler_name=scheduler_names[0],
                default_queue=default_queue,
            )
            if "job" in controllers
            else None
        )
        self.podgroup = (
            LivePodGroupController(self.writer, self.stores, self.recorder, scheduler_names=scheduler_names)
            if "podgroup" in controllers
            else None
        )
        self.queue = LiveQueueController(self.writer, self.stores, self.recorder) if "queue" in controllers else None
        self._handlers: dict[str, list[Handler]] = {kind: [] for kind in kinds}
        routes: list[tuple[str, Handler]] = []
        if self.job is not None:
            routes += [
                ("Job", self.job.on_job),
                ("Pod", self.job.on_pod),
                ("PodGroup", self.job.on_pod_group),
                ("Command", self.job.on_command),
                ("PriorityClass", self.job.on_priority_class),
            ]
        if self.podgroup is not None:
            routes += [("Pod", self.podgroup.on_pod), ("PodGroup", self.podgroup.on_pod_group)]
        if self.queue is not None:
            routes += [
                ("Queue", self.queue.on_queue),
                ("PodGroup", self.queue.on_pod_group),
                ("Command", self.queue.on_command),
            ]
        for kind, handler in routes:
            self._handlers[kind].append(handler)
        self._events: queue.Queue[tuple[str, str, dict[str, Any], dict[str, Any] | None]] = queue.Queue()
        self._busy = 0
        self._idle = threading.Condition()
        #: Set once the controllers have taken the cluster over.
        self.ready = threading.Event()
        #: Events handled so far.
        self.handled = 0

    def _notify(self, kind: str, event: str, obj: dict[str, Any], old: dict[str, Any] | None) -> None:
        with self._idle:
            self._busy += 1
        self._events.put((kind, event, obj, old))

    def wait_idle(self, timeout: float = 10.0) -> bool:
        """Wait until every event received so far is handled (for tests); whether it happened in time."""
        deadline = time.monotonic() + timeout
        with self._idle:
            while self._busy:
                left = deadline - time.monotonic()
                if left <= 0:
                    return False
                self._idle.wait(left)
        return True

    # ------------------------------------------------------------------ the loop

    def run(self, stop: threading.Event) -> int:
        """Lead (if asked), list, take over, then handle events until ``stop`` is set.

        :returns: 0 after a requested stop, 1 when the Lease was lost.
        """
        code = 0
        started = False
        try:
            if self.elector is not None:
                self.elector.start()
                if not self.elector.wait_leading(stop):
                    return 0
            for reflector in self.reflectors:
                reflector.start()
            started = True
            while not all(r.wait_synced(0.1) for r in self.reflectors):
                if stop.is_set():
                    return 0
            for controller in (self.queue, self.podgroup, self.job):
                if controller is not None:
                    controller.start()
            self.ready.set()
            log.info("controllers ready: %s", ", ".join(sorted(self.stores)))
            next_retry = time.monotonic() + _RETRY_EVERY
            while not stop.is_set():
                if self.elector is not None and not self.elector.is_leader():
                    log.error("leadership lost: stopping")
                    code = 1
                    break
                self._handle_one(self._wait_time())
                if self.job is not None:
                    due = self.job.next_due()
                    if due is not None and due <= self.clock():
                        self._guarded(self.job.tick)
                if self.podgroup is not None and self.podgroup.failed and time.monotonic() >= next_retry:
                    next_retry = time.monotonic() + _RETRY_EVERY
                    self._guarded(self.podgroup.retry)
        finally:
            if started:
                for reflector in self.reflectors:
                    reflector.stop(2.0)
            if self.elector is not None:
                self.elector.stop(release=code == 0)
            if self.job is not None:
                self.job.close()
            self.pool.flush(5.0)
            self.ready.clear()
        return code

    def _wait_time(self) -> float:
        due = self.job.next_due() if self.job is not None else None
        wait = 0.2 if due is None else max(0.0, min(0.2, due - self.clock()))
        return wait

    def _handle_one(self, timeout: float) -> None:
        try:
            kind, event, obj, old = self._events.get(timeout=timeout)
        except queue.Empty:
            return
        try:
            for handler in self._handlers.get(kind, ()):
                self._guarded(handler, event, obj, old)
            self.handled += 1
        finally:
            with self._idle:
                self._busy -= 1
                if not self._busy:
                    self._idle.notify_all()

    def _guarded(self, fn: Callable[..., Any], *args: Any) -> None:
        try:
            fn(*args)
        except Exception:  # one failing event does not stop the others
            log.exception("controller failed on an event")


# ---------------------------------------------------------------------- the command line


def _controllers(text: str) -> tuple[str, ...]:
    names = tuple(dict.fromkeys(n.strip() for n in text.split(",") if n.strip()))
    unknown = [n for n in names if n not in CONTROLLERS]
    if unknown or not names:
        raise argparse.ArgumentTypeError(f"expected some of {', '.join(CONTROLLERS)} (comma-separated), got {text!r}")
    return names


def add_parser(sub: Any) -> argparse.ArgumentParser:
    """Register the ``controllers`` command on an argparse sub-parser collection."""
    parser: argparse.ArgumentParser = sub.add_parser(
        "controllers",
        help="run Volcano's job, PodGroup and queue controllers on a live cluster (extra 'kube')",
        description="Run Volcano's controllers against a live Kubernetes cluster, beside the scheduler "
        "(volcanolib serve or Volcano's): Jobs get their PodGroup and pods and follow their lifecycle "
        "policies, pods without a PodGroup get their owner's, Queues open and close.",
    )
    parser.add_argument(
        "--kubeconfig", metavar="FILE", help="kubeconfig file (default: in-cluster, then ~/.kube/config)"
    )
    parser.add_argument(
        "--controllers",
        type=_controllers,
        default=tuple(CONTROLLERS),
        metavar="LIST",
        help="the controllers to run, comma-separated (default job,podgroup,queue)",
    )
    parser.add_argument(
        "--scheduler-name",
        metavar="NAME",
        action="append",
        dest="scheduler_names",
        help="pods with this spec.schedulerName get PodGroups; Jobs default to the first (repeatable; default volcano)",
    )
    parser.add_argument("--default-queue", metavar="NAME", default="default", help="queue of Jobs naming none")
    parser.add_argument(
        "--leader-elect", action="store_true", help="run only while holding a coordination.k8s.io Lease"
    )
    parser.add_argument(
        "--lock-namespace",
        metavar="NAMESPACE",
        default="volcano-system",
        help="namespace of the leader-election Lease (default volcano-system)",
    )
    parser.set_defaults(handler=run)
    return parser


def run(args: argparse.Namespace, out: TextIO) -> int:
    """Run ``volcanolib controllers`` until SIGTERM or SIGINT; return the exit status."""
    from volcanolib.kube.live._client import load_api

    api = load_api(args.kubeconfig)
    names = tuple(dict.fromkeys(args.scheduler_names or ["volcano"]))
    manager = ControllerManager(
        api,
        controllers=args.controllers,
        scheduler_names=names,
        default_queue=args.default_queue,
        leader_elect=args.leader_elect,
        lock_namespace=args.lock_namespace,
    )
    stop = threading.Event()

    def request_stop(signum: int, frame: Any) -> None:
        stop.set()

    signal.signal(signal.SIGTERM, request_stop)
    signal.signal(signal.SIGINT, request_stop)
    out.write(f"volcanolib controllers: {', '.join(args.controllers)}\n")
    out.flush()
    return manager.run(stop)
