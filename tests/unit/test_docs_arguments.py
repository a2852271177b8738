"""The configuration reference is generated from the argument declarations, and every argument is refused by name.

``docs/configuration.md`` carries one table per action and plugin between
``generated`` markers, written by ``tools/gen_argument_docs.py`` from the
declarations (``volcanolib.framework.arguments``). Every built-in action and
every plugin of both distributions declares its arguments; a value of the
wrong type for any of them refuses the configuration with the owner and the
key named.
"""

from __future__ import annotations

import importlib.util
import re
from pathlib import Path
from types import ModuleType
from typing import Any

import attrs
import pytest

from volcanolib import ConfigError, Scheduler
from volcanolib.framework.arguments import (
    NAME_PLACEHOLDER,
    ArgumentSpec,
    argument_specs,
    declared_arguments,
    parse_arguments,
)
from volcanolib.framework.config import HOOK_SWITCHES, KNOWN_SWITCHES, OFF_BY_DEFAULT
from volcanolib.framework.registry import BUILTIN_ACTIONS, BUILTIN_PLUGINS, CONTRIB_PLUGINS, Registry
from volcanolib.testing import FakeCache

ROOT = Path(__file__).resolve().parents[2]
DOCS = ROOT / "docs"
CONFIGURATION = DOCS / "configuration.md"


def generator() -> ModuleType:
    spec = importlib.util.spec_from_file_location("gen_argument_docs", ROOT / "tools" / "gen_argument_docs.py")
    assert spec is not None and spec.loader is not None
    module = importlib.util.module_from_spec(spec)
    spec.loader.exec_module(module)
    return module


REGISTRY = Registry()
ACTIONS = {name: REGISTRY.action_class(name) for name in sorted(BUILTIN_ACTIONS)}
PLUGINS = {name: REGISTRY.plugin_class(name) for name in sorted(BUILTIN_PLUGINS) + sorted(CONTRIB_PLUGINS)}


@attrs.frozen
class Owned:
    """One declared argument and who declares it."""

    kind: str  # "action" or "plugin"
    owner: str
    declaration: type[Any]
    spec: ArgumentSpec


def _declared(kind: str, classes: dict[str, type[Any]]) -> list[Owned]:
    out = []
    for name, cls in classes.items():
        declaration = declared_arguments(cls)
        assert declaration is not None, f"{kind} {name} declares no arguments"
        out.extend(Owned(kind, name, declaration, spec) for spec in argument_specs(declaration))
    return out


DECLARED = _declared("action", ACTIONS) + _declared("plugin", PLUGINS)


def section(page: str, title: str) -> str:
    """The text under the heading ``title`` (any level), up to the next heading of the same or a higher level."""
    match = re.search(rf"^(#+) `?{re.escape(title)}`?\s*$", page, re.M)
    assert match is not None, f"no section {title!r}"
    level = len(match.group(1))
    end = re.compile(rf"^#{{1,{level}}} ", re.M).search(page, match.end())
    return page[match.end() : end.start() if end else len(page)]


def table_rows(text: str) -> dict[str, list[str]]:
    """Table rows by the name in their first cell: ``{name: [cells after the first]}``."""
    rows: dict[str, list[str]] = {}
    for line in text.splitlines():
        if not line.startswith("|") or line.startswith("|---"):
            continue
        cells = [cell.strip() for cell in line.strip().strip("|").split("|")]
        for name in re.findall(r"`([^`]+)`", cells[0]):
            rows[name] = cells[1:]
    return rows


# ---------------------------------------------------------------------- the generated reference


def test_the_configuration_page_is_the_generated_one() -> None:
    page = CONFIGURATION.read_text(encoding="utf-8")
    assert page == generator().render(page), "docs/configuration.md is stale: run python tools/gen_argument_docs.py"


def test_every_action_and_plugin_declares_its_arguments() -> None:
    # The built-ins, contrib included: some declare none (NoArguments), none reads a raw mapping.
    assert {o.owner for o in DECLARED} >= {"allocate", "backfill", "preempt", "reclaim", "binpack", "nodeorder"}
    assert len(DECLARED) >= 40


