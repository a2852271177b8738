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
from collections.abc import Hashable
from typing import TYPE_CHECKING, ClassVar, Final

import attrs

from volcanolib.actions._util import (
    FitMemo,
    PredicateCache,
    PriorityQueue,
    first_insufficient,
    fits_future_idle,
    fits_idle,
    queue_overused,
    request_key,
)
from volcanolib.api.fiterrors import FitError, FitErrors, NodeNames, insufficient
from volcanolib.api.job import JobInfo, PodGroupPhase
from volcanolib.api.node import NodeInfo
from volcanolib.api.queue import QueueInfo
from volcanolib.api.task import TaskInfo, TaskStatus
from volcanolib.errors import ResourceError
from volcanolib.framework.arguments import argument
from volcanolib.framework.nodeclass import ClassAnswers, NodeClasses, NodeClassPlan

if TYPE_CHECKING:
    from volcanolib.framework.session import Session
    from volcanolib.framework.statement import Statement

__all__ = ["Allocate", "AllocateArguments"]

log = logging.getLogger(__name__)

#: Task signatures whose class answers are remembered before starting over.
_MAX_SIGNATURES: Final = 4096


class _Run:
    """The state of one execution of the action."""

    __slots__ = ("answers", "cache_enabled", "classes", "failed_roles", "memo", "nodes", "ssn", "tasks")

    def __init__(self, ssn: Session, cache_enabled: bool, classes_enabled: bool) -> None:
        self.ssn = ssn
        self.cache_enabled = cache_enabled
        self.nodes = ssn.node_list
        #: Which nodes fit which request, kept current from the session's node log.
        self.memo = FitMemo(self.nodes, ssn.node_log)
        #: Nodes grouped into classes the plugins treat alike, when they say how.
        self.classes = NodeClasses(self.nodes, ssn.node_log) if classes_enabled else None
        #: Per task signature (plan token, request): each class's fit and score, for pointwise plans.
        self.answers: dict[Hashable, ClassAnswers] = {}
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

    def choose_remembered(self, task: TaskInfo, plan: NodeClassPlan) -> NodeInfo | None:
        """:func:`_choose_by_class` for a pointwise plan, remembering each class's fit and score.

        Tasks with the same plan token and request get the same answers from
        a class as long as it exists, so only classes that appeared since the
        last such task are checked and scored. ``None`` when no node is feasible.
        """
        classes = self.classes
        assert classes is not None
        ssn = self.ssn
        req = task.init_resreq
        part = classes.partition(plan)
        signature = (plan.token, request_key(req))
        view = self.answers.get(signature)
        if view is None:
            if len(self.answers) >= _MAX_SIGNATURES:
                self.answers.clear()
            view = self.answers[signature] = ClassAnswers()

        def ask(reps: list[NodeInfo]) -> list[tuple[bool, float] | None]:
            fitting = [rep for rep in reps if first_insufficient(req, rep) is None]
            passed = ssn.predicate_nodes(task, fitting) if fitting else []
            scores = ssn.node_scores(task, passed) if passed else {}
            return [(req.less_equal(rep.idle), scores[rep.name]) if rep.name in scores else None for rep in reps]

        view.update(part, classes.nodes, ask)
        best = view.best()
        if best is None:
            return None
        chosen = best[1]
        groups = [part.classes[key] for key in chosen]
        count = sum(len(members) for members in groups)
        rank = ssn.rng.randrange(count) if count > 1 else 0
        return classes.nodes[classes.nth(groups, rank)]

    def record_failure(self, job: JobInfo, task: TaskInfo, errors: FitErrors) -> None:
        job.nodes_fit_errors[task.uid] = errors
        self.roles_failed(job).add(task.role)

    # ------------------------------------------------------------------ one job visit

    def place_tasks(self, job: JobInfo, queue: QueueInfo, tasks: PriorityQueue[TaskInfo], stmt: Statement) -> bool:
        """Place tasks of ``job`` into ``stmt`` until it is ready.

        :returns: whether the statement is kept (the job is ready or
            pipelined); otherwise it has been discarded.
        """
        return self._place(job, queue, tasks, stmt, PredicateCache(self.cache_enabled))

    def _place(
        self,
        job: JobInfo,
        queue: QueueInfo,
        tasks: PriorityQueue[TaskInfo],
        stmt: Statement,
        cache: PredicateCache,
    ) -> bool:
        ssn = self.ssn
        nodes = self.nodes
        memo = self.memo
        while tasks:
            task = tasks.pop()
            if not ssn.allocatable(queue, task):
                log.debug("queue %s cannot take task %s now, skipping it", queue.name, task.key)
                continue
            failed = self.roles_failed(job)
            if task.role and task.role in failed:
                errors = FitErrors(total_nodes=len(nodes))
                errors.set_error(f"task {task.key} skipped: another task of role {task.role!r} fit no node")
                job.nodes_fit_errors[task.uid] = errors
                continue
            pre = ssn.pre_predicate(task)
            if not pre.ok:
                errors = FitErrors(total_nodes=len(nodes))
                reasons = pre.reasons or (pre.plugin or "pre-predicate failed",)
                for node in nodes:
                    errors.set_node_error(FitError(task.key, node.name, reasons))
                self.record_failure(job, task, errors)
                break
            nominated = task.pod.nominated_node_name if task.pod is not None else ""
            chosen: NodeInfo | FitErrors | None = None
            if not nominated and self.classes is not None:
                plan = ssn.node_class_plan(task)
                if plan is not None:
                    if plan.pointwise:
                        chosen = self.choose_remembered(task, plan)
                    if chosen is None:
                        chosen = _choose_by_class(ssn, task, self.classes, plan, explain=not cache.has_failures(task))
            if isinstance(chosen, FitErrors):
                self.record_failure(job, task, chosen)
                if job.need_continue_allocating(self.roles_failed(job)):
                    continue
                break
            if chosen is None:
                # The per-node path: also the one that explains a task that fits nowhere.
                errors = FitErrors(total_nodes=len(nodes))
                feasible: list[NodeInfo] = []
                if nominated:
                    nominee = ssn.nodes.get(nominated)
                    if nominee is not None and fits_future_idle(task, nominee):
                        feasible = cache.filter(ssn, task, [nominee], FitErrors(), resource_check=True)
                if not feasible:
                    feasible = cache.filter(ssn, task, nodes, errors, resource_check=True, memo=memo)
                if not feasible:
                    self.record_failure(job, task, errors)
                    if job.need_continue_allocating(self.roles_failed(job)):
                        continue
                    break
                chosen = _choose_node(ssn, task, feasible, memo)
                if chosen is None:
                    continue
            node = chosen
            try:
                if fits_idle(task, node):
                    stmt.allocate(task, node)
                elif fits_future_idle(task, node):
                    stmt.pipeline(task, node.name)
            except ResourceError as exc:
                log.error("placing task %s on node %s failed: %s", task.key, node.name, exc)
                continue
            if ssn.job_ready(job):
                break
        if ssn.job_ready(job) or ssn.job_pipelined(job):
            return True
        stmt.discard()
        return False


