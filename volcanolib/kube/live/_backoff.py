"""How long to wait before trying a server that did not answer again.

Short at first, so that a dropped connection is back within a fraction of
a second; doubling while the server stays away; never more than a cap
(about a second), so that once it is back the adapter notices within about
that long; each wait drawn between half and all of its step, so that
several clients (the reflectors of one scheduler, the replicas of several)
do not retry in step.
"""

from __future__ import annotations

import random
from collections import deque
from collections.abc import Callable
from typing import Final

__all__ = ["BACKOFF_CAP", "BACKOFF_FIRST", "Backoff"]

#: The first step and the longest, in seconds.
BACKOFF_FIRST: Final = 0.1
BACKOFF_CAP: Final = 1.0


class Backoff:
    """Successive waits between failed attempts: ``first``, doubling, at most ``cap``, each jittered.

    The ``n``-th wait after a success is drawn from ``[s/2, s]`` with
    ``s = min(cap, first * 2**n)``.

    :param first: the first step, in seconds.
    :param cap: the longest step, in seconds.
    :param rng: a uniform draw from ``[0, 1)``.
    """

    def __init__(
        self, first: float = BACKOFF_FIRST, cap: float = BACKOFF_CAP, rng: Callable[[], float] = random.random
    ) -> None:
        self.first = first
        self.cap = cap
        self._rng = rng
        self._failures = 0
        #: The last waits handed out (the most recent last), for logs and tests.
        self.history: deque[float] = deque(maxlen=64)

    def next(self) -> float:
        """The wait before the next attempt, after one more failure."""
        step = min(self.cap, self.first * float(2 ** min(self._failures, 32)))
        self._failures += 1
        wait = step * (0.5 + 0.5 * self._rng())
        self.history.append(wait)
        return wait

    def reset(self) -> None:
        """An attempt succeeded: the next failure waits ``first`` again."""
        self._failures = 0

    @property
    def failures(self) -> int:
        """Failures since the last success."""
        return self._failures
