"""Checking one node per class must decide exactly as checking every node.

Random clusters (node shapes, labels, taints, pods already running) and
workloads (gangs, requests, selectors, tolerations, preferred affinity,
images, host ports) run through enqueue, allocate and backfill with the
default plugins twice: with ``nodeClassesEnable`` on and off, same seed.
Binds, pipelined tasks and the recorded fit errors must be identical.
"""

from __future__ import annotations

import random
from typing import Any

import attrs
import pytest
from hypothesis import given, settings
from hypothesis import strategies as st

from volcanolib.api.job import PodGroupPhase
from volcanolib.api.node import Taint
from volcanolib.api.task import TaskInfo, TaskStatus
from volcanolib.framework.config import DEFAULT_CONFIG_TEXT
from volcanolib.framework.nodeclass import NodeClasses
from volcanolib.testing import FakeCache, build_node, build_pod_group, build_queue, build_task, run_session

# The default tiers, with the actions of each test and the node-class switch.
CONF = (
    'actions: "{actions}"\n'
    + DEFAULT_CONFIG_TEXT[DEFAULT_CONFIG_TEXT.index("tiers:") :]
    + """\
configurations:
- name: allocate
  arguments:
    nodeClassesEnable: {enabled}
- name: preempt
  arguments:
    nodeClassesEnable: {enabled}
"""
)
ALLOCATE = "enqueue, allocate, backfill"
PREEMPT = "enqueue, allocate, preempt, reclaim"

SHAPES = [("4", "8Gi"), ("8", "16Gi"), ("8", "32Gi"), ("16", "64Gi")]
ZONES = ["a", "b", "c"]


def _with_pod(task: TaskInfo, **changes: Any) -> TaskInfo:
    assert task.pod is not None
    task.pod = attrs.evolve(task.pod, **changes)
    return task


def random_cluster(seed: int | random.Random) -> FakeCache:
    """A random cluster and workload: from a seed, or from a generator Hypothesis draws (so that it shrinks)."""
    rng = seed if isinstance(seed, random.Random) else random.Random(seed)
    cache = FakeCache()
    cache.add_queue(build_queue("default", weight=1))
    cache.add_queue(build_queue("q2", weight=rng.randint(1, 3)))
    # Without PreferNoSchedule taints (and preferred affinity) scores are pointwise: class answers are remembered.
    prefer_taints = rng.random() < 0.4
    count = rng.randint(3, 14)
    for i in range(count):
        cpu, memory = rng.choice(SHAPES)
        taints: list[Taint] = []
        if rng.random() < 0.2:
            taints.append(Taint("dedicated", "gpu", "NoSchedule"))
        if prefer_taints and rng.random() < 0.3:
            taints.append(Taint("spot", "true", "PreferNoSchedule"))
        cache.add_node(
            build_node(
                f"n{i:02d}",
                cpu,
                memory,
                pods=rng.choice([4, 8, 110]),
                labels={"zone": rng.choice(ZONES), "kubernetes.io/hostname": f"n{i:02d}"},
                taints=taints,
                unschedulable=rng.random() < 0.05,
            )
        )
    nodes = [f"n{i:02d}" for i in range(count)]
    # Pods already running, so nodes start unlike.
    for r in range(3):
        cache.add_pod_group(
            build_pod_group(
                f"running{r}", min_member=1, phase=PodGroupPhase.RUNNING, queue=rng.choice(["default", "q2"])
            )
        )
    for i in range(rng.randint(0, 24)):
        cache.add_task(
            build_task(
                f"running-{i}",
                job=f"running{rng.randrange(3)}",
                priority=0,
                cpu=str(rng.choice([1, 2])),
                memory="1Gi",
                node=rng.choice(nodes),
                # Releasing pods free resources a task may be pipelined onto.
                status=TaskStatus.RELEASING if rng.random() < 0.3 else TaskStatus.RUNNING,
            )
        )
    for j in range(rng.randint(2, 8)):
        size = rng.randint(1, 6)
        queue = rng.choice(["default", "q2"])
        cache.add_pod_group(build_pod_group(f"job{j}", min_member=rng.randint(1, size), queue=queue))
        cpu = str(rng.choice([1, 2, 3]))
        memory = rng.choice(["512Mi", "2Gi", "4Gi"])
        selector = {"zone": rng.choice(ZONES)} if rng.random() < 0.25 else None
        tolerations = [{"key": "dedicated", "operator": "Exists"}] if rng.random() < 0.3 else []
        preferred = rng.random() < 0.25
        ports = rng.random() < 0.1
        images = rng.random() < 0.2
        for k in range(size):
            task = build_task(
                f"job{j}-{k}",
                job=f"job{j}",
                cpu=cpu,
                memory=memory,
                node_selector=selector,
                tolerations=tolerations,
                priority=rng.randint(1, 3),
            )
            if preferred:
                terms = [
                    {
                        "weight": 10,
                        "preference": {"matchExpressions": [{"key": "zone", "operator": "In", "values": ["a"]}]},
                    }
                ]
                _with_pod(task, affinity={"nodeAffinity": {"preferredDuringSchedulingIgnoredDuringExecution": terms}})
            if ports:
                _with_pod(task, host_ports=(("TCP", "", 8080),))
            if images:
                _with_pod(task, images=("registry/app:1",))
            cache.add_task(task)
    return cache