def _choose_node(ssn: Session, task: TaskInfo, feasible: list[NodeInfo], memo: FitMemo) -> NodeInfo | None:
    """The best feasible node: nodes where the task fits idle resources win over pipelining."""
    idle: list[NodeInfo] = []
    future: list[NodeInfo] = []
    _, fit_names, idle_names = memo.fitting(task.init_resreq)
    for node in feasible:
        name = node.name
        if name in idle_names:
            idle.append(node)
        elif name in fit_names:
            future.append(node)
    for group in (idle, future):
        if group:
            chosen = ssn.best_node(task, group)
            if chosen is not None:
                return chosen
    return None


def _choose_by_class(
    ssn: Session, task: TaskInfo, classes: NodeClasses, plan: NodeClassPlan, *, explain: bool
) -> NodeInfo | FitErrors | None:
    """The node :func:`_choose_node` would choose, checking and scoring one node per class.

    When no node is feasible: with ``explain``, why, node by node, as the
    per-node path would record it; else ``None`` (the caller then takes the
    per-node path).
    """
    req = task.init_resreq
    nodes = classes.nodes
    members_of: dict[str, list[int]] = {}
    fitting: list[NodeInfo] = []
    short: list[tuple[str, list[int]]] = []
    for members in classes.classes(plan).values():
        rep = nodes[members[0]]
        lacking = first_insufficient(req, rep)
        if lacking is None:
            fitting.append(rep)
            members_of[rep.name] = members
        elif explain:
            short.append((lacking, members))
    errors = FitErrors(total_nodes=len(nodes)) if explain else None
    passed = ssn.predicate_nodes(task, fitting, fit_errors=errors) if fitting else []
    group = [rep for rep in passed if req.less_equal(rep.idle)] or passed
    if not group:
        if errors is None:
            return None
        # Every node of a class fails as its representative did; give each node its reasons.
        failed = errors.nodes
        for rep in fitting:
            reasons = failed[rep.name].reasons
            errors.set_group_error(task.key, NodeNames(nodes, members_of[rep.name]), reasons)
        for lacking, members in short:
            errors.set_group_error(task.key, NodeNames(nodes, members), (insufficient(lacking),))
        return errors
    if len(group) == 1 and len(members_of[group[0].name]) == 1:
        return group[0]
    scores = ssn.node_scores(task, group)
    best_score = max(scores[rep.name] for rep in group)
    best = [members_of[rep.name] for rep in group if scores[rep.name] == best_score]
    count = sum(len(members) for members in best)
    rank = ssn.rng.randrange(count) if count > 1 else 0
    return nodes[classes.nth(best, rank)]


