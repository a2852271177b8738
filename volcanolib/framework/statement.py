"""Statement: a tentative group of decisions, applied at once and undoable.

Every change of a task's state in a session goes through a statement. Each
operation changes the session immediately (task status, node accounting,
plugin state through the allocate/deallocate events) and is recorded in the
statement's undo log, which nothing else can edit:

* :meth:`Statement.commit` sends the allocations to the binder and the
  evictions to the evictor, in recorded order;
* :meth:`Statement.discard` undoes everything, newest first;
* :meth:`Statement.savepoint` and :meth:`Statement.rollback` undo back to a
  point, restoring node, job and plugin state exactly;
* :meth:`Statement.merge` moves another statement's operations to the end of
  this one (a tentative step that succeeded joins its enclosing decision).

.. versionchanged:: 0.2
   The undo log is private (:attr:`Statement.operations` is a read-only
   view); ``merge``, ``savepoint``/``rollback``, ``unpipeline`` and
   ``discard_quietly`` were added; an undone eviction records the status it
   replaced.
"""

from __future__ import annotations

import enum
from typing import TYPE_CHECKING, NamedTuple, final

from volcanolib.api.task import TaskInfo, TaskStatus
from volcanolib.errors import CacheError, PluginError

if TYPE_CHECKING:
    from volcanolib.api.job import JobInfo
    from volcanolib.api.node import NodeInfo
    from volcanolib.framework.session import Session

__all__ = ["Operation", "Record", "Savepoint", "Statement"]

_PENDING = TaskStatus.PENDING
_RUNNING = TaskStatus.RUNNING


class Operation(enum.Enum):
    """The kinds of recorded operations."""

    EVICT = "evict"
    PIPELINE = "pipeline"
    ALLOCATE = "allocate"
    UNPIPELINE = "unpipeline"


_EVICT = Operation.EVICT
_ALLOCATE = Operation.ALLOCATE
_PIPELINE = Operation.PIPELINE
_UNPIPELINE = Operation.UNPIPELINE

# A recorded operation: (kind, task, detail, status before). The detail is the
# reason of an eviction and the node an unpipelined task left, else "".
_Entry = tuple[Operation, TaskInfo, str, TaskStatus]


class Record(NamedTuple):
    """One recorded operation, as :attr:`Statement.operations` shows it."""

    #: What was done.
    operation: Operation
    #: The task it was done to.
    task: TaskInfo
    #: The reason of an eviction; empty for the other operations.
    reason: str


@final
class Savepoint:
    """A point in a statement's log to roll back to; made by :meth:`Statement.savepoint`.

    It stays valid until the statement is committed, discarded, merged into
    another one, or rolled back past it.
    """

    __slots__ = ("_epoch", "_last", "_size", "_statement")

    def __init__(self, statement: Statement, epoch: int, size: int, last: _Entry | None) -> None:
        self._statement = statement
        self._epoch = epoch
        self._size = size
        self._last = last


