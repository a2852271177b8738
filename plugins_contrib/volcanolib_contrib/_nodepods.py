"""The pods of every node as the Kubernetes plugins see them during a session.

Volcano hands the Kubernetes filter and score plugins a node view built from
the snapshot (every task on the node, whatever its status) and keeps it in
step with the session through the allocate/deallocate events: a placement or
pipeline adds the pod, an eviction or an undone placement removes it.

The session's :class:`~volcanolib.api.node.NodeInfo` already tracks
placements and undone placements; an evicted task, though, stays on its node
as Releasing. :class:`NodePods` therefore only remembers the tasks evicted
during the session, so counting a node's pods stays O(1).
"""

from __future__ import annotations

from collections.abc import Callable, Iterable, Iterator, Mapping, Set
from typing import TYPE_CHECKING, Final

from volcanolib.api.resource import PODS

if TYPE_CHECKING:
    from volcanolib.api.cluster import SnapshotDelta
    from volcanolib.api.node import NodeInfo
    from volcanolib.api.task import TaskInfo
    from volcanolib.framework.session import Session

__all__ = [
    "DEFAULT_MEMORY_REQUEST",
    "DEFAULT_MILLI_CPU_REQUEST",
    "NodePods",
    "Usage",
    "listed_nodes",
    "pods_where",
    "resumed_pods",
]

#: The cpu a container without a cpu request counts for when scoring (millicores).
DEFAULT_MILLI_CPU_REQUEST: Final = 100
#: The memory a container without a memory request counts for when scoring (bytes).
DEFAULT_MEMORY_REQUEST: Final = 200 * 1024 * 1024
#: Whole numbers below this add exactly as floats, in any order.
_EXACT: Final = float(2**53)


def pods_where(
    nodes: Iterator[NodeInfo] | list[NodeInfo], wanted: Callable[[TaskInfo], bool], *, affinity_only: bool = False
) -> dict[str, TaskInfo]:
    """The tasks on ``nodes`` (every status) that ``wanted`` accepts, by task key, in node and task order.

    :param affinity_only: ``wanted`` refuses every task without a pod or
        whose pod has no affinity: those are left out without asking it.
    """
    found: dict[str, TaskInfo] = {}
    for node in nodes:
        if affinity_only:
            for key, task in node.tasks.items():
                pod = task.pod
                if pod is not None and pod.affinity and wanted(task):
                    found[key] = task
        else:
            for key, task in node.tasks.items():
                if wanted(task):
                    found[key] = task
    return found


def listed_nodes(pods: Mapping[str, TaskInfo]) -> frozenset[str]:
    """The nodes holding ``pods`` (pods with inter-pod affinity terms) as the session opens.

    Volcano v1.14.1 lists the nodes that hold a pod with inter-pod affinity,
    and those that hold a pod with required anti-affinity, once per session,
    when it builds the Kubernetes plugins' snapshot; a pod the session places
    on another node does not add that node. InterPodAffinity's filter (the
    placed pods' required anti-affinity) and its score without preferred
    terms of the incoming pod read only the listed nodes' pods, those placed
    there during the session included.
    """
    return frozenset(task.node_name for task in pods.values())


def resumed_pods(
    kept: Mapping[str, TaskInfo],
    nodes: Mapping[str, NodeInfo],
    delta: SnapshotDelta,
    wanted: Callable[[TaskInfo], bool],
) -> dict[str, TaskInfo]:
    """:func:`pods_where` over every node of ``nodes``, from what it gave the previous session.

    ``kept`` is the previous session's answer as it closed (kept in step by
    the session's events). A task's pod and place change only with its
    node, which the delta then names. When the delta also names the tasks
    the cache changed (:attr:`~volcanolib.api.cluster.SnapshotDelta.tasks`),
    only those, and the tasks of nodes new in the snapshot, are read;
    otherwise every task of the named nodes is. A task may be a new object
    (its job was copied again), so each kept task is looked up anew. The
    result holds the same tasks as a fresh :func:`pods_where`, possibly in
    another order.
    """
    placed = delta.tasks
    if placed is not None:
        return _resumed_by_task(kept, nodes, delta, placed, wanted)
    changed = delta.nodes
    found = _still_placed(kept, nodes, changed)
    _add_wanted(found, nodes, changed, wanted)
    return found


def _still_placed(
    kept: Mapping[str, TaskInfo], nodes: Mapping[str, NodeInfo], skip: Set[str] = frozenset()
) -> dict[str, TaskInfo]:
    """The kept tasks still on their node, as the node's current objects (those on ``skip`` nodes left out)."""
    found: dict[str, TaskInfo] = {}
    for key, task in kept.items():
        name = task.node_name
        if name in skip:
            continue
        node = nodes.get(name)
        current = node.tasks.get(key) if node is not None else None
        if current is not None:
            found[key] = current
    return found


