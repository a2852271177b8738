"""network-topology-aware: HyperNode gradients, HyperNode and node scores, as Volcano v1.14.1 computes them.

Most cases are converted from Volcano v1.14.1's
``pkg/scheduler/plugins/network-topology-aware/network_topology_aware_test.go``
and named after their Go case; each states the v1.14.1 rule it pins. The
session's tree has the virtual cluster top one tier above the highest
HyperNode, and its tier counts among the tiers in use: that is why a common
ancestor at the highest real tier no longer scores 0. The Go expectations
are rounded to one decimal, hence the tolerance.
"""

from __future__ import annotations

import random

import pytest
from volcanolib_contrib.network_topology_aware import NetworkTopologyAwarePlugin

from volcanolib import Scheduler
from volcanolib.api.hypernode import (
    CLUSTER_TOP,
    JOB_ALLOCATED_HYPER_NODE,
    HyperNode,
    HyperNodeMember,
    MemberType,
    NetworkTopology,
)
from volcanolib.api.resource import Resource
from volcanolib.api.task import TaskStatus
from volcanolib.framework.config import parse_config
from volcanolib.framework.session import Session
from volcanolib.testing import FakeCache, build_node, build_pod_group, build_task, open_session

GO_TOLERANCE = 0.1


def _hyper(name: str, tier: int, members: list[str], kind: MemberType = MemberType.HYPER_NODE) -> HyperNode:
    return HyperNode(name, tier, tuple(HyperNodeMember(kind, exact=m) for m in members))


def _racks(*names: str) -> list[HyperNode]:
    return [_hyper(name, 1, [f"{name}-n1", f"{name}-n2"], MemberType.NODE) for name in names]


#: s0 (tier 3) over s1 and s2 (tier 2), over s3, s4 and s5, s6 (tier 1), two nodes each; the cluster top is tier 4.
THREE_TIERS = [_hyper("s0", 3, ["s1", "s2"]), _hyper("s1", 2, ["s3", "s4"]), _hyper("s2", 2, ["s5", "s6"])]
THREE_TIERS += _racks("s3", "s4", "s5", "s6")
TWO_TIERS = [_hyper("s0", 2, ["s1", "s2"]), *_racks("s1", "s2")]
ONE_TIER = _racks("s1", "s2")


def _session(
    hyper_nodes: list[HyperNode],
    *,
    arguments: str = "{}",
    topology: NetworkTopology | None = None,
    placed: dict[str, str] | None = None,
    pending: int = 1,
    cpu: dict[str, str] | None = None,
    memory: dict[str, str] | None = None,
    task_cpu: str = "2",
    task_memory: str = "4G",
    anchor: str = "",
) -> Session:
    cache = FakeCache()
    names = sorted({m.exact for hn in hyper_nodes for m in hn.members if m.type is MemberType.NODE})
    for name in names:
        rack = name.split("-")[0]
        cache.add_node(build_node(name, (cpu or {}).get(rack, "2"), (memory or {}).get(rack, "4G"), pods=10))
    for hn in hyper_nodes:
        cache.add_hyper_node(hn)
    pg = build_pod_group("pg1", min_member=1, annotations={JOB_ALLOCATED_HYPER_NODE: anchor} if anchor else {})
    pg.network_topology = topology
    cache.add_pod_group(pg)
    for i, node in enumerate((placed or {}).values()):
        cache.add_task(build_task(f"p{i}", job="pg1", node=node, cpu=task_cpu, memory=task_memory))
    for i in range(pending):
        cache.add_task(build_task(f"new{i}", job="pg1", cpu=task_cpu, memory=task_memory))
    conf = f"actions: ''\ntiers:\n- plugins:\n  - name: network-topology-aware\n    arguments: {arguments}\n"
    return open_session(cache, conf)


def _plugin(ssn: Session) -> NetworkTopologyAwarePlugin:
    plugin = ssn.plugins["network-topology-aware"]
    assert isinstance(plugin, NetworkTopologyAwarePlugin)
    return plugin


def _node_scores(ssn: Session, nodes: list[str], hint: str = "") -> dict[str, float]:
    job = ssn.jobs["default/pg1"]
    task = next(t for t in job.tasks.values() if t.name.startswith("new"))
    if hint:
        ssn.hyper_node_hints[job.uid] = hint  # what allocate sets while it places the job
    return dict(_plugin(ssn).batch_node_order(ssn, task, [ssn.nodes[n] for n in nodes]))


