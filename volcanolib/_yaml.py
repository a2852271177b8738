"""What a YAML syntax error says to a person: one line, where and what, a tab named as a tab.

PyYAML's messages are written for its own authors ("found character that
cannot start any token"); every reader of YAML in volcanolib (manifests,
configurations, sweep files) reports its errors through :func:`yaml_error`.
"""

from __future__ import annotations

from typing import Any

__all__ = ["yaml_error"]


def _char_at(text: str, line: int, column: int) -> str:
    """The character at a 0-based line and column of ``text`` (``""`` when there is none)."""
    lines = text.split("\n")
    if not 0 <= line < len(lines):
        return ""
    return lines[line][column : column + 1]


def yaml_error(exc: Exception, text: str) -> str:
    """``not valid YAML at line L column C: PROBLEM`` for a PyYAML error raised reading ``text``.

    A tab where YAML expects indentation or a token, which PyYAML reports
    without naming it, is said as such: ``not valid YAML: a tab character at
    line 4, column 1: YAML indents with spaces``. Lines and columns count
    from 1.

    >>> import yaml
    >>> text = "metadata:\\n\\tname: n1\\n"
    >>> try:
    ...     yaml.safe_load(text)
    ... except yaml.YAMLError as exc:
    ...     print(yaml_error(exc, text))
    not valid YAML: a tab character at line 2, column 1: YAML indents with spaces
    """
    mark: Any = getattr(exc, "problem_mark", None)
    problem = getattr(exc, "problem", None) or str(exc).splitlines()[0]
    if mark is None:
        return f"not valid YAML: {problem}"
    line, column = mark.line, mark.column
    if _char_at(text, line, column) == "\t" or "tab" in problem.split():
        return f"not valid YAML: a tab character at line {line + 1}, column {column + 1}: YAML indents with spaces"
    return f"not valid YAML at line {line + 1} column {column + 1}: {problem}"
