"""Statement: a tentative group of decisions, applied at once and undoable.

Each operation changes the session's state immediately (task status, node
accounting, plugin state through the allocate/deallocate events) and is
recorded. :meth:`Statement.commit` sends the allocations to the binder and
the evictions to the evictor, in recorded order; :meth:`Statement.discard`
undoes everything in reverse order, restoring node, job and plugin state
exactly.
"""

from __future__ import annotations

import enum
from typing import TYPE_CHECKING

from volcanolib.api.task import TaskInfo, TaskStatus
from volcanolib.errors import CacheError, PluginError

if TYPE_CHECKING:
    from volcanolib.api.node import NodeInfo
    from volcanolib.framework.session import Session

__all__ = ["Operation", "Statement"]


class Operation(enum.Enum):
    """The kinds of recorded operations."""

    EVICT = "evict"
    PIPELINE = "pipeline"
    ALLOCATE = "allocate"


class Statement:
    """An undo log of allocate, pipeline and evict operations on one session.

    A statement that is neither committed nor discarded leaves its effects in
    the session until it closes; nothing reaches the cluster.
    """

    __slots__ = ("operations", "ssn")

    def __init__(self, ssn: Session) -> None:
        self.ssn = ssn
        #: The recorded operations, oldest first.
        self.operations: list[tuple[Operation, TaskInfo, str]] = []

    def __len__(self) -> int:
        return len(self.operations)

    def has_evictions(self) -> bool:
        """Whether an eviction is recorded."""
        return any(op is Operation.EVICT for op, _, _ in self.operations)

    # ------------------------------------------------------------------ operations

    def evict(self, task: TaskInfo, reason: str) -> None:
        """Mark a placed task as releasing: its resources count as soon to be free."""
        ssn = self.ssn
        ssn.set_task_status(task, TaskStatus.RELEASING)
        node = ssn.nodes.get(task.node_name)
        if node is not None:
            node.update_task(task)
        self.operations.append((Operation.EVICT, task, reason))
        ssn.fire_deallocate(task)

    def pipeline(self, task: TaskInfo, node_name: str) -> None:
        """Reserve resources being released on a node for a pending task."""
        ssn = self.ssn
        node = ssn.nodes[node_name]
        ssn.set_task_status(task, TaskStatus.PIPELINED)
        task.node_name = node_name
        try:
            node.add_task(task)
        except Exception:
            ssn.set_task_status(task, TaskStatus.PENDING)
            task.node_name = ""
            raise
        self.operations.append((Operation.PIPELINE, task, ""))
        ssn.fire_allocate(task)

    def allocate(self, task: TaskInfo, node: NodeInfo) -> None:
        """Place a pending task on a node's idle resources."""
        ssn = self.ssn
        ssn.set_task_status(task, TaskStatus.ALLOCATED)
        task.node_name = node.name
        try:
            node.add_task(task)
        except Exception:
            ssn.set_task_status(task, TaskStatus.PENDING)
            task.node_name = ""
            raise
        self.operations.append((Operation.ALLOCATE, task, ""))
        ssn.fire_allocate(task)

    # ------------------------------------------------------------------ outcome

    def commit(self) -> None:
        """Send the recorded decisions to the cluster, in order.

        Allocations are bound (the tasks become Binding); evictions are sent
        to the evictor (an eviction the cache refuses is undone); pipelines
        stay session-only reservations.
        """
        ssn = self.ssn
        binds: list[TaskInfo] = []
        for op, task, reason in self.operations:
            task.last_transaction = None
            if op is Operation.EVICT:
                try:
                    ssn.cache.evict(task, reason)
                except CacheError:
                    self._unevict(task)
                else:
                    ssn.evictions.append((task, reason))
            elif op is Operation.ALLOCATE:
                binds.append(task)
        self.operations = []
        if binds:
            ssn.dispatch(binds)

    def discard(self) -> None:
        """Undo every recorded operation, newest first.

        A plugin failing on the undo events does not stop the undo: every
        operation is undone, then the first :class:`PluginError` is raised.
        """
        ops = self.operations
        self.operations = []
        failure: PluginError | None = None
        for op, task, _ in reversed(ops):
            task.last_transaction = (task.node_name, task.status)
            try:
                if op is Operation.EVICT:
                    self._unevict(task)
                else:
                    self._unplace(task)
            except PluginError as err:
                failure = failure or err
        if failure is not None:
            raise failure

    def _unevict(self, task: TaskInfo) -> None:
        ssn = self.ssn
        ssn.set_task_status(task, TaskStatus.RUNNING)
        node = ssn.nodes.get(task.node_name)
        if node is not None:
            node.update_task(task)
        ssn.fire_allocate(task)

    def _unplace(self, task: TaskInfo) -> None:
        ssn = self.ssn
        ssn.set_task_status(task, TaskStatus.PENDING)
        node = ssn.nodes.get(task.node_name)
        if node is not None:
            node.remove_task(task)
        try:
            ssn.fire_deallocate(task)
        finally:
            task.node_name = ""
