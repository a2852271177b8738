"""The three PATCH content types: JSON merge patch (RFC 7386), a strategic merge patch
good enough for the fields a scheduler and kubectl touch, and JSON patch (RFC 6902)."""

from __future__ import annotations

import copy
from typing import Any

MERGE = "application/merge-patch+json"
STRATEGIC = "application/strategic-merge-patch+json"
JSON_PATCH = "application/json-patch+json"
APPLY = "application/apply-patch+yaml"

# List fields merged element by element on a key, as the Kubernetes Go types declare with
# patchStrategy=merge; every other list is replaced.
MERGE_KEYS = {
    "conditions": "type",
    "containers": "name",
    "initContainers": "name",
    "ephemeralContainers": "name",
    "schedulingGates": "name",
    "env": "name",
    "volumes": "name",
    "volumeMounts": "mountPath",
    "ownerReferences": "uid",
    "imagePullSecrets": "name",
    "taints": "key",
    "addresses": "type",
    "ports": "containerPort",
}
# Lists of scalars merged as sets (patchStrategy=merge without a key).
MERGE_SCALAR_LISTS = frozenset({"finalizers"})


class PatchError(ValueError):
    """A patch that cannot be applied (the API server answers ``422`` or ``400``)."""


def merge_patch(target: Any, patch: Any) -> Any:
    """Apply an RFC 7386 JSON merge patch; ``null`` deletes a key, lists are replaced."""
    if not isinstance(patch, dict):
        return copy.deepcopy(patch)
    result = dict(target) if isinstance(target, dict) else {}
    for key, value in patch.items():
        if value is None:
            result.pop(key, None)
        else:
            result[key] = merge_patch(result.get(key), value)
    return result


def strategic_merge_patch(target: Any, patch: Any) -> Any:
    """Apply a strategic merge patch.

    Maps merge as in a JSON merge patch. The lists named in :data:`MERGE_KEYS` merge
    element by element on their key; an element ``{"<key>": k, "$patch": "delete"}``
    removes the element. ``$patch: replace`` on a map replaces it; ``$retainKeys`` keeps
    only the listed keys; ``$setElementOrder/<list>`` and ``$deleteFromPrimitiveList/<list>``
    are honoured. Lists not named in the table are replaced.
    """
    if not isinstance(patch, dict):
        return copy.deepcopy(patch)
    directive = patch.get("$patch")
    if directive == "delete":
        return None
    if directive == "replace":
        return {k: copy.deepcopy(v) for k, v in patch.items() if k != "$patch"}
    result = dict(target) if isinstance(target, dict) else {}
    retain = patch.get("$retainKeys")
    for key, value in patch.items():
        if key in ("$patch", "$retainKeys") or key.startswith("$setElementOrder/"):
            continue
        if key.startswith("$deleteFromPrimitiveList/"):
            name = key.split("/", 1)[1]
            result[name] = [x for x in result.get(name) or [] if x not in value]
            continue
        if value is None:
            result.pop(key, None)
        elif isinstance(value, list) and key in MERGE_KEYS and isinstance(result.get(key), list):
            result[key] = _merge_list(result[key], value, MERGE_KEYS[key])
        elif isinstance(value, list) and key in MERGE_SCALAR_LISTS and isinstance(result.get(key), list):
            result[key] = list(result[key]) + [x for x in value if x not in result[key]]
        elif isinstance(value, list):
            result[key] = [
                strategic_merge_patch(None, x) if isinstance(x, dict) else x
                for x in value
                if not (isinstance(x, dict) and x.get("$patch") == "delete")
            ]
        else:
            merged = strategic_merge_patch(result.get(key), value)
            if merged is None:
                result.pop(key, None)
            else:
                result[key] = merged
    if isinstance(retain, list):
        result = {k: v for k, v in result.items() if k in retain}
    return result


