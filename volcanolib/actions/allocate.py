"""allocate: place pending tasks of admitted jobs, binding a gang only once it is ready.

Follows Volcano's current allocate action: queues take turns in queue order;
each turn visits the queue's best job and places its tasks until the job is
ready (``job_ready``); a ready job's placements are committed (bound) and the
job goes back in line if it still has pending tasks; a job that only reaches
``job_pipelined`` keeps its tentative placements for the rest of the session
without binding them; any other job's placements are undone.
"""

from __future__ import annotations

import logging
from typing import TYPE_CHECKING, ClassVar

import attrs

from volcanolib.api.fiterrors import FitError, FitErrors
from volcanolib.api.hypernode import JOB_ALLOCATED_HYPER_NODE, HyperNodeInfo, HyperNodeTree
from volcanolib.api.job import JobInfo, PodGroupPhase
from volcanolib.api.queue import QueueInfo
from volcanolib.api.task import TaskInfo, TaskStatus
from volcanolib.errors import PluginError, ResourceError
from volcanolib.framework.action import BaseAction
from volcanolib.framework.placement import PredicateCache, node_classes_argument, predicate_error_cache_argument
from volcanolib.framework.queues import PriorityQueue, job_queues
from volcanolib.framework.statement import Operation
from volcanolib.framework.traits import Traits

if TYPE_CHECKING:
    from volcanolib.framework.session import Session
    from volcanolib.framework.statement import Statement

__all__ = ["Allocate", "AllocateArguments"]

log = logging.getLogger(__name__)


