"""HyperNodes: the tree over a session's nodes, loading from manifests, the allocated-HyperNode annotation."""

from __future__ import annotations

from typing import Any, ClassVar

import pytest

from volcanolib import Registry, Scheduler
from volcanolib.actions.allocate import Allocate
from volcanolib.api.hypernode import (
    CLUSTER_TOP,
    JOB_ALLOCATED_HYPER_NODE,
    HyperNode,
    HyperNodeMember,
    HyperNodeTree,
    LabelRequirement,
    MemberType,
    NetworkTopology,
)
from volcanolib.api.node import NodeInfo
from volcanolib.api.task import TaskInfo
from volcanolib.errors import ManifestError
from volcanolib.framework.queues import PriorityQueue
from volcanolib.framework.registry import hookimpl
from volcanolib.framework.session import Session
from volcanolib.framework.status import Status
from volcanolib.kube.loader import ManifestLoader
from volcanolib.testing import FakeCache, build_node, build_pod_group, build_task, open_session

NODE, HYPER = MemberType.NODE, MemberType.HYPER_NODE


def _nodes():  # type: ignore[no-untyped-def]
    return [
        build_node("a-0", labels={"rack": "a"}),
        build_node("a-1", labels={"rack": "a", "gpu": "yes"}),
        build_node("b-0", labels={"rack": "b"}),
        build_node("xb-1", labels={"rack": "b"}),
    ]


def test_members_by_exact_name_regex_and_labels() -> None:
    tree = HyperNodeTree(
        [
            HyperNode("exact", 1, (HyperNodeMember(NODE, exact="a-0"),)),
            # Go's MatchString: a match anywhere in the name.
            HyperNode("regex", 1, (HyperNodeMember(NODE, regex="b-"),)),
            HyperNode(
                "labels",
                1,
                (
                    HyperNodeMember(
                        NODE,
                        match_labels={"rack": "a"},
                        match_expressions=(LabelRequirement("gpu", "NotIn", ("no",)),),
                    ),
                ),
            ),
            HyperNode("exists", 1, (HyperNodeMember(NODE, match_expressions=(LabelRequirement("gpu", "Exists"),)),)),
            HyperNode("empty", 1, (HyperNodeMember(NODE),)),
        ],
        _nodes(),
    )
    assert sorted(tree.infos[CLUSTER_TOP].node_names) == ["a-0", "a-1", "b-0", "xb-1"]
    assert {n: sorted(i.node_names) for n, i in tree.infos.items() if n != CLUSTER_TOP} == {
        "exact": ["a-0"],
        "regex": ["b-0", "xb-1"],
        "labels": ["a-0", "a-1"],
        "exists": ["a-1"],
        "empty": [],
    }


def test_tree_parents_tiers_and_common_ancestors() -> None:
    tree = HyperNodeTree(
        [
            HyperNode("top", 3, (HyperNodeMember(HYPER, exact="left"), HyperNodeMember(HYPER, exact="right"))),
            HyperNode("left", 2, (HyperNodeMember(HYPER, exact="ra"), HyperNodeMember(HYPER, exact="ghost"))),
            HyperNode("right", 2, (HyperNodeMember(HYPER, exact="rb"),)),
            HyperNode("ra", 1, (HyperNodeMember(NODE, regex="^a-"),)),
            HyperNode("rb", 1, (HyperNodeMember(NODE, match_labels={"rack": "b"}),)),
            HyperNode("alone", 1, (HyperNodeMember(NODE, exact="b-0"),)),
        ],
        _nodes(),
    )
    # The virtual cluster top is one tier above the highest, over every HyperNode without a parent.
    assert tree.tiers == [1, 2, 3, 4]
    assert tree.by_tier[1] == ["alone", "ra", "rb"]
    assert tree.by_tier[4] == [CLUSTER_TOP]
    assert len(tree) == 6 and tree
    assert [n.name for n in tree.infos["top"].nodes] == ["a-0", "a-1", "b-0", "xb-1"]
    assert tree.ancestors("ra") == ["ra", "left", "top", CLUSTER_TOP]
    assert tree.lowest_common_ancestor("ra", "rb") == "top"
    assert tree.lowest_common_ancestor("ra", "left") == "left"
    assert tree.lowest_common_ancestor("ra", "ra") == "ra"
    assert tree.lowest_common_ancestor("ra", "alone") == CLUSTER_TOP
    assert tree.lowest_common_ancestor("ra", "nothing") is None
    assert (tree.join("", "ra"), tree.join("ra", ""), tree.join("ra", "rb")) == ("ra", "ra", "top")
    # b-0 is in "alone" and "rb", both tier 1: the first by name.
    assert tree.hyper_node_of("b-0") == "alone"
    assert tree.hyper_node_of("a-1") == "ra"
    assert tree.hyper_node_of("nowhere") is None
    # Within the allowed tier: ra's highest ancestor of tier 2 or less is "left"; none for tier 0.
    assert (tree.highest_allowed("ra", 2), tree.highest_allowed("ra", 0)) == ("left", None)


