"""Reading manifest files: YAML (one or many documents) or JSON, fast.

JSON (text that starts with ``{`` or ``[``, as ``kubectl get -o json``
prints it) goes through :mod:`json`, the fastest way in.

For YAML, PyYAML's C loader parses quickly but builds every value through a
Python composer and constructor, which dominates the time on large dumps
(about 25 s for a 50,000-pod flow-style file). Here the C parser's events are
turned into plain dicts and lists in one loop, with plain scalars resolved
through PyYAML's own resolver and constructor but cached by their text, so the
values are exactly those ``yaml.safe_load`` would give, ten times faster.
Without libyaml the pure-Python ``SafeLoader`` is used.

**One object per line.** Generated dumps and the benchmark workloads write a
long block sequence whose entries are one-line flow mappings
(``- {apiVersion: v1, kind: Pod, ...}``). Runs of such lines are rewritten
into JSON by a few whole-text regular expressions (plain scalars that YAML
reads as strings get quoted; numbers, ``true``, ``false`` and ``null`` stay
as they are) and read with :mod:`json`, about four times faster than the
event loop; the rest of the file, with one marker entry in place of each
run, goes through the event loop, and the runs are spliced back in where
their markers landed. Every construct whose YAML meaning could differ from
the JSON reading (other characters, comments, anchors, tags, escapes, ``:``
without a space, numbers with exponents, YAML-only words such as ``yes``,
multi-word plain scalars, very long keys, non-ASCII text; also quoted
scalars holding a word after a space, ``{`` or ``[``) makes the run go
through the event loop instead, so the result is always the one
``yaml.safe_load`` gives, and errors are reported by the event loop with
their line numbers.
"""

from __future__ import annotations

import json
import re
import sys
from collections.abc import Iterator
from pathlib import Path
from typing import Any, Final

import yaml
from yaml import events as _ev
from yaml.constructor import SafeConstructor
from yaml.nodes import ScalarNode
from yaml.resolver import Resolver

from volcanolib.errors import ManifestError
from volcanolib.kube._fields import gc_paused

__all__ = ["STDIN", "parse_documents", "read_documents", "source_name"]

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


def read_documents(path: str | Path) -> list[Any]:
    """Read a file and return its documents (empty documents left out).

    The name ``-`` reads standard input (``kubectl get ... -o json | volcanolib simulate -``).

    :raises ManifestError: naming the file when it cannot be read or parsed.
    """
    source = source_name(path)
    if source == "<stdin>":
        return parse_documents(sys.stdin.read(), source=source)
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
        mark = getattr(exc, "problem_mark", None)
        where = f" at line {mark.line + 1} column {mark.column + 1}" if mark is not None else ""
        problem = getattr(exc, "problem", None) or str(exc).splitlines()[0]
        raise ManifestError(f"not valid YAML{where}: {problem}", source=source) from None
    except (TypeError, ValueError) as exc:  # e.g. an unhashable mapping key, a bad timestamp
        raise ManifestError(f"not valid YAML: {exc}", source=source) from None
    except RecursionError:  # the pure-Python loader, without libyaml
        raise ManifestError(f"not valid YAML: nested more than {MAX_DEPTH} levels deep", source=source) from None
    return [doc for doc in docs if doc is not None]


def _load_all(text: str) -> Iterator[Any]:
    if _CParser is None:  # pragma: no cover
        yield from yaml.load_all(text, Loader=yaml.SafeLoader)
        return
    if _FLOW_LINES_OK and len(text) >= _MIN_RUN_LINES * 8:
        docs = _load_flow_lines(text)
        if docs is not None:
            yield from docs
            return
    yield from _EventBuilder(_CParser(text)).documents()


# ------------------------------------------------------------ one object per line

