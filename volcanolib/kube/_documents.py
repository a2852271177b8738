"""Reading manifest files: YAML (one or many documents) or JSON, fast.

PyYAML's C loader parses quickly but builds every value through a Python
composer and constructor, which dominates the time on large dumps (about
25 s for a 50,000-pod flow-style file). Here the C parser's events are turned
into plain dicts and lists in one loop, with plain scalars resolved through
PyYAML's own resolver and constructor but cached by their text, so the values
are exactly those ``yaml.safe_load`` would give, ten times faster. Without
libyaml the pure-Python ``SafeLoader`` is used. JSON goes through :mod:`json`.
"""

from __future__ import annotations

import json
from collections.abc import Iterator
from pathlib import Path
from typing import Any

import yaml
from yaml import events as _ev
from yaml.constructor import SafeConstructor
from yaml.nodes import ScalarNode
from yaml.resolver import Resolver

from volcanolib.errors import ManifestError
from volcanolib.kube._fields import gc_paused

__all__ = ["parse_documents", "read_documents"]

try:  # PyYAML built without libyaml has no yaml.cyaml
    from yaml import cyaml as _cyaml
except ImportError:  # pragma: no cover
    _cyaml = None  # type: ignore[assignment]
#: libyaml's parser, when PyYAML was built with it.
_CParser: Any = getattr(_cyaml, "CParser", None)
HAVE_LIBYAML = _CParser is not None

_NO_KEY: Any = object()
_MERGE_TAG = "tag:yaml.org,2002:merge"


def read_documents(path: str | Path) -> list[Any]:
    """Read a file and return its documents (empty documents left out).

    :raises ManifestError: naming the file when it cannot be read or parsed.
    """
    source = str(path)
    try:
        text = Path(path).read_text(encoding="utf-8")
    except OSError as exc:
        raise ManifestError(f"cannot read: {exc.strerror or exc}", source=source) from None
    except UnicodeDecodeError:
        raise ManifestError("cannot read: not UTF-8 text", source=source) from None
    return parse_documents(text, source=source)


def parse_documents(text: str, *, source: str | None = None) -> list[Any]:
    """Parse YAML or JSON text into its documents (empty documents left out).

    Text that starts with ``{`` or ``[`` is tried as JSON first.

    :raises ManifestError: naming the source and the line of a syntax error.
    """
    with gc_paused():
        return _parse(text, source)


def _parse(text: str, source: str | None) -> list[Any]:
    stripped = text.lstrip()
    if stripped[:1] in ("{", "["):
        try:
            return [json.loads(text)]
        except json.JSONDecodeError as exc:
            if source is not None and source.endswith(".json"):
                raise ManifestError(
                    f"not valid JSON at line {exc.lineno} column {exc.colno}: {exc.msg}", source=source
                ) from None
    try:
        docs = list(_load_all(text))
    except yaml.YAMLError as exc:
        mark = getattr(exc, "problem_mark", None)
        where = f" at line {mark.line + 1} column {mark.column + 1}" if mark is not None else ""
        problem = getattr(exc, "problem", None) or str(exc).splitlines()[0]
        raise ManifestError(f"not valid YAML{where}: {problem}", source=source) from None
    except (TypeError, ValueError) as exc:  # e.g. an unhashable mapping key, a bad timestamp
        raise ManifestError(f"not valid YAML: {exc}", source=source) from None
    return [doc for doc in docs if doc is not None]


def _load_all(text: str) -> Iterator[Any]:
    if _CParser is None:  # pragma: no cover
        yield from yaml.load_all(text, Loader=yaml.SafeLoader)
        return
    yield from _EventBuilder(_CParser(text)).documents()


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
                    new_map: dict[Any, Any] = {}
                    if event.anchor is not None:
                        anchors[event.anchor] = new_map
                    stack.append(new_map)
                    keys.append(_NO_KEY)
                    merges.append(None)
                    continue
                elif cls is seq_start:
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
                elif cls is doc_end:
                    yield document
                    document = None
                    anchors.clear()
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
