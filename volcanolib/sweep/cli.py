"""``volcanolib sweep SWEEP.yaml``: many replays, on local cores or a Dask cluster."""

from __future__ import annotations

import argparse
import os
import sys
from pathlib import Path
from typing import Any, TextIO

from volcanolib._console import TableSpec, progress, require_rich, write
from volcanolib.errors import VolcanolibError

__all__ = ["add_parser", "run"]


def add_parser(sub: Any) -> None:
    """Add the ``sweep`` command to the command line's subparsers."""
    p: argparse.ArgumentParser = sub.add_parser(
        "sweep",
        help="replay a workload under many configurations, loads and seeds",
        description="Replay every point of a sweep file (configurations x load factors x seeds) "
        "on all local cores, or on a Dask cluster, and write one results table.",
    )
    p.add_argument("sweep", metavar="SWEEP.yaml", help="the sweep file")
    p.add_argument(
        "--out",
        metavar="DIR",
        help="where results go: points/<point>.json, results.csv, results.json (default: <sweep name>-results)",
    )
    p.add_argument("--jobs", type=int, metavar="N", help="local worker processes (default: one per core)")
    p.add_argument("--dask", metavar="ADDRESS", help="send the points to this Dask scheduler (tcp://host:8786)")
    p.add_argument("--resume", action="store_true", help="keep the points whose results are in --out already")
    p.add_argument("--plot", metavar="FILE", help="draw the comparison (.png or .svg)")
    p.set_defaults(handler=run)


def run(args: argparse.Namespace, out: TextIO) -> int:
    """Run the sweep; exit status 0 when every point replayed, 1 when some failed, 2 for a bad sweep file."""
    from volcanolib.sweep.output import plot_sweep, write_results
    from volcanolib.sweep.run import run_sweep
    from volcanolib.sweep.spec import load_sweep

    if args.jobs is not None and args.jobs < 1:
        raise VolcanolibError(f"--jobs: expected 1 or more, got {args.jobs}")
    plot = Path(args.plot) if args.plot else None
    if plot is not None and plot.suffix.lower() not in (".png", ".svg"):
        raise VolcanolibError(f"--plot {plot}: expected a .png or .svg file")
    require_rich()
    sweep = load_sweep(args.sweep)  # every point is built and checked before any replay
    directory = Path(args.out) if args.out else Path(f"{Path(args.sweep).stem}-results")
    at_once = "on dask" if args.dask else f"{args.jobs or os.cpu_count() or 1} at a time"
    with progress(f"sweep ({at_once})", sys.stderr) as report:
        rows = run_sweep(
            sweep,
            directory,
            workers=args.jobs,
            dask_address=args.dask,
            resume=args.resume,
            on_progress=lambda p: report(p.done, p.total),
        )
    json_path, csv_path = write_results(rows, directory)
    if plot is not None:
        plot_sweep(rows, plot)
    failed = [r for r in rows if r["error"] is not None]
    for r in failed:
        sys.stderr.write(f"volcanolib: error: point {r['key']}: {r['error']}\n")
    _table(rows, out)
    out.write(f"{len(rows) - len(failed)} of {len(rows)} points replayed; results in {csv_path} and {json_path}\n")
    return 1 if failed else 0


def _table(rows: list[dict[str, Any]], out: TextIO) -> None:
    """The sweep's headline figures, one line per point; times as ``replay`` prints them (``13m 40s``)."""
    from volcanolib.replay.tables import duration, ratio

    headers = ("CONFIGURATION", "LOAD", "SEED", "JOBS", "COMPLETED", "WAIT P50", "WAIT P95", "JCT P50", "JAIN")
    lines = []
    for r in rows:
        s = r.get("summary")
        head = (r["configuration"], f"{r['load']:g}", str(r["seed"]))
        if s is None:
            lines.append((*head, "error", "", "", "", "", ""))
            continue
        figures = (
            str(s["jobs"]),
            str(s["completed"]),
            duration(s["wait"]["p50"]),
            duration(s["wait"]["p95"]),
            duration(s["jct"]["p50"]),
            ratio(s["fairness"]["jain"]),
        )
        lines.append((*head, *figures))
    write(out, [TableSpec(headers, tuple(lines), right=frozenset(range(1, len(headers))))])
