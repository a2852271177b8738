"""Helpers shared by the actions: priority queues, fit checks, victim handling.

Nothing here is public API; the actions are the only callers.
"""

from __future__ import annotations

import functools
import logging
from collections.abc import Callable, Iterable, Sequence
from typing import TYPE_CHECKING, Any, Final, TypeVar

from sortedcontainers import SortedList

from volcanolib.api.fiterrors import FitError, FitErrors, insufficient
from volcanolib.api.resource import CPU, MEMORY, MIN_RESOURCE, Resource
from volcanolib.api.task import TaskInfo, TaskStatus
from volcanolib.errors import PluginError
from volcanolib.framework.queues import PriorityQueue
from volcanolib.framework.queues import is_schedulable as job_is_schedulable

if TYPE_CHECKING:
    from volcanolib.api.job import JobInfo
    from volcanolib.api.node import NodeInfo
    from volcanolib.api.queue import QueueInfo
    from volcanolib.framework.session import Session
    from volcanolib.framework.statement import Statement

__all__ = [
    "NODE_CLASSES_KEY",
    "PREDICATE_ERROR_CACHE_KEY",
    "VictimNodes",
    "PredicateCache",
    "PriorityQueue",
    "build_victims_queue",
    "discard_quietly",
    "FitMemo",
    "first_insufficient",
    "fits_future_idle",
    "fits_idle",
    "job_is_schedulable",
    "merge_into",
    "pod_priority",
    "queue_overused",
    "request_key",
    "unpipeline",
    "validate_victims",
]

log = logging.getLogger("volcanolib.actions")

T = TypeVar("T")

#: The action argument that switches the per-role predicate error cache.
PREDICATE_ERROR_CACHE_KEY: Final = "predicateErrorCacheEnable"
#: The action argument that switches checking one node per class of alike nodes (volcanolib's own).
NODE_CLASSES_KEY: Final = "nodeClassesEnable"


# ---------------------------------------------------------------------------- resource fit


def _le(left: float, right: float) -> bool:
    return left < right or abs(left - right) < MIN_RESOURCE


def first_insufficient(req: Resource, node: NodeInfo) -> str | None:
    """The first dimension (cpu, memory, then scalars) in which ``req`` exceeds the node's future idle.

    Future idle is ``idle + releasing - pipelined``; the comparison is
    Volcano's tolerant less-or-equal with missing scalars read as zero.
    ``None`` when the request fits.
    """
    idle, rel, pip = node.idle, node.releasing, node.pipelined
    if not _le(req.milli_cpu, idle.milli_cpu + rel.milli_cpu - pip.milli_cpu):
        return CPU
    if not _le(req.memory, idle.memory + rel.memory - pip.memory):
        return MEMORY
    if req.scalars:
        i, r, p = idle.scalars, rel.scalars, pip.scalars
        for name, v in req.scalars.items():
            if not _le(v, i.get(name, 0) + r.get(name, 0) - p.get(name, 0)):
                return name
    return None


def fits_future_idle(task: TaskInfo, node: NodeInfo) -> bool:
    """Whether the task's request fits what the node will have once releasing tasks leave."""
    return first_insufficient(task.init_resreq, node) is None


def fits_future_idle_after_evicting(task: TaskInfo, node: NodeInfo, victim: TaskInfo) -> bool:
    """Whether the task would fit the node's future idle once ``victim`` (placed there) is evicted.

    Evicting moves the victim's request into the node's releasing
    resources; the answer is the one :func:`fits_future_idle` gives after
    that eviction.
    """
    req, extra = task.init_resreq, victim.resreq
    idle, rel, pip = node.idle, node.releasing, node.pipelined
    if not _le(req.milli_cpu, idle.milli_cpu + (rel.milli_cpu + extra.milli_cpu) - pip.milli_cpu):
        return False
    if not _le(req.memory, idle.memory + (rel.memory + extra.memory) - pip.memory):
        return False
    if req.scalars:
        i, r, p, e = idle.scalars, rel.scalars, pip.scalars, extra.scalars
        for name, v in req.scalars.items():
            released = r.get(name, 0) + e[name] if name in e else r.get(name, 0)
            if not _le(v, i.get(name, 0) + released - p.get(name, 0)):
                return False
    return True


