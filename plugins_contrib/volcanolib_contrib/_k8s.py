"""Kubernetes matching rules used by the predicates and nodeorder plugins.

Everything here works on the raw manifest fragments a :class:`~volcanolib.api.task.Pod`
keeps (``affinity``, ``tolerations``, ``topology_spread_constraints``, in the
camelCase of the Kubernetes API) and on :class:`~volcanolib.api.node.Node`.
The rules follow the Kubernetes scheduler's plugins (NodeAffinity,
TaintToleration, NodeUnschedulable, NodePorts, InterPodAffinity,
PodTopologySpread, ImageLocality); a malformed fragment never raises: it
simply matches nothing, as Kubernetes does once it has logged the parse error.
"""

from __future__ import annotations

from collections.abc import Iterable, Mapping, Sequence
from typing import Any, Final

from volcanolib.api.node import Node, Taint, tolerated, tolerates
from volcanolib.api.nodeselector import (
    NodeSelector,
    NodeSelectorTerm,
    Requirement,
    match_requirement,
    parse_requirement,
    required_node_affinity,
)
from volcanolib.api.task import TaskInfo

__all__ = [
    "task_pod_affinity",
    "HOSTNAME_KEY",
    "MAX_NODE_SCORE",
    "UNSCHEDULABLE_TAINT_KEY",
    "AffinityTerm",
    "LabelSelector",
    "NodeSelector",
    "PodAffinity",
    "PreferredTerms",
    "SpreadConstraint",
    "default_normalize",
    "find_untolerated_taint",
    "namespace_labels",
    "normalized_image_name",
    "parse_pod_affinity",
    "parse_spread_constraints",
    "ports_conflict",
    "required_node_affinity",
    "tolerated",
    "tolerates",
]

#: The highest score a Kubernetes score plugin returns.
MAX_NODE_SCORE: Final = 100
#: The well-known hostname label.
HOSTNAME_KEY: Final = "kubernetes.io/hostname"
#: The taint that stands for ``spec.unschedulable``.
UNSCHEDULABLE_TAINT_KEY: Final = "node.kubernetes.io/unschedulable"
#: The label every namespace carries with its own name.
NAMESPACE_NAME_LABEL: Final = "kubernetes.io/metadata.name"

_DO_NOT_SCHEDULE: Final = frozenset({"NoSchedule", "NoExecute"})


def _as_list(value: Any) -> list[Any]:
    return list(value) if isinstance(value, (list, tuple)) else []


def _as_map(value: Any) -> Mapping[str, Any]:
    return value if isinstance(value, Mapping) else {}


# ---------------------------------------------------------------------------- label selectors


class LabelSelector:
    """A compiled ``metav1.LabelSelector``.

    ``None`` (no selector) matches nothing; ``{}`` matches everything and is
    *empty*; an invalid selector matches nothing.
    """

    __slots__ = ("empty", "nothing", "reqs")

    def __init__(self, reqs: Sequence[Requirement] = (), *, nothing: bool = False) -> None:
        self.reqs: tuple[Requirement, ...] = tuple(reqs)
        self.nothing = nothing
        self.empty = not nothing and not self.reqs

    @classmethod
    def parse(cls, raw: Any) -> LabelSelector:
        """Compile a selector; ``None`` gives the selector that matches nothing."""
        if raw is None or not isinstance(raw, Mapping):
            return cls(nothing=True)
        reqs: list[Requirement] = []
        for key, value in _as_map(raw.get("matchLabels")).items():
            reqs.append((str(key), "In", frozenset({str(value)})))
        for expr in _as_list(raw.get("matchExpressions")):
            req = _selector_requirement(expr)
            if req is None:
                return cls(nothing=True)
            reqs.append(req)
        return cls(reqs)

    def with_requirement(self, key: str, op: str, value: str) -> LabelSelector:
        """This selector plus ``key op {value}`` (used for ``matchLabelKeys``)."""
        if self.nothing:
            return self
        return LabelSelector((*self.reqs, (key, op, frozenset({value}))))

    def matches(self, labels: Mapping[str, str]) -> bool:
        """Whether a label set satisfies every requirement."""
        if self.nothing:
            return False
        return all(match_requirement(labels, req) for req in self.reqs)


def _selector_requirement(expr: Any) -> Requirement | None:
    return parse_requirement(expr, numeric=False)


def namespace_labels(namespace: str) -> dict[str, str]:
    """The labels of a namespace as the scheduler sees them (only its name label)."""
    return {NAMESPACE_NAME_LABEL: namespace}


# ---------------------------------------------------------------------------- node selectors


