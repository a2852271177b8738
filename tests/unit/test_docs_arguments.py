"""The configuration reference lists every argument the code reads, with its type and default.

The sources of the actions and plugins (built-in and contrib) are parsed,
not imported: every call of an ``Arguments`` getter (``get_bool``,
``get_int``, ``get_float``, ``get_str``) gives an argument name, a type and
a default, with module constants, loops over literal tuples and
comprehensions over literal dictionaries resolved. A name built from a
value only known at run time (``f"binpack.resources.{resource}"``) is
written with ``<name>`` in its place, as the pages write it. Each argument
must have a row in its owner's section of ``docs/configuration.md`` that
states the same type and default, and be named on the owner's own page.
"""

from __future__ import annotations

import ast
import itertools
import re
from collections.abc import Iterator
from pathlib import Path
from typing import Any

import attrs
import pytest

from volcanolib.framework.config import HOOK_SWITCHES, KNOWN_SWITCHES, OFF_BY_DEFAULT

ROOT = Path(__file__).resolve().parents[2]
DOCS = ROOT / "docs"
SOURCES = [
    *sorted((ROOT / "volcanolib" / "actions").glob("*.py")),
    *sorted((ROOT / "volcanolib" / "plugins").glob("*.py")),
    *sorted((ROOT / "plugins_contrib" / "volcanolib_contrib").glob("*.py")),
]
GETTERS = {"get_bool": "bool", "get_int": "int", "get_float": "float", "get_str": "string"}
#: A part of an argument name (or a default) that only exists at run time.
RUNTIME = "<name>"
_MISSING = object()


@attrs.frozen
class Read:
    """One argument read in the code."""

    source: str
    owner: str
    kind: str  # "action" or "plugin"
    name: str
    type: str
    default: Any


def _literal(node: ast.expr) -> Any:
    try:
        return ast.literal_eval(node)
    except (ValueError, TypeError, SyntaxError, MemoryError, RecursionError):
        return _MISSING


def _module_constants(tree: ast.Module) -> dict[str, Any]:
    found: dict[str, Any] = {}
    for stmt in tree.body:
        if isinstance(stmt, ast.Assign):
            targets, value = stmt.targets, stmt.value
        elif isinstance(stmt, ast.AnnAssign) and stmt.value is not None:
            targets, value = [stmt.target], stmt.value
        else:
            continue
        literal = _literal(value)
        if literal is not _MISSING:
            for target in targets:
                if isinstance(target, ast.Name):
                    found[target.id] = literal
    return found


TREES = {path: ast.parse(path.read_text(encoding="utf-8")) for path in SOURCES}
CONSTANTS = {path: _module_constants(tree) for path, tree in TREES.items()}
#: Constants of every module, for names imported from a sibling (``PREDICATE_ERROR_CACHE_KEY``).
ALL_CONSTANTS = {name: value for consts in CONSTANTS.values() for name, value in consts.items()}


def _owner(tree: ast.Module) -> tuple[str, str] | None:
    """``(name, kind)`` of the module's action or plugin class (its ``name`` class attribute)."""
    found = []
    for node in ast.walk(tree):
        if not isinstance(node, ast.ClassDef):
            continue
        methods = {s.name for s in node.body if isinstance(s, ast.FunctionDef)}
        for stmt in node.body:
            if (
                isinstance(stmt, ast.AnnAssign)
                and isinstance(stmt.target, ast.Name)
                and stmt.target.id == "name"
                and isinstance(stmt.value, ast.Constant)
            ):
                found.append((stmt.value.value, "action" if "execute" in methods else "plugin"))
    assert len(found) <= 1, found
    return found[0] if found else None


