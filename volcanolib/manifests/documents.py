"""Reading manifest files: YAML (one or many documents) or JSON, fast.

JSON (text that starts with ``{`` or ``[``, as ``kubectl get -o json``
prints it) goes through :mod:`json`, the fastest way in.

For YAML, PyYAML's C loader parses quickly but builds every value through a
Python composer and constructor, which dominates the time on large dumps.
Here the C parser's events are turned into plain dicts and lists in one loop,
with plain scalars resolved through PyYAML's own resolver and constructor but
cached by their text, so the values are exactly those ``yaml.safe_load`` would
give, about nine times faster than ``yaml.load(..., Loader=CSafeLoader)``
(2.8 s instead of 24.5 s for 50,000 pods and 5,000 nodes, in ``kubectl get -o
yaml``'s block style or in flow style alike; the JSON dump of the same objects
reads in 0.5 s; see ``benchmarks/README.md``). Without libyaml the pure-Python
``SafeLoader`` is used.

One difference from ``yaml.safe_load``, which keeps the last value: a key
twice in one YAML mapping is an error naming its line and the mapping, as it
is for Kubernetes (with libyaml; the pure-Python fallback keeps the last
value). JSON is read as :mod:`json` reads it, a repeated key keeping its last
value: checking every object would slow the reading of a large dump by about
a tenth, and ``kubectl`` does not write repeated keys.
"""

from __future__ import annotations

import json
import sys
from collections.abc import Iterator
from pathlib import Path
from typing import Any, Final

import yaml
from yaml import events as _ev
from yaml.constructor import SafeConstructor
from yaml.nodes import ScalarNode
from yaml.resolver import Resolver

from volcanolib._gc import gc_paused
from volcanolib._yaml import yaml_error
from volcanolib.errors import ManifestError

__all__ = ["STDIN", "parse_documents", "read_documents", "read_text", "source_name"]

try:  # PyYAML built without libyaml has no yaml.cyaml
    from yaml import cyaml as _cyaml
except ImportError:  # pragma: no cover
    _cyaml = None  # type: ignore[assignment]
#: libyaml's parser, when PyYAML was built with it.
_CParser: Any = getattr(_cyaml, "CParser", None)
HAVE_LIBYAML = _CParser is not None

_NO_KEY: Any = object()
#: How deeply mappings and lists may nest in a YAML document (Kubernetes objects need a few dozen levels).
MAX_DEPTH: Final = 256
#: How many values aliases to lists and mappings may add to one document once expanded.
MAX_ALIASED: Final = 1_000_000
_MERGE_TAG = "tag:yaml.org,2002:merge"


#: The file name that stands for standard input.
STDIN: Final = "-"


def source_name(path: str | Path) -> str:
    """How errors name a file: its path, or ``<stdin>`` for ``-``."""
    return "<stdin>" if str(path) == STDIN and not isinstance(path, Path) else str(path)


def read_text(path: str | Path) -> str:
    """The text of a file, read once (so that a pipe such as ``<(kubectl get ...)`` reads like a file).

    The name ``-`` reads standard input.

    :raises ManifestError: naming the file when it cannot be read or is not UTF-8 text.
    """
    source = source_name(path)
    if source == "<stdin>":
        return sys.stdin.read()
    try:
        return Path(path).read_text(encoding="utf-8")
    except OSError as exc:
        raise ManifestError(f"cannot read: {exc.strerror or exc}", source=source) from None
    except UnicodeDecodeError:
        raise ManifestError("cannot read: not UTF-8 text", source=source) from None


def read_documents(path: str | Path) -> list[Any]:
    """Read a file and return its documents (empty documents left out).

    The name ``-`` reads standard input (``kubectl get ... -o json | volcanolib simulate -``).

    :raises ManifestError: naming the file when it cannot be read or parsed.
    """
    return parse_documents(read_text(path), source=source_name(path))


def parse_documents(text: str, *, source: str | None = None) -> list[Any]:
    """Parse YAML or JSON text into its documents (empty documents left out).

    Text that starts with ``{`` or ``[`` is tried as JSON first.

    :raises ManifestError: naming the source and the line of a syntax error.
    """
    with gc_paused():
        return _parse(text, source)


