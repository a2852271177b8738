"""Which nodes a pod may run on by its own constraints: ``nodeSelector`` and required node affinity.

The rule of the Kubernetes scheduler's NodeAffinity filter, on a pod's raw
``affinity`` fragment (as :class:`~volcanolib.api.task.Pod` keeps it) and a
:class:`~volcanolib.api.node.Node`'s labels and name: every ``nodeSelector``
label, and any one of the required ``nodeSelectorTerms`` (each term's
``matchExpressions`` and ``matchFields`` all hold). A malformed term matches
nothing, as Kubernetes treats it once the parse error is logged; it never
raises. volcanolib-contrib's ``predicates`` and ``nodeorder`` plugins apply
it; the replay reads it to tell a pod that no node can ever take.
"""

from __future__ import annotations

from collections.abc import Mapping
from typing import Any

from volcanolib.api.node import Node

__all__ = [
    "NodeSelector",
    "NodeSelectorTerm",
    "Requirement",
    "match_requirement",
    "parse_requirement",
    "required_node_affinity",
]

#: A label requirement: ``(key, operator, values)``; values is a frozenset (an int for ``Gt``/``Lt``).
Requirement = tuple[str, str, Any]


def _as_list(value: Any) -> list[Any]:
    return list(value) if isinstance(value, (list, tuple)) else []


def _as_map(value: Any) -> Mapping[str, Any]:
    return value if isinstance(value, Mapping) else {}


def match_requirement(labels: Mapping[str, str], req: Requirement) -> bool:
    """Whether a label set satisfies a requirement (``In``, ``NotIn``, ``Exists``, ``DoesNotExist``, ``Gt``, ``Lt``)."""
    key, op, values = req
    if op == "In":
        return key in labels and labels[key] in values
    if op == "NotIn":
        return key not in labels or labels[key] not in values
    if op == "Exists":
        return key in labels
    if op == "DoesNotExist":
        return key not in labels
    raw = labels.get(key)
    if raw is None:
        return False
    try:
        have = int(raw)
    except ValueError:
        return False
    bound: int = values
    return have > bound if op == "Gt" else have < bound


def parse_requirement(expr: Any, *, numeric: bool = True) -> Requirement | None:
    """A ``matchExpressions`` entry as a requirement; ``None`` when it is malformed.

    :param numeric: whether ``Gt`` and ``Lt`` are allowed (node selectors have
        them, label selectors do not).
    """
    if not isinstance(expr, Mapping):
        return None
    key = expr.get("key")
    op = expr.get("operator")
    values = [str(v) for v in _as_list(expr.get("values"))]
    if not isinstance(key, str) or not key:
        return None
    if op in ("In", "NotIn"):
        return (key, op, frozenset(values)) if values else None
    if op in ("Exists", "DoesNotExist"):
        return (key, op, frozenset()) if not values else None
    if numeric and op in ("Gt", "Lt"):
        if len(values) != 1:
            return None
        try:
            return (key, op, int(values[0]))
        except ValueError:
            return None
    return None


class NodeSelectorTerm:
    """One node selector term: label requirements and ``metadata.name`` field requirements, ANDed."""

    __slots__ = ("fields", "labels", "valid")

    def __init__(self, raw: Any) -> None:
        raw = _as_map(raw)
        self.labels: list[Requirement] = []
        self.fields: list[tuple[bool, str]] = []
        self.valid = True
        for expr in _as_list(raw.get("matchExpressions")):
            req = parse_requirement(expr)
            if req is None:
                self.valid = False
            else:
                self.labels.append(req)
        for expr in _as_list(raw.get("matchFields")):
            expr = _as_map(expr)
            values = _as_list(expr.get("values"))
            op = expr.get("operator")
            if expr.get("key") != "metadata.name" or len(values) != 1 or op not in ("In", "NotIn"):
                self.valid = False
            else:
                self.fields.append((op == "In", str(values[0])))
        if not self.labels and not self.fields:
            self.valid = False

    def matches(self, node: Node) -> bool:
        """Whether the node satisfies every requirement of the term (an invalid term matches nothing)."""
        if not self.valid:
            return False
        labels = node.labels
        for req in self.labels:
            if not match_requirement(labels, req):
                return False
        return all((node.name == value) is equal for equal, value in self.fields)


class NodeSelector:
    """The required node constraints of a pod: ``nodeSelector`` AND any of the required terms."""

    __slots__ = ("labels", "terms")

    def __init__(self, labels: Mapping[str, str], terms: list[NodeSelectorTerm] | None) -> None:
        self.labels = dict(labels)
        #: ``None`` when the pod has no required node affinity.
        self.terms = terms

    @property
    def trivial(self) -> bool:
        """Whether every node matches."""
        return not self.labels and self.terms is None

    def matches(self, node: Node) -> bool:
        """Whether the node satisfies the selector and one of the terms."""
        node_labels = node.labels
        for key, value in self.labels.items():
            if node_labels.get(key) != value:
                return False
        if self.terms is None:
            return True
        return any(term.matches(node) for term in self.terms)


def required_node_affinity(node_selector: Mapping[str, str], affinity: Mapping[str, Any] | None) -> NodeSelector:
    """The pod's ``nodeSelector`` and ``requiredDuringSchedulingIgnoredDuringExecution`` node affinity."""
    terms: list[NodeSelectorTerm] | None = None
    node_affinity = _as_map(_as_map(affinity).get("nodeAffinity"))
    required = node_affinity.get("requiredDuringSchedulingIgnoredDuringExecution")
    if isinstance(required, Mapping):
        terms = [NodeSelectorTerm(t) for t in _as_list(required.get("nodeSelectorTerms"))]
    return NodeSelector(node_selector, terms)
