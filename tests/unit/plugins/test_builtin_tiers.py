"""The built-in plugins together, in Volcano's default tiers: how their victim lists combine."""

from __future__ import annotations

from volcanolib.testing import FakeCache, build_node, build_pod_group, build_task, open_session

CONF = """
actions: ""
tiers:
- plugins:
    - name: priority
    - name: gang
    - name: conformance
- plugins:
    - name: drf
"""


def cluster(preemptor_class: str = "") -> FakeCache:
    cache = FakeCache()
    cache.add_node(build_node("n1", cpu="10", memory="10Gi", pods=100))
    cache.add_priority_class("high", 10)
    cache.add_pod_group(build_pod_group("v", min_member=1))
    for i in range(3):
        cache.add_task(build_task(f"v-t-{i}", job="v", node="n1"))
    cache.add_task(build_task("v-sys-0", job="v", node="n1", priority_class_name="system-node-critical"))
    cache.add_pod_group(build_pod_group("p", min_member=1, priority_class_name=preemptor_class))
    cache.add_task(build_task("p-t-0", job="p"))
    return cache


def victims(ssn: object) -> list[str]:
    preemptor = ssn.jobs["default/p"].tasks["default-p-t-0"]  # type: ignore[attr-defined]
    candidates = sorted(ssn.nodes["n1"].tasks.values(), key=lambda t: t.name)  # type: ignore[attr-defined]
    return [t.name for t in ssn.preemptable(preemptor, candidates) or []]  # type: ignore[attr-defined]


def test_equal_priorities_leave_the_decision_to_drf() -> None:
    # priority answers [] (same job priority): tier 1 ends without victims, tier 2 (drf) decides alone.
    # drf: the preemptor job would hold 0.1; v drops to 0.3, 0.2, 0.1 (tie: victim), then 0.
    assert victims(open_session(cluster(), CONF)) == ["v-sys-0", "v-t-0", "v-t-1"]


def test_higher_priority_preemptor_gets_the_tier_one_intersection() -> None:
    # priority: all four; gang: v has 4 ready, min 1 -> the first three; conformance: not v-sys-0.
    assert victims(open_session(cluster("high"), CONF)) == ["v-t-0", "v-t-1"]
