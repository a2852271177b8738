"""deviceshare: cards from node capacity, per-card checks, cards held across sessions."""

from __future__ import annotations

import random

import pytest
from volcanolib_contrib.deviceshare import (
    GPU_INDEX,
    GPU_MEMORY,
    GPU_NUMBER,
    UNHEALTHY_GPU_IDS,
    DeviceSharePlugin,
    GPUCards,
)

from volcanolib import Scheduler
from volcanolib.api.node import Node
from volcanolib.errors import ConfigError
from volcanolib.framework.config import parse_config
from volcanolib.framework.registry import PluginHost
from volcanolib.testing import FakeCache, build_node, build_pod_group, build_task, open_session

SHARING = (
    "actions: allocate\ntiers:\n- plugins:\n  - name: gang\n  - name: predicates\n  - name: deviceshare\n"
    "    arguments: {deviceshare.GPUSharingEnable: true}\n"
)


def _gpu_node(name: str, memory: int, cards: int, *, unhealthy: str = ""):  # type: ignore[no-untyped-def]
    node = build_node(name, "64", "256Gi", scalars={GPU_MEMORY: str(memory), GPU_NUMBER: str(cards)})
    if unhealthy:
        node.node = Node(name, annotations={UNHEALTHY_GPU_IDS: unhealthy})
    return node


def test_cards_share_the_memory_and_skip_unhealthy_ones() -> None:
    cards = GPUCards.of(_gpu_node("n", 16000, 4, unhealthy="1,x"))
    # "x" is not a number: Volcano ignores the whole annotation.
    assert cards is not None and cards.ids == [0, 1, 2, 3] and cards.memory == 4000
    cards = GPUCards.of(_gpu_node("n", 16000, 4, unhealthy="1,3"))
    assert cards is not None and cards.ids == [0, 2] and cards.memory == 4000
    assert GPUCards.of(build_node("plain")) is None


def test_both_checks_at_once_are_refused() -> None:
    conf = parse_config(
        "actions: ''\ntiers:\n- plugins:\n  - name: deviceshare\n    arguments:\n"
        "      deviceshare.GPUSharingEnable: true\n      deviceshare.GPUNumberEnable: true\n"
    )
    with pytest.raises(ConfigError, match="GPUNumberEnable"):
        PluginHost(conf)


def test_cards_are_given_again_in_later_sessions() -> None:
    # Two cards of 8000; three pods of 5000 arrive one per cycle: the first two take one card each, the third waits.
    cache = FakeCache()
    cache.add_node(_gpu_node("n0", 16000, 2))
    scheduler = Scheduler(cache, parse_config(SHARING))
    for i in range(3):
        cache.add_pod_group(build_pod_group(f"j{i}"))
        cache.add_task(build_task(f"j{i}-0", job=f"j{i}", cpu="1", scalars={GPU_MEMORY: "5000"}))
        scheduler.run_once()
        cache.start_bound_tasks()
    assert sorted(cache.bound) == ["default/j0-0", "default/j1-0"]


def test_a_pod_read_at_open_gives_its_card_back_when_it_leaves() -> None:
    cache = FakeCache()
    cache.add_node(_gpu_node("n0", 8000, 1))
    cache.add_pod_group(build_pod_group("j"))
    cache.add_task(
        build_task("j-0", job="j", cpu="1", scalars={GPU_MEMORY: "6000"}, node="n0", annotations={GPU_INDEX: "0"})
    )
    ssn = open_session(cache, SHARING)
    plugin = ssn.plugins["deviceshare"]
    assert isinstance(plugin, DeviceSharePlugin)
    assert plugin.cards["n0"].used == {0: 6000}
    stmt = ssn.statement()
    stmt.evict(ssn.jobs["default/j"].tasks["default-j-0"], "test")
    assert plugin.cards["n0"].used == {0: 0}


def test_a_card_taken_in_the_session_stays_taken_when_the_pod_leaves() -> None:
    # Volcano frees the cards the pod's annotation named when the session read it: none for a pod placed in it.
    cache = FakeCache()
    cache.add_node(_gpu_node("n0", 8000, 1))
    cache.add_pod_group(build_pod_group("j"))
    cache.add_task(build_task("j-0", job="j", cpu="1", scalars={GPU_MEMORY: "6000"}))
    ssn = open_session(cache, SHARING)
    plugin = ssn.plugins["deviceshare"]
    assert isinstance(plugin, DeviceSharePlugin)
    task = ssn.jobs["default/j"].tasks["default-j-0"]
    stmt = ssn.statement()
    stmt.allocate(task, ssn.nodes["n0"])
    assert plugin.cards["n0"].used == {0: 6000}
    stmt.discard()
    assert plugin.cards["n0"].used == {0: 6000}
    # Placed again, it takes the card again only once.
    stmt = ssn.statement()
    stmt.allocate(task, ssn.nodes["n0"])
    assert plugin.cards["n0"].used == {0: 6000}


