"""Victim order: which running task gives way first when a preemptor needs room.

Preempt and reclaim evict victims one by one until the preemptor fits, and
the capacity plugin hands out reclaimable tasks in the same order. The order
is Volcano's victims priority queue:

* two tasks of one job: the one the task order would serve last goes first;
* a task whose job is no longer in the session goes before the others;
* tasks of jobs in different queues (when the preemptor's job is in the
  session): the victim queue order decides (by default, the queue that
  would be served last gives up first);
* otherwise the job the plugins' job order would serve last goes first (no
  creation-time tie-break), then the reverse task order.

:class:`VictimOrder` answers for one preemptor. When every order involved is
key-based (see the ``*_order_key`` hooks) it sorts by one composite key;
otherwise it compares victims pairwise, remembering each job's and task's
key where one exists. Both give the same order; the choice is internal.

.. versionadded:: 0.2
"""

from __future__ import annotations

import enum
import functools
import heapq
import logging
from collections.abc import Callable, Iterable, Sequence
from typing import TYPE_CHECKING, Any, Final, final

import attrs

from volcanolib.errors import PluginError, ResourceError
from volcanolib.framework import fastpath

if TYPE_CHECKING:
    from volcanolib.api.job import JobInfo
    from volcanolib.api.node import NodeInfo
    from volcanolib.api.queue import QueueInfo
    from volcanolib.api.task import TaskInfo
    from volcanolib.framework.session import Session
    from volcanolib.framework.statement import Statement

__all__ = ["EvictionContext", "EvictionKind", "Reversed", "VictimOrder", "VictimQueue", "make_room", "validate_victims"]

log = logging.getLogger(__name__)

_MISSING: Final = object()

#: Victims ordered by remembered and composite keys (see :mod:`~volcanolib.framework.fastpath`).
BY_KEYS: Final = fastpath.register("victim order by keys", "Volcano's victim comparison, asking the plugins live")
#: The first victim found without ordering the others, or from a heap built on remembered keys.
FIRST: Final = fastpath.register("first victim", "the first of the victims sorted by Volcano's comparison")


def _first_checked(order: VictimOrder, items: list[TaskInfo], first: TaskInfo | None) -> None:
    """Check a first victim against the reference order (while fast paths are checked)."""
    if order._ssn.check_fast_paths:
        reference = order._reference(items)
        fastpath.agree(FIRST, first, reference[0] if reference else None)


#: ``(job part, task key)`` of the composite victim key; see :meth:`VictimOrder._key_parts`.
_KeyParts = tuple[Callable[["TaskInfo"], Any], Callable[["TaskInfo"], Any]]


class EvictionKind(enum.Enum):
    """Which action asks :func:`~volcanolib.framework.hookspecs.unified_evictable` (Volcano's EvictionKind).

    .. versionadded:: 0.2
    """

    GANG_PREEMPT = "gangpreempt"
    GANG_RECLAIM = "gangreclaim"


@attrs.frozen
class EvictionContext:
    """What a gang-aware eviction decides about, passed to ``unified_evictable``.

    .. versionadded:: 0.2
    """

    #: The action asking.
    kind: EvictionKind
    #: The job that needs room.
    job: JobInfo
    #: The domain whose nodes are searched (``""``: the whole cluster).
    domain: str = ""


def validate_victims(preemptor: TaskInfo, node: NodeInfo, victims: Sequence[TaskInfo]) -> bool:
    """Whether evicting all ``victims`` would let ``preemptor`` fit the node's future idle resources.

    An empty list is valid when the future idle resources alone already fit
    (Volcano's ``ValidateVictims`` without its error message).
    """
    return node.fits_future_idle_without(preemptor.init_resreq, (victim.resreq for victim in victims))


