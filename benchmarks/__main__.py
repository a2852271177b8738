"""Run benchmarks: the scheduling workloads W1..W4, the steady state W5, and the ordering micro-benchmark.

Examples::

    python -m benchmarks W1 M                 # one workload at one size
    python -m benchmarks W5 L                 # steady-state cycles on the W1-L cluster, all pods running
    python -m benchmarks all --sizes S,M      # every workload at S and M (what nox -s bench runs)
    python -m benchmarks W2 L --format json   # load a JSON dump instead of YAML
    python -m benchmarks W1 L --format yaml,block,json   # the generator's flow YAML, kubectl's block YAML, JSON
    python -m benchmarks W1 S --profile w1.prof
    python -m benchmarks ordering             # compiled dispatch against pm.hook
    python -m benchmarks replay-day --jobs 5000,10000,20000   # replay a synthetic day (benchmarks/replay.py)
    python -m benchmarks replay-openb         # replay a synthetic trace of the openb trace's size
    python -m benchmarks sweep                # 24 replays: one process against two workers (benchmarks/sweep.py)
    python -m benchmarks versus W1 W2 --sizes S,M   # volcanolib beside the real Volcano (benchmarks/versus.py)
    python -m benchmarks live                 # Volcano's scheduler and serve on real API servers (benchmarks/live.py)
    python -m benchmarks live-controllers     # Volcano's controller manager and volcanolib controllers, live

Each workload runs in its own interpreter: the file is generated into
benchmarks/_generated/ when missing, loaded with volcanolib.sim.load_scenario
and scheduled by one session of volcanolib.sim.run_scenario. A table compares
the session time with Volcano v1.7's on the same workload; the records are
written as JSON (bench-results/workloads.json unless --out says otherwise).
W5 places the W1 cluster with one session, then measures cycles in which
--churn pods arrive and as many finish (benchmarks/steady.py); --profile
profiles one extra cycle.
"""

from __future__ import annotations

import argparse
import json
import os
import platform
import sys
from pathlib import Path
from typing import Any

from benchmarks import CLOCK_ENV
from benchmarks.steady import CHURN, CYCLES, WARMUP
from benchmarks.workloads import (
    FORMATS,
    GENERATED,
    STEADY,
    WORKLOAD_SIZES,
    BenchmarkError,
    run_workload,
    selection,
    steady_line,
    table,
)

SIZES = ("S", "M", "L")
#: Suites run by :mod:`benchmarks.replay`, which has its own options.
REPLAY_SUITES = ("replay-day", "replay-openb")


def _split(text: str) -> list[str]:
    return [item.strip() for item in text.split(",") if item.strip()]


def _profile_path(base: Path, label: str, many: bool) -> Path:
    """``base`` itself for a single run; ``base`` with the run's label before the suffix otherwise."""
    if not many:
        return base
    return base.with_name(f"{base.stem}-{label}{base.suffix or '.prof'}")