def _merge_list(current: list[Any], patch: list[Any], key: str) -> list[Any]:
    out = [dict(x) if isinstance(x, dict) else x for x in current]
    index = {x.get(key): i for i, x in enumerate(out) if isinstance(x, dict)}
    deleted: set[Any] = set()
    for item in patch:
        if not isinstance(item, dict) or key not in item:
            raise PatchError(f"map: {item!r} does not contain declared merge key: {key}")
        k = item[key]
        if item.get("$patch") == "delete":
            deleted.add(k)
            continue
        if k in index:
            out[index[k]] = strategic_merge_patch(out[index[k]], item)
        else:
            index[k] = len(out)
            out.append(strategic_merge_patch(None, item))
    return [x for x in out if not (isinstance(x, dict) and x.get(key) in deleted)]


def _pointer(path: str) -> list[str]:
    if path == "":
        return []
    if not path.startswith("/"):
        raise PatchError(f"invalid JSON pointer: {path!r}")
    return [p.replace("~1", "/").replace("~0", "~") for p in path[1:].split("/")]


def _resolve(doc: Any, parts: list[str]) -> Any:
    cur = doc
    for p in parts:
        if isinstance(cur, list):
            try:
                cur = cur[int(p)]
            except (ValueError, IndexError) as exc:
                raise PatchError(f"index {p} out of range") from exc
        elif isinstance(cur, dict):
            if p not in cur:
                raise PatchError(f"missing path element {p!r}")
            cur = cur[p]
        else:
            raise PatchError(f"cannot descend into {p!r}")
    return cur


def json_patch(target: Any, ops: Any) -> Any:
    """Apply an RFC 6902 JSON patch (add, remove, replace, move, copy, test)."""
    if not isinstance(ops, list):
        raise PatchError("a JSON patch must be a list of operations")
    doc = copy.deepcopy(target)
    for op in ops:
        kind = op.get("op")
        parts = _pointer(op.get("path", ""))
        if kind == "test":
            if _resolve(doc, parts) != op.get("value"):
                raise PatchError(f"test failed at {op.get('path')}")
            continue
        if kind in ("move", "copy"):
            src = _pointer(op.get("from", ""))
            value = copy.deepcopy(_resolve(doc, src))
            if kind == "move":
                doc = _remove(doc, src)
            doc = _add(doc, parts, value)
        elif kind == "add":
            doc = _add(doc, parts, copy.deepcopy(op.get("value")))
        elif kind == "remove":
            doc = _remove(doc, parts)
        elif kind == "replace":
            _resolve(doc, parts)
            doc = _add(_remove(doc, parts), parts, copy.deepcopy(op.get("value")))
        else:
            raise PatchError(f"unknown JSON patch operation {kind!r}")
    return doc


def _add(doc: Any, parts: list[str], value: Any) -> Any:
    if not parts:
        return value
    parent = _resolve(doc, parts[:-1])
    last = parts[-1]
    if isinstance(parent, list):
        if last == "-":
            parent.append(value)
        else:
            i = int(last)
            if i > len(parent):
                raise PatchError(f"index {i} out of range")
            parent.insert(i, value)
    elif isinstance(parent, dict):
        parent[last] = value
    else:
        raise PatchError(f"cannot add at {last!r}")
    return doc


def _remove(doc: Any, parts: list[str]) -> Any:
    if not parts:
        return None
    parent = _resolve(doc, parts[:-1])
    last = parts[-1]
    if isinstance(parent, list):
        try:
            parent.pop(int(last))
        except (ValueError, IndexError) as exc:
            raise PatchError(f"index {last} out of range") from exc
    elif isinstance(parent, dict):
        if last not in parent:
            raise PatchError(f"missing path element {last!r}")
        del parent[last]
    return doc


def apply_patch(content_type: str, target: Any, patch: Any) -> Any:
    """Apply ``patch`` to ``target`` according to the request's Content-Type.

    :raises PatchError: for an unknown content type or a patch that does not apply.
    """
    ctype = content_type.split(";")[0].strip()
    if ctype == MERGE:
        return merge_patch(target, patch)
    if ctype == STRATEGIC:
        return strategic_merge_patch(target, patch)
    if ctype == JSON_PATCH:
        return json_patch(target, patch)
    raise PatchError(f"unsupported patch content type {ctype!r}")
