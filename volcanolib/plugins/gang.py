"""gang: all-or-nothing scheduling of a job's minimum members.

A PodGroup's ``minMember`` (the job's ``min_available``) and its per-role
``minTaskMember`` say how many tasks must run together. This plugin:

* refuses jobs that can never reach their minimum (``job_valid``);
* lets a job bind only once enough tasks are placed (``job_ready``), and keeps
  pipelined placements only when they complete the gang (``job_pipelined``);
* puts jobs that are not ready before ready ones (``job_order``);
* evicts from a job only the tasks above its minimum (``preemptable``,
  ``reclaimable``);
* marks jobs below their minimum as starving (``job_starving``);
* at session close, writes the ``Unschedulable`` or ``Scheduled`` PodGroup
  condition.
"""

from __future__ import annotations

from collections.abc import Sequence
from typing import TYPE_CHECKING, ClassVar, Final

from volcanolib.api.job import ConditionType, JobInfo, PodGroupCondition
from volcanolib.api.task import TaskStatus
from volcanolib.framework.arguments import NoArguments
from volcanolib.framework.registry import hookimpl
from volcanolib.framework.shortfall import discarded_allocations, gang_shortfall
from volcanolib.framework.status import Code, Status, Vote
from volcanolib.framework.traits import Traits

if TYPE_CHECKING:
    from volcanolib.api.task import TaskInfo
    from volcanolib.framework.session import Session
    from volcanolib.framework.victims import EvictionContext

__all__ = [
    "NOT_ENOUGH_PODS_OF_TASK",
    "NOT_ENOUGH_RESOURCES",
    "NOT_ENOUGH_TASKS",
    "SCHEDULED_REASON",
    "GangPlugin",
]

#: ``job_valid`` reason: a role cannot reach its ``minTaskMember``.
NOT_ENOUGH_PODS_OF_TASK: Final = "NotEnoughPodsOfTask"
#: ``job_valid`` reason: the job has fewer valid tasks than ``minMember``.
NOT_ENOUGH_TASKS: Final = "NotEnoughTasks"
#: Reason of the ``Unschedulable`` condition written at session close.
NOT_ENOUGH_RESOURCES: Final = "NotEnoughResources"
#: Reason of the ``Scheduled`` condition written at session close.
SCHEDULED_REASON: Final = "tasks in gang are ready to be scheduled"
#: The condition of a ready job (compared with, never handed out: a session stamps what it is given).
_SCHEDULED: Final = PodGroupCondition(ConditionType.SCHEDULED, "True", SCHEDULED_REASON, "")

_PENDING = TaskStatus.PENDING


def _schedulable_task_num(job: JobInfo) -> int:
    """Ready tasks plus pending ones whose discarded placement was an allocation."""
    return discarded_allocations(job) + job.ready_task_num()