def _close(got: dict[str, float], expected: dict[str, float]) -> None:
    assert set(got) == set(expected)
    for name, value in expected.items():
        assert got[name] == pytest.approx(value, abs=GO_TOLERANCE), name


HARD = NetworkTopology("hard", 3)

# ---------------------------------------------------------------------- node scores of a job with a topology


def test_tasks_in_job_first_scheduler_score_all_nodes_zero() -> None:
    """Go: "Tasks in job first scheduler, score all nodes zero". Rule: no anchor yet, no node score."""
    assert _node_scores(_session(THREE_TIERS, topology=HARD), ["s3-n1", "s4-n1", "s5-n1"]) == {}


def test_score_nodes_according_to_node_hyper_node_lca_tier() -> None:
    """Go: "Tasks in job rescheduled, score nodes according to node hypernode LCA hyperNode tier".

    Rule: the node's lowest-tier HyperNode is compared with the anchor s3: s3 itself scores 1, s4
    (common ancestor s1, tier 2) (4 - 2) / (4 - 1), s5 (s0, tier 3) (4 - 3) / (4 - 1), the cluster
    top being tier 4. This is the hard mode, which volcanolib (as v1.12) left unscored.
    """
    ssn = _session(THREE_TIERS, topology=HARD, placed={"a": "s3-n1", "b": "s3-n2"})
    _close(_node_scores(ssn, ["s3-n1", "s4-n1", "s5-n1"], "s3"), {"s3-n1": 100.0, "s4-n1": 66.6, "s5-n1": 33.3})


def test_score_zero_when_the_only_common_ancestor_is_the_cluster_top() -> None:
    """Go: "... score zero when the hyperNode of node has empty LCA hyperNode with jobAllocatedHyperNode".

    Rule: s2 has no parent, so s5 and s6 meet s3 only at the cluster top, the highest tier: 0.
    """
    tree = [_hyper("s0", 3, ["s1"]), *THREE_TIERS[1:]]
    ssn = _session(tree, topology=HARD, placed={"a": "s3-n1", "b": "s3-n2"})
    _close(_node_scores(ssn, ["s5-n1", "s6-n1"], "s3"), {"s5-n1": 0.0, "s6-n1": 0.0})


def test_score_with_two_tiers() -> None:
    """Go: "... when hyperNodesInfo has two tier". Rule: the tier-2 ancestor s0 scores (3 - 2) / (3 - 1)."""
    ssn = _session(TWO_TIERS, topology=HARD, placed={"a": "s1-n1"})
    _close(_node_scores(ssn, ["s1-n1", "s2-n1"], "s1"), {"s1-n1": 100.0, "s2-n1": 50.0})


def test_score_with_one_tier() -> None:
    """Go: "... when hyperNodesInfo has one tier". Rule: s2 meets s1 at the cluster top (tier 2 of 1..2): 0."""
    ssn = _session(ONE_TIER, topology=HARD, placed={"a": "s1-n1"})
    _close(_node_scores(ssn, ["s1-n1", "s2-n1"], "s1"), {"s1-n1": 100.0, "s2-n1": 0.0})


def test_weight_multiplies() -> None:
    """Go: "... with plugin weight 2". Rule: every score times 100 times ``weight``."""
    ssn = _session(THREE_TIERS, arguments="{weight: 2}", topology=HARD, placed={"a": "s3-n1", "b": "s3-n2"})
    _close(_node_scores(ssn, ["s3-n1", "s4-n1", "s5-n1"], "s3"), {"s3-n1": 200.0, "s4-n1": 133.3, "s5-n1": 66.6})


def test_task_share_breaks_ties_among_the_best_nodes() -> None:
    """Go: "... task num of the hyperNode when there are at least two hyperNodes have max hyperNode tier score".

    Rule: s3-n1 and s4-n1 tie at (4 - 2) / 3 against the anchor s1; each adds the share of the
    job's four tasks under its HyperNode: 2/4 under s3, 1/4 under s4.
    """
    placed = {"a": "s3-n1", "b": "s3-n2", "c": "s4-n1"}
    ssn = _session(THREE_TIERS, topology=HARD, placed=placed)
    _close(_node_scores(ssn, ["s3-n1", "s4-n1", "s5-n1"], "s1"), {"s3-n1": 116.6, "s4-n1": 91.6, "s5-n1": 33.3})


