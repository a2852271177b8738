"""The oracle, built once per test run."""

from __future__ import annotations

import pytest
from gotools import build_tool


@pytest.fixture(scope="session")
def oracle() -> list[str]:
    """The command that runs the oracle (tools/oracle), built."""
    return build_tool("oracle", "version")