def _evaluate(node: ast.expr, env: dict[str, Any], consts: dict[str, Any]) -> Any:
    if isinstance(node, ast.Constant):
        return node.value
    if isinstance(node, ast.Name):
        for scope in (env, consts, ALL_CONSTANTS):
            if node.id in scope:
                return scope[node.id]
        return RUNTIME
    if isinstance(node, ast.JoinedStr):
        return "".join(
            str(_evaluate(part.value, env, consts)) if isinstance(part, ast.FormattedValue) else str(part.value)
            for part in node.values
        )
    literal = _literal(node)
    return RUNTIME if literal is _MISSING else literal


def _loop_bindings(target: ast.expr, iterable: ast.expr, consts: dict[str, Any]) -> list[dict[str, Any]]:
    """The values a loop binds to its target: one environment per iteration, or one of run-time values."""
    names = [target] if isinstance(target, ast.Name) else list(getattr(target, "elts", []))
    items: Any = _MISSING
    if isinstance(iterable, (ast.Tuple, ast.List)):
        items = _literal(iterable)
    elif (
        isinstance(iterable, ast.Call)
        and isinstance(iterable.func, ast.Attribute)
        and iterable.func.attr in ("items", "keys")
        and isinstance(iterable.func.value, ast.Name)
    ):
        mapping = consts.get(iterable.func.value.id, ALL_CONSTANTS.get(iterable.func.value.id))
        if isinstance(mapping, dict):
            items = list(mapping.items()) if iterable.func.attr == "items" else list(mapping)
    if items is _MISSING:
        return [{n.id: RUNTIME for n in names if isinstance(n, ast.Name)}]
    envs = []
    for item in items:
        values = [item] if isinstance(target, ast.Name) else list(item)
        envs.append({n.id: v for n, v in zip(names, values, strict=True) if isinstance(n, ast.Name)})
    return envs


def _reads(path: Path) -> Iterator[Read]:
    tree = TREES[path]
    consts = CONSTANTS[path]
    parents = {child: node for node in ast.walk(tree) for child in ast.iter_child_nodes(node)}
    owner = _owner(tree)
    for node in ast.walk(tree):
        if not isinstance(node, ast.Call) or not isinstance(node.func, ast.Attribute):
            continue
        if node.func.attr == "hierarchy_enabled":
            assert owner is not None, path
            yield Read(str(path.relative_to(ROOT)), owner[0], "option", "enableHierarchy", "bool", False)
            continue
        if node.func.attr not in GETTERS or not node.args:
            continue
        assert owner is not None, f"{path}: an argument is read outside an action or plugin module"
        loops: list[list[dict[str, Any]]] = []
        up: ast.AST = node
        while up in parents:
            up = parents[up]
            if isinstance(up, ast.For):
                loops.append(_loop_bindings(up.target, up.iter, consts))
            elif isinstance(up, (ast.ListComp, ast.SetComp, ast.DictComp, ast.GeneratorExp)):
                loops.extend(_loop_bindings(g.target, g.iter, consts) for g in up.generators)
        for combination in itertools.product(*loops):
            env = {name: value for bindings in combination for name, value in bindings.items()}
            name = _evaluate(node.args[0], env, consts)
            default = _evaluate(node.args[1], env, consts) if len(node.args) > 1 else RUNTIME
            assert isinstance(name, str), (path, ast.dump(node.args[0]))
            yield Read(str(path.relative_to(ROOT)), owner[0], owner[1], name, GETTERS[node.func.attr], default)


READS = sorted({read for path in SOURCES for read in _reads(path)}, key=lambda r: (r.owner, r.name))
CONFIGURATION = (DOCS / "configuration.md").read_text(encoding="utf-8")


def section(page: str, title: str) -> str:
    """The text under the heading ``title`` (any level), up to the next heading of the same or a higher level."""
    match = re.search(rf"^(#+) `?{re.escape(title)}`?\s*$", page, re.M)
    assert match is not None, f"no section {title!r}"
    level = len(match.group(1))
    end = re.compile(rf"^#{{1,{level}}} ", re.M).search(page, match.end())
    return page[match.end() : end.start() if end else len(page)]