@pytest.mark.parametrize("owned", DECLARED, ids=lambda o: f"{o.owner}:{o.spec.key}")
def test_every_argument_has_a_row_with_its_type_and_default(owned: Owned) -> None:
    page = CONFIGURATION.read_text(encoding="utf-8")
    part = section(page, "Action arguments" if owned.kind == "action" else "Plugin arguments")
    rows = table_rows(section(part, owned.owner))
    assert owned.spec.key in rows
    assert rows[owned.spec.key][0] == owned.spec.type_name


@pytest.mark.parametrize("owned", DECLARED, ids=lambda o: f"{o.owner}:{o.spec.key}")
def test_every_argument_is_on_its_owners_page(owned: Owned) -> None:
    if owned.kind == "action":
        text = section((DOCS / "actions.md").read_text(encoding="utf-8"), owned.owner)
    else:
        text = (DOCS / "plugins" / f"{owned.owner}.md").read_text(encoding="utf-8")
    assert f"`{owned.spec.key}`" in text, f"{owned.spec.key} is not on the {owned.owner} page"


# ---------------------------------------------------------------------- every argument is checked at install

BAD_VALUES = {"bool": "maybe", "int": "ten", "float": "lots", "string": 3}
MESSAGES = {
    "bool": "expected a boolean, got 'maybe'",
    "int": "expected an integer, got 'ten'",
    "float": "expected a number, got 'lots'",
    "string": "expected a string, got 3",
}


def _bad_arguments(owned: Owned) -> tuple[str, str]:
    """YAML flow-mapping arguments with one bad value for the argument, and the key the error names."""
    spec = owned.spec
    if spec.names is None:
        return f"{{{spec.key}: {BAD_VALUES[spec.type_name]!r}}}", spec.key
    # A key family is read for the names listed in another argument.
    names = next(s for s in argument_specs(owned.declaration) if s.field == spec.names)
    key = spec.key.replace(NAME_PLACEHOLDER, "example.com/gpu")
    return f"{{{names.key}: 'example.com/gpu', {key}: {BAD_VALUES[spec.type_name]!r}}}", key


@pytest.mark.parametrize("owned", DECLARED, ids=lambda o: f"{o.owner}:{o.spec.key}")
def test_a_bad_value_is_refused_at_install_naming_the_owner_and_the_argument(owned: Owned) -> None:
    arguments, key = _bad_arguments(owned)
    if owned.kind == "plugin":
        conf = f"actions: ''\ntiers:\n- plugins:\n  - name: {owned.owner}\n    arguments: {arguments}\n"
    else:
        conf = f"actions: {owned.owner}\ntiers: []\nconfigurations:\n- name: {owned.owner}\n  arguments: {arguments}\n"
    with pytest.raises(ConfigError) as info:
        Scheduler(FakeCache(), conf)
    assert info.value.key == f"{owned.kind} {owned.owner!r} arguments.{key}"
    assert info.value.message == MESSAGES[owned.spec.type_name]


@pytest.mark.parametrize("owned", DECLARED, ids=lambda o: f"{o.owner}:{o.spec.key}")
def test_an_absent_or_null_value_gives_the_default(owned: Owned) -> None:
    spec = owned.spec
    if spec.names is None:
        raw: dict[str, object] = {spec.key: None}
        expected: object = spec.default
    else:
        names = next(s for s in argument_specs(owned.declaration) if s.field == spec.names)
        raw = {names.key: "a, b"}
        expected = {"a": spec.default, "b": spec.default}
    parsed = parse_arguments(owned.declaration, raw, owner=f"{owned.kind} {owned.owner!r}")
    assert getattr(parsed, spec.field) == expected


# ---------------------------------------------------------------------- switches


def test_the_switch_table_matches_the_hooks_each_switch_gates() -> None:
    page = CONFIGURATION.read_text(encoding="utf-8")
    rows = table_rows(section(page, "Switches"))
    gated: dict[str, set[str]] = {}
    for hook, switch in HOOK_SWITCHES.items():
        gated.setdefault(switch, set()).add(hook)
    for switch, hooks in gated.items():
        assert switch in rows, switch
        assert set(re.findall(r"`(\w+)`", rows[switch][0])) == hooks, switch
    text = section(page, "Switches")
    for switch in KNOWN_SWITCHES | OFF_BY_DEFAULT:
        assert f"`{switch}`" in text, f"the switch {switch} is not on the configuration page"