def test_only_the_lowest_tier_in_use_places_a_node() -> None:
    """Volcano's FindHyperNodeForNode: a node no tier-1 HyperNode spans has no HyperNode, even under a tier 2."""
    tree = HyperNodeTree(
        [
            HyperNode("rack", 1, (HyperNodeMember(NODE, exact="a-0"),)),
            HyperNode("spine", 2, (HyperNodeMember(HYPER, exact="rack"), HyperNodeMember(NODE, exact="b-0"))),
        ],
        _nodes(),
    )
    assert (tree.hyper_node_of("a-0"), tree.hyper_node_of("b-0")) == ("rack", None)


def test_without_hyper_nodes_the_cluster_top_spans_the_ready_nodes_at_tier_1() -> None:
    tree = HyperNodeTree([], _nodes())
    assert not tree and tree.tiers == [1] and tree.top.name == CLUSTER_TOP
    assert tree.hyper_node_of("a-0") == CLUSTER_TOP


def test_a_session_drops_a_stale_allocated_hyper_node_and_recovers_a_missing_one() -> None:
    """Volcano's session open: removeInvalidAllocatedHyperNode, then recoverAllocatedHyperNode."""
    cache = FakeCache()
    for name in ("a-0", "a-1", "b-0"):
        cache.add_node(build_node(name))
    cache.add_hyper_node(HyperNode("ra", 1, (HyperNodeMember(NODE, regex="^a-"),)))
    cache.add_hyper_node(HyperNode("rb", 1, (HyperNodeMember(NODE, regex="^b-"),)))
    cache.add_hyper_node(
        HyperNode("spine", 2, (HyperNodeMember(HYPER, exact="ra"), HyperNodeMember(HYPER, exact="rb")))
    )
    topology = NetworkTopology("soft", 2)
    jobs = {
        "gone": ("ghost", "a-0", topology),  # names no HyperNode: dropped, then recovered from its task
        "idle": ("ra", "", topology),  # no task placed: dropped
        "missing": ("", "a-1", topology),  # recovered: the lowest-tier HyperNode spanning its node
        "spread": ("", "b-0", topology),  # with the task below on a-0: the two meet at spine
        "plain": ("", "a-0", None),  # no topology: nothing recovered
    }
    for name, (recorded, node, topo) in jobs.items():
        pg = build_pod_group(name, annotations={JOB_ALLOCATED_HYPER_NODE: recorded} if recorded else {})
        pg.network_topology = topo
        cache.add_pod_group(pg)
        cache.add_task(build_task(f"{name}-0", job=name, node=node))
    cache.add_task(build_task("spread-1", job="spread", node="a-0"))
    ssn = open_session(cache, "actions: ''\ntiers: []\n")
    got = {name: ssn.jobs[f"default/{name}"].pod_group.annotations.get(JOB_ALLOCATED_HYPER_NODE, "") for name in jobs}
    assert got == {"gone": "ra", "idle": "", "missing": "ra", "spread": "spine", "plain": ""}
    ssn.close()
    # Written back like the PodGroup status.
    assert {j.name: j.pod_group.annotations.get(JOB_ALLOCATED_HYPER_NODE, "") for j in cache.jobs()} == got


