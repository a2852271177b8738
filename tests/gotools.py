"""Building the project's Go test tooling (the oracle, the control plane) from the tests.

Tests that need it are marked ``go`` (see tests/conftest.py). When ``go`` is
missing or a build fails they are skipped with the reason, except under
``VOLCANOLIB_REQUIRE_GO=1`` (what .ci/run sets), where they fail.
"""

from __future__ import annotations

import os
import shutil
import subprocess
from pathlib import Path
from typing import NoReturn

import pytest

ROOT = Path(__file__).resolve().parents[1]


def unavailable(reason: str) -> NoReturn:
    """Skip the test, or fail it where Go is required (``VOLCANOLIB_REQUIRE_GO=1`` when it is called)."""
    if os.environ.get("VOLCANOLIB_REQUIRE_GO") == "1":
        pytest.fail(f"{reason} (VOLCANOLIB_REQUIRE_GO=1: a missing Go tool is a failure)", pytrace=False)
    pytest.skip(reason)


def build_tool(script: str, *args: str, timeout: float = 1800) -> list[str]:
    """Build one of tools/ (``oracle``, ``cluster``) by running it with ``args``; return its command.

    The first build downloads modules and compiles for minutes; later ones reuse Go's build cache.
    """
    if shutil.which("go") is None:
        unavailable(f"needs go on PATH to build tools/{script}")
    command = [str(ROOT / "tools" / script)]
    done = subprocess.run([*command, *args], capture_output=True, text=True, timeout=timeout, check=False)
    if done.returncode != 0:
        unavailable(f"tools/{script} {' '.join(args)} failed: {done.stderr.strip()[-1500:]}")
    return command
