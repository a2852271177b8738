"""SnapshotCache: a cache over one snapshot that changes nothing anywhere (explanations, dry runs)."""

from __future__ import annotations

from collections.abc import Sequence

from volcanolib.api.cluster import ClusterInfo
from volcanolib.api.job import JobInfo
from volcanolib.api.queue import QueueInfo
from volcanolib.api.task import TaskInfo
from volcanolib.errors import CacheError

__all__ = ["SnapshotCache"]


class SnapshotCache:
    """A :class:`~volcanolib.cache.protocol.Cache` over one snapshot, for a session whose decisions go nowhere.

    It holds the snapshot and nothing else: no binder, no evictor, no
    status writer, no connection. :meth:`snapshot` hands out the snapshot
    once; the session's binds, evictions and status writes are only
    recorded here (:attr:`binds`, :attr:`evictions`, :attr:`job_status`,
    :attr:`queue_status`), so a session run on it can show what it would
    do and can do nothing. ``volcanolib serve`` runs its dry runs and
    explanations on one, over a copy of the live cache's snapshot.

    :param cluster: the snapshot (a copy the session may change: see
        :meth:`InMemoryCache.full_snapshot <volcanolib.cache.memory.InMemoryCache.full_snapshot>`).

    .. versionadded:: 0.2
    """

    def __init__(self, cluster: ClusterInfo) -> None:
        self._cluster: ClusterInfo | None = cluster
        #: Every task the session bound, with its node, in order.
        self.binds: list[tuple[TaskInfo, str]] = []
        #: Every task the session evicted, with the reason, in order.
        self.evictions: list[tuple[TaskInfo, str]] = []
        #: Every job whose status the session handed over at close, by uid.
        self.job_status: dict[str, JobInfo] = {}
        #: Every queue whose status the session handed over at close, by name.
        self.queue_status: dict[str, QueueInfo] = {}

    def snapshot(self) -> ClusterInfo:
        """The snapshot, once.

        :raises CacheError: when it was already handed out (a second session would see the first's changes).
        """
        cluster = self._cluster
        if cluster is None:
            raise CacheError("a SnapshotCache hands out its snapshot once")
        self._cluster = None
        return cluster

    def bind(self, tasks: Sequence[TaskInfo]) -> Sequence[tuple[TaskInfo, str]]:
        """Record the binds (each takes effect, as far as the session knows)."""
        self.binds.extend((task, task.node_name) for task in tasks)
        return ()

    def evict(self, task: TaskInfo, reason: str) -> None:
        """Record the eviction."""
        self.evictions.append((task, reason))

    def update_job_status(self, job: JobInfo, update_pod_group: bool) -> None:
        """Record the job as the session leaves it."""
        self.job_status[job.uid] = job

    def update_queue_status(self, queue: QueueInfo) -> None:
        """Record the queue as the session leaves it."""
        self.queue_status[queue.name] = queue
