"""Small clusters the unit tests share."""

from __future__ import annotations

from volcanolib import InMemoryCache
from volcanolib.testing import build_node, build_pod_group, build_task


def gang_cluster(nodes: int, jobs: int) -> InMemoryCache:
    """``nodes`` nodes of 4 cpu and ``jobs`` pending gangs ``j0``... of two 1-cpu tasks (minMember 2)."""
    cache = InMemoryCache()
    for i in range(nodes):
        cache.add_node(build_node(f"n{i}", cpu="4", memory="8Gi"))
    for j in range(jobs):
        cache.add_pod_group(build_pod_group(f"j{j}", min_member=2))
        for t in range(2):
            cache.add_task(build_task(f"j{j}-{t}", job=f"j{j}", cpu="1"))
    return cache
