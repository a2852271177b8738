"""predicates: the Kubernetes filters a pod must pass on a node, as Volcano runs them.

For a task and a node, in this order (the first failure that eviction cannot
fix ends the checks; failures eviction might fix are collected and reported
together):

1. pod count: the node already holds as many pods as its allocatable
   ``pods`` (``node(s) pod number exceeded``, Unschedulable);
2. ``spec.unschedulable`` unless the pod tolerates
   ``node.kubernetes.io/unschedulable:NoSchedule``, ``nodeSelector`` and
   required node affinity, NoSchedule/NoExecute taints (all
   UnschedulableAndUnresolvable);
3. host ports (Unschedulable), required inter-pod affinity (unresolvable) and
   anti-affinity of the pod and of the pods already placed (Unschedulable),
   hard topology spread constraints (a node without the topology label is
   unresolvable, too much skew is Unschedulable);
4. optionally the proportional reservation of scalar resources.

The node's pods are the snapshot's tasks on it plus this session's
placements, minus this session's evictions (kept in step by ``on_allocate``
and ``on_deallocate``). The checks of step 2 do not change within a session;
they are computed once per task template and node.
"""

from __future__ import annotations

from collections.abc import Hashable, Iterable, Mapping, Sequence
from types import MappingProxyType
from typing import TYPE_CHECKING, Any, ClassVar, Final

import attrs

from volcanolib.api.node import Taint
from volcanolib.api.task import TEMPLATE_UID_KEY, TaskStatus
from volcanolib.framework.arguments import argument, argument_per_name
from volcanolib.framework.nodeclass import NodeClassKey
from volcanolib.framework.registry import hookimpl
from volcanolib.framework.status import Code, Status
from volcanolib.framework.traits import Traits
from volcanolib_contrib import _k8s
from volcanolib_contrib._nodepods import NodePods, pods_where, resumed_pods

if TYPE_CHECKING:
    from volcanolib.api.cluster import SnapshotDelta
    from volcanolib.api.node import NodeInfo
    from volcanolib.api.task import TaskInfo
    from volcanolib.framework.session import Session
    from volcanolib.framework.status import Event

__all__ = [
    "REASON_AFFINITY",
    "REASON_ANTI_AFFINITY",
    "REASON_EXISTING_ANTI_AFFINITY",
    "REASON_NODE_SELECTOR",
    "REASON_POD_NUMBER",
    "REASON_PORTS",
    "REASON_SPREAD",
    "REASON_SPREAD_LABEL",
    "REASON_UNSCHEDULABLE",
    "PredicatesArguments",
    "PredicatesPlugin",
]

REASON_POD_NUMBER: Final = "node(s) pod number exceeded"
REASON_UNSCHEDULABLE: Final = "node(s) were unschedulable"
REASON_NODE_SELECTOR: Final = "node(s) didn't match Pod's node affinity/selector"
REASON_PORTS: Final = "node(s) didn't have free ports for the requested pod ports"
REASON_AFFINITY: Final = "node(s) didn't match pod affinity rules"
REASON_ANTI_AFFINITY: Final = "node(s) didn't match pod anti-affinity rules"
REASON_EXISTING_ANTI_AFFINITY: Final = "node(s) didn't satisfy existing pods anti-affinity rules"
REASON_SPREAD: Final = "node(s) didn't match pod topology spread constraints"
REASON_SPREAD_LABEL: Final = REASON_SPREAD + " (missing required label)"
REASON_CACHE: Final = "plugin equivalence cache predicates failed"

_POD_NUMBER: Final = Status.unschedulable(REASON_POD_NUMBER)
_UNSCHEDULABLE: Final = Status.unresolvable(REASON_UNSCHEDULABLE)
_NODE_SELECTOR: Final = Status.unresolvable(REASON_NODE_SELECTOR)
_PORTS: Final = Status.unschedulable(REASON_PORTS)
_AFFINITY: Final = Status.unresolvable(REASON_AFFINITY)
_ANTI_AFFINITY: Final = Status.unschedulable(REASON_ANTI_AFFINITY)
_EXISTING_ANTI: Final = Status.unschedulable(REASON_EXISTING_ANTI_AFFINITY)
_SPREAD: Final = Status.unschedulable(REASON_SPREAD)
_SPREAD_LABEL: Final = Status.unresolvable(REASON_SPREAD_LABEL)
_CACHE_FAILED: Final = Status.error(REASON_CACHE)
_UNSCHEDULABLE_TAINT: Final = Taint(_k8s.UNSCHEDULABLE_TAINT_KEY, "", "NoSchedule")
_RELEASING: Final = TaskStatus.RELEASING
_NO_MIN: Final = 2**31 - 1
_MAX_DYNAMIC_CACHE: Final = 4096


