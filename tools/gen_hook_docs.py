"""Write docs/hooks.md from volcanolib/framework/hookspecs.py (run after changing a hook)."""

from __future__ import annotations

import inspect
import re
from pathlib import Path

from volcanolib.framework import hookspecs

GROUPS = re.compile(r"^# (?P<title>[A-Z][^\n=]+)$", re.M)


def signature(name: str) -> str:
    fn = getattr(hookspecs, name)
    sig = inspect.signature(fn)
    params = ", ".join(sig.parameters)
    ret = sig.return_annotation if sig.return_annotation is not inspect.Signature.empty else "None"
    return f"{name}({params}) -> {ret}"


def render() -> str:
    source = Path(hookspecs.__file__).read_text()
    out = [
        "# Hook reference",
        "",
        "Every hook a plugin may implement, generated from `volcanolib/framework/hookspecs.py`",
        "(`python tools/gen_hook_docs.py`); a test checks that this page and the specifications agree.",
        "",
        (inspect.getdoc(hookspecs) or "").split("\n\n", 1)[1],
        "",
    ]
    positions = {name: source.index(f"\ndef {name}(") for name in hookspecs.HOOK_NAMES}
    groups = [(m.start(), m["title"].strip()) for m in GROUPS.finditer(source)]
    current = None
    for name in sorted(hookspecs.HOOK_NAMES, key=positions.__getitem__):
        group = [title for start, title in groups if start < positions[name]][-1]
        if group != current:
            out += [f"## {group}", ""]
            current = group
        out += [
            f"### `{name}`",
            "",
            "```python",
            signature(name),
            "```",
            "",
            inspect.getdoc(getattr(hookspecs, name)) or "",
            "",
        ]
    return "\n".join(out).rstrip() + "\n"


if __name__ == "__main__":
    Path(__file__).resolve().parent.parent.joinpath("docs", "hooks.md").write_text(render())