HYPERNODES = """
apiVersion: v1
kind: List
items:
- apiVersion: v1
  kind: Node
  metadata: {name: n0, labels: {rack: a}}
  status: {allocatable: {cpu: '4', memory: 8Gi, pods: '10'}}
- {apiVersion: v1, kind: Node, metadata: {name: n1}, status: {allocatable: {cpu: '4', memory: 8Gi, pods: '10'}}}
- apiVersion: topology.volcano.sh/v1alpha1
  kind: HyperNode
  metadata: {name: s0}
  spec:
    tier: 1
    members:
    - {type: Node, selector: {labelMatch: {matchExpressions: [{key: rack, operator: In, values: [a]}]}}}
    - {type: Node, selector: {exactMatch: {name: n9}}}
- apiVersion: topology.volcano.sh/v1alpha1
  kind: HyperNode
  metadata: {name: s1}
  spec:
    tier: 2
    members:
    - {type: HyperNode, selector: {exactMatch: {name: s0}}}
    - {type: HyperNode, selector: {exactMatch: {name: s7}}}
- apiVersion: scheduling.volcano.sh/v1beta1
  kind: PodGroup
  metadata: {name: pg, namespace: default}
  spec: {minMember: 1, networkTopology: {mode: soft, highestTierAllowed: 2}}
- apiVersion: batch.volcano.sh/v1alpha1
  kind: Job
  metadata: {name: vj, namespace: default}
  spec:
    minAvailable: 1
    networkTopology: {mode: hard}
    tasks: [{name: w, replicas: 1, template: {spec: {containers: [{name: c, resources: {requests: {cpu: '1'}}}]}}}]
"""


def test_loader_reads_hyper_nodes_and_network_topology() -> None:
    loader = ManifestLoader()
    loader.add_text(HYPERNODES, source="cluster.yaml")
    cluster = loader.load()
    assert [hn.name for hn in cluster.hyper_nodes] == ["s0", "s1"]
    assert "HyperNode s0: member node 'n9' does not exist" in cluster.warnings
    assert "HyperNode s1: member HyperNode 's7' does not exist" in cluster.warnings
    groups = {pg.name: pg for pg in cluster.pod_groups}
    assert groups["pg"].network_topology == NetworkTopology("soft", 2)
    assert groups["vj"].network_topology == NetworkTopology("hard", 1)
    snapshot = cluster.to_cache().snapshot()
    assert sorted(snapshot.hyper_nodes.infos["s1"].node_names) == ["n0"]


@pytest.mark.parametrize(
    ("spec", "message"),
    [
        ("{members: []}", "missing required field: spec.tier"),
        ("{tier: 1, members: [{type: Rack, selector: {exactMatch: {name: a}}}]}", "spec.members[0].type"),
        ("{tier: 1, members: [{type: Node, selector: {}}]}", "expected exactly one of exactMatch"),
        ("{tier: 1, members: [{type: HyperNode, selector: {regexMatch: {pattern: a}}}]}", "named with exactMatch"),
        ("{tier: 1, members: [{type: Node, selector: {regexMatch: {pattern: '('}}}]}", "invalid regular expression"),
        (
            "{tier: 1, members: [{type: Node, selector: {labelMatch: {matchExpressions: [{key: a, operator: Gt}]}}}]}",
            "unknown operator 'Gt'",
        ),
    ],
)
def test_bad_hyper_nodes_name_the_object_and_field(spec: str, message: str) -> None:
    loader = ManifestLoader()
    loader.add_text(
        f"apiVersion: topology.volcano.sh/v1alpha1\nkind: HyperNode\nmetadata: {{name: s0}}\nspec: {spec}\n",
        source="hn.yaml",
    )
    with pytest.raises(ManifestError, match=r"hn\.yaml") as info:
        loader.load()
    assert message in str(info.value)
    assert "HyperNode s0" in str(info.value) or "s0" in str(info.value)


def test_bad_network_topology_mode_is_refused() -> None:
    loader = ManifestLoader()
    loader.add_text(
        "apiVersion: scheduling.volcano.sh/v1beta1\nkind: PodGroup\nmetadata: {name: pg}\n"
        "spec: {networkTopology: {mode: strict}}\n",
        source="pg.yaml",
    )
    with pytest.raises(ManifestError, match=r"spec\.networkTopology\.mode"):
        loader.load()


