"""Helpers shared by the actions: priority queues, fit checks, victim handling.

Nothing here is public API; the actions are the only callers.
"""

from __future__ import annotations

import functools
import logging
from collections.abc import Callable, Iterable, Sequence
from typing import TYPE_CHECKING, Any, Final, TypeVar

from volcanolib.api.task import TaskInfo, TaskStatus
from volcanolib.errors import PluginError
from volcanolib.framework.queues import PriorityQueue

if TYPE_CHECKING:
    from volcanolib.api.job import JobInfo
    from volcanolib.api.node import NodeInfo
    from volcanolib.api.queue import QueueInfo
    from volcanolib.framework.session import Session
    from volcanolib.framework.statement import Statement

__all__ = [
    "PriorityQueue",
    "build_victims_queue",
    "discard_quietly",
    "merge_into",
    "unpipeline",
    "validate_victims",
]

log = logging.getLogger("volcanolib.actions")

T = TypeVar("T")


# ---------------------------------------------------------------------------- jobs, victims


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


def validate_victims(preemptor: TaskInfo, node: NodeInfo, victims: Sequence[TaskInfo]) -> bool:
    """Whether evicting all ``victims`` would let ``preemptor`` fit the node's future idle.

    An empty list is valid when the future idle alone already fits.
    """
    return node.fits_future_idle_without(preemptor.init_resreq, (victim.resreq for victim in victims))


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


def discard_quietly(ssn: Session, stmt: Statement, job: JobInfo | None = None) -> None:
    """Discard a statement, recording (not raising) a plugin failure during the undo."""
    try:
        stmt.discard()
    except PluginError as err:
        ssn.record_plugin_error(err, job)