def fits_idle(task: TaskInfo, node: NodeInfo) -> bool:
    """Whether the task's request fits the node's idle resources now."""
    return task.init_resreq.less_equal(node.idle)


def validate_victims(preemptor: TaskInfo, node: NodeInfo, victims: Sequence[TaskInfo]) -> bool:
    """Whether evicting all ``victims`` would let ``preemptor`` fit the node's future idle.

    An empty list is valid when the future idle alone already fits.
    """
    future = node.future_idle()
    for victim in victims:
        future.add(victim.resreq)
    return preemptor.init_resreq.less_equal(future)


# ---------------------------------------------------------------------------- predicates with a cache


def request_key(req: Resource) -> tuple[float, float, tuple[tuple[str, float], ...]]:
    """A hashable form of a request: equal requests give equal keys."""
    return (req.milli_cpu, req.memory, tuple(sorted(req.scalars.items())) if req.scalars else ())


class FitMemo:
    """Which nodes a request fits, kept up to date as placements change nodes.

    Allocate checks every task's request against every node's future idle
    resources; tasks of one job usually share their request, and between two
    checks only the nodes that received (or gave back) a task change. The
    memo remembers, per distinct request, the nodes that fit it (future idle)
    and those that fit it now (idle), and re-checks only the nodes reported
    in ``log`` since. The answers are exactly those of a full check.

    :param nodes: the node list the memo answers for (in order).
    :param log: names of changed nodes, appended to as nodes change (the
        session's ``node_log``).
    """

    __slots__ = ("_by_name", "_entries", "_log", "nodes")

    #: Distinct requests remembered before the memo starts over.
    MAX_ENTRIES: Final = 1024

    def __init__(self, nodes: Sequence[NodeInfo], log: list[str]) -> None:
        self.nodes = nodes
        self._by_name = {n.name: n for n in nodes}
        self._log = log
        # request key -> [fitting nodes, fitting names, idle-fitting names, log position]
        self._entries: dict[tuple[float, float, tuple[tuple[str, float], ...]], list[Any]] = {}

    def fitting(self, req: Resource) -> tuple[list[NodeInfo], set[str], set[str]]:
        """``(nodes fitting future idle in order, their names, names of those fitting idle)``."""
        key = request_key(req)
        entry = self._entries.get(key)
        log_size = len(self._log)
        if entry is None:
            if len(self._entries) >= self.MAX_ENTRIES:
                self._entries.clear()
            fit: list[NodeInfo] = []
            names: set[str] = set()
            idle: set[str] = set()
            for node in self.nodes:
                if first_insufficient(req, node) is None:
                    fit.append(node)
                    names.add(node.name)
                    if req.less_equal(node.idle):
                        idle.add(node.name)
            entry = self._entries[key] = [fit, names, idle, log_size]
        elif entry[3] < log_size:
            names = entry[1]
            idle = entry[2]
            changed = False
            for name in dict.fromkeys(self._log[entry[3] :]):
                found = self._by_name.get(name)
                if found is None:
                    continue
                node = found
                now = first_insufficient(req, node) is None
                if now != (name in names):
                    changed = True
                    if now:
                        names.add(name)
                    else:
                        names.discard(name)
                if now and req.less_equal(node.idle):
                    idle.add(name)
                else:
                    idle.discard(name)
            if changed:
                entry[0] = [n for n in self.nodes if n.name in names]
            entry[3] = log_size
        return entry[0], entry[1], entry[2]