def test_allocated_hyper_node_is_written_back_to_the_cache() -> None:
    cache = FakeCache()
    cache.add_node(build_node("n0"))
    cache.add_hyper_node(HyperNode("s0", 1, (HyperNodeMember(NODE, exact="n0"),)))
    pg = build_pod_group("j")
    pg.network_topology = NetworkTopology("hard", 1)
    cache.add_pod_group(pg)
    cache.add_task(build_task("j-0", job="j"))
    ssn = open_session(cache, "actions: allocate\ntiers:\n- plugins:\n  - name: gang\n")
    Allocate(Allocate.Arguments()).execute(ssn)
    ssn.close()
    assert cache.bound == {"default/j-0": "n0"}
    # Without a plugin grouping HyperNodes (network-topology-aware's gradient), the job is searched under the
    # cluster top alone, and that is the HyperNode its tasks share.
    assert cache.jobs()[0].pod_group.annotations[JOB_ALLOCATED_HYPER_NODE] == CLUSTER_TOP
    # The next snapshot carries it.
    assert cache.snapshot().jobs["default/j"].pod_group.annotations[JOB_ALLOCATED_HYPER_NODE] == CLUSTER_TOP


def test_priority_queue_clone_and_replace_are_independent() -> None:
    queue = PriorityQueue[int](lambda x: x, [3, 1, 2])
    copy = queue.clone()
    assert copy.pop() == 1
    assert len(queue) == 3
    queue.replace(copy)
    copy.push(0)
    assert [queue.pop() for _ in range(len(queue))] == [2, 3]


class FailsOnSecondRack:
    """A predicate that raises on a node of the second rack that already holds a task."""

    name: ClassVar[str] = "fails-on-b"

    def __init__(self, arguments: Any) -> None:
        pass

    @hookimpl
    def predicate(self, ssn: Session, task: TaskInfo, node: NodeInfo) -> Status:
        if node.name.startswith("b-") and node.tasks:
            raise RuntimeError("broken")
        return Status.success()


def test_a_plugin_failure_in_a_hyper_node_trial_leaves_the_job_as_it_was() -> None:
    cache = FakeCache()
    # Rack a cannot take both tasks; rack b can, but its predicate fails once the first task is placed there.
    cache.add_node(build_node("a-0", "1", "4Gi"))
    cache.add_node(build_node("b-0", "2", "4Gi"))
    cache.add_hyper_node(HyperNode("ra", 1, (HyperNodeMember(NODE, regex="^a-"),)))
    cache.add_hyper_node(HyperNode("rb", 1, (HyperNodeMember(NODE, regex="^b-"),)))
    pg = build_pod_group("j", min_member=2)
    pg.network_topology = NetworkTopology("hard", 1)
    cache.add_pod_group(pg)
    cache.add_task(build_task("j-0", job="j", cpu="1"))
    cache.add_task(build_task("j-1", job="j", cpu="1"))
    conf = "actions: allocate\ntiers:\n- plugins:\n  - name: gang\n  - name: fails-on-b\n"
    result = Scheduler(cache, conf, registry=Registry(plugins={"fails-on-b": FailsOnSecondRack})).run_once()
    assert cache.bound == {}
    assert [err.plugin for err in result.session.plugin_errors] == ["fails-on-b"]
    assert all(node.used.milli_cpu == 0 for node in result.session.node_list)


def test_without_hyper_nodes_hard_and_soft_jobs_are_placed_under_the_cluster_top() -> None:
    """Volcano v1.14: without HyperNodes the cluster top is tier 1, within any allowed tier (v1.12 placed none)."""
    cache = FakeCache()
    cache.add_node(build_node("n0"))
    for name, mode in (("hard", "hard"), ("soft", "soft")):
        pg = build_pod_group(name)
        pg.network_topology = NetworkTopology(mode, 1)
        cache.add_pod_group(pg)
        cache.add_task(build_task(f"{name}-0", job=name))
    Scheduler(cache, "actions: allocate\ntiers:\n- plugins:\n  - name: gang\n").run_once()
    assert cache.bound == {"default/soft-0": "n0", "default/hard-0": "n0"}
    assert {j.name: j.pod_group.annotations[JOB_ALLOCATED_HYPER_NODE] for j in cache.jobs()} == {
        "hard": CLUSTER_TOP,
        "soft": CLUSTER_TOP,
    }
