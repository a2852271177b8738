"""The tables of a replay as CSV files (``volcanolib replay --csv DIR``).

Three files, with a header row each, the rows of :mod:`volcanolib.replay.metrics`:

- ``jobs.csv``: one row per job, the columns of the JSON ``jobs``;
- ``pods.csv``: one row per pod attempt, the columns of the JSON ``pods``,
  then ``queue`` and one ``request:RESOURCE`` column per resource any pod
  requests (cpu in cores, memory in bytes), so that node loads can be
  re-checked from this file and the nodes' allocatable resources alone;
- ``series.csv``: one row per sample of the cluster (each holds until the
  next row's time): ``time``, ``pending_pods``, ``running_pods``,
  ``allocated:RESOURCE``, ``capacity:RESOURCE``, ``queue:QUEUE:RESOURCE``.

A column name joins its parts with ``:``, which neither queue nor resource
names contain. An absent value (a pod never bound) is an empty cell;
numbers are written as in the JSON document.
"""

from __future__ import annotations

import csv
from collections.abc import Mapping, Sequence
from pathlib import Path
from typing import Any

from volcanolib.errors import VolcanolibError
from volcanolib.replay.metrics import JOB_COLUMNS, POD_COLUMNS, job_rows, pod_rows, series
from volcanolib.replay.records import ReplayRecord

__all__ = ["write_csv"]


def _cell(value: object) -> str:
    if value is None:
        return ""
    if isinstance(value, float):
        return repr(value)
    return str(value)


def _flatten(row: Mapping[str, Any], prefix: str = "") -> dict[str, Any]:
    out: dict[str, Any] = {}
    for key, value in row.items():
        if isinstance(value, Mapping):
            out.update(_flatten(value, f"{prefix}{key}:"))
        else:
            out[prefix + key] = value
    return out


def _write(path: Path, header: Sequence[str], rows: Sequence[Mapping[str, Any]]) -> Path:
    try:
        with path.open("w", newline="", encoding="utf-8") as handle:
            writer = csv.writer(handle, lineterminator="\n")
            writer.writerow(header)
            writer.writerows([_cell(row.get(column)) for column in header] for row in rows)
    except OSError as exc:
        raise VolcanolibError(f"{path}: cannot write: {exc.strerror or exc}") from exc
    return path


def write_csv(record: ReplayRecord, directory: Path) -> list[Path]:
    """Write ``jobs.csv``, ``pods.csv`` and ``series.csv`` into ``directory``, creating it if needed.

    :param record: what the replay recorded.
    :param directory: where the files go; existing files of those names are replaced.
    :returns: the three paths, in that order.
    :raises VolcanolibError: the directory or a file cannot be written (one line naming it).
    """
    try:
        directory.mkdir(parents=True, exist_ok=True)
    except OSError as exc:
        raise VolcanolibError(f"{directory}: cannot create the directory: {exc.strerror or exc}") from exc
    jobs = job_rows(record)
    pods = [_flatten(row) for row in pod_rows(record, requests=True)]
    resources = sorted({column for row in pods for column in row if column.startswith("request:")})
    pod_header = [*POD_COLUMNS, "queue", *resources]
    data = series(record, capacity=True)
    columns: dict[str, list[Any]] = {
        "time": data["time"],
        "pending_pods": data["pending_pods"],
        "running_pods": data["running_pods"],
    }
    for kind in ("allocated", "capacity"):
        columns.update((f"{kind}:{name}", values) for name, values in data[kind].items())
    for queue, amounts in data["queue_allocated"].items():
        columns.update((f"queue:{queue}:{name}", values) for name, values in amounts.items())
    samples = [dict(zip(columns, values, strict=True)) for values in zip(*columns.values(), strict=True)]
    return [
        _write(directory / "jobs.csv", JOB_COLUMNS, jobs),
        _write(directory / "pods.csv", pod_header, pods),
        _write(directory / "series.csv", list(columns), samples),
    ]
