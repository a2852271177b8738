"""The sweep benchmark: 24 points of the example replay workload, one process against two workers.

::

    python -m benchmarks sweep                 # serial, then 2 local workers, then 2 Dask workers
    python -m benchmarks sweep --runs 3        # each mode three times; medians reported

The 24 points are the example workload (``examples/replay/workload.yaml``)
under three configurations (the example's, without drf, without
proportion), at loads 1, 1.25, 1.5 and 2, over two seeds. Every mode runs
the same sweep into a fresh folder; the figure is the wall time of
:func:`volcanolib.sweep.run.run_sweep`, and the rows of every mode must be
equal (they are compared, so a mode that decides differently fails the
benchmark). Records go to ``bench-results/sweep.json`` unless ``--out``.
"""

from __future__ import annotations

import argparse
import json
import os
import platform
import statistics
import sys
import tempfile
import time
from pathlib import Path
from typing import Any

import yaml

ROOT = Path(__file__).resolve().parents[1]
EXAMPLE = ROOT / "examples" / "replay"


def sweep_file(directory: Path) -> Path:
    """Write the benchmark's sweep file (24 points) into ``directory``."""
    data = {
        "workload": [str(EXAMPLE / "workload.yaml")],
        "configurations": [
            {"name": "example", "file": str(EXAMPLE / "volcano-scheduler.conf")},
            {
                "name": "without",
                "base": str(EXAMPLE / "volcano-scheduler.conf"),
                "vary": [{"plugin": "drf", "enabled": [False]}],
            },
            {
                "name": "without",
                "base": str(EXAMPLE / "volcano-scheduler.conf"),
                "vary": [{"plugin": "proportion", "enabled": [False]}],
            },
        ],
        "load": [1.0, 1.25, 1.5, 2.0],
        "seeds": [0, 1],
    }
    path = directory / "bench-sweep.yaml"
    path.write_text(yaml.safe_dump(data))
    return path


def _comparable(rows: list[dict[str, Any]]) -> list[Any]:
    return [(r["key"], r["error"], r["summary"], r["queues"]) for r in rows]


def main(argv: list[str]) -> int:
    """Run the modes, print medians and the speed-up, write the JSON record."""
    from volcanolib.sweep.run import run_sweep
    from volcanolib.sweep.spec import load_sweep

    parser = argparse.ArgumentParser(prog="python -m benchmarks sweep", description=__doc__)
    parser.add_argument("suite", choices=["sweep"])
    parser.add_argument("--runs", type=int, default=1, help="runs of each mode (default 1)")
    parser.add_argument("--no-dask", action="store_true", help="leave out the local Dask cluster")
    parser.add_argument("--out", default="bench-results/sweep.json", help="where the JSON record goes")
    args = parser.parse_args(argv)
    modes: list[str] = ["serial", "2 processes"] + ([] if args.no_dask else ["2 dask workers"])
    times: dict[str, list[float]] = {m: [] for m in modes}
    reference: list[Any] | None = None
    with tempfile.TemporaryDirectory() as tmp:
        sweep = load_sweep(sweep_file(Path(tmp)))
        points = len(sweep.points)
        for run in range(args.runs):
            for mode in modes:
                out = Path(tmp) / f"{mode.replace(' ', '-')}-{run}"
                if mode == "2 dask workers":
                    from distributed import LocalCluster

                    with LocalCluster(n_workers=2, threads_per_worker=1, dashboard_address=None) as cluster:
                        started = time.perf_counter()
                        rows = run_sweep(sweep, out, dask_address=cluster.scheduler_address)
                        times[mode].append(time.perf_counter() - started)
                else:
                    started = time.perf_counter()
                    rows = run_sweep(sweep, out, workers=1 if mode == "serial" else 2)
                    times[mode].append(time.perf_counter() - started)
                if reference is None:
                    reference = _comparable(rows)
                elif _comparable(rows) != reference:
                    print(f"{mode}: the rows differ from the first mode's", file=sys.stderr)
                    return 1
                print(f"run {run + 1} {mode}: {times[mode][-1]:.2f} s", file=sys.stderr)
    serial = statistics.median(times["serial"])
    print(f"{points} points of the example workload; medians of {args.runs} run(s), wall seconds")
    for mode in modes:
        median = statistics.median(times[mode])
        print(f"  {mode:15} {median:7.2f} s   {serial / median:4.2f}x serial")
    record = {
        "benchmark": "sweep",
        "points": points,
        "runs": args.runs,
        "cpus": os.cpu_count(),
        "python": platform.python_version(),
        "seconds": times,
        "median": {m: statistics.median(t) for m, t in times.items()},
    }
    out_path = Path(args.out)
    out_path.parent.mkdir(parents=True, exist_ok=True)
    out_path.write_text(json.dumps(record, indent=1) + "\n")
    return 0