def _merge(statuses: list[Status]) -> Status:
    """One status carrying every reason; the code of the most severe failure."""
    if len(statuses) == 1:
        return statuses[0]
    code = Code.UNSCHEDULABLE
    reasons: list[str] = []
    for status in statuses:
        if status.code is not Code.UNSCHEDULABLE and code is Code.UNSCHEDULABLE:
            code = status.code
        reasons.extend(status.reasons)
    return Status(code, tuple(reasons))


def _taint_status(taint: Taint) -> Status:
    return Status.unresolvable(f"node(s) had untolerated taint {{{taint.key}: {taint.value}}}")


class _Spec:
    """The scheduling constraints of one task template, parsed once per session (or kept, see ``_spec``)."""

    __slots__ = (
        "affinity",
        "cache_uid",
        "class_key",
        "class_token",
        "plain",
        "ports",
        "selector",
        "source",
        "spread",
        "spread_valid",
        "static",
        "tolerates_unschedulable",
        "tolerations",
    )

    def __init__(self, task: TaskInfo) -> None:
        pod = task.pod
        #: What it was parsed from: the pod object and the namespace.
        self.source = (pod, task.namespace)
        labels: Mapping[str, str] = pod.labels if pod is not None else {}
        self.selector = _k8s.required_node_affinity(
            pod.node_selector if pod is not None else {}, pod.affinity if pod is not None else None
        )
        self.tolerations: tuple[Mapping[str, Any], ...] = pod.tolerations if pod is not None else ()
        self.tolerates_unschedulable = _k8s.tolerated(self.tolerations, _UNSCHEDULABLE_TAINT)
        self.ports: tuple[tuple[str, str, int], ...] = tuple(p for p in (pod.host_ports if pod else ()) if p[2] > 0)
        self.affinity = _k8s.parse_pod_affinity(pod.affinity if pod is not None else None, task.namespace, labels)
        self.spread, self.spread_valid = _k8s.parse_spread_constraints(
            pod.topology_spread_constraints if pod is not None else (), "DoNotSchedule", labels
        )
        #: No pod (anti-)affinity term, spread constraint or host port: only other pods' anti-affinity
        #: (or the proportional check) can make a pod-dependent check apply.
        self.plain = not (self.affinity.required or self.affinity.required_anti or self.spread or self.ports)
        #: The ``volcano.sh/template-uid`` annotation (Volcano's predicate cache key), or ``""``.
        self.cache_uid = pod.annotations.get(TEMPLATE_UID_KEY, "") if pod is not None else ""
        #: Failing nodes of the session-stable checks, by name; ``None`` until computed.
        self.static: dict[str, Status] | None = None
        #: What the stable checks read of the pod: templates with equal tokens fail the same nodes.
        node_affinity = pod.affinity.get("nodeAffinity") if pod is not None and pod.affinity else None
        self.class_token = repr(
            (
                sorted(pod.node_selector.items()) if pod is not None else (),
                node_affinity.get("requiredDuringSchedulingIgnoredDuringExecution") if node_affinity else None,
                self.tolerations,
            )
        )
        #: The template's node class key, made on first use.
        self.class_key: NodeClassKey | None = None


class _Verdicts:
    """The stable checks' failing nodes for one :attr:`_Spec.class_token`, kept from session to session."""

    __slots__ = ("class_key", "spec", "static", "used")

    def __init__(self, spec: _Spec, static: dict[str, Status]) -> None:
        #: A template of the token, to check nodes again when they change.
        self.spec = spec
        #: Failing nodes by name.
        self.static = static
        #: The token's node class key, made on first use.
        self.class_key: NodeClassKey | None = None
        #: Whether a session asked for it since the last resume (unused ones are dropped then).
        self.used = True


