"""The replay benchmarks: a synthetic day of Volcano Jobs, and a synthetic trace of the openb trace's size.

::

    python -m benchmarks replay-day                       # 5,000, 10,000 and 20,000 jobs on 1,000 nodes
    python -m benchmarks replay-day --jobs 20000
    python -m benchmarks replay-openb                     # 1,523 nodes, 8,152 pods over about 150 days
    python -m benchmarks replay-openb --nodes 500 --pods 2000

The inputs are generated (:mod:`benchmarks.replay_gen`) into
``benchmarks/_generated/`` unless an up-to-date copy is there. Each run is
a fresh ``python -m benchmarks.replay measure ...`` process that loads the
workload with :func:`volcanolib.replay.load_workload` and replays it with
:func:`volcanolib.replay.run_replay`; its record gives the wall time of the
whole process (interpreter start to exit, measured by the parent), the load
and replay times, where the replay's time went (sessions, snapshots, events),
the process's CPU time (the figure a shared machine disturbs least) and the
peak memory. Records are printed as a table and written as JSON
(``bench-results/replay-day.json`` or ``replay-openb.json`` unless ``--out``
says otherwise).
"""

from __future__ import annotations

import argparse
import json
import os
import platform
import resource
import subprocess
import sys
import tempfile
import time
from collections import Counter
from pathlib import Path
from typing import Any, Final

from benchmarks import replay_gen
from benchmarks.workloads import GENERATED, BenchmarkError

__all__ = ["SUITES", "main", "measure", "run"]

HERE: Final = Path(__file__).resolve().parent
#: The suites this module runs (the first argument of ``python -m benchmarks``).
SUITES: Final = ("replay-day", "replay-openb")
DAY_JOBS: Final = (5_000, 10_000, 20_000)


def _fresh(path: Path) -> bool:
    """Whether ``path`` exists and is newer than the generator."""
    return path.exists() and path.stat().st_mtime >= Path(replay_gen.__file__).stat().st_mtime


def ensure_day(jobs: int, seed: int, directory: Path) -> Path:
    """The ``replay-day`` file for ``jobs`` jobs, generated first when missing or stale."""
    path = directory / f"replay-day-{jobs}-seed{seed}.json"
    if not _fresh(path):
        directory.mkdir(parents=True, exist_ok=True)
        replay_gen.write_day(path, jobs, seed=seed)
    return path


def ensure_openb(nodes: int, pods: int, seed: int, directory: Path) -> tuple[Path, Path]:
    """The synthetic openb node and pod lists, generated first when missing or stale."""
    folder = directory / f"replay-openb-{nodes}n-{pods}p-seed{seed}"
    if not (_fresh(folder / "nodes.csv") and _fresh(folder / "pods.csv")):
        replay_gen.write_openb(folder, nodes=nodes, pods=pods, seed=seed)
    return folder / "nodes.csv", folder / "pods.csv"


def measure(files: list[Path], *, fmt: str | None, nodes: Path | None, seed: int) -> dict[str, Any]:
    """Load and replay a workload in this process; return the figures (peak memory is this process's)."""
    from benchmarks.measure import peak_rss_mib
    from volcanolib.replay import ReplayOptions, load_workload, run_replay

    start = time.perf_counter()
    workload = load_workload(files, format=fmt, nodes=nodes)
    load_seconds = time.perf_counter() - start
    start = time.perf_counter()
    record = run_replay(workload, options=ReplayOptions(seed=seed))
    replay_seconds = time.perf_counter() - start
    phases = Counter(job.phase for job in record.jobs)
    timings = record.timings
    usage = resource.getrusage(resource.RUSAGE_SELF)
    return {
        "jobs": len(record.jobs),
        "pod_attempts": len(record.pods),
        "nodes": len(workload.cluster.nodes),
        "job_phases": dict(sorted(phases.items())),
        "simulated_seconds": round(record.end - record.start, 3),
        "sessions": record.sessions,
        "sessions_run": int(timings.get("sessions_run", 0)),
        "load_seconds": round(load_seconds, 3),
        "replay_seconds": round(replay_seconds, 3),
        "sessions_seconds": round(timings.get("sessions", 0.0), 3),
        "snapshots_seconds": round(timings.get("snapshots", 0.0), 3),
        "events_seconds": round(timings.get("events", 0.0), 3),
        "peak_rss_mib": peak_rss_mib(),
        # CPU time of the whole process so far: on a shared machine, the figure least disturbed by others.
        "process_cpu_seconds": round(usage.ru_utime + usage.ru_stime, 3),
    }


def _child(argv: list[str]) -> int:
    parser = argparse.ArgumentParser(prog="python -m benchmarks.replay measure")
    parser.add_argument("files", nargs="+", type=Path)
    parser.add_argument("--format", dest="fmt")
    parser.add_argument("--nodes", type=Path)
    parser.add_argument("--seed", type=int, default=1)
    parser.add_argument("--result", type=Path, required=True)
    args = parser.parse_args(argv)
    record = measure(args.files, fmt=args.fmt, nodes=args.nodes, seed=args.seed)
    args.result.write_text(json.dumps(record, indent=2) + "\n")
    return 0


