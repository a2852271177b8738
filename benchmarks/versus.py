"""volcanolib and the real Volcano (the oracle) on the same workloads, in the same run.

::

    python -m benchmarks versus W1 W2 W3 W4 --sizes S,M [--repeat N] [--timeout SECONDS] [--out FILE]

For each workload file (generated as the other benchmarks generate it), both
schedulers run as whole processes, in turn, ``--repeat`` times:

* volcanolib: ``python -m volcanolib simulate FILE --json --timings``;
* Volcano: ``tools/oracle simulate FILE --timings`` (its scheduler cache,
  session, actions and plugins in-process, built from the release the oracle
  pins).

It reports, medians over the repeats: the session time (snapshot or open
through close, as each reports it, wall clock), the whole process (start to
exit, the files read included; wall clock and CPU time, user and system, of
all its threads: Volcano checks predicates on 16 threads), and the peak memory (the process's maximum resident
set); and the number of binds and evictions of each, so that a ratio is
never read without knowing that the two did the same amount of work.

A Volcano run that does not finish within ``--timeout`` seconds is stopped
and reported as such (the large workloads can take Volcano an hour).
"""

from __future__ import annotations

import argparse
import json
import os
import statistics
import subprocess
import sys
import tempfile
import time
from datetime import date
from pathlib import Path
from typing import Any

from benchmarks.workloads import GENERATED, WORKLOAD_SIZES, ensure_workload

ROOT = Path(__file__).resolve().parents[1]
ORACLE = ROOT / "tools" / "oracle"


#: The oracle collects garbage less often by default (GOGC 400, for the differential tests' many small
#: scenarios); here it runs with Go's default, as Volcano's scheduler does in a cluster.
ORACLE_ENV = {**os.environ, "GOGC": "100"}


def _run(command: list[str], timeout: float, env: dict[str, str] | None = None) -> dict[str, Any]:
    """Run a command to completion; its JSON output, wall seconds and peak RSS (MiB), or a timeout."""
    with tempfile.TemporaryFile() as out, tempfile.TemporaryFile() as err:
        started = time.perf_counter()
        proc = subprocess.Popen(command, stdout=out, stderr=err, env=env)
        deadline = started + timeout
        while True:
            pid, status, usage = os.wait4(proc.pid, os.WNOHANG)
            if pid:
                break
            if time.perf_counter() > deadline:
                proc.kill()
                os.wait4(proc.pid, 0)
                return {"timeout": True, "wall_seconds": round(time.perf_counter() - started, 3)}
            time.sleep(0.02)
        wall = time.perf_counter() - started
        proc.returncode = os.waitstatus_to_exitcode(status)
        if proc.returncode != 0:
            err.seek(0)
            tail = err.read().decode(errors="replace").strip().splitlines()[-1:] or ["(no message)"]
            raise RuntimeError(f"{' '.join(command[:3])} exited {proc.returncode}: {tail[0]}")
        out.seek(0)
        result = json.loads(out.read())
    return {
        "timeout": False,
        "wall_seconds": round(wall, 3),
        "cpu_seconds": round(usage.ru_utime + usage.ru_stime, 3),
        "peak_mib": round(usage.ru_maxrss / 1024, 1),
        "session_seconds": round(float(result["timings"]["session"]), 4),
        "binds": len(result["binds"]),
        "evictions": len(result["evictions"]),
    }


def _median(runs: list[dict[str, Any]], key: str) -> float | None:
    values = [r[key] for r in runs if not r.get("timeout") and key in r]
    return round(statistics.median(values), 4) if values else None


