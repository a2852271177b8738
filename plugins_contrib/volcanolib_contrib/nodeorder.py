"""nodeorder: the Kubernetes score plugins, weighted, as the current Volcano runs them.

Every score below is a Kubernetes score (an integer, 0..100 after
normalisation, node affinity's sum of weights aside) multiplied by its
weight argument; the node's score is the sum. All of them are computed in :meth:`NodeOrderPlugin.batch_node_order`
over the candidate nodes, because several are normalised over them:

``leastrequested`` (NodeResourcesFit, LeastAllocated, cpu 50 / memory 50)
    per resource ``(allocatable - requested) * 100 // allocatable`` (0 when
    over), where requested counts every pod on the node plus the task, a pod
    without a cpu (memory) request counting 100 millicores (200 MiB); the
    weighted average (integer division).
``mostrequested`` (MostAllocated, cpu 1 / memory 1)
    per resource ``min(requested, allocatable) * 100 // allocatable``, same
    defaults, weighted average.
``balancedresource`` (NodeResourcesBalancedAllocation over cpu, memory,
    ``nvidia.com/gpu``)
    with actual requests: fractions ``min(requested / allocatable, 1)`` of
    the resources the node has (a scalar only when the task asks for it);
    ``(1 - std) * 100`` truncated, std = ``|f1 - f2| / 2`` for two fractions,
    the population standard deviation for more. Skipped for a task that
    requests none of them.
``nodeaffinity``
    sum of the weights of the preferred node affinity terms the node
    matches, not normalised (Volcano scores it node by node, without the
    Kubernetes plugin's normalisation over the candidates).
``podaffinity`` (InterPodAffinity)
    for every topology domain, the weights of the task's preferred terms
    matched by pods there (anti-affinity subtracting) plus the preferred
    terms of those pods matched by the task; a node scores the sum over its
    domains, normalised min-max to 0..100. Skipped when nothing applies.
    For a task without preferred terms of its own, only the pods on the
    nodes that held a pod with affinity when the session opened count
    (Volcano lists those nodes once per session).
``tainttoleration``
    the node's PreferNoSchedule taints the task does not tolerate, counted,
    normalised by the maximum and reversed (no such taint anywhere: 100).
``imagelocality``
    the sizes of the task's images present on the node, each scaled by the
    share of nodes that have it, clamped to 23 MiB .. 1000 MiB per container
    and mapped to 0..100 (0 for a task without images).
``podtopologyspread``
    soft (``ScheduleAnyway``) topology spread constraints: a node scores
    ``matching pods in its domain * log(domains + 2) + maxSkew - 1`` summed
    over the constraints, normalised so that the emptiest domain gets 100.
    Skipped without soft constraints.

The node's pods are the snapshot's tasks plus this session's placements
minus its evictions, kept in step by ``on_allocate`` / ``on_deallocate``.
"""

from __future__ import annotations

import math
import operator
from collections.abc import Callable, Hashable, Mapping, Sequence
from types import MappingProxyType
from typing import TYPE_CHECKING, Any, ClassVar, Final

import attrs

from volcanolib.api.task import TaskStatus
from volcanolib.framework.arguments import argument, argument_specs
from volcanolib.framework.nodeclass import NodeClassKey
from volcanolib.framework.registry import hookimpl
from volcanolib.framework.traits import Traits
from volcanolib_contrib import _k8s
from volcanolib_contrib._nodepods import (
    DEFAULT_MEMORY_REQUEST,
    DEFAULT_MILLI_CPU_REQUEST,
    NodePods,
    Usage,
    pods_where,
    resumed_pods,
)

if TYPE_CHECKING:
    from volcanolib.api.cluster import SnapshotDelta
    from volcanolib.api.node import NodeInfo
    from volcanolib.api.task import TaskInfo
    from volcanolib.framework.session import Session
    from volcanolib.framework.status import Event

__all__ = ["NodeOrderArguments", "NodeOrderPlugin"]