@final
class Statement:
    """An undo log of allocate, pipeline, unpipeline and evict operations on one session.

    A statement that is neither committed nor discarded leaves its effects in
    the session until it closes; nothing reaches the cluster.

    >>> from volcanolib.testing import FakeCache, build_node, build_pod_group, build_task, open_session
    >>> cache = FakeCache()
    >>> cache.add_node(build_node("n0", "4", "4Gi"))
    >>> cache.add_pod_group(build_pod_group("job"))
    >>> cache.add_task(build_task("job-0", job="job", cpu="1"))
    >>> ssn = open_session(cache, "actions: ''\\ntiers: []\\n")
    >>> task, node = ssn.jobs["default/job"].tasks["default-job-0"], ssn.nodes["n0"]
    >>> stmt = ssn.statement()
    >>> start = stmt.savepoint()
    >>> stmt.allocate(task, node)
    >>> task.status.name, node.idle.milli_cpu, len(stmt)
    ('ALLOCATED', 3000, 1)
    >>> stmt.rollback(start)
    >>> task.status.name, node.idle.milli_cpu, len(stmt)
    ('PENDING', 4000, 0)
    """

    __slots__ = ("_epoch", "_operations", "ssn")

    def __init__(self, ssn: Session) -> None:
        #: The session the operations change.
        self.ssn = ssn
        self._operations: list[_Entry] = []
        # Bumped whenever the log is emptied, so that older savepoints stop being valid.
        self._epoch = 0

    def __len__(self) -> int:
        return len(self._operations)

    @property
    def operations(self) -> tuple[Record, ...]:
        """The recorded operations, oldest first (a copy: changing it changes nothing)."""
        return tuple(Record(op, task, detail if op is _EVICT else "") for op, task, detail, _ in self._operations)

    def has_evictions(self) -> bool:
        """Whether an eviction is recorded."""
        return any(op is _EVICT for op, _, _, _ in self._operations)

    # ------------------------------------------------------------------ operations

    def evict(self, task: TaskInfo, reason: str) -> None:
        """Mark a placed task as releasing: its resources count as soon to be free."""
        ssn = self.ssn
        previous = task.status
        ssn._set_task_status(task, TaskStatus.RELEASING)
        node = ssn.nodes.get(task.node_name)
        if node is not None:
            node.update_task(task)
        self._operations.append((_EVICT, task, reason, previous))
        ssn._fire_deallocate(task)

    def pipeline(self, task: TaskInfo, node_name: str) -> None:
        """Reserve resources being released on a node for a pending task.

        :raises KeyError: when the node is not in the session (nothing changes).
        :raises ResourceError: when the node refuses the task (nothing changes).
        """
        self._place(task, self.ssn.nodes[node_name], TaskStatus.PIPELINED, _PIPELINE)

    def allocate(self, task: TaskInfo, node: NodeInfo) -> None:
        """Place a pending task on a node's idle resources.

        :raises ResourceError: when the node refuses the task (nothing changes).
        """
        self._place(task, node, TaskStatus.ALLOCATED, _ALLOCATE)

    def unpipeline(self, task: TaskInfo) -> None:
        """Return a pipelined task to Pending and release its reservation on its node."""
        self._operations.append((_UNPIPELINE, task, task.node_name, task.status))
        self._take_off(task, _PENDING)

    # ------------------------------------------------------------------ outcome

    def commit(self) -> list[tuple[TaskInfo, CacheError]]:
        """Send the recorded decisions to the cluster, in order, and empty the log.

        Allocations are bound (the tasks become Binding); evictions are sent
        to the evictor; pipelines and unpipelines stay session-only. An
        eviction the cache refuses is undone: the task gets back the status
        it had before. A plugin failing on such an undo stops neither the
        other evictions nor the other undos; the first :class:`PluginError`
        is raised once every eviction was sent, and the allocations are then
        not bound.

        :returns: the evictions the cache refused, with its reasons, in order.
        """
        ssn = self.ssn
        ops = self._operations
        self._operations = []
        self._epoch += 1
        binds: list[TaskInfo] = []
        refused: list[tuple[TaskInfo, CacheError]] = []
        failure: PluginError | None = None
        evict = ssn.cache.evict
        evicted = ssn.evictions.append
        for op, task, detail, previous in ops:
            task.last_transaction = None
            if op is _EVICT:
                try:
                    evict(task, detail)
                except CacheError as err:
                    refused.append((task, err))
                    try:
                        self._put_back(task, previous, task.node_name)
                    except PluginError as exc:
                        failure = failure or exc
                else:
                    evicted((task, detail))
            elif op is _ALLOCATE:
                binds.append(task)
        if failure is not None:
            raise failure
        if binds:
            ssn.dispatch(binds)
        return refused

    def discard(self, savepoint: Savepoint | None = None) -> None:
        """Undo every recorded operation, newest first (Volcano's discard).

        As in Volcano, an undone eviction leaves the task Running, whatever
        its status was before (use :meth:`rollback` to restore it exactly).
        A plugin failing on the undo events does not stop the undo: every
        operation is undone, then the first :class:`PluginError` is raised.

        :param savepoint: undo only the operations recorded after it (as
            :meth:`rollback`, but with the statuses and records of a
            discard); the statement's other savepoints stay valid up to it.
        :raises ValueError: when the savepoint is not valid (see :meth:`rollback`).
        """
        if savepoint is not None:
            self._undo(self._cut(savepoint), exact=False)
            return
        ops = self._operations
        self._operations = []
        self._epoch += 1
        self._undo(ops, exact=False)

    def discard_quietly(self, job: JobInfo | None = None, savepoint: Savepoint | None = None) -> None:
        """:meth:`discard`, recording (not raising) a plugin failure during the undo.

        :param job: the job the failure is reported for.
        :param savepoint: as for :meth:`discard`.
        """
        try:
            self.discard(savepoint)
        except PluginError as err:
            self.ssn.record_plugin_error(err, job)

    def savepoint(self) -> Savepoint:
        """A point to :meth:`rollback` to: the operations recorded so far."""
        ops = self._operations
        return Savepoint(self, self._epoch, len(ops), ops[-1] if ops else None)

    def rollback(self, savepoint: Savepoint) -> None:
        """Undo the operations recorded after ``savepoint``, newest first, restoring state exactly.

        Tasks, nodes, jobs and plugins are as they were at the savepoint,
        task statuses included (an evicted Bound task is Bound again), and
        unlike :meth:`discard` no undone decision is remembered in a task's
        :attr:`~TaskInfo.last_transaction` (it explains a discarded
        placement; a rollback is a dry run). A
        plugin failing on the undo events does not stop the undo; the first
        :class:`PluginError` is raised afterwards.

        :raises ValueError: when the savepoint is not one of this statement's
            or is no longer valid (see :class:`Savepoint`).
        """
        self._undo(self._cut(savepoint), exact=True)

    def _cut(self, savepoint: Savepoint) -> list[_Entry]:
        """Remove and return the operations recorded after ``savepoint``.

        :raises ValueError: when the savepoint is not valid for this statement.
        """
        ops = self._operations
        size = savepoint._size
        if (
            savepoint._statement is not self
            or savepoint._epoch != self._epoch
            or size > len(ops)
            or (size and ops[size - 1] is not savepoint._last)
        ):
            raise ValueError("the savepoint is not valid for this statement")
        undone = ops[size:]
        del ops[size:]
        return undone

    def merge(self, other: Statement) -> None:
        """Move ``other``'s operations to the end of this statement; their effects stay applied.

        ``other`` is left empty, as if committed, and its savepoints stop
        being valid.

        :raises ValueError: when ``other`` is this statement or belongs to another session.
        """
        if other is self or other.ssn is not self.ssn:
            raise ValueError("a statement merges only another statement of its session")
        self._operations.extend(other._operations)
        other._operations = []
        other._epoch += 1

    # ------------------------------------------------------------------ the changes, written once

    def _place(self, task: TaskInfo, node: NodeInfo, status: TaskStatus, op: Operation) -> None:
        """Put a task on a node with ``status`` (Allocated or Pipelined) and record ``op``."""
        ssn = self.ssn
        previous = task.status
        ssn._set_task_status(task, status)
        task.node_name = node.name
        try:
            node.add_task(task)
        except Exception:
            ssn._set_task_status(task, previous)
            task.node_name = ""
            raise
        self._operations.append((op, task, "", previous))
        ssn._fire_allocate(task)

    def _take_off(self, task: TaskInfo, status: TaskStatus) -> None:
        """Take a placed or pipelined task off its node with ``status``; tell the plugins."""
        ssn = self.ssn
        ssn._set_task_status(task, status)
        node = ssn.nodes.get(task.node_name)
        if node is not None and node.accounted_status(task) is not None:
            node.remove_task(task)
        try:
            ssn._fire_deallocate(task)
        finally:
            task.node_name = ""

    def _put_back(self, task: TaskInfo, status: TaskStatus, node_name: str) -> None:
        """Give a task ``status`` on ``node_name`` again (re-accounting it there); tell the plugins."""
        ssn = self.ssn
        ssn._set_task_status(task, status)
        task.node_name = node_name
        node = ssn.nodes.get(node_name)
        if node is not None:
            if node.accounted_status(task) is None:
                node.add_task(task)
            else:
                node.update_task(task)
        ssn._fire_allocate(task)

    def _undo(self, ops: list[_Entry], *, exact: bool) -> None:
        """Undo ``ops`` newest first.

        ``exact`` restores each status and leaves each task's
        :attr:`~TaskInfo.last_transaction` as it was (a rollback); otherwise
        statuses follow Volcano's discard (Running, Pending) and the undone
        decision is remembered in ``last_transaction``. Every operation is
        undone even when a plugin fails on an undo event; the first
        :class:`PluginError` is raised at the end.
        """
        failure: PluginError | None = None
        for op, task, detail, previous in reversed(ops):
            if not exact:
                task.last_transaction = (task.node_name, task.status)
            try:
                if op is _EVICT:
                    self._put_back(task, previous if exact else _RUNNING, task.node_name)
                elif op is _UNPIPELINE:
                    self._put_back(task, previous, detail)
                else:
                    self._take_off(task, previous if exact else _PENDING)
            except PluginError as err:
                failure = failure or err
        if failure is not None:
            raise failure
