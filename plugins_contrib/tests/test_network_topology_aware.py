"""network-topology-aware: HyperNode and node scores.

The HyperNode cases are converted from Volcano's
``pkg/scheduler/plugins/network-topology-aware/network_topology_aware_test.go``
(``TestNetworkTopologyAwareHyperNodeScore``), each named after its Go case.
"""

from __future__ import annotations

import random

import pytest
from volcanolib_contrib.network_topology_aware import NetworkTopologyAwarePlugin

from volcanolib import Scheduler
from volcanolib.api.hypernode import JOB_ALLOCATED_HYPER_NODE, HyperNode, HyperNodeMember, MemberType, NetworkTopology
from volcanolib.framework.config import parse_config
from volcanolib.framework.session import Session
from volcanolib.testing import FakeCache, build_node, build_pod_group, build_task, open_session


def _hyper(name: str, tier: int, members: list[str], kind: MemberType = MemberType.HYPER_NODE) -> HyperNode:
    return HyperNode(name, tier, tuple(HyperNodeMember(kind, exact=m) for m in members))


THREE_TIERS = [
    _hyper("s0", 3, ["s1", "s2"]),
    _hyper("s1", 2, ["s3", "s4"]),
    _hyper("s2", 2, ["s5", "s6"]),
    *[_hyper(f"s{i}", 1, [f"s{i}-n1", f"s{i}-n2"], MemberType.NODE) for i in (3, 4, 5, 6)],
]
TWO_TIERS = [
    _hyper("s0", 2, ["s1", "s2"]),
    *[_hyper(f"s{i}", 1, [f"s{i}-n1", f"s{i}-n2"], MemberType.NODE) for i in (1, 2)],
]
ONE_TIER = [_hyper(f"s{i}", 1, [f"s{i}-n1", f"s{i}-n2"], MemberType.NODE) for i in (1, 2)]


def _session(
    hyper_nodes: list[HyperNode],
    anchor: str,
    *,
    weight: int = 1,
    mode: str = "hard",
    placed: dict[str, str] | None = None,
) -> Session:
    cache = FakeCache()
    names = sorted({m.exact for hn in hyper_nodes for m in hn.members if m.type is MemberType.NODE})
    for name in names:
        cache.add_node(build_node(name, "8", "16Gi"))
    for hn in hyper_nodes:
        cache.add_hyper_node(hn)
    pg = build_pod_group("pg1", annotations={JOB_ALLOCATED_HYPER_NODE: anchor} if anchor else {})
    pg.network_topology = NetworkTopology(mode, 3)
    cache.add_pod_group(pg)
    for i, node in enumerate((placed or {}).values()):
        cache.add_task(build_task(f"run-{i}", job="pg1", node=node))
    cache.add_task(build_task("p0", job="pg1"))
    conf = f"actions: ''\ntiers:\n- plugins:\n  - name: network-topology-aware\n    arguments: {{weight: {weight}}}\n"
    return open_session(cache, conf)


def _plugin(ssn: Session) -> NetworkTopologyAwarePlugin:
    plugin = ssn.plugins["network-topology-aware"]
    assert isinstance(plugin, NetworkTopologyAwarePlugin)
    return plugin


def _scores(ssn: Session, names: list[str]) -> dict[str, float]:
    job = ssn.jobs["default/pg1"]
    tree = ssn.hyper_nodes
    return dict(_plugin(ssn).hyper_node_order(ssn, job, {n: tree.infos[n].nodes for n in names}))


def test_tasks_in_job_first_scheduler_score_all_hyper_nodes_zero() -> None:
    # Go case: "Tasks in job first scheduler, score all hyperNodes zero" (no anchor: no opinion).
    assert _scores(_session(THREE_TIERS, ""), ["s3", "s4", "s5"]) == {}


def test_score_hyper_nodes_by_lca_tier() -> None:
    # Go case: "... score hyperNodes according to LCA hyperNode tier of the hyperNode and jobAllocatedHyperNode".
    assert _scores(_session(THREE_TIERS, "s3"), ["s3", "s4", "s5"]) == {"s3": 100.0, "s4": 50.0, "s5": 0.0}


def test_score_with_two_tiers() -> None:
    # Go case: "... when hyperNodesInfo has two tier".
    assert _scores(_session(TWO_TIERS, "s1"), ["s1", "s2"]) == {"s1": 100.0, "s2": 0.0}


def test_score_with_one_tier() -> None:
    # Go case: "... when hyperNodesInfo has one tier": the anchor still scores 100, the rest 0.
    assert _scores(_session(ONE_TIER, "s1"), ["s1", "s2"]) == {"s1": 100.0, "s2": 0.0}


def test_no_common_ancestor_scores_zero() -> None:
    # Go case: "... score zero when the hyperNode has empty LCA hyperNode with jobAllocatedHyperNode".
    tree = [_hyper("s0", 3, ["s1"]), *THREE_TIERS[1:]]  # s2 has no parent: s5, s6 share no ancestor with s3
    assert _scores(_session(tree, "s3"), ["s5", "s6"]) == {"s5": 0.0, "s6": 0.0}