def test_soft_and_hard_score_alike() -> None:
    """Go: "score nodes for tasks with network topology" (there a sub-group's; here the PodGroup's)."""
    cpu = {"s3": "2", "s4": "4", "s5": "2", "s6": "4"}
    memory = {"s3": "4G", "s4": "4G", "s5": "8G", "s6": "8G"}
    expected = {"s3-n1": 66.7, "s3-n2": 66.7, "s4-n1": 116.7, "s4-n2": 116.7}
    expected |= {"s5-n1": 33.3, "s5-n2": 33.3, "s6-n1": 33.3, "s6-n2": 33.3}
    nodes = sorted(expected)
    for mode in ("hard", "soft"):
        ssn = _session(THREE_TIERS, topology=NetworkTopology(mode, 2), placed={"a": "s4-n1"}, cpu=cpu, memory=memory)
        _close(_node_scores(ssn, nodes, "s1"), expected)


# ---------------------------------------------------------------------- node scores of other jobs


GO_CPU = {"s3": "2", "s4": "4", "s5": "2", "s6": "4"}
GO_MEMORY = {"s3": "4G", "s4": "4G", "s5": "8G", "s6": "8G"}
ALL_NODES = [f"s{r}-n{i}" for r in (3, 4, 5, 6) for i in (1, 2)]


def test_no_score_for_other_pods_when_switched_off() -> None:
    """Go: "score empty nodes for single task with no network topology and no hypernode-level binpacking"."""
    ssn = _session(THREE_TIERS, arguments="{hypernode.binpack.normal-pod.enable: false}", cpu=GO_CPU, memory=GO_MEMORY)
    assert _node_scores(ssn, ALL_NODES) == {}


def test_other_pods_score_by_the_binpack_of_every_tier() -> None:
    """Go: "score empty nodes for single task with no network topology and default plugin arguments".

    Rule: per tier 1 to 4 (the cluster top included), the binpack score of the HyperNode of that tier
    spanning the node, weighted by 0.8 ** (tier - 1), averaged: racks that the task fills more win.
    """
    ssn = _session(THREE_TIERS, cpu=GO_CPU, memory=GO_MEMORY)
    expected = {"s3": 25.8, "s4": 21.6, "s5": 19.9, "s6": 15.7}
    _close(_node_scores(ssn, ALL_NODES), {node: expected[node[:2]] for node in ALL_NODES})


CUSTOM = (
    "{weight: 10, hypernode.binpack.cpu: 1, hypernode.binpack.memory: 4, "
    "hypernode.binpack.resources: 'nvidia.com/gpu, example.com/foo', "
    "hypernode.binpack.resources.nvidia.com/gpu: 2, hypernode.binpack.resources.example.com/foo: 3, "
    "hypernode.binpack.normal-pod.enable: true, hypernode.binpack.normal-pod.fading: 0}"
)


def _custom_session(placed: dict[str, str] | None = None) -> Session:
    cache = FakeCache()
    for rack in ("s3", "s4", "s5", "s6"):
        foo = "8" if rack in ("s3", "s4") else "16"
        for i in (1, 2):
            cache.add_node(
                build_node(f"{rack}-n{i}", GO_CPU[rack], GO_MEMORY[rack], pods=10, scalars={"example.com/foo": foo})
            )
    for hn in THREE_TIERS:
        cache.add_hyper_node(hn)
    cache.add_pod_group(build_pod_group("pg1", min_member=1))
    for i, node in enumerate((placed or {}).values()):
        cache.add_task(
            build_task(f"p{i}", job="pg1", node=node, cpu="2", memory="4G", scalars={"example.com/foo": "8"})
        )
    cache.add_task(build_task("new0", job="pg1", cpu="2", memory="4G", scalars={"example.com/foo": "8"}))
    conf = f"actions: ''\ntiers:\n- plugins:\n  - name: network-topology-aware\n    arguments: {CUSTOM}\n"
    return open_session(cache, conf)


def test_other_pods_with_customized_arguments() -> None:
    """Go: "score empty nodes for single task with no network topology and customized plugin arguments".

    Rule: fading 0 leaves tier 1 alone (0 ** 0 = 1); cpu 1, memory 4 and example.com/foo 3 weigh the
    resources the task requests; nvidia.com/gpu, not requested, does not count.
    """
    expected = {"s3": 500.0, "s4": 468.75, "s5": 281.3, "s6": 250.0}
    _close(_node_scores(_custom_session(), ALL_NODES), {node: expected[node[:2]] for node in ALL_NODES})


