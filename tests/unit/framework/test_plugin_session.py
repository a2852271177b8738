"""The narrow view a plugin has of its session: a session offers it, and every shipped plugin keeps to it."""

from __future__ import annotations

import ast
from pathlib import Path

import pytest

from volcanolib import PluginSession
from volcanolib.framework.plugin_session import MEMBERS
from volcanolib.testing import FakeCache, open_session

ROOT = Path(__file__).resolve().parents[3]
PLUGINS = sorted(
    [
        *(ROOT / "volcanolib" / "plugins").glob("*.py"),
        *(ROOT / "plugins_contrib" / "volcanolib_contrib").glob("*.py"),
        ROOT / "examples" / "custom-plugin" / "teamfence.py",
    ]
)


def test_a_session_is_a_plugin_session() -> None:
    ssn = open_session(FakeCache(), "actions: ''\ntiers:\n- plugins:\n  - name: gang\n")
    try:
        assert isinstance(ssn, PluginSession)
    finally:
        ssn.close()


def _session_reads(path: Path) -> set[str]:
    """Every ``ssn.<name>`` a module reads."""
    tree = ast.parse(path.read_text(encoding="utf-8"))
    return {
        node.attr
        for node in ast.walk(tree)
        if isinstance(node, ast.Attribute) and isinstance(node.value, ast.Name) and node.value.id == "ssn"
    }


@pytest.mark.parametrize("path", PLUGINS, ids=lambda p: p.name)
def test_shipped_plugins_read_only_what_a_plugin_session_offers(path: Path) -> None:
    outside = _session_reads(path) - set(MEMBERS)
    if path.name in ("gangevict.py", "shuffle.py"):  # actions: they drive the whole session
        return
    assert not outside, f"{path.name} reads {sorted(outside)} of the session, outside PluginSession"