def table_rows(text: str) -> dict[str, list[str]]:
    """Table rows by the argument named in their first cell: ``{name: [cells after the first]}``."""
    rows: dict[str, list[str]] = {}
    for line in text.splitlines():
        if not line.startswith("|") or line.startswith("|---"):
            continue
        cells = [cell.strip() for cell in line.strip().strip("|").split("|")]
        for name in re.findall(r"`([^`]+)`", cells[0]):
            rows[name] = cells[1:]
    return rows


def same_default(written: str, default: Any) -> bool:
    text = written.strip("`").strip()
    if isinstance(default, bool):
        return text == str(default).lower()
    if isinstance(default, (int, float)):
        try:
            return float(text) == float(default)
        except ValueError:
            return False
    if default == "":
        return text in ('""', "''", "empty")
    return text == str(default)


def test_the_sources_read_arguments() -> None:
    # The parser finds what it should: a few known reads, including resolved loops and constants.
    names = {(r.owner, r.name) for r in READS}
    assert ("allocate", "nodeClassesEnable") in names
    assert ("preempt", "predicateErrorCacheEnable") in names
    assert ("nodeorder", "podtopologyspread.weight") in names
    assert ("predicates", "predicate.VolumeBindingEnable") in names
    assert ("binpack", "binpack.resources.<name>") in names
    assert ("drf", "enableHierarchy") in names
    assert len(READS) >= 40


@pytest.mark.parametrize("read", [r for r in READS if r.kind != "option"], ids=lambda r: f"{r.owner}:{r.name}")
def test_every_argument_is_in_the_configuration_reference(read: Read) -> None:
    part = "Action arguments" if read.kind == "action" else "Plugin arguments"
    rows = table_rows(section(section(CONFIGURATION, part), read.owner))
    assert read.name in rows, f"{read.source} reads {read.name!r}: add it to {part} > {read.owner}"
    cells = rows[read.name]
    assert cells[0] == read.type, f"{read.name}: the code reads a {read.type}, the page says {cells[0]}"
    if read.default != RUNTIME:
        assert same_default(cells[1], read.default), f"{read.name}: default {read.default!r}, the page says {cells[1]}"


@pytest.mark.parametrize("read", READS, ids=lambda r: f"{r.owner}:{r.name}")
def test_every_argument_is_on_its_owners_page(read: Read) -> None:
    if read.kind == "action":
        text = section((DOCS / "actions.md").read_text(encoding="utf-8"), read.owner)
    else:
        text = (DOCS / "plugins" / f"{read.owner}.md").read_text(encoding="utf-8")
    assert f"`{read.name}`" in text, f"{read.name} is not on the {read.owner} page"


def test_plugin_options_are_documented() -> None:
    rows = table_rows(section(CONFIGURATION, "Plugin options"))
    for read in READS:
        if read.kind == "option":
            assert read.name in rows
            assert read.owner in rows[read.name][2], f"{read.owner} reads {read.name}"


def test_every_action_and_plugin_has_a_section() -> None:
    # Owners without arguments say so, so a reader finds every one of them.
    owners = {_owner(tree) for tree in TREES.values()} - {None}
    assert owners
    for name, kind in owners:  # type: ignore[misc]
        part = section(CONFIGURATION, "Action arguments" if kind == "action" else "Plugin arguments")
        assert section(part, name).strip(), name


def test_the_switch_table_matches_the_hooks_each_switch_gates() -> None:
    rows = table_rows(section(CONFIGURATION, "Switches"))
    gated: dict[str, set[str]] = {}
    for hook, switch in HOOK_SWITCHES.items():
        gated.setdefault(switch, set()).add(hook)
    for switch, hooks in gated.items():
        assert switch in rows, switch
        assert set(re.findall(r"`(\w+)`", rows[switch][0])) == hooks, switch
    text = section(CONFIGURATION, "Switches")
    for switch in KNOWN_SWITCHES | OFF_BY_DEFAULT:
        assert f"`{switch}`" in text, f"the switch {switch} is not on the configuration page"
