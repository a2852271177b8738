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
            if op == "in":
                requirements.append(lambda labels, k=key, vs=values: labels.get(k) in vs)
            else:
                requirements.append(lambda labels, k=key, vs=values: labels.get(k) not in vs)
            continue
        m = _EQ_RE.match(part)
        if m:
            key, op, value = m.groups()
            if op == "!=":
                requirements.append(lambda labels, k=key, v=value: labels.get(k) != v)
            else:
                requirements.append(lambda labels, k=key, v=value: labels.get(k) == v)
            continue
        m = _EXISTS_RE.match(part)
        if m:
            neg, key = m.groups()
            if neg:
                requirements.append(lambda labels, k=key: k not in labels)
            else:
                requirements.append(lambda labels, k=key: k in labels)
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
        if op == "!=":
            terms.append(lambda o, k=key, v=value: field_value(o, k) != v)
        else:
            terms.append(lambda o, k=key, v=value: field_value(o, k) == v)
    return lambda obj: all(t(obj) for t in terms)
