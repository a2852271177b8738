"""Sums over named parts, kept across sessions and brought up to date part by part.

A plugin that sums something over the whole cluster (a total per node, a
share per queue) keeps a :class:`PartSums`, or per queue a :class:`JobSums`,
puts every part when it opens afresh and only the changed parts when it
resumes; the sums say whether they are :attr:`~PartSums.exact` (then they
equal adding the current parts afresh, in any order). See
``docs/incremental.md``.

.. versionadded:: 0.2
"""

from __future__ import annotations

from collections.abc import Callable, Container, Hashable, Iterable, Mapping, Sequence
from typing import TYPE_CHECKING, Final, Generic, TypeVar, final

from volcanolib.api.resource import Resource

if TYPE_CHECKING:
    from volcanolib.api.job import JobInfo

__all__ = ["JobSums", "PartSums", "whole"]

K = TypeVar("K", bound=Hashable)
#: Whole numbers below this add exactly as floats, in any order.
_EXACT: Final = float(2**53)


def whole(value: float) -> bool:
    """Whether ``value`` is a whole number that floats add exactly, in any order."""
    return -_EXACT < value < _EXACT and value == int(value)


@final
class PartSums(Generic[K]):
    """A sum of resources over named parts (nodes, jobs), kept across sessions and updated part by part.

    A plugin that sums something over the whole cluster keeps one, puts
    every part at ``on_session_open`` and, at ``on_session_resume``, puts
    again only the parts the delta names. :attr:`total` then equals adding
    the current parts afresh, in any order, as long as :attr:`exact` holds:
    every amount put is a whole number (as cpu millicores, bytes and counts
    are) and so is the total, below 2**53, where float additions are exact.
    A scalar resource no part has is not in the total.

    Runtime complexity: ``put`` is O(dimensions of the old and new part).

    .. versionadded:: 0.2
    """

    __slots__ = ("_keys", "exact", "parts", "total")

    def __init__(self) -> None:
        #: The amount of each part, as put.
        self.parts: dict[K, Resource] = {}
        #: The sum of the parts.
        self.total = Resource()
        #: Whether :attr:`total` is exactly the sum of the parts in any order (see above).
        self.exact = True
        # How many parts name each scalar resource.
        self._keys: dict[str, int] = {}

    def put(self, part: K, amount: Resource | None) -> None:
        """Make ``amount`` the part's amount (``None``: drop the part); ``amount`` is kept, not copied."""
        # Written out (no Resource.add/sub calls): opening a session puts every node or job once.
        total = self.total
        old = self.parts.pop(part, None)
        if old is not None and amount is not None and self.exact and old.scalars.keys() == amount.scalars.keys():
            # The part changes amounts on the same dimensions (a node or job updated at resume): the
            # total moves by the differences. Exact sums do not depend on the order (see above).
            self.parts[part] = amount
            cpu = amount.milli_cpu
            memory = amount.memory
            total.milli_cpu += cpu - old.milli_cpu
            total.memory += memory - old.memory
            exact = not (cpu % 1 or memory % 1)
            if amount.scalars:
                scalars = total.scalars
                olds = old.scalars
                for name, value in amount.scalars.items():
                    scalars[name] += value - olds[name]
                    if value % 1 or not -_EXACT < scalars[name] < _EXACT:
                        exact = False
            if exact and not (-_EXACT < total.milli_cpu < _EXACT and -_EXACT < total.memory < _EXACT):
                exact = False
            self.exact = exact
            return
        if old is not None:
            total.milli_cpu -= old.milli_cpu
            total.memory -= old.memory
            if old.scalars:
                keys = self._keys
                scalars = total.scalars
                for name, value in old.scalars.items():
                    left = keys[name] - 1
                    if left:
                        keys[name] = left
                        scalars[name] -= value
                    else:
                        del keys[name]
                        del scalars[name]
        if amount is None:
            return
        self.parts[part] = amount
        cpu = amount.milli_cpu
        memory = amount.memory
        total.milli_cpu += cpu
        total.memory += memory
        exact = self.exact and not (cpu % 1 or memory % 1)
        if amount.scalars:
            keys = self._keys
            scalars = total.scalars
            for name, value in amount.scalars.items():
                keys[name] = keys.get(name, 0) + 1
                scalars[name] = scalars.get(name, 0) + value
                if value % 1 or not -_EXACT < scalars[name] < _EXACT:
                    exact = False
        # ``x % 1`` is NaN for infinities, which counts as not whole.
        if exact and not (-_EXACT < total.milli_cpu < _EXACT and -_EXACT < total.memory < _EXACT):
            exact = False
        self.exact = exact

    def put_all(self, parts: Iterable[tuple[K, Resource | None]]) -> None:
        """:meth:`put` each ``(part, amount)`` in order.

        Opening a session puts every node or job: into sums that hold no
        part yet, parts named once each are added in one loop.

        .. versionadded:: 0.2
        """
        if self.parts:
            for part, amount in parts:
                self.put(part, amount)
            return
        # Written out: what put does for a new part, with the total and the checks kept in locals.
        own = self.parts
        total = self.total
        keys = self._keys
        scalars = total.scalars
        total_cpu, total_memory = total.milli_cpu, total.memory
        exact = self.exact
        for part, amount in parts:
            if part in own:  # named again (dropped or changed): put, given the total so far
                total.milli_cpu, total.memory, self.exact = total_cpu, total_memory, exact
                self.put(part, amount)
                total_cpu, total_memory, exact = total.milli_cpu, total.memory, self.exact
                continue
            if amount is None:
                continue
            own[part] = amount
            cpu = amount.milli_cpu
            memory = amount.memory
            total_cpu += cpu
            total_memory += memory
            exact = exact and not (cpu % 1 or memory % 1)
            if amount.scalars:
                for name, value in amount.scalars.items():
                    keys[name] = keys.get(name, 0) + 1
                    scalars[name] = summed = scalars.get(name, 0) + value
                    if exact and (value % 1 or not -_EXACT < summed < _EXACT):
                        exact = False
            if exact and not (-_EXACT < total_cpu < _EXACT and -_EXACT < total_memory < _EXACT):
                exact = False
        total.milli_cpu, total.memory, self.exact = total_cpu, total_memory, exact


