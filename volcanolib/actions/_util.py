"""Helpers shared by the actions: the priority queue.

Nothing here is public API; the actions are the only callers.
"""

from __future__ import annotations

import heapq
import itertools
import logging
from collections.abc import Callable, Iterable
from typing import Any, Generic, TypeVar

__all__ = ["PriorityQueue"]

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


# ---------------------------------------------------------------------------- jobs, victims