class _Run:
    """The state of one execution of the action."""

    __slots__ = ("cache_enabled", "failed_roles", "hyper_scores", "node_classes", "placement", "ssn", "tasks")

    def __init__(self, ssn: Session, cache_enabled: bool, node_classes: bool) -> None:
        self.ssn = ssn
        self.cache_enabled = cache_enabled
        self.node_classes = node_classes
        self.placement = ssn.placement
        #: Per job uid: its pending tasks not yet tried, in task order.
        self.tasks: dict[str, PriorityQueue[TaskInfo]] = {}
        #: Per job uid: roles of its tasks that fit no node this session.
        self.failed_roles: dict[str, set[str]] = {}
        #: Per job uid (hard network topology): per HyperNode, the scores of the nodes chosen in it, summed.
        self.hyper_scores: dict[str, dict[str, float]] = {}

    def roles_failed(self, job: JobInfo) -> set[str]:
        roles = self.failed_roles.get(job.uid)
        if roles is None:
            roles = set()
            for uid in job.nodes_fit_errors:
                task = job.tasks.get(uid)
                if task is not None:
                    roles.add(task.role)
            self.failed_roles[job.uid] = roles
        return roles

    def record_failure(self, job: JobInfo, task: TaskInfo, errors: FitErrors) -> None:
        job.nodes_fit_errors[task.uid] = errors
        self.roles_failed(job).add(task.role)

    # ------------------------------------------------------------------ one job visit

    def place_tasks(
        self,
        job: JobInfo,
        queue: QueueInfo,
        tasks: PriorityQueue[TaskInfo],
        stmt: Statement,
        hyper_node: HyperNodeInfo | None = None,
    ) -> bool:
        """Place tasks of ``job`` into ``stmt`` until it is ready.

        :param hyper_node: place only on the nodes under this HyperNode
            (a hard network-topology constraint), summing the chosen nodes'
            scores for it.
        :returns: whether the statement is kept (the job is ready or
            pipelined); otherwise it has been discarded.
        """
        ssn = self.ssn
        placement = self.placement
        total = len(placement.nodes) if hyper_node is None else len(hyper_node.nodes)
        cache = PredicateCache(self.cache_enabled)
        topology = job.pod_group.network_topology
        soft = topology is not None and not topology.hard and bool(ssn.hyper_nodes)
        placed_under = job.pod_group.annotations.get(JOB_ALLOCATED_HYPER_NODE, "")
        while tasks:
            task = tasks.pop()
            if not ssn.allocatable(queue, task):
                log.debug("queue %s cannot take task %s now, skipping it", queue.name, task.key)
                continue
            failed = self.roles_failed(job)
            if task.role and task.role in failed:
                errors = FitErrors(total_nodes=total)
                errors.set_error(f"task {task.key} skipped: another task of role {task.role!r} fit no node")
                job.nodes_fit_errors[task.uid] = errors
                continue
            pre = ssn.pre_predicate(task)
            if not pre.ok:
                errors = FitErrors(total_nodes=total)
                reasons = pre.reasons or (pre.plugin or "pre-predicate failed",)
                for node in placement.nodes:
                    errors.set_node_error(FitError(task.key, node.name, reasons))
                self.record_failure(job, task, errors)
                break
            if soft:
                ssn.hyper_node_hints[job.uid] = placed_under
            if hyper_node is None:
                chosen = placement.choose(task, cache, node_classes=self.node_classes)
            else:
                chosen, score = placement.choose_in(task, hyper_node.nodes, cache)
                if not isinstance(chosen, FitErrors) and chosen is not None:
                    sums = self.hyper_scores.setdefault(job.uid, {})
                    sums[hyper_node.name] = sums.get(hyper_node.name, 0.0) + score
            if isinstance(chosen, FitErrors):
                self.record_failure(job, task, chosen)
                if job.need_continue_allocating(self.roles_failed(job)):
                    continue
                break
            if chosen is None:
                continue
            node = chosen
            req = task.init_resreq
            try:
                if node.fits_idle(req):
                    stmt.allocate(task, node)
                elif node.fits_future_idle(req):
                    stmt.pipeline(task, node.name)
            except ResourceError as exc:
                log.error("placing task %s on node %s failed: %s", task.key, node.name, exc)
                continue
            if soft:
                placed_under = _joined(ssn.hyper_nodes, placed_under, node.name)
            if ssn.job_ready(job):
                break
        if soft:
            ssn.hyper_node_hints.pop(job.uid, None)
        if ssn.job_ready(job):
            if soft and placed_under:
                _set_placed_under(job, placed_under)
            return True
        if ssn.job_pipelined(job):
            return True
        stmt.discard()
        return False

    # ------------------------------------------------------------------ hard network topology

    def place_in_hyper_node(self, job: JobInfo, queue: QueueInfo, tasks: PriorityQueue[TaskInfo]) -> Statement | None:
        """Place ``job`` under one HyperNode, as its hard network-topology constraint requires.

        Tiers are searched from the lowest up to the job's highest allowed
        tier; in the first tier where some HyperNode can make the job ready,
        each HyperNode of that tier has been tried (and undone), and the job
        is placed in the best one (``hyper_node_order`` plus the summed
        scores of the nodes chosen there; ties drawn by the session's
        generator). A job already placed under a HyperNode only considers
        HyperNodes whose common ancestor with it stays within the allowed tier.

        :returns: the statement holding the placement (the job is ready), or
            ``None`` when no HyperNode can take the job; ``tasks`` then keeps
            the tasks left to place.
        """
        ssn = self.ssn
        tree = ssn.hyper_nodes
        topology = job.pod_group.network_topology
        assert topology is not None
        highest = topology.highest_tier_allowed
        placed_under = job.pod_group.annotations.get(JOB_ALLOCATED_HYPER_NODE, "")
        found: dict[str, tuple[list[tuple[TaskInfo, str, bool]], PriorityQueue[TaskInfo]]] = {}
        joined: dict[str, str] = {}
        for tier in tree.tiers:
            if tier > highest or found:
                break
            for name in tree.by_tier[tier]:
                joined[name] = name
                if placed_under:
                    common = tree.lowest_common_ancestor(name, placed_under)
                    common_tier = tree.tier_of(common) if common is not None else None
                    if common is None or common_tier is None or common_tier > highest:
                        continue
                    joined[name] = common
                trial = tasks.clone()
                job.nodes_fit_errors.clear()
                self.failed_roles.pop(job.uid, None)
                stmt = ssn.statement()
                try:
                    kept = self.place_tasks(job, queue, trial, stmt, tree.infos[name])
                except PluginError:
                    stmt.discard_quietly(job)
                    raise
                if not kept:
                    continue
                if not ssn.job_ready(job) or not len(stmt):
                    stmt.discard()
                    continue
                placed = [
                    (record.task, record.task.node_name, record.operation is Operation.ALLOCATE)
                    for record in stmt.operations
                    if record.operation in (Operation.ALLOCATE, Operation.PIPELINE)
                ]
                stmt.discard()
                found[name] = (placed, trial)
        if not found:
            return None
        best = self._best_hyper_node(job, sorted(found))
        placed, left = found[best]
        final = ssn.statement()
        try:
            for task, node_name, allocate in placed:
                if allocate:
                    final.allocate(task, ssn.nodes[node_name])
                else:
                    final.pipeline(task, node_name)
        except PluginError:
            final.discard_quietly(job)
            raise
        tasks.replace(left)
        if joined[best] != placed_under:
            _set_placed_under(job, joined[best])
        return final

    def _best_hyper_node(self, job: JobInfo, names: list[str]) -> str:
        if len(names) == 1:
            return names[0]
        ssn = self.ssn
        tree = ssn.hyper_nodes
        scores = ssn.hyper_node_order(job, {name: tree.infos[name].nodes for name in names})
        sums = self.hyper_scores.get(job.uid, {})
        totals = {name: scores.get(name, 0.0) + sums.get(name, 0.0) for name in names}
        top = max(totals.values())
        best = [name for name in names if totals[name] == top]
        return best[ssn.rng.randrange(len(best))] if len(best) > 1 else best[0]


