"""The snapshot of a cluster that one session works on."""

from __future__ import annotations

from collections.abc import Iterable

import attrs

from volcanolib.api.hypernode import HyperNodeTree
from volcanolib.api.job import JobInfo
from volcanolib.api.node import NodeInfo
from volcanolib.api.queue import QueueInfo

__all__ = ["ClusterInfo", "SnapshotChanges"]


@attrs.define(eq=False)
class SnapshotChanges:
    """What the session working on a snapshot changed in it, reported when the session closes.

    A cache that hands out snapshots it can partly reuse (see
    :class:`~volcanolib.cache.memory.InMemoryCache`) attaches one to each
    snapshot; :meth:`Session.close <volcanolib.framework.session.Session.close>`
    fills it in. Until it is :attr:`closed`, the cache must assume that every
    object of the snapshot may have changed.
    """

    #: Whether a session closed on the snapshot and reported what it touched.
    closed: bool = False
    #: Nodes whose tasks or accounting the session changed.
    nodes: set[str] = attrs.field(factory=set)
    #: Jobs (by uid) one of whose tasks changed status or placement in the session.
    jobs: set[str] = attrs.field(factory=set)

    def report(self, nodes: Iterable[str], jobs: Iterable[str]) -> None:
        """Record what a session touched and mark the snapshot as given back."""
        self.nodes.update(nodes)
        self.jobs.update(jobs)
        self.closed = True


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
    #: Where a session reports what it changed, when the cache wants to know (else ``None``).
    changes: SnapshotChanges | None = None
    #: The HyperNode tree over the ready nodes (empty when the cluster has no HyperNodes).
    hyper_nodes: HyperNodeTree = attrs.field(factory=lambda: HyperNodeTree((), ()))
