"""The cyclic garbage collector is paused during a cycle and resumes after it."""

from __future__ import annotations

import gc

import pytest

from volcanolib.framework.session import Session
from volcanolib.scheduler import Scheduler
from volcanolib.testing import FakeCache, build_node

CONF = """
actions: "enqueue, allocate"
tiers:
- plugins:
  - name: gang
"""


@pytest.mark.parametrize("pause", [True, False])
def test_collector_state_during_and_after_a_cycle(pause: bool) -> None:
    cache = FakeCache()
    cache.add_node(build_node("n1"))
    seen: list[bool] = []

    def record(ssn: Session) -> None:
        seen.append(gc.isenabled())

    assert gc.isenabled()
    Scheduler(cache, CONF, pause_gc=pause).run_once(before_actions=record)
    assert seen == [not pause]
    assert gc.isenabled()


def test_a_disabled_collector_stays_disabled() -> None:
    gc.disable()
    try:
        Scheduler(FakeCache(), CONF).run_once()
        assert not gc.isenabled()
    finally:
        gc.enable()
