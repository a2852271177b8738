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
from collections.abc import Iterable, Sequence
from pathlib import Path
from typing import Any

from volcanolib.errors import VolcanolibError
from volcanolib.replay.metrics import JOB_COLUMNS, POD_COLUMNS, job_rows, pod_rows, series
from volcanolib.replay.records import ReplayRecord

__all__ = ["write_csv"]


def _write(path: Path, header: Sequence[str], rows: Iterable[Sequence[Any]]) -> Path:
    try:
        with path.open("w", newline="", encoding="utf-8") as handle:
            writer = csv.writer(handle, lineterminator="\n")
            writer.writerow(header)
            writer.writerows(rows)  # None is written as an empty cell, a float as its repr
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
    pods = pod_rows(record, requests=True)
    resources = sorted({name for row in pods for name in row["request"]})
    pod_table = (
        [*(row[c] for c in POD_COLUMNS), row["queue"], *(row["request"].get(name) for name in resources)]
        for row in pods
    )
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
    return [
        _write(directory / "jobs.csv", JOB_COLUMNS, (list(row.values()) for row in job_rows(record))),
        _write(directory / "pods.csv", [*POD_COLUMNS, "queue", *(f"request:{r}" for r in resources)], pod_table),
        _write(directory / "series.csv", list(columns), zip(*columns.values(), strict=True)),
    ]
