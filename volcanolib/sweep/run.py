"""Running a sweep's points: in local processes or on a Dask cluster, resumable.

Each point is one replay, run by :func:`run_point` wherever it runs; its
result is a results row (the point's parameters, the replay's summary and
per-queue figures) or, when the replay failed, the parameters and the error.
Every finished point is written at once to ``DIR/points/<key>.json``, so a
sweep stopped half-way resumes (``resume=True``) with the points it lacks.
"""

from __future__ import annotations

import json
import os
import traceback
from collections.abc import Callable, Iterable, Iterator, Mapping, Sequence
from concurrent.futures import FIRST_COMPLETED, Future, ProcessPoolExecutor, wait
from pathlib import Path
from typing import Any

import attrs

from volcanolib.errors import MissingExtraError, VolcanolibError
from volcanolib.sweep.spec import Point, Sweep

__all__ = ["PointJob", "SweepProgress", "point_jobs", "run_point", "run_sweep"]


@attrs.frozen
class PointJob:
    """Everything one worker needs to replay one point (plain data, so it pickles)."""

    point: Point
    workload: tuple[str, ...]
    format: str | None
    nodes: str | None
    replay: Mapping[str, Any]


def point_jobs(sweep: Sweep) -> list[PointJob]:
    """One job per point of the sweep, in sweep order."""
    return [
        PointJob(
            point=p,
            workload=tuple(str(w) for w in sweep.workload),
            format=sweep.format,
            nodes=str(sweep.nodes) if sweep.nodes is not None else None,
            replay=dict(sweep.replay),
        )
        for p in sweep.points
    ]


def replay_summary(job: PointJob) -> dict[str, Any]:
    """Replay one point and return the replay's summary document (as ``replay --json`` writes it)."""
    from volcanolib.framework.config import parse_config
    from volcanolib.replay import ReplayOptions, load_workload, run_replay
    from volcanolib.replay.inputs import compress_arrivals, parse_settings
    from volcanolib.replay.metrics import summarise

    workload = compress_arrivals(load_workload(list(job.workload), format=job.format, nodes=job.nodes), job.point.load)
    settings = parse_settings(job.replay, source="sweep file: replay")
    options = ReplayOptions.for_workload(
        workload,
        period=settings.period,
        pod_startup=settings.pod_startup,
        termination_grace=settings.termination_grace,
        until=settings.until,
        seed=job.point.seed,
    )
    config = parse_config(job.point.config_text, source=f"point {job.point.configuration}")
    return summarise(run_replay(workload, config, options))


def _row(point: Point, summary: Mapping[str, Any]) -> dict[str, Any]:
    """A results row: the parameters, the summary, and each queue's figures."""
    return {
        **point.parameters(),
        "key": point.key,
        "error": None,
        "summary": summary["summary"],
        "queues": summary["queues"],
    }


def run_point(job: PointJob) -> dict[str, Any]:
    """Replay one point; a failure becomes the row's ``error`` instead of an exception.

    A user error (a bad workload row, a plugin refusing its arguments) is its
    one-line message; anything else is the last line of its traceback, so a
    bug in one point does not stop the others.
    """
    try:
        return _row(job.point, replay_summary(job))
    except VolcanolibError as exc:
        error = str(exc)
    except Exception as exc:  # a point's failure is reported, not raised: the others go on
        error = f"{type(exc).__name__}: {exc} ({traceback.extract_tb(exc.__traceback__)[-1].name})"
    return {**job.point.parameters(), "key": job.point.key, "error": error, "summary": None, "queues": None}


@attrs.define
class SweepProgress:
    """What a progress display is told as points finish."""

    #: Points in the sweep.
    total: int
    #: Points with a result (skipped ones included).
    done: int = 0
    #: Points whose replay failed.
    failed: int = 0
    #: Points whose result was already on disk (``resume``).
    skipped: int = 0


def _point_file(directory: Path, point: Point) -> Path:
    return directory / "points" / f"{point.key}.json"


def _write(path: Path, row: Mapping[str, Any]) -> None:
    path.parent.mkdir(parents=True, exist_ok=True)
    tmp = path.with_suffix(".json.tmp")
    tmp.write_text(json.dumps(row, indent=1, sort_keys=True) + "\n", encoding="utf-8")
    os.replace(tmp, path)


def _local(jobs: Sequence[PointJob], workers: int) -> Iterator[tuple[PointJob, dict[str, Any]]]:
    if workers <= 1:
        for job in jobs:
            yield job, run_point(job)
        return
    with ProcessPoolExecutor(max_workers=workers) as pool:
        pending: dict[Future[dict[str, Any]], PointJob] = {pool.submit(run_point, j): j for j in jobs}
        while pending:
            finished, _ = wait(pending, return_when=FIRST_COMPLETED)
            for fut in finished:
                yield pending.pop(fut), fut.result()


def _dask(jobs: Sequence[PointJob], address: str) -> Iterator[tuple[PointJob, dict[str, Any]]]:
    try:
        from distributed import Client, as_completed
    except ImportError:
        raise MissingExtraError("dask", "dask[distributed]", "--dask", hint="on this machine and the workers") from None
    try:
        client = Client(address)  # type: ignore[no-untyped-call]
    except (OSError, TimeoutError, ValueError, TypeError) as exc:  # unreachable, refused, or not an address
        reason = " ".join(str(exc).split()) or type(exc).__name__
        raise VolcanolibError(f"--dask {address}: cannot connect to the Dask scheduler: {reason}") from None
    with client:
        futures = {
            client.submit(run_point, job, key=f"volcanolib-sweep-{job.point.key}", pure=False): job for job in jobs
        }
        for fut in as_completed(list(futures)):  # type: ignore[no-untyped-call]
            yield futures[fut], fut.result()


def run_sweep(
    sweep: Sweep,
    directory: Path,
    *,
    workers: int | None = None,
    dask_address: str | None = None,
    resume: bool = False,
    on_progress: Callable[[SweepProgress], None] | None = None,
) -> list[dict[str, Any]]:
    """Replay every point of ``sweep`` and return the results rows in sweep order.

    :param directory: where each point's result is written (``points/<key>.json``).
    :param workers: local worker processes (default: one per core); 1 runs in this process.
    :param dask_address: send the points to this Dask scheduler instead.
    :param resume: keep the results already in ``directory`` and replay only the others.
    :param on_progress: called at the start and after every point.
    """
    jobs = point_jobs(sweep)
    rows: dict[str, dict[str, Any]] = {}
    todo: list[PointJob] = []
    for job in jobs:
        path = _point_file(directory, job.point)
        if resume and path.is_file():
            try:
                rows[job.point.key] = json.loads(path.read_text(encoding="utf-8"))
                continue
            except (OSError, ValueError):
                pass  # a damaged result is replayed again
        todo.append(job)
    progress = SweepProgress(total=len(jobs), skipped=len(rows), done=len(rows))
    count = workers if workers is not None else (os.cpu_count() or 1)
    if on_progress is not None:
        on_progress(progress)
    results: Iterable[tuple[PointJob, dict[str, Any]]] = (
        _dask(todo, dask_address) if dask_address is not None else _local(todo, count)
    )
    for job, row in results:
        rows[job.point.key] = row
        _write(_point_file(directory, job.point), row)
        progress.done += 1
        progress.failed += row["error"] is not None
        if on_progress is not None:
            on_progress(progress)
    return [rows[job.point.key] for job in jobs]
