"""enqueue: admit Pending PodGroups (Pending -> Inqueue) while there is room.

Queues take turns in queue order, one job per turn, so one busy queue cannot
hold back the admissions of the others.
"""

from __future__ import annotations

from typing import TYPE_CHECKING, ClassVar

from volcanolib.api.job import JobInfo, PodGroupPhase
from volcanolib.framework.action import BaseAction
from volcanolib.framework.arguments import NoArguments
from volcanolib.framework.queues import job_queues
from volcanolib.framework.traits import Traits

if TYPE_CHECKING:
    from volcanolib.framework.session import Session

__all__ = ["Enqueue"]


class Enqueue(BaseAction[NoArguments]):
    """Admission control: move Pending jobs to Inqueue.

    Every queue that has a Pending job takes part; its Pending jobs wait in
    job order. The best queue (queue order) admits its best Pending
    job, then goes back in line, so queues interleave one job per turn. A
    job without ``minResources`` is admitted unconditionally; any other job
    only when the plugins' ``job_enqueueable`` votes allow it. An admitted
    job is announced to the plugins (``job_enqueued``, where quota plugins
    reserve its minimum) and its PodGroup phase becomes Inqueue. A refused
    job stays Pending until the next cycle; the queue's next job is tried on
    the queue's next turn.

    The first time a job is seen, its ``schedule_start_timestamp`` is set to
    the session clock. Takes no arguments.
    """

    name: ClassVar[str] = "enqueue"
    Arguments = NoArguments
    #: Reads no clock: a replay may skip a session that would see the same cluster (docs/incremental.md).
    traits: ClassVar[Traits] = Traits(clock_free=True)

    def execute(self, ssn: Session) -> None:
        """Admit Pending jobs, queue by queue in turns."""
        now = ssn.clock()

        def pending(job: JobInfo) -> tuple[()] | None:
            if job.schedule_start_timestamp is None:
                job.schedule_start_timestamp = now
            return () if job.is_pending() else None

        order = job_queues(ssn, pending, ssn.unsettled_jobs())
        queues = order.queues
        while queues:
            queue = queues.pop()
            jobs = order.jobs[queue.name]
            if not jobs:
                continue
            job = jobs.pop()
            with ssn.guard(job):
                if job.pod_group.min_resources is None or ssn.job_enqueueable(job):
                    ssn.job_enqueued(job)
                    job.pod_group.phase = PodGroupPhase.INQUEUE
            queues.push(queue)
