"""gangpreempt and gangreclaim: make room for a starving gang by evicting whole bundles of victims.

The task-by-task ``preempt`` and ``reclaim`` pick victims node by node and
can break ten gangs by one pod each. These actions, Volcano's gang-aware
eviction, decide for the whole preemptor job at once: candidate victims are
grouped per victim job into *bundles*, cheap ones first, and the shortest
prefix of bundles whose resources (with the domain's free resources) cover
the job's pending tasks, and after whose eviction all those tasks can be
placed, is evicted.

Bundles (per victim job, from its candidate tasks in the domain, lowest task
priority then uid first):

* **safe**: tasks the job can lose and stay gang-ready: while its ready
  count stays above ``minMember`` and, when ``minMember`` covers every
  role's ``minTaskMember``, the task's role stays at or above its minimum;
  every candidate of a job that is already below ``minMember`` is safe;
* **whole**: the other candidates; evicting any of them breaks the gang, so
  the bundle is kept only when every one of its tasks may be evicted.

.. versionadded:: 0.2
"""

from __future__ import annotations

import functools
import logging
import math
from collections.abc import Callable, Hashable, Iterable, Sequence
from typing import TYPE_CHECKING, Any, ClassVar, Final

import attrs

from volcanolib.api.job import JobInfo
from volcanolib.api.node import NodeInfo
from volcanolib.api.resource import PODS, Resource
from volcanolib.api.task import PREEMPTABLE_KEY, READY_STATUSES, TaskInfo, TaskStatus, in_statuses
from volcanolib.errors import ResourceError
from volcanolib.framework.action import BaseAction
from volcanolib.framework.arguments import argument
from volcanolib.framework.queues import job_queues
from volcanolib.framework.victims import EvictionContext, EvictionKind, Reversed

if TYPE_CHECKING:
    from volcanolib.api.queue import QueueInfo
    from volcanolib.framework.session import Session
    from volcanolib.framework.statement import Statement

__all__ = [
    "Bundle",
    "GangEvictArguments",
    "GangPreempt",
    "GangReclaim",
    "bundle_roi",
    "job_bundles",
    "prune_victims",
    "sort_bundles",
]

log = logging.getLogger(__name__)

#: The number of domains searched when ``maxDomains`` is not positive.
DEFAULT_MAX_DOMAINS: Final = 8
#: The domain that stands for the whole cluster.
CLUSTER: Final = ""
_RUNNING: Final = TaskStatus.RUNNING
_BOUND: Final = TaskStatus.BOUND


# ---------------------------------------------------------------------------- bundles


@attrs.define(eq=False)
class Bundle:
    """Candidate victims of one job that are evicted together.

    :ivar whole: whether evicting them breaks the job's gang (a *whole*
        bundle), rather than taking its surplus (a *safe* one).
    :ivar local: what the tasks request.
    :ivar global_cost: what the whole job requests, for a whole bundle;
        nothing for a safe one.
    """

    whole: bool
    job: JobInfo
    tasks: list[TaskInfo]
    local: Resource
    global_cost: Resource


def _requests(tasks: Iterable[TaskInfo]) -> Resource:
    total = Resource()
    for task in tasks:
        total.add(task.resreq)
    return total


def job_bundles(job: JobInfo, candidates: Sequence[TaskInfo]) -> list[Bundle]:
    """Split one job's candidate victims into its safe bundle and its whole bundle (either may be missing).

    :param job: the victim job.
    :param candidates: its tasks that may be evicted, on the searched nodes.
    :returns: the safe bundle first, then the whole one; each non-empty.
    """
    if not candidates:
        return []
    tasks = sorted(candidates, key=lambda t: (t.priority, t.uid))
    # Ready as Volcano counts it: placed or succeeded, plus pending best-effort tasks.
    surplus = job.ready_task_num() + job.pending_best_effort_task_num() - job.min_available
    if surplus < 0:
        # Already broken: nothing more to lose.
        return [Bundle(False, job, tasks, _requests(tasks), Resource())]
    enforce_roles = bool(job.task_min_available) and job.min_available >= job.task_min_available_total
    role_surplus: dict[str, int] = {}
    if enforce_roles:
        ready: dict[str, int] = {}
        for task in job.tasks.values():
            counted = in_statuses(task.status, READY_STATUSES) or (
                task.status is TaskStatus.PENDING and task.init_resreq.is_empty()
            )
            if counted:
                ready[task.role] = ready.get(task.role, 0) + 1
        role_surplus = {role: ready.get(role, 0) - minimum for role, minimum in job.task_min_available.items()}
    safe: list[TaskInfo] = []
    whole: list[TaskInfo] = []
    for task in tasks:
        has_minimum = enforce_roles and task.role in role_surplus
        role_safe = role_surplus[task.role] > 0 if has_minimum else True
        if surplus > 0 and role_safe:
            safe.append(task)
            surplus -= 1
            if has_minimum:
                role_surplus[task.role] -= 1
        else:
            whole.append(task)
    bundles = []
    if safe:
        bundles.append(Bundle(False, job, safe, _requests(safe), Resource()))
    if whole:
        # What the whole job requests, all its tasks whatever their status (Volcano's global cost).
        bundles.append(Bundle(True, job, whole, _requests(whole), job.total_request.clone()))
    return bundles


