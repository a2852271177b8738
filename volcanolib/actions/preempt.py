"""preempt: let starving jobs take resources from lower-priority work in their own queue.

Two phases per queue, in queue order: between jobs (a starving job evicts
tasks of other jobs of the same queue) and within a job (a pending task
evicts lower-priority running tasks of its own job). Evictions are tentative
until the preemptor's job is pipelined; the preemptor itself is only
pipelined (reserved) on the node, and is placed by ``allocate`` in a later
cycle once its victims are gone.
"""

from __future__ import annotations

import logging
from collections.abc import Callable, Iterable, Mapping, Sequence
from typing import TYPE_CHECKING, Any, ClassVar, Final

import attrs

from volcanolib.api.job import JobInfo
from volcanolib.api.node import NodeInfo
from volcanolib.api.queue import QueueInfo
from volcanolib.api.task import TaskInfo, TaskStatus
from volcanolib.errors import ResourceError
from volcanolib.framework.action import BaseAction
from volcanolib.framework.arguments import argument
from volcanolib.framework.placement import PredicateCache, node_classes_argument, predicate_error_cache_argument
from volcanolib.framework.queues import PriorityQueue, job_queues
from volcanolib.framework.status import Code
from volcanolib.framework.traits import Traits
from volcanolib.framework.victims import VictimOrder, make_room, validate_victims

if TYPE_CHECKING:
    from volcanolib.framework.session import Session
    from volcanolib.framework.statement import Statement

__all__ = ["Preempt", "PreemptArguments"]

log = logging.getLogger(__name__)

REASON: Final = "preempt"
_PRIORITY_OFFSET: Final = 2**31
# Bound or Running: the statuses a victim may have (Volcano's PreemptableStatus).
_RUNNING: Final = TaskStatus.RUNNING
_BOUND: Final = TaskStatus.BOUND

#: The tasks, of those given, that may be victims, in the given order.
TaskFilter = Callable[[Iterable[TaskInfo]], list[TaskInfo]]


@attrs.frozen
class PreemptArguments:
    """The ``configurations`` arguments of ``preempt``."""

    predicate_error_cache: bool = predicate_error_cache_argument(
        "During the action, a node on which a task of a job's role failed the predicates is not checked "
        "again for later tasks of the same role."
    )
    node_classes: bool = node_classes_argument(
        "Check and score one node per class of alike nodes when ordering the nodes a preemptor tries "
        "(not with topology-aware preemption)."
    )
    topology_aware: bool = argument(
        key="enableTopologyAwarePreemption",
        default=False,
        doc="Choose the node by dry-run victim selection, the Kubernetes way ([preempt](actions.md#preempt)).",
    )
    min_candidates_percentage: int = argument(
        key="minCandidateNodesPercentage",
        default=10,
        doc="Topology-aware: candidate nodes to collect, as a percentage of the feasible nodes.",
    )
    min_candidates_absolute: int = argument(
        key="minCandidateNodesAbsolute", default=1, doc="Topology-aware: at least this many candidate nodes."
    )
    max_candidates_absolute: int = argument(
        key="maxCandidateNodesAbsolute", default=100, doc="Topology-aware: at most this many candidate nodes."
    )
    worker_num: int = argument(
        key="topologyAwarePreemptWorkerNum",
        default=16,
        doc="Accepted for compatibility; candidates are evaluated one after another.",
    )


