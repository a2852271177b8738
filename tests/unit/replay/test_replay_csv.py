"""The CSV files of a replay read back to the figures of the JSON document."""

from __future__ import annotations

import csv
from pathlib import Path
from typing import Any

import pytest
from replay_records import two_queues, with_pods

from volcanolib.errors import VolcanolibError
from volcanolib.replay.csvout import write_csv
from volcanolib.replay.metrics import JOB_COLUMNS, POD_COLUMNS, summarise
from volcanolib.replay.records import ReplayRecord

INTEGERS = {"restarts", "evicted_pods", "attempt", "pending_pods", "running_pods"}


def read(path: Path) -> tuple[list[str], list[dict[str, Any]]]:
    """The header and the rows, with empty cells as None and numbers as numbers."""
    with path.open(newline="", encoding="utf-8") as handle:
        reader = csv.DictReader(handle)
        rows = list(reader)
        header = list(reader.fieldnames or [])
    out = []
    for row in rows:
        typed: dict[str, Any] = {}
        for key, cell in row.items():
            if cell == "":
                typed[key] = None
            elif key in INTEGERS:
                typed[key] = int(cell)
            else:
                try:
                    typed[key] = float(cell)
                except ValueError:
                    typed[key] = cell
        out.append(typed)
    return header, out


def test_jobs_and_pods_round_trip(tmp_path: Path) -> None:
    record = with_pods()
    paths = write_csv(record, tmp_path / "out")
    assert [p.name for p in paths] == ["jobs.csv", "pods.csv", "series.csv"]
    document = summarise(record)
    header, jobs = read(paths[0])
    assert tuple(header) == JOB_COLUMNS
    assert jobs == [{k: j[k] for k in JOB_COLUMNS} for j in document["jobs"]]
    header, pods = read(paths[1])
    assert header == [*POD_COLUMNS, "queue", "request:cpu", "request:memory", "request:nvidia.com/gpu"]
    assert [{k: p[k] for k in POD_COLUMNS} for p in pods] == document["pods"]
    # the never-bound pod requests half a cpu and a GPU, no memory
    unbound = next(p for p in pods if p["bound"] is None)
    assert (unbound["queue"], unbound["request:cpu"], unbound["request:memory"]) == ("q1", 0.5, None)
    assert unbound["request:nvidia.com/gpu"] == 1.0


def test_series_round_trips_with_the_capacity(tmp_path: Path) -> None:
    record = two_queues()
    _, _, series_path = write_csv(record, tmp_path)
    header, rows = read(series_path)
    series = summarise(record)["series"]
    assert header[:3] == ["time", "pending_pods", "running_pods"]
    assert [r["time"] for r in rows] == series["time"]
    assert [r["running_pods"] for r in rows] == series["running_pods"]
    assert [r["allocated:memory"] for r in rows] == series["allocated"]["memory"]
    assert [r["capacity:cpu"] for r in rows] == [10.0, 10.0, 10.0]
    assert [r["queue:q2:memory"] for r in rows] == series["queue_allocated"]["q2"]["memory"] == [0.0, 60.0, 0.0]
    # utilisation re-computed from the file alone: allocated cpu-seconds over allocatable cpu-seconds
    ends = [r["time"] for r in rows[1:]] + [record.end]
    used = sum(r["allocated:cpu"] * (end - r["time"]) for r, end in zip(rows, ends, strict=True))
    available = sum(r["capacity:cpu"] * (end - r["time"]) for r, end in zip(rows, ends, strict=True))
    assert used / available == summarise(record)["summary"]["utilisation"]["cpu"]


def test_an_empty_replay_writes_headers_only(tmp_path: Path) -> None:
    jobs, pods, series = write_csv(ReplayRecord(0.0, 0.0, 0, [], [], [], [], {}), tmp_path)
    assert jobs.read_text() == ",".join(JOB_COLUMNS) + "\n"
    assert pods.read_text() == ",".join([*POD_COLUMNS, "queue"]) + "\n"
    assert series.read_text() == "time,pending_pods,running_pods\n"


def test_an_unwritable_directory_is_one_line_naming_it(tmp_path: Path) -> None:
    blocker = tmp_path / "file"
    blocker.write_text("")
    with pytest.raises(VolcanolibError, match=rf"^{blocker}/out: cannot create the directory: "):
        write_csv(two_queues(), blocker / "out")
