"""Volcano's queue controller as pure logic: queue states and counts from PodGroups, and queue commands.

The caller reports Queues, PodGroups and ``bus.volcano.sh`` Commands aimed
at queues (``vcctl queue operate --action open|close``); :class:`QueueController`
answers with the writes Volcano's queue controller makes:

* a queue's ``status.state``: Open stays Open; a close makes it Closed when
  no PodGroup names it, else Closing, and Closing becomes Closed once its
  last PodGroup is gone; an open makes it Open (refused, with a warning
  event, while its parent is Closing or Closed). ``root`` is never closed.
* hierarchy: a queue without a parent gets ``root``; closing a queue closes
  its open children, marking them ``volcano.sh/closed-by-parent``; opening it
  opens the children so marked; a child whose parent is closed is closed.
* the PodGroups of each queue counted by phase (Pending, Running, Unknown,
  Inqueue, Completed) and written with the state. Volcano v1.14 exports
  these counts as metrics only; volcanolib writes them in the Queue's status
  as its earlier releases did.

Like :mod:`volcanolib.controllers.job` it keeps no clock and does no I/O.
"""

from __future__ import annotations

from collections import deque
from collections.abc import Mapping
from typing import Any, Final, final

import attrs

__all__ = [
    "QueueAnnotation",
    "QueueChange",
    "QueueController",
    "QueueEvent",
    "QueueParent",
    "QueueStatus",
]

OPEN: Final = "Open"
CLOSED: Final = "Closed"
CLOSING: Final = "Closing"
UNKNOWN: Final = "Unknown"
OPEN_QUEUE: Final = "OpenQueue"
CLOSE_QUEUE: Final = "CloseQueue"
SYNC_QUEUE: Final = "SyncQueue"
#: Actions a Command aimed at a queue may carry.
QUEUE_ACTIONS: Final = frozenset({OPEN_QUEUE, CLOSE_QUEUE})
#: The annotation marking a queue closed because its parent was.
CLOSED_BY_PARENT_KEY: Final = "volcano.sh/closed-by-parent"
#: PodGroup phases counted in a queue's status, with the status field of each.
COUNTED_PHASES: Final = {
    "Pending": "pending",
    "Running": "running",
    "Unknown": "unknown",
    "Inqueue": "inqueue",
    "Completed": "completed",
}


@attrs.frozen
class QueueStatus:
    """Write the queue's ``status.state`` and its PodGroup counts."""

    name: str
    state: str
    #: ``pending``, ``running``, ``unknown``, ``inqueue``, ``completed``.
    counts: Mapping[str, int]


@attrs.frozen
class QueueParent:
    """Set the queue's ``spec.parent`` (a queue without one goes under ``root``)."""

    name: str
    parent: str


@attrs.frozen
class QueueAnnotation:
    """Set an annotation of the queue (``volcano.sh/closed-by-parent``)."""

    name: str
    key: str
    value: str


@attrs.frozen
class QueueEvent:
    """Record a Kubernetes Event on the queue."""

    name: str
    type: str
    reason: str
    message: str


#: One write of the queue controller.
QueueChange = QueueStatus | QueueParent | QueueAnnotation | QueueEvent


@attrs.define(eq=False)
class _Queue:
    name: str
    state: str
    parent: str
    closed_by_parent: bool
    written: tuple[str, tuple[tuple[str, int], ...]] | None = None


def _map(value: Any) -> Mapping[str, Any]:
    return value if isinstance(value, dict) else {}


