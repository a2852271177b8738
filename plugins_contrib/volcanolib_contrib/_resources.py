"""Dimension-aware resource comparisons the capacity plugin needs beyond :class:`~volcanolib.api.resource.Resource`.

"Requested dimensions" are cpu and memory when the request is above zero and
every scalar above zero except ``pods``.
"""

from __future__ import annotations

from volcanolib.api.resource import CPU, MEMORY, MIN_RESOURCE, PODS, Resource

__all__ = [
    "greater_partly_with_dimension",
    "greater_partly_with_relevant_dimensions",
    "intersects",
    "less_equal_partly_with_dimension_zero_filtered",
]


def intersects(left: Resource, right: Resource, *, ignore_pods: bool = False) -> bool:
    """Whether some dimension is at least 0.1 in both (``pods`` skipped with ``ignore_pods``)."""
    mine = set(left.names())
    return any(name in mine and not (ignore_pods and name == PODS) for name in right.names())


def greater_partly_with_dimension(r: Resource, rr: Resource, req: Resource) -> list[str]:
    """The dimensions ``req`` asks for on which ``r`` is strictly above ``rr``."""
    out = []
    if req.milli_cpu > 0 and r.milli_cpu > rr.milli_cpu:
        out.append(CPU)
    if req.memory > 0 and r.memory > rr.memory:
        out.append(MEMORY)
    for name, quantity in req.scalars.items():
        if name != PODS and quantity > 0 and r.get(name) > rr.get(name):
            out.append(name)
    return out


def greater_partly_with_relevant_dimensions(r: Resource, rr: Resource, req: Resource) -> list[str]:
    """Like :func:`greater_partly_with_dimension`, on the dimensions ``rr`` defines only.

    cpu and memory count when ``rr`` has at least 0.1 of them; a scalar
    counts when ``rr`` lists it (whatever its value).
    """
    filtered = Resource()
    if req.milli_cpu > 0 and rr.milli_cpu >= MIN_RESOURCE:
        filtered.milli_cpu = req.milli_cpu
    if req.memory > 0 and rr.memory >= MIN_RESOURCE:
        filtered.memory = req.memory
    for name, quantity in req.scalars.items():
        if quantity > 0 and name in rr.scalars:
            filtered.scalars[name] = quantity
    return greater_partly_with_dimension(r, rr, filtered)


def _le(left: float, right: float) -> bool:
    return left < right or abs(left - right) < MIN_RESOURCE


def less_equal_partly_with_dimension_zero_filtered(r: Resource, rr: Resource, req: Resource) -> list[str]:
    """The requested dimensions on which ``r`` is at most ``rr`` (tolerant), ignoring ones both leave at ~0."""
    out = []
    both_zero = r.milli_cpu < MIN_RESOURCE and rr.milli_cpu < MIN_RESOURCE
    if req.milli_cpu > 0 and not both_zero and _le(r.milli_cpu, rr.milli_cpu):
        out.append(CPU)
    if req.memory > 0 and not (r.memory < MIN_RESOURCE and rr.memory < MIN_RESOURCE) and _le(r.memory, rr.memory):
        out.append(MEMORY)
    for name, quantity in req.scalars.items():
        if name == PODS or quantity <= 0:
            continue
        mine, theirs = r.get(name), rr.get(name)
        if not (mine < MIN_RESOURCE and theirs < MIN_RESOURCE) and _le(mine, theirs):
            out.append(name)
    return out
