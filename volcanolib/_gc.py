"""Pausing Python's cyclic garbage collector around bursts of object creation."""

from __future__ import annotations

import gc
from collections.abc import Iterator
from contextlib import contextmanager

__all__ = ["gc_paused"]


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