def _needed(need: Resource) -> list[tuple[str, float]]:
    """The dimensions ``need`` asks for (``pods`` aside), with the amounts."""
    return [(name, amount) for name in need.names() if name != PODS and (amount := need.get(name)) > 0]


def _score(res: Resource, needed: list[tuple[str, float]], *, cap: bool) -> float:
    """Sum over the needed dimensions of ``res / need``, each capped at 1 with ``cap``."""
    score = 0.0
    for name, wanted in needed:
        have = res.get(name)
        if cap and have > wanted:
            have = wanted
        score += have / wanted
    return score


def bundle_roi(bundle: Bundle, need: Resource, needed: list[tuple[str, float]] | None = None) -> float:
    """What the bundle frees towards ``need`` per unit of what it destroys; infinite for a safe bundle.

    Both sides are sums over the dimensions ``need`` asks for (``pods``
    aside) of the resource divided by the need; the freed side is capped at
    the need.

    :param needed: ``need``'s dimensions, when already listed for many bundles.
    """
    if not bundle.whole:
        return math.inf  # nothing destroyed
    dims = _needed(need) if needed is None else needed
    cost = _score(bundle.global_cost, dims, cap=False)
    if cost == 0:
        return math.inf
    return _score(bundle.local, dims, cap=True) / cost


#: Orders two bundles of one kind: negative when the left one gives up first, 0 to leave it to the ROI.
Between = Callable[[Bundle, Bundle], int]
#: The key form of a :data:`Between`: smaller gives up first, equal keys leave it to the ROI.
BetweenKey = Callable[[Bundle], Any]


def _stable(left: Bundle, right: Bundle) -> int:
    lk = (left.job.uid, left.tasks[0].uid if left.tasks else "", len(left.tasks))
    rk = (right.job.uid, right.tasks[0].uid if right.tasks else "", len(right.tasks))
    return -1 if lk < rk else (1 if lk > rk else 0)


def sort_bundles(
    bundles: Sequence[Bundle],
    need: Resource,
    between: Between,
    key: BetweenKey | None = None,
    roi: dict[int, tuple[Bundle, float]] | None = None,
) -> list[Bundle]:
    """The bundles in eviction order: safe before whole, then ``between``, then higher ROI, then job and task uid.

    :param between: orders bundles of one kind (negative: the left one goes first; 0: no opinion).
    :param key: the key form of ``between``, when there is one: the bundles are then sorted by one
        composite key, which gives the same order with fewer calls.
    :param roi: bundles' ROI remembered by identity, shared between sorts of the same bundles.
    """
    memo = roi if roi is not None else {}
    needed = _needed(need)

    def roi_of(bundle: Bundle) -> float:
        known = memo.get(id(bundle))
        if known is not None:
            return known[1]
        value = bundle_roi(bundle, need, needed)
        memo[id(bundle)] = (bundle, value)  # the bundle is kept so that its id is not reused
        return value

    if key is not None:

        def composite(bundle: Bundle) -> tuple[Any, ...]:
            first = bundle.tasks[0].uid if bundle.tasks else ""
            return (bundle.whole, key(bundle), -roi_of(bundle), bundle.job.uid, first, len(bundle.tasks))

        return sorted(bundles, key=composite)

    def compare(left: Bundle, right: Bundle) -> int:
        if left.whole != right.whole:
            return 1 if left.whole else -1
        decided = between(left, right)
        if decided:
            return decided
        lr, rr = roi_of(left), roi_of(right)
        if lr != rr:
            return -1 if lr > rr else 1
        return _stable(left, right)

    return sorted(bundles, key=functools.cmp_to_key(compare))