class Preempt(BaseAction[PreemptArguments]):
    """Evict lower-priority tasks of the same queue for starving jobs.

    Preemptor jobs are admitted, valid, in a known queue and starving
    (``job_starving``), and do not set a network topology; their pending
    tasks are the preemptors, in task order. Queues are served in queue order, and for each queue:

    * **between jobs**: starving jobs in job order; for each, one statement
      in which its tasks preempt one by one while the job is still
      starving. Candidates are Bound or Running, preemptable tasks of
      *other* jobs of the same queue (a best-effort preemptor only takes
      best-effort tasks). The statement is committed when the job is
      pipelined (``job_pipelined``), else discarded.
    * **within a job**: for each of the queue's starving jobs, its current
      pending tasks in order, each in its own statement, preempt Bound or
      Running preemptable tasks of the same job; the first task that cannot
      be placed discards its statement and ends the job's turn.

    A task does not preempt when its pod's ``preemptionPolicy`` is
    ``Never``, when its nominated node is gone, or still fits, or already
    has a lower-priority pod terminating because of preemption (unless the
    node is unresolvably unfit), or when a pre-predicate fails. Nodes are
    those passing the predicates, where a plain ``UNSCHEDULABLE`` failure
    counts as fixable by eviction; they are tried by descending score. On a
    node, victims are the intersection the plugins allow (``preemptable``);
    the node is skipped unless evicting them all would fit the task. Victims
    are evicted in victim order (the task or job that would be scheduled
    last goes first) into a statement of that node, until the queue may take
    the task (``allocatable``) and the task fits the node's future idle
    resources (the predicates are not asked again: a plain ``UNSCHEDULABLE``
    failure, such as a pod count held by terminating pods, does not keep the
    task off the node); then the task is pipelined there and
    the node's statement joins the job's. If it never fits, that node's
    evictions are undone and the next node is tried. A node where the task
    already fits gets it pipelined without evicting anything.

    With ``nodeClassesEnable`` (volcanolib's own), nodes with nothing to
    evict where the task does not fit as they are are passed over. With
    ``enableTopologyAwarePreemption`` the node is chosen the Kubernetes way:
    the evictions are dry-run on candidate nodes (how many is set by
    ``minCandidateNodesPercentage``, ``minCandidateNodesAbsolute`` and
    ``maxCandidateNodesAbsolute``: a percentage of the feasible nodes,
    bounded below and above, starting at an offset drawn from the session's
    seeded generator), the smallest victim set of each is kept (victims that
    are not needed are spared), then the node whose most important victim
    is least important wins, then the smallest sum of victim priorities,
    then the fewest victims, then the latest-created victims.

    Arguments: :class:`PreemptArguments`.
    """

    name: ClassVar[str] = "preempt"
    Arguments = PreemptArguments
    #: Reads no clock: a replay may skip a session that would see the same cluster (docs/incremental.md).
    traits: ClassVar[Traits] = Traits(clock_free=True)

    def execute(self, ssn: Session) -> None:
        """Run both preemption phases, queue by queue."""
        args = self.arguments
        run = _PreemptRun(
            ssn,
            cache=PredicateCache(args.predicate_error_cache),
            classes=args.node_classes,
            topology_aware=args.topology_aware,
            min_percentage=args.min_candidates_percentage,
            min_absolute=args.min_candidates_absolute,
            max_absolute=args.max_candidates_absolute,
        )
        run.execute()


