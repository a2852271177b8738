"""``volcanolib replay`` writes its summary, JSON, CSV files and plot from one record, and they agree."""

from __future__ import annotations

import csv
import json
import sys
from pathlib import Path

import pytest
from cli_helpers import EXAMPLES

from volcanolib import cli

OPENB = EXAMPLES / "replay" / "traces" / "openb"
TRACE = ["--format", "openb", "--nodes", str(OPENB / "nodes.csv"), str(OPENB / "pods.csv")]


def test_every_output_of_one_replay_agrees(tmp_path: Path, capsys: pytest.CaptureFixture[str]) -> None:
    args = ["replay", *TRACE, "--json", str(tmp_path / "r.json"), "--csv", str(tmp_path / "csv")]
    assert cli.main([*args, "--plot", str(tmp_path / "r.svg")]) == 0
    table = capsys.readouterr().out
    document = json.loads((tmp_path / "r.json").read_text())
    summary = document["summary"]
    assert table.startswith(
        f"Jobs: {summary['jobs']} ({summary['completed']} completed, {summary['failed']} failed, "
        f"{summary['cancelled']} cancelled, {summary['unfinished']} unfinished)\n"
    )
    for name, value in summary["utilisation"].items():
        assert f"  {name} " in table and f"{100 * value:.1f}%" in table
    assert all(line == line.rstrip() for line in table.splitlines())
    with (tmp_path / "csv" / "jobs.csv").open(newline="") as handle:
        jobs = list(csv.DictReader(handle))
    assert [row["name"] for row in jobs] == [job["name"] for job in document["jobs"]]
    with (tmp_path / "csv" / "pods.csv").open(newline="") as handle:
        pods = list(csv.DictReader(handle))
    assert len(pods) == len(document["pods"]) and pods[0]["request:cpu"] != ""
    assert (tmp_path / "r.svg").read_text().lstrip().startswith("<?xml")
    # The same replay again: byte-identical JSON but for the wall-clock timings.
    assert cli.main(["replay", *TRACE, "--json", str(tmp_path / "again.json")]) == 0
    again = json.loads((tmp_path / "again.json").read_text())
    assert {k: v for k, v in again.items() if k != "timings"} == {k: v for k, v in document.items() if k != "timings"}


@pytest.mark.parametrize(
    ("blocked", "extra", "args"),
    [("rich", "cli", []), ("matplotlib", "plot", ["--json", "-", "--plot", "x.png"])],
)
def test_a_missing_extra_is_refused_before_the_run(
    blocked: str, extra: str, args: list[str], monkeypatch: pytest.MonkeyPatch, capsys: pytest.CaptureFixture[str]
) -> None:
    import volcanolib.replay.engine as engine

    monkeypatch.setitem(sys.modules, blocked, None)
    monkeypatch.setattr(engine, "run_replay", None)  # never reached
    assert cli.main(["replay", *TRACE, *args]) == 2
    err = capsys.readouterr().err
    assert err.startswith("volcanolib: error: ") and err.count("\n") == 1
    assert f"pip install 'volcanolib[{extra}]'" in err
