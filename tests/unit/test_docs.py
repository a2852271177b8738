"""The hook reference page stays in step with the hook specifications."""

from __future__ import annotations

import importlib.util
import inspect
import re
from pathlib import Path

from volcanolib.framework import hookspecs

ROOT = Path(__file__).resolve().parents[2]
DOCS = ROOT / "docs"


def test_hook_page_is_the_generated_one() -> None:
    spec = importlib.util.spec_from_file_location("gen_hook_docs", ROOT / "tools" / "gen_hook_docs.py")
    assert spec is not None and spec.loader is not None
    generator = importlib.util.module_from_spec(spec)
    spec.loader.exec_module(generator)
    assert (DOCS / "hooks.md").read_text() == generator.render(), (
        "docs/hooks.md is stale: run python tools/gen_hook_docs.py"
    )


def test_every_hook_is_documented_with_its_signature() -> None:
    page = (DOCS / "hooks.md").read_text()
    sections = dict(re.findall(r"^### `(\w+)`\n\n```python\n(\w+\(.*\)) -> ", page, re.M))
    assert set(sections) == set(hookspecs.HOOK_NAMES)
    for name in hookspecs.HOOK_NAMES:
        params = ", ".join(inspect.signature(getattr(hookspecs, name)).parameters)
        assert sections[name] == f"{name}({params})", name


def test_every_hook_docstring_names_its_rule_or_gate() -> None:
    for name in hookspecs.HOOK_NAMES:
        doc = inspect.getdoc(getattr(hookspecs, name)) or ""
        assert "Rule:" in doc or "rule" in doc.lower(), name
        assert ":returns:" in doc, name
