"""Running the installed ``volcanolib`` console script in a subprocess."""

from __future__ import annotations

import os
import subprocess
import sys
from pathlib import Path

ROOT = Path(__file__).resolve().parents[2]
EXAMPLES = ROOT / "examples"
_SCRIPT = Path(sys.executable).parent / "volcanolib"


def command() -> list[str]:
    """The console script when installed next to the interpreter, else ``python -m volcanolib``."""
    return [str(_SCRIPT)] if _SCRIPT.exists() else [sys.executable, "-m", "volcanolib"]


def run(*args: str | Path, cwd: Path | None = None) -> subprocess.CompletedProcess[str]:
    """Run ``volcanolib ARGS``; capture text output."""
    env = {k: v for k, v in os.environ.items() if k != "VOLCANOLIB_DISABLE_PLUGINS"}
    return subprocess.run(
        [*command(), *map(str, args)], capture_output=True, text=True, cwd=cwd or ROOT, env=env, timeout=120
    )