def _parse(text: str, source: str | None) -> list[Any]:
    if text[:1] == "\ufeff":  # a byte order mark: json refuses it, YAML skips it
        text = text[1:]
    stripped = text.lstrip()
    if stripped[:1] in ("{", "["):
        try:
            return [json.loads(text)]
        except json.JSONDecodeError as exc:
            if source is not None and source.endswith(".json"):
                raise ManifestError(
                    f"not valid JSON at line {exc.lineno} column {exc.colno}: {exc.msg}", source=source
                ) from None
        except (ValueError, RecursionError) as exc:  # a number too long to convert, nesting too deep
            if source is not None and source.endswith(".json"):
                raise ManifestError(f"not valid JSON: {exc}", source=source) from None
    try:
        docs = list(_load_all(text))
    except yaml.YAMLError as exc:
        raise ManifestError(yaml_error(exc, text), source=source) from None
    except (TypeError, ValueError) as exc:  # e.g. an unhashable mapping key, a bad timestamp
        raise ManifestError(f"not valid YAML: {exc}", source=source) from None
    except RecursionError:  # the pure-Python loader, without libyaml
        raise ManifestError(f"not valid YAML: nested more than {MAX_DEPTH} levels deep", source=source) from None
    return [doc for doc in docs if doc is not None]


def _load_all(text: str) -> Iterator[Any]:
    if _CParser is None:  # pragma: no cover
        yield from yaml.load_all(text, Loader=yaml.SafeLoader)
        return
    yield from _EventBuilder(_CParser(text)).documents()


def _measure(root: Any, known: dict[int, tuple[int, int]]) -> tuple[int, int]:
    """How many values ``root`` holds with every shared part counted each time, and how deeply it nests.

    Iterative and memoised by id; a structure that contains itself counts
    once. Stops with :class:`OverflowError` past :data:`MAX_DEPTH` levels.
    """
    found = known.get(id(root))
    if found is not None:
        return found
    known[id(root)] = (1, 1)
    stack: list[tuple[Any, Iterator[Any], list[int]]] = [(root, _children(root), [1, 1])]
    while stack:
        node, children, acc = stack[-1]
        for value in children:
            if value.__class__ is not list and value.__class__ is not dict:
                acc[0] += 1
                continue
            seen = known.get(id(value))
            if seen is None:
                if len(stack) >= MAX_DEPTH:
                    raise OverflowError
                known[id(value)] = (1, 1)
                stack.append((value, _children(value), [1, 1]))
                break
            acc[0] += seen[0]
            acc[1] = max(acc[1], seen[1] + 1)
        else:
            stack.pop()
            known[id(node)] = (acc[0], acc[1])
            if stack:
                parent = stack[-1][2]
                parent[0] += acc[0]
                parent[1] = max(parent[1], acc[1] + 1)
    return known[id(root)]


def _children(node: Any) -> Iterator[Any]:
    return iter(node.values() if node.__class__ is dict else node)


def _duplicate_key(key: Any, stack: list[Any], keys: list[Any], event: Any) -> yaml.YAMLError:
    """A mapping holds ``key`` twice: an error at the second one, naming the mapping by its path in the document."""
    path = ""
    for container, in_key in zip(stack[:-1], keys[:-1], strict=True):
        if container.__class__ is list:
            path += f"[{len(container)}]"
        else:
            path += f".{in_key}" if path else str(in_key)
    where = f" in {path}" if path else ""
    return yaml.constructor.ConstructorError(None, None, f"duplicate key {key!r}{where}", event.start_mark)


def _too_deep(event: Any) -> yaml.YAMLError:
    return yaml.composer.ComposerError(None, None, f"nested more than {MAX_DEPTH} levels deep", event.start_mark)


