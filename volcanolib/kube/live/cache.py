"""KubernetesCache: an InMemoryCache kept in step with a cluster by watches."""

from __future__ import annotations

import contextlib
import logging
import threading
import time
from collections.abc import Callable, Collection, Iterator, KeysView
from typing import Any

from volcanolib._gc import gc_paused
from volcanolib.api.cluster import ClusterInfo
from volcanolib.api.job import JobInfo, PodGroup
from volcanolib.api.task import TaskInfo
from volcanolib.cache.memory import InMemoryCache
from volcanolib.errors import CacheError
from volcanolib.kube.live._binder import BindReconciler, KubernetesBinder
from volcanolib.kube.live._client import ApiError, KubeApi
from volcanolib.kube.live._effectors import (
    PODGROUPS,
    EventRecorder,
    KubernetesEvictor,
    KubernetesStatusUpdater,
    Pool,
)
from volcanolib.kube.live._reflector import Reflector
from volcanolib.kube.live._translate import (
    HyperNodeTranslator,
    NodeTranslator,
    PodGroupTranslator,
    PodTranslator,
    PriorityClassTranslator,
    QueueTranslator,
)
from volcanolib.manifests.pods import PodReader

__all__ = ["KubernetesCache"]

log = logging.getLogger("volcanolib.kube.live")


