"""Binding pods through ``pods/binding``: back-pressure, lost answers and conflicts.

A bind the API server refuses with ``429`` is not a failure: the whole
binder pauses for the server's ``Retry-After`` (:class:`Throttle`) and the
bind is sent again, with no re-read, status write or Event. A bind whose
answer was lost (the connection closed under it) may have taken effect: the
pod is read again before anything is repeated, and a pod found bound to the
node is a success, as is a ``409`` for a pod already bound there. When the
pod cannot be read either (the API server is away), the outcome is unknown:
the task keeps its node, and so its resources, until the pod watch shows it
bound or deleted, or a later read shows it unbound (:class:`BindReconciler`).
"""

from __future__ import annotations

import logging
import random
import threading
import time
from collections.abc import Callable, Sequence
from typing import TYPE_CHECKING, Any, Final, NamedTuple

from volcanolib.api.task import TaskInfo
from volcanolib.kube.live._backoff import Backoff
from volcanolib.kube.live._client import ApiError, KubeApi
from volcanolib.kube.live._writes import retryable

if TYPE_CHECKING:
    from volcanolib.kube.live._effectors import Pool
    from volcanolib.kube.live.cache import KubernetesCache

__all__ = ["MAX_THROTTLED", "BindReconciler", "KubernetesBinder", "Throttle"]

log = logging.getLogger("volcanolib.kube.live")

#: Times one bind is sent again after a ``429`` before it counts as failed (client-go's limit for Retry-After).
MAX_THROTTLED: Final = 10
#: The pause after a ``429`` without ``Retry-After``, and the longest one honoured, in seconds.
RETRY_AFTER_DEFAULT: Final = 1.0
RETRY_AFTER_MAX: Final = 60.0


class Throttle:
    """A pause all binds honour: the API server answered ``429 Too Many Requests``.

    One per binder (so per cluster): when the server pushes back, every bind
    waits, not just the one refused.

    :param clock: monotonic seconds.
    :param sleep: waits that many seconds.
    :param rng: a uniform draw from ``[0, 1)`` (the jitter of each resumption).
    """

    def __init__(
        self,
        clock: Callable[[], float] = time.monotonic,
        sleep: Callable[[float], None] = time.sleep,
        rng: Callable[[], float] = random.random,
    ) -> None:
        self._clock = clock
        self._sleep = sleep
        self._rng = rng
        self._until = 0.0
        self._lock = threading.Lock()
        #: Binds refused with ``429`` so far.
        self.refusals = 0

    def pause(self, seconds: float | None) -> float:
        """Make every bind wait ``seconds`` from now (1 s when the server gave none, at most 60 s); return it."""
        wait = min(RETRY_AFTER_MAX, RETRY_AFTER_DEFAULT if seconds is None else seconds)
        with self._lock:
            self._until = max(self._until, self._clock() + wait)
            self.refusals += 1
        return wait

    def remaining(self) -> float:
        """Seconds left in the current pause (0 when there is none)."""
        return max(0.0, self._until - self._clock())

    def wait(self) -> None:
        """Return once the pause is over (each waiter up to 50 ms later, so that they do not all resume at once)."""
        while True:
            left = self._until - self._clock()
            if left <= 0:
                return
            self._sleep(left + 0.05 * self._rng())


class KubernetesBinder:
    """Binds pods through the ``pods/binding`` subresource, on a bounded pool of threads.

    :meth:`bind` returns at once: the cache has assumed every bind. What
    follows depends on the answer (see the module): a success, a pause and
    a new attempt (``429``), a re-read of the pod (no answer, ``409``), or
    a failure handed back to the cache, which re-reads the pod: a pod found
    bound to the node is a success, any other goes back to Pending with a
    ``FailedBinding`` event and a ``PodScheduled=False`` condition.
    """

    def __init__(self, cache: KubernetesCache, api: KubeApi, pool: Pool) -> None:
        self.cache = cache
        self.api = api
        self.pool = pool
        self.throttle = Throttle()

    def bind(self, tasks: Sequence[TaskInfo]) -> Sequence[TaskInfo]:
        """Start binding every task to its ``node_name``; report no failure now."""
        for task in tasks:
            self.pool.submit(
                self._bind_one, task.uid, task.namespace, task.name, task.node_name, task.creation_timestamp
            )
        return ()

    def _bind_one(self, uid: str, namespace: str, name: str, node: str, created: float) -> None:
        cache = self.cache
        if cache.may_write is not None and not cache.may_write():
            cache.bind_failed(uid, namespace, name, node, "this scheduler is not the leader", refresh=False)
            return
        pod_path = f"/api/v1/namespaces/{namespace}/pods/{name}"
        body = {
            "apiVersion": "v1",
            "kind": "Binding",
            "metadata": {"name": name, "namespace": namespace, "uid": uid},
            "target": {"apiVersion": "v1", "kind": "Node", "name": node},
        }
        throttled = 0
        sent_again = False
        while True:
            self.throttle.wait()
            try:
                self.api.request("POST", f"{pod_path}/binding", body=body)
            except ApiError as exc:
                if exc.status == 429 and throttled < MAX_THROTTLED:
                    throttled += 1
                    wait = self.throttle.pause(exc.retry_after)
                    log.info("bind of %s/%s throttled by the API server: binds pause %.1f s", namespace, name, wait)
                    cache.bind_throttled()
                    continue
                if not exc.maybe_applied:
                    cache.bind_failed(uid, namespace, name, node, str(exc), created=created)
                    return
                # The answer was lost: read the pod before doing anything again.
                try:
                    pod = self.api.request("GET", pod_path)
                except ApiError as read:
                    if read.status == 404:
                        cache.bind_failed(uid, namespace, name, node, str(exc), gone=True)
                    elif retryable(read):  # no answer, or the server cannot answer now: the outcome is unknown
                        log.warning("bind of %s/%s: no answer, and the pod cannot be read: %s", namespace, name, read)
                        cache.bind_unresolved(uid, namespace, name, node, created)
                    else:
                        cache.bind_failed(uid, namespace, name, node, str(exc), created=created)
                    return
                if _unbound(pod, uid) and not sent_again:
                    sent_again = True  # it did not take effect: once more
                    continue
                cache.bind_failed(uid, namespace, name, node, str(exc), created=created, pod=pod)
                return
            cache.bound(uid, namespace, name, node, created)
            return


