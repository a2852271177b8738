"""HyperNodes: the network topology of a cluster, as Volcano's ``topology.volcano.sh/v1alpha1`` objects describe it.

A :class:`HyperNode` is a performance domain (a switch, a rack, a
superpod) at a numbered *tier*: tier 1 groups nodes, higher tiers group
HyperNodes of lower tiers. Its members are nodes or other HyperNodes, chosen
by exact name, by a regular expression over node names, or by node labels.

:class:`HyperNodeTree` is the tree a session works with: built from the
HyperNodes and the snapshot's ready nodes under a virtual cluster top
(:data:`CLUSTER_TOP`), it says which nodes each HyperNode spans, each
HyperNode's parent, the tiers in use, the lowest common ancestor of two
HyperNodes, the lowest-tier HyperNode of a node, and the HyperNode a job's
placed tasks share.

.. versionadded:: 0.2
"""

from __future__ import annotations

import enum
import re
from collections.abc import Iterable, Iterator, Mapping, Sequence, Set
from typing import TYPE_CHECKING, Final

import attrs

from volcanolib.api.task import ALLOCATED_STATUSES, in_statuses

if TYPE_CHECKING:
    from volcanolib.api.job import JobInfo
    from volcanolib.api.node import NodeInfo

__all__ = [
    "CLUSTER_TOP",
    "JOB_ALLOCATED_HYPER_NODE",
    "HyperNode",
    "HyperNodeInfo",
    "HyperNodeMember",
    "HyperNodeTree",
    "LabelRequirement",
    "MemberType",
    "NetworkTopology",
    "set_allocated_hyper_node",
]

#: The PodGroup annotation naming the HyperNode a job's placed tasks share (their lowest common ancestor).
JOB_ALLOCATED_HYPER_NODE: Final = "volcano.sh/job-allocated-hypernode"
#: The name of the virtual HyperNode above all others, spanning every ready node (Volcano's name).
CLUSTER_TOP: Final = "<cluster-top-hypernode>"


class MemberType(str, enum.Enum):
    """What a HyperNode member is."""

    NODE = "Node"
    HYPER_NODE = "HyperNode"

    def __str__(self) -> str:
        return self.value


@attrs.frozen
class LabelRequirement:
    """One ``matchExpressions`` entry of a label selector (``In``, ``NotIn``, ``Exists``, ``DoesNotExist``)."""

    key: str
    operator: str
    values: tuple[str, ...] = ()

    def matches(self, labels: Mapping[str, str]) -> bool:
        """Whether labels satisfy the requirement."""
        op = self.operator
        if op == "In":
            return labels.get(self.key) in self.values
        if op == "NotIn":
            return self.key not in labels or labels[self.key] not in self.values
        if op == "Exists":
            return self.key in labels
        return self.key not in labels  # DoesNotExist


@attrs.frozen
class HyperNodeMember:
    """One member entry: a type and exactly one selector (``exact``, ``regex`` or labels)."""

    type: MemberType
    #: ``exactMatch.name``; empty when another selector is used.
    exact: str = ""
    #: ``regexMatch.pattern``; empty when another selector is used.
    regex: str = ""
    #: ``labelMatch.matchLabels``.
    match_labels: Mapping[str, str] = attrs.field(factory=dict)
    #: ``labelMatch.matchExpressions``.
    match_expressions: tuple[LabelRequirement, ...] = ()

    @property
    def by_labels(self) -> bool:
        """Whether the member selects nodes by labels."""
        return not self.exact and not self.regex

    def selects(self, node: NodeInfo) -> bool:
        """Whether this (``Node``-typed) member selects ``node``."""
        if self.exact:
            return node.name == self.exact
        if self.regex:
            return re.search(self.regex, node.name) is not None
        labels = node.node.labels if node.node is not None else {}
        if not self.match_labels and not self.match_expressions:
            return False  # an empty label selector selects nothing here
        if any(labels.get(k) != v for k, v in self.match_labels.items()):
            return False
        return all(req.matches(labels) for req in self.match_expressions)


@attrs.frozen
class HyperNode:
    """A HyperNode object: its name, tier and members."""

    name: str
    tier: int
    members: tuple[HyperNodeMember, ...] = ()
    tier_name: str = ""


@attrs.frozen
class NetworkTopology:
    """A PodGroup's ``spec.networkTopology``: how closely its tasks must sit in the HyperNode tree.

    ``hard``: every task of the job goes under one HyperNode of tier
    ``highest_tier_allowed`` or lower; ``soft``: the scheduler prefers
    that, without refusing other nodes.
    """

    mode: str = "hard"
    highest_tier_allowed: int = 1

    @property
    def hard(self) -> bool:
        """Whether the constraint is hard."""
        return self.mode == "hard"


