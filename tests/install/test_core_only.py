"""A core-only install: ``pip install volcanolib[cli]`` without volcanolib-contrib runs its default configuration.

Marked slow (deselected by default; ``pytest --runslow`` runs it): it builds
the distribution into a new virtual environment, and pip fetches the
runtime dependencies from the package index. The same situation is
simulated without installing anything in ``tests/unit/framework/test_registry.py``.
"""

from __future__ import annotations

import subprocess
import sys
import venv
from pathlib import Path

import pytest

ROOT = Path(__file__).resolve().parents[2]


@pytest.mark.slow
def test_the_cli_extra_alone_gives_a_working_command_line(tmp_path: Path) -> None:
    env_dir = tmp_path / "venv"
    venv.EnvBuilder(with_pip=True).create(env_dir)
    bin_dir = env_dir / ("Scripts" if sys.platform == "win32" else "bin")
    subprocess.run(
        [str(bin_dir / "python"), "-m", "pip", "install", "-q", f"{ROOT}[cli]"],
        check=True,
        capture_output=True,
        timeout=600,
    )
    volcanolib = str(bin_dir / "volcanolib")

    proc = subprocess.run(
        [volcanolib, "simulate", str(ROOT / "examples" / "quickstart.yaml")],
        capture_output=True,
        text=True,
        cwd=tmp_path,
        timeout=120,
    )
    assert proc.returncode == 0, proc.stderr
    assert "default/tensorflow-dist-mnist  default  Running  3/3" in proc.stdout
    [warning] = proc.stderr.splitlines()
    assert warning.startswith("volcanolib: warning: volcanolib-contrib is not installed")
    assert "pip install -e ./plugins_contrib" in warning

    plugins = subprocess.run([volcanolib, "plugins"], capture_output=True, text=True, timeout=120)
    assert plugins.returncode == 0 and "BROKEN" not in plugins.stdout
    assert "Plugins (6)" in plugins.stdout  # the built-ins only: no test fixture, no contrib

    conf = tmp_path / "volcano-scheduler.conf"
    conf.write_text("actions: allocate\ntiers:\n- plugins:\n  - name: predicates\n")
    refused = subprocess.run(
        [volcanolib, "simulate", str(ROOT / "examples" / "quickstart.yaml"), "--conf", str(conf)],
        capture_output=True,
        text=True,
        timeout=120,
    )
    assert refused.returncode == 2
    expected = "provided by the volcanolib-contrib distribution (from a volcanolib source checkout: pip install -e "
    assert expected + "./plugins_contrib)" in refused.stderr