class PreferredTerms:
    """The pod's preferred node affinity terms, each with its weight."""

    __slots__ = ("terms",)

    def __init__(self, affinity: Mapping[str, Any] | None) -> None:
        node_affinity = _as_map(_as_map(affinity).get("nodeAffinity"))
        self.terms: list[tuple[int, NodeSelectorTerm]] = []
        for raw in _as_list(node_affinity.get("preferredDuringSchedulingIgnoredDuringExecution")):
            raw = _as_map(raw)
            weight = raw.get("weight")
            term = NodeSelectorTerm(raw.get("preference"))
            if isinstance(weight, int) and weight != 0 and term.valid:
                self.terms.append((weight, term))

    def score(self, node: Node) -> int:
        """The sum of the weights of the terms the node matches."""
        return sum(weight for weight, term in self.terms if term.matches(node))


# ---------------------------------------------------------------------------- taints and tolerations


def find_untolerated_taint(
    taints: Iterable[Taint],
    tolerations: Sequence[Mapping[str, Any]],
    effects: frozenset[str] = _DO_NOT_SCHEDULE,
) -> Taint | None:
    """The first taint with one of ``effects`` (NoSchedule, NoExecute) that no toleration tolerates."""
    for taint in taints:
        if taint.effect in effects and not tolerated(tolerations, taint):
            return taint
    return None


# ---------------------------------------------------------------------------- pod affinity


class AffinityTerm:
    """A pod (anti-)affinity term resolved for its owning pod."""

    __slots__ = ("namespace_selector", "namespaces", "selector", "topology_key", "weight")

    def __init__(
        self,
        selector: LabelSelector,
        namespaces: frozenset[str],
        namespace_selector: LabelSelector,
        topology_key: str,
        weight: int = 1,
    ) -> None:
        self.selector = selector
        self.namespaces = namespaces
        self.namespace_selector = namespace_selector
        self.topology_key = topology_key
        self.weight = weight

    def matches(self, namespace: str, labels: Mapping[str, str]) -> bool:
        """Whether a pod in ``namespace`` with ``labels`` is selected by the term."""
        if namespace in self.namespaces or self.namespace_selector.matches(namespace_labels(namespace)):
            return self.selector.matches(labels)
        return False


def _affinity_term(raw: Any, namespace: str, pod_labels: Mapping[str, str], weight: int = 1) -> AffinityTerm | None:
    if not isinstance(raw, Mapping):
        return None
    selector = LabelSelector.parse(raw.get("labelSelector"))
    for key in _as_list(raw.get("matchLabelKeys")):
        if key in pod_labels:
            selector = selector.with_requirement(str(key), "In", pod_labels[key])
    for key in _as_list(raw.get("mismatchLabelKeys")):
        if key in pod_labels:
            selector = selector.with_requirement(str(key), "NotIn", pod_labels[key])
    raw_ns_selector = raw.get("namespaceSelector")
    names = [str(n) for n in _as_list(raw.get("namespaces"))]
    namespaces = frozenset({namespace} if not names and raw_ns_selector is None else names)
    topology_key = raw.get("topologyKey")
    if not isinstance(topology_key, str) or not topology_key:
        return None
    return AffinityTerm(selector, namespaces, LabelSelector.parse(raw_ns_selector), topology_key, weight)


class PodAffinity:
    """A pod's inter-pod affinity, resolved: required and preferred, affinity and anti-affinity."""

    __slots__ = ("preferred", "preferred_anti", "required", "required_anti", "valid")

    def __init__(self) -> None:
        self.required: list[AffinityTerm] = []
        self.required_anti: list[AffinityTerm] = []
        self.preferred: list[AffinityTerm] = []
        self.preferred_anti: list[AffinityTerm] = []
        self.valid = True

    @property
    def any(self) -> bool:
        """Whether the pod has any pod (anti-)affinity term."""
        return bool(self.required or self.required_anti or self.preferred or self.preferred_anti)


def parse_pod_affinity(affinity: Mapping[str, Any] | None, namespace: str, labels: Mapping[str, str]) -> PodAffinity:
    """Resolve the ``podAffinity`` and ``podAntiAffinity`` sections of a pod's affinity."""
    out = PodAffinity()
    raw = _as_map(affinity)
    for section, required, preferred in (
        ("podAffinity", out.required, out.preferred),
        ("podAntiAffinity", out.required_anti, out.preferred_anti),
    ):
        part = _as_map(raw.get(section))
        for item in _as_list(part.get("requiredDuringSchedulingIgnoredDuringExecution")):
            term = _affinity_term(item, namespace, labels)
            if term is None:
                out.valid = False
            else:
                required.append(term)
        for item in _as_list(part.get("preferredDuringSchedulingIgnoredDuringExecution")):
            item = _as_map(item)
            weight = item.get("weight")
            weight = weight if isinstance(weight, int) else 0
            term = _affinity_term(item.get("podAffinityTerm"), namespace, labels, weight)
            if term is None:
                out.valid = False
            else:
                preferred.append(term)
    return out