def _allowed(bundles: list[Bundle], allowed: Sequence[TaskInfo], candidates: Sequence[TaskInfo]) -> list[Bundle]:
    """Whole bundles all of whose tasks are allowed; safe bundles cut down to their allowed tasks.

    :param candidates: the bundles' tasks, flattened.
    """
    keep = set(map(id, allowed))
    if keep.issuperset(map(id, candidates)):
        return bundles  # every candidate allowed
    out: list[Bundle] = []
    for bundle in bundles:
        approved = [t for t in bundle.tasks if id(t) in keep]
        if len(approved) == len(bundle.tasks):
            out.append(bundle)  # kept as it is
        elif approved and not bundle.whole:
            out.append(attrs.evolve(bundle, tasks=approved, local=_requests(approved)))
    return out


def _preemptable_job(job: JobInfo) -> bool:
    """Whether a victim job may lose tasks: its PodGroup's ``volcano.sh/preemptable`` when set, else yes."""
    pod_group = job.pod_group
    if PREEMPTABLE_KEY in pod_group.annotations or PREEMPTABLE_KEY in pod_group.labels:
        return job.preemptable
    return True


def _more_disruptive_first(task: TaskInfo) -> tuple[float, float, float, Reversed]:
    res = task.resreq
    return (-res.milli_cpu, -res.memory, -sum(res.scalars.values()), Reversed(task.uid))


def _first_fit(pending: Sequence[TaskInfo], viable: dict[str, list[NodeInfo]], available: dict[str, Resource]) -> bool:
    """Whether every pending task, in order, fits the first of its viable nodes with room left."""
    left = {name: res.clone() for name, res in available.items()}
    for task in pending:
        req = task.init_resreq
        for node in viable[task.uid]:
            room = left.get(node.name)
            if room is not None and req.less_equal(room):
                room.sub_unchecked(req)
                break
        else:
            return False
    return True


def prune_victims(
    ssn: Session, pending: Sequence[TaskInfo], nodes: Sequence[NodeInfo], bundles: Sequence[Bundle]
) -> list[TaskInfo]:
    """The victims of ``bundles`` without those the pending tasks do not need, in their order.

    The most protected victims are tried first (the bundles in reverse
    order; a whole bundle as one unit, a safe bundle task by task, the task
    freeing the most cpu, then memory, then other resources first): a unit
    is dropped when every pending task still fits, first fit in task order,
    on a node that passes its predicates (a plain ``UNSCHEDULABLE`` counts
    as passing), counting each node's future idle resources plus what the
    victims kept on it free. All the victims are returned when a task fails
    its pre-predicates or has no such node, or when there is one unit only.
    """
    victims = [t for b in bundles for t in b.tasks]
    if not pending or not nodes or not victims:
        return victims
    placement = ssn.placement
    domain = None if nodes is ssn.node_list else nodes
    viable: dict[str, list[NodeInfo]] = {}
    for task in pending:
        if not ssn.pre_predicate(task).ok:
            return victims
        passing = placement.feasible(task, domain, for_preempt=True)
        if not passing:
            return victims
        viable[task.uid] = passing
    units: list[list[TaskInfo]] = []
    for bundle in reversed(bundles):
        if bundle.whole:
            units.append(list(bundle.tasks))
        else:
            units.extend([t] for t in sorted(bundle.tasks, key=_more_disruptive_first))
    if len(units) <= 1:
        return victims
    available = {node.name: node.future_idle() for node in nodes}
    for victim in victims:
        available.setdefault(victim.node_name, Resource()).add(victim.resreq)
    dropped: set[int] = set()
    for unit in units:
        without = {name: res.clone() for name, res in available.items()}
        for task in unit:
            room = without.get(task.node_name)
            if room is not None:
                room.sub_unchecked(task.resreq)
        if not _first_fit(pending, viable, without):
            continue
        available = without
        dropped.update(id(t) for t in unit)
    return [t for t in victims if id(t) not in dropped]


# ---------------------------------------------------------------------------- the actions


