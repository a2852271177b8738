"""SnapshotCache: a session on it decides as on any cache, and its decisions go nowhere but its records."""

from __future__ import annotations

import pytest

from volcanolib.cache.snapshot import SnapshotCache
from volcanolib.errors import CacheError
from volcanolib.scheduler import Scheduler
from volcanolib.testing import FakeCache, build_node, build_pod_group, build_task

CONF = """
actions: "enqueue, allocate"
tiers:
- plugins:
  - name: priority
  - name: gang
"""


def test_a_cycle_on_a_copy_records_its_binds_and_changes_nothing_in_the_cache() -> None:
    cache = FakeCache()
    cache.add_node(build_node("n0", cpu="4", memory="8Gi"))
    cache.add_pod_group(build_pod_group("pg", min_member=2))
    for i in range(2):
        cache.add_task(build_task(f"pg-{i}", job="pg", cpu="1"))
    copy = SnapshotCache(cache.full_snapshot())
    result = Scheduler(copy, CONF).run_once()
    assert sorted((t.name, node) for t, node in copy.binds) == [("pg-0", "n0"), ("pg-1", "n0")]
    assert [t.name for t, _ in result.binds] == [t.name for t, _ in copy.binds]
    assert "default/pg" in copy.job_status
    # The cache the copy came from saw nothing: no bind, every task still pending, no condition.
    assert cache.bound == {}
    assert all(not t.node_name for t in cache.tasks())
    assert cache.jobs()[0].pod_group.conditions == []
    with pytest.raises(CacheError, match="once"):
        copy.snapshot()
