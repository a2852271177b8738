"""What the scheduler writes to the API server: binds, evictions, status, events.

Binds and writes run on bounded thread pools, off the scheduling cycle; an
eviction is issued in the cycle that decides it, so that a refusal (a
PodDisruptionBudget's ``429``) keeps the victim in that very session.
"""

from __future__ import annotations

import atexit
import datetime as _dt
import functools
import logging
import threading
import time
import weakref
from collections import deque
from collections.abc import Callable, Iterable
from typing import TYPE_CHECKING, Any, Final

from volcanolib.api.job import JobInfo, PodGroup, PodGroupPhase
from volcanolib.api.queue import QueueInfo
from volcanolib.api.task import TaskInfo, TaskStatus, in_statuses
from volcanolib.errors import CacheError
from volcanolib.kube.live._client import MERGE_PATCH, STRATEGIC_MERGE_PATCH, ApiError, KubeApi
from volcanolib.kube.live._writes import KeyedWriter, retryable

if TYPE_CHECKING:
    from volcanolib.kube.live.cache import KubernetesCache

__all__ = ["EventRecorder", "KubernetesEvictor", "KubernetesStatusUpdater", "Pool"]

log = logging.getLogger("volcanolib.kube.live")

PODGROUPS: Final = "/apis/scheduling.volcano.sh/v1beta1"
#: Task statuses whose pods get a PodScheduled=False condition saying why they wait.
_WAITING: Final = TaskStatus.PENDING | TaskStatus.ALLOCATED | TaskStatus.PIPELINED
_READY_PHASES: Final = (PodGroupPhase.RUNNING, PodGroupPhase.COMPLETED)
_WAITING_PHASES: Final = (PodGroupPhase.PENDING, PodGroupPhase.INQUEUE, PodGroupPhase.UNKNOWN)


def rfc3339(when: float) -> str:
    """A Kubernetes timestamp (whole seconds, UTC)."""
    return _dt.datetime.fromtimestamp(int(when), _dt.timezone.utc).strftime("%Y-%m-%dT%H:%M:%SZ")


#: Every pool: the interpreter finishes their work before it exits.
_POOLS: weakref.WeakSet[Pool] = weakref.WeakSet()


@atexit.register
def _finish_pools() -> None:
    """At exit, run what every pool still has (as a ``ThreadPoolExecutor`` would): a bind assumed is sent."""
    for pool in list(_POOLS):
        pool.shutdown()


