"""The waits of the live adapter: the back-off between failed attempts, the binder's pause after a 429."""

from __future__ import annotations

import pytest

from volcanolib.kube.live._backoff import Backoff
from volcanolib.kube.live._binder import RETRY_AFTER_MAX, Throttle


@pytest.mark.parametrize("draw", [0.0, 0.999999])
def test_the_back_off_starts_short_doubles_and_stays_under_a_second(draw: float) -> None:
    backoff = Backoff(rng=lambda: draw)
    waits = [backoff.next() for _ in range(40)]
    steps = [0.1, 0.2, 0.4, 0.8] + [1.0] * 36
    for wait, step in zip(waits, steps, strict=True):
        assert step / 2 <= wait <= step
    assert backoff.failures == 40
    backoff.reset()
    assert backoff.next() <= 0.1


def test_a_throttle_makes_every_waiter_wait_out_the_longest_pause() -> None:
    now = [10.0]
    slept: list[float] = []

    def sleep(seconds: float) -> None:
        slept.append(seconds)
        now[0] += seconds

    throttle = Throttle(clock=lambda: now[0], sleep=sleep, rng=lambda: 0.0)
    throttle.wait()
    assert slept == []  # no pause: no wait
    assert throttle.pause(3.0) == 3.0
    assert throttle.pause(1.0) == 1.0  # a shorter one does not cut the first short
    assert throttle.remaining() == 3.0
    throttle.wait()
    assert slept == [3.0] and now[0] == 13.0
    assert throttle.pause(None) == 1.0  # no Retry-After: a second
    assert throttle.pause(3600.0) == RETRY_AFTER_MAX
    assert throttle.refusals == 4