def run(files: list[Path], *, fmt: str | None = None, nodes: Path | None = None, seed: int = 1) -> dict[str, Any]:
    """Measure one replay in a fresh process; its record, with ``process_wall_seconds`` (the whole process).

    :raises BenchmarkError: when the process fails (its last error line is quoted).
    """
    with tempfile.TemporaryDirectory(prefix="volcanolib-replay-bench-") as tmp:
        result = Path(tmp) / "result.json"
        command = [sys.executable, "-m", "benchmarks.replay", "measure", *map(str, files), "--seed", str(seed)]
        command += ["--result", str(result)]
        if fmt is not None:
            command += ["--format", fmt]
        if nodes is not None:
            command += ["--nodes", str(nodes)]
        env = dict(os.environ)
        root = str(HERE.parent)
        env["PYTHONPATH"] = os.pathsep.join(p for p in (root, env.get("PYTHONPATH", "")) if p)
        start = time.perf_counter()
        proc = subprocess.run(command, cwd=root, env=env, stdout=subprocess.DEVNULL, stderr=subprocess.PIPE, text=True)
        wall = time.perf_counter() - start
        if proc.returncode != 0 or not result.exists():
            lines = [line for line in proc.stderr.splitlines() if line.strip()]
            raise BenchmarkError(f"replay of {files[0].name} failed: {lines[-1] if lines else proc.returncode}")
        record: dict[str, Any] = json.loads(result.read_text())
    record["process_wall_seconds"] = round(wall, 3)
    return record


_COLUMNS: Final = (
    ("nodes", "nodes", "d"),
    ("jobs", "jobs", "d"),
    ("pods", "pod_attempts", "d"),
    ("process s", "process_wall_seconds", ".1f"),
    ("cpu s", "process_cpu_seconds", ".1f"),
    ("load s", "load_seconds", ".1f"),
    ("replay s", "replay_seconds", ".1f"),
    ("sessions s", "sessions_seconds", ".1f"),
    ("snapshots s", "snapshots_seconds", ".1f"),
    ("events s", "events_seconds", ".1f"),
    ("sessions run", "sessions_run", "d"),
    ("peak MiB", "peak_rss_mib", ".0f"),
)


def table(records: list[dict[str, Any]]) -> str:
    """The records as a plain text table, one row each."""
    rows = [[name for name, _, _ in _COLUMNS]]
    rows += [[format(r[key], spec) for _, key, spec in _COLUMNS] for r in records]
    widths = [max(len(row[i]) for row in rows) for i in range(len(_COLUMNS))]
    return "\n".join("  ".join(cell.rjust(w) for cell, w in zip(row, widths, strict=True)) for row in rows)


def main(argv: list[str]) -> int:
    """``python -m benchmarks replay-day|replay-openb [options]``: run, print the table, write the JSON."""
    if argv[:1] == ["measure"]:
        return _child(argv[1:])
    parser = argparse.ArgumentParser(
        prog="python -m benchmarks", description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter
    )
    parser.add_argument("suite", choices=SUITES)
    parser.add_argument("--jobs", default=",".join(map(str, DAY_JOBS)), help="replay-day: comma-separated job counts")
    parser.add_argument("--nodes", type=int, default=replay_gen.OPENB_NODES, help="replay-openb: nodes")
    parser.add_argument("--pods", type=int, default=replay_gen.OPENB_PODS, help="replay-openb: pods")
    parser.add_argument("--seed", type=int, default=1, help="the generator's and the scheduler's seed")
    parser.add_argument("--out", type=Path, help="the JSON file to write (default under bench-results/)")
    parser.add_argument("--generated", type=Path, default=GENERATED, help="where inputs are generated")
    args = parser.parse_args(argv)
    records: list[dict[str, Any]] = []
    try:
        if args.suite == "replay-day":
            sizes = [int(j) for j in args.jobs.split(",") if j.strip()]
            if not sizes or min(sizes) < 1:
                parser.error(f"--jobs needs positive job counts, got {args.jobs!r}")
            for jobs in sizes:
                print(f"replay-day: {jobs} jobs ...", file=sys.stderr, flush=True)
                record = run([ensure_day(jobs, args.seed, args.generated)], seed=args.seed)
                records.append({"benchmark": "replay-day", "seed": args.seed, **record})
        else:
            if args.nodes < 1 or args.pods < 1:
                parser.error("--nodes and --pods must be at least 1")
            print(f"replay-openb: {args.nodes} nodes, {args.pods} pods ...", file=sys.stderr, flush=True)
            nodes, pods = ensure_openb(args.nodes, args.pods, args.seed, args.generated)
            record = run([pods], fmt="openb", nodes=nodes, seed=args.seed)
            records.append({"benchmark": "replay-openb", "seed": args.seed, **record})
    except BenchmarkError as exc:
        print(f"error: {exc}", file=sys.stderr)
        return 1
    print(table(records))
    document = {
        "python": platform.python_version(),
        "platform": platform.platform(terse=True),
        "results": records,
    }
    out = args.out or Path("bench-results") / f"{args.suite}.json"
    out.parent.mkdir(parents=True, exist_ok=True)
    out.write_text(json.dumps(document, indent=2) + "\n")
    print(f"results written to {out}", file=sys.stderr)
    return 0


if __name__ == "__main__":
    raise SystemExit(main(sys.argv[1:]))
