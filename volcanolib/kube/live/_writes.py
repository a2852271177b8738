"""Writes keyed by object: queued off the cycle, in order and coalesced per object.

A status write names its object (a PodGroup, a Queue, a pod) and carries
the fields to change. While a write for an object waits to be sent, a later
one for the same object is merged into it (the later value of a field
replaces the earlier one), so an object gets one request however many
cycles changed it meanwhile; while a write for an object is in flight, the
next waits for its answer, so the API server sees an object's writes in the
order they were made. A write may be held until a given time (counts
written at most every few seconds); one that could not be sent for want of
an answer (no connection, ``429``, ``5xx``) is sent again after a back-off
(at least the server's ``Retry-After``), under any later fields for the same object.
"""

from __future__ import annotations

import heapq
import itertools
import logging
import threading
import time
from collections.abc import Callable, Hashable
from typing import Any, Final

from volcanolib.kube.live._client import ApiError

__all__ = ["KeyedWriter", "retryable"]

log = logging.getLogger("volcanolib.kube.live")

#: First and longest wait before a failed write is sent again, in seconds.
RETRY_FIRST: Final = 0.5
RETRY_MAX: Final = 30.0

Write = Callable[[dict[str, Any]], None]


def retryable(exc: ApiError) -> bool:
    """Whether a refused write may succeed if sent again unchanged (no answer, ``429``, ``5xx``)."""
    return exc.status == 0 or exc.status == 429 or exc.status >= 500


class _Item:
    __slots__ = ("attempts", "due", "fields", "write")

    def __init__(self, fields: dict[str, Any], write: Write, due: float) -> None:
        self.fields = fields
        self.write = write
        self.due = due
        self.attempts = 0


class KeyedWriter:
    """Sends field writes per object on a pool: ordered, coalesced, optionally held until a time.

    :param submit: runs a callable on a worker thread (a :class:`~volcanolib.kube.live._effectors.Pool`'s ``submit``).
    :param clock: monotonic seconds.
    """

    def __init__(self, submit: Callable[..., None], clock: Callable[[], float] = time.monotonic) -> None:
        self._submit = submit
        self._clock = clock
        lock = threading.Lock()
        self._cond = threading.Condition(lock)  # a write answered, or one dropped
        self._wake = threading.Condition(lock)  # the timer: a write held until later
        self._pending: dict[Hashable, _Item] = {}
        #: When held writes come due: (time, sequence, key); stale entries are skipped.
        self._heap: list[tuple[float, int, Hashable]] = []
        self._seq = itertools.count()
        #: Objects handed to a worker (waiting for one, or being written).
        self._active: set[Hashable] = set()
        self._timer: threading.Thread | None = None
        self._stopped = False
        #: Writes merged into one already waiting for the same object.
        self.coalesced = 0

    def put(self, key: Hashable, fields: dict[str, Any], write: Write, due: float | None = None) -> None:
        """Queue ``write(fields)`` for object ``key``, at once or at ``due`` (monotonic seconds).

        A write still waiting for ``key`` takes these fields over its own
        and is sent by the sooner of the two times, with ``write``.
        """
        now = self._clock()
        when = now if due is None else due
        with self._cond:
            item = self._pending.get(key)
            if item is None:
                self._pending[key] = item = _Item(dict(fields), write, when)
            else:
                item.fields.update(fields)
                item.write = write
                item.due = min(item.due, when)
                self.coalesced += 1
            self._schedule(key, item, now)

    def release(self) -> None:
        """Make every held write due now (before stopping: the last counts are written)."""
        now = self._clock()
        with self._cond:
            for key, item in self._pending.items():
                item.due = min(item.due, now)
                self._schedule(key, item, now)

    def forget(self, key: Hashable) -> None:
        """Drop what waits for ``key`` (the object was deleted)."""
        with self._cond:
            self._pending.pop(key, None)
            self._cond.notify_all()

    def waiting(self, key: Hashable) -> dict[str, Any] | None:
        """The fields waiting to be written for ``key`` (a copy), or ``None``."""
        with self._cond:
            item = self._pending.get(key)
            return None if item is None else dict(item.fields)

    @property
    def held(self) -> int:
        """Writes waiting for a later time (held counts, back-offs)."""
        now = self._clock()
        with self._cond:
            return sum(1 for k, i in self._pending.items() if i.due > now and k not in self._active)

    def flush(self, timeout: float | None = None) -> bool:
        """Wait until every write due by now has been answered; return whether that happened within ``timeout``."""

        def idle() -> bool:
            now = self._clock()
            return not self._active and all(i.due > now for i in self._pending.values())

        with self._cond:
            return self._cond.wait_for(idle, timeout)

    def stop(self) -> None:
        """Stop the timer that sends held writes (call :meth:`release` and :meth:`flush` first to send them)."""
        with self._cond:
            self._stopped = True
            self._wake.notify_all()
        timer = self._timer
        if timer is not None:
            timer.join(5.0)

    # ------------------------------------------------------------------ inside

    def _schedule(self, key: Hashable, item: _Item, now: float) -> None:
        """Hand ``key`` to a worker if it is due and none has it; else have the timer do it. Hold the lock."""
        if item.due > now:
            self._hold(key, item.due)
        elif key not in self._active:  # else the worker that has it looks again when its write is answered
            self._active.add(key)
            self._submit(self._run, key)

    def _hold(self, key: Hashable, due: float) -> None:
        """Have the timer look at ``key`` at ``due``. Hold the lock."""
        if self._stopped:
            return
        heapq.heappush(self._heap, (due, next(self._seq), key))
        if self._timer is None:
            self._timer = threading.Thread(target=self._tick, name="volcanolib-writes-timer", daemon=True)
            self._timer.start()
        elif self._heap[0][0] == due:
            self._wake.notify()

    def _run(self, key: Hashable) -> None:
        try:
            while True:
                with self._cond:
                    item = self._pending.get(key)
                    if item is None or item.due > self._clock():
                        return
                    del self._pending[key]
                try:
                    item.write(item.fields)
                except ApiError as exc:
                    if not retryable(exc):
                        raise
                    self._retry(key, item, exc)
        finally:
            with self._cond:
                self._active.discard(key)
                item = self._pending.get(key)
                if item is not None:  # came due, or was held, while this worker let go
                    self._schedule(key, item, self._clock())
                self._cond.notify_all()

    def _retry(self, key: Hashable, item: _Item, exc: ApiError) -> None:
        delay = min(RETRY_MAX, RETRY_FIRST * 2**item.attempts)
        if exc.retry_after is not None:  # the server said how long to wait (a 429 or 503): at least that
            delay = max(delay, min(RETRY_MAX, exc.retry_after))
        log.info("write of %s failed (%s); again in %.1f s", key, exc, delay)
        with self._cond:
            later = self._pending.get(key)
            item.attempts += 1
            item.due = self._clock() + delay
            if later is not None:  # fields written since win over the failed ones
                item.fields.update(later.fields)
                item.write = later.write
                item.due = min(item.due, later.due)
            self._pending[key] = item
            self._hold(key, item.due)

    def _tick(self) -> None:
        """Hand held writes to workers when they come due."""
        heap = self._heap
        with self._cond:
            while not self._stopped:
                now = self._clock()
                while heap and heap[0][0] <= now:
                    _, _, key = heapq.heappop(heap)
                    item = self._pending.get(key)
                    if item is not None and item.due <= now and key not in self._active:
                        self._active.add(key)
                        self._submit(self._run, key)
                self._wake.wait(None if not heap else max(0.001, heap[0][0] - now))