class _PreemptRun:
    """One execution of the preempt action."""

    def __init__(
        self,
        ssn: Session,
        *,
        cache: PredicateCache,
        classes: bool,
        topology_aware: bool,
        min_percentage: int,
        min_absolute: int,
        max_absolute: int,
    ) -> None:
        self.ssn = ssn
        self.cache = cache
        #: Nodes grouped into classes the plugins treat alike, when they say how.
        self.node_classes = classes and not topology_aware
        #: Nodes holding a running or bound task that may be preempted.
        self.victim_nodes = ssn.placement.victim_nodes(_possible_victim)
        self.topology_aware = topology_aware
        self.min_percentage = min_percentage
        self.min_absolute = min_absolute
        self.max_absolute = max_absolute

    # ------------------------------------------------------------------ the two phases

    def execute(self) -> None:
        ssn = self.ssn
        under_request: dict[str, list[JobInfo]] = {}

        def preemptors(job: JobInfo) -> Iterable[TaskInfo] | None:
            if not ssn.job_schedulable(job) or not ssn.job_starving(job):
                return None
            if job.pod_group.network_topology is not None:
                return None  # as Volcano: jobs with a network topology do not preempt (volcano-sh/volcano#4374)
            under_request.setdefault(job.queue, []).append(job)
            return job.tasks_in(TaskStatus.PENDING)

        order = job_queues(ssn, preemptors)
        queues, starving = order.queues, order.jobs
        while queues:
            queue = queues.pop()
            jobs = starving[queue.name]
            while jobs:
                self._between_jobs(jobs.pop(), order.tasks)
            for job in under_request[queue.name]:
                self._within_job(job)

    def _between_jobs(self, job: JobInfo, preemptors: Mapping[str, PriorityQueue[TaskInfo]]) -> None:
        ssn = self.ssn
        tasks = preemptors[job.uid]
        stmt = ssn.statement()
        with ssn.guard(job, stmt):
            while ssn.job_starving(job) and tasks:
                preemptor = tasks.pop()
                self.preempt(stmt, preemptor, _victim_filter(ssn, preemptor, same_job=False))
            if ssn.job_pipelined(job):
                stmt.commit()
            else:
                stmt.discard()

    def _within_job(self, job: JobInfo) -> None:
        ssn = self.ssn
        tasks = PriorityQueue(ssn.task_key, job.tasks_in(TaskStatus.PENDING))
        while tasks:
            preemptor = tasks.pop()
            stmt = ssn.statement()
            done = False
            with ssn.guard(job, stmt):
                if self.preempt(stmt, preemptor, _victim_filter(ssn, preemptor, same_job=True)):
                    stmt.commit()
                    done = True
                else:
                    stmt.discard()
            if not done:
                return

    # ------------------------------------------------------------------ one preemptor

    def preempt(self, stmt: Statement, preemptor: TaskInfo, victim_filter: TaskFilter) -> bool:
        """Try to make room for ``preemptor``; on success it is pipelined in ``stmt``."""
        ssn = self.ssn
        if not self._eligible(preemptor):
            return False
        if not ssn.pre_predicate(preemptor).ok:
            return False
        job = ssn.jobs.get(preemptor.job)
        if job is None:
            return False
        queue = ssn.queues[job.queue]
        placement = ssn.placement
        if self.topology_aware:
            nodes = placement.feasible(preemptor, cache=self.cache, for_preempt=True)
            if not nodes:
                return False
            return self._topology_aware(stmt, queue, preemptor, victim_filter, nodes)
        order = placement.preemption_order(preemptor, self.cache, self.victim_nodes, node_classes=self.node_classes)
        return self._normal(stmt, queue, preemptor, victim_filter, order)

    def _eligible(self, preemptor: TaskInfo) -> bool:
        pod = preemptor.pod
        if pod is None:
            return True
        if pod.preemption_policy == "Never":
            return False
        if not pod.nominated_node_name:
            return True
        node = self.ssn.nodes.get(pod.nominated_node_name)
        if node is None:
            return False
        status = self.ssn.predicate(preemptor, node)
        if status.ok or status.code is Code.ERROR:
            return False
        if status.code is Code.UNSCHEDULABLE_AND_UNRESOLVABLE:
            return True
        priority = preemptor.pod_priority
        return not any(t.pod_priority < priority and _terminating_by_preemption(t) for t in list(node.tasks.values()))

    def _fits(self, queue: QueueInfo, preemptor: TaskInfo, node: NodeInfo) -> bool:
        ssn = self.ssn
        return (
            ssn.allocatable(queue, preemptor)
            and node.fits_future_idle(preemptor.init_resreq)
            and ssn.predicate(preemptor, node).ok
        )

    def _victims(self, preemptor: TaskInfo, node: NodeInfo, victim_filter: TaskFilter) -> list[TaskInfo] | None:
        """The victims the plugins allow on ``node``, or ``None`` when evicting them all would not do."""
        candidates = victim_filter(node.tasks.values())
        victims = self.ssn.preemptable(preemptor, candidates) or []
        if not validate_victims(preemptor, node, victims):
            return None
        return victims

    def _normal(
        self,
        stmt: Statement,
        queue: QueueInfo,
        preemptor: TaskInfo,
        victim_filter: TaskFilter,
        nodes: Iterable[NodeInfo],
    ) -> bool:
        """Evict on the first node, in the given order, where that makes ``preemptor`` fit."""
        ssn = self.ssn
        for node in nodes:
            victims = self._victims(preemptor, node, victim_filter)
            if victims is None:
                continue
            ssn.note_preemption_attempt(len(victims))
            order = VictimOrder(ssn, preemptor).queue(victims)

            # As Volcano v1.14.1: the predicates chose the node; after evictions only the queue and resources count.
            def fits(node: NodeInfo = node) -> bool:
                return ssn.allocatable(queue, preemptor) and node.fits_future_idle(preemptor.init_resreq)

            if make_room(ssn, stmt, preemptor, node, order, fits, REASON, check_first=True):
                return True
        return False

    # ------------------------------------------------------------------ topology-aware variant

    def _topology_aware(
        self,
        stmt: Statement,
        queue: QueueInfo,
        preemptor: TaskInfo,
        victim_filter: TaskFilter,
        nodes: Sequence[NodeInfo],
    ) -> bool:
        """Dry-run the evictions on candidate nodes, then evict on the best one and pipeline ``preemptor`` there.

        A node is a candidate when some set of at least one victim makes the
        preemptor pass there (:meth:`_select_victims`); when no node is one,
        nothing is evicted and the preemptor is not pipelined.
        """
        ssn = self.ssn
        total = len(nodes)
        wanted = self._candidate_count(total)
        offset = ssn.rng.randrange(total)
        candidates: list[tuple[NodeInfo, list[TaskInfo]]] = []
        for i in range(total):
            node = nodes[(offset + i) % total]
            victims = self._select_victims(queue, preemptor, node, victim_filter)
            if victims:
                candidates.append((node, victims))
                if len(candidates) >= wanted:
                    break
        if not candidates:
            return False
        node, victims = min(candidates, key=_candidate_rank)
        ssn.note_preemption_attempt(len(victims))
        for victim in victims:
            stmt.evict(victim, REASON)
        try:
            stmt.pipeline(preemptor, node.name)
        except ResourceError as exc:
            log.error("pipelining task %s on node %s failed: %s", preemptor.key, node.name, exc)
        return True

    def _candidate_count(self, total: int) -> int:
        count = total * self.min_percentage // 100
        count = max(count, self.min_absolute)
        count = min(count, self.max_absolute)
        return max(1, min(count, total))

    def _select_victims(
        self, queue: QueueInfo, preemptor: TaskInfo, node: NodeInfo, victim_filter: TaskFilter
    ) -> list[TaskInfo] | None:
        """The smallest victim set that makes ``preemptor`` fit ``node``, found by dry runs.

        Victims are removed in victim order until the task fits (:meth:`_trial`:
        the queue, the future idle resources and every predicate, against the
        pods that stay); then, in the same order, each is spared if the task
        still fits without evicting it, so the set returned fits. ``None`` when
        the plugins allow no victim on the node, or when the task does not fit
        even with every victim gone (a pod that stays still rejects it, say);
        an empty list when it fits without evicting anything.
        """
        allowed = self._victims(preemptor, node, victim_filter)
        if not allowed:
            return None
        order = VictimOrder(self.ssn, preemptor).queue(allowed)
        potential: list[TaskInfo] = []
        fits = False
        while order and not fits:
            potential.append(order.pop())
            fits = self._trial(queue, preemptor, node, potential)
        if not fits:
            return None
        victims: list[TaskInfo] = []
        spared: set[int] = set()
        for task in potential:
            spared.add(id(task))
            rest = [t for t in potential if id(t) not in spared]
            if not self._trial(queue, preemptor, node, rest):
                spared.discard(id(task))
                victims.append(task)
        return victims

    def _trial(self, queue: QueueInfo, preemptor: TaskInfo, node: NodeInfo, evicted: Sequence[TaskInfo]) -> bool:
        """Whether ``preemptor`` would fit ``node`` with ``evicted`` gone; nothing stays changed.

        The evictions are tentative: the plugins see them through the
        deallocate events (the predicates drop the pods from the node, so
        inter-pod anti-affinity and host ports are checked against the pods
        that stay, as Volcano's dry run removes them from its node copy), and
        every predicate runs again. Rolling back to the savepoint restores
        each task's status and its record of the last undone decision, as a
        dry run on copies would leave them.
        """
        trial = self.ssn.statement()
        start = trial.savepoint()
        try:
            for task in evicted:
                trial.evict(task, REASON)
            return self._fits(queue, preemptor, node)
        finally:
            trial.rollback(start)