@final
class JobSums:
    """Per queue, sums over its jobs of one or more resources, kept across sessions and updated job by job.

    Each job gives one amount to each of its queue's :attr:`width` sums (its
    allocated and its requested resources, say), as a part named by its uid
    (see :class:`PartSums`): a session puts again only the jobs that changed.

    :param width: how many sums each queue has.

    .. versionadded:: 0.2
    """

    __slots__ = ("queue_of", "queues", "width")

    def __init__(self, width: int = 1) -> None:
        #: How many sums each queue has.
        self.width = width
        #: Per queue name: its sums over its jobs, :attr:`width` of them.
        self.queues: dict[str, tuple[PartSums[str], ...]] = {}
        #: The queue each job was put in, by job uid.
        self.queue_of: dict[str, str] = {}

    def _sums_of(self, queue: str) -> tuple[PartSums[str], ...]:
        sums = self.queues.get(queue)
        if sums is None:
            sums = self.queues[queue] = tuple(PartSums[str]() for _ in range(self.width))
        return sums

    def put(self, uid: str, queue: str | None, amounts: Sequence[Resource | None] | None) -> None:
        """Make ``amounts`` the job's parts of ``queue``'s sums, one per sum (``None``, either: drop the job)."""
        old = self.queue_of.pop(uid, None)
        if old is not None and (old != queue or amounts is None):
            for sums in self.queues[old]:
                sums.put(uid, None)
        if queue is None or amounts is None:
            return
        for sums, amount in zip(self._sums_of(queue), amounts, strict=True):
            sums.put(uid, amount)
        self.queue_of[uid] = queue

    def put_all(self, jobs: Iterable[tuple[str, str, Sequence[Resource | None]]]) -> None:
        """:meth:`put` each ``(uid, queue, amounts)`` in order, each job once (into empty sums, a queue's in one go)."""
        if self.queue_of:
            for uid, queue, amounts in jobs:
                self.put(uid, queue, amounts)
            return
        grouped: dict[str, tuple[list[tuple[str, Resource | None]], ...]] = {}
        queue_of = self.queue_of
        width = self.width
        for uid, queue, amounts in jobs:
            lists = grouped.get(queue)
            if lists is None:
                lists = grouped[queue] = tuple([] for _ in range(width))
            for puts, amount in zip(lists, amounts, strict=True):
                puts.append((uid, amount))
            queue_of[uid] = queue
        for queue, lists in grouped.items():
            for sums, puts in zip(self._sums_of(queue), lists, strict=True):
                sums.put_all(puts)

    def put_jobs(
        self,
        jobs: Iterable[JobInfo],
        queues: Container[str],
        amounts_of: Callable[[JobInfo], Sequence[Resource | None]],
    ) -> None:
        """:meth:`put_all` every job whose queue is in ``queues``, with ``amounts_of(job)``, in order."""
        self.put_all((job.uid, job.queue, amounts_of(job)) for job in jobs if job.queue in queues)

    def update_jobs(
        self,
        uids: Iterable[str],
        jobs: Mapping[str, JobInfo],
        queues: Container[str],
        amounts_of: Callable[[JobInfo], Sequence[Resource | None]],
    ) -> None:
        """Put the named jobs again: each with ``amounts_of(job)``, or dropped when gone from ``jobs`` or its queue."""
        for uid in uids:
            job = jobs.get(uid)
            if job is None or job.queue not in queues:
                self.put(uid, None, None)
            else:
                self.put(uid, job.queue, amounts_of(job))

    @classmethod
    def kept_or_afresh(
        cls,
        kept: JobSums | None,
        changed: Iterable[str] | None,
        jobs: Mapping[str, JobInfo],
        queues: Container[str],
        amounts_of: Callable[[JobInfo], Sequence[Resource | None]],
        *,
        width: int = 1,
    ) -> JobSums:
        """A session's sums: ``kept`` with the ``changed`` jobs put again, or (either ``None``) every job afresh.

        The open and the resume of a plugin summing per queue over its jobs
        are this one call: ``on_session_open`` passes ``None`` (and a resume
        that cannot trust what was kept, a queue having changed, does too),
        ``on_session_resume`` its kept sums and ``delta.jobs``.

        :param jobs: the session's jobs by uid, in session order.
        :param queues: the session's queues: a job of another queue is left out.
        :param amounts_of: a job's parts, one per sum.

        .. versionadded:: 0.2
        """
        if kept is None or changed is None:
            sums = cls(width)
            sums.put_jobs(jobs.values(), queues, amounts_of)
            return sums
        kept.update_jobs(changed, jobs, queues, amounts_of)
        return kept

    def totals(self, jobs: Iterable[JobInfo]) -> list[tuple[str, tuple[Resource, ...]]]:
        """Each queue holding a job, with its sums' totals, in the order of the queues' first job in ``jobs``.

        The totals are the sums' own objects: add them, do not change them.
        """
        wanted = {name for name, sums in self.queues.items() if any(part.parts for part in sums)}
        found: list[tuple[str, tuple[Resource, ...]]] = []
        seen: set[str] = set()
        for job in jobs:
            name = job.queue
            if name in wanted and name not in seen:
                seen.add(name)
                found.append((name, tuple(sums.total for sums in self.queues[name])))
                if len(seen) == len(wanted):
                    break
        return found

    @property
    def exact(self) -> bool:
        """Whether every total is exactly the sum of its jobs' parts, in any order (see :class:`PartSums`)."""
        return all(part.exact for sums in self.queues.values() for part in sums)