@attrs.frozen
class NodeOrderArguments:
    """The weights of the score plugins (Volcano's current defaults); a weight of 0 switches that score off."""

    least_requested: int = argument(
        key="leastrequested.weight", default=1, doc="Prefer nodes with more free cpu and memory."
    )
    most_requested: int = argument(
        key="mostrequested.weight", default=0, doc="Prefer nodes with less free cpu and memory."
    )
    balanced_resource: int = argument(
        key="balancedresource.weight",
        default=1,
        doc="Prefer nodes whose cpu, memory (and GPU) usage stay balanced.",
    )
    node_affinity: int = argument(key="nodeaffinity.weight", default=2, doc="Preferred node affinity terms.")
    pod_affinity: int = argument(
        key="podaffinity.weight", default=2, doc="Preferred inter-pod affinity and anti-affinity."
    )
    taint_toleration: int = argument(
        key="tainttoleration.weight", default=3, doc="Avoid untolerated PreferNoSchedule taints."
    )
    image_locality: int = argument(
        key="imagelocality.weight", default=1, doc="Prefer nodes that already have the task's images."
    )
    pod_topology_spread: int = argument(
        key="podtopologyspread.weight", default=2, doc="`ScheduleAnyway` topology spread constraints."
    )


_GPU: Final = "nvidia.com/gpu"
_MIB: Final = 1024 * 1024
_MIN_IMAGE_THRESHOLD: Final = 23 * _MIB
_MAX_CONTAINER_IMAGE_THRESHOLD: Final = 1000 * _MIB
_MAX: Final = _k8s.MAX_NODE_SCORE
_RELEASING: Final = TaskStatus.RELEASING
_MAX_SIGNATURES: Final = 256
_NODE_NAME: Final = operator.attrgetter("name")

# A task's resource signature: (cpu, memory, gpu) as the score plugins read them.
_Signature = tuple[float, float, float]