# ---------------------------------------------------------------------------- filters and ranking


def _victim_filter(ssn: Session, preemptor: TaskInfo, *, same_job: bool) -> TaskFilter:
    """Bound or Running preemptable tasks (best-effort ones only, for a best-effort preemptor).

    With ``same_job``, tasks of the preemptor's job; else tasks of other jobs of its queue.
    """
    jobs = ssn.jobs
    own = jobs.get(preemptor.job)
    queue = own.queue if own is not None else None
    preemptor_job = preemptor.job
    best_effort = preemptor.best_effort

    def select(tasks: Iterable[TaskInfo]) -> list[TaskInfo]:
        # One loop over a node's tasks, without a call per task: it runs for every node tried.
        out: list[TaskInfo] = []
        for task in tasks:
            status = task.status
            if status is not _RUNNING and status is not _BOUND:
                continue
            if best_effort and not task.best_effort:
                continue
            if not task.preemptable:
                continue
            if same_job:
                if task.job != preemptor_job:
                    continue
            elif task.job == preemptor_job:
                continue
            else:
                owner = jobs.get(task.job)
                if owner is None or owner.queue != queue:
                    continue
            out.append(task)
        return out

    return select


def _terminating_by_preemption(task: TaskInfo) -> bool:
    """Whether the pod is being deleted because the scheduler preempted it."""
    pod = task.pod
    manifest: Mapping[str, Any] | None = pod.manifest if pod is not None else None
    if not manifest:
        return False
    metadata = manifest.get("metadata") or {}
    if not metadata.get("deletionTimestamp"):
        return False
    for condition in (manifest.get("status") or {}).get("conditions") or ():
        if condition.get("type") == "DisruptionTarget":
            return bool(condition.get("status") == "True" and condition.get("reason") == "PreemptionByScheduler")
    return False


def _candidate_rank(candidate: tuple[NodeInfo, list[TaskInfo]]) -> tuple[int, int, int, float]:
    """Smaller is better: least important top victim, smallest priority sum, fewest victims, latest start."""
    victims = candidate[1]
    priorities = [v.pod_priority for v in victims]
    top = max(priorities)
    earliest = min(v.creation_timestamp for v, p in zip(victims, priorities, strict=True) if p == top)
    return (top, sum(p + _PRIORITY_OFFSET for p in priorities), len(victims), -earliest)


def _possible_victim(task: TaskInfo) -> bool:
    return (task.status is _RUNNING or task.status is _BOUND) and task.preemptable
