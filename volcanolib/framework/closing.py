"""Closing a session: each job's status written back, and each queue's allocated resources.

:class:`Closing` is the part of :class:`~volcanolib.framework.session.Session`
that works out, at close, the PodGroup status of the jobs it writes and the
queues' totals (kept job by job across sessions, the fast path
:data:`KEPT_QUEUE_TOTALS`, or added up task by task).
"""

from __future__ import annotations

from collections.abc import Mapping
from typing import Final

from volcanolib.api.job import JobInfo
from volcanolib.api.queue import QueueInfo
from volcanolib.api.resource import Resource
from volcanolib.api.task import ALLOCATED_STATUSES, TaskStatus
from volcanolib.framework import fastpath
from volcanolib.framework.settled import SettledJobs, _status_signature
from volcanolib.framework.sums import JobSums
from volcanolib.framework.sums import whole as _whole

__all__ = ["KEPT_QUEUE_TOTALS", "Closing"]

#: Queue totals kept job by job across sessions.
KEPT_QUEUE_TOTALS: Final = fastpath.register("kept queue totals", "every allocated task's request added up")


class Closing(SettledJobs):
    """Job status and queue totals at close (a base of :class:`~volcanolib.framework.session.Session`)."""

    # What the session holds, as this part reads it.
    uid: str
    queues: dict[str, QueueInfo]
    check_fast_paths: bool

    def _update_job_status(self, job: JobInfo) -> bool:
        pg = job.pod_group
        # Each index key is one status, so a bucket's size is that status's count (job.count, without the scan).
        index = job.task_status_index
        pg.phase = job.status_phase(pg.unschedulable_in(self.uid))
        pg.running = len(index.get(TaskStatus.RUNNING, ()))
        pg.succeeded = len(index.get(TaskStatus.SUCCEEDED, ()))
        pg.failed = len(index.get(TaskStatus.FAILED, ()))
        return self._baseline.get(job.uid) != _status_signature(pg)

    def _queue_status(self) -> list[QueueInfo]:
        """Set every queue's ``allocated`` to the requests of the allocated tasks in it and its children.

        The result is the per-task sum (:meth:`_queue_totals`), key for key
        and in the same scalar order, but taken from the sums kept job by job
        since the previous session (:meth:`_kept_queue_totals`, the fast path
        :data:`KEPT_QUEUE_TOTALS`). Should a sum hold a value that is not a
        whole number, where the order of additions could change the result,
        every task is added one by one.
        """
        allocated = self._kept_queue_totals()
        if allocated is None:
            allocated = self._queue_totals()
        elif self.check_fast_paths:
            fastpath.agree(KEPT_QUEUE_TOTALS, allocated, self._queue_totals())
        out = []
        for name, queue in self.queues.items():
            total = allocated[name]
            if len(total.scalars) > 1:  # in name order, however the sum was taken
                total.scalars = dict(sorted(total.scalars.items()))
            queue.allocated = total
            out.append(queue)
        return out

    def _kept_queue_totals(self) -> dict[str, Resource] | None:
        """What :meth:`_queue_totals` gives, from each queue's job sums kept since the previous session.

        Only the jobs the cache or this session changed are added up again
        (with a carry; the first session adds up every job). ``None`` without
        a carry, or when a sum is not exact (see
        :class:`~volcanolib.framework.carry.PartSums`).
        """
        carry = self._carry
        if carry is None:
            return None
        jobs, queues = self.jobs, self.queues
        delta = self.delta
        kept = carry.job_sums if delta is not None and not delta.queues else None
        carry.job_sums = None  # until this close is done: a failure half-way leaves nothing to trust
        changed = delta.jobs | self._touched_jobs if delta is not None else None
        sums = carry.job_sums = JobSums.kept_or_afresh(kept, changed, jobs, queues, _allocated_parts)
        if not sums.exact:
            return None
        allocated: dict[str, Resource] = {name: Resource() for name in queues}
        for leaf, (part,) in sums.queues.items():
            total = part.total
            if not part.parts:
                continue
            for res in _chain(queues, allocated, leaf):
                res.add(total)
        for res in allocated.values():
            if not (_whole(res.milli_cpu) and _whole(res.memory) and all(_whole(v) for v in res.scalars.values())):
                return None
        return allocated

    def _queue_totals(self) -> dict[str, Resource]:
        """Per queue, the requests of the allocated tasks of its jobs and its children's, added task by task."""
        queues = self.queues
        allocated: dict[str, Resource] = {name: Resource() for name in queues}
        chains: dict[str, tuple[Resource, ...]] = {}
        for job in self.jobs.values():
            leaf = job.queue
            chain = chains.get(leaf)
            if chain is None:
                if leaf not in allocated:
                    continue
                chain = chains[leaf] = _chain(queues, allocated, leaf)
            for task in job.tasks_in(ALLOCATED_STATUSES):
                req = task.resreq
                for res in chain:
                    res.add(req)
        return allocated


def _stands_for_tasks(total: Resource) -> bool:
    """Whether a job's kept total (:attr:`JobInfo.allocated`) is its allocated tasks' requests added up, key for key.

    It is when its amounts are whole and it names no scalar, or one that is
    not zero (a total keeps a key at zero after its last task of that
    resource left, and orders several keys as they came).
    """
    scalars = total.scalars
    return (
        _whole(total.milli_cpu)
        and _whole(total.memory)
        and (not scalars or (len(scalars) == 1 and all(v and _whole(v) for v in scalars.values())))
    )


def _allocated_parts(job: JobInfo) -> tuple[Resource]:
    """A job's part of its queue's :class:`JobSums`: the requests of its allocated tasks, added up.

    The amount is a copy of the job's kept total where that is the same sum.
    """
    total = job.allocated
    if _stands_for_tasks(total):
        return (total.clone(),)
    amount = Resource()
    for task in job.tasks_in(ALLOCATED_STATUSES):
        amount.add(task.resreq)
    return (amount,)


def _chain(queues: Mapping[str, QueueInfo], totals: Mapping[str, Resource], leaf: str) -> tuple[Resource, ...]:
    """The totals of a queue and of its ancestors up to root (root itself is every queue's parent)."""
    chain = []
    name: str | None = leaf
    seen = set()
    while name is not None and name in totals and name not in seen:
        seen.add(name)
        chain.append(totals[name])
        parent = queues[name].parent
        name = parent if parent is not None else ("root" if name != "root" else None)
    return tuple(chain)
