"""The code on docs/performance.md runs: its plugin keeps the node-class promise, its tests pass.

The page's ``python`` blocks are one module, in page order: the example
plugin, then the tests a plugin author would write. They are executed here
and each ``test_*`` function they define is called.
"""

from __future__ import annotations

import re
import sys
import types
from collections.abc import Callable
from pathlib import Path

import pytest

PAGE = Path(__file__).resolve().parents[2] / "docs" / "performance.md"


def page_module() -> types.ModuleType:
    blocks = re.findall(r"^```python\n(.*?)^```", PAGE.read_text(encoding="utf-8"), re.S | re.M)
    assert len(blocks) >= 2
    module = types.ModuleType("performance_page")
    module.__file__ = str(PAGE)
    sys.modules[module.__name__] = module  # for dataclasses, pickling and tracebacks
    try:
        exec(compile("\n".join(blocks), str(PAGE), "exec"), module.__dict__)
    finally:
        del sys.modules[module.__name__]
    return module


MODULE = page_module()
TESTS: dict[str, Callable[[], None]] = {
    name: value for name, value in vars(MODULE).items() if name.startswith("test_") and callable(value)
}


def test_the_page_defines_tests() -> None:
    assert len(TESTS) >= 2


@pytest.mark.parametrize("name", sorted(TESTS))
def test_page_example(name: str) -> None:
    TESTS[name]()


def test_the_example_binds_and_ties() -> None:
    # The comparison on the page means something only if tasks get placed among equal nodes.
    decisions = MODULE.decisions
    bound = sum(len(decisions(seed, True)[0]) for seed in range(10))
    assert bound > 15