def test_other_pods_score_zero_on_a_hyper_node_they_would_overflow() -> None:
    """Go: "score non-empty nodes for single task with no network topology and customized plugin arguments"."""
    expected = {"s3": 0.0, "s4": 468.8, "s5": 281.3, "s6": 250.0}
    ssn = _custom_session(placed={"a": "s3-n1", "b": "s3-n2"})
    _close(_node_scores(ssn, ALL_NODES), {node: expected[node[:2]] for node in ALL_NODES})


# ---------------------------------------------------------------------- HyperNode scores and gradients


def test_hyper_nodes_score_by_how_full_the_job_leaves_them() -> None:
    """Go: "score hypernodes for a subjob with default plugin arguments" (there a sub-job; here the job).

    Rule: the weighted mean of (used + the job's requests) / allocatable over cpu and memory; a
    HyperNode that cannot hold the requests scores 0; the cluster top scores as s0.
    """
    cpu = {"s3": "2", "s4": "4", "s5": "2", "s6": "4"}
    memory = {"s3": "4G", "s4": "4G", "s5": "8G", "s6": "8G"}
    ssn = _session(THREE_TIERS, cpu=cpu, memory=memory, pending=2, task_cpu="4", task_memory="4G")
    job = ssn.jobs["default/pg1"]
    tree = ssn.hyper_nodes
    scores = _plugin(ssn).hyper_node_order(ssn, job, {name: info.nodes for name, info in tree.infos.items()})
    expected = {"s0": 25.0, "s1": 58.3, "s2": 45.8, "s3": 0.0, "s4": 100.0, "s5": 0.0, "s6": 75.0, CLUSTER_TOP: 25.0}
    _close(dict(scores), expected)


def _gradient_session(*, placed: dict[str, str] | None = None, anchor: str = "", highest: int = 2) -> Session:
    return _session(THREE_TIERS, topology=NetworkTopology("hard", highest), placed=placed, anchor=anchor)


def test_gradient_lists_the_allowed_hyper_nodes_by_tier() -> None:
    """Rule: from the cluster top down, one group per tier up to ``highestTierAllowed``, lowest tier first."""
    ssn = _gradient_session()
    groups = _plugin(ssn).hyper_node_gradient(ssn, ssn.jobs["default/pg1"], ssn.hyper_nodes.top)
    assert groups == [["s3", "s4", "s5", "s6"], ["s1", "s2"]]


def test_gradient_of_a_placed_job_stays_under_its_highest_allowed_ancestor() -> None:
    """Rule: a job placed under s3 searches under s1 (s3's highest ancestor within tier 2), resources unchecked."""
    ssn = _gradient_session(placed={"a": "s3-n1", "b": "s3-n2"}, anchor="s3")
    groups = _plugin(ssn).hyper_node_gradient(ssn, ssn.jobs["default/pg1"], ssn.hyper_nodes.top)
    assert groups == [["s3", "s4"], ["s1"]]


def test_gradient_is_empty_for_a_job_placed_above_its_allowed_tier() -> None:
    """Rule: a job placed under s1 (tier 2) with highestTierAllowed 1 has no allowed ancestor: no HyperNode."""
    ssn = _gradient_session(placed={"a": "s3-n1", "b": "s4-n1"}, anchor="s1", highest=1)
    assert _plugin(ssn).hyper_node_gradient(ssn, ssn.jobs["default/pg1"], ssn.hyper_nodes.top) == []