@attrs.frozen
class GangEvictArguments:
    """The ``configurations`` arguments of ``gangpreempt`` and ``gangreclaim``."""

    max_domains: int = argument(
        key="maxDomains",
        default=DEFAULT_MAX_DOMAINS,
        doc="How many topology domains to search per starving job (not positive: 8). Without HyperNodes the "
        "whole cluster is the one domain.",
    )
    allow_whole_bundle: bool = argument(
        key="allowWholeBundle",
        default=True,
        doc="Whether victims may include bundles that break a victim gang; `false`: only surplus tasks.",
    )
    prune_victims: bool = argument(
        key="pruneVictims",
        default=False,
        doc="volcanolib only. First try without the victims the pending tasks do not need (Volcano's victim "
        "pruning, proposed for volcano-sh/volcano#5994); `false`: every victim of the chosen bundles goes, as "
        "in Volcano's release.",
    )


class _GangEvict(BaseAction[GangEvictArguments]):
    """What gangpreempt and gangreclaim share; subclasses say who may be evicted and in which order."""

    Arguments = GangEvictArguments
    kind: ClassVar[EvictionKind]
    reason: ClassVar[str]
    #: Keep each victim job's bundles between starving jobs while its tasks do not change (the same
    #: decisions as building them afresh for every starving job; a test compares both).
    remember_bundles: bool = True
    _victims: _VictimBundles

    def execute(self, ssn: Session) -> None:
        """Serve the starving jobs queue by queue, one statement per job, kept when the job is pipelined."""

        def pending(job: JobInfo) -> Iterable[TaskInfo] | None:
            if not ssn.job_schedulable(job) or not ssn.job_starving(job):
                return None
            return [t for t in job.tasks_in(TaskStatus.PENDING) if not t.resreq.is_empty()]

        order = job_queues(ssn, pending)
        self._victims = _VictimBundles(self, ssn)
        queues = order.queues
        while queues:
            queue = queues.pop()
            if not self._queue_takes_part(ssn, queue):
                continue
            jobs = order.jobs[queue.name]
            while jobs:
                job = jobs.pop()
                tasks = order.tasks[job.uid]
                preemptors = [tasks.pop() for _ in range(len(tasks))]
                stmt = ssn.statement()
                with ssn.guard(job, stmt):
                    if preemptors and self._allowed_to_evict(ssn, queue, preemptors):
                        self._evict_for(ssn, stmt, queue, job, preemptors)
                    if ssn.job_pipelined(job):
                        stmt.commit()
                    else:
                        stmt.discard()
                self._victims.changed(job.uid)

    # Hooks for the two actions -------------------------------------------------------

    def _queue_takes_part(self, ssn: Session, queue: QueueInfo) -> bool:
        return True

    def _allowed_to_evict(self, ssn: Session, queue: QueueInfo, preemptors: list[TaskInfo]) -> bool:
        return True

    def _candidate(self, ssn: Session, preemptor_job: JobInfo, task: TaskInfo) -> bool:
        raise NotImplementedError

    def _candidates_key(self, preemptor_job: JobInfo) -> Hashable:
        """What of the preemptor job :meth:`_candidate` depends on: jobs with equal keys have the same candidates."""
        raise NotImplementedError

    def _between(self, ssn: Session, preemptor_job: JobInfo, preemptor: TaskInfo) -> tuple[Between, BetweenKey | None]:
        raise NotImplementedError

    # The search ------------------------------------------------------------------------

    def _evict_for(
        self, ssn: Session, stmt: Statement, queue: QueueInfo, job: JobInfo, preemptors: list[TaskInfo]
    ) -> bool:
        """Evict the shortest prefix of bundles after which every preemptor is pipelined; whether one was found."""
        need = _requests_init(preemptors)
        for domain, nodes in self._domains(ssn):
            if not ssn.job_starving(job):
                break
            bundles = self._bundles(ssn, job, preemptors, need, domain, nodes)
            if not bundles:
                continue
            free = self._victims.free(nodes)
            victims: list[TaskInfo] = []
            freed = Resource()
            for count, bundle in enumerate(bundles, 1):
                victims.extend(bundle.tasks)
                freed.add(bundle.local)
                if not need.less_equal(free.clone().add(freed)):
                    continue
                if self.arguments.prune_victims:
                    pruned = prune_victims(ssn, preemptors, nodes, bundles[:count])
                    if len(pruned) < len(victims) and self._place(ssn, stmt, queue, job, preemptors, nodes, pruned):
                        return True
                if self._place(ssn, stmt, queue, job, preemptors, nodes, victims):
                    return True
        return False

    def _domains(self, ssn: Session) -> list[tuple[str, Sequence[NodeInfo]]]:
        """The domains to search, best first, at most ``maxDomains``: the whole cluster here."""
        return [(CLUSTER, ssn.node_list)]

    def _bundles(
        self,
        ssn: Session,
        job: JobInfo,
        preemptors: list[TaskInfo],
        need: Resource,
        domain: str,
        nodes: Sequence[NodeInfo],
    ) -> list[Bundle]:
        """The domain's bundles the plugins allow, in eviction order."""
        bundles = self._victims.bundles(job, nodes)
        if not bundles:
            return []
        between, key = self._between(ssn, job, preemptors[0])
        roi = self._victims.roi_memo(need)
        bundles = sort_bundles(bundles, need, between, key, roi)
        context = EvictionContext(self.kind, job, domain)
        flat = [t for b in bundles for t in b.tasks]
        allowed = ssn.unified_evictable(context, flat)
        if not allowed:
            return []
        kept = _allowed(bundles, allowed, flat)
        if len(kept) != len(bundles) or any(a is not b for a, b in zip(kept, bundles, strict=True)):
            # Sorted again, as some bundles changed (sorting the same bundles again gives the same order).
            bundles = sort_bundles(kept, need, between, key, roi)
        if not self.arguments.allow_whole_bundle:
            bundles = [b for b in bundles if not b.whole]
        return bundles

    def _place(
        self,
        ssn: Session,
        stmt: Statement,
        queue: QueueInfo,
        job: JobInfo,
        preemptors: list[TaskInfo],
        nodes: Sequence[NodeInfo],
        victims: list[TaskInfo],
    ) -> bool:
        """Evict ``victims`` and pipeline every preemptor as allocate would; undone unless the job is then pipelined."""
        start = stmt.savepoint()
        try:
            for victim in victims:
                stmt.evict(victim, self.reason)
            placement = ssn.placement
            domain = None if nodes is ssn.node_list else nodes
            for task in preemptors:
                if not ssn.allocatable(queue, task) or not ssn.pre_predicate(task).ok:
                    break
                feasible = placement.feasible(task, domain, resource_check=True, for_preempt=True)
                node = placement.choose_among(task, feasible) if feasible else None
                if node is None:
                    break
                stmt.pipeline(task, node.name)
            else:
                if ssn.job_pipelined(job):
                    return True
        except ResourceError as exc:
            log.error("%s for job %s failed: %s", self.reason, job.uid, exc)
        stmt.rollback(start)
        return False


