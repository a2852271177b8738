"""backfill: place best-effort tasks (tasks without resource requests)."""

from __future__ import annotations

import logging
from typing import TYPE_CHECKING, ClassVar

import attrs

from volcanolib.api.fiterrors import FitError, FitErrors
from volcanolib.api.job import JobInfo
from volcanolib.api.task import TaskInfo, TaskStatus
from volcanolib.errors import ResourceError
from volcanolib.framework.action import BaseAction
from volcanolib.framework.placement import predicate_error_cache_argument
from volcanolib.framework.queues import job_queues
from volcanolib.framework.traits import Traits

if TYPE_CHECKING:
    from volcanolib.framework.session import Session

__all__ = ["Backfill", "BackfillArguments"]

log = logging.getLogger(__name__)


@attrs.frozen
class BackfillArguments:
    """The ``configurations`` arguments of ``backfill``."""

    predicate_error_cache: bool = predicate_error_cache_argument(
        "Accepted for compatibility; each task is checked on its own, so it has no effect."
    )


class Backfill(BaseAction[BackfillArguments]):
    """Place best-effort tasks on any node whose predicates accept them.

    A best-effort task requests no resources, so only predicates matter (no
    resource check). The tasks considered are the pending best-effort tasks
    of admitted, valid jobs in known queues, plus best-effort tasks left
    pipelined by an earlier action (their reservation is released first).
    The whole list is ordered before anything is placed: queues in queue
    order, every job of a queue (job order) before the next queue, tasks in
    task order.

    For each task: a pre-predicate failure records the reason for every node
    and moves on; otherwise the nodes passing every predicate are scored
    (``best_node``, else the highest score, ties broken by the session's
    seeded generator) and the task is allocated at once
    (:meth:`Session.allocate`, a statement of its own that is kept): its
    job's allocated tasks are bound as soon as the job is ready. A task that fits no node gets its reasons in
    ``job.nodes_fit_errors``.

    Arguments: :class:`BackfillArguments` (``predicateErrorCacheEnable``,
    accepted for compatibility).
    """

    name: ClassVar[str] = "backfill"
    Arguments = BackfillArguments
    #: Reads no clock: a replay may skip a session that would see the same cluster (docs/incremental.md).
    traits: ClassVar[Traits] = Traits(clock_free=True)

    def execute(self, ssn: Session) -> None:
        """Place every best-effort task that some node accepts."""
        placement = ssn.placement
        nodes = placement.nodes
        for task in self._pick_tasks(ssn):
            job = ssn.jobs[task.job]
            with ssn.guard(job):
                pre = ssn.pre_predicate(task)
                if not pre.ok:
                    errors = FitErrors(total_nodes=len(nodes))
                    reasons = pre.reasons or (pre.plugin or "pre-predicate failed",)
                    for node in nodes:
                        errors.set_node_error(FitError(task.key, node.name, reasons))
                    job.nodes_fit_errors[task.uid] = errors
                    continue
                errors = FitErrors(total_nodes=len(nodes))
                feasible = placement.feasible(task, fit_errors=errors)
                if not feasible:
                    job.nodes_fit_errors[task.uid] = errors
                    continue
                chosen = placement.best(task, feasible)
                if chosen is None:
                    continue
                try:
                    ssn.allocate(task, chosen)
                except ResourceError as exc:
                    log.error("backfilling task %s on node %s failed: %s", task.key, chosen.name, exc)
                    failed = FitErrors(total_nodes=len(nodes))
                    failed.set_node_error(FitError(task.key, chosen.name, (str(exc),)))
                    job.nodes_fit_errors[task.uid] = failed

    @staticmethod
    def _pick_tasks(ssn: Session) -> list[TaskInfo]:
        def best_effort(job: JobInfo) -> list[TaskInfo] | None:
            if not job.pending_best_effort_task_num() and not job.waiting_task_num():
                return None
            picked = [t for t in job.tasks_in(TaskStatus.PENDING) if t.best_effort]
            pipelined = [t for t in job.tasks_in(TaskStatus.PIPELINED) if t.best_effort]
            # Only a job with a best-effort task to place is asked whether it may be scheduled.
            if not (picked or pipelined) or not ssn.job_schedulable(job):
                return None
            for task in pipelined:
                ssn.unpipeline(task)
            return picked + pipelined

        return job_queues(ssn, best_effort, ssn.unsettled_jobs()).drain()