def _add_wanted(
    found: dict[str, TaskInfo], nodes: Mapping[str, NodeInfo], names: Iterable[str], wanted: Callable[[TaskInfo], bool]
) -> None:
    """Add to ``found`` every task of the named nodes that ``wanted`` accepts."""
    for name in names:
        node = nodes.get(name)
        if node is not None:
            for key, task in node.tasks.items():
                if wanted(task):
                    found[key] = task


def _resumed_by_task(
    kept: Mapping[str, TaskInfo],
    nodes: Mapping[str, NodeInfo],
    delta: SnapshotDelta,
    placed: Mapping[str, str],
    wanted: Callable[[TaskInfo], bool],
) -> dict[str, TaskInfo]:
    """:func:`resumed_pods` reading only the tasks the cache changed and the nodes new in the snapshot.

    A kept task still on its node stays (its pod did not change, or the
    cache would name it); one that left is not found there. A task that
    joined a node, came back from an eviction the previous session made, or
    got a new pod, the cache names; and so the tasks of a node that joined
    the snapshot, which are read in full.
    """
    found = _still_placed(kept, nodes)
    for key, name in placed.items():
        task = nodes[name].tasks[key]
        if wanted(task):
            found[key] = task
        else:
            found.pop(key, None)
    _add_wanted(found, nodes, delta.replaced_nodes(), wanted)
    return found


class Usage:
    """What the pods on one node request: actual and "non-zero" (defaulted) cpu and memory, scalars."""

    __slots__ = ("cpu", "exact", "memory", "nz_cpu", "nz_memory", "scalars")

    def __init__(self) -> None:
        self.cpu = 0.0
        self.memory = 0.0
        self.nz_cpu = 0.0
        self.nz_memory = 0.0
        self.scalars: dict[str, float] = {}
        #: Whether every amount applied was a whole number and the sums stay below 2**53, so that
        #: they do not depend on the order of the pods (see :class:`~volcanolib.framework.carry.PartSums`).
        self.exact = True

    def apply(self, task: TaskInfo, sign: int) -> None:
        """Add (``sign`` 1) or remove (``sign`` -1) one pod's request."""
        # Written out per sign (``x - y`` is exactly ``x + -1 * y``): this runs on every event of a session.
        req = task.resreq
        cpu = req.milli_cpu
        memory = req.memory
        nz_cpu = cpu if cpu > 0 else DEFAULT_MILLI_CPU_REQUEST
        nz_memory = memory if memory > 0 else DEFAULT_MEMORY_REQUEST
        if sign > 0:
            self.cpu += cpu
            self.memory += memory
            self.nz_cpu += nz_cpu
            self.nz_memory += nz_memory
        else:
            self.cpu -= cpu
            self.memory -= memory
            self.nz_cpu -= nz_cpu
            self.nz_memory -= nz_memory
        requested = req.scalars
        if requested and (len(requested) > 1 or PODS not in requested):  # not only a pod count
            scalars = self.scalars
            for name, value in requested.items():
                if name != PODS:
                    scalars[name] = scalars.get(name, 0.0) + sign * value
                    if value % 1 or value >= _EXACT:
                        self.exact = False
        # ``x % 1`` is NaN for infinities, which counts as not whole; memory is the largest sum.
        if self.exact and (cpu % 1 or memory % 1 or self.memory >= _EXACT or self.cpu >= _EXACT):
            self.exact = False

    def add_all(self, tasks: Iterable[TaskInfo]) -> None:
        """Add the requests of ``tasks``: :meth:`apply` with ``sign`` 1 for each, in order, as one loop."""
        # Written out: the first choice of a session counts the pods of every node.
        total_cpu, total_memory, nz_cpu, nz_memory = self.cpu, self.memory, self.nz_cpu, self.nz_memory
        exact = self.exact
        scalars = self.scalars
        for task in tasks:
            req = task.resreq
            cpu = req.milli_cpu
            memory = req.memory
            total_cpu += cpu
            total_memory += memory
            nz_cpu += cpu if cpu > 0 else DEFAULT_MILLI_CPU_REQUEST
            nz_memory += memory if memory > 0 else DEFAULT_MEMORY_REQUEST
            requested = req.scalars
            if requested and (len(requested) > 1 or PODS not in requested):  # not only a pod count
                for name, value in requested.items():
                    if name != PODS:
                        scalars[name] = scalars.get(name, 0.0) + value
                        if value % 1 or value >= _EXACT:
                            exact = False
            if cpu % 1 or memory % 1 or total_memory >= _EXACT or total_cpu >= _EXACT:
                exact = False
        self.cpu, self.memory, self.nz_cpu, self.nz_memory = total_cpu, total_memory, nz_cpu, nz_memory
        self.exact = exact