#: A run of block-sequence entries at column 0, each a one-line flow mapping.
_RUN = re.compile(r"(?:^- \{[^\n]*\}\n)+", re.MULTILINE)
#: Runs shorter than this go through the event loop with the rest.
_MIN_RUN_LINES: Final = 32
#: The plain scalars of YAML's bool and null resolvers that start with a letter.
_YAML_WORDS: Final = "yes|Yes|YES|no|No|NO|true|True|TRUE|false|False|FALSE|on|On|ON|off|Off|OFF|null|Null|NULL"
_TOKEN_CHAR: Final = r"[\w./-]"
#: Plain scalars YAML reads as strings: a word starting with a letter, ``_`` or ``/``
#: (not one of the bool and null words), or a Kubernetes quantity such as ``64Gi``
#: or ``500m``; after ``{``, ``[`` or a space.
#: (Only words starting with a letter some bool or null word starts with are checked against them.)
_STRING_TOKEN = re.compile(
    rf"(?<=[{{\[ ])([a-eg-mp-su-xzA-EG-MP-SU-XZ_/]{_TOKEN_CHAR}*"
    rf"|(?!(?:{_YAML_WORDS})(?!{_TOKEN_CHAR}))[fFnNoOtTyY]{_TOKEN_CHAR}*"
    rf"|[0-9]+(?:\.[0-9]+)?(?:[KMGTPE]i|[kMGTPEmun])(?!{_TOKEN_CHAR}))"
)
#: Double-quoted scalars without escapes (text with a backslash never gets here).
_QUOTED = re.compile(r'"[^"\n]*"')
#: Outside quoted scalars: control characters, YAML indicators JSON would not read alike.
_UNSAFE = re.compile(r"[\x00-\x09\x0b-\x1f\x7f#&*!|>'%@`?\\]")
#: libyaml refuses implicit keys longer than 1024 characters: runs with long scalars go through the event loop.
_LONG_QUOTED = re.compile(r'"[^"\n]{512,}"')
_LONG_TOKEN: Final = 512
_CHUNK_CHARS: Final = 1 << 20
_MARKER: Final = "__volcanolib_flow_lines_"
_ENTRY: Final = '["\\u0000",'  # JSON for a list starting with "\0", which the text cannot hold


def _stock_resolvers() -> bool:
    """Whether YAML's implicit resolvers are PyYAML's own for every character a string token may start with.

    The quoting above relies on them: a word starting with a letter, ``_``
    or ``/`` resolves to a string unless it is a bool or null word, and a
    quantity never matches the int, float or timestamp resolvers.
    """
    expected = {"tag:yaml.org,2002:bool", "tag:yaml.org,2002:null"}
    words = _YAML_WORDS.split("|")
    for first, entries in Resolver.yaml_implicit_resolvers.items():
        if first is None:  # a resolver tried on every scalar
            return False
        if not first or not (first.isalpha() or first in "_/" or first.isdigit()):
            continue  # "" is the empty scalar's; tokens are never empty
        tags = {tag for tag, _ in entries}
        if first.isdigit():
            if not tags <= {"tag:yaml.org,2002:int", "tag:yaml.org,2002:float", "tag:yaml.org,2002:timestamp"}:
                return False
            for _, regexp in entries:
                if any(regexp.match(f"{n}{unit}") for n in ("0", "1", "10", "1.5", "0.5") for unit in _UNITS):
                    return False
            continue
        if not tags <= expected or first not in _CHECKED_LETTERS:
            return False
        for _, regexp in entries:
            for probe in (first, f"{first}x", f"{first}{first}", f"{first}ab_c"):
                if regexp.match(probe) and probe not in words:
                    return False
    return all(
        any(regexp.match(word) for tag, regexp in Resolver.yaml_implicit_resolvers.get(word[0], []) if tag in expected)
        for word in words
    )


#: The letters :data:`_STRING_TOKEN` checks words starting with against the bool and null words.
_CHECKED_LETTERS: Final = "fFnNoOtTyY"
_UNITS: Final = ("Ki", "Mi", "Gi", "Ti", "Pi", "Ei", "k", "M", "G", "T", "P", "E", "m", "u", "n")
_FLOW_LINES_OK = HAVE_LIBYAML and _stock_resolvers()


def _json_float(text: str) -> float:
    """``parse_float`` for the rewritten runs: YAML 1.1 reads ``1e3`` as a string, so exponents are refused."""
    if "e" in text or "E" in text:
        raise ValueError(text)
    return float(text)


def _refuse(text: str) -> Any:
    """``parse_constant`` for the rewritten runs: ``-Infinity`` and ``NaN`` are strings in YAML."""
    raise ValueError(text)