def make_room(
    ssn: Session,
    stmt: Statement,
    task: TaskInfo,
    node: NodeInfo,
    victims: VictimQueue | Sequence[TaskInfo],
    fits: Callable[[], bool] | None,
    reason: str,
    *,
    check_first: bool,
    job: JobInfo | None = None,
) -> bool:
    """Evict ``victims`` in order on ``node`` until ``fits()``, then pipeline ``task`` there.

    The evictions go into ``stmt``; when the task fits it is pipelined on
    the node. Otherwise the node's evictions are discarded (back to where
    ``stmt`` stood) and nothing changes.

    :param victims: a :class:`VictimQueue` (popped as needed) or victims already in order.
    :param fits: whether the task fits now (asked after each eviction);
        ``None``: whether its request fits the node's future idle resources.
    :param check_first: ask ``fits()`` before the first eviction too (preempt);
        without it at least one victim is evicted when there is one (reclaim,
        as Volcano's); with no victim, the task is pipelined if it fits as is.
    :param job: the job named when a plugin failure is recorded during an undo.
    :returns: whether the task was pipelined.
    :raises PluginError: when a plugin fails (the node's evictions are undone first).
    """
    start = stmt.savepoint()
    pop = victims.pop if isinstance(victims, VictimQueue) else iter(victims).__next__
    left = len(victims)
    req = task.init_resreq
    try:
        ok = (node.first_insufficient(req) is None if fits is None else fits()) if check_first or not left else False
        while not ok and left:
            stmt.evict(pop(), reason)
            left -= 1
            ok = node.first_insufficient(req) is None if fits is None else fits()
        if ok:
            stmt.pipeline(task, node.name)
            return True
        stmt.discard(start)
    except ResourceError as exc:
        log.error("%s for task %s on node %s failed: %s", reason, task.key, node.name, exc)
        stmt.discard(start)
    except PluginError:
        stmt.discard_quietly(job, start)
        raise
    return False