class Pool:
    """A bounded pool of worker threads that can be waited on, and held.

    :meth:`flush` returns when all submitted work is done. While the pool
    is held (:meth:`hold`), work submitted is only queued: no worker starts
    it until :meth:`release`, so that a scheduling cycle handing over its
    binds and writes does not share the interpreter with them.

    :param workers: the most calls running at once.
    :param name: the prefix of the workers' thread names.
    """

    def __init__(self, workers: int, name: str) -> None:
        self._workers = max(1, workers)
        self._name = name
        self._queue: deque[tuple[Callable[..., Any], tuple[Any, ...]]] = deque()
        self._cond = threading.Condition()
        self._threads: list[threading.Thread] = []
        self._idle_workers = 0
        self._pending = 0
        self._held = 0
        self._stopping = False
        _POOLS.add(self)

    def submit(self, fn: Callable[..., Any], *args: Any) -> None:
        """Run ``fn(*args)`` on a worker (once the pool is released); an exception it raises is logged."""
        with self._cond:
            if self._stopping:
                raise RuntimeError(f"pool {self._name} is shut down")
            self._pending += 1
            self._queue.append((fn, args))
            if not self._held:
                self._wake(1)

    def hold(self) -> None:
        """Queue submitted work without starting it until :meth:`release` (holds nest)."""
        with self._cond:
            self._held += 1

    def release(self) -> None:
        """End one :meth:`hold`; once none is left, the workers start what was queued meanwhile."""
        with self._cond:
            if self._held:
                self._held -= 1
            if not self._held:
                self._wake(len(self._queue))

    @property
    def held(self) -> bool:
        """Whether submitted work waits for :meth:`release`."""
        return self._held > 0

    def _wake(self, count: int) -> None:
        """Have ``count`` more calls started: wake idle workers, start new ones up to the bound. Hold the lock."""
        if not count:
            return
        self._cond.notify(count)
        # Calls queued that no idle worker will take: a new worker each, within the bound.
        missing = min(len(self._queue) - self._idle_workers, self._workers - len(self._threads))
        for _ in range(max(0, missing)):
            thread = threading.Thread(target=self._work, name=f"{self._name}_{len(self._threads)}", daemon=True)
            self._threads.append(thread)
            self._idle_workers += 1  # idle until it takes its first call
            thread.start()

    def _work(self) -> None:
        cond = self._cond
        queue = self._queue
        while True:
            with cond:
                while not queue or self._held:
                    if self._stopping and not queue:
                        self._idle_workers -= 1
                        return
                    cond.wait()
                fn, args = queue.popleft()
                self._idle_workers -= 1
            try:
                fn(*args)
            except Exception as exc:
                log.error("background API call failed: %s: %s", type(exc).__name__, exc)
            finally:
                with cond:
                    self._idle_workers += 1
                    self._pending -= 1
                    if not self._pending:
                        cond.notify_all()

    @property
    def pending(self) -> int:
        """Calls submitted and not finished (those held included)."""
        return self._pending

    def flush(self, timeout: float | None = None) -> bool:
        """Wait until no call is pending; return whether that happened within ``timeout``.

        Work held (:meth:`hold`) is pending too: a flush while the pool is
        held waits for its release.
        """
        with self._cond:
            return self._cond.wait_for(lambda: not self._pending, timeout)

    def shutdown(self) -> None:
        """Release the pool, finish what was submitted and stop the workers."""
        with self._cond:
            self._held = 0
            self._stopping = True
            self._wake(len(self._queue))
            self._cond.notify_all()
            threads = list(self._threads)
        for thread in threads:
            if thread is not threading.current_thread():
                thread.join()


class EventRecorder:
    """Posts Kubernetes Events, each distinct one at most once per ``window`` seconds.

    The official client has no event correlator: without one, a pending gang
    would post the same ``Unschedulable`` event every cycle. An event whose
    object, reason and message were posted less than ``window`` seconds ago
    is dropped, and so is any event beyond ``rate`` per second (with a burst
    of ``burst``).
    """

    def __init__(
        self,
        api: KubeApi,
        pool: Pool,
        component: str,
        *,
        window: float = 600.0,
        rate: float = 50.0,
        burst: int = 500,
        may_write: Callable[[], bool] | None = None,
    ) -> None:
        self.api = api
        self.pool = pool
        self.component = component
        self.window = window
        self.rate = rate
        self.burst = burst
        self.may_write = may_write
        self._posted: dict[tuple[str, str, str, str, str], float] = {}
        self._tokens = float(burst)
        self._last = time.monotonic()
        self._lock = threading.Lock()
        #: Events dropped by the rate limit.
        self.dropped = 0

    def record(self, kind: str, namespace: str, name: str, uid: str, type_: str, reason: str, message: str) -> bool:
        """Post an event about an object unless an identical one was posted lately; return whether it is posted."""
        now = time.monotonic()
        key = (kind, namespace, name, reason, message)
        with self._lock:
            last = self._posted.get(key)
            if last is not None and now - last < self.window:
                return False
            self._tokens = min(float(self.burst), self._tokens + (now - self._last) * self.rate)
            self._last = now
            if self._tokens < 1:
                self.dropped += 1
                return False
            self._tokens -= 1
            if len(self._posted) > 100_000:
                self._posted = {k: t for k, t in self._posted.items() if now - t < self.window}
            self._posted[key] = now
        self.pool.submit(self._post, kind, namespace, name, uid, type_, reason, message)
        return True

    def _post(self, kind: str, namespace: str, name: str, uid: str, type_: str, reason: str, message: str) -> None:
        if self.may_write is not None and not self.may_write():
            return
        now = rfc3339(time.time())
        ns = namespace or "default"
        involved: dict[str, Any] = {"kind": kind, "name": name}
        if namespace:
            involved["namespace"] = namespace
        if uid:
            involved["uid"] = uid
        if kind in ("PodGroup", "Queue"):
            involved["apiVersion"] = "scheduling.volcano.sh/v1beta1"
        elif kind == "Pod":
            involved["apiVersion"] = "v1"
        body = {
            "apiVersion": "v1",
            "kind": "Event",
            "metadata": {"generateName": f"{name}.", "namespace": ns},
            "involvedObject": involved,
            "type": type_,
            "reason": reason,
            "message": message,
            "source": {"component": self.component},
            "reportingComponent": self.component,
            "firstTimestamp": now,
            "lastTimestamp": now,
            "count": 1,
        }
        try:
            # Sent again if a kept-alive connection closes under it: a duplicate event does no harm.
            self.api.request("POST", f"/api/v1/namespaces/{ns}/events", body=body, idempotent=True)
        except ApiError as exc:
            log.info("event %s on %s %s/%s not posted: %s", reason, kind, namespace, name, exc)


