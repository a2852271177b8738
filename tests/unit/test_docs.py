"""The hook reference page, the switch table and the session's typed answers stay in step with the declarations."""

from __future__ import annotations

import importlib.util
import inspect
import re
from pathlib import Path
from types import ModuleType

from volcanolib.framework import hookspecs

ROOT = Path(__file__).resolve().parents[2]
DOCS = ROOT / "docs"


def _generator() -> ModuleType:
    spec = importlib.util.spec_from_file_location("gen_hook_docs", ROOT / "tools" / "gen_hook_docs.py")
    assert spec is not None and spec.loader is not None
    generator = importlib.util.module_from_spec(spec)
    spec.loader.exec_module(generator)
    return generator


def test_hook_page_is_the_generated_one() -> None:
    assert (DOCS / "hooks.md").read_text() == _generator().render(), (
        "docs/hooks.md is stale: run python tools/gen_hook_docs.py"
    )


def test_session_hook_answers_are_the_generated_ones() -> None:
    generator = _generator()
    assert generator.ANSWERS.read_text() == generator.answers_module(), (
        "volcanolib/framework/_answers.py is stale: run python tools/gen_hook_docs.py"
    )


def test_every_declared_answer_is_a_session_attribute_after_compiling() -> None:
    from volcanolib.testing import FakeCache, open_session

    ssn = open_session(FakeCache(), "actions: ''\ntiers:\n- plugins:\n  - name: gang\n")
    try:
        for spec in hookspecs.SPECS.values():
            if spec.attribute is not None:
                assert callable(getattr(ssn, spec.attribute)), spec.name
    finally:
        ssn.close()


def test_switch_table_is_the_generated_one() -> None:
    text = (DOCS / "configuration.md").read_text()
    assert _generator().switch_table() in text, "docs/configuration.md is stale: run python tools/gen_hook_docs.py"


def test_every_hook_is_documented_with_its_signature_rule_and_switch() -> None:
    page = (DOCS / "hooks.md").read_text()
    sections = dict(re.findall(r"^### `(\w+)`\n\n```python\n(\w+\(.*\)) -> ", page, re.M))
    assert set(sections) == set(hookspecs.HOOK_NAMES)
    for name, spec in hookspecs.SPECS.items():
        params = ", ".join(inspect.signature(getattr(hookspecs, name)).parameters)
        assert sections[name] == f"{name}({params})", name
        section = page.split(f"### `{name}`\n", 1)[1].split("\n### ", 1)[0]
        assert _generator().plain(spec.summary()) in section, name
        assert f"::: volcanolib.framework.hookspecs.{name}\n" in section, name
        assert f"| `{spec.rule.value}` |" in page
