"""The example on docs/job-controller.md runs and prints what its comments say."""

from __future__ import annotations

import re
from pathlib import Path

import pytest

PAGE = Path(__file__).resolve().parents[3] / "docs" / "job-controller.md"


def test_the_page_example_prints_what_its_comments_say(capsys: pytest.CaptureFixture[str]) -> None:
    (block,) = re.findall(r"^```python\n(.*?)^```", PAGE.read_text(encoding="utf-8"), re.S | re.M)
    exec(compile(block, str(PAGE), "exec"), {"__name__": "job_controller_page"})
    printed = capsys.readouterr().out.splitlines()
    promised = [m.group(1) for m in re.finditer(r"^print\(.*\)  # (.*)$", block, re.M)]
    assert printed == promised
