"""Priority queues for actions: queues in queue order, their jobs in job order, the jobs' tasks in task order.

Every action walks the session the same way: the queues by the plugins'
queue order, in each queue its jobs by job order, in each job some of its
tasks by task order. :func:`job_queues` builds those three levels in one
pass over the session's jobs, keeping the jobs a filter selects::

    from volcanolib.framework.queues import job_queues

    def pending_tasks(job):
        if not ssn.job_schedulable(job):
            return None  # the job takes no part
        return [t for t in job.tasks_in(TaskStatus.PENDING) if not t.best_effort]

    order = job_queues(ssn, pending_tasks)
    while order.queues:
        queue = order.queues.pop()
        jobs = order.jobs[queue.name]
        ...

How the levels are visited (one job per queue turn, every job of a queue,
pushing a queue back) is the action's choice, so the structure is plain
:class:`PriorityQueue` objects the action pops and pushes.

The queues are rebuilt in every session; like every priority queue here they
take an item's key when it is pushed, so an item whose order changes is
popped, changed and pushed again.
"""

from __future__ import annotations

import heapq
import itertools
from collections.abc import Callable, Iterable
from typing import TYPE_CHECKING, Any, Generic, TypeVar, final

import attrs

from volcanolib.api.job import JobInfo
from volcanolib.api.queue import QueueInfo
from volcanolib.api.task import TaskInfo
from volcanolib.errors import PluginError

if TYPE_CHECKING:
    from volcanolib.framework.session import Session

__all__ = ["JobQueues", "PriorityQueue", "TaskSelector", "job_queues"]

T = TypeVar("T")

#: For :func:`job_queues`: a job's tasks to queue, or ``None`` to leave the job out.
TaskSelector = Callable[[JobInfo], Iterable[TaskInfo] | None]


class PriorityQueue(Generic[T]):
    """A binary heap ordered by a key taken when an item is pushed.

    The key is computed once per push, so an item whose order changes must
    be popped, changed and pushed again (never changed while queued). Items
    with equal keys come out in push order, which keeps runs reproducible.
    A key made with :func:`functools.cmp_to_key` compares live, like
    Volcano's comparator-based queue.

    Runtime complexity: ``push`` and ``pop`` are O(log n); building from
    ``items`` is O(n).

    >>> q = PriorityQueue[str](len)
    >>> for word in ("ccc", "a", "bb", "b"):
    ...     q.push(word)
    >>> [q.pop() for _ in range(len(q))]
    ['a', 'b', 'bb', 'ccc']

    :param key: the sort key (smallest first); the session's ``queue_key``,
        ``job_key`` and ``task_key`` give the plugins' orders.
    :param items: the first items, pushed in their order.
    """

    __slots__ = ("_counter", "_heap", "_key")

    def __init__(self, key: Callable[[T], Any], items: Iterable[T] = ()) -> None:
        self._key = key
        self._counter = counter = itertools.count()
        self._heap: list[tuple[Any, int, T]] = []
        if items:  # an empty tuple or list (a job selected without tasks) costs nothing more
            self._heap = [(key(item), next(counter), item) for item in items]
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

    def clone(self) -> PriorityQueue[T]:
        """A queue with the same items and keys, changed independently of this one.

        .. versionadded:: 0.2
        """
        copy = PriorityQueue(self._key)
        copy._heap = list(self._heap)
        copy._counter = itertools.count(next(self._counter))
        return copy

    def replace(self, other: PriorityQueue[T]) -> None:
        """Take ``other``'s items (and keys) in place of this queue's own.

        .. versionadded:: 0.2
        """
        self._heap = list(other._heap)
        self._counter = itertools.count(next(other._counter))

    def __len__(self) -> int:
        return len(self._heap)

    def __bool__(self) -> bool:
        return bool(self._heap)


@final
@attrs.define(eq=False)
class JobQueues:
    """What :func:`job_queues` returns: three levels of priority queues.

    A queue is in :attr:`queues` when at least one of its jobs was selected;
    each selected job is in its queue's entry of :attr:`jobs` and has an
    entry, possibly empty, in :attr:`tasks`.
    """

    #: The queues, in queue order.
    queues: PriorityQueue[QueueInfo]
    #: Per queue name: its selected jobs, in job order.
    jobs: dict[str, PriorityQueue[JobInfo]]
    #: Per job uid: the tasks the selector gave, in task order.
    tasks: dict[str, PriorityQueue[TaskInfo]]

    def drain(self) -> list[TaskInfo]:
        """Pop every queue, job and task: the tasks queue by queue, job by job, in order.

        Every key is read before the list is returned, so placing the tasks
        afterwards does not change their order. The queues are empty afterwards.
        """
        ordered: list[TaskInfo] = []
        queues, jobs_by_queue, tasks_by_job = self.queues, self.jobs, self.tasks
        while queues:
            jobs = jobs_by_queue[queues.pop().name]
            while jobs:
                tasks = tasks_by_job[jobs.pop().uid]
                while tasks:
                    ordered.append(tasks.pop())
        return ordered


def job_queues(ssn: Session, select: TaskSelector, among: Iterable[JobInfo] | None = None) -> JobQueues:
    """Order the jobs ``select`` keeps, by queue, job and task order.

    ``select`` is called once for each job of ``among`` (by default every job
    of the session), in the session's order, inside :meth:`Session.guard` (a plugin failing in it is recorded
    against the job, which is left out). It returns the job's tasks to queue
    (an empty iterable keeps the job with no task), or ``None`` to leave the
    job out. A job whose queue is not in the session is left out after
    ``select`` was called. Keys are taken with the session's ``queue_key``,
    ``job_key`` and ``task_key``, once per item, as a hand-written loop
    would.

    Runtime complexity: O(j log j + t log t) for j selected jobs and t queued tasks.

    :param ssn: the open session.
    :param select: the job filter, giving the tasks to queue.
    :param among: the jobs to consider, in the session's order: the session's
        :meth:`~volcanolib.framework.session.Session.unsettled_jobs` when
        ``select`` keeps no settled job.
    :returns: the queues, jobs and tasks, none of them popped yet.
    """
    queues: PriorityQueue[QueueInfo] = PriorityQueue(ssn.queue_key)
    jobs_by_queue: dict[str, PriorityQueue[JobInfo]] = {}
    tasks_by_job: dict[str, PriorityQueue[TaskInfo]] = {}
    session_queues = ssn.queues
    job_key, task_key = ssn.job_key, ssn.task_key
    for job in ssn.jobs.values() if among is None else among:
        # What ssn.guard(job) does, without a context manager per job.
        try:
            tasks = select(job)
            if tasks is None:
                continue
            queue = session_queues.get(job.queue)
            if queue is None:
                continue
            tasks_by_job[job.uid] = PriorityQueue(task_key, tasks)
            jobs = jobs_by_queue.get(queue.name)
            if jobs is None:
                jobs = jobs_by_queue[queue.name] = PriorityQueue(job_key)
                queues.push(queue)
            jobs.push(job)
        except PluginError as err:
            ssn.record_plugin_error(err, job)
    return JobQueues(queues, jobs_by_queue, tasks_by_job)
