"""inorder: an example volcanolib action that places each queue's jobs strictly in job order.

The built-in ``allocate`` lets a small job start ahead of a large gang that
does not fit yet, which can keep the gang waiting for ever. ``inorder``
does not: in each queue, jobs are placed whole in job order, and a job that
cannot be placed blocks the jobs behind it (except the next
``inorder.lookahead`` ones, which may still be tried). See docs/tutorials/custom-action.md.
"""

from __future__ import annotations

from typing import ClassVar

import attrs

from volcanolib import BaseAction, JobInfo, NodeInfo, QueueInfo, Session, TaskInfo, TaskStatus, argument
from volcanolib.framework.arguments import parse_int
from volcanolib.framework.queues import PriorityQueue, build_queues

__all__ = ["InOrder", "InOrderArguments"]


def _job_count(raw: object) -> int:
    """A number of jobs: an integer, 0 or more."""
    value = parse_int(raw)
    if value < 0:
        raise ValueError(f"must be 0 or more, got {value}")
    return value


@attrs.frozen
class InOrderArguments:
    """The arguments of inorder."""

    lookahead: int = argument(
        key="inorder.lookahead",
        default=0,
        doc="How many jobs behind a blocked job of the same queue may still be tried.",
        parse=_job_count,
    )


class InOrder(BaseAction[InOrderArguments]):
    """Place each queue's jobs whole, in job order; a job that cannot be placed blocks those behind it.

    Queues are visited once each, in queue order; a queue the plugins find
    overused is skipped. A job's pending tasks are placed in task order,
    each on the best node (``node_order``) among those it fits and whose
    predicates it passes, within what its queue may still take
    (``allocatable``). The placements are kept (bound) when the job is then
    ready (``job_ready``), and undone otherwise. The first job whose
    placements are undone blocks its queue: only the next
    ``inorder.lookahead`` jobs behind it are still tried (none by default),
    the others wait for the next cycle.
    """

    name: ClassVar[str] = "inorder"
    Arguments = InOrderArguments

    def execute(self, ssn: Session) -> None:
        """Place the jobs of every queue, in order."""
        lookahead = self.arguments.lookahead

        def pending_tasks(job: JobInfo) -> list[TaskInfo] | None:
            if not ssn.job_schedulable(job):
                return None
            tasks = [task for task in job.tasks_in(TaskStatus.PENDING) if not task.best_effort]
            return tasks or None

        order = build_queues(ssn, pending_tasks)
        while order.queues:
            queue = order.queues.pop()
            if ssn.queue_overused(queue):
                continue
            jobs = order.jobs[queue.name]
            window: int | None = None  # once a job is blocked: how many more may be tried
            while jobs and window != 0:
                job = jobs.pop()
                placed = place_job(ssn, queue, job, order.tasks[job.uid])
                if window is not None:
                    window -= 1
                elif not placed:
                    window = lookahead


def place_job(ssn: Session, queue: QueueInfo, job: JobInfo, tasks: PriorityQueue[TaskInfo]) -> bool:
    """Place the job's tasks in one statement; keep them if the job is then ready, else undo them.

    :returns: whether the placements were kept.
    """
    stmt = ssn.statement()
    with ssn.guard(job, stmt):
        while tasks:
            task = tasks.pop()
            node = choose_node(ssn, queue, task)
            if node is not None:
                stmt.allocate(task, node)
        if ssn.job_ready(job):
            stmt.commit()
            return True
        stmt.discard()
    return False


def choose_node(ssn: Session, queue: QueueInfo, task: TaskInfo) -> NodeInfo | None:
    """The best node for a task, or ``None`` when its queue may not grow or no node takes it."""
    if not ssn.allocatable(queue, task) or not ssn.pre_predicate(task).ok:
        return None
    request = task.init_resreq
    fitting = [node for node in ssn.node_list if node.fits_idle(request)]
    placement = ssn.placement
    return placement.best(task, placement.feasible(task, fitting))
