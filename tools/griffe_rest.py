"""A griffe extension that renders volcanolib's reStructuredText docstrings for the API reference.

mkdocstrings' ``sphinx`` docstring style parses the field lists (``:param x:``,
``:returns:``, ``:raises X:``) but leaves the rest of the text to Markdown,
which would show reST markup raw. Once the package is loaded, this extension
rewrites every docstring's text:

* cross-reference roles (``:class:`~volcanolib.scheduler.Scheduler```,
  ``:meth:`bind```, ``:data:``, ``:attr:``, ``:func:``, ``:mod:``, ``:exc:``)
  become links to the documented object, resolved in the docstring's scope
  (optional links: a target not in the reference is shown as code);
* doctest lines (``>>> ...`` and their output) become ``pycon`` code blocks;
* simple tables (``====  ====`` borders) become preformatted blocks;
* a paragraph ending in ``::`` ends in ``:`` (its indented block is already
  code in Markdown);
* definition-list terms written as literals (a line of ````name````
  followed by an indented description) become list items;

and gives attributes documented by a ``#:`` comment above them that comment
as their docstring, as Sphinx's autodoc does.

mkdocs.yml loads it with ``extensions: [tools/griffe_rest.py]``.
"""

from __future__ import annotations

import html
import re
from typing import Any

import griffe

ROLE = re.compile(r":(?:py:)?(class|meth|func|data|attr|mod|obj|exc|const):`(~?)([^`]+?)`")
TABLE_BORDER = re.compile(r"^\s*=+(?:\s+=+)+\s*$")
LITERAL_TERM = re.compile(r"^``[^`]+``(?:\s*/\s*``[^`]+``)*$")


class RestDocstrings(griffe.Extension):
    """Rewrite reST docstrings into the Markdown mkdocstrings renders."""

    def on_package(self, *, pkg: griffe.Module, **kwargs: Any) -> None:
        """Rewrite the docstrings of a fully loaded package (griffe 2)."""
        self._rewrite(pkg, set())

    def on_package_loaded(self, *, pkg: griffe.Module, **kwargs: Any) -> None:
        """Rewrite the docstrings of a fully loaded package (griffe 1)."""
        self._rewrite(pkg, set())

    def _rewrite(self, obj: griffe.Object, seen: set[str]) -> None:
        if obj.path in seen:
            return
        seen.add(obj.path)
        if obj.is_attribute and obj.docstring is None:
            comment = _comment_above(obj)
            if comment:
                obj.docstring = griffe.Docstring(comment, parent=obj)
        if obj.docstring is not None:
            obj.docstring.value = render(obj.docstring.value, obj)
        for member in obj.members.values():
            if not member.is_alias:
                self._rewrite(member, seen)  # type: ignore[arg-type]


def _comment_above(obj: griffe.Object) -> str:
    """The ``#:`` comment lines right above an attribute's definition."""
    if obj.lineno is None or obj.filepath is None or isinstance(obj.filepath, list):
        return ""
    try:
        lines = obj.lines_collection[obj.filepath]
    except KeyError:
        return ""
    found: list[str] = []
    index = obj.lineno - 2
    while index >= 0 and lines[index].strip().startswith("#:"):
        found.append(lines[index].strip()[2:].strip())
        index -= 1
    return " ".join(reversed(found))


def _target(name: str, scope: griffe.Object) -> str:
    """The full path of ``name`` as written in ``scope``'s docstring, or ``name`` itself."""
    head, _, rest = name.partition(".")
    obj: griffe.Object | None = scope
    while obj is not None:
        try:
            path = obj.resolve(head)
        except (griffe.NameResolutionError, AttributeError, KeyError):
            obj = obj.parent
            continue
        full = f"{path}.{rest}" if rest else path
        try:
            found = scope.modules_collection[full]
        except (KeyError, griffe.AliasResolutionError, ValueError):
            return full
        try:
            return str(found.canonical_path)
        except griffe.AliasResolutionError:
            return full
    return name


def _role(match: re.Match[str], scope: griffe.Object) -> str:
    kind, short, name = match.groups()
    name = " ".join(name.split())
    titled = re.fullmatch(r"(.+?)\s*<(.+)>", name)
    if titled:
        label, name = titled.groups()
    else:
        label = name.rsplit(".", 1)[-1] if short else name
        if kind in {"meth", "func"}:
            label += "()"
    target = html.escape(_target(name, scope), quote=True)
    return f'<autoref identifier="{target}" optional><code>{html.escape(label)}</code></autoref>'


def render(text: str, scope: griffe.Object) -> str:
    """The Markdown form of a reST docstring of ``scope``."""
    out: list[str] = []
    # A role may wrap onto the next line; join it so that the line-by-line pass sees it whole.
    text = ROLE.sub(lambda m: m.group(0).replace("\n", " ") if "\n" in m.group(0) else m.group(0), text)
    lines = text.splitlines()
    i = 0
    while i < len(lines):
        line = lines[i]
        stripped = line.strip()
        if stripped.startswith(">>>"):
            block = []
            while i < len(lines) and lines[i].strip():
                block.append(lines[i])
                i += 1
            out += ["```pycon", *block, "```"]
            continue
        if TABLE_BORDER.match(line):
            block = []
            borders = 0
            while i < len(lines) and borders < 3:
                if TABLE_BORDER.match(lines[i]):
                    borders += 1
                block.append(lines[i])
                i += 1
            out += ["```text", *block, "```"]
            continue
        if LITERAL_TERM.match(stripped) and i + 1 < len(lines) and lines[i + 1].startswith((" ", "\t")):
            description = []
            i += 1
            while i < len(lines) and lines[i].startswith((" ", "\t")) and lines[i].strip():
                description.append(lines[i].strip())
                i += 1
            out.append(f"- {stripped}: {ROLE.sub(lambda m: _role(m, scope), ' '.join(description))}")
            continue
        if line.endswith("::") and not line.endswith(" ::"):
            line = line[:-1]
        out.append(ROLE.sub(lambda m: _role(m, scope), line))
        i += 1
    return "\n".join(out)
