"""network-topology-aware: keep a job's tasks close together in the HyperNode tree.

Only jobs whose PodGroup sets ``spec.networkTopology`` are scored, and only
once some of their tasks are placed: the HyperNode those tasks share (the
PodGroup annotation ``volcano.sh/job-allocated-hypernode`` for a job placed
in earlier sessions; while ``allocate`` places a soft-mode job, the one its
tasks placed so far share) is the *anchor*.

* **Tier score.** A HyperNode scores 100 when it is the anchor, else
  ``100 * (max tier - tier of its lowest common ancestor with the anchor)
  / (max tier - min tier)`` over the tiers in use (0 when there is one tier,
  or no common ancestor); times ``weight``.
* **Task-count tie-break.** When several candidates share the top tier
  score, each of them adds ``100 * (tasks of the job under it) / (tasks of
  the job)``, times ``weight``.
* ``hyper_node_order`` scores candidate HyperNodes that way for a job with
  a hard constraint (``allocate`` picks the best HyperNode with it);
  ``batch_node_order`` scores each node by its lowest-tier HyperNode for a
  job being placed in soft mode.

.. versionadded:: 0.2
"""

from __future__ import annotations

from collections.abc import Callable, Hashable, Mapping, Sequence
from typing import TYPE_CHECKING, ClassVar, Final

import attrs

from volcanolib.api.hypernode import JOB_ALLOCATED_HYPER_NODE, HyperNodeTree
from volcanolib.framework.arguments import argument
from volcanolib.framework.nodeclass import NodeClassKey
from volcanolib.framework.registry import hookimpl
from volcanolib.framework.traits import Traits

if TYPE_CHECKING:
    from volcanolib.api.job import JobInfo
    from volcanolib.api.node import NodeInfo
    from volcanolib.api.task import TaskInfo
    from volcanolib.framework.session import Session

__all__ = ["BASE_SCORE", "NetworkTopologyAwareArguments", "NetworkTopologyAwarePlugin"]

#: The score of the anchor itself, and of a full task-count share.
BASE_SCORE: Final = 100.0


@attrs.frozen
class NetworkTopologyAwareArguments:
    """The arguments of ``network-topology-aware``."""

    weight: int = argument(key="weight", default=1, doc="Multiplies the HyperNode and node scores.")


def _no_key(node: NodeInfo) -> Hashable:
    return None


#: Without an anchor the plugin neither filters nor scores: one class, kept across sessions.
_UNSCORED: Final = NodeClassKey("network-topology-aware:none", _no_key, pointwise=True, durable=True)
_BY_HYPER_NODE: Final = "network-topology-aware:hyper-node"


def _hyper_node_of(tree: HyperNodeTree) -> Callable[[NodeInfo], Hashable]:
    """A node's lowest-tier HyperNode in ``tree``."""

    def key(node: NodeInfo) -> Hashable:
        return tree.hyper_node_of(node.name)

    return key


class NetworkTopologyAwarePlugin:
    """Scores HyperNodes and nodes by how close they are to where the job's tasks already are."""

    name: ClassVar[str] = "network-topology-aware"
    Arguments: ClassVar[type[NetworkTopologyAwareArguments]] = NetworkTopologyAwareArguments
    #: See docs/incremental.md: no clock; job status, if any, only through the session.
    traits: ClassVar[Traits] = Traits(clock_free=True, status_through_session=True)

    def __init__(self, arguments: NetworkTopologyAwareArguments) -> None:
        self.arguments = arguments
        self.weight = arguments.weight
        # The class key over the current session's tree, made once per session.
        self._key: tuple[HyperNodeTree, NodeClassKey] | None = None

    # ------------------------------------------------------------------ scores

    def tier_score(self, tree: HyperNodeTree, hyper_node: str | None, anchor: str) -> float:
        """The tier score of ``hyper_node`` against the job's ``anchor``, unweighted (0 to 100)."""
        if hyper_node is None:
            return 0.0
        if hyper_node == anchor:
            return BASE_SCORE
        common = tree.lowest_common_ancestor(hyper_node, anchor)
        tier = tree.tier_of(common) if common is not None else None
        if tier is None or not tree.tiers:
            return 0.0
        low, high = tree.tiers[0], tree.tiers[-1]
        if low == high:
            return 0.0
        return BASE_SCORE * (high - tier) / (high - low)

    def _share(self, tree: HyperNodeTree, hyper_node: str | None, job: JobInfo) -> float:
        if hyper_node is None or not job.tasks:
            return 0.0
        return BASE_SCORE * tree.job_task_count(hyper_node, job) / len(job.tasks)

    def _scored(
        self, tree: HyperNodeTree, job: JobInfo, anchor: str, places: dict[str, str | None]
    ) -> dict[str, float]:
        """Scores of candidates (name -> its HyperNode): tier score, then the task-count tie-break among the best."""
        weight = self.weight
        scores = {name: self.tier_score(tree, hn, anchor) * weight for name, hn in places.items()}
        if not scores:
            return scores
        top = max(scores.values())
        best = [name for name, score in scores.items() if score == top]
        if len(best) > 1:
            for name in best:
                scores[name] += self._share(tree, places[name], job) * weight
        return scores

    # ------------------------------------------------------------------ hooks

    @hookimpl
    def hyper_node_order(
        self, ssn: Session, job: JobInfo, hyper_nodes: Mapping[str, Sequence[NodeInfo]]
    ) -> Mapping[str, float]:
        """Score candidate HyperNodes against the HyperNode the job's placed tasks share; none before any is placed."""
        anchor = job.pod_group.annotations.get(JOB_ALLOCATED_HYPER_NODE, "")
        if not anchor:
            return {}
        return self._scored(ssn.hyper_nodes, job, anchor, {name: name for name in hyper_nodes})

    @hookimpl
    def batch_node_order(self, ssn: Session, task: TaskInfo, nodes: Sequence[NodeInfo]) -> Mapping[str, float]:
        """Score nodes by their lowest-tier HyperNode, for a soft-mode job being placed whose tasks share one."""
        anchor = self._anchor(ssn, task)
        if not anchor:
            return {}
        tree = ssn.hyper_nodes
        job = ssn.jobs[task.job]
        return self._scored(tree, job, anchor, {node.name: tree.hyper_node_of(node.name) for node in nodes})

    def _anchor(self, ssn: Session, task: TaskInfo) -> str:
        job = ssn.jobs.get(task.job)
        if job is None or job.pod_group.network_topology is None:
            return ""
        return ssn.hyper_node_hints.get(job.uid, "")

    @hookimpl
    def node_class_key(self, ssn: Session, task: TaskInfo) -> NodeClassKey:
        """Nodes score alike when they are under the same lowest-tier HyperNode (all alike without an anchor).

        With an anchor the scores move as the job's tasks are placed, so they
        are not remembered between tasks (not pointwise).
        """
        if not self._anchor(ssn, task):
            return _UNSCORED
        tree = ssn.hyper_nodes
        if self._key is None or self._key[0] is not tree:
            self._key = (tree, NodeClassKey(_BY_HYPER_NODE, _hyper_node_of(tree)))
        return self._key[1]