def _requests_init(tasks: Iterable[TaskInfo]) -> Resource:
    total = Resource()
    for task in tasks:
        total.add(task.init_resreq)
    return total


class _VictimBundles:
    """Every victim job's bundles for the starving jobs of one action run.

    Built afresh for each starving job (a scan of the domain's nodes) unless
    ``remember_bundles``: then the bundles are kept per candidate filter
    (:meth:`_GangEvict._candidates_key`) and rebuilt only for the jobs that
    changed since, read from the session's node log (the jobs of the tasks
    on every node whose tasks changed) and from the starving jobs served.
    """

    def __init__(self, action: _GangEvict, ssn: Session) -> None:
        self._action = action
        self._ssn = ssn
        self._log_seen = len(ssn.node_log)
        #: Jobs that changed, in order; a filter's entry remembers how far it has read.
        self._changed: list[str] = []
        self._by_filter: dict[Hashable, tuple[dict[str, list[Bundle]], int]] = {}
        self._roi: dict[Hashable, dict[int, tuple[Bundle, float]]] = {}
        self._free: Resource | None = None
        self._free_parts: dict[str, Resource] = {}
        self._free_seen = 0

    def roi_memo(self, need: Resource) -> dict[int, tuple[Bundle, float]]:
        """Bundles' ROI towards ``need``, remembered by identity (bundles do not change once made)."""
        if not self._action.remember_bundles:
            return {}
        return self._roi.setdefault(need.key(), {})

    def free(self, nodes: Sequence[NodeInfo]) -> Resource:
        """The idle and releasing resources of ``nodes`` together (a copy)."""
        ssn = self._ssn
        if not self._action.remember_bundles or nodes is not ssn.node_list:
            total = Resource()
            for node in nodes:
                total.add(node.idle).add(node.releasing)
            return total
        parts = self._free_parts
        log = ssn.node_log
        if self._free is None:
            self._free = Resource()
            for node in nodes:
                part = parts[node.name] = node.idle.clone().add(node.releasing)
                self._free.add(part)
        else:
            # Only the nodes whose tasks changed since (the sums are of whole numbers, so exact).
            for name in dict.fromkeys(log[self._free_seen :]):
                old = parts.get(name)
                changed = ssn.nodes.get(name)
                if old is None or changed is None:
                    continue
                part = parts[name] = changed.idle.clone().add(changed.releasing)
                self._free.sub_unchecked(old).add(part)
        self._free_seen = len(log)
        return self._free.clone()

    def changed(self, job_uid: str) -> None:
        """Note that a job's tasks may have changed (a starving job that was served)."""
        self._changed.append(job_uid)

    def _read_log(self) -> None:
        ssn = self._ssn
        log = ssn.node_log
        nodes = ssn.nodes
        changed = self._changed
        for name in log[self._log_seen :]:
            node = nodes.get(name)
            if node is not None:
                changed.extend(task.job for task in node.tasks.values())
        self._log_seen = len(log)

    def _scan(self, job: JobInfo, nodes: Sequence[NodeInfo]) -> dict[str, list[TaskInfo]]:
        candidate = self._action._candidate
        ssn = self._ssn
        by_job: dict[str, list[TaskInfo]] = {}
        for node in nodes:
            for task in node.tasks.values():
                if candidate(ssn, job, task):
                    by_job.setdefault(task.job, []).append(task)
        return by_job

    def bundles(self, job: JobInfo, nodes: Sequence[NodeInfo]) -> list[Bundle]:
        """The bundles of every job with candidates on ``nodes`` for the starving ``job``, in no set order."""
        ssn = self._ssn
        jobs = ssn.jobs
        if not self._action.remember_bundles or nodes is not ssn.node_list:
            return [b for uid, tasks in self._scan(job, nodes).items() for b in job_bundles(jobs[uid], tasks)]
        self._read_log()
        key = self._action._candidates_key(job)
        entry = self._by_filter.get(key)
        if entry is None:
            per_job = {uid: job_bundles(jobs[uid], tasks) for uid, tasks in self._scan(job, nodes).items()}
        else:
            per_job, seen = entry
            candidate = self._action._candidate
            node_map = ssn.nodes
            for uid in dict.fromkeys(self._changed[seen:]):
                victim = jobs.get(uid)
                if victim is None:
                    per_job.pop(uid, None)
                    continue
                tasks = []
                for task in victim.tasks.values():
                    node = node_map.get(task.node_name)
                    if node is not None and node.tasks.get(task.key) is task and candidate(ssn, job, task):
                        tasks.append(task)
                if tasks:
                    per_job[uid] = job_bundles(victim, tasks)
                else:
                    per_job.pop(uid, None)
        self._by_filter[key] = (per_job, len(self._changed))
        return [b for bundles in per_job.values() for b in bundles]