class KubernetesEvictor:
    """Evicts pods as Volcano does, or through the Eviction API.

    Volcano's way (the default): the pod gets the conditions ``Ready=False``
    (reason ``Evict``) and ``DisruptionTarget=True`` (reason
    ``PreemptionByScheduler``), then is deleted with its own grace period.
    With ``eviction_api``, a ``policy/v1`` Eviction is posted instead, so the
    API server enforces PodDisruptionBudgets: its ``429`` refuses the
    eviction, the victim stays, and the refusal is reported.
    """

    def __init__(self, cache: KubernetesCache, api: KubeApi, *, eviction_api: bool = False) -> None:
        self.cache = cache
        self.api = api
        self.eviction_api = eviction_api

    def evict(self, task: TaskInfo, reason: str) -> None:
        """Evict one pod now.

        :raises CacheError: when the API server refuses or cannot be reached
            (the cache then keeps the task as it was).
        """
        cache = self.cache
        if cache.may_write is not None and not cache.may_write():
            raise CacheError("this scheduler is not the leader")
        pod = f"/api/v1/namespaces/{task.namespace}/pods/{task.name}"
        if self.eviction_api:
            body = {
                "apiVersion": "policy/v1",
                "kind": "Eviction",
                "metadata": {"name": task.name, "namespace": task.namespace},
                "deleteOptions": {"preconditions": {"uid": task.uid}},
            }
            try:
                self.api.request("POST", f"{pod}/eviction", body=body)
            except ApiError as exc:
                if exc.status == 429:
                    cache.eviction_refused(task, exc.message)
                    raise CacheError(f"eviction refused by a PodDisruptionBudget: {exc.message}") from exc
                raise
            return
        now = rfc3339(time.time())
        scheduler = task.pod.scheduler_name if task.pod is not None else "volcano"
        conditions = [
            {
                "type": "Ready",
                "status": "False",
                "reason": "Evict",
                "message": f"Pod is evicted, because of {reason}",
                "lastTransitionTime": now,
            },
            {
                "type": "DisruptionTarget",
                "status": "True",
                "reason": "PreemptionByScheduler",
                "message": f"{scheduler}: preempting to accommodate a higher priority pod",
                "lastTransitionTime": now,
            },
        ]
        self.api.request(
            "PATCH", f"{pod}/status", body={"status": {"conditions": conditions}}, content_type=STRATEGIC_MERGE_PATCH
        )
        self.api.request("DELETE", pod, body={"preconditions": {"uid": task.uid}})


#: The fields of a PodGroup's status the scheduler writes, in the order of :func:`group_state`.
STATUS_FIELDS: Final = ("phase", "conditions", "running", "succeeded", "failed")
_COUNTS: Final = frozenset({"running", "succeeded", "failed"})
#: How many queued statuses per group are remembered to recognise their echoes on the watch.
_ECHOES: Final = 8