class _EventBuilder:
    """Builds Python values from parser events, the way ``SafeLoader`` would."""

    def __init__(self, parser: Any) -> None:
        self.parser = parser
        self.resolver = Resolver()
        self.constructor = SafeConstructor()
        self.plain_cache: dict[str, Any] = {}
        self.anchors: dict[str, Any] = {}

    def _plain(self, value: str) -> Any:
        try:
            return self.plain_cache[value]
        except KeyError:
            pass
        tag: str = self.resolver.resolve(ScalarNode, value, (True, False))  # type: ignore[no-untyped-call]
        obj = self._construct(tag, value)
        if not isinstance(obj, (list, dict)) and len(self.plain_cache) < 200_000:
            self.plain_cache[value] = obj
        return obj

    def _construct(self, tag: str, value: str, mark: Any = None) -> Any:
        return self.constructor.construct_object(ScalarNode(tag, value, mark, mark), deep=True)

    def documents(self) -> Iterator[Any]:
        """Yield each document's value (``None`` for an empty document)."""
        parser = self.parser
        get = parser.get_event
        scalar_ev, alias_ev = _ev.ScalarEvent, _ev.AliasEvent
        map_start, map_end = _ev.MappingStartEvent, _ev.MappingEndEvent
        seq_start, seq_end = _ev.SequenceStartEvent, _ev.SequenceEndEvent
        doc_end = _ev.DocumentEndEvent
        stack: list[Any] = []
        keys: list[Any] = []
        merges: list[list[Any] | None] = []
        anchors = self.anchors
        document: Any = None
        # What aliases to lists and mappings add to the document once expanded ("billion laughs").
        sizes: dict[int, tuple[int, int]] = {}
        expanded = 0
        try:
            while True:
                event = get()
                if event is None:
                    return
                cls = event.__class__
                if cls is scalar_ev:
                    tag = event.tag
                    if tag is None or tag == "!":
                        if not event.implicit[0]:
                            obj = event.value
                        elif event.value == "<<":
                            obj = _MERGE_TAG
                        else:
                            obj = self._plain(event.value)
                    else:
                        obj = self._construct(tag, event.value, event.start_mark)
                    if event.anchor is not None:
                        anchors[event.anchor] = obj
                elif cls is map_start:
                    if len(stack) >= MAX_DEPTH:
                        raise _too_deep(event)
                    new_map: dict[Any, Any] = {}
                    if event.anchor is not None:
                        anchors[event.anchor] = new_map
                    stack.append(new_map)
                    keys.append(_NO_KEY)
                    merges.append(None)
                    continue
                elif cls is seq_start:
                    if len(stack) >= MAX_DEPTH:
                        raise _too_deep(event)
                    new_seq: list[Any] = []
                    if event.anchor is not None:
                        anchors[event.anchor] = new_seq
                    stack.append(new_seq)
                    keys.append(None)
                    merges.append(None)
                    continue
                elif cls is map_end:
                    obj = stack.pop()
                    keys.pop()
                    merged = merges.pop()
                    if merged:
                        base: dict[Any, Any] = {}
                        for item in merged:
                            for source in item if isinstance(item, list) else [item]:
                                if not isinstance(source, dict):
                                    raise TypeError("a merge key (<<) needs a mapping or a list of mappings")
                                for k, v in source.items():
                                    base.setdefault(k, v)
                        base.update(obj)
                        obj.clear()
                        obj.update(base)
                elif cls is seq_end:
                    obj = stack.pop()
                    keys.pop()
                    merges.pop()
                elif cls is alias_ev:
                    if event.anchor not in anchors:
                        raise yaml.composer.ComposerError(
                            None, None, f"found undefined alias {event.anchor!r}", event.start_mark
                        )
                    obj = anchors[event.anchor]
                    if obj.__class__ is list or obj.__class__ is dict:
                        try:
                            size, depth = _measure(obj, sizes)
                        except OverflowError:
                            raise _too_deep(event) from None
                        if len(stack) + depth > MAX_DEPTH:
                            raise _too_deep(event)
                        expanded += size
                        if expanded > MAX_ALIASED:
                            raise yaml.composer.ComposerError(
                                None, None, f"aliases expand to more than {MAX_ALIASED} values", event.start_mark
                            )
                elif cls is doc_end:
                    yield document
                    document = None
                    anchors.clear()
                    sizes.clear()
                    expanded = 0
                    continue
                else:
                    continue
                if obj is _MERGE_TAG and (not stack or stack[-1].__class__ is list or keys[-1] is not _NO_KEY):
                    obj = "<<"
                if not stack:
                    document = obj
                    continue
                top = stack[-1]
                if top.__class__ is list:
                    top.append(obj)
                elif keys[-1] is _NO_KEY:
                    if obj in top:
                        raise _duplicate_key(obj, stack, keys, event)
                    keys[-1] = obj
                else:
                    key = keys[-1]
                    keys[-1] = _NO_KEY
                    if key is _MERGE_TAG:
                        slot = merges[-1]
                        if slot is None:
                            merges[-1] = [obj]
                        else:
                            slot.append(obj)
                    else:
                        top[key] = obj
        finally:
            parser.dispose()