@final
class QueueController:
    """Volcano's queue controller for ``scheduling.volcano.sh/v1beta1`` Queues.

    Each method takes an event, runs the requests it raises to completion,
    and returns the writes in order.
    """

    def __init__(self) -> None:
        self._queues: dict[str, _Queue] = {}
        #: PodGroup (namespace, name) -> (its queue, its phase).
        self._groups: dict[tuple[str, str], tuple[str, str]] = {}
        self._members: dict[str, set[tuple[str, str]]] = {}
        self._requests: deque[tuple[str, str]] = deque()
        self._out: list[QueueChange] = []

    # ------------------------------------------------------------------ events in

    def queue(self, manifest: Mapping[str, Any]) -> list[QueueChange]:
        """A Queue was added or changed; a new queue, or one whose parent changed, is synced."""
        meta, spec, status = (_map(manifest.get(k)) for k in ("metadata", "spec", "status"))
        name = str(meta.get("name") or "")
        if not name:
            return []
        parent = str(spec.get("parent") or "")
        marked = str(_map(meta.get("annotations")).get(CLOSED_BY_PARENT_KEY) or "") == "true"
        known = self._queues.get(name)
        if known is None:
            self._queues[name] = _Queue(name, str(status.get("state") or ""), parent, marked)
        else:
            changed = known.parent != parent
            known.parent, known.closed_by_parent = parent, marked
            if not changed:
                return []
        return self._run(name, SYNC_QUEUE)

    def queue_deleted(self, name: str) -> list[QueueChange]:
        """A Queue is gone."""
        self._queues.pop(name, None)
        return []

    def pod_group(self, namespace: str, name: str, queue: str, phase: str) -> list[QueueChange]:
        """A PodGroup was added or changed phase: its queue is synced."""
        key = (namespace, name)
        queue = queue or "default"
        old = self._groups.get(key)
        if old == (queue, phase):
            return []
        if old is not None and old[0] != queue:
            self._members.get(old[0], set()).discard(key)
        self._groups[key] = (queue, phase)
        self._members.setdefault(queue, set()).add(key)
        return self._run(queue, SYNC_QUEUE)

    def pod_group_deleted(self, namespace: str, name: str) -> list[QueueChange]:
        """A PodGroup is gone: its queue is synced (a Closing queue closes with its last group)."""
        old = self._groups.pop((namespace, name), None)
        if old is None:
            return []
        self._members.get(old[0], set()).discard((namespace, name))
        return self._run(old[0], SYNC_QUEUE)

    def command(self, name: str, action: str) -> list[QueueChange]:
        """A Command aimed at the queue: ``OpenQueue`` or ``CloseQueue``.

        :raises ValueError: for another action.
        """
        if action not in QUEUE_ACTIONS:
            raise ValueError(f"unknown queue action {action!r} (expected OpenQueue or CloseQueue)")
        return self._run(name, action)

    # ------------------------------------------------------------------ queries

    def knows(self, name: str) -> bool:
        """Whether the queue was reported (and not deleted)."""
        return name in self._queues

    def state(self, name: str) -> str:
        """The queue's state as last written (empty when never written).

        :raises KeyError: for an unknown queue.
        """
        return self._queues[name].state

    def counts(self, name: str) -> dict[str, int]:
        """The queue's PodGroups by phase, under the status field names."""
        out = dict.fromkeys(COUNTED_PHASES.values(), 0)
        for key in self._members.get(name, ()):
            field = COUNTED_PHASES.get(self._groups[key][1])
            if field is not None:
                out[field] += 1
        return out

    # ------------------------------------------------------------------ processing

    def _run(self, name: str, action: str) -> list[QueueChange]:
        self._requests.append((name, action))
        while self._requests:
            self._process(*self._requests.popleft())
        out, self._out = self._out, []
        return out

    def _process(self, name: str, action: str) -> None:
        queue = self._queues.get(name)
        if queue is None:
            return
        if action == OPEN_QUEUE:
            self._open(queue)
        elif action == CLOSE_QUEUE:
            self._close(queue)
        else:
            self._sync(queue)

    def _has_groups(self, queue: _Queue) -> bool:
        return bool(self._members.get(queue.name))

    def _write(self, queue: _Queue, state: str) -> None:
        counts = self.counts(queue.name)
        written = (state, tuple(sorted(counts.items())))
        queue.state = state
        if written != queue.written:
            queue.written = written
            self._out.append(QueueStatus(queue.name, state, counts))

    def _mark(self, queue: _Queue, value: bool) -> None:
        if queue.closed_by_parent != value:
            queue.closed_by_parent = value
            self._out.append(QueueAnnotation(queue.name, CLOSED_BY_PARENT_KEY, "true" if value else "false"))

    def _sync(self, queue: _Queue) -> None:
        if queue.name != "root" and not queue.parent:
            queue.parent = "root"
            self._out.append(QueueParent(queue.name, "root"))
        state = queue.state or OPEN
        if state == CLOSING and not self._has_groups(queue):
            state = CLOSED
        elif state not in (OPEN, CLOSED, CLOSING):
            state = UNKNOWN
        self._write(queue, state)
        parent = self._queues.get(queue.parent) if queue.name != "root" else None
        if parent is None:
            return
        if parent.state in (CLOSED, CLOSING) and queue.state not in (CLOSED, CLOSING):
            self._mark(queue, True)
            self._requests.append((queue.name, CLOSE_QUEUE))
        elif parent.state == OPEN and queue.state in (CLOSED, CLOSING) and queue.closed_by_parent:
            self._requests.append((queue.name, OPEN_QUEUE))

    def _open(self, queue: _Queue) -> None:
        if queue.state != OPEN:
            parent = self._queues.get(queue.parent)
            if queue.parent not in ("", "root") and parent is not None and parent.state in (CLOSED, CLOSING):
                message = f"cannot open queue {queue.name}: its parent queue {parent.name} is {parent.state}"
                self._out.append(QueueEvent(queue.name, "Warning", OPEN_QUEUE, message))
                return
            for child in self._queues.values():
                if child.parent == queue.name and child.closed_by_parent:
                    self._requests.append((child.name, OPEN_QUEUE))
        self._write(queue, OPEN)
        self._mark(queue, False)

    def _close(self, queue: _Queue) -> None:
        if queue.name == "root":
            self._out.append(QueueEvent(queue.name, "Warning", CLOSE_QUEUE, "the root queue cannot be closed"))
            return
        before = queue.state
        if before not in (CLOSED, CLOSING):
            for child in self._queues.values():
                if child.parent == queue.name and child.state not in (CLOSED, CLOSING):
                    self._mark(child, True)
                    self._requests.append((child.name, CLOSE_QUEUE))
        state = CLOSED if before == CLOSED or not self._has_groups(queue) else CLOSING
        self._write(queue, state)
        if state != before:
            self._out.append(QueueEvent(queue.name, "Normal", CLOSE_QUEUE, f"the queue is {state} now"))