class VictimNodes:
    """Positions of the nodes that hold a task ``possible`` accepts, ascending, kept current from a node log.

    Preempt and reclaim look for victims node by node; on a busy cluster most
    nodes they pass have nothing left to evict. This index lets them skip
    those without looking at their tasks. Call :meth:`refresh` before reading
    :attr:`alive` when nodes may have changed.

    :param nodes: the node list (positions refer to it).
    :param log: names of changed nodes, appended to as nodes change (the
        session's ``node_log``).
    :param possible: whether a task might be a victim (a superset of every
        victim filter the action applies).
    """

    __slots__ = ("_log", "_position", "_possible", "_seen", "alive", "nodes")

    def __init__(self, nodes: Sequence[NodeInfo], log: list[str], possible: Callable[[TaskInfo], bool]) -> None:
        self.nodes = nodes
        self._log = log
        self._seen = len(log)
        self._possible = possible
        self._position = {node.name: i for i, node in enumerate(nodes)}
        #: Positions of the nodes with at least one possible victim.
        self.alive: SortedList[int] = SortedList(i for i, node in enumerate(nodes) if self._holds(node))

    def _holds(self, node: NodeInfo) -> bool:
        possible = self._possible
        return any(possible(task) for task in node.tasks.values())

    def refresh(self) -> None:
        """Bring :attr:`alive` up to date with the nodes changed since the last call."""
        log = self._log
        if self._seen == len(log):
            return
        alive = self.alive
        for name in set(log[self._seen :]):
            position = self._position.get(name)
            if position is None:
                continue
            holds = self._holds(self.nodes[position])
            if holds and position not in alive:
                alive.add(position)
            elif not holds and position in alive:
                alive.remove(position)
        self._seen = len(log)


class PredicateCache:
    """Predicate filtering with Volcano's per-role error cache.

    Once a task of a job's role fails a predicate on a node, later tasks of
    the same role (same :attr:`TaskInfo.template`) checked through the same
    cache get the recorded failure for that node without running the
    predicates again. Tasks without a role are never cached. Volcano makes
    one helper per job visit in allocate, one per action in preempt and one
    per task in reclaim; the actions do the same.

    :param enabled: the action argument ``predicateErrorCacheEnable``.
    """

    __slots__ = ("_failed", "enabled")

    def __init__(self, enabled: bool = True) -> None:
        self.enabled = enabled
        self._failed: dict[str, dict[str, FitError]] = {}

    def has_failures(self, task: TaskInfo) -> bool:
        """Whether failures are recorded for the task's role (its later tasks skip those nodes)."""
        return bool(self._failed) and self.enabled and bool(task.role) and bool(self._failed.get(task.template))

    def filter(
        self,
        ssn: Session,
        task: TaskInfo,
        nodes: Sequence[NodeInfo],
        fit_errors: FitErrors,
        *,
        resource_check: bool = False,
        for_preempt: bool = False,
        memo: FitMemo | None = None,
    ) -> list[NodeInfo]:
        """The nodes, in order, that pass for ``task``; when none does, ``fit_errors`` says why for each.

        :param resource_check: first require the request to fit each node's
            future idle (failing with ``Insufficient <resource>``), as allocate does.
        :param for_preempt: keep nodes whose only failure is plain
            ``UNSCHEDULABLE`` (evicting may fix it), as preempt and reclaim do.
        :param memo: answers the resource check when ``nodes`` is its node list.
        """
        key = task.template if self.enabled and task.role else None
        cached = self._failed.get(key) if key is not None else None
        req = task.init_resreq
        fit_names: set[str] | None = None
        if resource_check and memo is not None and nodes is memo.nodes:
            fit, fit_names, _ = memo.fitting(req)
            candidates = [n for n in fit if n.name not in cached] if cached else list(fit)
        else:
            candidates = []
            for node in nodes:
                if cached is not None and node.name in cached:
                    continue
                if resource_check and first_insufficient(req, node) is not None:
                    continue
                candidates.append(node)
        passed = (
            ssn.predicate_nodes(task, candidates, for_preempt=for_preempt, fit_errors=fit_errors) if candidates else []
        )
        if key is not None and len(passed) != len(candidates):
            alive = {n.name for n in passed}
            store = self._failed.setdefault(key, {})
            for node in candidates:
                if node.name not in alive:
                    failure = fit_errors.nodes.get(node.name)
                    if failure is not None:
                        store[node.name] = failure
        if not passed:
            # Explain the nodes that never reached the predicates.
            record = fit_errors.set_node_error
            for node in nodes:
                if cached is not None:
                    hit = cached.get(node.name)
                    if hit is not None:
                        record(FitError(task.key, node.name, hit.reasons))
                        continue
                if resource_check and (fit_names is None or node.name not in fit_names):
                    short = first_insufficient(req, node)
                    if short is not None:
                        record(FitError(task.key, node.name, (insufficient(short),)))
        return passed


