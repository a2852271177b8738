"""The queue controller, live: :class:`~volcanolib.controllers.queue.QueueController` driven by watches.

Events in: Queues, PodGroups (their queue and phase), Commands aimed at
queues (``vcctl queue operate -n NAME -a open|close``). Writes out: the
Queue's ``status`` (state and PodGroup counts, by merge patch, leaving the
scheduler's fields alone), ``spec.parent``, the ``volcano.sh/closed-by-parent``
annotation, and Events. Restart-safe: at start every Queue and PodGroup is
read again and the Commands waiting are handled.
"""

from __future__ import annotations

import logging
from collections.abc import Mapping
from typing import Any

from volcanolib.controllers.queue import (
    QueueAnnotation,
    QueueChange,
    QueueController,
    QueueEvent,
    QueueParent,
    QueueStatus,
)
from volcanolib.kube.live._client import ApiError
from volcanolib.kube.live._effectors import EventRecorder
from volcanolib.kube.live.controllers._api import Store, Writer

__all__ = ["LiveQueueController"]

log = logging.getLogger("volcanolib.kube.live.controllers")


def _map(value: Any) -> Mapping[str, Any]:
    return value if isinstance(value, dict) else {}


class LiveQueueController:
    """Drives a :class:`QueueController` from the stores' events and writes its changes.

    :param writer: sends the writes.
    :param stores: the stores by kind (``Queue``, ``PodGroup``, ``Command``).
    :param recorder: posts Events.
    """

    def __init__(self, writer: Writer, stores: Mapping[str, Store], recorder: EventRecorder) -> None:
        self.writer = writer
        self.stores = stores
        self.recorder = recorder
        self.ctrl = QueueController()

    def start(self) -> None:
        """Read every Queue and PodGroup, then handle the Commands waiting."""
        for queue in self.stores["Queue"].items():
            self._apply(self.ctrl.queue(queue))
        for group in self.stores["PodGroup"].items():
            self.on_pod_group("ADDED", group, None)
        for command in self.stores["Command"].items():
            self.on_command("ADDED", command, None)

    def on_queue(self, event: str, queue: dict[str, Any], old: dict[str, Any] | None) -> None:
        """A Queue was added, changed or deleted."""
        if event == "DELETED":
            self._apply(self.ctrl.queue_deleted(str(_map(queue.get("metadata")).get("name") or "")))
        else:
            self._apply(self.ctrl.queue(queue))

    def on_pod_group(self, event: str, group: dict[str, Any], old: dict[str, Any] | None) -> None:
        """A PodGroup was added, changed phase or was deleted."""
        meta = _map(group.get("metadata"))
        namespace, name = str(meta.get("namespace") or "default"), str(meta.get("name") or "")
        if event == "DELETED":
            self._apply(self.ctrl.pod_group_deleted(namespace, name))
            return
        queue = str(_map(group.get("spec")).get("queue") or "default")
        phase = str(_map(group.get("status")).get("phase") or "")
        self._apply(self.ctrl.pod_group(namespace, name, queue, phase))

    def on_command(self, event: str, command: dict[str, Any], old: dict[str, Any] | None) -> bool:
        """A Command aimed at a Queue (``OpenQueue``, ``CloseQueue``); whether it was one."""
        target = _map(command.get("target"))
        if event == "DELETED" or target.get("kind") != "Queue":
            return False
        meta = _map(command.get("metadata"))
        if not self.writer.delete("Command", str(meta.get("namespace") or "default"), str(meta.get("name") or "")):
            return True  # already handled
        name = str(target.get("name") or "")
        if not self.ctrl.knows(name):
            # the Command came before the Queue's own event: read the Queue now
            queue = self.writer.get("Queue", "", name)
            if queue is None:
                return True
            self._apply(self.ctrl.queue(queue))
        try:
            self._apply(self.ctrl.command(name, str(command.get("action") or "")))
        except ValueError as exc:
            self.recorder.record("Queue", "", name, str(target.get("uid") or ""), "Warning", "CommandRefused", str(exc))
        return True

    def _apply(self, changes: list[QueueChange]) -> None:
        for change in changes:
            try:
                if isinstance(change, QueueStatus):
                    status = {"state": change.state, **change.counts}
                    self.writer.patch("Queue", "", change.name, {"status": status}, "status")
                elif isinstance(change, QueueParent):
                    self.writer.patch("Queue", "", change.name, {"spec": {"parent": change.parent}})
                elif isinstance(change, QueueAnnotation):
                    patch = {"metadata": {"annotations": {change.key: change.value}}}
                    self.writer.patch("Queue", "", change.name, patch)
                elif isinstance(change, QueueEvent):
                    queue = self.stores["Queue"].get("", change.name) or {}
                    uid = str(_map(queue.get("metadata")).get("uid") or "")
                    self.recorder.record("Queue", "", change.name, uid, change.type, change.reason, change.message)
            except ApiError as exc:
                log.warning("queue %s: %s not written: %s", change.name, type(change).__name__, exc)