@final
class VictimOrder:
    """The eviction order of victims for one preemptor, in one session.

    The object holds no answer between calls: each :meth:`queue`,
    :meth:`first` or :meth:`sorted` reads the session as it is then, so one
    order may serve a preemptor across several nodes while evictions change
    job shares in between.

    :param ssn: the session whose plugins order jobs, tasks and queues.
    :param preemptor: the task that needs room (its job decides whether
        queues take part in the order).

    >>> from volcanolib.testing import FakeCache, build_node, build_pod_group, build_task, open_session
    >>> cache = FakeCache()
    >>> cache.add_node(build_node("n0", "8", "8Gi"))
    >>> cache.add_pod_group(build_pod_group("low"))
    >>> cache.add_pod_group(build_pod_group("high"))
    >>> for name, prio in (("low-0", 1), ("low-1", 5)):
    ...     cache.add_task(build_task(name, job="low", cpu="1", node="n0", priority=prio))
    >>> cache.add_task(build_task("high-0", job="high", cpu="2"))
    >>> ssn = open_session(cache, "actions: ''\\ntiers:\\n- plugins:\\n  - name: priority\\n")
    >>> running = sorted(ssn.jobs["default/low"].tasks.values(), key=lambda t: t.name)
    >>> preemptor = ssn.jobs["default/high"].tasks["default-high-0"]
    >>> order = VictimOrder(ssn, preemptor)
    >>> [t.name for t in order.sorted(running)]
    ['low-0', 'low-1']
    >>> order.first(running).name
    'low-0'
    """

    __slots__ = ("_keyed", "_ssn", "preemptor")

    def __init__(self, ssn: Session, preemptor: TaskInfo) -> None:
        self._ssn = ssn
        #: The task that needs room.
        self.preemptor = preemptor
        # Key-based when jobs, tasks and queues are ordered by keys and no plugin orders victim queues.
        self._keyed = (
            ssn.job_key_by_plugins is not None
            and ssn.order_by_key("task_order")
            and ssn.order_by_key("queue_order")
            and not ssn.has_victim_queue_order
        )

    # ------------------------------------------------------------------ public queries

    def compare(self, left: TaskInfo, right: TaskInfo) -> int:
        """Negative when ``left`` is evicted before ``right``, positive after, 0 when they tie.

        Every call asks the plugins afresh (Volcano's comparison).
        """
        return self._comparison(frozen=False)(left, right)

    def queue(self, victims: Iterable[TaskInfo]) -> VictimQueue:
        """The victims in a queue that pops them in eviction order.

        The queue orders the victims when it first needs to (its first
        :meth:`~VictimQueue.peek` or :meth:`~VictimQueue.pop`), by the session
        as it is then; after the first pop, each comparison asks the plugins
        afresh, so the evictions made in between count, as in Volcano's heap.
        """
        return VictimQueue(self, list(victims))

    def first(self, victims: Sequence[TaskInfo]) -> TaskInfo | None:
        """The victim :meth:`queue` would give first, ``None`` when there is none.

        With key-based orders only the victims of the jobs that go first have
        their task key taken; the others are never ordered.
        """
        return self.queue(victims).peek()

    def sorted(self, victims: Iterable[TaskInfo]) -> list[TaskInfo]:
        """All victims in eviction order as the session stands now (ties keep their given order)."""
        items = list(victims)
        parts = self._key_parts(items)
        ordered = sorted(items, key=self._frozen_key(parts))
        if self._ssn.check_fast_paths:
            fastpath.agree(BY_KEYS, ordered, self._reference(items))
        return ordered

    def _reference(self, victims: Iterable[TaskInfo]) -> list[TaskInfo]:
        """The victims sorted by Volcano's comparison, every comparison asking the plugins (ties in given order)."""
        return sorted(victims, key=functools.cmp_to_key(self._comparison(frozen=False)))

    # ------------------------------------------------------------------ comparisons

    def _comparison(self, *, frozen: bool) -> Callable[[TaskInfo, TaskInfo], int]:
        """Volcano's victim comparison; ``frozen`` remembers each job and task key it takes.

        While nothing changes remembering keys is exact; an order that is not
        key-based is always compared live.
        """
        ssn = self._ssn
        jobs = ssn.jobs
        queues = ssn.queues
        victim_queues = ssn.compare_victim_queues
        preemptor = self.preemptor
        preemptor_job = jobs.get(preemptor.job)
        compare_jobs = ssn.compare_jobs_by_plugins
        compare_tasks = ssn.compare_tasks
        if frozen:
            job_key = ssn.job_key_by_plugins
            if job_key is not None:
                compare_jobs = _remembering(job_key)
            if ssn.order_by_key("task_order"):
                compare_tasks = _remembering(ssn.task_key)

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

    # ------------------------------------------------------------------ keys

    def _key_parts(self, victims: Sequence[TaskInfo]) -> _KeyParts | None:
        """The two parts of the victim key: ``(queue key, job key)`` of a victim's job, and the task key.

        The first part is ``_MISSING`` for a victim whose job left the
        session. ``None`` when some order is a comparison (or a victim's
        queue is missing): then victims are compared pairwise.
        """
        if not self._keyed:
            return None
        ssn = self._ssn
        job_key = ssn.job_key_by_plugins
        assert job_key is not None
        jobs = ssn.jobs
        queues = ssn.queues
        by_queue = self.preemptor.job in jobs
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

    def _first_keyed(self, victims: Sequence[TaskInfo]) -> Any:
        """The smallest victim by the composite key, the earliest of equals; ``_MISSING`` when not keyed."""
        return self._first_and_parts(victims, False)[0]

    def _first_and_parts(self, victims: Sequence[TaskInfo], keep: bool = True) -> tuple[Any, list[Any] | None]:
        """:meth:`_first_keyed`'s victim, with each victim's job part of the key when every victim has a job.

        The parts (the job key, preceded by the queue key when the victims'
        jobs are in several queues) order the victims as the composite key's
        first part does; ``None`` when some victim's job left the session, or
        when there is a single victim (no order to keep).

        The same answer as the first of :meth:`sorted` with key-based orders,
        in one pass over the victims' jobs: each job's key is taken once, the
        queue key only when the victims' jobs are in more than one queue (one
        queue's key is the same for all of them), and the task key only for
        the victims of the jobs that go first. ``_MISSING`` when some order is
        a comparison or a victim's queue is missing (then the heap decides).
        Without ``keep`` the parts are not kept (``None``).
        """
        if not self._keyed or not victims:
            return _MISSING, None
        ssn = self._ssn
        jobs = ssn.jobs
        queues = ssn.queues
        by_queue = self.preemptor.job in jobs
        # Each victim's job (None: it left the session); whether some did, and whether there are several queues.
        owners: list[JobInfo | None] = []
        gone = False
        first_queue: str | None = None
        several = False
        for victim in victims:
            job = jobs.get(victim.job)
            owners.append(job)
            if job is None:
                gone = True
            elif by_queue:
                name = job.queue
                if name != first_queue:
                    if name not in queues:
                        return _MISSING, None
                    if first_queue is None:
                        first_queue = name
                    else:
                        several = True
        job_key = ssn.job_key_by_plugins
        assert job_key is not None
        if len(victims) == 1:
            only = owners[0]
            if only is not None:
                job_key(only)  # taken as with several victims (a failing plugin is recorded the same way)
            return victims[0], None
        top: list[int]
        by_victim: list[Any] | None = None
        if gone:
            # Victims whose job left the session go first: in order of their job's first appearance.
            by_job: dict[str, list[int]] = {}
            for i, job in enumerate(owners):
                if job is None:
                    by_job.setdefault(victims[i].job, []).append(i)
            top = [i for group in by_job.values() for i in group]
        else:
            # One queue: its key is the same for every victim and decides nothing.
            queue_keys: dict[str, Any] | None = None
            if several:
                queue_key = ssn.queue_key
                queue_keys = {}
                for job in owners:
                    if job is not None and job.queue not in queue_keys:
                        queue_keys[job.queue] = queue_key(queues[job.queue])
            parts: dict[str, Any] = {}
            best: Any = _MISSING
            top = []
            by_victim = [] if keep else None
            for i, job in enumerate(owners):
                assert job is not None
                part = parts.get(job.uid, _MISSING)
                if part is _MISSING:
                    part = job_key(job)
                    if queue_keys is not None:
                        part = (queue_keys[job.queue], part)
                    parts[job.uid] = part
                if by_victim is not None:
                    by_victim.append(part)
                if best is _MISSING or part > best:
                    best = part
                    top = [i]
                elif part == best:
                    top.append(i)
        chosen = top[0]
        if len(top) > 1:
            task_key = ssn.task_key
            chosen_key = task_key(victims[chosen])
            for i in top[1:]:
                candidate = task_key(victims[i])
                if candidate > chosen_key:
                    chosen, chosen_key = i, candidate
        return victims[chosen], by_victim

    def _frozen_key(self, parts: _KeyParts | None) -> Callable[[TaskInfo], Any]:
        """A sort key giving the victim order while nothing changes."""
        if parts is None:
            return functools.cmp_to_key(self._comparison(frozen=True))
        job_part, task_key = parts

        def key(task: TaskInfo) -> Any:
            part = job_part(task)
            if part is _MISSING:
                # A victim whose job left the session goes first, then by reverse task order.
                return (0, Reversed(((), (), task_key(task))))
            return (1, Reversed((*part, task_key(task))))

        return key


