"""network-topology-aware: keep a job's tasks close together in the HyperNode tree (Volcano v1.14).

The session's tree has a virtual cluster top above every HyperNode
(:data:`~volcanolib.api.hypernode.CLUSTER_TOP`), whose tier counts among the
tiers in use. Scores are fractions between 0 and 1, multiplied by 100 and by
``weight`` before they are handed out.

* **HyperNode gradient** (``hyper_node_gradient``), for a job with a hard
  constraint: the HyperNodes under the search root, one group per tier from
  the lowest, each within ``highestTierAllowed``. The root is the one given
  (the cluster top), or, for a job already placed under a HyperNode, that
  HyperNode's highest ancestor within the allowed tier. A HyperNode whose
  idle (or future idle) resources cannot hold the job's ``minResources`` is
  left out, unless the job is already placed somewhere.
* **HyperNode score** (``hyper_node_order``): how full the HyperNode would
  be with the job: over the resources with a binpack weight that the job's
  tasks request, the weighted mean of ``(used + request) / allocatable``
  (0 when any would overflow); among the best, the share of the job's tasks
  already under each one is added.
* **Node score** (``batch_node_order``), for a task of a job with a network
  topology while ``allocate`` places it: 1 on a node whose lowest-tier
  HyperNode is the one the job's placed tasks share (the *anchor*), else
  ``(max tier - tier of their common ancestor) / (max tier - min tier)``
  (1 when only one tier is in use); among the best nodes, the share of the
  job's tasks under each one's HyperNode is added. Nothing before the
  job's first task is placed.
* **Node score for other pods** (``hypernode.binpack.normal-pod.enable``):
  for a task of a job without a network topology, the HyperNode binpack
  score of each tier's HyperNode spanning the node (1 where none does),
  weighted by ``fading ** (tier - 1)`` and averaged.

.. versionadded:: 0.2
.. versionchanged:: 0.2
   Follows Volcano v1.14.1 (HyperNode gradient, binpack HyperNode scores,
   node scores in hard mode, scores for pods without a network topology).
"""

from __future__ import annotations

from collections import deque
from collections.abc import Callable, Hashable, Mapping, Sequence
from typing import TYPE_CHECKING, ClassVar, Final

import attrs

from volcanolib.api.hypernode import JOB_ALLOCATED_HYPER_NODE, HyperNodeInfo, HyperNodeTree
from volcanolib.api.resource import CPU, MEMORY, Resource
from volcanolib.framework.arguments import argument, argument_per_name
from volcanolib.framework.nodeclass import NodeClassKey
from volcanolib.framework.registry import hookimpl
from volcanolib.framework.traits import Traits

if TYPE_CHECKING:
    from volcanolib.api.job import JobInfo
    from volcanolib.api.node import NodeInfo
    from volcanolib.api.task import TaskInfo
    from volcanolib.framework.session import Session
    from volcanolib.framework.status import Event

__all__ = ["MAX_SCORE", "NetworkTopologyAwareArguments", "NetworkTopologyAwarePlugin"]

#: What a score of 1 becomes before ``weight`` (Kubernetes' highest node score).
MAX_SCORE: Final = 100.0


@attrs.frozen
class NetworkTopologyAwareArguments:
    """The arguments of ``network-topology-aware`` (Volcano's names)."""

    weight: int = argument(key="weight", default=1, doc="Multiplies every score; a negative value means 1.")
    cpu: int = argument(
        key="hypernode.binpack.cpu", default=1, doc="Weight of cpu in HyperNode binpack scores; negative means 1."
    )
    memory: int = argument(
        key="hypernode.binpack.memory",
        default=1,
        doc="Weight of memory in HyperNode binpack scores; negative means 1.",
    )
    resources: str = argument(
        key="hypernode.binpack.resources",
        default="",
        doc="Comma-separated further resources the HyperNode binpack scores count, such as `nvidia.com/gpu`.",
    )
    resource_weights: Mapping[str, int] = argument_per_name(
        key="hypernode.binpack.resources.<name>",
        names="resources",
        default=1,
        doc="Weight of one resource listed in `hypernode.binpack.resources`; a negative value means 1.",
    )
    normal_pods: bool = argument(
        key="hypernode.binpack.normal-pod.enable",
        default=True,
        doc="Score the nodes of tasks without a network topology by the binpack scores of their HyperNodes.",
    )
    fading: float = argument(
        key="hypernode.binpack.normal-pod.fading",
        default=0.8,
        doc="Weight of tier `t` in those scores is `fading ** (t - 1)`; a negative value means 0.8.",
    )