class NodePods:
    """Per-node pod lists of one session, kept in step with allocate/deallocate events.

    :param track_usage: also keep per-node request sums (:meth:`usage`).
    """

    __slots__ = ("_usage", "changes", "epoch", "evicted", "nodes")

    def __init__(self, ssn: Session, *, track_usage: bool = False) -> None:
        self.nodes: dict[str, NodeInfo] = ssn.nodes
        #: Tasks evicted during the session, by node: still on the node, no longer a pod of it.
        self.evicted: dict[str, set[str]] = {}
        #: Incremented on every pod change; caches of pod-dependent results compare it.
        self.epoch = 0
        #: Names of the nodes whose pods changed, in order (one entry per change).
        self.changes: list[str] = []
        # A node's request sums are counted from its pods when first asked for, then kept in step.
        self._usage: dict[str, Usage] | None = {} if track_usage else None

    def resume(self, previous: NodePods, delta: SnapshotDelta) -> None:
        """Take over the request sums ``previous`` (the last session's, as it closed) counted.

        Those of unchanged nodes stand. Those of a changed node are brought
        up to date pod by pod when the delta names the tasks the cache
        changed and the sums are exact; otherwise they are dropped (and
        counted again when asked for).
        """
        kept = previous._usage
        if self._usage is None or kept is None:
            return
        placed = delta.tasks
        replaced = delta.replaced_nodes()
        old_nodes, new_nodes, evicted = previous.nodes, self.nodes, previous.evicted
        updated: set[str] = set()
        # Changed nodes with a new copy: the only ones whose tasks may be other objects than before.
        renewed: set[str] = set()
        for name in delta.nodes:
            u = kept.get(name)
            if u is None:
                continue
            old, new = old_nodes.get(name), new_nodes.get(name)
            if placed is None or old is None or new is None or name in replaced or not u.exact:
                del kept[name]
                continue
            before, after = old.tasks, new.tasks
            gone = evicted.get(name, ())
            if old is not new:  # else the same tasks (the cache brought the copy up to date in place)
                renewed.add(name)
                removed = [key for key in before if key not in after]
                for key in removed:
                    if key not in gone:
                        u.apply(before[key], -1)
                if len(after) - len(before) + len(removed):  # else no key is new here
                    for key in after:
                        if key not in before:
                            u.apply(after[key], 1)
            for key in gone:  # evicted by the previous session and still here: a pod again, as a fresh count has it
                if key in before and key in after:
                    u.apply(after[key], 1)
            updated.add(name)
        if placed is not None:
            # A task the cache changed under a key its node kept: its pod may be another one.
            for key, name in placed.items():
                if name in renewed:
                    old_task = old_nodes[name].tasks.get(key)
                    new_task = new_nodes[name].tasks[key]
                    # (A task evicted by the previous session was counted above with its new request.)
                    if (
                        old_task is not None
                        and old_task.resreq is not new_task.resreq
                        and key not in evicted.get(name, ())
                    ):
                        kept[name].apply(old_task, -1)
                        kept[name].apply(new_task, 1)
            for name in updated:
                if not kept[name].exact:
                    del kept[name]
        self._usage = kept

    # ------------------------------------------------------------------ queries

    def count(self, node: NodeInfo) -> int:
        """How many pods the node holds."""
        gone = self.evicted.get(node.name)
        return len(node.tasks) - (len(gone) if gone else 0)

    def pods(self, node: NodeInfo) -> Iterator[TaskInfo]:
        """The node's pods."""
        gone = self.evicted.get(node.name)
        if not gone:
            yield from node.tasks.values()
            return
        for key, task in node.tasks.items():
            if key not in gone:
                yield task

    def usage(self, name: str) -> Usage:
        """The request sums of one node's pods (needs ``track_usage``)."""
        assert self._usage is not None
        u = self._usage.get(name)
        if u is None:
            u = self._usage[name] = Usage()
            node = self.nodes.get(name)
            if node is not None:
                u.add_all(self.pods(node) if self.evicted.get(name) else node.tasks.values())
        return u

    # ------------------------------------------------------------------ events

    def allocated(self, task: TaskInfo) -> NodeInfo | None:
        """A task was placed, pipelined, or its eviction undone: it is a pod of its node again.

        :returns: the task's node, ``None`` when the session does not have it (nothing changes then).
        """
        name = task.node_name
        node = self.nodes.get(name)
        if node is None:
            return None
        gone = self.evicted.get(name)
        if gone:
            gone.discard(task.key)
        usage = self._usage
        if usage is not None:
            u = usage.get(name)
            if u is not None:
                u.apply(task, 1)
        self.epoch += 1
        self.changes.append(name)
        return node

    def deallocated(self, task: TaskInfo) -> NodeInfo | None:
        """A task was evicted or its placement undone: it is no longer a pod of its node.

        :returns: the task's node, ``None`` when the session does not have it (nothing changes then).
        """
        name = task.node_name
        node = self.nodes.get(name)
        if node is None:
            return None
        if task.key in node.tasks:
            gone = self.evicted.get(name)
            if gone is None:
                self.evicted[name] = {task.key}
            else:
                gone.add(task.key)
        usage = self._usage
        if usage is not None:
            u = usage.get(name)
            if u is not None:
                u.apply(task, -1)
        self.epoch += 1
        self.changes.append(name)
        return node