class _AffinityState:
    """InterPodAffinity's pre-filter counts for one task: topology pair -> matching pods."""

    __slots__ = ("affinity", "anti", "existing", "self_match")

    def __init__(self) -> None:
        self.affinity: dict[tuple[str, str], int] = {}
        self.anti: dict[tuple[str, str], int] = {}
        self.existing: dict[tuple[str, str], int] = {}
        self.self_match = False


class _SpreadState:
    """PodTopologySpread's pre-filter counts: per constraint, topology value -> matching pods."""

    __slots__ = ("counts", "minimum")

    def __init__(self, size: int) -> None:
        self.counts: list[dict[str, int]] = [{} for _ in range(size)]
        self.minimum: list[int] = [_NO_MIN] * size


def _is_special(node: NodeInfo) -> bool:
    """Whether a node is unschedulable or tainted (the only nodes a template without a selector can fail)."""
    return bool(node.node.unschedulable or node.node.taints)


def _switch(name: str, doc: str, default: bool = True) -> bool:
    return argument(key=f"predicate.{name}", default=default, doc=doc)


@attrs.frozen
class PredicatesArguments:
    """The arguments of ``predicates``."""

    node_affinity_enable: bool = _switch("NodeAffinityEnable", "Check `nodeSelector` and required node affinity.")
    node_ports_enable: bool = _switch("NodePortsEnable", "Check host port conflicts.")
    taint_toleration_enable: bool = _switch("TaintTolerationEnable", "Check NoSchedule and NoExecute taints.")
    pod_affinity_enable: bool = _switch("PodAffinityEnable", "Check required inter-pod affinity and anti-affinity.")
    pod_topology_spread_enable: bool = _switch(
        "PodTopologySpreadEnable", "Check `DoNotSchedule` topology spread constraints."
    )
    node_volume_limits_enable: bool = _switch(
        "NodeVolumeLimitsEnable", "Accepted; volumes are not modelled, so this filter always passes."
    )
    volume_zone_enable: bool = _switch("VolumeZoneEnable", "Accepted; always passes.")
    volume_binding_enable: bool = _switch("VolumeBindingEnable", "Accepted; always passes.")
    dynamic_resource_allocation_enable: bool = _switch(
        "DynamicResourceAllocationEnable",
        "Accepted; resource claims are not modelled, so this filter always passes.",
        default=False,
    )
    cache_enable: bool = _switch("CacheEnable", "Volcano's equivalence cache per task template.", default=False)
    proportional_enable: bool = _switch(
        "ProportionalEnable",
        "Keep cpu and memory for the tasks that need the scalars of `predicate.resources`.",
        default=False,
    )
    resources: str = argument(
        key="predicate.resources",
        default="",
        doc="Comma-separated scalar resources for the proportional check, such as `nvidia.com/gpu`.",
    )
    resource_cpu: Mapping[str, float] = argument_per_name(
        key="predicate.resources.<name>.cpu",
        names="resources",
        default=1.0,
        doc="Cores kept per idle unit of `<name>`; a negative value means 1.",
    )
    resource_memory: Mapping[str, float] = argument_per_name(
        key="predicate.resources.<name>.memory",
        names="resources",
        default=1.0,
        doc="Memory (GB, 10^9 bytes) kept per idle unit of `<name>`; a negative value means 1.",
    )