# ---------------------------------------------------------------------------- jobs, victims


def queue_overused(ssn: Session, queue: QueueInfo, consequence: str) -> bool:
    """Whether the plugins say the queue is overused (a plugin failure is recorded and counts as yes)."""
    overused = True
    with ssn.guard():
        overused = ssn.overused(queue)
    if overused:
        log.debug("queue %s is overused, %s", queue.name, consequence)
    return overused


class _FrozenOrder:
    """Job and task order for a victim queue: live, or (``frozen``) each key worked out once.

    While a queue is being built nothing changes, so remembering keys is
    exact. An order that is not key-based is always compared live.
    """

    __slots__ = ("frozen", "job_key", "jobs", "live_jobs", "live_tasks", "task_key", "tasks")

    def __init__(self, ssn: Session, *, frozen: bool = True) -> None:
        self.job_key = ssn.job_key_by_plugins
        self.task_key = ssn.task_key if ssn.order_by_key("task_order") else None
        self.live_jobs = ssn.compare_jobs_by_plugins
        self.live_tasks = ssn.compare_tasks
        self.jobs: dict[str, Any] = {}
        self.tasks: dict[str, Any] = {}
        self.frozen = frozen

    def compare_jobs(self, left: JobInfo, right: JobInfo) -> int:
        key = self.job_key
        if not self.frozen or key is None:
            return self.live_jobs(left, right)
        return _compare_memo(self.jobs, key, left, right)

    def compare_tasks(self, left: TaskInfo, right: TaskInfo) -> int:
        key = self.task_key
        if not self.frozen or key is None:
            return self.live_tasks(left, right)
        return _compare_memo(self.tasks, key, left, right)


def _compare_memo(memo: dict[str, Any], key: Callable[[Any], Any], left: Any, right: Any) -> int:
    lk = memo.get(left.uid, _MISSING)
    if lk is _MISSING:
        lk = memo[left.uid] = key(left)
    rk = memo.get(right.uid, _MISSING)
    if rk is _MISSING:
        rk = memo[right.uid] = key(right)
    return -1 if lk < rk else (1 if lk > rk else 0)


_MISSING: Final = object()


def _victim_compare(ssn: Session, preemptor: TaskInfo, order: _FrozenOrder) -> Callable[[TaskInfo, TaskInfo], int]:
    jobs = ssn.jobs
    queues = ssn.queues
    compare_tasks = order.compare_tasks
    compare_jobs = order.compare_jobs
    victim_queues = ssn.compare_victim_queues
    preemptor_job = jobs.get(preemptor.job)

    def compare(left: TaskInfo, right: TaskInfo) -> int:
        if left.job == right.job:
            return -compare_tasks(left, right)
        lj = jobs.get(left.job)
        rj = jobs.get(right.job)
        if lj is None or rj is None:
            # A victim whose job left the session goes first.
            if lj is None and rj is not None:
                return -1
            if rj is None and lj is not None:
                return 1
            return -compare_tasks(left, right)
        if preemptor_job is not None and lj.queue != rj.queue:
            lq: QueueInfo | None = queues.get(lj.queue)
            rq: QueueInfo | None = queues.get(rj.queue)
            if lq is not None and rq is not None:
                result = victim_queues(lq, rq, preemptor)
                if result:
                    return result
        return -compare_jobs(lj, rj) or -compare_tasks(left, right)

    return compare