def compare_workload(path: Path, *, repeat: int, timeout: float) -> dict[str, Any]:
    """Run volcanolib and the oracle on one file ``repeat`` times each, interleaved; their medians."""
    ours: list[dict[str, Any]] = []
    theirs: list[dict[str, Any]] = []
    for _ in range(repeat):
        ours.append(_run([sys.executable, "-m", "volcanolib", "simulate", str(path), "--json", "--timings"], timeout))
        theirs.append(_run([str(ORACLE), "simulate", str(path), "--timings"], timeout, ORACLE_ENV))
    record: dict[str, Any] = {}
    for side, runs in (("volcanolib", ours), ("volcano", theirs)):
        record[side] = {
            key: _median(runs, key)
            for key in ("session_seconds", "wall_seconds", "cpu_seconds", "peak_mib", "binds", "evictions")
        }
        record[side]["runs"] = runs
        record[side]["timed_out"] = sum(1 for r in runs if r.get("timeout"))
    for key in ("session_seconds", "wall_seconds", "cpu_seconds", "peak_mib"):
        a, b = record["volcano"][key], record["volcanolib"][key]
        record[f"ratio_{key}"] = round(a / b, 2) if a and b else None
    return record


def table(records: list[dict[str, Any]]) -> str:
    """The side-by-side table, in Markdown."""
    lines = [
        "| workload | session: Volcano / volcanolib (ratio) | whole process (ratio) | whole process CPU (ratio) "
        "| peak memory MiB (ratio) | binds V / vl | evictions V / vl |",
        "|---|---|---|---|---|---|---|",
    ]
    for r in records:
        v, o = r["volcano"], r["volcanolib"]

        def cell(key: str, unit: str = " s", r: dict[str, Any] = r) -> str:
            v, o = r["volcano"], r["volcanolib"]
            if v["timed_out"]:
                return f"over {v['runs'][0]['wall_seconds']:.0f} s / {o[key]}{unit}"
            return f"{v[key]}{unit} / {o[key]}{unit} ({r['ratio_' + key]}x)"

        lines.append(
            f"| {r['workload']}-{r['size']} | {cell('session_seconds')} | {cell('wall_seconds')} "
            f"| {cell('cpu_seconds')} | {cell('peak_mib', '')} | {v['binds']} / {o['binds']} "
            f"| {v['evictions']} / {o['evictions']} |"
        )
    return "\n".join(lines)


def main(argv: list[str]) -> int:
    """``python -m benchmarks versus ...``."""
    parser = argparse.ArgumentParser(prog="python -m benchmarks versus", description=__doc__)
    parser.add_argument("workloads", nargs="*", default=["W1", "W2", "W3", "W4"], help="W1..W4 (default all)")
    parser.add_argument("--sizes", default="S,M", help="comma-separated sizes (default S,M)")
    parser.add_argument("--repeat", type=int, default=3, help="runs of each side, interleaved (default 3)")
    parser.add_argument("--timeout", type=float, default=1800, help="seconds before a run is stopped (default 1800)")
    parser.add_argument("--seed", type=int, default=1, help="the workload generator's seed")
    parser.add_argument("--out", type=Path, default=Path("bench-results/versus.json"))
    args = parser.parse_args(argv[1:])
    records = []
    release = subprocess.run([str(ORACLE), "version"], capture_output=True, text=True, check=True).stdout.strip()
    for workload in args.workloads:
        for size in [s.strip().upper() for s in args.sizes.split(",") if s.strip()]:
            if size not in WORKLOAD_SIZES.get(workload, ""):
                parser.error(f"{workload} has no size {size}")
            path = ensure_workload(workload, size, seed=args.seed, directory=GENERATED)
            print(f"running {workload}-{size} ...", file=sys.stderr, flush=True)
            record = compare_workload(path, repeat=args.repeat, timeout=args.timeout)
            record.update(workload=workload, size=size)
            records.append(record)
            print(table([record]).splitlines()[-1], file=sys.stderr, flush=True)
    print(f"Measured {date.today().isoformat()}, {release}, medians of {args.repeat} interleaved runs\n")
    print(table(records))
    args.out.parent.mkdir(parents=True, exist_ok=True)
    args.out.write_text(
        json.dumps({"date": date.today().isoformat(), "volcano": release, "records": records}, indent=2) + "\n"
    )
    return 0