def test_stranded_cards_last_until_the_node_is_built_again() -> None:
    # One card; a gang of two pods asking a card each cannot run, but its first pod's card stays taken.
    cache = FakeCache()
    cache.add_node(_gpu_node("n0", 8000, 1))
    cache.add_pod_group(build_pod_group("gang", min_member=2, creation_timestamp=1.0))
    for i in range(2):
        cache.add_task(build_task(f"gang-{i}", job="gang", cpu="1", scalars={GPU_NUMBER: "1"}))
    number = SHARING.replace("GPUSharingEnable", "GPUNumberEnable")
    scheduler = Scheduler(cache, parse_config(number))
    scheduler.run_once()
    cache.add_pod_group(build_pod_group("one"))  # older than the gang: it is tried first from now on
    cache.add_task(build_task("one-0", job="one", cpu="1", scalars={GPU_NUMBER: "1"}))
    scheduler.run_once()
    assert not cache.bound
    cache.add_node(_gpu_node("n0", 8000, 1))  # the node object set again: its cards are read afresh
    scheduler.run_once()
    assert sorted(cache.bound) == ["default/one-0"]


def test_without_the_predicates_plugin_placed_pods_take_no_card() -> None:
    # Volcano hands cards out in the predicates plugin's allocate handler: without it, two pods asking
    # for both cards of a node pass the per-card check one after the other.
    cache = FakeCache()
    node = build_node("n0", "64", "256Gi", scalars={GPU_MEMORY: "16000", GPU_NUMBER: "4"})
    node.capability = build_node("n0", "64", "256Gi", scalars={GPU_MEMORY: "16000", GPU_NUMBER: "2"}).capability
    cache.add_node(node)
    for name in ("a", "b"):
        cache.add_pod_group(build_pod_group(name))
        cache.add_task(build_task(f"{name}-0", job=name, cpu="1", scalars={GPU_NUMBER: "2"}))
    number = SHARING.replace("GPUSharingEnable", "GPUNumberEnable")
    Scheduler(cache, parse_config(number.replace("  - name: predicates\n", ""))).run_once()
    assert sorted(cache.bound) == ["default/a-0", "default/b-0"]
    with_predicates = FakeCache()
    with_predicates.add_node(node)
    for name in ("a", "b"):
        with_predicates.add_pod_group(build_pod_group(name))
        with_predicates.add_task(build_task(f"{name}-0", job=name, cpu="1", scalars={GPU_NUMBER: "2"}))
    Scheduler(with_predicates, parse_config(number)).run_once()
    assert sorted(with_predicates.bound) == ["default/a-0"]


def test_a_pod_asking_for_a_switched_off_kind_takes_no_card() -> None:
    # GPU number on, sharing off: a pod asking for GPU memory passes and holds no card, so the card stays idle.
    cache = FakeCache()
    cache.add_node(_gpu_node("n0", 8000, 1))
    cache.add_pod_group(build_pod_group("a"))
    cache.add_task(build_task("a-0", job="a", cpu="1", scalars={GPU_MEMORY: "1000"}))
    cache.add_pod_group(build_pod_group("b"))
    cache.add_task(build_task("b-0", job="b", cpu="1", scalars={GPU_NUMBER: "1"}))
    number = SHARING.replace("GPUSharingEnable", "GPUNumberEnable")
    scheduler = Scheduler(cache, parse_config(number))
    scheduler.run_once()
    assert sorted(cache.bound) == ["default/a-0", "default/b-0"]
    cache.start_bound_tasks()
    cache.add_pod_group(build_pod_group("c"))
    cache.add_task(build_task("c-0", job="c", cpu="1", scalars={GPU_NUMBER: "1"}))
    scheduler.run_once()
    assert "default/c-0" not in cache.bound


@pytest.mark.parametrize("seed", range(4))
def test_node_classes_decide_as_every_node(seed: int) -> None:
    results = []
    for classes in ("true", "false"):
        local = random.Random(seed)
        cache = FakeCache()
        for n in range(12):
            cache.add_node(_gpu_node(f"n{n}", 8000 * local.choice((1, 2)), local.choice((1, 2))))
        for j in range(10):
            cache.add_pod_group(build_pod_group(f"j{j}"))
            for t in range(local.choice((1, 2))):
                cache.add_task(
                    build_task(
                        f"j{j}-{t}", job=f"j{j}", cpu="1", scalars={GPU_MEMORY: str(local.choice((1000, 3000, 5000)))}
                    )
                )
        conf = SHARING.replace(
            "actions: allocate",
            "actions: allocate\nconfigurations:\n- name: allocate\n  arguments: {nodeClassesEnable: " + classes + "}",
        )
        Scheduler(cache, parse_config(conf), seed=seed).run_once()
        results.append(dict(cache.bound))
    assert results[0] == results[1]
    assert results[0]