def _joined(tree: HyperNodeTree, placed_under: str, node: str) -> str:
    """The HyperNode a job's tasks share once a task is placed on ``node`` (soft mode)."""
    own = tree.hyper_node_of(node)
    if own is None:
        return placed_under
    if not placed_under:
        return own
    return tree.lowest_common_ancestor(own, placed_under) or placed_under


def _set_placed_under(job: JobInfo, hyper_node: str) -> None:
    """Record in the job's PodGroup annotation the HyperNode its placed tasks share."""
    pg = job.pod_group
    if pg.annotations.get(JOB_ALLOCATED_HYPER_NODE) != hyper_node:
        pg.annotations = {**pg.annotations, JOB_ALLOCATED_HYPER_NODE: hyper_node}


@attrs.frozen
class AllocateArguments:
    """The ``configurations`` arguments of ``allocate``."""

    predicate_error_cache: bool = predicate_error_cache_argument(
        "Within one turn of a job, a node on which a task of a role failed the predicates is not checked "
        "again for later tasks of the same role."
    )
    node_classes: bool = node_classes_argument(
        "Check and score one node per class of alike nodes when every plugin that checks or scores nodes "
        "says how to group them. See [Write fast plugins](performance.md#4-node-classes)."
    )


class Allocate(BaseAction[AllocateArguments]):
    """Place pending tasks on nodes, gang by gang.

    Jobs taken into account are admitted (not Pending; when ``enqueue`` is
    not among the configured actions every Pending job is moved to Inqueue
    first), valid (``job_valid``), in a known queue, and have pending tasks
    with a non-empty request (best-effort tasks are left to ``backfill``).

    Queues take turns in queue order; a queue for which ``overused`` is true
    is left out for the rest of the action. Each turn takes the queue's best
    job (job order) and tries its tasks in task order, within one statement:

    * a task the queue may not take now (``allocatable``) is skipped;
    * a task whose role already has a task that fit no node is skipped;
    * a pre-predicate failure stops the job's visit;
    * nodes must fit the request in future idle resources (idle plus
      releasing minus pipelined; else ``Insufficient <resource>``) and pass
      every predicate; when none does, the job goes on with its next task
      only if the others can still make it ready (the job's
      ``need_continue_allocating``);
    * a task with a nominated node that fits is tried there first;
    * among feasible nodes, those where the task fits idle resources are
      scored first (``best_node``, then the highest score, ties broken by
      the session's seeded generator); only when there is none is the task
      pipelined onto a node whose resources are being released.

    A job whose PodGroup sets a hard ``networkTopology`` is placed within
    one HyperNode of the lowest tier that can take it (up to
    ``highestTierAllowed``; never, on a cluster without HyperNodes), chosen by
    ``hyper_node_order`` plus the scores of the nodes chosen there; a soft
    one is placed as usual while the HyperNode its tasks share is tracked
    for the scoring plugins (:attr:`Session.hyper_node_hints
    <volcanolib.framework.session.Session.hyper_node_hints>`). The HyperNode
    a job's tasks share is kept in its PodGroup annotation
    ``volcano.sh/job-allocated-hypernode``.

    The visit stops as soon as the job is ready. A ready job's statement is
    committed (its allocations are bound) and the job goes back in line if
    tasks remain, so ready jobs of a queue interleave one task per turn. A
    job that is only pipelined keeps its placements in the session, unbound,
    and is not visited again; otherwise the statement is discarded. Why a
    task fit no node is kept in ``job.nodes_fit_errors``.

    Arguments: :class:`AllocateArguments` (``predicateErrorCacheEnable``,
    ``nodeClassesEnable``).
    """

    name: ClassVar[str] = "allocate"
    Arguments = AllocateArguments
    #: Reads no clock: a replay may skip a session that would see the same cluster (docs/incremental.md).
    traits: ClassVar[Traits] = Traits(clock_free=True)

    def execute(self, ssn: Session) -> None:
        """Run the allocation over the session."""
        args = self.arguments
        run = _Run(ssn, args.predicate_error_cache, args.node_classes)
        auto_admit = "enqueue" not in ssn.enabled_actions

        def pending(job: JobInfo) -> list[TaskInfo] | None:
            if job.is_pending():
                if not auto_admit:
                    return None
                job.pod_group.phase = PodGroupPhase.INQUEUE
            # Validity is asked only of a job with something to place: an answer is all it gives.
            best_effort = job.pending_best_effort_task_num()
            if job.pending_task_num() == best_effort:
                return None
            # The Pending tasks, as tasks_in gives them (they are all in one bucket of the index).
            pending_tasks = job.task_status_index[TaskStatus.PENDING].values()
            tasks = [t for t in pending_tasks if not t.best_effort] if best_effort else list(pending_tasks)
            if not ssn.job_valid(job).ok:
                return None
            return tasks

        order = job_queues(ssn, pending, ssn.unsettled_jobs())
        run.tasks = order.tasks
        queues, jobs_by_queue = order.queues, order.jobs
        while queues:
            queue = queues.pop()
            if ssn.queue_overused(queue):
                continue
            jobs = jobs_by_queue.get(queue.name)
            if not jobs:
                continue
            job = jobs.pop()
            tasks = run.tasks[job.uid]
            topology = job.pod_group.network_topology
            if topology is not None and topology.hard:
                with ssn.guard(job):
                    placed = run.place_in_hyper_node(job, queue, tasks)
                    if placed is not None:
                        placed.commit()
                        if tasks:
                            jobs.push(job)
                queues.push(queue)
                continue
            stmt = ssn.statement()
            with ssn.guard(job, stmt):
                kept = run.place_tasks(job, queue, tasks, stmt)
                if kept and ssn.job_ready(job):
                    stmt.commit()
                    if tasks:
                        jobs.push(job)
            queues.push(queue)
