"""Label and field selectors, parsed as the API server parses the ``labelSelector`` and
``fieldSelector`` query parameters."""

from __future__ import annotations

import re
from collections.abc import Callable, Mapping
from typing import Any

Predicate = Callable[[Mapping[str, Any]], bool]


class SelectorError(ValueError):
    """A selector the API server would refuse with ``400 Bad Request``."""


def _split_top(text: str) -> list[str]:
    """Split on commas that are not inside ``( ... )``."""
    parts: list[str] = []
    depth = 0
    start = 0
    for i, ch in enumerate(text):
        if ch == "(":
            depth += 1
        elif ch == ")":
            depth -= 1
        elif ch == "," and depth == 0:
            parts.append(text[start:i])
            start = i + 1
    parts.append(text[start:])
    return [p.strip() for p in parts if p.strip()]


def _label_in(key: str, values: frozenset[str], negate: bool) -> Callable[[Mapping[str, str]], bool]:
    def check(labels: Mapping[str, str]) -> bool:
        return (labels.get(key) in values) != negate

    return check


def _label_exists(key: str, negate: bool) -> Callable[[Mapping[str, str]], bool]:
    def check(labels: Mapping[str, str]) -> bool:
        return (key in labels) != negate

    return check


def _field_equals(path: str, value: str, negate: bool) -> Predicate:
    def check(obj: Mapping[str, Any]) -> bool:
        return (field_value(obj, path) == value) != negate

    return check


_SET_RE = re.compile(r"^([A-Za-z0-9_./-]+)\s+(in|notin)\s+\((.*)\)$")
_EQ_RE = re.compile(r"^([A-Za-z0-9_./-]+)\s*(==|!=|=)\s*([A-Za-z0-9_.-]*)$")
_EXISTS_RE = re.compile(r"^(!?)\s*([A-Za-z0-9_./-]+)$")


def parse_label_selector(text: str) -> Callable[[Mapping[str, str]], bool]:
    """Compile a label selector (``a=b,c!=d,e in (x,y),f notin (z),g,!h``) into a predicate on labels.

    :raises SelectorError: when a requirement cannot be parsed.
    """
    requirements: list[Callable[[Mapping[str, str]], bool]] = []
    for part in _split_top(text):
        m = _SET_RE.match(part)
        if m:
            key, op, values_text = m.groups()
            values = frozenset(v.strip() for v in values_text.split(",") if v.strip())
            requirements.append(_label_in(key, values, negate=op == "notin"))
            continue
        m = _EQ_RE.match(part)
        if m:
            key, op, value = m.groups()
            requirements.append(_label_in(key, frozenset((value,)), negate=op == "!="))
            continue
        m = _EXISTS_RE.match(part)
        if m:
            neg, key = m.groups()
            requirements.append(_label_exists(key, negate=bool(neg)))
            continue
        raise SelectorError(f"unable to parse requirement: {part!r}")
    return lambda labels: all(req(labels) for req in requirements)


def match_expressions_selector(selector: Mapping[str, Any]) -> Callable[[Mapping[str, str]], bool]:
    """Compile a ``metav1.LabelSelector`` object (``matchLabels`` and ``matchExpressions``).

    An empty selector matches everything, as for a PodDisruptionBudget in ``policy/v1``.
    """
    match_labels: Mapping[str, str] = selector.get("matchLabels") or {}
    exprs: list[Mapping[str, Any]] = selector.get("matchExpressions") or []

    def matches(labels: Mapping[str, str]) -> bool:
        if any(labels.get(k) != v for k, v in match_labels.items()):
            return False
        for e in exprs:
            key, op, values = e["key"], e["operator"], e.get("values") or []
            if op == "In" and labels.get(key) not in values:
                return False
            if op == "NotIn" and labels.get(key) in values:
                return False
            if op == "Exists" and key not in labels:
                return False
            if op == "DoesNotExist" and key in labels:
                return False
        return True

    return matches


def field_value(obj: Mapping[str, Any], path: str) -> str:
    """The value of a dotted field path as a string (``""`` when missing; booleans lower-case)."""
    cur: Any = obj
    for part in path.split("."):
        if not isinstance(cur, Mapping):
            return ""
        cur = cur.get(part)
        if cur is None:
            return ""
    if isinstance(cur, bool):
        return "true" if cur else "false"
    return str(cur)


# Field labels that name another path (an Event's "source" is its source.component).
FIELD_ALIASES = {"source": "source.component"}


def parse_field_selector(text: str, supported: tuple[str, ...]) -> Predicate:
    """Compile a field selector (``spec.nodeName=,metadata.name!=x``) into a predicate on objects.

    :param supported: the field labels the resource accepts besides ``metadata.name`` and
        ``metadata.namespace``.
    :raises SelectorError: for an unparsable term or an unsupported field, with the API
        server's wording.
    """
    allowed = ("metadata.name", "metadata.namespace", *supported)
    terms: list[Predicate] = []
    for part in _split_top(text):
        for op in ("!=", "==", "="):
            idx = part.find(op)
            if idx > 0:
                key, value = part[:idx].strip(), part[idx + len(op) :].strip()
                break
        else:
            raise SelectorError(f"invalid selector: '{text}'; can't understand '{part}'")
        if key not in allowed:
            raise SelectorError(f"field label not supported: {key}")
        terms.append(_field_equals(FIELD_ALIASES.get(key, key), value, negate=op == "!="))
    return lambda obj: all(t(obj) for t in terms)