@pytest.mark.parametrize(
    ("status", "kept"),
    [
        (None, True),  # Go: "Job - idle sufficient, futureIdle sufficient"
        (TaskStatus.RELEASING, True),  # "Job - idle insufficient, futureIdle sufficient"
        (TaskStatus.RUNNING, False),  # "Job - idle insufficient, futureIdle insufficient"
    ],
)
def test_gradient_leaves_out_hyper_nodes_that_cannot_hold_min_resources(status: TaskStatus | None, kept: bool) -> None:
    """Go: ``TestHyperNodeGradientPreFiltering``. Rule: a HyperNode stays when the job's minResources fit its
    idle or its future idle (idle + releasing - pipelined) resources, summed over its nodes."""
    cache = FakeCache()
    for name in ALL_NODES:
        cache.add_node(build_node(name, "4", "16Gi"))
    for hn in THREE_TIERS:
        cache.add_hyper_node(hn)
    pg = build_pod_group("pg1", min_member=1)
    pg.network_topology = NetworkTopology("hard", 2)
    pg.min_resources = Resource.from_list({"cpu": "6", "memory": "4Gi"})
    cache.add_pod_group(pg)
    cache.add_task(build_task("new0", job="pg1", cpu="6"))
    if status is not None:  # another job holds half of s3 (8 cpus), running or being released
        cache.add_pod_group(build_pod_group("other"))
        cache.add_task(build_task("o-0", job="other", cpu="4", node="s3-n1", status=status))
    ssn = open_session(cache, "actions: ''\ntiers:\n- plugins:\n  - name: network-topology-aware\n")
    groups = _plugin(ssn).hyper_node_gradient(ssn, ssn.jobs["default/pg1"], ssn.hyper_nodes.top)
    assert ("s3" in groups[0]) is kept
    assert {"s4", "s5", "s6"} <= set(groups[0])


# ---------------------------------------------------------------------- allocate with the plugin


ALLOCATE_CONF = """actions: allocate
tiers:
- plugins: [{name: gang}, {name: predicates}, {name: network-topology-aware}]
"""


@pytest.mark.parametrize(("with_plugin", "expected"), [(True, {"s4"}), (False, {"s4", "s5", "s6"})])
def test_hard_job_goes_to_the_hyper_node_closest_to_its_tasks(with_plugin: bool, expected: set[str]) -> None:
    """Rule: the job's tasks run under s3 (full now); within highestTierAllowed 2 the gradient is s3 and s4
    under s1, so the new task goes to s4. Without the plugin there is no gradient: the cluster top alone,
    any node with room. The recorded HyperNode becomes the common ancestor of the old and the chosen one."""
    chosen = set()
    for seed in range(6):
        cache = FakeCache()
        for name in sorted({m.exact for hn in THREE_TIERS for m in hn.members if m.type is MemberType.NODE}):
            cache.add_node(build_node(name, "4", "16Gi"))
        for hn in THREE_TIERS:
            cache.add_hyper_node(hn)
        pg = build_pod_group("pg1", min_member=1, annotations={JOB_ALLOCATED_HYPER_NODE: "s3"})
        pg.network_topology = NetworkTopology("hard", 2)
        cache.add_pod_group(pg)
        cache.add_task(build_task("run-0", job="pg1", cpu="4", node="s3-n1"))
        cache.add_task(build_task("run-1", job="pg1", cpu="4", node="s3-n2"))
        cache.add_task(build_task("p0", job="pg1", cpu="4"))
        conf = ALLOCATE_CONF if with_plugin else ALLOCATE_CONF.replace(", {name: network-topology-aware}", "")
        Scheduler(cache, parse_config(conf), seed=seed).run_once()
        node = cache.bound["default/p0"]
        chosen.add(node.split("-")[0])
        job = next(j for j in cache.jobs() if j.uid == "default/pg1")
        common = "s1" if with_plugin else CLUSTER_TOP
        assert job.pod_group.annotations[JOB_ALLOCATED_HYPER_NODE] == common
    assert chosen == expected


CLASSES_CONF = """actions: allocate
configurations:
- name: allocate
  arguments: {{nodeClassesEnable: {classes}}}
tiers:
- plugins: [{{name: priority}}, {{name: gang}}]
- plugins: [{{name: predicates}}, {{name: nodeorder}}, {{name: binpack}}, {{name: network-topology-aware}}]
"""


@pytest.mark.parametrize("seed", range(4))
@pytest.mark.parametrize("mode", ["soft", "hard", None])
def test_node_classes_decide_as_every_node(seed: int, mode: str | None) -> None:
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
            pg.network_topology = NetworkTopology(mode, 2) if mode is not None else None
            cache.add_pod_group(pg)
            for t in range(rng.choice((2, 3, 4))):
                cache.add_task(build_task(f"j{j}-{t}", job=f"j{j}", cpu=str(rng.choice((2, 4, 6))), memory="1Gi"))
        Scheduler(cache, parse_config(CLASSES_CONF.format(classes=classes)), seed=seed).run_once()
        results.append(dict(cache.bound))
    assert results[0] == results[1]
    assert len(results[0]) > 6
