"""What a session needs from a cluster: the cache, and the three effectors it drives."""

from __future__ import annotations

from collections.abc import Sequence
from typing import Protocol, runtime_checkable

from volcanolib.api.cluster import ClusterInfo
from volcanolib.api.job import JobInfo
from volcanolib.api.queue import QueueInfo
from volcanolib.api.task import TaskInfo

__all__ = ["Binder", "Cache", "Evictor", "StatusUpdater"]


@runtime_checkable
class Cache(Protocol):
    """A mirror of the cluster that sessions snapshot and act on."""

    def snapshot(self) -> ClusterInfo:
        """A deep copy of the schedulable state: ready nodes, queues, jobs whose queue exists.

        The copy shares nothing the session may change with the cache's own
        objects. A cache that reuses copies between snapshots attaches a
        :class:`~volcanolib.api.cluster.SnapshotChanges` as the snapshot's
        ``changes``, where the session reports what it changed when it closes.
        """

    def bind(self, tasks: Sequence[TaskInfo]) -> Sequence[tuple[TaskInfo, str]] | None:
        """Bind tasks to the nodes named in their ``node_name``.

        A task the cache refuses or the binder fails to bind returns to
        Pending in the cache (it is tried again next cycle) and an event
        records why; it is never lost.

        :returns: the tasks that did not bind, each with the reason, so that
            :attr:`CycleResult.binds <volcanolib.scheduler.CycleResult.binds>`
            lists only binds that took effect; ``None`` from a cache that
            cannot tell (every task then counts as bound).
        """

    def evict(self, task: TaskInfo, reason: str) -> None:
        """Start evicting a placed task.

        :raises CacheError: when the eviction cannot be started; the cache
            then keeps the task as it was.
        """

    def update_job_status(self, job: JobInfo, update_pod_group: bool) -> None:
        """Write a job's PodGroup status (phase, conditions, counts) when ``update_pod_group``.

        A session calls it for every job at close, except when its snapshot
        came with a :attr:`~volcanolib.api.cluster.ClusterInfo.delta`: then
        jobs the cache did not change since the previous snapshot and the
        session left alone (tasks, PodGroup and notes as loaded) are not
        handed over.
        """

    def update_queue_status(self, queue: QueueInfo) -> None:
        """Write a queue's status (its allocated resources)."""


@runtime_checkable
class Binder(Protocol):
    """Binds tasks to nodes in the real system (a pods/binding call, a process start)."""

    def bind(self, tasks: Sequence[TaskInfo]) -> Sequence[TaskInfo | tuple[TaskInfo, str]]:
        """Bind each task to ``task.node_name``; return the tasks that failed.

        Each failed task is given alone or as a ``(task, reason)`` pair; the
        reason goes into the task's ``FailedBinding`` event and the cycle's
        :attr:`~volcanolib.scheduler.CycleResult.failed_binds`. Raising fails
        the whole batch, with the exception as the reason.
        """


@runtime_checkable
class Evictor(Protocol):
    """Evicts tasks in the real system (a pod deletion, a process kill)."""

    def evict(self, task: TaskInfo, reason: str) -> None:
        """Evict one task.

        :raises Exception: any exception means the eviction failed.
        """


@runtime_checkable
class StatusUpdater(Protocol):
    """Writes PodGroup and Queue status back to the real system."""

    def update_pod_group(self, job: JobInfo) -> None:
        """Persist ``job.pod_group``'s status."""

    def update_queue(self, queue: QueueInfo) -> None:
        """Persist ``queue.allocated``."""