def main(argv: list[str] | None = None) -> int:
    """Parse the command line, run what it names, print the results and write them as JSON."""
    args_in = sys.argv[1:] if argv is None else argv
    if args_in and args_in[0].startswith("serve-"):  # volcanolib serve against the stand-in API server
        from benchmarks.serve import main as serve_main

        return serve_main(list(args_in))
    if args_in[:1] == ["versus"]:  # volcanolib and the real Volcano (the oracle) side by side
        from benchmarks import versus

        return versus.main(list(args_in))
    if args_in[:1] == ["live"]:  # Volcano's scheduler and volcanolib serve, each on a real API server
        from benchmarks import live

        return live.main(list(args_in))
    if args_in[:1] == ["live-controllers"]:  # Volcano's controller manager and volcanolib controllers, live
        from benchmarks import live_controllers

        return live_controllers.main(list(args_in))
    if args_in[:1] == ["sweep"]:  # a policy sweep: serial against two workers
        from benchmarks import sweep

        return sweep.main(list(args_in))
    if args_in and args_in[0] in REPLAY_SUITES:  # replay-day, replay-openb: their own options
        from benchmarks import replay

        return replay.main(list(args_in))
    parser = argparse.ArgumentParser(
        prog="python -m benchmarks", description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter
    )
    parser.add_argument(
        "suite",
        nargs="*",
        help="ordering, all, W1, W2, W3, W4, W5, optionally followed by sizes S, M, L (default: ordering)",
    )
    parser.add_argument("--sizes", default="S,M", help="comma-separated sizes for the workloads (default S,M)")
    parser.add_argument(
        "--format",
        dest="formats",
        default="yaml",
        help="yaml (the generator's flow style), block (kubectl's style), json; comma-separated (default yaml)",
    )
    parser.add_argument("--seed", type=int, default=1, help="the workload generator's and the scheduler's seed")
    parser.add_argument(
        "--repeat", type=int, default=1, help="run each workload N times (fresh processes); report the median session"
    )
    parser.add_argument("--cycles", type=int, default=CYCLES, help=f"W5: measured cycles (default {CYCLES})")
    parser.add_argument("--warmup", type=int, default=WARMUP, help=f"W5: cycles before them (default {WARMUP})")
    parser.add_argument(
        "--churn", type=int, default=CHURN, help=f"W5: pods arriving and finishing per cycle (default {CHURN})"
    )
    parser.add_argument("--out", type=Path, help="the JSON file to write (default under bench-results/)")
    parser.add_argument("--profile", type=Path, help="write a cProfile .prof of each workload's session")
    parser.add_argument("--generated", type=Path, default=GENERATED, help="where workload files are generated")
    parser.add_argument("--all", action="store_true", help="run the ordering benchmark and every workload")
    parser.add_argument(
        "--clock",
        choices=("wall", "cpu"),
        default="wall",
        help="time with the wall clock (default) or each process's CPU time (steadier on a shared machine)",
    )
    args = parser.parse_args(argv)
    if args.clock == "cpu":
        os.environ[CLOCK_ENV] = "cpu"  # read by the benchmark processes this one starts

    tokens = list(args.suite)
    if args.all:
        tokens = ["ordering", "all", *tokens]
    if not tokens:
        tokens = ["ordering"]
    run_ordering = False
    workloads: list[str] = []
    sizes: list[str] = []
    for token in tokens:
        if token == "ordering":
            run_ordering = True
        elif token == "all" or token.upper() in WORKLOAD_SIZES:
            workloads.append(token if token == "all" else token.upper())
        elif token.upper() in SIZES:
            sizes.append(token.upper())
        else:
            parser.error(f"unknown suite {token!r} (expected ordering, all, W1..W5 or a size S, M, L)")
    if sizes and not workloads:
        parser.error("sizes given without a workload (e.g. W1 M)")
    if args.repeat < 1:
        parser.error(f"--repeat must be at least 1, got {args.repeat}")
    if args.cycles < 1 or args.warmup < 0 or args.churn < 0:
        parser.error("--cycles must be at least 1, --warmup and --churn at least 0")
    formats = _split(args.formats)
    for fmt in formats:
        if fmt not in FORMATS:
            parser.error(f"unknown format {fmt!r} (expected {', '.join(FORMATS)})")
    try:
        pairs = selection(workloads, sizes or [s.upper() for s in _split(args.sizes)]) if workloads else []
    except BenchmarkError as exc:
        parser.error(str(exc))

    document: dict[str, Any] = {}
    status = 0
    if run_ordering:
        from benchmarks import ordering

        result = ordering.run()
        json.dump(result, sys.stdout, indent=2, sort_keys=True)
        print()
        document = result
    if pairs:
        records: list[dict[str, Any]] = []
        runs = [(w, s, fmt) for w, s in pairs for fmt in formats]
        for workload, size, fmt in runs:
            label = f"{workload}-{size}-{fmt}"
            profile = None if args.profile is None else _profile_path(args.profile, label, len(runs) > 1)
            print(f"running {workload}-{size} ({fmt}) ...", file=sys.stderr, flush=True)
            try:
                record = run_workload(
                    workload,
                    size,
                    seed=args.seed,
                    fmt=fmt,
                    profile=profile,
                    directory=args.generated,
                    repeat=args.repeat,
                    cycles=args.cycles,
                    warmup=args.warmup,
                    churn=args.churn,
                )
            except BenchmarkError as exc:
                print(f"error: {exc}", file=sys.stderr)
                status = 1
                continue
            records.append(record)
            if workload in STEADY:
                print(steady_line(record), file=sys.stderr, flush=True)
                continue
            print(
                f"  load {record['load_seconds']:.3f} s, session {record['session_seconds']:.3f} s, "
                f"{record['binds']} binds, {record['evictions']} evictions",
                file=sys.stderr,
                flush=True,
            )
        if records:
            print(table(records))
        workloads_doc: dict[str, Any] = {
            "python": platform.python_version(),
            "python_implementation": platform.python_implementation(),
            "platform": platform.platform(terse=True),
            "seed": args.seed,
            "results": records,
        }
        document = {**workloads_doc, "ordering": document} if run_ordering else workloads_doc
    out = args.out or Path("bench-results") / ("workloads.json" if pairs else "ordering.json")
    out.parent.mkdir(parents=True, exist_ok=True)
    out.write_text(json.dumps(document, indent=2) + "\n")
    print(f"results written to {out}", file=sys.stderr)
    return status


if __name__ == "__main__":
    raise SystemExit(main())
