"""The snapshot of a cluster that one session works on."""

from __future__ import annotations

import attrs

from volcanolib.api.job import JobInfo
from volcanolib.api.node import NodeInfo
from volcanolib.api.queue import QueueInfo

__all__ = ["ClusterInfo"]


@attrs.define(eq=False)
class ClusterInfo:
    """Jobs, ready nodes (in the cache's node order) and queues, as one session sees them."""

    jobs: dict[str, JobInfo] = attrs.field(factory=dict)
    nodes: dict[str, NodeInfo] = attrs.field(factory=dict)
    #: Ready nodes in the order the cache received them.
    node_list: list[NodeInfo] = attrs.field(factory=list)
    queues: dict[str, QueueInfo] = attrs.field(factory=dict)
    #: Jobs left out of the snapshot, with the reason (a missing queue, say).
    skipped_jobs: dict[str, str] = attrs.field(factory=dict)
