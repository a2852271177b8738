"""The snapshot of a cluster that one session works on."""

from __future__ import annotations

from collections.abc import Iterable, Mapping

import attrs

from volcanolib.api.hypernode import HyperNodeTree
from volcanolib.api.job import JobInfo
from volcanolib.api.node import NodeInfo
from volcanolib.api.queue import QueueInfo

__all__ = ["ClusterInfo", "SnapshotChanges", "SnapshotDelta"]


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


@attrs.frozen(eq=False)
class SnapshotDelta:
    """How a snapshot differs from the one the cache handed out before it.

    A cache attaches one (:attr:`ClusterInfo.delta`) only when it built the
    snapshot from the previous one, after the session working on that one
    closed and reported what it changed (:attr:`since`). Every node and job
    of the snapshot not named here is the very object the previous snapshot
    held, unchanged since that session closed, except for the per-session
    notes a fresh copy would not carry, which are reset (a job's fit errors,
    the start time ``enqueue`` sets, a condition renewed with only a new
    transition id and time): a plugin that kept what it computed from the
    rest may keep it and recompute only for what is named.

    .. versionadded:: 0.2
    """

    #: The previous snapshot's report (its :attr:`ClusterInfo.changes`), which names the snapshot this one follows.
    since: SnapshotChanges
    #: Nodes that changed (added, ready again, or their tasks changed) and nodes of the previous snapshot no
    #: longer in it. A changed node is a new object, or the previous one brought up to date in place when it
    #: held the same tasks with the same accounting (only task statuses and task objects change then).
    nodes: frozenset[str]
    #: Jobs (by uid) whose object is new or changed since, and jobs of the previous snapshot no longer in it.
    jobs: frozenset[str]
    #: Queues added, replaced or removed since; every queue object is new in each snapshot all the same.
    queues: frozenset[str]
    #: Whether the ready nodes are the previous snapshot's, by name and in the same order.
    same_nodes: bool
    #: The nodes of :attr:`nodes` that are not just the previous snapshot's node with other tasks:
    #: added, removed, replaced in the cache (their :class:`~volcanolib.api.node.Node`, allocatable or
    #: capability may differ), or ready again. ``None`` (the default) when the cache does not say:
    #: then every node of :attr:`nodes` may be such a node.
    node_specs: frozenset[str] | None = None
    #: The tasks the cache added, replaced, placed or moved to another status since, among those on a
    #: node of this snapshot: each task's key (``namespace/name``) with the name of its node. What
    #: the session on the previous snapshot did to its copy and the cache did not follow (a task
    #: pipelined, say) is not here, but its node is in :attr:`nodes`; so are the nodes tasks left.
    #: ``None`` (the default) when the cache does not say: then any task on a node of :attr:`nodes`
    #: may be one of them.
    tasks: Mapping[str, str] | None = None
    #: The nodes of :attr:`nodes` that are the previous snapshot's node brought up to date in place
    #: with the same pods: the same tasks by key and pod, accounted in the same rows (an Allocated task
    #: now Binding or Running, say), with equal resources, and none evicted since (the session that
    #: evicted a task no longer counted it as a pod there); only task statuses and task objects
    #: changed. Such a node is as the previous session *left* it, its placements included: only what
    #: was kept in step with that session's allocate and deallocate events may be kept for it; what
    #: was computed at open must be computed again. ``None`` (the default) when the cache does not
    #: say: then no node is known to be such.
    #:
    #: .. versionadded:: 0.2
    in_place: frozenset[str] | None = None

    def nodes_with_changed_pods(self) -> frozenset[str]:
        """The nodes that may hold other pods or resources than the previous session left them with.

        :attr:`nodes` but :attr:`in_place`: what a plugin kept in step with
        the previous session's events needs updating for these nodes only.

        .. versionadded:: 0.2
        """
        return self.nodes if not self.in_place else self.nodes - self.in_place

    def replaced_nodes(self) -> frozenset[str]:
        """The nodes whose node itself may have changed: :attr:`node_specs`, else all of :attr:`nodes`."""
        return self.nodes if self.node_specs is None else self.node_specs


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
    #: How this snapshot differs from the previous one, when the cache built it from that one (else ``None``).
    delta: SnapshotDelta | None = None
    #: The HyperNode tree over the ready nodes (empty when the cluster has no HyperNodes).
    hyper_nodes: HyperNodeTree = attrs.field(factory=lambda: HyperNodeTree((), ()))
