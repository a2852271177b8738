"""Write the argument tables of docs/configuration.md from the declarations (run after changing an argument).

Every action and every plugin of volcanolib and volcanolib-contrib
declares its arguments (``volcanolib.framework.arguments``); this script
rewrites the text between the ``BEGIN generated`` and ``END generated``
markers of the page with one section per action or plugin. A test checks
that the page is the generated one.
"""

from __future__ import annotations

import re
from pathlib import Path
from typing import Any

from volcanolib.framework.arguments import argument_table, declared_arguments
from volcanolib.framework.registry import (
    BUILTIN_ACTIONS,
    BUILTIN_PLUGINS,
    CONTRIB_ACTIONS,
    CONTRIB_DISTRIBUTION,
    CONTRIB_PLUGINS,
    Registry,
)

PAGE = Path(__file__).resolve().parent.parent / "docs" / "configuration.md"
REGION = re.compile(r"(<!-- BEGIN generated (?P<part>[a-z ]+?) -->\n).*?(<!-- END generated (?P=part) -->)", re.S)


def _declaration(owner: type[Any], what: str) -> type[Any]:
    declaration = declared_arguments(owner)
    if declaration is None:
        raise SystemExit(f"{what} {owner.__qualname__} declares no arguments")
    return declaration


def action_sections(registry: Registry) -> str:
    """One section per action of both distributions: its heading, where it comes from when contrib, its table."""
    out = []
    for name in sorted(BUILTIN_ACTIONS):
        table = argument_table(_declaration(registry.action_class(name), "action"))
        out.append(f"### {name}\n\n{table}")
    for name in sorted(CONTRIB_ACTIONS):
        table = argument_table(_declaration(registry.action_class(name), "action"))
        out.append(f"### {name}\n\nShipped by `{CONTRIB_DISTRIBUTION}`. ([{name}](actions.md#{name}))\n\n{table}")
    return "\n".join(out)


def plugin_sections(registry: Registry) -> str:
    """One section per plugin of both distributions: its heading, where it comes from, its page and its table."""
    out = []
    for name in [*sorted(BUILTIN_PLUGINS), *sorted(CONTRIB_PLUGINS)]:
        table = argument_table(_declaration(registry.plugin_class(name), "plugin"))
        shipped = f"Shipped by `{CONTRIB_DISTRIBUTION}`. " if name in CONTRIB_PLUGINS else ""
        out.append(f"### {name}\n\n{shipped}([{name}](plugins/{name}.md))\n\n{table}")
    return "\n".join(out)


def render(page: str) -> str:
    """The page with its generated regions (``action arguments``, ``plugin arguments``) rewritten."""
    registry = Registry()
    parts = {"action arguments": action_sections(registry), "plugin arguments": plugin_sections(registry)}
    found: set[str] = set()

    def replace(match: re.Match[str]) -> str:
        part = match["part"]
        found.add(part)
        return f"{match.group(1)}\n{parts[part]}\n{match.group(3)}"

    text = REGION.sub(replace, page)
    missing = set(parts) - found
    if missing:
        raise SystemExit(f"{PAGE.name}: no generated region for {', '.join(sorted(missing))}")
    return text


if __name__ == "__main__":
    PAGE.write_text(render(PAGE.read_text(encoding="utf-8")), encoding="utf-8")
