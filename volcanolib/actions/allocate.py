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
from volcanolib.api.hypernode import (
    JOB_ALLOCATED_HYPER_NODE,
    HyperNodeInfo,
    HyperNodeTree,
    set_allocated_hyper_node,
)
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

    __slots__ = ("cache_enabled", "failed_roles", "node_classes", "placement", "ssn", "tasks")

    def __init__(self, ssn: Session, cache_enabled: bool, node_classes: bool) -> None:
        self.ssn = ssn
        self.cache_enabled = cache_enabled
        self.node_classes = node_classes
        self.placement = ssn.placement
        #: Per job uid: its pending tasks not yet tried, in task order.
        self.tasks: dict[str, PriorityQueue[TaskInfo]] = {}
        #: Per job uid: roles of its tasks that fit no node this session.
        self.failed_roles: dict[str, set[str]] = {}

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

        For a job with a network topology, the HyperNode its placed tasks
        share is kept in :attr:`Session.hyper_node_hints` while it is placed
        (the scoring plugins compare nodes with it); a soft-mode job that
        becomes ready records it in its PodGroup annotation.

        :param hyper_node: place only on the nodes under this HyperNode
            (a hard network-topology constraint).
        :returns: whether the statement is kept (the job is ready or
            pipelined); otherwise it has been discarded.
        """
        ssn = self.ssn
        placement = self.placement
        total = len(placement.nodes) if hyper_node is None else len(hyper_node.nodes)
        cache = PredicateCache(self.cache_enabled)
        topology = job.pod_group.network_topology
        tree = ssn.hyper_nodes
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
            if topology is not None:
                ssn.hyper_node_hints[job.uid] = placed_under
            if hyper_node is None:
                chosen = placement.choose(task, cache, node_classes=self.node_classes)
            else:
                chosen, _ = placement.choose_in(task, hyper_node.nodes, cache)
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
            if topology is not None:
                placed_under = _joined(tree, placed_under, node.name)
            if ssn.job_ready(job):
                break
        if topology is not None:
            ssn.hyper_node_hints.pop(job.uid, None)
        if ssn.job_ready(job):
            if topology is not None and not topology.hard and placed_under:
                set_allocated_hyper_node(job, placed_under)
            return True
        if ssn.job_pipelined(job):
            return True
        stmt.discard()
        return False

    # ------------------------------------------------------------------ hard network topology

    def place_in_hyper_node(
        self, job: JobInfo, queue: QueueInfo, tasks: PriorityQueue[TaskInfo]
    ) -> tuple[Statement, str] | None:
        """Place ``job`` under one HyperNode, as its hard network-topology constraint requires (Volcano v1.14).

        The groups of ``hyper_node_gradient`` under the cluster top are
        searched in order (without an answer, the cluster top alone). In a
        group, the job is placed in each HyperNode in turn and undone; the
        first group where some HyperNode made the job ready or pipelined
        decides, and the job goes to its HyperNode with the highest
        ``hyper_node_order`` score (ties drawn by the session's generator).

        :returns: the statement holding the placement and the chosen
            HyperNode, or ``None`` when no HyperNode can take the job;
            ``tasks`` then keeps the tasks left to place.
        """
        ssn = self.ssn
        tree = ssn.hyper_nodes
        groups = ssn.hyper_node_gradient(job, tree.top)
        if groups is None:
            groups = [[tree.top.name]]
        for group in groups:
            found: dict[str, tuple[list[tuple[TaskInfo, str, bool]], PriorityQueue[TaskInfo], float]] = {}
            for name in group:
                info = tree.infos.get(name)
                if info is None:
                    continue
                trial = tasks.clone()
                job.nodes_fit_errors.clear()
                self.failed_roles.pop(job.uid, None)
                stmt = ssn.statement()
                try:
                    kept = self.place_tasks(job, queue, trial, stmt, info)
                except PluginError:
                    stmt.discard_quietly(job)
                    raise
                if not kept:
                    continue
                placed = [
                    (record.task, record.task.node_name, record.operation is Operation.ALLOCATE)
                    for record in stmt.operations
                    if record.operation in (Operation.ALLOCATE, Operation.PIPELINE)
                ]
                stmt.discard()
                if not placed:
                    continue
                # Scored with the tentative placement undone, as Volcano scores a sub-job's HyperNode.
                score = ssn.hyper_node_order(job, {name: info.nodes}).get(name, 0.0)
                found[name] = (placed, trial, score)
            if not found:
                continue
            top = max(score for _, _, score in found.values())
            best_names = sorted(name for name, (_, _, score) in found.items() if score == top)
            best = best_names[ssn.rng.randrange(len(best_names))] if len(best_names) > 1 else best_names[0]
            placed, left, _ = found[best]
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
            return final, best
        return None


def _joined(tree: HyperNodeTree, placed_under: str, node: str) -> str:
    """The HyperNode a job's tasks share once a task is placed on ``node`` (Volcano's ``getNewAllocatedHyperNode``)."""
    own = tree.hyper_node_of(node)
    return tree.join(own, placed_under) if own is not None else placed_under


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
    one HyperNode, following Volcano v1.14: the groups of HyperNodes
    ``hyper_node_gradient`` gives (by default the virtual cluster top alone)
    are tried in order, and in the first group where some HyperNode can make
    the job ready or pipelined, the one ``hyper_node_order`` scores highest
    takes it. A job with a soft constraint is placed as usual. For either,
    the HyperNode the job's placed tasks share is tracked for the scoring
    plugins (:attr:`Session.hyper_node_hints
    <volcanolib.framework.session.Session.hyper_node_hints>`) and kept in
    its PodGroup annotation ``volcano.sh/job-allocated-hypernode``: a hard
    job's becomes the common ancestor of the old one and the chosen
    HyperNode, a soft job's the one its tasks share.

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
                    if placed is not None and ssn.job_ready(job):  # a pipelined job keeps its placements unbound
                        stmt, hyper_node = placed
                        stmt.commit()
                        recorded = job.pod_group.annotations.get(JOB_ALLOCATED_HYPER_NODE, "")
                        set_allocated_hyper_node(job, ssn.hyper_nodes.join(recorded, hyper_node))
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
