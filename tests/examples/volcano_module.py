"""Where the pinned Volcano release's source is: the Go module cache.

Tests that read Volcano's own files (its example/ folder) find them in the
module cache (``go env GOMODCACHE``), downloading the module with ``go mod
download`` when Go is there and the module is not. Without them a test is
skipped, saying why, unless ``VOLCANOLIB_REQUIRE_GO`` is set (CI sets it):
then it fails.
"""

from __future__ import annotations

import os
import shutil
import subprocess
from pathlib import Path

from gotools import unavailable

#: The Volcano release the project pins.
VOLCANO_MODULE = "volcano.sh/volcano"
VOLCANO_VERSION = "v1.14.1"


def volcano_module() -> Path:
    """The module's folder in the Go module cache; skips (or fails, see the module) when it cannot be had."""
    go = shutil.which("go")
    if go is None:
        unavailable(f"Go is not installed: Volcano's source ({VOLCANO_MODULE}@{VOLCANO_VERSION}) cannot be read")
    assert go is not None
    env = {**os.environ, "GOFLAGS": "-mod=mod"}
    cache = subprocess.run([go, "env", "GOMODCACHE"], capture_output=True, text=True, env=env, timeout=60)
    root = Path(cache.stdout.strip()) / f"{VOLCANO_MODULE}@{VOLCANO_VERSION}"
    if not root.is_dir():
        subprocess.run(
            [go, "mod", "download", f"{VOLCANO_MODULE}@{VOLCANO_VERSION}"],
            capture_output=True,
            text=True,
            env=env,
            timeout=600,
            cwd=Path(__file__).resolve().parents[2] / "oracle",
        )
    if not root.is_dir():
        unavailable(f"{VOLCANO_MODULE}@{VOLCANO_VERSION} is not in the Go module cache and could not be downloaded")
    return root
