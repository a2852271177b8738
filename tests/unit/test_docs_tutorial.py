"""The plugin tutorial's code can be pasted: every block compiles, every name it uses is imported or shown.

The ``python`` blocks of docs/tutorials/custom-plugin.md are excerpts of the
example package (tests/examples checks that they are verbatim); read in page
order they must show every import, so a reader never has to guess where a
name (``ConfigError``, ``ClassVar``, ``hookimpl``) comes from. ``py`` blocks
are self-contained sketches and must stand alone.
"""

from __future__ import annotations

import ast
import builtins
import importlib
import re
import textwrap
from pathlib import Path

import pytest

PAGE = Path(__file__).resolve().parents[2] / "docs" / "tutorials" / "custom-plugin.md"


def blocks(info: str) -> list[str]:
    return [
        textwrap.dedent(block)
        for block in re.findall(rf"^```{info}\n(.*?)^```", PAGE.read_text(encoding="utf-8"), re.S | re.M)
    ]


def bound_names(tree: ast.AST) -> set[str]:
    """Names a block defines: assignments, definitions, parameters, imports."""
    names: set[str] = set()
    for node in ast.walk(tree):
        if isinstance(node, ast.Name) and isinstance(node.ctx, (ast.Store, ast.Del)):
            names.add(node.id)
        elif isinstance(node, (ast.FunctionDef, ast.AsyncFunctionDef, ast.ClassDef)):
            names.add(node.name)
        elif isinstance(node, ast.arg):
            names.add(node.arg)
        elif isinstance(node, (ast.Import, ast.ImportFrom)):
            names.update((alias.asname or alias.name).split(".")[0] for alias in node.names)
        elif isinstance(node, ast.ExceptHandler) and node.name:
            names.add(node.name)
    return names


def used_names(tree: ast.AST) -> set[str]:
    return {node.id for node in ast.walk(tree) if isinstance(node, ast.Name) and isinstance(node.ctx, ast.Load)}


def imports(tree: ast.AST) -> list[tuple[str, str | None]]:
    """``(module, name)`` for every import of a block (``name`` is ``None`` for ``import module``)."""
    found: list[tuple[str, str | None]] = []
    for node in ast.walk(tree):
        if isinstance(node, ast.Import):
            found += [(alias.name, None) for alias in node.names]
        elif isinstance(node, ast.ImportFrom) and node.module != "__future__":
            assert node.level == 0 and node.module
            found += [(node.module, alias.name) for alias in node.names]
    return found


def parse(block: str) -> ast.Module:
    return ast.parse(block, filename=str(PAGE))


def test_the_page_has_code_and_shows_its_imports() -> None:
    assert len(blocks("python")) >= 10
    shown = {module for block in blocks("python") for module, _ in imports(parse(block))}
    assert {"volcanolib", "volcanolib.testing", "teamfence"} <= shown


@pytest.mark.parametrize("block", blocks("python") + blocks("py"), ids=lambda b: b.strip().splitlines()[0][:50])
def test_every_block_compiles_and_its_imports_resolve(block: str) -> None:
    tree = parse(block)
    compile(tree, str(PAGE), "exec")
    for module, name in imports(tree):
        imported = importlib.import_module(module)
        if name is not None:
            assert hasattr(imported, name), f"{module} has no {name}"


def test_every_name_the_excerpts_use_is_shown() -> None:
    trees = [parse(block) for block in blocks("python")]
    shown = set().union(*(bound_names(tree) for tree in trees)) | set(dir(builtins))
    missing = sorted(set().union(*(used_names(tree) for tree in trees)) - shown)
    assert not missing, f"names used but never imported or defined on the page: {missing}"


@pytest.mark.parametrize("block", blocks("py"), ids=lambda b: b.strip().splitlines()[0][:50])
def test_every_sketch_stands_alone(block: str) -> None:
    tree = parse(block)
    missing = sorted(used_names(tree) - bound_names(tree) - set(dir(builtins)))
    assert not missing, f"names used but not imported in the sketch: {missing}"


def test_the_page_documents_owner_and_node_labels() -> None:
    text = PAGE.read_text(encoding="utf-8")
    assert "arguments.owner" in text
    assert "node.node.labels" in text
    assert "volcanolib.ConfigError" in text