def _ranks(victims: Sequence[TaskInfo], parts: _KeyParts) -> list[int]:
    """Each victim's position in the order of :meth:`VictimOrder._frozen_key` (ties in the given order).

    Victims whose job left the session come first, by reverse task key, then
    the others by reverse ``(queue key, job key, task key)``; a stable sort
    in reverse keeps equal victims in their given order, as the frozen key's
    tie-break by position does.
    """
    job_part, task_key = parts
    gone: list[tuple[Any, int]] = []
    present: list[tuple[Any, int]] = []
    for i, victim in enumerate(victims):
        part = job_part(victim)
        if part is _MISSING:
            gone.append((task_key(victim), i))
        else:
            present.append(((*part, task_key(victim)), i))
    ranks = [0] * len(victims)
    rank = 0
    for group in (gone, present):
        group.sort(key=_first_of, reverse=True)
        for _, i in group:
            ranks[i] = rank
            rank += 1
    return ranks


def _first_of(pair: tuple[Any, int]) -> Any:
    return pair[0]


def _remembering(key: Callable[[Any], Any]) -> Callable[[Any, Any], int]:
    """A comparison by ``key`` that takes each item's key once (by ``uid``)."""
    memo: dict[str, Any] = {}

    def compare(left: Any, right: Any) -> int:
        lk = memo.get(left.uid, _MISSING)
        if lk is _MISSING:
            lk = memo[left.uid] = key(left)
        rk = memo.get(right.uid, _MISSING)
        if rk is _MISSING:
            rk = memo[right.uid] = key(right)
        return -1 if lk < rk else (1 if lk > rk else 0)

    return compare


class Reversed:
    """Orders values the other way round (a sort key for "last first").

    >>> sorted([1, 3, 2], key=Reversed)
    [3, 2, 1]

    .. versionadded:: 0.2
    """

    __slots__ = ("value",)

    def __init__(self, value: Any) -> None:
        self.value = value

    def __eq__(self, other: object) -> bool:
        return isinstance(other, Reversed) and bool(self.value == other.value)

    def __lt__(self, other: Reversed) -> bool:
        return bool(other.value < self.value)

    def __gt__(self, other: Reversed) -> bool:
        return bool(other.value > self.value)

    __hash__ = None  # type: ignore[assignment]


