"""What sessions hand to the next one: kept node classes and resumed plugins equal a fresh build.

The random cycles of :mod:`test_incremental` run through one scheduler on an
incremental cache, so every session but a few follows the previous one
(:attr:`Session.delta`). After each cycle, the node classes the session
kept (carried over from earlier sessions and brought up to date) are
compared with classes grouped afresh from the session's nodes, and the
state of every plugin that resumed is compared with what
``on_session_open`` computes from scratch on the same snapshot.
"""

from __future__ import annotations

from collections.abc import Callable, Hashable
from typing import Any

import pytest
from test_incremental import CONF, CheckedCache, FirstTryFails, World, apply

from volcanolib import Scheduler, Session
from volcanolib.framework.nodeclass import NodeClasses, NodeClassPlan
from volcanolib.framework.placement import NodeChanges


def _plans(ssn: Session) -> list[NodeClassPlan]:
    """The durable node class plans of every task in the session, each once."""
    plans: dict[Hashable, NodeClassPlan] = {}
    for job in ssn.jobs.values():
        for task in job.tasks.values():
            plan = ssn.node_class_plan(task)
            if plan is not None and plan.durable:
                plans.setdefault(plan.token, plan)
    return list(plans.values())


def run(seed: int, cycles: int, check: Callable[[Session, Session | None], None]) -> int:
    """Random cycles through one scheduler; ``check(session, previous)`` after each; return how many resumed."""
    world = World(seed, 12)
    cache = CheckedCache(binder=FirstTryFails(), incremental_snapshots=True)
    now = [0.0]
    scheduler = Scheduler(cache, CONF, seed=seed, clock=lambda: now[0])
    for event in world.events:
        apply(cache, event)
    previous: Session | None = None
    resumed = 0
    for cycle in range(cycles):
        now[0] = float(cycle)
        cache.start_bound_tasks()
        cache.finish_evictions()
        for event in world.draw(cache):
            apply(cache, event)
        ssn = scheduler.run_once().session
        assert ssn is not None
        resumed += ssn.delta is not None
        check(ssn, previous)
        previous = ssn
    return resumed


@pytest.mark.parametrize("seed", range(6))
def test_kept_node_classes_equal_a_fresh_grouping(seed: int) -> None:
    carried = [0]

    def check(ssn: Session, previous: Session | None) -> None:
        kept = ssn.placement.node_classes()
        if kept is None:
            return
        if previous is not None and kept is previous.placement.node_classes():
            carried[0] += 1
        for plan in _plans(ssn):
            fresh = NodeClasses(NodeChanges(ssn.node_list, []))
            assert kept.classes(plan) == fresh.classes(plan), f"seed {seed}: kept classes differ for {plan.token}"
            # The same nodes, in the same order, as the session's.
            assert list(kept.nodes) == ssn.node_list

    resumed = run(seed, 40, check)
    assert resumed > 20
    # Classes were carried from session to session (the check is not between two fresh groupings).
    assert carried[0] > 10


def _state(plugin: Any) -> Any:
    """A plugin's comparable kept state (:meth:`kept_state`)."""
    return plugin.kept_state()