def _translate_run(run: str) -> list[Any] | None:
    """The flow mappings of a run of ``- {...}`` lines, read as JSON; ``None`` when YAML might read them otherwise.

    The run is rewritten a megabyte or so at a time, which keeps the
    intermediate strings small.
    """
    items: list[Any] = []
    start = 0
    while start < len(run):
        end = run.find("\n", start + _CHUNK_CHARS)
        end = len(run) if end < 0 else end + 1
        chunk = _translate_chunk(run[start:end])
        if chunk is None:
            return None
        items.extend(chunk)
        start = end
    return items


def _translate_chunk(run: str) -> list[Any] | None:
    """:func:`_translate_run` on whole lines."""
    if not run.isascii() or "\\" in run:
        return None
    bare = _QUOTED.sub('""', run)
    if _UNSAFE.search(bare) or bare.count(":") != bare.count(": ") or " " * 64 in bare or _LONG_QUOTED.search(run):
        return None
    parts = _STRING_TOKEN.split(run)
    if len(parts) > 1 and max(map(len, parts[1::2])) >= _LONG_TOKEN:
        return None
    text = '"'.join(parts)
    # Each line becomes ["\0", {...}]: a line that is not exactly one value cannot pass the check below.
    body = text.replace("\n- ", "],\n" + _ENTRY)
    try:
        entries = json.loads(f"[{_ENTRY}{body[2:-1]}]]", parse_float=_json_float, parse_constant=_refuse)
    except (ValueError, RecursionError):  # RecursionError: nesting too deep for json; the event loop copes
        return None
    lines = run.count("\n")
    if len(entries) != lines:
        return None
    items = []
    for entry in entries:
        if entry.__class__ is not list or len(entry) != 2 or entry[0] != "\0" or entry[1].__class__ is not dict:
            return None
        items.append(entry[1])
    return items


def _load_flow_lines(text: str) -> list[Any] | None:
    """The documents of ``text``, its runs of one-line flow mappings read as JSON; ``None`` when that cannot be done."""
    if _MARKER in text:
        return None
    runs: dict[str, list[Any]] = {}
    pieces: list[str] = []
    pos = 0
    for match in _RUN.finditer(text):
        run = match.group()
        if run.count("\n") < _MIN_RUN_LINES:
            continue
        items = _translate_run(run)
        if items is None:
            continue
        marker = f"{_MARKER}{len(runs)}"
        runs[marker] = items
        pieces.append(text[pos : match.start()])
        pieces.append(f'- "{marker}"\n')  # quoted: like a flow mapping, it takes nothing from the next line
        pos = match.end()
    if not runs:
        return None
    pieces.append(text[pos:])
    try:
        docs = list(_EventBuilder(_CParser("".join(pieces))).documents())
    except (yaml.YAMLError, TypeError, ValueError):
        return None  # the event loop over the whole text reports it, with the right line
    return docs if _splice(docs, runs) else None


def _is_marker(value: Any) -> bool:
    return isinstance(value, str) and value.startswith(_MARKER)


def _splice(docs: list[Any], runs: dict[str, list[Any]]) -> bool:
    """Put each run's items where its marker entry is; whether every marker was found, once, as a list entry.

    Only the documents read by the event loop are walked: the items come
    from text without a marker.
    """
    found: set[str] = set()
    seen: set[int] = set()
    stack: list[Any] = []
    for doc in docs:
        if _is_marker(doc):
            return False
        if isinstance(doc, (dict, list)):
            stack.append(doc)
    while stack:
        node = stack.pop()
        if id(node) in seen:  # an alias of a node already walked
            continue
        seen.add(id(node))
        if isinstance(node, dict):
            for key, value in node.items():
                if _is_marker(key) or _is_marker(value):
                    return False
                if isinstance(value, (dict, list)):
                    stack.append(value)
            continue
        spliced: list[Any] | None = None
        for i, value in enumerate(node):
            if isinstance(value, (dict, list)):
                stack.append(value)
            elif _is_marker(value):
                items = runs.get(value)
                if items is None or value in found:
                    return False
                if spliced is None:
                    spliced = node[:i]
                spliced.extend(items)
                found.add(value)
                continue
            if spliced is not None:
                spliced.append(value)
        if spliced is not None:
            node[:] = spliced
    return len(found) == len(runs)


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