@final
class VictimQueue:
    """Victims popped in eviction order; made by :meth:`VictimOrder.queue`.

    The heap is built when it is first needed, with keys worked out once
    per victim (exact, as nothing changes before the first victim is
    taken); after the first pop it keeps its arrangement and compares live.
    :meth:`peek` before any pop finds the first victim without building the
    heap when the order is key-based.

    Runtime complexity: building O(n), ``pop`` O(log n) comparisons,
    ``peek`` O(n) before the heap is built, O(1) after.
    """

    __slots__ = ("_first", "_heap", "_items", "_live", "_order", "_parts", "_popped")

    def __init__(self, order: VictimOrder, items: list[TaskInfo]) -> None:
        self._order = order
        self._items = items
        self._heap: list[tuple[Any, int, TaskInfo]] | None = None
        self._popped = False
        self._live = False
        # After a first pop that did not build the heap: the victim taken and each victim's job part then.
        self._first: TaskInfo | None = None
        self._parts: list[Any] | None = None

    def _built(self) -> list[tuple[Any, int, TaskInfo]]:
        heap = self._heap
        if heap is None:
            order = self._order
            items = self._items
            parts = self._parts
            if parts is not None:
                heap = self._heap = self._rest(order, items, parts)
                return heap
            key_parts = order._key_parts(items)
            if key_parts is None:
                key = order._frozen_key(None)
                heap = [(key(item), count, item) for count, item in enumerate(items)]
            else:
                # Each victim's place in the frozen order stands for its key: the same comparisons,
                # so the same heap, without comparing keys in Python.
                ranks = _ranks(items, key_parts)
                heap = [(ranks[count], count, item) for count, item in enumerate(items)]
            heapq.heapify(heap)
            self._heap = heap
            _first_checked(order, items, heap[0][2] if heap else None)
        return heap

    def _rest(self, order: VictimOrder, items: list[TaskInfo], parts: list[Any]) -> list[tuple[Any, int, TaskInfo]]:
        """The heap as it stood after the first pop, from the job parts taken before it.

        The first victim is the smallest (rank -1); the others are ranked by
        ``(job part, task key)``, task keys being local (a task's key did not
        change when another task was evicted).
        """
        first = self._first
        task_key = order._ssn.task_key
        keyed = [((parts[i], task_key(item)), i) for i, item in enumerate(items) if item is not first]
        keyed.sort(key=_first_of, reverse=True)
        ranks = [-1] * len(items)
        for rank, (_, i) in enumerate(keyed):
            ranks[i] = rank
        heap = [(ranks[count], count, item) for count, item in enumerate(items)]
        heapq.heapify(heap)
        taken = heapq.heappop(heap)[2]
        assert taken is first
        self._parts = self._first = None
        return heap

    def peek(self) -> TaskInfo | None:
        """The victim :meth:`pop` would return next, without taking it; ``None`` when empty."""
        if self._heap is None and not self._popped:
            if not self._items:
                return None
            first = self._order._first_keyed(self._items)
            if first is not _MISSING:
                _first_checked(self._order, self._items, first)
                return first  # type: ignore[no-any-return]
        heap = self._built()
        return heap[0][2] if heap else None

    def pop(self) -> TaskInfo:
        """Remove and return the next victim; later comparisons see jobs and tasks as they are then.

        :raises IndexError: when the queue is empty.
        """
        if self._heap is None and not self._popped and self._items:
            order = self._order
            if order._ssn.task_keys_are_local:
                # The first victim without the heap: the heap is built on a second pop, from the
                # job parts of the keys as they were now (most queues are popped once).
                first, parts = order._first_and_parts(self._items)
                if first is not _MISSING and (parts is not None or len(self._items) == 1):
                    _first_checked(order, self._items, first)
                    self._popped = True
                    if parts is None:
                        self._heap = []
                    else:
                        self._first, self._parts = first, parts
                    return first  # type: ignore[no-any-return]
        heap = self._built()
        if self._popped and not self._live:
            # After the first pop, compare live; the heap keeps its arrangement. The keys are
            # exchanged only now, before the next comparison: most queues are popped once.
            self._live = True
            live = functools.cmp_to_key(self._order._comparison(frozen=False))
            heap = self._heap = [(live(other), count, other) for _, count, other in heap]
        self._popped = True
        return heapq.heappop(heap)[2]

    def __len__(self) -> int:
        if self._heap is None:
            return len(self._items) - (self._first is not None)
        return len(self._heap)

    def __bool__(self) -> bool:
        return len(self) > 0