@attrs.frozen
class AllocateArguments:
    """The ``configurations`` arguments of ``allocate``."""

    predicate_error_cache: bool = argument(
        key="predicateErrorCacheEnable",
        default=True,
        doc="Within one turn of a job, a node on which a task of a role failed the predicates is not checked "
        "again for later tasks of the same role.",
    )
    node_classes: bool = argument(
        key="nodeClassesEnable",
        default=True,
        doc="volcanolib only. Check and score one node per class of alike nodes when every plugin that checks "
        "or scores nodes says how to group them; the decisions are the same either way. `false` checks every "
        "node. See [Write fast plugins](performance.md#4-node-classes).",
    )


class Allocate:
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
    Arguments: ClassVar[type[AllocateArguments]] = AllocateArguments

    def __init__(self, arguments: AllocateArguments | None = None) -> None:
        self.arguments = arguments if arguments is not None else AllocateArguments()

    def execute(self, ssn: Session) -> None:
        """Run the allocation over the session."""
        args = self.arguments
        run = _Run(ssn, args.predicate_error_cache, args.node_classes)
        queues: PriorityQueue[QueueInfo] = PriorityQueue(ssn.queue_key)
        jobs_by_queue: dict[str, PriorityQueue[JobInfo]] = {}
        auto_admit = "enqueue" not in ssn.enabled_actions
        for job in ssn.jobs.values():
            with ssn.guard(job):
                if job.is_pending():
                    if not auto_admit:
                        continue
                    job.pod_group.phase = PodGroupPhase.INQUEUE
                if not ssn.job_valid(job).ok:
                    continue
                queue = ssn.queues.get(job.queue)
                if queue is None:
                    continue
                pending = [t for t in job.tasks_in(TaskStatus.PENDING) if not t.best_effort]
                if not pending:
                    continue
                run.tasks[job.uid] = PriorityQueue(ssn.task_key, pending)
                jobs = jobs_by_queue.get(queue.name)
                if jobs is None:
                    jobs = jobs_by_queue[queue.name] = PriorityQueue(ssn.job_key)
                    queues.push(queue)
                jobs.push(job)

        while queues:
            queue = queues.pop()
            if queue_overused(ssn, queue, "leaving it out"):
                continue
            jobs = jobs_by_queue.get(queue.name)
            if not jobs:
                continue
            job = jobs.pop()
            tasks = run.tasks[job.uid]
            stmt = ssn.statement()
            with ssn.guard(job, stmt):
                kept = run.place_tasks(job, queue, tasks, stmt)
                if kept and ssn.job_ready(job):
                    stmt.commit()
                    if tasks:
                        jobs.push(job)
            queues.push(queue)