def decisions(seed: int, enabled: bool, actions: str = ALLOCATE, cache: FakeCache | None = None) -> tuple[Any, ...]:
    cache = cache if cache is not None else random_cluster(seed)
    result = run_session(cache, CONF.format(actions=actions, enabled=str(enabled).lower()), seed=seed)
    assert result.session is not None
    errors = {
        uid: sorted((name, err.reasons) for name, err in fit.nodes.items())
        for job in result.session.jobs.values()
        for uid, fit in job.nodes_fit_errors.items()
    }
    return (
        [(t.key, node) for t, node in result.binds],
        [t.key for t, _ in result.evictions],
        sorted((t.key, node) for t, node in result.pipelined),
        errors,
    )


@pytest.mark.parametrize("seed", range(60))
def test_classes_decide_like_every_node(seed: int, monkeypatch: pytest.MonkeyPatch) -> None:
    """Every choice by node class is checked against every node (the fast path contract's switch)."""
    from volcanolib.framework import fastpath, placement

    monkeypatch.setenv(fastpath.CHECK_ENV, "1")
    before = fastpath.CHECKED[placement.BY_CLASS.name] + fastpath.CHECKED[placement.REMEMBERED.name]
    decisions(seed, True)
    checked = fastpath.CHECKED[placement.BY_CLASS.name] + fastpath.CHECKED[placement.REMEMBERED.name] - before
    assert checked > 0 or not decisions(seed, True)[0], f"seed {seed}: no choice by class was checked"


@pytest.mark.parametrize("seed", range(40))
def test_preemption_by_class_decides_like_every_node(seed: int) -> None:
    assert decisions(seed, True, PREEMPT) == decisions(seed, False, PREEMPT)


@settings(max_examples=25, deadline=None)
@given(rng=st.randoms(use_true_random=False))
def test_drawn_clusters_preempt_by_class_like_every_node(rng: random.Random) -> None:
    """The same comparison on clusters Hypothesis draws: a failure shrinks to a small cluster."""
    state = rng.getstate()
    with_classes = decisions(0, True, PREEMPT, random_cluster(rng))
    rng.setstate(state)
    assert with_classes == decisions(0, False, PREEMPT, random_cluster(rng))


def test_some_random_clusters_preempt() -> None:
    # The comparison above means something only if its seeds evict.
    evicted = sum(len(decisions(seed, True, PREEMPT)[1]) for seed in range(40))
    assert evicted > 5


def test_some_random_clusters_bind_and_some_tie() -> None:
    # The comparison above means something only if tasks get placed, among several equally good nodes.
    bound = sum(len(decisions(seed, True)[0]) for seed in range(10))
    assert bound > 20


def test_nth_counts_across_groups_in_node_order() -> None:
    from sortedcontainers import SortedList

    groups = [SortedList([1, 5, 9]), SortedList([2, 3]), SortedList([7])]
    merged = sorted(p for g in groups for p in g)
    assert [NodeClasses.nth(groups, r) for r in range(len(merged))] == merged


def test_class_keys_compare_by_value_and_keep_their_hash() -> None:
    from volcanolib.framework.nodeclass import _ClassKey

    a, b, c = _ClassKey((1, (2.0, "x"))), _ClassKey((1, (2.0, "x"))), _ClassKey((1, (2.0, "y")))
    assert a == b and hash(a) == hash(b) == hash((1, (2.0, "x")))
    assert a != c and a != (1, (2.0, "x"))
    assert {a: 1}[b] == 1 and c not in {a: 1}