def group_state(pg: PodGroup) -> tuple[Any, ...]:
    """What a status write of this PodGroup would say, comparable (conditions without their times and ids)."""
    return (
        str(pg.phase),
        tuple((str(c.type), c.status, c.reason, c.message) for c in pg.conditions),
        pg.running,
        pg.succeeded,
        pg.failed,
    )


def observed_state(status: dict[str, Any]) -> tuple[Any, ...]:
    """:func:`group_state` of a PodGroup ``status`` as the API server holds it."""
    conditions = tuple(
        (c.get("type"), c.get("status"), c.get("reason"), c.get("message"))
        for c in status.get("conditions") or ()
        if isinstance(c, dict)
    )
    return (status.get("phase"), conditions, status.get("running"), status.get("succeeded"), status.get("failed"))


def status_fields(pg: PodGroup, fields: Iterable[str]) -> dict[str, Any]:
    """The named fields of a PodGroup's ``status`` as the API holds them (``conditions``: the whole list)."""
    out: dict[str, Any] = {}
    for field in fields:
        if field == "phase":
            out[field] = str(pg.phase)
        elif field == "conditions":
            out[field] = [
                {
                    "type": str(c.type),
                    "status": c.status,
                    "reason": c.reason,
                    "message": c.message,
                    "transitionID": c.transition_id,
                    "lastTransitionTime": rfc3339(c.last_transition_time),
                }
                for c in pg.conditions
            ]
        else:
            out[field] = getattr(pg, field)
    return out


