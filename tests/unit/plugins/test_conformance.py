"""conformance: system-critical pods and kube-system pods are never victims."""

from __future__ import annotations

from volcanolib.testing import FakeCache, build_node, build_pod_group, build_task, open_session

ONLY = """
actions: ""
tiers:
- plugins:
    - name: conformance
"""

THEN_PRIORITY = """
actions: ""
tiers:
- plugins:
    - name: conformance
- plugins:
    - name: priority
"""


def cluster() -> FakeCache:
    cache = FakeCache()
    cache.add_node(build_node("n1", cpu="8", memory="16Gi"))
    for ns in ("default", "kube-system"):
        cache.add_pod_group(build_pod_group("low", namespace=ns, min_member=1))
    cache.add_pod_group(build_pod_group("high", min_member=1, priority_class_name="high"))
    cache.add_priority_class("high", 100)
    cache.add_task(build_task("low-a-0", job="low", node="n1"))
    cache.add_task(build_task("low-b-0", job="low", node="n1", priority_class_name="system-cluster-critical"))
    cache.add_task(build_task("low-c-0", job="low", node="n1", priority_class_name="system-node-critical"))
    cache.add_task(build_task("low-d-0", job="low", node="n1", priority_class_name="high"))
    cache.add_task(build_task("low-e-0", job="low", namespace="kube-system", node="n1"))
    cache.add_task(build_task("high-p-0", job="high"))
    return cache


def names(tasks: object) -> list[str] | None:
    return None if tasks is None else [t.name for t in tasks]  # type: ignore[attr-defined]


def test_critical_and_kube_system_pods_are_filtered_in_order() -> None:
    ssn = open_session(cluster(), ONLY)
    preemptor = ssn.jobs["default/high"].tasks["default-high-p-0"]
    candidates = sorted(ssn.nodes["n1"].tasks.values(), key=lambda t: t.name)
    assert names(ssn.preemptable(preemptor, candidates)) == ["low-a-0", "low-d-0"]
    assert names(ssn.reclaimable(preemptor, list(reversed(candidates)))) == ["low-d-0", "low-a-0"]


def test_all_critical_ends_the_tier_and_the_next_tier_decides() -> None:
    ssn = open_session(cluster(), ONLY)
    preemptor = ssn.jobs["default/high"].tasks["default-high-p-0"]
    critical = [t for t in ssn.nodes["n1"].tasks.values() if t.name in ("low-b-0", "low-c-0", "low-e-0")]
    assert ssn.plugins["conformance"].preemptable(ssn, preemptor, critical) == []
    assert ssn.preemptable(preemptor, critical) is None
    # An empty list ends tier 1 with no victims; tier 2 (priority) then decides on its own.
    ssn2 = open_session(cluster(), THEN_PRIORITY)
    preemptor2 = ssn2.jobs["default/high"].tasks["default-high-p-0"]
    critical2 = [t for t in ssn2.nodes["n1"].tasks.values() if t.name in ("low-b-0", "low-c-0")]
    assert names(ssn2.preemptable(preemptor2, critical2)) == ["low-b-0", "low-c-0"]
