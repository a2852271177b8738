"""Measure one workload in this process: load it, run one session, write the figures as JSON.

The runner (:mod:`benchmarks.workloads`) starts this module in a fresh
interpreter per workload, so that peak memory (``ru_maxrss``) and the
interpreter's caches belong to that workload alone::

    python -m benchmarks.measure FILE --workload W1 --size M --result OUT.json [--profile F.prof]

It can also be called in-process through :func:`measure` (the tests do), in
which case the peak memory is that of the calling process.
"""

from __future__ import annotations

import argparse
import cProfile
import json
import os
import platform
import resource
import sys
import time
from pathlib import Path
from typing import Any

from benchmarks import CLOCK_ENV
from volcanolib.sim import load_scenario, run_scenario

__all__ = ["measure", "peak_rss_mib"]

#: Timing keys that are not actions (everything else in ``result.timings`` is one).
_NOT_ACTIONS = frozenset({"load", "cache", "scheduler", "snapshot", "open", "close", "session", "bookkeeping", "total"})


def peak_rss_mib() -> float:
    """This process's peak resident set size so far, in MiB.

    On Linux this is ``VmHWM`` from ``/proc/self/status``, the high-water
    mark of the current program image: ``ru_maxrss`` survives ``exec``, so in
    a subprocess it would start at the size of the parent at ``fork``.
    Elsewhere it is ``ru_maxrss``.
    """
    try:
        with open("/proc/self/status", encoding="ascii") as status:
            for line in status:
                if line.startswith("VmHWM:"):
                    return round(int(line.split()[1]) / 1024, 1)  # kB
    except (OSError, ValueError, IndexError):
        pass
    peak = resource.getrusage(resource.RUSAGE_SELF).ru_maxrss
    # Linux reports KiB, macOS bytes.
    return round(peak / (1024 * 1024 if sys.platform == "darwin" else 1024), 1)


def measure(
    path: str | Path,
    *,
    workload: str,
    size: str,
    fmt: str = "yaml",
    seed: int = 1,
    profile: str | Path | None = None,
) -> dict[str, Any]:
    """Load ``path`` with :func:`load_scenario`, run one session with :func:`run_scenario`, return the figures.

    :param workload: ``W1``..``W4``, recorded as given.
    :param size: ``S``, ``M`` or ``L``, recorded as given.
    :param fmt: ``yaml``, ``block`` or ``json``, the format of ``path``, recorded as given.
    :param seed: the scheduler's tie-break seed.
    :param profile: where to write a cProfile ``.prof`` of the session (cache build included).
    :returns: the record described in ``benchmarks/README.md``.
    """
    start = time.perf_counter()
    scenario = load_scenario([path])
    load_wall = time.perf_counter() - start
    rss_after_load = peak_rss_mib()

    profiler = cProfile.Profile() if profile is not None else None
    if profiler is not None:
        profiler.enable()
    run_start = time.perf_counter()
    result = run_scenario(scenario, sessions=1, seed=seed)
    run_wall = time.perf_counter() - run_start
    if profiler is not None:
        profiler.disable()
        profiler.dump_stats(str(profile))

    timings = dict(result.timings)
    cache_seconds = timings.get("cache", 0.0)
    actions = {name: round(sec, 6) for name, sec in timings.items() if name not in _NOT_ACTIONS}
    cluster = scenario.cluster
    return {
        "workload": workload,
        "size": size,
        "format": fmt,
        "file": Path(path).name,
        "scenario": scenario.name,
        "seed": seed,
        "nodes": len(cluster.nodes),
        "pods": len(cluster.tasks),
        "pod_groups": len(cluster.pod_groups),
        "queues": len(cluster.queues),
        "load_seconds": round(scenario.load_seconds, 6),
        "load_wall_seconds": round(load_wall, 6),
        "cache_seconds": round(cache_seconds, 6),
        "snapshot_seconds": round(timings.get("snapshot", 0.0), 6),
        "open_seconds": round(timings.get("open", 0.0), 6),
        "actions": actions,
        "close_seconds": round(timings.get("close", 0.0), 6),
        "session_seconds": round(timings.get("session", 0.0), 6),
        "run_wall_seconds": round(run_wall, 6),
        "binds": len(result.binds),
        "evictions": len(result.evictions),
        "pipelined": len(result.pipelined),
        "plugin_errors": len(result.plugin_errors),
        "peak_rss_after_load_mib": rss_after_load,
        "peak_rss_mib": peak_rss_mib(),
        "python": platform.python_version(),
        "python_implementation": platform.python_implementation(),
    }


def write_record(record: dict[str, Any], path: Path | None) -> None:
    """Write a measurement's JSON record to ``path``, or to standard output; ``clock`` says which clock timed it."""
    record = {**record, "clock": os.environ.get(CLOCK_ENV, "wall")}
    text = json.dumps(record, indent=2) + "\n"
    if path is not None:
        path.write_text(text)
    else:
        sys.stdout.write(text)


def main(argv: list[str] | None = None) -> int:
    """Measure one workload file and write its record to ``--result`` (or print it)."""
    parser = argparse.ArgumentParser(prog="python -m benchmarks.measure", description=__doc__)
    parser.add_argument("file", type=Path, help="the scenario file (YAML or JSON)")
    parser.add_argument("--workload", required=True)
    parser.add_argument("--size", required=True)
    parser.add_argument("--format", dest="fmt", default="yaml", choices=("yaml", "block", "json"))
    parser.add_argument("--seed", type=int, default=1, help="the scheduler's tie-break seed")
    parser.add_argument("--profile", type=Path, help="write a cProfile .prof of the session here")
    parser.add_argument("--result", type=Path, help="write the JSON record here (default: standard output)")
    args = parser.parse_args(argv)
    record = measure(
        args.file, workload=args.workload, size=args.size, fmt=args.fmt, seed=args.seed, profile=args.profile
    )
    write_record(record, args.result)
    return 0


if __name__ == "__main__":
    raise SystemExit(main())
