"""Helpers shared by the actions: the priority queue, re-exported from :mod:`volcanolib.framework.queues`.

Nothing here is public API; the actions are the only callers.
"""

from __future__ import annotations

from volcanolib.framework.queues import PriorityQueue

__all__ = ["PriorityQueue"]