class GangPreempt(_GangEvict):
    """Preemption within a queue, deciding per gang (Volcano's gang-aware preempt).

    Queues take turns in queue order; within a queue, its admitted, valid,
    starving jobs in job order, each in one statement. The preemptor's
    pending tasks (best-effort ones aside) are placed together. Candidates
    are Bound or Running, preemptable tasks of *other* jobs of the same
    queue with a lower job priority, whose PodGroup does not say
    ``volcano.sh/preemptable: "false"``; best-effort preemptors are not
    limited to best-effort victims here, unlike ``preempt``. Bundles are
    ordered safe before whole, then the job the job order would serve last
    first, then by ROI (freed over destroyed resources), then by job and
    task uid. The plugins implementing ``unified_evictable`` choose among
    all candidates at once. Prefixes of the bundle list are tried, shortest
    first, once they and the free resources cover the pending tasks: the
    victims are evicted and every pending task is pipelined on the node
    allocate would pick (idle fit before future fit, then scores); the
    first prefix after which the job is pipelined (``job_pipelined``) is kept.
    The statement is committed when the job is pipelined, else discarded.

    Arguments: :class:`GangEvictArguments`.
    """

    name: ClassVar[str] = "gangpreempt"
    kind = EvictionKind.GANG_PREEMPT
    reason = "gangpreempt"

    def _candidates_key(self, preemptor_job: JobInfo) -> Hashable:
        # Its own job has its priority, so the priority test leaves it out too.
        return (preemptor_job.queue, preemptor_job.priority)

    def _candidate(self, ssn: Session, preemptor_job: JobInfo, task: TaskInfo) -> bool:
        if (task.status is not _RUNNING and task.status is not _BOUND) or not task.preemptable:
            return False
        if task.job == preemptor_job.uid:
            return False
        owner = ssn.jobs.get(task.job)
        if owner is None or owner.queue != preemptor_job.queue or not _preemptable_job(owner):
            return False
        return preemptor_job.priority > owner.priority

    def _between(self, ssn: Session, preemptor_job: JobInfo, preemptor: TaskInfo) -> tuple[Between, BetweenKey | None]:
        compare_jobs = ssn.compare_jobs
        job_key = ssn.job_key
        keys: dict[str, Reversed] = {}

        def between(left: Bundle, right: Bundle) -> int:
            if left.job is right.job:
                return 0
            # The job the job order serves last gives up first.
            return -compare_jobs(left.job, right.job)

        def key(bundle: Bundle) -> Reversed:
            job = bundle.job
            found = keys.get(job.uid)
            if found is None:
                found = keys[job.uid] = Reversed(job_key(job))
            return found

        return between, key