def build_victims_queue(ssn: Session, victims: Iterable[TaskInfo], preemptor: TaskInfo) -> PriorityQueue[TaskInfo]:
    """Victims in eviction order (Volcano's ``BuildVictimsPriorityQueue``).

    Two tasks of one job: the one the task order would place last goes
    first. A task whose job is no longer in the session goes before others.
    Tasks of jobs in different queues: the victim queue order decides (by
    default, the queue that would be served last gives up first). Otherwise
    the job the plugins' job order would serve last goes first (no
    creation-time tie-break), then the reverse task order.
    """
    victims = list(victims)
    live = functools.cmp_to_key(_victim_compare(ssn, preemptor, _FrozenOrder(ssn, frozen=False)))
    frozen = _victim_key(ssn, preemptor, victims)
    if frozen is None:
        frozen = functools.cmp_to_key(_victim_compare(ssn, preemptor, _FrozenOrder(ssn)))
    return _VictimQueue(frozen, live, victims)


class _Reversed:
    """Orders values the other way round (a sort key for "last first")."""

    __slots__ = ("value",)

    def __init__(self, value: Any) -> None:
        self.value = value

    def __eq__(self, other: object) -> bool:
        return isinstance(other, _Reversed) and bool(self.value == other.value)

    def __lt__(self, other: _Reversed) -> bool:
        return bool(other.value < self.value)

    def __gt__(self, other: _Reversed) -> bool:
        return bool(other.value > self.value)

    __hash__ = None  # type: ignore[assignment]


def _victim_key_parts(
    ssn: Session, preemptor: TaskInfo, victims: Sequence[TaskInfo]
) -> tuple[Callable[[TaskInfo], Any], Callable[[TaskInfo], Any]] | None:
    """The two parts of the victim key: ``(queue key, job key)`` of a victim's job, and the task key.

    The first part is ``_MISSING`` for a victim whose job left the session.
    ``None`` when some order is a comparison (or a victim's queue is
    missing), then comparisons are used.
    """
    job_key = ssn.job_key_by_plugins
    if job_key is None or not ssn.order_by_key("task_order") or not ssn.order_by_key("queue_order"):
        return None
    if ssn.has_victim_queue_order:
        return None
    jobs = ssn.jobs
    queues = ssn.queues
    by_queue = preemptor.job in jobs
    if by_queue:
        for victim in victims:
            owner = jobs.get(victim.job)
            if owner is not None and owner.queue not in queues:
                return None
    queue_key = ssn.queue_key
    jobs_seen: dict[str, Any] = {}
    queues_seen: dict[str, Any] = {}

    def job_part(task: TaskInfo) -> Any:
        job = jobs.get(task.job)
        if job is None:
            return _MISSING
        jk = jobs_seen.get(job.uid, _MISSING)
        if jk is _MISSING:
            jk = jobs_seen[job.uid] = job_key(job)
        qk: Any = ()
        if by_queue:
            qk = queues_seen.get(job.queue, _MISSING)
            if qk is _MISSING:
                qk = queues_seen[job.queue] = queue_key(queues[job.queue])
        return (qk, jk)

    return job_part, ssn.task_key