class PredicatesPlugin:
    """Kubernetes node filters: pod count, unschedulable, node affinity, taints, ports, pod affinity, spread.

    Arguments (Volcano's names): ``predicate.NodeAffinityEnable``,
    ``predicate.NodePortsEnable``, ``predicate.TaintTolerationEnable``,
    ``predicate.PodAffinityEnable``, ``predicate.PodTopologySpreadEnable``
    (default true), ``predicate.CacheEnable`` (default false),
    ``predicate.ProportionalEnable`` (default false) with
    ``predicate.resources`` and ``predicate.resources.<name>.cpu`` /
    ``.memory`` (default 1). ``predicate.NodeVolumeLimitsEnable``,
    ``predicate.VolumeZoneEnable`` and ``predicate.VolumeBindingEnable`` are
    accepted; volumes are not modelled, so those filters always pass.
    """

    name: ClassVar[str] = "predicates"
    Arguments: ClassVar[type[PredicatesArguments]] = PredicatesArguments
    #: See docs/incremental.md: no clock; job status, if any, only through the session.
    traits: ClassVar[Traits] = Traits(clock_free=True, status_through_session=True)

    def __init__(self, arguments: PredicatesArguments) -> None:
        self.arguments = arguments
        self.node_affinity_enable = arguments.node_affinity_enable
        self.node_ports_enable = arguments.node_ports_enable
        self.taint_toleration_enable = arguments.taint_toleration_enable
        self.pod_affinity_enable = arguments.pod_affinity_enable
        self.pod_topology_spread_enable = arguments.pod_topology_spread_enable
        self.cache_enable = arguments.cache_enable
        self.proportional_enable = arguments.proportional_enable
        self.proportional: dict[str, tuple[float, float]] = {}
        for resource, cpu in arguments.resource_cpu.items():
            memory = arguments.resource_memory[resource]
            self.proportional[resource] = (1.0 if cpu < 0 else cpu, 1.0 if memory < 0 else memory)
        self._reset(None)

    def _reset(self, ssn: Session | None) -> None:
        self._ssn = ssn
        self._pods: NodePods | None = NodePods(ssn) if ssn is not None else None
        # The last session's parsed templates: one whose task has the same pod object is taken over.
        self._parsed: dict[str, _Spec] = getattr(self, "_specs", {})
        self._specs: dict[str, _Spec] = {}
        self._existing_affinity: dict[str, _k8s.PodAffinity] = {}
        #: Pods with required anti-affinity terms, by task key.
        self._anti_pods: dict[str, TaskInfo] = {}
        #: Nodes whose pod count has reached their capacity.
        self._full: set[str] = set()
        #: Each node's pod capacity, by name, as read this session.
        self._capacity: dict[str, int] = {}
        #: Nodes that are unschedulable or tainted (the only ones a template without a selector can fail).
        self._special: list[NodeInfo] = []
        self._dynamic: dict[str, tuple[int, bool, _AffinityState | None, _SpreadState | None]] = {}
        #: Volcano's predicate cache: (template uid, node) -> whether the stable filters passed.
        self._fit_cache: dict[tuple[str, str], bool] = {}
        #: The stable checks' verdicts by template token; a resume keeps them, checking changed nodes again.
        self._verdicts: dict[str, _Verdicts] = {}

    # ------------------------------------------------------------------ session lifecycle

    @hookimpl
    def on_session_open(self, ssn: Session) -> None:
        """Reset the per-session state: node pod lists, full nodes, pods with anti-affinity."""
        self._reset(ssn)
        for node in ssn.node_list:
            self._refresh_full(node)
            if _is_special(node):
                self._special.append(node)
        self._anti_pods = pods_where(ssn.node_list, self._has_required_anti, affinity_only=True)

    @hookimpl
    def on_session_resume(self, ssn: Session, delta: SnapshotDelta) -> None:
        """Open as :meth:`on_session_open` would, reading again only the nodes the delta names.

        Full nodes, special (unschedulable or tainted) nodes, pods with
        required anti-affinity and the stable checks' failing nodes per
        template token are kept from the previous session (a node whose
        ``Node`` object changed is checked again); parsed templates and the
        predicate cache start afresh.
        """
        full, special, anti, verdicts = self._full, self._special, self._anti_pods, self._verdicts
        self._reset(ssn)
        nodes = ssn.nodes
        changed = delta.nodes
        # A node brought up to date in place holds the same pods: it is full as it was.
        refreshed = delta.nodes_with_changed_pods()
        full.difference_update(refreshed)
        self._full = full
        for name in refreshed:
            node = nodes.get(name)
            if node is not None:
                self._refresh_full(node)
        # Special nodes in node order: the kept list stands when no changed node was or is special.
        still = not any(node.name in changed for node in special)
        if delta.same_nodes and still and not any(_is_special(nodes[name]) for name in changed if name in nodes):
            self._special = special
        else:
            self._special = [node for node in ssn.node_list if _is_special(node)]
        self._anti_pods = resumed_pods(anti, nodes, delta, self._has_required_anti)
        self._verdicts = self._resumed_verdicts(verdicts, nodes, delta.replaced_nodes())

    def _resumed_verdicts(
        self, verdicts: dict[str, _Verdicts], nodes: Mapping[str, NodeInfo], renewed: Iterable[str]
    ) -> dict[str, _Verdicts]:
        """The kept verdicts the last session used, with every node that was added, replaced or removed checked again.

        The stable checks read a node's ``Node`` object alone, which stays
        the same while only the node's tasks change.
        """
        kept = {token: v for token, v in verdicts.items() if v.used}
        if not kept:
            return kept
        for v in kept.values():
            v.used = False
            static = v.static
            for name in renewed:
                node = nodes.get(name)
                status = self._static_status(v.spec, node) if node is not None else None
                if status is None:
                    static.pop(name, None)
                else:
                    static[name] = status
        return kept

    @hookimpl
    def on_allocate(self, ssn: Session, event: Event) -> None:
        """A task took a place on a node (allocate, pipeline, undone eviction): it is one of its pods."""
        task = event.task
        pods = self._pods
        if pods is None:
            return
        node = pods.allocated(task)  # the session's node (the pod lists read ssn.nodes)
        if node is not None:
            # A node only gains a pod here: one that was full stays so.
            if node.name not in self._full:
                self._refresh_full(node)
            pod = task.pod
            if pod is not None and pod.affinity and self._has_required_anti(task):
                self._anti_pods[task.key] = task

    @hookimpl
    def on_deallocate(self, ssn: Session, event: Event) -> None:
        """A task left its node (eviction, undone placement): it no longer counts there."""
        task = event.task
        pods = self._pods
        if pods is None:
            return
        node = pods.deallocated(task)
        # A node only loses a pod here: one that was not full stays so.
        if node is not None and node.name in self._full:
            self._refresh_full(node)
        if self._anti_pods:
            self._anti_pods.pop(task.key, None)

    def kept_state(self) -> tuple[set[str], list[str], dict[str, TaskInfo]]:
        """What the plugin keeps between sessions: full nodes, special nodes (in order), pods with anti-affinity."""
        return self._full, [node.name for node in self._special], self._anti_pods

    def _refresh_full(self, node: NodeInfo) -> None:
        assert self._pods is not None
        name = node.name
        # A node's capacity holds for the session: read once per node (it runs on every event).
        capacity = self._capacity.get(name)
        if capacity is None:
            capacity = self._capacity[name] = node.pod_capacity
        if self._pods.count(node) >= capacity:
            self._full.add(name)
        else:
            self._full.discard(name)

    # ------------------------------------------------------------------ parsed constraints

    def _spec(self, task: TaskInfo) -> _Spec:
        spec = self._specs.get(task.template)
        if spec is None:
            spec = self._parsed.get(task.template)
            if spec is not None and spec.source[0] is task.pod and spec.source[1] == task.namespace:
                spec.static = None  # what depends on the session is made again
                spec.class_key = None
            else:
                spec = _Spec(task)
            self._specs[task.template] = spec
        return spec

    def _pod_affinity_of(self, task: TaskInfo) -> _k8s.PodAffinity:
        """The (anti-)affinity terms of a pod, parsed once per template."""
        return _k8s.task_pod_affinity(task, self._existing_affinity)

    def _has_required_anti(self, task: TaskInfo) -> bool:
        pod = task.pod
        if pod is None or not pod.affinity or "podAntiAffinity" not in pod.affinity:
            return False
        return bool(self._pod_affinity_of(task).required_anti)

    # ------------------------------------------------------------------ session-stable checks

    def _static_status(self, spec: _Spec, node: NodeInfo) -> Status | None:
        """NodeUnschedulable, NodeAffinity and TaintToleration for one node (the first failure)."""
        n = node.node
        if n.unschedulable and not spec.tolerates_unschedulable:
            return _UNSCHEDULABLE
        if self.node_affinity_enable and not spec.selector.trivial and not spec.selector.matches(n):
            return _NODE_SELECTOR
        if self.taint_toleration_enable and n.taints:
            taint = _k8s.find_untolerated_taint(n.taints, spec.tolerations)
            if taint is not None:
                return _taint_status(taint)
        return None

    def _static_failures(self, spec: _Spec) -> dict[str, Status]:
        """The failing nodes of the stable checks for a template, over every session node."""
        static = spec.static
        if static is None:
            verdicts = self._verdicts_of(spec)
            verdicts.used = True
            static = spec.static = verdicts.static
        return static

    def _verdicts_of(self, spec: _Spec) -> _Verdicts:
        """The kept verdicts of a template's token, computed over every session node the first time."""
        verdicts = self._verdicts.get(spec.class_token)
        if verdicts is None:
            assert self._ssn is not None
            nodes = self._special if (spec.selector.trivial or not self.node_affinity_enable) else self._ssn.node_list
            static = {}
            for node in nodes:
                status = self._static_status(spec, node)
                if status is not None:
                    static[node.name] = status
            verdicts = self._verdicts[spec.class_token] = _Verdicts(spec, static)
        return verdicts

    def _stable(self, spec: _Spec, node: NodeInfo) -> Status | None:
        """The stable checks of one node, through the caches (Volcano's predicate cache when enabled)."""
        assert self._ssn is not None
        if self._ssn.nodes.get(node.name) is node:
            status = self._static_failures(spec).get(node.name)
        else:
            status = self._static_status(spec, node)
        if self.cache_enable and spec.cache_uid:
            key = (spec.cache_uid, node.name)
            fit = self._fit_cache.get(key)
            if fit is None:
                self._fit_cache[key] = status is None
            elif not fit:
                return _CACHE_FAILED
            else:
                return None
        return status

    # ------------------------------------------------------------------ pod-dependent checks

    def _dynamic_state(self, task: TaskInfo, spec: _Spec) -> tuple[bool, _AffinityState | None, _SpreadState | None]:
        """Whether pod-dependent checks apply, and the pre-filter states of InterPodAffinity and PodTopologySpread.

        The states are recomputed when the pods change. The affinity state is
        ``None`` when neither the task's terms nor a placed pod's
        anti-affinity concern the task.
        """
        if spec.plain and not self._anti_pods and not (self.proportional_enable and self.proportional):
            return False, None, None  # what the states below give such a template, without them
        assert self._pods is not None
        epoch = self._pods.epoch
        cached = self._dynamic.get(task.uid)
        if cached is not None and cached[0] == epoch:
            return cached[1], cached[2], cached[3]
        affinity: _AffinityState | None = None
        if self.pod_affinity_enable:
            aff = spec.affinity
            if aff.required or aff.required_anti or self._anti_pods:
                affinity = self._affinity_state(task, spec)
                if not (aff.required or aff.required_anti or affinity.existing):
                    affinity = None
        spread = self._spread_state(task, spec) if self.pod_topology_spread_enable and spec.spread else None
        needed = (
            affinity is not None
            or spread is not None
            or (self.node_ports_enable and bool(spec.ports))
            or (self.proportional_enable and bool(self.proportional))
        )
        if len(self._dynamic) >= _MAX_DYNAMIC_CACHE:
            self._dynamic.clear()
        self._dynamic[task.uid] = (epoch, needed, affinity, spread)
        return needed, affinity, spread

    def _affinity_state(self, task: TaskInfo, spec: _Spec) -> _AffinityState:
        assert self._ssn is not None and self._pods is not None
        nodes = self._ssn.nodes
        state = _AffinityState()
        pod = task.pod
        labels: Mapping[str, str] = pod.labels if pod is not None else {}
        namespace = task.namespace
        existing = state.existing
        for other in self._anti_pods.values():
            node = nodes.get(other.node_name)
            if node is None:
                continue
            node_labels = node.node.labels
            for term in self._pod_affinity_of(other).required_anti:
                value = node_labels.get(term.topology_key)
                if value is not None and term.matches(namespace, labels):
                    pair = (term.topology_key, value)
                    existing[pair] = existing.get(pair, 0) + 1
        required = spec.affinity.required
        required_anti = spec.affinity.required_anti
        if required or required_anti:
            state.self_match = bool(required) and all(t.matches(namespace, labels) for t in required)
            counts, anti = state.affinity, state.anti
            for node in self._ssn.node_list:
                node_labels = node.node.labels
                for other in self._pods.pods(node):
                    other_pod = other.pod
                    other_labels: Mapping[str, str] = other_pod.labels if other_pod is not None else {}
                    if required and all(t.matches(other.namespace, other_labels) for t in required):
                        for term in required:
                            value = node_labels.get(term.topology_key)
                            if value is not None:
                                pair = (term.topology_key, value)
                                counts[pair] = counts.get(pair, 0) + 1
                    for term in required_anti:
                        value = node_labels.get(term.topology_key)
                        if value is not None and term.matches(other.namespace, other_labels):
                            pair = (term.topology_key, value)
                            anti[pair] = anti.get(pair, 0) + 1
        return state

    def _spread_state(self, task: TaskInfo, spec: _Spec) -> _SpreadState:
        assert self._ssn is not None and self._pods is not None
        constraints = spec.spread
        state = _SpreadState(len(constraints))
        namespace = task.namespace
        keys = [c.topology_key for c in constraints]
        for node in self._ssn.node_list:
            node_labels = node.node.labels
            if not all(k in node_labels for k in keys):
                continue
            for i, c in enumerate(constraints):
                if not c.counts_node(node.node, spec.selector, spec.tolerations):
                    continue
                count = 0
                if not c.selector.empty:
                    for other in self._pods.pods(node):
                        if other.namespace != namespace or other.status is _RELEASING:
                            continue
                        other_pod = other.pod
                        if c.selector.matches(other_pod.labels if other_pod is not None else {}):
                            count += 1
                value = node_labels[c.topology_key]
                state.counts[i][value] = state.counts[i].get(value, 0) + count
        for i, c in enumerate(constraints):
            counts = state.counts[i]
            if counts:
                state.minimum[i] = min(counts.values())
            if len(counts) < c.min_domains:
                state.minimum[i] = 0
        return state

    def _dynamic_checks(
        self,
        task: TaskInfo,
        spec: _Spec,
        node: NodeInfo,
        affinity: _AffinityState | None,
        spread: _SpreadState | None,
        out: list[Status],
    ) -> bool:
        """Ports, pod affinity, topology spread, proportional; appends failures, False when one must stop."""
        if self.node_ports_enable and spec.ports:
            assert self._pods is not None
            used = [p for other in self._pods.pods(node) if other.pod is not None for p in other.pod.host_ports]
            if used and _k8s.ports_conflict(spec.ports, used):
                out.append(_PORTS)
        labels = node.node.labels
        if affinity is not None:
            status = self._affinity_check(spec, affinity, labels)
            if status is not None:
                out.append(status)
                if status.code is not Code.UNSCHEDULABLE:
                    return False
        if spread is not None:
            pod = task.pod
            pod_labels: Mapping[str, str] = pod.labels if pod is not None else {}
            for i, c in enumerate(spec.spread):
                value = labels.get(c.topology_key)
                if value is None:
                    out.append(_SPREAD_LABEL)
                    return False
                self_match = 1 if c.selector.matches(pod_labels) else 0
                if spread.counts[i].get(value, 0) + self_match - spread.minimum[i] > c.max_skew:
                    out.append(_SPREAD)
                    break
        if self.proportional_enable and self.proportional:
            status = self._proportional_check(task, node)
            if status is not None:
                out.append(status)
                return False
        return True

    @staticmethod
    def _affinity_check(spec: _Spec, state: _AffinityState, labels: Mapping[str, str]) -> Status | None:
        required = spec.affinity.required
        if required:
            pods_exist = True
            for term in required:
                value = labels.get(term.topology_key)
                if value is None:
                    return _AFFINITY
                if state.affinity.get((term.topology_key, value), 0) <= 0:
                    pods_exist = False
            if not pods_exist and not (not state.affinity and state.self_match):
                return _AFFINITY
        if state.anti:
            for term in spec.affinity.required_anti:
                value = labels.get(term.topology_key)
                if value is not None and state.anti.get((term.topology_key, value), 0) > 0:
                    return _ANTI_AFFINITY
        if state.existing:
            for (key, value), count in state.existing.items():
                if count > 0 and labels.get(key) == value:
                    return _EXISTING_ANTI
        return None

    def _proportional_check(self, task: TaskInfo, node: NodeInfo) -> Status | None:
        req = task.resreq
        for name in self.proportional:
            if req.scalars.get(name, 0) > 0:
                return None
        idle = node.idle
        for name, (cpu_rate, memory_rate) in self.proportional.items():
            value = idle.scalars.get(name)
            if value is None:
                continue
            if (
                idle.milli_cpu - req.milli_cpu < value * cpu_rate
                or idle.memory - req.memory < value * memory_rate * 1000 * 1000
            ):
                return Status.unresolvable(f"proportional of resource {name} check failed")
        return None

    # ------------------------------------------------------------------ one node

    def _node_status(
        self,
        task: TaskInfo,
        spec: _Spec,
        node: NodeInfo,
        dynamic: bool,
        affinity: _AffinityState | None,
        spread: _SpreadState | None,
    ) -> Status | None:
        failures: list[Status] = []
        if node.name in self._full:
            failures.append(_POD_NUMBER)
        stable = self._stable(spec, node)
        if stable is not None:
            failures.append(stable)
            return _merge(failures)
        if dynamic:
            self._dynamic_checks(task, spec, node, affinity, spread, failures)
        return _merge(failures) if failures else None

    # ------------------------------------------------------------------ hooks

    @hookimpl
    def pre_predicate(self, ssn: Session, task: TaskInfo) -> Status:
        """Reject a task whose pod affinity terms or hard spread constraints cannot be parsed."""
        spec = self._spec(task)
        if self.pod_affinity_enable and not spec.affinity.valid:
            return Status.error("plugin InterPodAffinity pre-predicates failed: invalid pod affinity term")
        if self.pod_topology_spread_enable and not spec.spread_valid:
            return Status.error("plugin PodTopologySpread pre-predicates failed: invalid topology spread constraint")
        return Status.success()

    @hookimpl
    def predicate(self, ssn: Session, task: TaskInfo, node: NodeInfo) -> Status:
        """Run every filter for one node; success, or one status with all the reasons it fails."""
        spec = self._spec(task)
        dynamic, affinity, spread = self._dynamic_state(task, spec)
        status = self._node_status(task, spec, node, dynamic, affinity, spread)
        return Status.success() if status is None else status

    @hookimpl
    def node_class_key(self, ssn: Session, task: TaskInfo) -> NodeClassKey | None:
        """Group nodes by the stable checks' verdict and whether the node is full of pods.

        No opinion (every node checked on its own) when a pod-dependent
        check applies to the task (host ports, pod affinity, spread,
        proportional) or Volcano's predicate cache is on for its template.
        """
        spec = self._spec(task)
        dynamic, _, _ = self._dynamic_state(task, spec)
        if dynamic or (self.cache_enable and spec.cache_uid):
            return None
        found = spec.class_key
        if found is None:
            static = self._static_failures(spec)
            verdicts = self._verdicts[spec.class_token]
            found = verdicts.class_key
            if found is None:
                full = self._full

                def key(node: NodeInfo) -> Hashable:
                    return (node.name in full, static.get(node.name))

                # A node's key reads that node alone: its pod count and its own labels, taints and flags.
                found = verdicts.class_key = NodeClassKey(spec.class_token, key, pointwise=True, durable=True)
            spec.class_key = found
        return found

    @hookimpl
    def batch_predicate(self, ssn: Session, task: TaskInfo, nodes: Sequence[NodeInfo]) -> Mapping[str, Status]:
        """Run every filter for many nodes: the failing ones by name, as :meth:`predicate` would fail them.

        For a task whose template needs no pod-dependent check the answer is
        made of the template's cached stable failures and the full nodes; the
        pod-dependent states (pod affinity counts, spread counts) are computed
        once per call, not once per node.
        """
        spec = self._spec(task)
        dynamic, affinity, spread = self._dynamic_state(task, spec)
        cache_quirk = self.cache_enable and bool(spec.cache_uid)
        if not dynamic and not cache_quirk:
            static = self._static_failures(spec)
            full = self._full
            if not static and not full:
                return {}
            if nodes is ssn.node_list:
                if not full:
                    return MappingProxyType(static)
                merged = dict(static)
                for name in full:
                    stable = static.get(name)
                    merged[name] = _POD_NUMBER if stable is None else _merge([_POD_NUMBER, stable])
                return merged
        failures: dict[str, Status] = {}
        for node in nodes:
            status = self._node_status(task, spec, node, dynamic, affinity, spread)
            if status is not None:
                failures[node.name] = status
        return failures