class KubernetesCache(InMemoryCache):
    """The cache of a live cluster: an :class:`InMemoryCache` fed by list and watch.

    It lists, then watches, Nodes, Pods (of ``scheduler_names``, and every
    pod placed on a node), PodGroups and Queues
    (``scheduling.volcano.sh/v1beta1``) and PriorityClasses, and turns each
    event into the cache's ordinary calls, so that snapshots, sessions and
    decisions are exactly those of an embedded scheduler. Binds go through
    ``pods/binding`` on a pool of ``bind_workers`` threads (the cache assumes
    each bind at once and takes it back if the API server refuses it),
    evictions as Volcano does them (or through the Eviction API), and status
    (PodGroups, Queues, pod conditions, Events) only when it changes.

    Call :meth:`start`, then :meth:`wait_ready` before the first session:
    :meth:`snapshot` refuses to run until every kind has been listed.

    :param api: the connection (:func:`~volcanolib.kube.live.load_api`).
    :param scheduler_names: the ``spec.schedulerName`` values this scheduler serves.
    :param default_queue: the queue of PodGroups that name none.
    :param bind_workers: binds in flight at once.
    :param write_workers: status and event writes in flight at once.
    :param eviction_api: evict through ``pods/eviction`` (PodDisruptionBudgets honoured).
    :param may_write: asked before every write; ``False`` (a lost leader
        lease) drops it (a bind then fails and its task is Pending again).
    :param page_size: objects per page of the initial lists.
    :param watch_timeout: seconds a watch stays open before it is renewed.
    :param on_bound: called with each task's creation time after its bind succeeds (metrics).
    :param on_relist: called with the kind each time a kind is listed again after a ``410``.
    :param on_failure: called with ``"bind"`` for each bind that did not
        take effect, ``"throttled"`` for each bind the API server refused
        with ``429`` (sent again after its ``Retry-After``), ``"eviction"``
        for each eviction the Eviction API refused (metrics).
    :param count_interval: seconds between two writes of a PodGroup's
        counts alone (``running``, ``succeeded``, ``failed``); a change of
        its phase or conditions writes them at once.
    """

    def __init__(
        self,
        api: KubeApi,
        *,
        scheduler_names: Collection[str] = ("volcano",),
        default_queue: str = "default",
        bind_workers: int = 16,
        write_workers: int = 8,
        eviction_api: bool = False,
        may_write: Callable[[], bool] | None = None,
        page_size: int = 5000,
        watch_timeout: int = 300,
        on_bound: Callable[[float], None] | None = None,
        on_relist: Callable[[str], None] | None = None,
        on_failure: Callable[[str], None] | None = None,
        incremental_snapshots: bool = True,
        max_events: int | None = 10_000,
        count_interval: float = 5.0,
    ) -> None:
        self.api = api
        self.scheduler_names = tuple(scheduler_names) or ("volcano",)
        self.may_write = may_write
        self.on_bound = on_bound
        self.on_failure = on_failure
        self.bind_pool = Pool(bind_workers, "volcanolib-bind")
        self.write_pool = Pool(write_workers, "volcanolib-write")
        #: PodGroups made in memory for pods without one, by ``namespace/name`` (never written).
        self.shadow_groups: set[str] = set()
        self.zero_weight_queues = set()
        self.status = KubernetesStatusUpdater(self, api, self.write_pool, count_interval=count_interval)
        #: Binds whose outcome is unknown (no answer, pod unreadable): their tasks keep their nodes meanwhile.
        self.unresolved = BindReconciler(self, api)
        component = self.scheduler_names[0] if len(self.scheduler_names) == 1 else "volcano"
        self.recorder = EventRecorder(api, self.write_pool, component, may_write=may_write)
        super().__init__(
            binder=KubernetesBinder(self, api, self.bind_pool),
            evictor=KubernetesEvictor(self, api, eviction_api=eviction_api),
            status_updater=self.status,
            default_queue=default_queue,
            max_events=max_events,
            incremental_snapshots=incremental_snapshots,
        )
        self.reader = PodReader(self.scheduler_names, {}, default_queue=default_queue)
        self.pod_groups = PodGroupTranslator(self)
        self.pods = PodTranslator(
            self, self.reader, self.scheduler_names, self.status.observe_pod, self.status.forget_pod, self.pod_groups
        )
        options: dict[str, Any] = {"page_size": page_size, "watch_timeout": watch_timeout, "on_relist": on_relist}
        self._reflector_options = options
        self.reflectors = [
            Reflector(
                api,
                "priorityclasses",
                "/apis/scheduling.k8s.io/v1/priorityclasses",
                PriorityClassTranslator(self, self.reader),
                **options,
            ),
            Reflector(api, "queues", f"{PODGROUPS}/queues", QueueTranslator(self), **options),
            Reflector(api, "nodes", "/api/v1/nodes", NodeTranslator(self), **options),
            Reflector(api, "podgroups", f"{PODGROUPS}/podgroups", self.pod_groups, **options),
            Reflector(api, "pods", "/api/v1/pods", self.pods, **options),
        ]

    @property
    def lock(self) -> threading.RLock:
        """The cache's lock: hold it to apply several changes as one."""
        return self._lock

    # ------------------------------------------------------------------ lifecycle

    def watch_hyper_nodes(self) -> None:
        """Also list and watch HyperNodes (``topology.volcano.sh/v1alpha1``), the network topology.

        Call it before :meth:`start`; :meth:`wait_ready` then waits for them
        too. ``volcanolib serve`` does when its configuration enables the
        ``network-topology-aware`` plugin.
        """
        if any(r.kind == "hypernodes" for r in self.reflectors):
            return
        path = "/apis/topology.volcano.sh/v1alpha1/hypernodes"
        reflector = Reflector(self.api, "hypernodes", path, HyperNodeTranslator(self), **self._reflector_options)
        self.reflectors.insert(0, reflector)

    def start(self) -> None:
        """Start listing and watching (in background threads)."""
        for reflector in self.reflectors:
            reflector.start()

    def list_once(self) -> None:
        """List every kind once, in parallel threads, without watching: the cluster as it is now.

        For one-off readers (``volcanolib explain --kubeconfig``): the cache
        is then :attr:`ready` and never changes again. Give it ``may_write``
        returning ``False`` when nothing must be written.

        :raises CacheError: naming the kind and the API server's answer when a list fails.
        """
        failures: list[str] = []

        def one(reflector: Reflector) -> None:
            try:
                reflector.list_once()
            except Exception as exc:  # reported below, with the kind
                failures.append(f"cannot list {reflector.kind}: {exc}")

        threads = [threading.Thread(target=one, args=(r,), name=f"list-{r.kind}") for r in self.reflectors]
        # Priority classes and queues first: pods read their priority from the classes.
        one(self.reflectors[0])
        for thread in threads[1:]:
            thread.start()
        for thread in threads[1:]:
            thread.join()
        if failures:
            failures.sort()
            more = f" (and {len(failures) - 1} more kind(s))" if len(failures) > 1 else ""
            raise CacheError(failures[0] + more)

    def wait_ready(self, timeout: float | None = None) -> bool:
        """Wait until every kind has been listed and applied; return whether it was within ``timeout``."""
        deadline = None if timeout is None else time.monotonic() + timeout
        for reflector in self.reflectors:
            left = None if deadline is None else max(0.0, deadline - time.monotonic())
            if not reflector.wait_synced(left):
                return False
        return True

    @property
    def ready(self) -> bool:
        """Whether every kind has been listed."""
        return all(r.synced.is_set() for r in self.reflectors)

    def flush(self, timeout: float | None = None) -> bool:
        """Wait until every bind, status write and event issued so far has been answered.

        Counts held for a later write (``count_interval``) are not waited for.
        """
        deadline = None if timeout is None else time.monotonic() + timeout
        writer = self.status.writer
        for pool in (self.bind_pool, writer, self.write_pool, self.bind_pool, writer, self.write_pool):
            left = None if deadline is None else max(0.0, deadline - time.monotonic())
            if not pool.flush(left):
                return False
        return True

    @contextlib.contextmanager
    def holding(self) -> Iterator[None]:
        """Hold the binds, status writes and events issued inside the block until it ends.

        ``volcanolib serve`` runs each cycle inside one: the cycle only
        queues them (the cache assumes each bind at once, as always), and
        the workers start them when the cycle is over, so that they do not
        compete with it for the interpreter. A :meth:`flush` inside the
        block waits for its end.
        """
        self.bind_pool.hold()
        self.write_pool.hold()
        try:
            yield
        finally:
            self.bind_pool.release()
            self.write_pool.release()

    def stop(self, timeout: float = 30.0) -> None:
        """Finish the binds and writes in flight (held counts too), then stop watching."""
        self.status.writer.release()
        self.flush(timeout)
        self.status.writer.stop()
        self.unresolved.stop()
        for reflector in self.reflectors:
            reflector.stop()
        self.bind_pool.shutdown()
        self.write_pool.shutdown()

    # ------------------------------------------------------------------ Cache

    def snapshot(self) -> ClusterInfo:
        """As :meth:`InMemoryCache.snapshot`, once every kind has been listed.

        :raises CacheError: before that.
        """
        if not self.ready:
            missing = ", ".join(r.kind for r in self.reflectors if not r.synced.is_set())
            raise CacheError(f"not ready to schedule: still listing {missing}")
        with gc_paused():
            return super().snapshot()

    def update_job_status(self, job: JobInfo, update_pod_group: bool) -> None:
        """As :meth:`InMemoryCache.update_job_status`; also the pods' conditions and the group's events."""
        super().update_job_status(job, update_pod_group)
        self.status.update_pod_conditions(job)
        self.status.job_events(job)

    def pod_group_keys(self) -> KeysView[str]:
        """The ``namespace/name`` of every PodGroup the cache holds (read only)."""
        return self.job_uids()

    def cached_pod_group(self, key: str) -> PodGroup | None:
        """The cache's own PodGroup of ``namespace/name`` (read only; hold :attr:`lock`), or ``None``."""
        job = self.get_job(key)
        return None if job is None else job.pod_group

    # ------------------------------------------------------------------ what the effectors report

    def _record(self, kind: str, obj: str, reason: str, message: str) -> None:
        super()._record(kind, obj, reason, message)
        if reason == "Scheduled":  # posted once the bind has succeeded (see bound)
            return
        what, _, key = obj.partition(" ")
        namespace, _, name = key.rpartition("/")
        uid = ""
        if what == "Pod":
            uid = self.pods.known.get(key, "")
        elif what == "PodGroup":
            job = self.get_job(key)
            uid = job.pod_group.uid if job is not None else ""
        self.post_event(what, namespace, name, uid, kind, reason, message)

    def post_event(self, kind: str, namespace: str, name: str, uid: str, type_: str, reason: str, message: str) -> None:
        """Post a Kubernetes Event about an object (de-duplicated, rate limited)."""
        self.recorder.record(kind, namespace, name, uid, type_, reason, message)

    def bound(
        self, uid: str, namespace: str, name: str, node: str, created: float, *, pod: dict[str, Any] | None = None
    ) -> None:
        """A bind took effect: post the ``Scheduled`` event; ``pod``, the pod as just read, is applied."""
        if pod is not None:
            self.pods.event("MODIFIED", pod)
        self.post_event(
            "Pod", namespace, name, uid, "Normal", "Scheduled", f"Successfully assigned {namespace}/{name} to {node}"
        )
        if self.on_bound is not None:
            self.on_bound(created)

    def bind_throttled(self) -> None:
        """The API server refused a bind with ``429``: it is sent again once the binder's pause is over."""
        if self.on_failure is not None:
            self.on_failure("throttled")

    def bind_unresolved(self, uid: str, namespace: str, name: str, node: str, created: float) -> None:
        """The bind's answer was lost and the pod cannot be read: the task keeps its node until the outcome is known.

        See :class:`~volcanolib.kube.live._binder.BindReconciler`.
        """
        self.unresolved.add(uid, namespace, name, node, created)

    def bind_failed(
        self,
        uid: str,
        namespace: str,
        name: str,
        node: str,
        reason: str,
        *,
        refresh: bool = True,
        created: float = 0.0,
        pod: dict[str, Any] | None = None,
        gone: bool = False,
    ) -> None:
        """A bind was refused or got no answer: read the pod again; unless it is bound to the node after all, it failed.

        A pod bound to ``node`` is a success (:meth:`bound`: an earlier
        attempt, or this one, took effect). Otherwise the task of a pod
        still unbound is Pending again, with a ``FailedBinding`` event and
        its pod the condition ``PodScheduled=False`` with reason
        ``SchedulerError``; a pod bound elsewhere takes that node; a pod
        that no longer exists leaves the cache.

        :param refresh: read the pod (without it: the bind was never sent).
        :param pod: the pod as just read (it is not read again).
        :param gone: the pod was found deleted.
        """
        if pod is None and refresh and not gone:
            try:
                pod = self.api.request("GET", f"/api/v1/namespaces/{namespace}/pods/{name}")
            except ApiError as exc:
                gone = exc.status == 404
        if pod is not None and _bound_to(pod, uid, node):
            self.bound(uid, namespace, name, node, created, pod=pod)
            return
        if self.on_failure is not None:
            self.on_failure("bind")
        with self._lock:
            if gone:
                self.pods.event("DELETED", {"metadata": {"namespace": namespace, "name": name}})
                return
            if pod is not None and (pod.get("metadata") or {}).get("uid", uid) != uid:
                self.pods.event("MODIFIED", pod)  # another pod of that name now
                return
            if pod is not None and (pod.get("spec") or {}).get("nodeName"):
                self.pods.event("MODIFIED", pod)  # bound after all (an earlier attempt landed)
                return
            taken_back = self.forget_bind(uid, node, reason)
            if pod is not None:
                self.pods.event("MODIFIED", pod)
            task = self.get_task(uid)
        if taken_back and task is not None:
            self.status.pod_condition(task, "SchedulerError", f"failed to bind to node {node}: {reason}")

    def queue_weight_seen(self, name: str, uid: str, zero: bool) -> None:
        """Note whether Queue ``name`` has ``spec.weight`` 0; warn once when it comes to have it.

        Volcano's Queue CRD refuses such a queue (its weight is at least 1),
        but an API server without that schema keeps it, and with the
        ``proportion`` plugin its jobs deserve nothing and never run. The
        warning is logged and posted as a ``Warning`` Event ``InvalidWeight``
        on the Queue; the pending pods of its jobs say so in their reason
        (:meth:`queue_note`).
        """
        if not zero:
            self.zero_weight_queues.discard(name)
            return
        if name in self.zero_weight_queues:
            return
        self.zero_weight_queues.add(name)
        message = (
            f"Queue {name} has spec.weight 0, which Volcano's admission refuses (the least weight is 1): "
            "with the proportion plugin its jobs deserve no share of the cluster and are not scheduled; "
            "set spec.weight to 1 or more"
        )
        log.warning("%s", message)
        self.post_event("Queue", "", name, uid, "Warning", "InvalidWeight", message)

    def queue_note(self, queue: str) -> str:
        """What to put before the pending reason of the pods of ``queue``: why the queue is suspect, or ``""``."""
        if queue not in self.zero_weight_queues:
            return ""
        return f"queue {queue} has weight 0, which Volcano refuses (set spec.weight to 1 or more): "

    #: Queues whose ``spec.weight`` is 0 (see :meth:`queue_weight_seen`).
    zero_weight_queues: set[str]

    def eviction_refused(self, task: TaskInfo, message: str) -> None:
        """The Eviction API refused to evict ``task`` (a PodDisruptionBudget); the task stays."""
        log.info("eviction of %s refused: %s", task.key, message)
        self.evictions_refused += 1
        if self.on_failure is not None:
            self.on_failure("eviction")

    #: Evictions the Eviction API refused (``429``).
    evictions_refused = 0


def _bound_to(pod: dict[str, Any], uid: str, node: str) -> bool:
    """Whether ``pod`` (as read) is the pod ``uid`` and is bound to ``node``."""
    meta = pod.get("metadata") or {}
    spec = pod.get("spec") or {}
    return bool(meta.get("uid", uid) == uid and node and spec.get("nodeName") == node)
