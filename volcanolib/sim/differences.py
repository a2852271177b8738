"""The documented differences between volcanolib and the Volcano release it follows.

Each entry is one deliberate difference, measured with the oracle: what it
is, why volcanolib differs, which scenarios of tests/scenarios/ pin it (their
``volcano`` block holds Volcano's outcome, their ``expect`` block ours), and
a test of whether a scenario touches it, so that ``volcanolib diff`` can name
the reason of a difference it finds. docs/differences.md explains each one;
a test keeps the two in step.
"""

from __future__ import annotations

from collections.abc import Callable
from typing import Final

import attrs

from volcanolib.sim.runner import Scenario

__all__ = ["KNOWN_DIFFERENCES", "KnownDifference", "reasons_for"]


@attrs.frozen
class KnownDifference:
    """One deliberate difference from the Volcano release volcanolib follows."""

    #: Its name, also the anchor of its section in docs/differences.md.
    key: str
    #: What differs, in one line.
    summary: str
    #: Why volcanolib differs.
    reason: str
    #: Scenario files (under tests/scenarios/) that show both outcomes.
    scenarios: tuple[str, ...]
    #: Whether a scenario touches it (by its configuration and objects).
    applies: Callable[[Scenario], bool] = attrs.field(repr=False)


def _plugins(scenario: Scenario) -> set[str]:
    return {option.name for option in scenario.config.plugin_options()}


def _uses(*, plugin: str | None = None, action: str | None = None) -> Callable[[Scenario], bool]:
    def applies(scenario: Scenario) -> bool:
        return (plugin is None or plugin in _plugins(scenario)) and (
            action is None or action in scenario.config.actions
        )

    return applies


def _topology_aware_preempt(scenario: Scenario) -> bool:
    if "preempt" not in scenario.config.actions:
        return False
    arguments = scenario.config.action_arguments("preempt")
    return bool(arguments.get("enableTopologyAwarePreemption"))


KNOWN_DIFFERENCES: Final[tuple[KnownDifference, ...]] = (
    KnownDifference(
        key="capacity-reclaim-checks",
        summary="capacity reclaims only within the reclaiming queue's capability and its ancestors' deserved",
        reason=(
            "volcanolib follows two fixes of Volcano's main branch made after v1.14.1: v1.14.1 lets a queue "
            "reclaim beyond its own capability and checks only the leaf queue of a victim, not its ancestors"
        ),
        scenarios=(
            "capacity-no-reclaim-over-capability.yaml",
            "capacity-ancestor-reclaim-level2-grandparent-fails.yaml",
        ),
        applies=_uses(plugin="capacity", action="reclaim"),
    ),
    KnownDifference(
        key="preempt-node-evictions-undone",
        summary="preempt undoes the evictions on a node where the preemptor still does not fit",
        reason=(
            "volcanolib follows a fix of Volcano's main branch made after v1.14.1: v1.14.1 keeps them in the "
            "job's statement and commits them with the evictions of the node where the job is pipelined"
        ),
        scenarios=("random-preempt-evictions-kept-on-a-failed-node.yaml",),
        applies=_uses(action="preempt"),
    ),
    KnownDifference(
        key="preempt-within-job-every-queue",
        summary="preempt serves queues in queue order and runs within-job preemption for each queue's own jobs "
        "after that queue's turn",
        reason=(
            "volcanolib follows a fix of Volcano's main branch made after v1.14.1: v1.14.1 visits the queues in "
            "Go map order and after each one runs within-job preemption for the starving jobs of every queue, "
            "rebuilding their lists of preemptors, so a job of a queue not yet visited places what fits without "
            "evicting and has no preemptor left for its own queue's turn"
        ),
        scenarios=("random-preempt-within-job-after-every-queue.yaml",),
        applies=_uses(action="preempt"),
    ),
    KnownDifference(
        key="preempt-topology-aware",
        summary="topology-aware preemption evicts nothing on a node where no set of victims lets the preemptor fit: "
        "its queue, the node's resources and every predicate",
        reason=(
            "volcanolib's dry run re-runs every predicate, the queue check and the resource check after each "
            "tentative eviction and keeps a node only when they all pass; Volcano's re-checks only resources, the "
            "queue and inter-pod affinity while it removes victims, and once all are gone only the predicates it "
            "simulates, so it evicts a victim on a node whose host port stays taken, or for a preemptor its queue "
            "cannot take"
        ),
        scenarios=("preempt-topology-aware-host-port-stays.yaml", "random-preempt-topology-queue-never-fits.yaml"),
        applies=_topology_aware_preempt,
    ),
    KnownDifference(
        key="deviceshare-over-subscribed-card",
        summary="deviceshare offers no card whose pods already hold more memory than the card has",
        reason=(
            "volcanolib follows Volcano's main branch after v1.14.1; in v1.14.1 the idle memory of an "
            "over-subscribed card wraps around as an unsigned number and the card looks nearly empty"
        ),
        scenarios=("deviceshare-over-subscribed-card-not-offered.yaml",),
        applies=_uses(plugin="deviceshare"),
    ),
)


def reasons_for(scenario: Scenario) -> list[KnownDifference]:
    """The documented differences a scenario touches."""
    return [d for d in KNOWN_DIFFERENCES if d.applies(scenario)]