class GangReclaim(_GangEvict):
    """Reclaim across queues, deciding per gang (Volcano's gang-aware reclaim).

    As :class:`GangPreempt`, with these differences: a queue that is
    ``overused`` is skipped; a job whose queue may not reclaim for its
    pending tasks (``preemptive``) is skipped; candidates are Running,
    preemptable tasks of jobs in *other* queues that are reclaimable
    (``spec.reclaimable`` unset or true), whatever their priority; bundles
    of different queues are ordered by the victim queue order (by default
    the queue the queue order serves last gives up first), and within a
    queue by ROI.

    Arguments: :class:`GangEvictArguments`.
    """

    name: ClassVar[str] = "gangreclaim"
    kind = EvictionKind.GANG_RECLAIM
    reason = "gangreclaim"

    def execute(self, ssn: Session) -> None:
        """Reclaim for starving jobs, unless no plugin says what a queue's share is."""
        # Without a plugin deciding ``overused`` or ``preemptive`` nothing says a queue is above its
        # share, and evicted tasks would come back to their queue and be evicted again (#6045).
        if not (ssn.implemented("overused") or ssn.implemented("preemptive")):
            return
        super().execute(ssn)

    def _queue_takes_part(self, ssn: Session, queue: QueueInfo) -> bool:
        return not ssn.queue_overused(queue)

    def _allowed_to_evict(self, ssn: Session, queue: QueueInfo, preemptors: list[TaskInfo]) -> bool:
        return ssn.preemptive(queue, preemptors)

    def _candidates_key(self, preemptor_job: JobInfo) -> Hashable:
        return preemptor_job.queue

    def _candidate(self, ssn: Session, preemptor_job: JobInfo, task: TaskInfo) -> bool:
        if task.status is not _RUNNING or not task.preemptable:
            return False
        owner = ssn.jobs.get(task.job)
        if owner is None or owner.queue == preemptor_job.queue or not _preemptable_job(owner):
            return False
        queue = ssn.queues.get(owner.queue)
        return queue is not None and queue.is_reclaimable()

    def _between(self, ssn: Session, preemptor_job: JobInfo, preemptor: TaskInfo) -> tuple[Between, BetweenKey | None]:
        queues = ssn.queues
        victim_queues = ssn.compare_victim_queues

        def between(left: Bundle, right: Bundle) -> int:
            lq = queues.get(left.job.queue)
            rq = queues.get(right.job.queue)
            if lq is None or rq is None or lq is rq:
                return 0
            return victim_queues(lq, rq, preemptor)

        if ssn.has_victim_queue_order:
            return between, None
        # Without a victim queue order, the queue the queue order serves last gives up first.
        queue_key = ssn.queue_key
        keys: dict[str, Reversed] = {}

        def key(bundle: Bundle) -> Reversed:
            name = bundle.job.queue
            found = keys.get(name)
            if found is None:
                found = keys[name] = Reversed(queue_key(queues[name]))
            return found

        return between, key
