"""binpack: node scores by the current Volcano formula, per node and in batch."""

from __future__ import annotations

import pytest

from volcanolib.api.task import TaskStatus
from volcanolib.testing import FakeCache, build_node, build_pod_group, build_task, open_session

GPU = "nvidia.com/gpu"


def conf(arguments: str = "") -> str:
    args = f"\n      arguments: {{{arguments}}}" if arguments else ""
    return f"""
actions: ""
tiers:
- plugins:
    - name: binpack{args}
"""


WEIGHTED = (
    f"binpack.weight: 2, binpack.cpu: 3, binpack.memory: 1, binpack.resources: '{GPU}', binpack.resources.{GPU}: 5"
)


def cluster() -> FakeCache:
    cache = FakeCache()
    cache.add_node(build_node("n1", cpu="4", memory="8Gi", scalars={GPU: "4"}))
    cache.add_node(build_node("n2", cpu="8", memory="16Gi"))
    cache.add_node(build_node("n3", cpu="2", memory="4Gi", scalars={GPU: "8"}))
    cache.add_pod_group(build_pod_group("pg", min_member=1))
    cache.add_task(build_task("pg-used-0", job="pg", cpu="1", memory="2Gi", scalars={GPU: "1"}, node="n1"))
    cache.add_task(build_task("pg-used-1", job="pg", cpu="1500m", memory="0", node="n3"))
    cache.add_task(build_task("pg-new-0", job="pg", cpu="1", memory="2Gi", scalars={GPU: "2"}))
    return cache


def test_scores_match_the_formula_by_hand_with_custom_weights() -> None:
    ssn = open_session(cluster(), conf(WEIGHTED))
    task = ssn.jobs["default/pg"].tasks["default-pg-new-0"]
    scores = ssn.node_scores(task, ssn.node_list)
    # n1: cpu (1+1)/4*3 = 1.5, memory (2+2)/8*1 = 0.5, gpu (1+2)/4*5 = 3.75; weights 3+1+5.
    assert scores["n1"] == pytest.approx(5.75 / 9 * 100 * 2)
    # n2 has no gpu: that resource scores 0 but its weight still counts.
    assert scores["n2"] == pytest.approx((1 / 8 * 3 + 2 / 16) / 9 * 100 * 2)
    # n3: cpu 1.5 used + 1 requested > 2 allocatable: the whole node scores 0.
    assert scores["n3"] == 0.0


def test_batch_and_per_node_scores_agree() -> None:
    ssn = open_session(cluster(), conf(WEIGHTED))
    plugin = ssn.plugins["binpack"]
    for task in ssn.jobs["default/pg"].tasks.values():
        batch = plugin.batch_node_order(ssn, task, ssn.node_list)
        single = {n.name: plugin.node_order(ssn, task, n) for n in ssn.node_list}
        assert batch == single
    assert any(v > 0 for v in batch.values())


def test_head_scores_from_volcano_test_case() -> None:
    # Volcano's binpack TestNode, case 1 (weights 1/1/1, gpu 23), current release.
    cache = FakeCache()
    cache.add_node(build_node("n1", cpu="2", memory="4Gi", pods=10))
    cache.add_node(build_node("n2", cpu="4", memory="16Gi", pods=10, scalars={GPU: "4"}))
    cache.add_node(build_node("n3", cpu="2", memory="4Gi", pods=10, scalars={"example.com/foo": "16"}))
    cache.add_pod_group(build_pod_group("pg1", namespace="c1", min_member=0))
    add = cache.add_task
    add(build_task("p1", job="pg1", namespace="c1", cpu="1", memory="1Gi", node="n1", status=TaskStatus.BOUND))
    add(build_task("p2", job="pg1", namespace="c1", cpu="1.5", memory="0", node="n3", status=TaskStatus.BOUND))
    add(build_task("p3", job="pg1", namespace="c1", cpu="2", memory="10Gi", scalars={GPU: "2"}))
    add(build_task("p4", job="pg1", namespace="c1", cpu="3", memory="4Gi", scalars={"example.com/foo": "3"}))
    args = (
        f"binpack.weight: 1, binpack.cpu: 1, binpack.memory: 1, binpack.resources: {GPU}, binpack.resources.{GPU}: 23"
    )
    ssn = open_session(cache, conf(args))
    tasks = {t.name: t for t in ssn.jobs["c1/pg1"].tasks.values()}
    expected = {
        "p1": {"n1": 75, "n2": 15.625, "n3": 0},
        "p2": {"n1": 0, "n2": 37.5, "n3": 0},
        "p3": {"n1": 0, "n2": 50.5, "n3": 0},
        "p4": {"n1": 0, "n2": 50, "n3": 0},
    }
    for name, per_node in expected.items():
        scores = ssn.node_scores(tasks[name], ssn.node_list)
        assert scores == pytest.approx(per_node, abs=1e-8), name


def test_weight_zero_scores_nothing() -> None:
    ssn = open_session(cluster(), conf("binpack.weight: 0"))
    task = ssn.jobs["default/pg"].tasks["default-pg-new-0"]
    assert ssn.node_scores(task, ssn.node_list) == {"n1": 0.0, "n2": 0.0, "n3": 0.0}
    assert ssn.plugins["binpack"].node_order(ssn, task, ssn.nodes["n1"]) == 0.0


def test_negative_weights_mean_one_and_cpu_keeps_its_own_argument() -> None:
    ssn = open_session(
        cluster(),
        conf("binpack.cpu: -4, binpack.memory: -1, binpack.resources: 'cpu, memory', binpack.resources.cpu: 7"),
    )
    plugin = ssn.plugins["binpack"]
    assert plugin.resource_weights == {"cpu": 1, "memory": 1}
    task = ssn.jobs["default/pg"].tasks["default-pg-new-0"]
    # Unlisted gpu and pods are not scored: only cpu (2/4) and memory (4/8), weight 1 each.
    assert ssn.node_order(task, ssn.nodes["n1"]) == pytest.approx((0.5 + 0.5) / 2 * 100)


def test_default_arguments_score_cpu_and_memory_only() -> None:
    ssn = open_session(cluster(), conf())
    task = ssn.jobs["default/pg"].tasks["default-pg-new-0"]
    assert ssn.node_order(task, ssn.nodes["n2"]) == pytest.approx((1 / 8 + 2 / 16) / 2 * 100)


def test_scores_follow_session_allocations() -> None:
    ssn = open_session(cluster(), conf())
    tasks = ssn.jobs["default/pg"].tasks
    before = ssn.node_order(tasks["default-pg-new-0"], ssn.nodes["n2"])
    stmt = ssn.statement()
    stmt.allocate(tasks["default-pg-new-0"], ssn.nodes["n2"])
    probe = build_task("probe-x-0", cpu="1", memory="2Gi")
    after = ssn.node_order(probe, ssn.nodes["n2"])
    assert after == pytest.approx((2 / 8 + 4 / 16) / 2 * 100)
    assert after > before
    stmt.discard()
    assert ssn.node_order(probe, ssn.nodes["n2"]) == pytest.approx(before)
