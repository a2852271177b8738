"""``volcanolib replay --format``: a bad trace row is one line and exit status 2; ``--export`` replays the same."""

from __future__ import annotations

import json
from pathlib import Path

import pytest

from volcanolib.cli import main

DATA = Path(__file__).resolve().parent / "data"
NODES = str(DATA / "openb_nodes.csv")


def test_a_bad_row_is_one_line_naming_file_row_and_column(tmp_path: Path, capsys: pytest.CaptureFixture[str]) -> None:
    bad = tmp_path / "pods.csv"
    lines = (DATA / "openb_pods.csv").read_text().splitlines()
    lines[3] = lines[3].replace(",Burstable,", ",Gold,")
    bad.write_text("\n".join(lines) + "\n")
    assert main(["replay", "--format", "openb", "--nodes", NODES, str(bad)]) == 2
    err = capsys.readouterr().err.strip().splitlines()
    assert err == [
        f"volcanolib: error: {bad}: row 4: column qos: unknown qos 'Gold' (expected LS, Guaranteed, Burstable, BE)"
    ]


def test_the_exported_trace_replays_to_the_same_json(tmp_path: Path) -> None:
    exported, first, second = tmp_path / "openb.yaml", tmp_path / "a.json", tmp_path / "b.json"
    pods = str(DATA / "openb_pods.csv")
    assert (
        main(["replay", "--format", "openb", "--nodes", NODES, pods, "--export", str(exported), "--json", str(first)])
        == 0
    )
    assert main(["replay", str(exported), "--json", str(second)]) == 0
    a, b = json.loads(first.read_text()), json.loads(second.read_text())
    for doc in (a, b):
        doc.pop("timings", None)
        doc["summary"].pop("timings", None)
    assert a == b
    assert a["summary"]["jobs"] == 5