def _unbound(pod: Any, uid: str) -> bool:
    """Whether ``pod`` (as read) is the pod ``uid`` and has no node."""
    if not isinstance(pod, dict):
        return False
    meta = pod.get("metadata") or {}
    spec = pod.get("spec") or {}
    return meta.get("uid", uid) == uid and not spec.get("nodeName")


class _Unresolved(NamedTuple):
    namespace: str
    name: str
    node: str
    created: float


class BindReconciler:
    """Binds whose outcome is unknown: their answer was lost and the pod could not be read.

    Each such task keeps its node (so its resources, and it stays off the
    scheduling queue) until one of these says what happened: the pod watch
    shows it bound (:meth:`observed`), or deleted (:meth:`forget`); or a
    read of the pod, tried in the background with a back-off of at most
    about a second, answers: bound to the node (a success), bound elsewhere
    or unbound (the bind failed: the task is Pending again and retried as
    any failed bind), or not found (deleted).

    :param cache: the cache the binds were assumed in.
    :param api: the connection.
    """

    def __init__(self, cache: KubernetesCache, api: KubeApi) -> None:
        self.cache = cache
        self.api = api
        self._entries: dict[str, _Unresolved] = {}
        self._cond = threading.Condition()
        self._stopped = False
        self._thread: threading.Thread | None = None
        #: The waits between reads that got no answer.
        self.backoff = Backoff()

    def __len__(self) -> int:
        return len(self._entries)

    def __contains__(self, uid: object) -> bool:
        return uid in self._entries

    def add(self, uid: str, namespace: str, name: str, node: str, created: float) -> None:
        """Wait for the outcome of the bind of ``uid`` to ``node``."""
        with self._cond:
            if self._stopped:
                return
            self._entries[uid] = _Unresolved(namespace, name, node, created)
            if self._thread is None:
                self._thread = threading.Thread(target=self._run, name="volcanolib-bind-reconcile", daemon=True)
                self._thread.start()
            self._cond.notify_all()

    def take(self, uid: str) -> _Unresolved | None:
        """Stop waiting for ``uid``; return what was waited for (``None`` when nothing was)."""
        with self._cond:
            return self._entries.pop(uid, None)

    def observed(self, uid: str, node: str) -> None:
        """The watch shows pod ``uid`` bound to ``node``: its bind is resolved (a success if that is its node)."""
        entry = self.take(uid)
        if entry is None:
            return
        if node == entry.node:
            self.cache.bound(uid, entry.namespace, entry.name, node, entry.created)
        elif self.cache.on_failure is not None:  # another scheduler's bind won: the watch moves the task there
            self.cache.on_failure("bind")

    def forget(self, uid: str) -> None:
        """Pod ``uid`` was deleted: nothing is left to resolve."""
        self.take(uid)

    def stop(self) -> None:
        """Stop reading pods again (unresolved tasks keep their nodes)."""
        with self._cond:
            self._stopped = True
            self._cond.notify_all()
        if self._thread is not None:
            self._thread.join(5.0)

    def _run(self) -> None:
        while True:
            with self._cond:
                while not self._entries and not self._stopped:
                    self._cond.wait()
                if self._stopped:
                    return
                waiting = list(self._entries)
            answered = self._read_all(waiting)
            if answered:
                self.backoff.reset()
            with self._cond:
                if self._entries and not self._stopped:
                    self._cond.wait(self.backoff.next())

    def _read_all(self, uids: list[str]) -> bool:
        """Read each waiting pod again until the server does not answer; return whether it answered all."""
        for uid in uids:
            entry = self._entries.get(uid)
            if entry is None:
                continue  # the watch resolved it meanwhile
            path = f"/api/v1/namespaces/{entry.namespace}/pods/{entry.name}"
            try:
                pod = self.api.request("GET", path)
            except ApiError as exc:
                if exc.status == 404:
                    if self.take(uid) is not None:
                        self.cache.bind_failed(uid, entry.namespace, entry.name, entry.node, str(exc), gone=True)
                    continue
                if retryable(exc):
                    return False  # still away, or not answering yet: try again later
                if self.take(uid) is not None:  # refused (forbidden, say): the bind cannot be confirmed
                    self.cache.bind_failed(uid, entry.namespace, entry.name, entry.node, str(exc), refresh=False)
                continue
            if self.take(uid) is None:
                continue
            self.cache.bind_failed(
                uid,
                entry.namespace,
                entry.name,
                entry.node,
                "the API server did not answer the bind",
                created=entry.created,
                pod=pod,
            )
        return True