def _least(requested: float, capacity: float) -> int:
    if capacity == 0 or requested > capacity:
        return 0
    return int((capacity - requested) * _MAX // capacity)


def _most(requested: float, capacity: float) -> int:
    if capacity == 0:
        return 0
    requested = min(requested, capacity)
    return int(requested * _MAX // capacity)


class _SignatureScores:
    """Resource scores of every node for one task signature, refreshed for the nodes whose pods changed."""

    __slots__ = ("scores", "seen")

    def __init__(self) -> None:
        self.scores: dict[str, float] = {}
        self.seen = 0


class NodeOrderPlugin:
    """Scores nodes with the Kubernetes score plugins (resources, affinity, taints, images, spread).

    Arguments: the weights in :class:`NodeOrderArguments` (integers; 0
    switches a score off).
    """

    name: ClassVar[str] = "nodeorder"
    Arguments: ClassVar[type[NodeOrderArguments]] = NodeOrderArguments
    #: See docs/incremental.md: no clock; job status, if any, only through the session.
    traits: ClassVar[Traits] = Traits(clock_free=True, status_through_session=True)

    def __init__(self, arguments: NodeOrderArguments) -> None:
        self.arguments = arguments
        #: Every weight by its argument key.
        self.weights: Mapping[str, int] = {
            spec.key: getattr(arguments, spec.field) for spec in argument_specs(NodeOrderArguments)
        }
        self.least_weight = arguments.least_requested
        self.most_weight = arguments.most_requested
        self.balanced_weight = arguments.balanced_resource
        self.node_affinity_weight = arguments.node_affinity
        self.pod_affinity_weight = arguments.pod_affinity
        self.taint_weight = arguments.taint_toleration
        self.image_weight = arguments.image_locality
        self.spread_weight = arguments.pod_topology_spread
        self._reset(None)

    def _reset(self, ssn: Session | None) -> None:
        self._ssn = ssn
        self._pods: NodePods | None = NodePods(ssn, track_usage=True) if ssn is not None else None
        self._resource_cache: dict[_Signature, _SignatureScores] = {}
        self._image_nodes: dict[str, int] = {}
        #: How many nodes have a PreferNoSchedule taint.
        self._tainted = 0
        self._prefer_tainted = False
        self._preferred: dict[str, _k8s.PreferredTerms] = {}
        self._affinities: dict[str, _k8s.PodAffinity] = {}
        self._spreads: dict[str, list[_k8s.SpreadConstraint]] = {}
        self._affinity_pods: dict[str, TaskInfo] = {}
        #: The nodes that held a pod with affinity when the session opened: Volcano lists them once per
        #: session, so the pods with affinity placed on other nodes since then do not score other pods.
        self._affinity_nodes: frozenset[str] = frozenset()
        #: Node class keys by task template (what they read is fixed for a template within a session);
        #: ``None`` for a template whose pod affinity or soft spread constraints the scores read.
        self._class_keys: dict[str, NodeClassKey | None] = {}
        #: The class keys made this session, by token (equal tokens read nodes alike: one key object serves).
        self._keys_by_token: dict[Hashable, NodeClassKey] = {}

    # ------------------------------------------------------------------ session lifecycle

    @hookimpl
    def on_session_open(self, ssn: Session) -> None:
        """Reset the per-session state: node pod lists and request sums, image counts, pods with affinity."""
        self._reset(ssn)
        images: dict[str, int] = {}
        for node in ssn.node_list:
            self._count_node(images, node, 1)
        self._image_nodes = images
        self._prefer_tainted = self._tainted > 0
        self._affinity_pods = pods_where(ssn.node_list, self._has_affinity, affinity_only=True)
        self._affinity_nodes = frozenset(t.node_name for t in self._affinity_pods.values())

    @hookimpl
    def on_session_resume(self, ssn: Session, delta: SnapshotDelta) -> None:
        """Open as :meth:`on_session_open` would, reading again only the nodes the delta names.

        Per-node request sums, image counts, tainted nodes and pods with
        affinity are kept from the previous session; per-template terms
        and cached scores start afresh.
        """
        previous, pods, images, tainted, affinity = (
            self._ssn,
            self._pods,
            self._image_nodes,
            self._tainted,
            self._affinity_pods,
        )
        if previous is None or pods is None:
            self.on_session_open(ssn)
            return
        self._reset(ssn)
        assert self._pods is not None
        self._pods.resume(pods, delta)
        self._tainted = tainted
        old, new = previous.nodes, ssn.nodes
        for name in delta.replaced_nodes():  # the others kept their Node
            gone = old.get(name)
            if gone is not None:
                self._count_node(images, gone, -1)
            node = new.get(name)
            if node is not None:
                self._count_node(images, node, 1)
        self._image_nodes = {image: count for image, count in images.items() if count}
        self._prefer_tainted = self._tainted > 0
        self._affinity_pods = resumed_pods(affinity, new, delta, self._has_affinity)
        self._affinity_nodes = frozenset(t.node_name for t in self._affinity_pods.values())

    def _count_node(self, images: dict[str, int], node: NodeInfo, sign: int) -> None:
        """Count (``sign`` 1) or uncount (-1) a node's images and PreferNoSchedule taint."""
        for image in node.node.images:
            images[image] = images.get(image, 0) + sign
        if any(t.effect == "PreferNoSchedule" for t in node.node.taints):
            self._tainted += sign

    def kept_state(self) -> tuple[dict[str, Any], dict[str, int], bool, dict[str, TaskInfo]]:
        """What the plugin keeps between sessions: request sums by node, image counts, taints, pods with affinity.

        Every node's request sums are counted, if they were not yet, to be shown.
        """
        pods, ssn = self._pods, self._ssn
        sums: dict[str, Any] = {}
        if pods is not None and ssn is not None:
            for node in ssn.node_list:
                u = pods.usage(node.name)
                sums[node.name] = (u.cpu, u.memory, u.nz_cpu, u.nz_memory, dict(u.scalars))
        return sums, self._image_nodes, self._prefer_tainted, self._affinity_pods

    @hookimpl
    def on_allocate(self, ssn: Session, event: Event) -> None:
        """A task took a place on a node: count its pod and its requests there."""
        pods = self._pods
        if pods is not None:
            task = event.task
            pods.allocated(task)
            pod = task.pod
            # Most pods have no affinity: _has_affinity's first test, inline (twice per placement or eviction).
            if pod is not None and pod.affinity and task.node_name in ssn.nodes and self._has_affinity(task):
                self._affinity_pods[task.key] = task

    @hookimpl
    def on_deallocate(self, ssn: Session, event: Event) -> None:
        """A task left its node: stop counting it there."""
        pods = self._pods
        if pods is not None:
            task = event.task
            pods.deallocated(task)
            if self._affinity_pods:
                self._affinity_pods.pop(task.key, None)

    # ------------------------------------------------------------------ parsed terms

    def _pod_affinity(self, task: TaskInfo) -> _k8s.PodAffinity:
        """The (anti-)affinity terms of a pod, parsed once per template."""
        return _k8s.task_pod_affinity(task, self._affinities)

    def _has_affinity(self, task: TaskInfo) -> bool:
        pod = task.pod
        if pod is None or not pod.affinity:
            return False
        if "podAffinity" not in pod.affinity and "podAntiAffinity" not in pod.affinity:
            return False
        return self._pod_affinity(task).any

    # ------------------------------------------------------------------ resource scores

    @staticmethod
    def _signature(task: TaskInfo) -> _Signature:
        req = task.resreq
        return (req.milli_cpu, req.memory, req.scalars.get(_GPU, 0.0))

    def _resource_score(self, sig: _Signature, node: NodeInfo, usage: Usage) -> float:
        """LeastAllocated, MostAllocated and BalancedAllocation of one node, weighted and summed."""
        if not (self.least_weight or self.most_weight or self.balanced_weight):
            return 0.0
        cpu, memory, gpu = sig
        alloc = node.allocatable
        alloc_cpu = alloc.milli_cpu
        alloc_memory = alloc.memory
        total = 0.0
        if self.least_weight or self.most_weight:
            nz_cpu = usage.nz_cpu + (cpu if cpu > 0 else DEFAULT_MILLI_CPU_REQUEST)
            nz_memory = usage.nz_memory + (memory if memory > 0 else DEFAULT_MEMORY_REQUEST)
            if self.least_weight:
                least = self._weighted_average(_least, nz_cpu, nz_memory, alloc_cpu, alloc_memory, 50)
                total += least * self.least_weight
            if self.most_weight:
                most = self._weighted_average(_most, nz_cpu, nz_memory, alloc_cpu, alloc_memory, 1)
                total += most * self.most_weight
        if self.balanced_weight and (cpu or memory or gpu):
            fractions = []
            if alloc_cpu:
                fractions.append(min((usage.cpu + cpu) / alloc_cpu, 1.0))
            if alloc_memory:
                fractions.append(min((usage.memory + memory) / alloc_memory, 1.0))
            if gpu:
                alloc_gpu = alloc.scalars.get(_GPU, 0)
                if alloc_gpu:
                    fractions.append(min((usage.scalars.get(_GPU, 0.0) + gpu) / alloc_gpu, 1.0))
            total += _balanced(fractions) * self.balanced_weight
        return total

    @staticmethod
    def _weighted_average(
        scorer: Callable[[float, float], int], req_cpu: float, req_memory: float, cpu: float, memory: float, w: int
    ) -> int:
        """The weighted average of the cpu and memory scores over the resources the node has."""
        score = 0
        weights = 0
        if cpu:
            score += scorer(req_cpu, cpu) * w
            weights += w
        if memory:
            score += scorer(req_memory, memory) * w
            weights += w
        return score // weights if weights else 0

    def _base_score(self, sig: _Signature, node: NodeInfo, usage: Usage) -> float:
        """The scores of one node that do not depend on the other candidates."""
        score = self._resource_score(sig, node, usage)
        if self.taint_weight and not self._prefer_tainted:
            score += _MAX * self.taint_weight
        return score

    def _base_scores(self, task: TaskInfo) -> dict[str, float]:
        """The base scores of every session node for the task, cached per request and refreshed per node."""
        assert self._ssn is not None and self._pods is not None
        sig = self._signature(task)
        cached = self._resource_cache.get(sig)
        pods = self._pods
        nodes = self._ssn.nodes
        if cached is None:
            if len(self._resource_cache) >= _MAX_SIGNATURES:
                self._resource_cache.clear()
            cached = self._resource_cache[sig] = _SignatureScores()
            scores = cached.scores
            for node in self._ssn.node_list:
                scores[node.name] = self._base_score(sig, node, pods.usage(node.name))
        else:
            changes = pods.changes
            if cached.seen < len(changes):
                for name in set(changes[cached.seen :]):
                    changed = nodes.get(name)
                    if changed is not None:
                        cached.scores[name] = self._base_score(sig, changed, pods.usage(name))
        cached.seen = len(pods.changes)
        return cached.scores

    # ------------------------------------------------------------------ other scores

    def _image_score(self, task: TaskInfo, node: NodeInfo) -> int:
        pod = task.pod
        if pod is None or not pod.images:
            return 0
        total_nodes = len(self._ssn.node_list) if self._ssn is not None else 1
        node_images = node.node.images
        total = 0
        for image in pod.images:
            size = node_images.get(_k8s.normalized_image_name(image))
            if size is not None:
                spread = self._image_nodes.get(_k8s.normalized_image_name(image), 0) / total_nodes
                total += int(size * spread)
        top = _MAX_CONTAINER_IMAGE_THRESHOLD * len(pod.images)
        total = min(max(total, _MIN_IMAGE_THRESHOLD), top)
        return _MAX * (total - _MIN_IMAGE_THRESHOLD) // (top - _MIN_IMAGE_THRESHOLD)

    def _preferred_terms(self, task: TaskInfo) -> _k8s.PreferredTerms:
        terms = self._preferred.get(task.template)
        if terms is None:
            terms = self._preferred[task.template] = _k8s.PreferredTerms(task.pod.affinity if task.pod else None)
        return terms

    def _node_affinity_scores(self, task: TaskInfo, nodes: Sequence[NodeInfo]) -> dict[str, int] | None:
        """The weights of the preferred terms each node matches, summed; ``None`` without such terms."""
        if task.pod is None or not task.pod.affinity:  # no affinity, no preferred term
            return None
        terms = self._preferred_terms(task)
        if not terms.terms:
            return None
        return {node.name: terms.score(node.node) for node in nodes}

    def _taint_scores(self, task: TaskInfo, nodes: Sequence[NodeInfo]) -> dict[str, int] | None:
        """Untolerated PreferNoSchedule taints, normalised and reversed; ``None`` when no node has such a taint."""
        if not self._prefer_tainted:
            return None
        tolerations = _prefer_tolerations(task)
        scores = {node.name: _untolerated_prefer_taints(tolerations, node) for node in nodes}
        _k8s.default_normalize(scores, reverse=True)
        return scores

    def _pod_affinity_scores(self, task: TaskInfo, nodes: Sequence[NodeInfo]) -> dict[str, int] | None:
        """InterPodAffinity's score over the candidates; ``None`` when it has nothing to say (Skip)."""
        assert self._ssn is not None and self._pods is not None
        if not self._affinity_pods and (task.pod is None or not task.pod.affinity):
            return None  # no term of the task's, none of a placed pod's
        mine = self._pod_affinity(task)
        has_constraints = bool(mine.preferred or mine.preferred_anti)
        pod = task.pod
        labels = pod.labels if pod is not None else {}
        namespace = task.namespace
        topology: dict[str, dict[str, int]] = {}

        def add(term: _k8s.AffinityTerm, weight: int, node_labels: Mapping[str, str]) -> None:
            value = node_labels.get(term.topology_key)
            if value is not None:
                values = topology.setdefault(term.topology_key, {})
                values[value] = values.get(value, 0) + weight

        if has_constraints:
            candidates = [(node, list(self._pods.pods(node))) for node in self._ssn.node_list]
        else:
            # Only the nodes that had a pod with affinity when the session opened, as Volcano lists them.
            by_node: dict[str, list[TaskInfo]] = {}
            listed = self._affinity_nodes
            for other in self._affinity_pods.values():
                if other.node_name in listed:
                    by_node.setdefault(other.node_name, []).append(other)
            candidates = [(self._ssn.nodes[n], tasks) for n, tasks in by_node.items() if n in self._ssn.nodes]
        for node, others in candidates:
            node_labels = node.node.labels
            if not node_labels:
                continue
            for other in others:
                other_pod = other.pod
                other_labels = other_pod.labels if other_pod is not None else {}
                for term in mine.preferred:
                    if term.matches(other.namespace, other_labels):
                        add(term, term.weight, node_labels)
                for term in mine.preferred_anti:
                    if term.matches(other.namespace, other_labels):
                        add(term, -term.weight, node_labels)
                theirs = self._pod_affinity(other)
                for term in theirs.preferred:
                    if term.matches(namespace, labels):
                        add(term, term.weight, node_labels)
                for term in theirs.preferred_anti:
                    if term.matches(namespace, labels):
                        add(term, -term.weight, node_labels)
        if not topology:
            return None
        scores: dict[str, int] = {}
        for node in nodes:
            node_labels = node.node.labels
            score = 0
            for key, values in topology.items():
                value = node_labels.get(key)
                if value is not None:
                    score += values.get(value, 0)
            scores[node.name] = score
        if not scores:
            return scores
        low = min(scores.values())
        spread = max(scores.values()) - low
        for name, score in scores.items():
            scores[name] = int(_MAX * ((score - low) / spread)) if spread > 0 else 0
        return scores

    def _spread_scores(self, task: TaskInfo, nodes: Sequence[NodeInfo]) -> dict[str, int] | None:
        """PodTopologySpread's score for soft constraints; ``None`` when the task has none (Skip)."""
        assert self._ssn is not None and self._pods is not None
        pod = task.pod
        if pod is None or not pod.topology_spread_constraints:
            return None
        constraints = self._spreads.get(task.template)
        labels = pod.labels
        if constraints is None:
            constraints, _ = _k8s.parse_spread_constraints(pod.topology_spread_constraints, "ScheduleAnyway", labels)
            self._spreads[task.template] = constraints
        if not constraints or not nodes:
            return None
        required = _k8s.required_node_affinity(
            pod.node_selector if pod is not None else {}, pod.affinity if pod is not None else None
        )
        tolerations = pod.tolerations if pod is not None else ()
        keys = [c.topology_key for c in constraints]
        ignored = {n.name for n in nodes if not all(k in n.node.labels for k in keys)}
        pair_counts: dict[tuple[str, str], int] = {}
        sizes = [0] * len(constraints)
        for node in nodes:
            if node.name in ignored:
                continue
            for i, c in enumerate(constraints):
                if c.topology_key == _k8s.HOSTNAME_KEY:
                    continue
                pair = (c.topology_key, node.node.labels[c.topology_key])
                if pair not in pair_counts:
                    pair_counts[pair] = 0
                    sizes[i] += 1
        weights = []
        for i, c in enumerate(constraints):
            size = len(nodes) - len(ignored) if c.topology_key == _k8s.HOSTNAME_KEY else sizes[i]
            weights.append(math.log(size + 2))
        namespace = task.namespace
        for node in self._ssn.node_list:
            node_labels = node.node.labels
            if not all(k in node_labels for k in keys):
                continue
            for c in constraints:
                if not c.counts_node(node.node, required, tolerations):
                    continue
                pair = (c.topology_key, node_labels[c.topology_key])
                if pair in pair_counts:
                    pair_counts[pair] += self._count_matching(node, c, namespace)
        raw: dict[str, int] = {}
        for node in nodes:
            if node.name in ignored:
                raw[node.name] = 0
                continue
            score = 0.0
            for i, c in enumerate(constraints):
                value = node.node.labels.get(c.topology_key)
                if value is None:
                    continue
                if c.topology_key == _k8s.HOSTNAME_KEY:
                    count = self._count_matching(node, c, namespace)
                else:
                    count = pair_counts.get((c.topology_key, value), 0)
                score += count * weights[i] + (c.max_skew - 1)
            raw[node.name] = _round_half_away(score)
        counted = [s for name, s in raw.items() if name not in ignored]
        low = min(counted, default=_MAX_INT)
        high = max(counted, default=0)
        for name, score in raw.items():
            if name in ignored:
                raw[name] = 0
            elif high == 0:
                raw[name] = _MAX
            else:
                raw[name] = _MAX * (high + low - score) // high
        return raw

    def _count_matching(self, node: NodeInfo, c: _k8s.SpreadConstraint, namespace: str) -> int:
        assert self._pods is not None
        if c.selector.empty:
            return 0
        count = 0
        for other in self._pods.pods(node):
            if other.namespace != namespace or other.status is _RELEASING:
                continue
            if c.selector.matches(other.pod.labels if other.pod is not None else {}):
                count += 1
        return count

    # ------------------------------------------------------------------ hook

    @hookimpl
    def batch_node_order(self, ssn: Session, task: TaskInfo, nodes: Sequence[NodeInfo]) -> Mapping[str, float]:
        """Score the candidate nodes: every enabled score, weighted and summed, by node name.

        The scores that do not depend on the candidate set (resources, and
        taints when no node has a PreferNoSchedule taint) are kept per
        request between calls and refreshed only for the nodes whose pods
        changed; the normalised scores are computed over ``nodes``.
        """
        if not nodes or self._ssn is None or self._pods is None:
            return {}
        total: dict[str, float] | None = None
        if len(nodes) * _FEW_NODES < len(ssn.node_list):
            # A few nodes (one per class, say): score them directly, leaving the per-request cache alone.
            sig = self._signature(task)
            usage = self._pods.usage
            base: Mapping[str, float] = {}
            total = {n.name: self._base_score(sig, n, usage(n.name)) for n in nodes}
        else:
            base = self._base_scores(task)
        if total is None and nodes is not ssn.node_list:
            names = list(map(_NODE_NAME, nodes))
            try:
                total = dict(zip(names, map(base.__getitem__, names), strict=True))
            except KeyError:
                sig = self._signature(task)
                total = {n.name: base.get(n.name, self._base_score(sig, n, Usage())) for n in nodes}
        extras: list[tuple[Mapping[str, int] | None, int]] = []
        if self.taint_weight and self._prefer_tainted:
            extras.append((self._taint_scores(task, nodes), self.taint_weight))
        if self.node_affinity_weight:
            extras.append((self._node_affinity_scores(task, nodes), self.node_affinity_weight))
        if self.pod_affinity_weight:
            extras.append((self._pod_affinity_scores(task, nodes), self.pod_affinity_weight))
        if self.spread_weight:
            extras.append((self._spread_scores(task, nodes), self.spread_weight))
        if self.image_weight and task.pod is not None and task.pod.images:
            extras.append(({n.name: self._image_score(task, n) for n in nodes}, self.image_weight))
        extras = [(scores, weight) for scores, weight in extras if scores]
        if not extras:
            return total if total is not None else MappingProxyType(base)
        if total is None:
            total = dict(base)
        for scores, weight in extras:
            assert scores is not None
            for name, score in scores.items():
                if name in total:
                    total[name] += score * weight
        return total

    @hookimpl
    def node_class_key(self, ssn: Session, task: TaskInfo) -> NodeClassKey | None:
        """Group nodes by what the scores read: pod requests, and taints, labels and images as they score.

        No opinion (every node scored on its own) for a task that pod
        affinity or soft topology spread may score, since those read the
        pods of other nodes.
        """
        pods = self._pods
        if pods is None or (self.pod_affinity_weight and self._affinity_pods):
            return None
        template = task.template
        known = self._class_keys
        if template in known:
            return known[template]
        found = known[template] = self._template_class_key(task, pods)
        return found

    def _template_class_key(self, task: TaskInfo, pods: NodePods) -> NodeClassKey | None:
        """:meth:`node_class_key` for the tasks of ``task``'s template, while no placed pod has pod affinity."""
        pod = task.pod
        if self.pod_affinity_weight:
            # A pod without podAffinity or podAntiAffinity has no preferred term: no need to parse its affinity.
            affinity = pod.affinity if pod is not None else None
            if affinity and ("podAffinity" in affinity or "podAntiAffinity" in affinity):
                mine = self._pod_affinity(task)
                if mine.preferred or mine.preferred_anti:
                    return None
        if self.spread_weight and pod is not None and pod.topology_spread_constraints:
            return None
        tolerations = _prefer_tolerations(task) if self.taint_weight and self._prefer_tainted else None
        # A pod without affinity has no preferred node affinity term: no need to parse it.
        terms = self._preferred_terms(task) if self.node_affinity_weight and pod is not None and pod.affinity else None
        if terms is not None and not terms.terms:
            terms = None
        images = tuple(pod.images) if self.image_weight and pod is not None and pod.images else ()
        # An image's score also reads how many of the ready nodes have it: those counts are in the token,
        # so that an equal token in a later session means an equal key.
        spread = (
            (
                len(self._ssn.node_list) if self._ssn is not None else 1,
                *(self._image_nodes.get(_k8s.normalized_image_name(image), 0) for image in images),
            )
            if images
            else ()
        )
        token = (
            repr(tolerations) if tolerations is not None else None,
            repr(pod.affinity.get("nodeAffinity")) if terms is not None and pod is not None and pod.affinity else None,
            images,
            spread,
        )
        found = self._keys_by_token.get(token)
        if found is not None:
            return found
        usage = pods.usage
        image_score = self._image_score

        def key(node: NodeInfo) -> Hashable:
            u = usage(node.name)
            return (
                u.cpu,
                u.memory,
                u.nz_cpu,
                u.nz_memory,
                tuple(sorted(u.scalars.items())) if u.scalars else (),
                _untolerated_prefer_taints(tolerations, node) if tolerations is not None else None,
                terms.score(node.node) if terms is not None else None,
                image_score(task, node) if images else None,
            )

        # Taint scores are normalised over the candidates; the others are not.
        found = NodeClassKey(token, key, pointwise=tolerations is None, durable=True)
        self._keys_by_token[token] = found
        return found


def _prefer_tolerations(task: TaskInfo) -> list[Mapping[str, Any]]:
    """The task's tolerations that can tolerate a PreferNoSchedule taint."""
    return [
        t
        for t in (task.pod.tolerations if task.pod else ())
        if (t.get("effect") or "PreferNoSchedule") == "PreferNoSchedule"
    ]


def _untolerated_prefer_taints(tolerations: Sequence[Mapping[str, Any]], node: NodeInfo) -> int:
    """How many of the node's PreferNoSchedule taints the tolerations leave untolerated."""
    return sum(
        1 for taint in node.node.taints if taint.effect == "PreferNoSchedule" and not _k8s.tolerated(tolerations, taint)
    )


_MAX_INT: Final = 2**63 - 1
#: A batch smaller than the cluster by this factor is scored directly rather than through the cache.
_FEW_NODES: Final = 8


def _round_half_away(value: float) -> int:
    """Go's ``math.Round``: halves away from zero."""
    return math.floor(value + 0.5) if value >= 0 else -math.floor(-value + 0.5)


def _balanced(fractions: list[float]) -> int:
    if len(fractions) == 2:
        std = abs(fractions[0] - fractions[1]) / 2
    elif len(fractions) > 2:
        mean = sum(fractions) / len(fractions)
        std = math.sqrt(sum((f - mean) ** 2 for f in fractions) / len(fractions))
    else:
        std = 0.0
    return int((1 - std) * _MAX)