def test_task_count_breaks_ties_among_the_best() -> None:
    # Two tasks of the job run, both under s4; s3 and s4 tie on the tier score with anchor s1.
    ssn = _session(THREE_TIERS, "s1", placed={"a": "s4-n1", "b": "s4-n2"})
    scores = _scores(ssn, ["s3", "s4", "s5"])
    # tier score 50 for both (common ancestor s1, tier 2); s4 adds 100 * 2 of 3 tasks.
    assert scores["s3"] == pytest.approx(50.0)
    assert scores["s4"] == pytest.approx(50.0 + 100.0 * 2 / 3)
    assert scores["s5"] == 0.0


def test_weight_multiplies() -> None:
    assert _scores(_session(THREE_TIERS, "s3", weight=3), ["s3", "s4"]) == {"s3": 300.0, "s4": 150.0}


def test_node_scores_follow_the_soft_job_hint() -> None:
    ssn = _session(THREE_TIERS, "", mode="soft")
    task = ssn.jobs["default/pg1"].tasks["default-p0"]
    plugin = _plugin(ssn)
    nodes = [ssn.nodes[n] for n in ("s3-n1", "s4-n1", "s5-n1")]
    assert plugin.batch_node_order(ssn, task, nodes) == {}
    assert plugin.node_class_key(ssn, task) is not None
    ssn.hyper_node_hints["default/pg1"] = "s3"
    assert plugin.batch_node_order(ssn, task, nodes) == {"s3-n1": 100.0, "s4-n1": 50.0, "s5-n1": 0.0}
    key = plugin.node_class_key(ssn, task)
    assert not key.pointwise and key.key(ssn.nodes["s3-n1"]) == "s3"


CLASSES_CONF = """actions: allocate
configurations:
- name: allocate
  arguments: {{nodeClassesEnable: {classes}}}
tiers:
- plugins: [{{name: priority}}, {{name: gang}}]
- plugins: [{{name: predicates}}, {{name: nodeorder}}, {{name: binpack}}, {{name: network-topology-aware}}]
"""


@pytest.mark.parametrize("seed", range(4))
def test_node_classes_decide_as_every_node_for_soft_jobs(seed: int) -> None:
    results = []
    for classes in ("true", "false"):
        rng = random.Random(seed)
        cache = FakeCache()
        for r in range(4):
            for n in range(rng.choice((2, 3))):
                cache.add_node(build_node(f"r{r}-n{n}", str(rng.choice((8, 16))), "64Gi"))
            cache.add_hyper_node(HyperNode(f"rack{r}", 1, (HyperNodeMember(MemberType.NODE, regex=f"^r{r}-"),)))
        cache.add_hyper_node(_hyper("spine0", 2, ["rack0", "rack1"]))
        cache.add_hyper_node(_hyper("spine1", 2, ["rack2", "rack3"]))
        for j in range(6):
            pg = build_pod_group(f"j{j}", min_member=rng.choice((1, 2)))
            pg.network_topology = NetworkTopology("soft", 2)
            cache.add_pod_group(pg)
            for t in range(rng.choice((2, 3, 4))):
                cache.add_task(build_task(f"j{j}-{t}", job=f"j{j}", cpu=str(rng.choice((2, 4, 6))), memory="1Gi"))
        Scheduler(cache, parse_config(CLASSES_CONF.format(classes=classes)), seed=seed).run_once()
        results.append(dict(cache.bound))
    assert results[0] == results[1]
    assert len(results[0]) > 6


ALLOCATE_CONF = """actions: allocate
tiers:
- plugins: [{name: gang}, {name: predicates}, {name: network-topology-aware}]
"""


@pytest.mark.parametrize(("with_plugin", "expected"), [(True, {"s4"}), (False, {"s4", "s5", "s6"})])
def test_hard_job_goes_to_the_hyper_node_closest_to_its_tasks(with_plugin: bool, expected: set[str]) -> None:
    # The job's first task runs under s3 (full now); its second may go to s4, s5 or s6 (tier 1, allowed up to
    # tier 3). network-topology-aware scores s4 (common ancestor s1, tier 2) above s5 and s6 (s0, tier 3).
    chosen = set()
    for seed in range(6):
        cache = FakeCache()
        for name in sorted({m.exact for hn in THREE_TIERS for m in hn.members if m.type is MemberType.NODE}):
            cache.add_node(build_node(name, "4", "16Gi"))
        for hn in THREE_TIERS:
            cache.add_hyper_node(hn)
        pg = build_pod_group("pg1", min_member=1, annotations={JOB_ALLOCATED_HYPER_NODE: "s3"})
        pg.network_topology = NetworkTopology("hard", 3)
        cache.add_pod_group(pg)
        cache.add_task(build_task("run-0", job="pg1", cpu="4", node="s3-n1"))
        cache.add_task(build_task("run-1", job="pg1", cpu="4", node="s3-n2"))
        cache.add_task(build_task("p0", job="pg1", cpu="4"))
        conf = ALLOCATE_CONF if with_plugin else ALLOCATE_CONF.replace(", {name: network-topology-aware}", "")
        Scheduler(cache, parse_config(conf), seed=seed).run_once()
        node = cache.bound["default/p0"]
        chosen.add(node.split("-")[0])
        job = next(j for j in cache.jobs() if j.uid == "default/pg1")
        # The annotation becomes the common ancestor of the job's old and new HyperNodes.
        common = {"s4": "s1", "s5": "s0", "s6": "s0"}[node.split("-")[0]]
        assert job.pod_group.annotations[JOB_ALLOCATED_HYPER_NODE] == common
    assert chosen == expected
