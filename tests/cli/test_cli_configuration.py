"""The command line and configuration files: a file that is not a scheduler configuration, broken plugins."""

from __future__ import annotations

import json
from pathlib import Path

import pytest
from cli_helpers import EXAMPLES, run


@pytest.mark.parametrize(
    ("text", "expected"),
    [
        ("", "empty: not a scheduler configuration"),
        ("tiers:\n- plugins:\n  - name: gang\n", "not a scheduler configuration: no 'actions' key"),
        (
            "apiVersion: v1\nkind: ConfigMap\nmetadata: {name: volcano-scheduler-configmap}\ndata: {}\n",
            "a Kubernetes ConfigMap, not a scheduler configuration",
        ),
    ],
)
def test_a_conf_file_without_actions_exits_2_with_one_line_naming_it(text: str, expected: str, tmp_path: Path) -> None:
    conf = tmp_path / "volcano-scheduler.conf"
    conf.write_text(text)
    proc = run("simulate", EXAMPLES / "quickstart.yaml", "--conf", conf)
    assert proc.returncode == 2 and proc.stdout == ""
    assert len(proc.stderr.splitlines()) == 1, proc.stderr
    assert proc.stderr.startswith(f"volcanolib: error: {conf}: {expected}"), proc.stderr


def test_a_scheduler_block_without_actions_exits_2(tmp_path: Path) -> None:
    scenario = tmp_path / "s.yaml"
    scenario.write_text("scheduler: {tiers: [{plugins: [{name: gang}]}]}\nobjects: []\n")
    proc = run("simulate", scenario)
    assert proc.returncode == 2
    assert proc.stderr == f"volcanolib: error: {scenario}: scheduler: not a scheduler configuration: no 'actions' key\n"


def test_plugins_shows_a_plugin_that_fails_validation_as_broken() -> None:
    proc = run("plugins")
    assert proc.returncode == 0, proc.stderr
    lines = proc.stdout.splitlines()
    badhook = next(line for line in lines if line.split()[:1] == ["badhook"])
    assert badhook.split()[2:5] == ["-", "BROKEN:", "unknown"]  # no traits
    assert badhook.endswith("unknown hook 'job_ordr': no such hook specification")
    ordered = next(line for line in lines if line.split()[:1] == ["ordered-first"])
    assert "BROKEN: hook 'job_order': tiered hooks take their order from the configuration" in ordered
    broken = next(line for line in lines if line.startswith("Broken ("))
    assert "badhook" in broken and "ordered-first" in broken and "gang" not in broken
    data = json.loads(run("plugins", "--json").stdout)
    rows = {p["name"]: p for p in data["plugins"]}
    assert rows["badhook"]["broken"] is True and "job_ordr" in rows["badhook"]["error"]
    assert rows["gang"]["broken"] is False and "error" not in rows["gang"]