class KubernetesStatusUpdater:
    """Writes PodGroup status, Queue status and pod conditions, each only when it changes.

    A PodGroup is patched (JSON merge patch of the object: the CRD has no
    status subresource) with only the fields of its ``status`` that differ
    from what the API server last showed or was last sent: its phase, its
    conditions (compared by type, status, reason and message; sent whole,
    since a merge patch replaces a list), its counts. A change of the counts
    alone is written at once if the group's counts were last written
    ``count_interval`` seconds ago or more, else held until then; a phase or
    condition change of the group meanwhile sends it along at once. A Queue's ``status.allocated``
    likewise (merge patch of ``queues/status``); a pod's
    ``PodScheduled=False`` condition (strategic merge patch of
    ``pods/status``, with a ``FailedScheduling`` event) when its reason or
    message changes. Groups made in memory for pods without one are not
    written. The writes run on a bounded pool, off the cycle, in order and
    coalesced per object (:class:`~volcanolib.kube.live._writes.KeyedWriter`).
    """

    def __init__(
        self,
        cache: KubernetesCache,
        api: KubeApi,
        pool: Pool,
        *,
        count_interval: float = 5.0,
        clock: Callable[[], float] = time.monotonic,
    ) -> None:
        self.cache = cache
        self.api = api
        self.pool = pool
        self.count_interval = count_interval
        self.clock = clock
        self.writer = KeyedWriter(pool.submit, clock)
        self._groups: dict[str, tuple[Any, ...]] = {}
        #: The last statuses queued for each group, oldest first (their echoes may still be on the way).
        self._queued: dict[str, deque[tuple[Any, ...]]] = {}
        #: When each group's counts were last sent (monotonic seconds).
        self._counts_sent: dict[str, float] = {}
        self._queues: dict[str, dict[str, str]] = {}
        self._pods: dict[str, tuple[str, str]] = {}
        self._lock = threading.Lock()
        #: Writes sent so far, by kind (``podgroup``, ``queue``, ``pod``).
        self.writes: dict[str, int] = {"podgroup": 0, "queue": 0, "pod": 0}

    # ------------------------------------------------------------------ what the watches show

    def observe_pod_group(self, key: str, status: dict[str, Any]) -> None:
        """Note a PodGroup's status as the API server shows it."""
        with self._lock:
            self._groups[key] = observed_state(status)

    def queued_before(self, key: str, status: dict[str, Any]) -> bool:
        """Whether a PodGroup ``status`` the API server shows is one this writer queued lately (an echo of ours)."""
        state = observed_state(status)
        with self._lock:
            return state in self._queued.get(key, ())

    def forget_pod_group(self, key: str) -> None:
        """A PodGroup was deleted: drop what waits to be written to it."""
        with self._lock:
            self._groups.pop(key, None)
            self._queued.pop(key, None)
            self._counts_sent.pop(key, None)
        self.writer.forget(("podgroup", key))

    def observe_queue(self, name: str, allocated: dict[str, Any]) -> None:
        """Note a Queue's ``status.allocated`` as the API server shows it."""
        with self._lock:
            self._queues[name] = {str(k): str(v) for k, v in allocated.items()}

    def forget_queue(self, name: str) -> None:
        """A Queue was deleted."""
        with self._lock:
            self._queues.pop(name, None)
        self.writer.forget(("queue", name))

    def observe_pod(self, task: TaskInfo, obj: dict[str, Any]) -> None:
        """Note a pod's ``PodScheduled=False`` condition (or its absence) as the API server shows it."""
        status = obj.get("status") or {}
        found = ("", "")
        for cond in status.get("conditions") or ():
            if isinstance(cond, dict) and cond.get("type") == "PodScheduled" and cond.get("status") == "False":
                found = (str(cond.get("reason", "")), str(cond.get("message", "")))
                break
        with self._lock:
            if found != ("", "") or task.uid in self._pods:
                self._pods[task.uid] = found

    def forget_pod(self, uid: str) -> None:
        """A pod was deleted."""
        with self._lock:
            self._pods.pop(uid, None)
        self.writer.forget(("pod", uid))

    # ------------------------------------------------------------------ StatusUpdater

    def update_pod_group(self, job: JobInfo) -> None:
        """Patch the fields of the PodGroup's status that differ from those last seen or sent."""
        key = job.uid
        if key in self.cache.shadow_groups:
            return
        pg = job.pod_group
        state = group_state(pg)
        now = self.clock()
        with self._lock:
            old = self._groups.get(key)
            if old == state:
                return
            self._groups[key] = state
            queued = self._queued.get(key)
            if queued is None:
                queued = self._queued[key] = deque(maxlen=_ECHOES)
            queued.append(state)
            if old is None:
                changed = list(STATUS_FIELDS)
            else:
                changed = [f for f, a, b in zip(STATUS_FIELDS, old, state, strict=True) if a != b]
            due = now
            if _COUNTS.issuperset(changed):
                sent = self._counts_sent.get(key)
                if sent is not None and now - sent < self.count_interval:
                    due = sent + self.count_interval  # a phase or condition change sends it along sooner
                else:
                    self._counts_sent[key] = now
            elif _COUNTS.intersection(changed):
                self._counts_sent[key] = now
        fields = status_fields(pg, changed)
        self.writer.put(("podgroup", key), fields, functools.partial(self._write_pod_group, key), due)
        if pg.phase in _READY_PHASES and due == now:
            self.cache.post_event(
                "PodGroup", pg.namespace, pg.name, pg.uid, "Normal", "Scheduled", "pod group is ready"
            )

    def _write_pod_group(self, key: str, fields: dict[str, Any]) -> None:
        if self.cache.may_write is not None and not self.cache.may_write():
            return
        namespace, _, name = key.partition("/")
        if _COUNTS.intersection(fields):
            with self._lock:
                self._counts_sent[key] = self.clock()
        path = f"{PODGROUPS}/namespaces/{namespace}/podgroups/{name}"
        try:
            self.api.request("PATCH", path, body={"status": fields}, content_type=MERGE_PATCH)
            self.writes["podgroup"] += 1
        except ApiError as exc:
            if retryable(exc):
                raise  # sent again after a back-off
            log.warning("PodGroup %s/%s status not written: %s", namespace, name, exc)
            with self._lock:
                self._groups.pop(key, None)  # compared with nothing: written whole when it next changes

    def update_queue(self, queue: QueueInfo) -> None:
        """Patch the Queue's ``status.allocated`` if it differs from the last one seen or sent."""
        with self._lock:
            seen = self._queues.get(queue.name)
            if seen is None:  # not a Queue object of the API server (the default queue before it exists)
                return
            allocated = queue.allocated.to_quantities()
            if _same_quantities(seen, allocated):
                return
            self._queues[queue.name] = allocated
        self.writer.put(
            ("queue", queue.name), {"allocated": allocated}, functools.partial(self._write_queue, queue.name)
        )

    def _write_queue(self, name: str, fields: dict[str, Any]) -> None:
        if self.cache.may_write is not None and not self.cache.may_write():
            return
        path = f"{PODGROUPS}/queues/{name}/status"
        try:
            self.api.request("PATCH", path, body={"status": fields}, content_type=MERGE_PATCH)
            self.writes["queue"] += 1
        except ApiError as exc:
            if retryable(exc):
                raise  # sent again after a back-off
            log.warning("Queue %s status not written: %s", name, exc)

    def update_pod_conditions(self, job: JobInfo) -> None:
        """Give each waiting pod of the job a ``PodScheduled=False`` condition saying why, when that changed."""
        if not any(bucket and in_statuses(status, _WAITING) for status, bucket in job.task_status_index.items()):
            return  # nothing waits (most jobs of a busy cluster): no scan
        note = self.cache.queue_note(job.queue)
        for task in job.tasks_in(_WAITING):
            reason, message = job.task_scheduling_reason(task)
            self.pod_condition(task, reason, note + message)

    def pod_condition(self, task: TaskInfo, reason: str, message: str) -> None:
        """Write ``PodScheduled=False`` with this reason and message, and a ``FailedScheduling`` event, if new."""
        with self._lock:
            if self._pods.get(task.uid) == (reason, message):
                return
            self._pods[task.uid] = (reason, message)
        self.cache.post_event("Pod", task.namespace, task.name, task.uid, "Warning", "FailedScheduling", message)
        write = functools.partial(self._write_pod, task.namespace, task.name, task.uid)
        self.writer.put(("pod", task.uid), {"reason": reason, "message": message}, write)

    def _write_pod(self, namespace: str, name: str, uid: str, fields: dict[str, Any]) -> None:
        if self.cache.may_write is not None and not self.cache.may_write():
            return
        condition = {
            "type": "PodScheduled",
            "status": "False",
            "reason": fields["reason"],
            "message": fields["message"],
            "lastTransitionTime": rfc3339(time.time()),
        }
        path = f"/api/v1/namespaces/{namespace}/pods/{name}/status"
        try:
            self.api.request(
                "PATCH", path, body={"status": {"conditions": [condition]}}, content_type=STRATEGIC_MERGE_PATCH
            )
            self.writes["pod"] += 1
        except ApiError as exc:
            log.info("pod %s/%s condition not written: %s", namespace, name, exc)
            with self._lock:
                self._pods.pop(uid, None)

    def job_events(self, job: JobInfo) -> None:
        """The PodGroup's ``Unschedulable`` event while it waits (posted again only when its message changes)."""
        pg = job.pod_group
        if job.uid in self.cache.shadow_groups or pg.phase not in _WAITING_PHASES or not job.tasks:
            return
        message = next((c.message for c in pg.conditions if str(c.type) == "Unschedulable"), "")
        if message:
            message = self.cache.queue_note(job.queue) + message
            self.cache.post_event("PodGroup", pg.namespace, pg.name, pg.uid, "Warning", "Unschedulable", message)


def _same_quantities(seen: dict[str, str], new: dict[str, str]) -> bool:
    """Whether two quantity maps hold the same amounts (``"0"`` and a missing key alike)."""
    from volcanolib.api.resource import Resource

    try:
        return Resource.from_list(seen) == Resource.from_list(new)
    except Exception:  # an unreadable quantity in the API's copy: write ours
        return False