def _positive(value: int) -> int:
    return 1 if value < 0 else value


@attrs.define(eq=False)
class _Status:
    """A HyperNode's resources, summed over its nodes; ``used`` follows the session's placements."""

    allocatable: Resource = attrs.field(factory=Resource)
    used: Resource = attrs.field(factory=Resource)
    idle: Resource = attrs.field(factory=Resource)
    future_idle: Resource = attrs.field(factory=Resource)


def _no_key(node: NodeInfo) -> Hashable:
    return None


#: A task the plugin does not score: one class, kept across sessions.
_UNSCORED: Final = NodeClassKey("network-topology-aware:none", _no_key, pointwise=True, durable=True)
_BY_HYPER_NODES: Final = "network-topology-aware:hyper-nodes"


class NetworkTopologyAwarePlugin:
    """Groups, scores and orders HyperNodes and nodes so that a job's tasks stay close together."""

    name: ClassVar[str] = "network-topology-aware"
    Arguments: ClassVar[type[NetworkTopologyAwareArguments]] = NetworkTopologyAwareArguments
    #: See docs/incremental.md: no clock; job status, if any, only through the session.
    traits: ClassVar[Traits] = Traits(clock_free=True, status_through_session=True)

    def __init__(self, arguments: NetworkTopologyAwareArguments) -> None:
        self.arguments = arguments
        self.weight = _positive(arguments.weight)
        weights = {name: _positive(w) for name, w in arguments.resource_weights.items()}
        weights[CPU] = _positive(arguments.cpu)
        weights[MEMORY] = _positive(arguments.memory)
        #: Binpack weight per resource (resources without one are not counted).
        self.resource_weights: Mapping[str, int] = weights
        self.fading = 0.8 if arguments.fading < 0 else arguments.fading
        self._tree: HyperNodeTree | None = None
        self._status: dict[str, _Status] = {}
        #: Per node: the HyperNodes spanning it.
        self._over: dict[str, list[_Status]] = {}
        #: Per node: per tier in use, the first HyperNode (by name) of that tier spanning it, or ``None``.
        self._per_tier: dict[str, tuple[str | None, ...]] = {}
        self._tier_weights: list[float] = []
        self._min_tier = 0
        self._max_tier = 0
        self._key: NodeClassKey | None = None

    # ------------------------------------------------------------------ session

    @hookimpl
    def on_session_open(self, ssn: Session) -> None:
        """Sum each HyperNode's resources over its nodes, and note the tiers in use."""
        tree = ssn.hyper_nodes
        self._tree = tree
        self._key = None
        tiers = tree.tiers
        self._min_tier, self._max_tier = (tiers[0], tiers[-1]) if tiers else (0, 0)
        self._tier_weights = [self.fading ** (tier - 1) for tier in range(self._min_tier, self._max_tier + 1)]
        status: dict[str, _Status] = {}
        over: dict[str, list[_Status]] = {}
        nodes = ssn.nodes
        for name, info in tree.infos.items():
            sums = status[name] = _Status()
            for node in info.nodes:
                if node.name not in nodes:
                    continue
                sums.allocatable.add(node.allocatable)
                sums.used.add(node.used)
                sums.idle.add(node.idle)
                sums.future_idle.add(node.future_idle())
                over.setdefault(node.name, []).append(sums)
        self._status = status
        self._over = over
        self._per_tier = {}

    @hookimpl
    def on_allocate(self, ssn: Session, event: Event) -> None:
        """A task took resources: the HyperNodes spanning its node are that much more used."""
        for sums in self._over.get(event.task.node_name, ()):
            sums.used.add(event.task.resreq)

    @hookimpl
    def on_deallocate(self, ssn: Session, event: Event) -> None:
        """A task gave resources back: the HyperNodes spanning its node are that much less used."""
        for sums in self._over.get(event.task.node_name, ()):
            sums.used.sub(event.task.resreq)

    # ------------------------------------------------------------------ scores

    def tier_score(self, tier: int) -> float:
        """The score of a common ancestor at ``tier`` (0 to 1): 1 when one tier is in use."""
        low, high = self._min_tier, self._max_tier
        if low == high:
            return 1.0
        if low <= tier <= high:
            return (high - tier) / (high - low)
        return 0.0

    def closeness(self, tree: HyperNodeTree, hyper_node: str | None, anchor: str) -> float:
        """How close ``hyper_node`` is to the job's ``anchor`` (0 to 1), by the tier of their common ancestor."""
        if not hyper_node or not anchor:
            return 0.0
        if hyper_node == anchor:
            return 1.0
        common = tree.join(hyper_node, anchor)
        tier = tree.tier_of(common) if common else None
        return 0.0 if tier is None else self.tier_score(tier)

    def _binpack(self, hyper_node: str, request: Mapping[str, float]) -> float:
        """The HyperNode's binpack score (0 to 1) with ``request`` added; 0 when a resource would overflow."""
        sums = self._status.get(hyper_node)
        total = 0.0
        weight_sum = 0
        weights = self.resource_weights
        for name, amount in request.items():
            weight = weights.get(name)
            if weight is None or sums is None:
                continue
            allocatable = sums.allocatable.get(name)
            after = sums.used.get(name) + amount
            if after > allocatable:
                return 0.0
            total += weight * (after / allocatable)
            weight_sum += weight
        return total / weight_sum if weight_sum > 0 else 0.0

    def _share(self, tree: HyperNodeTree, hyper_node: str | None, job: JobInfo) -> float:
        """The share (0 to 1) of the job's tasks on nodes under ``hyper_node``."""
        if not job.tasks or not hyper_node:
            return 0.0
        return tree.job_task_count(hyper_node, job) / len(job.tasks)

    def _with_ties(
        self, tree: HyperNodeTree, job: JobInfo, scores: dict[str, float], places: dict[str, str | None]
    ) -> None:
        """Add the task share to every candidate with the highest score, when more than one has it."""
        if not scores:
            return
        top = max(scores.values())
        best = [name for name, score in scores.items() if score == top]
        if len(best) > 1:
            for name in best:
                scores[name] += self._share(tree, places[name], job)

    def _scaled(self, scores: Mapping[str, float]) -> dict[str, float]:
        factor = MAX_SCORE * self.weight
        return {name: factor * score for name, score in scores.items()}

    # ------------------------------------------------------------------ hooks

    @hookimpl
    def hyper_node_gradient(self, ssn: Session, job: JobInfo, hyper_node: HyperNodeInfo) -> list[list[str]]:
        """For a hard-mode job, the HyperNodes under the search root by tier, lowest first; else ``hyper_node`` alone.

        Empty when the job is placed under a HyperNode above its allowed tier,
        or outside ``hyper_node``: then it cannot be placed.
        """
        topology = job.pod_group.network_topology
        if topology is None or not topology.hard:
            return [[hyper_node.name]]
        tree = ssn.hyper_nodes
        highest = topology.highest_tier_allowed
        placed = job.pod_group.annotations.get(JOB_ALLOCATED_HYPER_NODE, "")
        root = hyper_node.name
        if placed:
            # The search stays under both the given HyperNode and the highest one the job may spread to.
            allowed = tree.highest_allowed(placed, highest)
            if allowed is None:
                return []
            common = tree.join(root, allowed)
            if common == root:
                root = allowed
            elif common != allowed:
                return []  # the two do not overlap
        needed = job.min_resources()
        children: dict[str, list[str]] = {}
        for name, info in tree.infos.items():
            if info.parent is not None:
                children.setdefault(info.parent, []).append(name)
        by_tier: dict[int, list[str]] = {}
        queue = deque([root])
        seen = {root}
        while queue:
            name = queue.popleft()
            info = tree.infos[name]
            if self._eligible(info, highest, bool(placed), needed):
                by_tier.setdefault(info.tier, []).append(name)
            for child in sorted(children.get(name, ())):
                if child not in seen:
                    seen.add(child)
                    queue.append(child)
        return [by_tier[tier] for tier in sorted(by_tier)]

    def _eligible(self, info: HyperNodeInfo, highest: int, placed: bool, needed: Resource) -> bool:
        if info.tier > highest:
            return False
        if placed:
            return True
        sums = self._status.get(info.name)
        if sums is None:
            return True
        return needed.less_equal(sums.idle) or needed.less_equal(sums.future_idle)

    @hookimpl
    def hyper_node_order(
        self, ssn: Session, job: JobInfo, hyper_nodes: Mapping[str, Sequence[NodeInfo]]
    ) -> Mapping[str, float]:
        """Score candidate HyperNodes by how full they would be with the job's tasks (binpack), ties by task share."""
        request: dict[str, float] = {}
        weights = self.resource_weights
        for task in job.tasks.values():
            for name in task.resreq.names():
                if name in weights:
                    request[name] = request.get(name, 0.0) + task.resreq.get(name)
        scores = {name: self._binpack(name, request) for name in hyper_nodes}
        tree = ssn.hyper_nodes
        self._with_ties(tree, job, scores, {name: name for name in hyper_nodes})
        return self._scaled(scores)

    @hookimpl
    def batch_node_order(self, ssn: Session, task: TaskInfo, nodes: Sequence[NodeInfo]) -> Mapping[str, float]:
        """Score nodes: by closeness to the anchor for a job with a network topology, else by HyperNode binpack."""
        job = ssn.jobs.get(task.job)
        if job is None:
            return {}
        tree = ssn.hyper_nodes
        if job.pod_group.network_topology is not None:
            anchor = ssn.hyper_node_hints.get(job.uid, "")
            if not anchor:
                return {}
            places = {node.name: tree.hyper_node_of(node.name) for node in nodes}
            scores = {name: self.closeness(tree, place, anchor) for name, place in places.items()}
            self._with_ties(tree, job, scores, places)
            return self._scaled(scores)
        if not self.arguments.normal_pods or not self._tier_weights:
            return {}
        weights = self._tier_weights
        total_weight = sum(weights)
        if total_weight <= 0:
            return {}
        request = {name: task.resreq.get(name) for name in task.resreq.names() if name in self.resource_weights}
        by_hyper_node: dict[str, float] = {}
        out: dict[str, float] = {}
        for node in nodes:
            total = 0.0
            for weight, hyper_node in zip(weights, self._tiers_of(tree, node.name), strict=True):
                if hyper_node is None:
                    score = 1.0  # no HyperNode of this tier spans the node: such nodes are preferred
                else:
                    found = by_hyper_node.get(hyper_node)
                    score = by_hyper_node[hyper_node] = self._binpack(hyper_node, request) if found is None else found
                total += weight * score
            out[node.name] = total / total_weight
        return self._scaled(out)

    def _tiers_of(self, tree: HyperNodeTree, node: str) -> tuple[str | None, ...]:
        """Per tier in use, lowest first: the first HyperNode (by name) of that tier spanning ``node``, or ``None``."""
        found = self._per_tier.get(node)
        if found is None:
            by_tier = tree.by_tier
            found = tuple(
                next((name for name in by_tier.get(tier, ()) if node in tree.infos[name].node_names), None)
                for tier in range(self._min_tier, self._max_tier + 1)
            )
            self._per_tier[node] = found
        return found

    @hookimpl
    def node_class_key(self, ssn: Session, task: TaskInfo) -> NodeClassKey | None:
        """Nodes score alike when the same HyperNodes span them; none for a placed topology job.

        A job with a network topology is not scored before its first task is
        placed (one class). Once it is, the task-share tie-break depends on
        which nodes tie, so nodes are not grouped (``None``). A task of another
        job, with HyperNode binpack scores, has nodes grouped by the
        HyperNodes spanning them; the scores move with every placement under
        those HyperNodes, so they are not remembered between tasks.
        """
        job = ssn.jobs.get(task.job)
        if job is None:
            return _UNSCORED
        if job.pod_group.network_topology is not None:
            return None if ssn.hyper_node_hints.get(job.uid) else _UNSCORED
        if not self.arguments.normal_pods or not self._tier_weights:
            return _UNSCORED
        tree = ssn.hyper_nodes
        if self._key is None:
            self._key = NodeClassKey(_BY_HYPER_NODES, self._class_of(tree))
        return self._key

    def _class_of(self, tree: HyperNodeTree) -> Callable[[NodeInfo], Hashable]:
        def key(node: NodeInfo) -> Hashable:
            return self._tiers_of(tree, node.name)

        return key
