"""Helpers shared by the actions: priority queues, fit checks, node caches.

Nothing here is public API; the actions are the only callers.
"""

from __future__ import annotations

import heapq
import itertools
import logging
from collections.abc import Callable, Iterable, Sequence
from typing import TYPE_CHECKING, Any, Final, Generic, TypeVar

from sortedcontainers import SortedList

from volcanolib.api.fiterrors import FitError, FitErrors, insufficient
from volcanolib.api.resource import CPU, MEMORY, MIN_RESOURCE, Resource
from volcanolib.api.task import TaskInfo

if TYPE_CHECKING:
    from volcanolib.api.job import JobInfo
    from volcanolib.api.node import NodeInfo
    from volcanolib.api.queue import QueueInfo
    from volcanolib.framework.session import Session

__all__ = [
    "VictimNodes",
    "PredicateCache",
    "PriorityQueue",
    "FitMemo",
    "first_insufficient",
    "fits_future_idle",
    "fits_idle",
    "job_is_schedulable",
    "pod_priority",
    "queue_overused",
    "request_key",
]

log = logging.getLogger("volcanolib.actions")

T = TypeVar("T")


class PriorityQueue(Generic[T]):
    """A binary heap ordered by a key taken when an item is pushed.

    The key is computed once per push, so an item whose order changes must
    be popped, changed and pushed again (never changed while queued). Items
    with equal keys come out in push order, which keeps runs reproducible.
    A key made with :func:`functools.cmp_to_key` compares live, like
    Volcano's comparator-based queue.

    Runtime complexity: ``push`` and ``pop`` are O(log n).

    >>> q = PriorityQueue[str](len)
    >>> for word in ("ccc", "a", "bb", "b"):
    ...     q.push(word)
    >>> [q.pop() for _ in range(len(q))]
    ['a', 'b', 'bb', 'ccc']
    """

    __slots__ = ("_counter", "_heap", "_key")

    def __init__(self, key: Callable[[T], Any], items: Iterable[T] = ()) -> None:
        self._key = key
        self._counter = itertools.count()
        self._heap: list[tuple[Any, int, T]] = [(key(item), next(self._counter), item) for item in items]
        heapq.heapify(self._heap)

    def push(self, item: T) -> None:
        """Add an item."""
        heapq.heappush(self._heap, (self._key(item), next(self._counter), item))

    def pop(self) -> T:
        """Remove and return the first item.

        :raises IndexError: when the queue is empty.
        """
        return heapq.heappop(self._heap)[2]

    def empty(self) -> bool:
        """Whether the queue holds no item."""
        return not self._heap

    def __len__(self) -> int:
        return len(self._heap)

    def __bool__(self) -> bool:
        return bool(self._heap)


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


def job_is_schedulable(ssn: Session, job: JobInfo) -> bool:
    """Volcano's common job filter: admitted (not Pending), valid, and its queue exists."""
    if job.is_pending():
        return False
    if not ssn.job_valid(job).ok:
        return False
    return job.queue in ssn.queues


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
