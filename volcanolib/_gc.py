"""Pausing Python's cyclic garbage collector around bursts of object creation."""

from __future__ import annotations

import gc
from collections.abc import Iterator
from contextlib import contextmanager

__all__ = ["YOUNG_THRESHOLD", "gc_frozen", "gc_paused"]

#: Allocations between two collections of the youngest generation inside :func:`gc_frozen`.
YOUNG_THRESHOLD = 20_000


@contextmanager
def gc_paused(pause: bool = True) -> Iterator[None]:
    """Pause the cyclic garbage collector inside the block (when ``pause``).

    Loading a dump or running a scheduling cycle creates hundreds of
    thousands of small, mostly acyclic objects; the collector would rescan
    them again and again (about a third of a cycle's time on a large
    cluster). Memory is still freed by reference counting; the collector
    resumes, as it was, when the block ends.
    """
    was_enabled = gc.isenabled()
    if pause:
        gc.disable()
    try:
        yield
    finally:
        if was_enabled:
            gc.enable()


@contextmanager
def gc_frozen(*, automatic: bool = True) -> Iterator[None]:
    """Leave what exists when the block starts out of the collector's passes inside the block.

    A replay or a long-lived scheduler builds its cluster once and then runs
    thousands of short cycles; each full pass of the collector would walk
    the whole cluster again. Everything tracked when the block starts is
    moved aside (``gc.freeze``) and given back when it ends, unless the
    process had frozen objects of its own before, which then stay frozen.
    Garbage among the frozen objects is freed after the block. Inside, the
    collector's youngest generation waits for :data:`YOUNG_THRESHOLD`
    allocations (or the process's threshold, if higher) instead of 700:
    each cycle creates tens of thousands of short-lived objects, and
    collecting them every 700 costs a sixth of a replay for no memory.
    With ``automatic`` false the collector does not run by itself inside
    the block at all: the caller collects (``gc.collect()``) when it sees
    fit, for code that leaves no reference cycles behind in its loop.
    """
    gc.collect()
    owned = gc.get_freeze_count() == 0
    gc.freeze()
    thresholds = gc.get_threshold()
    enabled = gc.isenabled()
    if thresholds[0]:  # 0: the process switched automatic collection off
        gc.set_threshold(max(thresholds[0], YOUNG_THRESHOLD), *thresholds[1:])
    if not automatic:
        gc.disable()
    try:
        yield
    finally:
        gc.set_threshold(*thresholds)
        if enabled:
            gc.enable()
        if owned:
            gc.unfreeze()