@attrs.define(eq=False)
class HyperNodeInfo:
    """One HyperNode in a session's tree."""

    name: str
    tier: int
    #: The HyperNode listing this one as a member (``None`` at the top).
    parent: str | None = None
    #: Ready nodes under this HyperNode, in the snapshot's node order.
    nodes: list[NodeInfo] = attrs.field(factory=list)
    #: Names of :attr:`nodes`.
    node_names: Set[str] = frozenset()


class _Names(Set[str]):
    """The names of a list of nodes, gathered into a set only when first asked (the cluster top spans every node)."""

    __slots__ = ("_names", "_nodes")

    def __init__(self, nodes: Sequence[NodeInfo]) -> None:
        self._nodes = nodes
        self._names: frozenset[str] | None = None

    def _set(self) -> frozenset[str]:
        if self._names is None:
            self._names = frozenset(node.name for node in self._nodes)
        return self._names

    def __contains__(self, name: object) -> bool:
        return name in self._set()

    def __iter__(self) -> Iterator[str]:
        return iter(self._set())

    def __len__(self) -> int:
        return len(self._nodes)


class HyperNodeTree:
    """The HyperNodes of a session, resolved against its ready nodes, under a virtual cluster top.

    Members of type ``HyperNode`` are named exactly; a name that is no
    HyperNode is ignored. A HyperNode listed by several others takes the
    first (by name) as its parent. As in Volcano (v1.14), the session adds
    a virtual HyperNode :data:`CLUSTER_TOP` one tier above the highest (tier
    1 when the cluster has no HyperNode): it is the parent of every
    HyperNode without one and spans every ready node, so that any two
    HyperNodes have a common ancestor. Names are visited in sorted order
    wherever Volcano walks a map, so that answers are deterministic.

    :param hyper_nodes: the HyperNode objects.
    :param nodes: the session's ready nodes, in order.
    """

    __slots__ = ("_leaf", "by_tier", "infos", "real", "tiers", "top")

    def __init__(self, hyper_nodes: Iterable[HyperNode], nodes: Sequence[NodeInfo]) -> None:
        specs = {hn.name: hn for hn in hyper_nodes}
        #: How many HyperNodes the cluster has (the cluster top left out).
        self.real = len(specs)
        #: Every HyperNode by name, the cluster top included.
        self.infos: dict[str, HyperNodeInfo] = {name: HyperNodeInfo(name, spec.tier) for name, spec in specs.items()}
        for name in sorted(specs):
            for member in specs[name].members:
                if member.type is MemberType.HYPER_NODE:
                    child = self.infos.get(member.exact)
                    if child is not None and child.parent is None and child.name != name:
                        child.parent = name
        direct: dict[str, set[str]] = {}
        for name, spec in specs.items():
            chosen: set[str] = set()
            for member in spec.members:
                if member.type is MemberType.NODE:
                    chosen.update(node.name for node in nodes if member.selects(node))
            direct[name] = chosen
        children: dict[str, list[str]] = {}
        for info in self.infos.values():
            if info.parent is not None:
                children.setdefault(info.parent, []).append(info.name)
        under: dict[str, set[str]] = {}

        def collect(name: str, seen: frozenset[str]) -> set[str]:
            found = under.get(name)
            if found is not None:
                return found
            names = set(direct[name])
            for child in children.get(name, ()):
                if child not in seen:
                    names |= collect(child, seen | {child})
            under[name] = names
            return names

        for name, info in self.infos.items():
            names = collect(name, frozenset({name}))
            info.node_names = frozenset(names)
            info.nodes = [node for node in nodes if node.name in names]
        real_tiers = {info.tier for info in self.infos.values()}
        top = HyperNodeInfo(CLUSTER_TOP, max(real_tiers) + 1 if real_tiers else 1)
        top.nodes = list(nodes)
        top.node_names = _Names(top.nodes)
        for info in self.infos.values():
            if info.parent is None:
                info.parent = CLUSTER_TOP
        self.infos[CLUSTER_TOP] = top
        #: The virtual cluster top.
        self.top: HyperNodeInfo = top
        #: Tiers in use, ascending (the cluster top's last).
        self.tiers: list[int] = sorted({info.tier for info in self.infos.values()})
        #: HyperNode names per tier, sorted.
        self.by_tier: dict[int, list[str]] = {
            tier: sorted(n for n, i in self.infos.items() if i.tier == tier) for tier in self.tiers
        }
        self._leaf: dict[str, str | None] = {}

    def __bool__(self) -> bool:
        """Whether the cluster has HyperNodes (the cluster top aside)."""
        return self.real > 0

    def __len__(self) -> int:
        return self.real

    def ancestors(self, name: str) -> list[str]:
        """``name`` and its ancestors, from it up to the cluster top."""
        chain: list[str] = []
        current: str | None = name
        while current is not None and current in self.infos and current not in chain:
            chain.append(current)
            current = self.infos[current].parent
        return chain

    def lowest_common_ancestor(self, left: str, right: str) -> str | None:
        """The lowest HyperNode that has both ``left`` and ``right`` under it (or is one of them); ``None`` if none."""
        if left == right:
            return left if left in self.infos else None
        mine = self.ancestors(left)
        theirs = set(self.ancestors(right))
        for name in mine:
            if name in theirs:
                return name
        return None

    def join(self, left: str, right: str) -> str:
        """Volcano's ``GetLCAHyperNode``: the common ancestor of two HyperNodes, where an empty name is no constraint.

        ``join("", x)`` is ``x``; the result is ``""`` when the two have no common ancestor.
        """
        if not left:
            return right
        if not right:
            return left
        return self.lowest_common_ancestor(left, right) or ""

    def tier_of(self, name: str) -> int | None:
        """The tier of a HyperNode, ``None`` for an unknown name."""
        info = self.infos.get(name)
        return info.tier if info is not None else None

    def hyper_node_of(self, node: str) -> str | None:
        """The HyperNode of the lowest tier in use that spans ``node`` (first by name); ``None`` when none does.

        Only the lowest tier is searched, as Volcano's ``FindHyperNodeForNode``
        does: a node that no HyperNode of that tier spans has none.
        """
        if node in self._leaf:
            return self._leaf[node]
        found: str | None = None
        if self.tiers:
            for name in self.by_tier[self.tiers[0]]:
                if node in self.infos[name].node_names:
                    found = name
                    break
        self._leaf[node] = found
        return found

    def job_task_count(self, name: str, job: JobInfo) -> int:
        """How many of the job's tasks sit on nodes under HyperNode ``name``."""
        info = self.infos.get(name)
        if info is None:
            return 0
        names = info.node_names
        return sum(1 for task in job.tasks.values() if task.node_name and task.node_name in names)

    def highest_allowed(self, allocated: str, highest_tier: int) -> str | None:
        """The highest ancestor of ``allocated`` (itself included) whose tier is at most ``highest_tier``.

        ``None`` when ``allocated`` itself is above that tier (or unknown):
        a job placed under it cannot be placed further within its limit.
        """
        found: str | None = None
        for name in self.ancestors(allocated):
            if self.infos[name].tier > highest_tier:
                break
            found = name
        return found

    def recovered(self, job: JobInfo) -> str:
        """The HyperNode a job's placed tasks share, worked out from their nodes, as Volcano recovers it.

        The lowest-tier HyperNode (the first by name) that spans the node of
        every task in an allocated status (Bound, Binding, Running,
        Allocated); ``""`` when the job has none, or when no HyperNode spans
        them all.
        """
        candidates: set[str] | None = None
        for task in job.tasks.values():
            if not in_statuses(task.status, ALLOCATED_STATUSES) or not task.node_name:
                continue
            pool = self.infos if candidates is None else candidates
            candidates = {name for name in pool if task.node_name in self.infos[name].node_names}
            if not candidates:
                return ""
        if not candidates:
            return ""
        return min(candidates, key=lambda name: (self.infos[name].tier, name))

    def allocated_hyper_node(self, job: JobInfo) -> str:
        """The HyperNode a job's placed tasks share, as a session opens (Volcano's session rules).

        The job's annotation :data:`JOB_ALLOCATED_HYPER_NODE`, dropped when
        it names no HyperNode of the session or when no task of the job is in
        an allocated status; when it is empty and the job sets a network
        topology, :meth:`recovered` from the tasks' nodes.
        """
        recorded = job.pod_group.annotations.get(JOB_ALLOCATED_HYPER_NODE, "")
        if recorded and (recorded not in self.infos or not job.count(ALLOCATED_STATUSES)):
            recorded = ""
        if not recorded and job.pod_group.network_topology is not None:
            recorded = self.recovered(job)
        return recorded


def set_allocated_hyper_node(job: JobInfo, hyper_node: str) -> None:
    """Record in the job's PodGroup annotation :data:`JOB_ALLOCATED_HYPER_NODE` the HyperNode its placed tasks share.

    The annotations mapping is replaced, never changed in place: a snapshot's
    PodGroup may share it with the cache's.
    """
    pg = job.pod_group
    if pg.annotations.get(JOB_ALLOCATED_HYPER_NODE, "") != hyper_node:
        pg.annotations = {**pg.annotations, JOB_ALLOCATED_HYPER_NODE: hyper_node}