class GangPlugin:
    """Gang scheduling: a job runs only when ``min_available`` of its tasks can.

    Takes no arguments. Readiness counts tasks in an allocated status (Bound,
    Binding, Running, Allocated) and Succeeded ones; ``job_ready`` and
    ``job_pipelined`` also count pending best-effort tasks (empty requests),
    the starving test and the eviction counter do not.
    """

    name: ClassVar[str] = "gang"
    Arguments: ClassVar[type[NoArguments]] = NoArguments
    #: No clock; the job order key reads only whether the job is ready; conditions are set through the session.
    traits: ClassVar[Traits] = Traits(clock_free=True, local_job_keys=True, status_through_session=True)

    def __init__(self, arguments: NoArguments) -> None:
        self.arguments = arguments

    # ------------------------------------------------------------------ validation and voting

    @hookimpl
    def job_valid(self, ssn: Session, job: JobInfo) -> Status:
        """Fail a job that cannot reach its per-role or job minimum with its valid tasks.

        Valid tasks are those placed, succeeded, pipelined or pending. The
        failure carries ``(reason, message)``: ``NotEnoughPodsOfTask`` when a
        role is short, else ``NotEnoughTasks`` with the valid and minimum
        counts.
        """
        if not job.check_task_valid():
            return Status(
                Code.UNSCHEDULABLE,
                (NOT_ENOUGH_PODS_OF_TASK, "Not enough valid pods of each task for gang-scheduling"),
            )
        valid = job.valid_task_num()
        if valid < job.min_available:
            message = f"Not enough valid tasks for gang-scheduling, valid: {valid}, min: {job.min_available}"
            return Status(Code.UNSCHEDULABLE, (NOT_ENOUGH_TASKS, message))
        return Status.success()

    @hookimpl
    def job_ready(self, ssn: Session, job: JobInfo) -> bool:
        """Whether every role met its minimum and the job reached ``min_available`` with placed tasks."""
        return job.check_task_ready() and job.is_ready()

    @hookimpl
    def job_pipelined(self, ssn: Session, job: JobInfo) -> Vote:
        """Permit when the gang is complete counting pipelined tasks; otherwise reject (never abstains)."""
        if job.check_task_pipelined() and job.is_pipelined():
            return Vote.PERMIT
        return Vote.REJECT

    @hookimpl
    def job_starving(self, ssn: Session, job: JobInfo) -> bool:
        """Whether placed, succeeded and pipelined tasks are still below ``min_available``.

        Per-role minimums are not considered, and pending best-effort tasks
        do not count as placed.
        """
        return job.is_starving()

    # ------------------------------------------------------------------ order

    @hookimpl
    def job_order(self, ssn: Session, left: JobInfo, right: JobInfo) -> int:
        """A job that is not ready yet goes before a ready one; two of a kind abstain."""
        left_ready = left.is_ready()
        if left_ready == right.is_ready():
            return 0
        return 1 if left_ready else -1

    @hookimpl
    def job_order_key(self, ssn: Session, job: JobInfo) -> int:
        """Key form of :meth:`job_order`: 1 for a ready job, 0 otherwise."""
        return 1 if job.is_ready() else 0

    # ------------------------------------------------------------------ eviction

    def _above_minimum(self, ssn: Session, candidates: Sequence[TaskInfo]) -> list[TaskInfo]:
        jobs = ssn.jobs
        occupied: dict[str, int] = {}
        victims = []
        for task in candidates:
            job = jobs.get(task.job)
            if job is None:
                continue
            count = occupied.get(job.uid)
            if count is None:
                count = job.ready_task_num()
            if count > job.min_available:
                count -= 1
                victims.append(task)
            occupied[job.uid] = count
        return victims

    @hookimpl
    def preemptable(self, ssn: Session, preemptor: TaskInfo, preemptees: Sequence[TaskInfo]) -> list[TaskInfo]:
        """The candidates whose job keeps at least ``min_available`` ready tasks without them.

        Candidates are taken in the given order; each job starts from its
        ready count and loses one per accepted victim, and a candidate is
        accepted only while that count is strictly above the job's minimum.
        Candidates whose job is not in the session are left out.
        """
        return self._above_minimum(ssn, preemptees)

    @hookimpl
    def reclaimable(self, ssn: Session, reclaimer: TaskInfo, reclaimees: Sequence[TaskInfo]) -> list[TaskInfo]:
        """The same rule as :meth:`preemptable`, for reclaim across queues."""
        return self._above_minimum(ssn, reclaimees)

    @hookimpl
    def unified_evictable(
        self, ssn: Session, context: EvictionContext, candidates: Sequence[TaskInfo]
    ) -> Sequence[TaskInfo]:
        """Every candidate: gang-aware actions keep gangs whole through their own bundles.

        .. versionadded:: 0.2
        """
        return candidates

    # ------------------------------------------------------------------ session close

    @hookimpl
    def on_session_close(self, ssn: Session) -> None:
        """Write each job's gang condition and remember why an unready job waits.

        A job that is not ready gets ``Unschedulable`` (reason
        ``NotEnoughResources``) with Volcano's message ``"<missing>/<tasks>
        tasks in gang unschedulable: <fit error>"`` followed by what the job is
        short of, queue or nodes, with the numbers
        (:func:`~volcanolib.framework.shortfall.gang_shortfall`, also kept in
        :attr:`JobInfo.shortfall`); the message is also stored in
        :attr:`JobInfo.job_fit_errors`. ``<missing>`` counts pending tasks
        whose placement was discarded this session as schedulable. A ready
        job gets ``Scheduled``, kept as it is (its transition time included)
        while the job stays ready. Jobs without tasks are skipped. A failed
        or releasing task is not ready, so a job whose running and finished
        tasks are too few gets ``Unschedulable`` however many of its tasks
        were scheduled once (Volcano v1.14.1 has no exception for them).
        """
        for job in ssn.unsettled_jobs():  # a settled job is ready and keeps its Scheduled condition
            if not job.tasks:
                continue
            if job.is_ready():
                # A job that stays scheduled keeps its condition, transition id and time included.
                if not any(c.same_as(_SCHEDULED) for c in job.pod_group.conditions):
                    ssn.update_pod_group_condition(job, _SCHEDULED.copy())
                continue
            unready = job.min_available - _schedulable_task_num(job)
            message = f"{unready}/{len(job.tasks)} tasks in gang unschedulable: {job.fit_error()}"
            short = gang_shortfall(ssn, job).text()
            if short:
                message = f"{message} {short}" if message.endswith(".") else f"{message}. {short}"
            job.shortfall = short
            job.job_fit_errors = message
            ssn.update_pod_group_condition(
                job, PodGroupCondition(ConditionType.UNSCHEDULABLE, "True", NOT_ENOUGH_RESOURCES, message)
            )
