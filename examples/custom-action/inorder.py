"""inorder: an example volcanolib action that places each queue's jobs strictly in job order.

The built-in ``allocate`` lets a small job start ahead of a large gang that
does not fit yet, which can keep the gang waiting for ever. ``inorder``
does not: in each queue, jobs are placed whole in job order, and a job that
cannot be placed blocks the jobs behind it (except the next
``inorder.lookahead`` ones, which may still be tried). See docs/tutorials/custom-action.md.
"""

from __future__ import annotations

import logging
from typing import ClassVar, Final

from volcanolib import ConfigError, JobInfo, NodeInfo, QueueInfo, Session, TaskInfo, TaskStatus
from volcanolib.framework.queues import PriorityQueue, build_queues, is_schedulable

__all__ = ["LOOKAHEAD_KEY", "InOrder"]

log = logging.getLogger(__name__)

#: How many jobs behind a blocked job of the same queue may still be tried.
LOOKAHEAD_KEY: Final = "inorder.lookahead"


class InOrder:
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

    def execute(self, ssn: Session) -> None:
        """Place the jobs of every queue, in order."""
        lookahead = lookahead_of(ssn)

        def pending_tasks(job: JobInfo) -> list[TaskInfo] | None:
            if not is_schedulable(ssn, job):
                return None
            tasks = [task for task in job.tasks_in(TaskStatus.PENDING) if not task.best_effort]
            return tasks or None

        order = build_queues(ssn, pending_tasks)
        while order.queues:
            queue = order.queues.pop()
            with ssn.guard():
                if ssn.overused(queue):
                    log.debug("queue %s is overused: its jobs wait", queue.name)
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
    fitting = [node for node in ssn.node_list if request.less_equal(node.idle)]
    return ssn.best_node(task, ssn.predicate_nodes(task, fitting))


def lookahead_of(ssn: Session) -> int:
    """The ``inorder.lookahead`` argument: 0 (strict order) unless configured."""
    arguments = ssn.action_arguments(InOrder.name)
    value = arguments.get_int(LOOKAHEAD_KEY, 0)
    if value < 0:
        raise ConfigError(f"must be 0 or more, got {value}", key=f"{arguments.owner} arguments.{LOOKAHEAD_KEY}".strip())
    return value
