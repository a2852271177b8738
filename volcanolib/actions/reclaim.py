"""reclaim: let starving jobs take back resources from other queues that may give them up."""

from __future__ import annotations

import logging
from collections.abc import Iterable
from typing import TYPE_CHECKING, ClassVar, Final

import attrs

from volcanolib.api.job import JobInfo
from volcanolib.api.node import NodeInfo
from volcanolib.api.queue import QueueInfo
from volcanolib.api.task import TaskInfo, TaskStatus
from volcanolib.framework.action import BaseAction
from volcanolib.framework.placement import PredicateCache, VictimNodes, predicate_error_cache_argument
from volcanolib.framework.queues import PriorityQueue, job_queues
from volcanolib.framework.traits import Traits
from volcanolib.framework.victims import VictimOrder, make_room, validate_victims

if TYPE_CHECKING:
    from volcanolib.framework.session import Session
    from volcanolib.framework.statement import Statement

__all__ = ["Reclaim", "ReclaimArguments"]

log = logging.getLogger(__name__)

REASON: Final = "reclaim"
_RUNNING: Final = TaskStatus.RUNNING


@attrs.frozen
class ReclaimArguments:
    """The ``configurations`` arguments of ``reclaim``."""

    predicate_error_cache: bool = predicate_error_cache_argument(
        "Accepted for compatibility; nodes are filtered afresh for every task, so it has no effect."
    )


class Reclaim(BaseAction[ReclaimArguments]):
    """Evict tasks of other queues so that starving jobs can run.

    Queues that own an admitted, valid job take turns in queue order; a
    queue for which ``overused`` is true is skipped. Within a queue, its
    starving jobs (``job_starving``) are handled in job order, each in one
    statement, while the job is still starving: its pending tasks, in task
    order, skip those whose pod's ``preemptionPolicy`` is ``Never``, those
    the queue may not reclaim for (``preemptive``) and those failing a
    pre-predicate; every other task looks for room.

    Nodes are those passing the predicates (a plain ``UNSCHEDULABLE``
    failure counts as fixable by eviction), in node-list order, without
    scoring. On a node, candidates are Running, preemptable tasks of jobs in
    *other* queues that are reclaimable (``spec.reclaimable`` unset or
    true); the plugins choose the victims among them (``reclaimable``). The
    node is skipped unless evicting all victims would fit the task. Victims
    are evicted in victim order (by default, from the queue that would be
    served last) into a statement of that node until the task fits the
    node's future idle resources; the task is then pipelined there and the
    node's statement joins the job's. A node where the task still does not
    fit has its evictions undone. A node where the task already fits and
    nothing may be evicted gets the task pipelined as is.

    After the job's tasks, the statement is committed (the evictions are
    sent) when the job is pipelined (``job_pipelined``), else discarded.

    Arguments: :class:`ReclaimArguments` (``predicateErrorCacheEnable``,
    accepted for compatibility).
    """

    name: ClassVar[str] = "reclaim"
    Arguments = ReclaimArguments
    #: Reads no clock: a replay may skip a session that would see the same cluster (docs/incremental.md).
    traits: ClassVar[Traits] = Traits(clock_free=True)

    def execute(self, ssn: Session) -> None:
        """Reclaim resources for the starving jobs of every queue that is not overused."""
        enabled = self.arguments.predicate_error_cache
        self._victim_nodes = ssn.placement.victim_nodes(_possible_victim)
        self._reclaimable_queues: dict[str, bool] = {}
        # Every queue with a schedulable job takes its turn (and is asked whether it is overused).
        seen: dict[str, None] = {}

        def reclaimers(job: JobInfo) -> Iterable[TaskInfo] | None:
            if not ssn.job_schedulable(job):
                return None
            seen[job.queue] = None
            if not ssn.job_starving(job):
                return None
            return job.tasks_in(TaskStatus.PENDING)

        order = job_queues(ssn, reclaimers)
        queues, starving, preemptors = order.queues, order.jobs, order.tasks
        for name in seen:
            if name not in starving:
                queues.push(ssn.queues[name])
        while queues:
            queue = queues.pop()
            if ssn.queue_overused(queue):
                continue
            jobs_q = starving.get(queue.name)
            while jobs_q:
                job = jobs_q.pop()
                stmt = ssn.statement()
                with ssn.guard(job, stmt):
                    self._reclaim_for_job(ssn, stmt, queue, job, preemptors[job.uid], enabled)
                    if ssn.job_pipelined(job):
                        stmt.commit()
                    else:
                        stmt.discard()
                if jobs_q:
                    queues.push(queue)

    def _reclaim_for_job(
        self,
        ssn: Session,
        stmt: Statement,
        queue: QueueInfo,
        job: JobInfo,
        tasks: PriorityQueue[TaskInfo],
        cache_enabled: bool,
    ) -> None:
        while ssn.job_starving(job) and tasks:
            task = tasks.pop()
            if task.pod is not None and task.pod.preemption_policy == "Never":
                continue
            if not ssn.preemptive(queue, [task]):
                continue
            if not ssn.pre_predicate(task).ok:
                continue
            self._reclaim_for_task(ssn, stmt, job, task, PredicateCache(cache_enabled))

    def _reclaim_for_task(
        self, ssn: Session, stmt: Statement, job: JobInfo, task: TaskInfo, cache: PredicateCache
    ) -> bool:
        # Nodes in order that pass the predicates; only those holding a running task can give any.
        index = self._victim_nodes
        placement = ssn.placement
        nodes = index.nodes
        req = task.init_resreq
        victim_order = VictimOrder(ssn, task)
        for position in index.alive():
            node = nodes[position]
            candidates = self._candidates(ssn, job, node)
            if not candidates:
                continue
            if not placement.passes(task, node, cache):
                continue
            victims = ssn.reclaimable(task, candidates) or []
            # When the first victim in victim order makes room alone, the others need no order
            # (and evicting them all would make room too).
            order = victim_order.queue(victims)
            first = order.peek()
            if first is None or node.first_insufficient(req, first.resreq) is not None:
                first = None
                if not validate_victims(task, node, victims):
                    continue
            if first is not None:
                # The check above counted its request as released: once it is evicted, the task fits.
                if make_room(ssn, stmt, task, node, (first,), _fits, REASON, check_first=False, job=job):
                    return True
            elif make_room(ssn, stmt, task, node, order, None, REASON, check_first=False, job=job):
                return True
        return False

    _victim_nodes: VictimNodes
    _reclaimable_queues: dict[str, bool]

    def _candidates(self, ssn: Session, job: JobInfo, node: NodeInfo) -> list[TaskInfo]:
        out = []
        jobs = ssn.jobs
        own_queue = job.queue
        # Whether a queue gives tasks up, by name (a queue's spec does not change during the action).
        reclaimable = self._reclaimable_queues
        for task in node.tasks.values():
            if task.status is not _RUNNING or not task.preemptable:
                continue
            owner = jobs.get(task.job)
            if owner is None or owner.queue == own_queue:
                continue
            gives = reclaimable.get(owner.queue)
            if gives is None:
                queue = ssn.queues.get(owner.queue)
                gives = reclaimable[owner.queue] = queue is not None and queue.is_reclaimable()
            if gives:
                out.append(task)
        return out


def _fits() -> bool:
    return True


def _possible_victim(task: TaskInfo) -> bool:
    return task.status is _RUNNING and task.preemptable