def _victim_key(ssn: Session, preemptor: TaskInfo, victims: Sequence[TaskInfo]) -> Callable[[TaskInfo], Any] | None:
    """A sort key giving the victim order while nothing changes, when every order involved is key-based.

    ``None`` when some order is a comparison (or a victim's queue is missing), then comparisons are used.
    """
    parts = _victim_key_parts(ssn, preemptor, victims)
    if parts is None:
        return None
    job_part, task_key = parts

    def key(task: TaskInfo) -> Any:
        part = job_part(task)
        if part is _MISSING:
            # A victim whose job left the session goes first, then by reverse task order.
            return (0, _Reversed(((), (), task_key(task))))
        return (1, _Reversed((*part, task_key(task))))

    return key


def first_victim(ssn: Session, victims: Sequence[TaskInfo], preemptor: TaskInfo) -> TaskInfo | None:
    """The victim :func:`build_victims_queue` would give first, found without ordering the others.

    Only the victims of the jobs that go first have their task key taken.
    ``None`` when there is no victim, or when some order is a comparison
    (then only the queue knows).
    """
    if not victims:
        return None
    parts = _victim_key_parts(ssn, preemptor, victims)
    if parts is None:
        return None
    job_part, task_key = parts
    # The queue serves victims whose job left the session first; then the largest
    # (queue key, job key, task key), the earliest of equals.
    gone: list[int] = []
    top: list[int] = []
    best: Any = None
    for i, victim in enumerate(victims):
        part = job_part(victim)
        if part is _MISSING:
            gone.append(i)
        elif not top or part > best:
            best = part
            top = [i]
        elif part == best:
            top.append(i)
    if gone:
        top = gone
    chosen = top[0]
    if len(top) > 1:
        chosen_key = task_key(victims[chosen])
        for i in top[1:]:
            candidate = task_key(victims[i])
            if candidate > chosen_key:
                chosen, chosen_key = i, candidate
    return victims[chosen]


class _VictimQueue(PriorityQueue[TaskInfo]):
    """A victim queue ordered by ``frozen`` until its first victim is taken, by ``live`` after.

    Nothing changes before the first victim is taken, so a key worked out
    once per item orders exactly as live comparisons would; the heap keeps
    its arrangement when it switches.
    """

    __slots__ = ("_live",)

    def __init__(
        self, frozen: Callable[[TaskInfo], Any], live: Callable[[TaskInfo], Any], items: Iterable[TaskInfo]
    ) -> None:
        self._live: Callable[[TaskInfo], Any] | None = live
        super().__init__(frozen, items)

    def pop(self) -> TaskInfo:
        """Remove and return the first victim; later comparisons see jobs and tasks as they are then."""
        item = super().pop()
        live = self._live
        if live is not None:
            self._live = None
            self._key = live
            self._heap = [(live(other), count, other) for _, count, other in self._heap]
        return item


def merge_into(stmt: Statement, other: Statement) -> None:
    """Move ``other``'s recorded operations to the end of ``stmt`` (effects stay applied)."""
    stmt.operations.extend(other.operations)
    other.operations = []


def unpipeline(ssn: Session, task: TaskInfo) -> None:
    """Return a pipelined task to Pending and release its reservation on its node."""
    node = ssn.nodes.get(task.node_name)
    ssn.set_task_status(task, TaskStatus.PENDING)
    if node is not None and node.accounted_status(task) is not None:
        node.remove_task(task)
    ssn.fire_deallocate(task)
    task.node_name = ""


def pod_priority(task: TaskInfo) -> int:
    """The pod's own priority (``spec.priority``), else the task priority."""
    pod = task.pod
    if pod is not None and pod.manifest is not None:
        spec = pod.manifest.get("spec")
        if isinstance(spec, dict):
            value = spec.get("priority")
            if isinstance(value, int) and not isinstance(value, bool):
                return value
    return task.priority


def discard_quietly(ssn: Session, stmt: Statement, job: JobInfo | None = None) -> None:
    """Discard a statement, recording (not raising) a plugin failure during the undo."""
    try:
        stmt.discard()
    except PluginError as err:
        ssn.record_plugin_error(err, job)
