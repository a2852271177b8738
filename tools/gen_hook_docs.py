"""Write docs/hooks.md, the switch table of docs/configuration.md and the session's typed hook answers.

Run after changing a hook: ``python tools/gen_hook_docs.py``. The session's
answers (``volcanolib/framework/_answers.py``) are the attribute and type each
hook declares (``answer=``), with its rule. Each hook gets
its signature, its rule and switch, and its docstring rendered by mkdocstrings. Everything
comes from :data:`volcanolib.framework.hookspecs.SPECS` (each hook's phase,
rule, switch and faster form, as its marker declares them), the hooks'
docstrings and the rule functions of :mod:`volcanolib.framework.combine`;
tests keep both pages equal to what this script writes.
"""

from __future__ import annotations

import inspect
import re
from pathlib import Path

from volcanolib.framework import hookspecs
from volcanolib.framework.combine import Rule
from volcanolib.framework.hookspecs import SPECS, Phase

ROOT = Path(__file__).resolve().parent.parent
#: The line that starts the switch table in docs/configuration.md.
SWITCH_TABLE_HEAD = "| switch | hooks it gates |"


def signature(name: str) -> str:
    """A hook's call signature as a plugin sees it: ``predicate(ssn, task, node) -> Status``."""
    sig = inspect.signature(getattr(hookspecs, name))
    params = ", ".join(sig.parameters)
    ret = sig.return_annotation if sig.return_annotation is not inspect.Signature.empty else "None"
    return f"{name}({params}) -> {ret}"


def _first_paragraph(text: str) -> str:
    return " ".join(text.split("\n\n", 1)[0].split())


def _hooks(names: list[str]) -> str:
    return ", ".join(f"`{name}`" for name in names)


def rule_table() -> list[str]:
    """One row per rule: its name, what it does (its function's summary), the hooks that use it."""
    out = ["| rule | how the answers combine | hooks |", "|---|---|---|"]
    for rule in Rule:
        users = [spec.name for spec in SPECS.values() if spec.rule is rule]
        if users:
            text = _first_paragraph(inspect.getdoc(rule.function) or "")
            out.append(f"| `{rule.value}` | {text} | {_hooks(users)} |")
    return out


def switch_table() -> str:
    """The switch table of docs/configuration.md: each switch and the hooks it gates, in hook order."""
    gated: dict[str, list[str]] = {}
    for spec in SPECS.values():
        if spec.switch:
            gated.setdefault(spec.switch, []).append(spec.name)
    rows = [SWITCH_TABLE_HEAD, "|---|---|"]
    rows += [f"| `{switch}` | {_hooks(hooks)} |" for switch, hooks in gated.items()]
    return "\n".join(rows) + "\n"


def plain(text: str) -> str:
    """reST inline markup as Markdown: ``:role:`~a.b.C``` and ````x```` become `` `C` `` and `` `x` ``."""
    text = re.sub(r":[a-z]+:`~?([\w.]+)`", lambda m: f"`{m.group(1).rsplit('.', 1)[-1]}`", text)
    return text.replace("``", "`")


def render() -> str:
    """The text of docs/hooks.md."""
    out = [
        "# Hook reference",
        "",
        "Every hook a plugin may implement, generated from the hook declarations in",
        "`volcanolib/framework/hookspecs.py` (`python tools/gen_hook_docs.py`); a test checks",
        "that this page and the declarations agree.",
        "",
        plain((inspect.getdoc(hookspecs) or "").split("\n\n", 1)[1]),
        "",
        "## Rules",
        "",
        *rule_table(),
        "",
    ]
    for phase in Phase:
        out += [f"## {phase.value}", ""]
        for spec in SPECS.values():
            if spec.phase is not phase:
                continue
            out += [
                f"### `{spec.name}`",
                "",
                "```python",
                signature(spec.name),
                "```",
                "",
                plain(spec.summary()),
                "",
                f"::: volcanolib.framework.hookspecs.{spec.name}",
                "    options:",
                "      show_root_heading: false",
                "      show_root_toc_entry: false",
                "      show_signature: false",
                "      heading_level: 4",
                "",
            ]
    return "\n".join(out).rstrip() + "\n"


def configuration_page(text: str) -> str:
    """docs/configuration.md with its switch table replaced by :func:`switch_table`."""
    start = text.index(SWITCH_TABLE_HEAD)
    end = text.index("\n\n", start) + 1
    return text[:start] + switch_table() + text[end:]


#: Where the session's typed hook answers are written.
ANSWERS = ROOT / "volcanolib" / "framework" / "_answers.py"


def answers_module() -> str:
    """The text of ``volcanolib/framework/_answers.py``: one typed attribute per hook that declares an answer."""
    out = [
        '"""The session\'s combined hook answers, with their types: generated from the hook declarations.',
        "",
        "Do not edit: run ``python tools/gen_hook_docs.py`` after changing a hook (a test",
        "checks that this module and the declarations agree).",
        '"""',
        "",
        "from __future__ import annotations",
        "",
        "from collections.abc import Callable, Mapping, Sequence",
        "from typing import TYPE_CHECKING, Any",
        "",
        "if TYPE_CHECKING:",
        "    from volcanolib.api.hypernode import HyperNodeInfo",
        "    from volcanolib.api.job import JobInfo",
        "    from volcanolib.api.node import NodeInfo",
        "    from volcanolib.api.queue import QueueInfo",
        "    from volcanolib.api.task import TaskInfo",
        "    from volcanolib.framework.status import Event, Status",
        "    from volcanolib.framework.victims import EvictionContext",
        "",
        '__all__ = ["HookAnswers"]',
        "",
        "",
        "class HookAnswers:",
        '    """The combined answer of every hook, as the session\'s attributes (see :class:`Session`)."""',
        "",
    ]
    for spec in SPECS.values():
        if spec.attribute is None or spec.answer is None:
            continue
        doc = f"``{spec.name}``, rule ``{spec.rule.value}``"
        if spec.form_of is not None:
            doc = f"The key form of ``{spec.form_of}``, rule ``{spec.rule.value}``"
        if spec.tie_break is not None:
            doc += f", then {spec.tie_break}"
        out += [f"    #: {doc}.", f"    {spec.attribute}: {spec.answer}"]
    return "\n".join(out) + "\n"


if __name__ == "__main__":
    ANSWERS.write_text(answers_module())
    (ROOT / "docs" / "hooks.md").write_text(render())
    configuration = ROOT / "docs" / "configuration.md"
    configuration.write_text(configuration_page(configuration.read_text()))