# ---------------------------------------------------------------------------- topology spread


class SpreadConstraint:
    """One ``topologySpreadConstraints`` entry, resolved for its pod."""

    __slots__ = ("max_skew", "min_domains", "node_affinity_honor", "node_taints_honor", "selector", "topology_key")

    def __init__(
        self,
        max_skew: int,
        topology_key: str,
        selector: LabelSelector,
        min_domains: int,
        node_affinity_honor: bool,
        node_taints_honor: bool,
    ) -> None:
        self.max_skew = max_skew
        self.topology_key = topology_key
        self.selector = selector
        self.min_domains = min_domains
        self.node_affinity_honor = node_affinity_honor
        self.node_taints_honor = node_taints_honor

    def counts_node(self, node: Node, required: NodeSelector, tolerations: Sequence[Mapping[str, Any]]) -> bool:
        """Whether pods on ``node`` count for this constraint (``nodeAffinityPolicy``/``nodeTaintsPolicy``)."""
        if self.node_affinity_honor and not required.matches(node):
            return False
        return not (self.node_taints_honor and find_untolerated_taint(node.taints, tolerations) is not None)


def parse_spread_constraints(
    raw: Sequence[Mapping[str, Any]], when: str, labels: Mapping[str, str]
) -> tuple[list[SpreadConstraint], bool]:
    """The constraints whose ``whenUnsatisfiable`` is ``when``, and whether all of them were valid."""
    out: list[SpreadConstraint] = []
    valid = True
    for item in raw:
        item = _as_map(item)
        if (item.get("whenUnsatisfiable") or "DoNotSchedule") != when:
            continue
        key = item.get("topologyKey")
        skew = item.get("maxSkew")
        if not isinstance(key, str) or not key or not isinstance(skew, int) or skew <= 0:
            valid = False
            continue
        selector = LabelSelector.parse(item.get("labelSelector"))
        for label_key in _as_list(item.get("matchLabelKeys")):
            if label_key in labels:
                selector = selector.with_requirement(str(label_key), "In", labels[label_key])
        min_domains = item.get("minDomains")
        out.append(
            SpreadConstraint(
                skew,
                key,
                selector,
                min_domains if isinstance(min_domains, int) and min_domains > 0 else 1,
                (item.get("nodeAffinityPolicy") or "Honor") == "Honor",
                (item.get("nodeTaintsPolicy") or "Ignore") == "Honor",
            )
        )
    return out, valid


# ---------------------------------------------------------------------------- ports, images, scores


def _sanitize(protocol: str, ip: str) -> tuple[str, str]:
    return (protocol or "TCP", ip or "0.0.0.0")


def ports_conflict(
    wanted: Iterable[tuple[str, str, int]],
    used: Iterable[tuple[str, str, int]],
) -> bool:
    """Whether any wanted ``(protocol, host IP, port)`` clashes with a used one.

    ``0.0.0.0`` (or an empty IP) clashes with every IP on the same protocol
    and port; a specific IP clashes with itself and with ``0.0.0.0``.
    """
    in_use: dict[tuple[str, int], set[str]] = {}
    for protocol, ip, port in used:
        if port > 0:
            proto, host = _sanitize(protocol, ip)
            in_use.setdefault((proto, port), set()).add(host)
    if not in_use:
        return False
    for protocol, ip, port in wanted:
        if port <= 0:
            continue
        proto, host = _sanitize(protocol, ip)
        ips = in_use.get((proto, port))
        if not ips:
            continue
        if host == "0.0.0.0" or host in ips or "0.0.0.0" in ips:
            return True
    return False


def normalized_image_name(name: str) -> str:
    """An image name with ``:latest`` added when it has neither tag nor digest."""
    if name.rfind(":") <= name.rfind("/"):
        return name + ":latest"
    return name


def default_normalize(scores: dict[str, int], reverse: bool) -> None:
    """Kubernetes' default score normalisation, in place: scale to 0..100 by the maximum.

    When every score is 0, scores stay 0 (or become 100 with ``reverse``).
    """
    top = max(scores.values(), default=0)
    if top == 0:
        if reverse:
            for name in scores:
                scores[name] = MAX_NODE_SCORE
        return
    for name, score in scores.items():
        value = MAX_NODE_SCORE * score // top
        scores[name] = MAX_NODE_SCORE - value if reverse else value


def task_pod_affinity(task: TaskInfo, cache: dict[str, PodAffinity]) -> PodAffinity:
    """A task's pod (anti-)affinity terms, parsed once per template into ``cache``."""
    found = cache.get(task.template)
    if found is None:
        pod = task.pod
        found = parse_pod_affinity(
            pod.affinity if pod is not None else None, task.namespace, pod.labels if pod is not None else {}
        )
        cache[task.template] = found
    return found
