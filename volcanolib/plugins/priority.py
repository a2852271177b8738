"""priority: order by priority and let higher priority preempt lower.

* Tasks of a job: higher :attr:`TaskInfo.priority` first (the pod priority,
  or the ``volcano.sh/task-priority`` annotation).
* Jobs: higher :attr:`JobInfo.priority` first (the value of the PodGroup's
  PriorityClass, set by the cache at snapshot time).
* Preemption: a task of another job may be evicted when its job's priority is
  strictly lower than the preemptor job's; a task of the preemptor's own job
  when its task priority is strictly lower than the preemptor's.
* Starving: a job is starving while its placed, succeeded and pipelined tasks
  are fewer than all its tasks.

The plugin has no reclaim rule: reclaim across queues ignores priority.
"""

from __future__ import annotations

from collections.abc import Sequence
from typing import TYPE_CHECKING, ClassVar

from volcanolib.framework.arguments import NoArguments
from volcanolib.framework.registry import hookimpl
from volcanolib.framework.traits import Traits

if TYPE_CHECKING:
    from volcanolib.api.job import JobInfo
    from volcanolib.api.task import TaskInfo
    from volcanolib.framework.session import Session

__all__ = ["PriorityPlugin"]


def _higher_first(left: int, right: int) -> int:
    if left == right:
        return 0
    return -1 if left > right else 1


class PriorityPlugin:
    """Orders jobs and tasks by priority and restricts preemption to lower priorities.

    Takes no arguments.
    """

    name: ClassVar[str] = "priority"
    Arguments: ClassVar[type[NoArguments]] = NoArguments
    #: No clock; the job and task order keys read only the job's or the task's priority; no job status written.
    traits: ClassVar[Traits] = Traits(
        clock_free=True, local_job_keys=True, local_task_keys=True, status_through_session=True
    )

    def __init__(self, arguments: NoArguments) -> None:
        self.arguments = arguments

    # ------------------------------------------------------------------ orders

    @hookimpl
    def task_order(self, ssn: Session, left: TaskInfo, right: TaskInfo) -> int:
        """The task with the higher priority goes first; equal priorities abstain."""
        return _higher_first(left.priority, right.priority)

    @hookimpl
    def task_order_key(self, ssn: Session, task: TaskInfo) -> int:
        """Key form of :meth:`task_order`: the negated task priority."""
        return -task.priority

    @hookimpl
    def job_order(self, ssn: Session, left: JobInfo, right: JobInfo) -> int:
        """The job with the higher priority goes first; equal priorities abstain."""
        return _higher_first(left.priority, right.priority)

    @hookimpl
    def job_order_key(self, ssn: Session, job: JobInfo) -> int:
        """Key form of :meth:`job_order`: the negated job priority."""
        return -job.priority

    # ------------------------------------------------------------------ eviction

    @hookimpl
    def preemptable(self, ssn: Session, preemptor: TaskInfo, preemptees: Sequence[TaskInfo]) -> list[TaskInfo]:
        """Candidates of strictly lower priority than the preemptor.

        Across jobs the job priorities are compared; inside the preemptor's
        own job the task priorities are. Candidates whose job is not in the
        session are left out.
        """
        jobs = ssn.jobs
        own = jobs.get(preemptor.job)
        own_priority = own.priority if own is not None else 0
        victims = []
        for task in preemptees:
            job = jobs.get(task.job)
            if job is None:
                continue
            if job is not own:
                if job.priority < own_priority:
                    victims.append(task)
            elif task.priority < preemptor.priority:
                victims.append(task)
        return victims

    # ------------------------------------------------------------------ gang state

    @hookimpl
    def job_starving(self, ssn: Session, job: JobInfo) -> bool:
        """Whether placed, succeeded and pipelined tasks are fewer than all the job's tasks.

        Pending best-effort tasks do not count as placed.
        """
        return job.ready_task_num() + job.waiting_task_num() < len(job.tasks)
