"""Pausing and freezing the cyclic garbage collector."""

from __future__ import annotations

import gc
import weakref

from volcanolib._gc import YOUNG_THRESHOLD, gc_frozen, gc_paused


class _Node:
    def __init__(self) -> None:
        self.me = self  # a reference cycle: only the collector frees it


def test_paused_collector_resumes_as_it_was() -> None:
    assert gc.isenabled()
    with gc_paused():
        assert not gc.isenabled()
        with gc_paused():
            assert not gc.isenabled()
        assert not gc.isenabled()
    assert gc.isenabled()
    with gc_paused(pause=False):
        assert gc.isenabled()


def test_frozen_objects_are_left_out_then_given_back() -> None:
    assert gc.get_freeze_count() == 0
    before = _Node()
    made_before = weakref.ref(before)
    with gc_frozen():
        assert gc.get_freeze_count() > 0
        del before
        gc.collect()
        # The cycle made before the block is frozen: no pass walks it or frees it.
        assert made_before() is not None
        assert not any(isinstance(o, _Node) for o in gc.get_objects())
        inside = _Node()
        made_inside = weakref.ref(inside)
        del inside
        gc.collect()
        assert made_inside() is None  # a cycle made inside the block is freed as usual
    assert gc.get_freeze_count() == 0
    gc.collect()
    assert made_before() is None  # given back, and freed


def test_objects_frozen_by_the_process_before_stay_frozen() -> None:
    gc.freeze()
    try:
        count = gc.get_freeze_count()
        with gc_frozen():
            assert gc.get_freeze_count() >= count
        assert gc.get_freeze_count() >= count > 0
    finally:
        gc.unfreeze()


def test_frozen_block_collects_the_young_generation_less_often_then_restores() -> None:
    before = gc.get_threshold()
    try:
        gc.set_threshold(700, 10, 10)
        with gc_frozen():
            assert gc.get_threshold() == (YOUNG_THRESHOLD, 10, 10)
        assert gc.get_threshold() == (700, 10, 10)
        gc.set_threshold(50_000, 5, 5)  # a higher threshold of the process's own is kept
        with gc_frozen():
            assert gc.get_threshold() == (50_000, 5, 5)
        gc.set_threshold(0, 10, 10)  # automatic collection switched off stays off
        with gc_frozen():
            assert gc.get_threshold()[0] == 0
    finally:
        gc.set_threshold(*before)


def test_frozen_block_without_automatic_collection_then_as_before() -> None:
    assert gc.isenabled()
    with gc_frozen(automatic=False):
        assert not gc.isenabled()
    assert gc.isenabled()


def test_a_released_session_is_freed_without_the_collector() -> None:
    from volcanolib import InMemoryCache, Scheduler
    from volcanolib.framework.config import DEFAULT_CONFIG
    from volcanolib.testing import build_node, build_pod_group, build_task

    cache = InMemoryCache()
    for i in range(3):
        cache.add_node(build_node(f"n{i}", cpu="4", memory="8Gi"))
    cache.add_pod_group(build_pod_group("j", min_member=2))
    for t in range(2):
        cache.add_task(build_task(f"j-{t}", job="j", cpu="1"))
    scheduler = Scheduler(cache, DEFAULT_CONFIG)
    gc.disable()
    try:
        refs = []
        for _ in range(3):
            result = scheduler.run_once()
            assert result.session is not None and result.binds is not None
            result.session.detach_plugins()
            refs.append(weakref.ref(result.session))
            del result
            cache.start_bound_tasks()
        # Plugins hold on to the last session until the next one opens; the others are gone already.
        assert [ref() is None for ref in refs] == [True, True, False]
    finally:
        gc.enable()
