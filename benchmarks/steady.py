"""W5, the steady state: the W1 cluster with every pod running, then cycles of arrivals and finishes.

A live scheduler, or a replay, keeps one :class:`~volcanolib.InMemoryCache`
and one :class:`~volcanolib.Scheduler` for hours; each cycle sees a few new
pods and a few finished ones among tens of thousands that did not change.
W5 measures such a cycle::

    python -m benchmarks.steady FILE --size M --result OUT.json [--cycles 10 --warmup 2 --churn 500]

``FILE`` is a W1 workload (:mod:`benchmarks.gen_workload`). Setup, not
measured as a cycle: the file is loaded, fed to the cache, and one session
of the W1 configuration (enqueue, allocate, backfill, default tiers) places
every pod; the bound pods then start (``start_bound_tasks``), and one cycle
with nothing new (``settle``) sees them running, which moves their
PodGroups from Inqueue to Running (while a PodGroup is Inqueue, admission
still reserves its minimum, as Volcano's does). The cluster is then about a
third full (W1 pods ask 1 cpu of a node's 32), so arrivals always find
room.

Each cycle then, in this order:

1. ``events``: the cache takes the changes since the last cycle. ``churn``
   running pods finish, the oldest first (first the W1 jobs, in name order;
   after them the arrivals, in arrival order): each is marked Succeeded,
   then deleted, and a PodGroup whose pods are all gone is deleted, as a job
   controller collects a finished job. With the default churn (500, a
   multiple of W1's gangs of 100) whole jobs finish. Then ``churn`` new
   pods arrive (1 cpu, 2Gi, like W1's), in gangs of ``gang`` (10) pods,
   each gang a Pending PodGroup of minMember ``gang`` in the default queue.
   The new pods are built before the clock starts; only feeding them to the
   cache is timed.
2. ``Scheduler.run_once()``: ``snapshot``, ``open``, each action, ``close``
   (the Scheduler's own timings; ``session`` is their whole, the cycle the
   issue's target speaks of), and ``run_once_other``, what ``run_once``
   costs around the session: mostly the cyclic garbage collector, which
   the Scheduler pauses during the session and which runs as soon as the
   pause ends.
3. ``release``: the cycle's result is dropped. This frees nothing today:
   plugins keep the last session until the next one opens, and a session
   holds reference cycles, so the collector frees it later.
4. ``start``: the bound pods start running (``start_bound_tasks``, as the
   replay runner does between sessions).

``wall`` is the four together; ``gc`` is the collector's time within them
(wherever it fell, read from ``gc.callbacks``). The collector is left as a
long-lived process has it: paused by the Scheduler during the session,
running otherwise. After ``warmup`` cycles, ``cycles`` cycles are measured
and their medians reported (a median per part: the parts' medians need not
add up to the median cycle). Every cycle's figures, binds and the count of
pending pods after it are in the record, so a run shows that the arrivals
were bound (the benchmark measures real scheduling). Runs are
deterministic: the W1 file is seeded, and so are the scheduler's
tie-breaks; ``decisions_sha256`` digests every bind and eviction of every
cycle, so two versions of the library can be checked for the same
decisions.

``--profile F.prof`` profiles one extra cycle after the measured ones (so
the profiler's overhead stays out of the figures).
"""

from __future__ import annotations

import argparse
import cProfile
import gc
import hashlib
import platform
import statistics
import sys
import time
from collections import deque
from collections.abc import Callable
from pathlib import Path
from typing import Any, Final

from benchmarks.measure import peak_rss_mib, write_record
from volcanolib import InMemoryCache, Scheduler, TaskInfo, TaskStatus
from volcanolib.api.job import PodGroup
from volcanolib.sim import load_scenario
from volcanolib.testing import build_pod_group, build_resource, build_task

__all__ = ["CHURN", "CYCLES", "GANG", "WARMUP", "SteadyStateError", "steady_state"]

#: Pods that arrive, and pods that finish, per cycle.
CHURN: Final = 500
#: Pods per arriving gang (its minMember).
GANG: Final = 10
#: Measured cycles, after the warm-up ones.
CYCLES: Final = 10
#: Cycles run before the measured ones.
WARMUP: Final = 2
#: The namespace of the arriving pods and PodGroups.
NAMESPACE: Final = "w5"
#: The simulated time between two cycles (Volcano's schedule period), in seconds.
PERIOD: Final = 1.0
#: The Scheduler's timing keys that are not actions.
_NOT_ACTIONS: Final = frozenset({"snapshot", "open", "close", "session"})


class SteadyStateError(Exception):
    """The steady state could not be set up (the placement session left pods unplaced)."""


class _Clock:
    """The scheduler's clock: set by the benchmark, so that runs repeat exactly."""

    def __init__(self, now: float) -> None:
        self.now = now

    def __call__(self) -> float:
        return self.now


class _GcTimer:
    """The time the cyclic garbage collector runs, read from ``gc.callbacks``, and how many full collections."""

    def __init__(self) -> None:
        self.seconds = 0.0
        self.full = 0
        self._began = 0.0

    def __call__(self, phase: str, info: dict[str, int]) -> None:
        if phase == "start":
            self._began = time.perf_counter()
        else:
            self.seconds += time.perf_counter() - self._began
            if info.get("generation") == 2:
                self.full += 1


class _Books:
    """Which pods finish next: every pod in the cache, oldest job first, and each job's pods left."""

    def __init__(self) -> None:
        #: Task uids in the order they finish.
        self.order: deque[str] = deque()
        #: Task uid -> its job's uid.
        self.job_of: dict[str, str] = {}
        #: Job uid -> how many of its pods are still in the cache.
        self.left: dict[str, int] = {}

    def add(self, job_uid: str, task_uids: list[str]) -> None:
        self.order.extend(task_uids)
        for uid in task_uids:
            self.job_of[uid] = job_uid
        self.left[job_uid] = self.left.get(job_uid, 0) + len(task_uids)


def _arrivals(cycle: int, churn: int, gang: int, now: float) -> list[tuple[PodGroup, list[TaskInfo]]]:
    """The gangs that arrive before ``cycle``: ``churn`` pods of 1 cpu and 2Gi, ``gang`` to a PodGroup."""
    out: list[tuple[PodGroup, list[TaskInfo]]] = []
    count = 0
    j = 0
    while count < churn:
        size = min(gang, churn - count)
        name = f"c{cycle:04d}-g{j:03d}"
        pg = build_pod_group(
            name,
            namespace=NAMESPACE,
            min_member=size,
            queue="default",
            phase="Pending",
            min_resources=build_resource(cpu=str(size), memory=f"{2 * size}Gi"),
            creation_timestamp=now,
        )
        tasks = [
            build_task(
                f"{name}-{k}",
                job=name,
                namespace=NAMESPACE,
                cpu="1",
                memory="2Gi",
                priority=0,
                annotations={"scheduling.k8s.io/group-name": name},
                creation_timestamp=now,
            )
            for k in range(size)
        ]
        out.append((pg, tasks))
        count += size
        j += 1
    return out


def _finish(cache: InMemoryCache, books: _Books, count: int) -> int:
    """Finish the ``count`` oldest running pods: Succeeded, then deleted; collect emptied PodGroups.

    A pod that is not running (an arrival not yet bound) keeps its place for a later cycle.

    :returns: how many pods finished.
    """
    done: list[str] = []
    held: list[str] = []
    while len(done) < count and books.order:
        uid = books.order.popleft()
        task = cache.get_task(uid)
        if task is None:
            continue
        if task.status is TaskStatus.RUNNING:
            done.append(uid)
        else:
            held.append(uid)
    books.order.extendleft(reversed(held))
    for uid in done:
        cache.set_task_phase(uid, TaskStatus.SUCCEEDED)
    emptied: list[str] = []
    for uid in done:
        cache.delete_task(uid)
        job_uid = books.job_of.pop(uid)
        books.left[job_uid] -= 1
        if not books.left[job_uid]:
            del books.left[job_uid]
            emptied.append(job_uid)
    for job_uid in emptied:
        namespace, name = job_uid.split("/", 1)
        cache.delete_pod_group(namespace, name)
    return len(done)


def _count_pods(cache: InMemoryCache) -> tuple[int, int]:
    """(pending, placed) pods in the cache."""
    pending = placed = 0
    for task in cache.tasks():
        if task.status is TaskStatus.PENDING:
            pending += 1
        elif task.node_name:
            placed += 1
    return pending, placed


def _median(values: list[float]) -> float:
    return round(statistics.median(values), 6) if values else 0.0


def steady_state(
    path: str | Path,
    *,
    workload: str = "W5",
    size: str,
    fmt: str = "yaml",
    seed: int = 1,
    cycles: int = CYCLES,
    warmup: int = WARMUP,
    churn: int = CHURN,
    finishes: int | None = None,
    gang: int = GANG,
    profile: str | Path | None = None,
    progress: Callable[[str], Any] | None = None,
    verify: bool = False,
) -> dict[str, Any]:
    """Set up the W1 cluster in ``path`` with every pod running, run the cycles, return the record.

    :param workload: recorded as given (``W5``).
    :param size: ``S``, ``M`` or ``L``, recorded as given.
    :param fmt: the format of ``path``, recorded as given.
    :param seed: the scheduler's tie-break seed.
    :param cycles: measured cycles (at least 1).
    :param warmup: cycles run first and not measured.
    :param churn: pods that arrive per cycle, and pods that finish unless ``finishes`` says otherwise.
    :param finishes: pods that finish per cycle (default ``churn``; 0 shows what arrivals do
        to a cluster without room, which is what the tests check).
    :param gang: pods per arriving PodGroup.
    :param profile: where to write a cProfile ``.prof`` of one extra cycle after the measured ones.
    :param progress: called with one line per cycle (e.g. ``print``).
    :param verify: run the scheduler in verify mode (``docs/incremental.md``), to measure what it costs.
    :raises SteadyStateError: when the placement session leaves a pod unplaced.
    :returns: the record described in ``benchmarks/README.md``.
    """
    finishes = churn if finishes is None else finishes
    if cycles < 1 or warmup < 0 or churn < 0 or finishes < 0 or gang < 1:
        raise ValueError(
            "need cycles >= 1, warmup >= 0, churn >= 0, finishes >= 0, gang >= 1 "
            f"(got {cycles}, {warmup}, {churn}, {finishes}, {gang})"
        )
    start = time.perf_counter()
    scenario = load_scenario([path])
    load_wall = time.perf_counter() - start
    cluster = scenario.cluster

    t0 = time.perf_counter()
    cache = cluster.to_cache()
    cache_seconds = time.perf_counter() - t0
    clock = _Clock(cluster.newest_timestamp + PERIOD)
    scheduler = Scheduler(cache, scenario.config, seed=seed, clock=clock, verify=verify)
    placement = scheduler.run_once()
    placement_seconds = placement.timings["session"]
    placement_binds = len(placement.binds)
    del placement
    cache.start_bound_tasks()
    pending, placed = _count_pods(cache)
    if pending:
        raise SteadyStateError(f"the placement session left {pending} of {pending + placed} pods unplaced")
    # One cycle with nothing new, as a live scheduler's next period: it sees the pods running and
    # moves their PodGroups from Inqueue to Running, so that admission no longer reserves room for them.
    clock.now += PERIOD
    settle = scheduler.run_once()
    settle_seconds = settle.timings["session"]
    settle_binds = len(settle.binds)
    del settle

    books = _Books()
    for job in sorted(cache.jobs(), key=lambda j: (j.creation_timestamp, j.uid)):
        books.add(job.uid, sorted(job.tasks, key=lambda uid: (job.tasks[uid].creation_timestamp, len(uid), uid)))
    rss_after_setup = peak_rss_mib()

    records: list[dict[str, Any]] = []
    collector = _GcTimer()
    decisions = hashlib.sha256()

    def one_cycle(index: int, profiling: bool) -> dict[str, Any]:
        """Run cycle ``index``: its events, ``run_once``, the release of its result, the start of bound pods."""
        clock.now = cluster.newest_timestamp + PERIOD * (index + 3)
        gangs = _arrivals(index, churn, gang, clock.now)
        profiler = cProfile.Profile() if profiling else None
        if profiler is not None:
            profiler.enable()

        gc_before, full_before = collector.seconds, collector.full
        c0 = time.perf_counter()
        finished = _finish(cache, books, finishes)
        for pg, tasks in gangs:
            cache.add_pod_group(pg)
            for task in tasks:
                cache.add_task(task)
        c1 = time.perf_counter()
        result = scheduler.run_once()
        c2 = time.perf_counter()
        timings = dict(result.timings)
        binds = len(result.binds)
        for task, node in result.binds:
            decisions.update(f"bind {task.key} {node}\n".encode())
        for task, reason in result.evictions:
            decisions.update(f"evict {task.key} {reason}\n".encode())
        evictions = len(result.evictions)
        failed = len(result.failed_binds)
        errors = [str(err) for err in result.plugin_errors]
        del result  # frees the closed session and its snapshot
        c3 = time.perf_counter()
        cache.start_bound_tasks()
        c4 = time.perf_counter()
        gc_seconds, full = collector.seconds - gc_before, collector.full - full_before

        if profiler is not None:
            profiler.disable()
            profiler.dump_stats(str(profile))
        for pg, tasks in gangs:
            books.add(f"{pg.namespace}/{pg.name}", [t.uid for t in tasks])
        pending, placed = _count_pods(cache)
        record: dict[str, Any] = {
            "cycle": index,
            "phase": "profile" if profiling else ("warmup" if index < warmup else "measured"),
            "arrivals": sum(len(tasks) for _, tasks in gangs),
            "finishes": finished,
            "binds": binds,
            "evictions": evictions,
            "failed_binds": failed,
            "plugin_errors": errors,
            "pending_after": pending,
            "placed_after": placed,
            "pod_groups_after": len(books.left),
            "events": round(c1 - c0, 6),
            "snapshot": round(timings.get("snapshot", 0.0), 6),
            "open": round(timings.get("open", 0.0), 6),
            "actions": {name: round(sec, 6) for name, sec in timings.items() if name not in _NOT_ACTIONS},
            "close": round(timings.get("close", 0.0), 6),
            "session": round(timings.get("session", 0.0), 6),
            "run_once_other": round(c2 - c1 - timings.get("session", 0.0), 6),
            "release": round(c3 - c2, 6),
            "start": round(c4 - c3, 6),
            "wall": round(c4 - c0, 6),
            "gc": round(gc_seconds, 6),
            "gc_full_collections": full,
        }
        if progress is not None:
            progress(
                f"cycle {index} ({record['phase']}): {record['arrivals']} arrived, {finished} finished, "
                f"{binds} bound, {pending} pending; session {record['session']:.3f} s "
                f"(snapshot {record['snapshot']:.3f}, open {record['open']:.3f}, close {record['close']:.3f}), "
                f"wall {record['wall']:.3f} s (gc {gc_seconds:.3f})"
            )
        return record

    total = warmup + cycles + (1 if profile is not None else 0)
    gc.callbacks.append(collector)
    try:
        for index in range(total):
            records.append(one_cycle(index, profile is not None and index == warmup + cycles))
    finally:
        gc.callbacks.remove(collector)

    measured = [r for r in records if r["phase"] == "measured"]
    action_names = list(measured[0]["actions"])
    parts = {
        "events": _median([r["events"] for r in measured]),
        "snapshot": _median([r["snapshot"] for r in measured]),
        "open": _median([r["open"] for r in measured]),
        **{name: _median([r["actions"].get(name, 0.0) for r in measured]) for name in action_names},
        "close": _median([r["close"] for r in measured]),
        "run_once_other": _median([r["run_once_other"] for r in measured]),
        "release": _median([r["release"] for r in measured]),
        "start": _median([r["start"] for r in measured]),
        "gc": _median([r["gc"] for r in measured]),
    }
    return {
        "workload": workload,
        "kind": "steady",
        "size": size,
        "format": fmt,
        "file": Path(path).name,
        "scenario": scenario.name,
        "seed": seed,
        "verify": verify,
        "nodes": len(cluster.nodes),
        "pods": len(cluster.tasks),
        "pod_groups": len(cluster.pod_groups),
        "queues": len(cluster.queues),
        "churn": churn,
        "finishes": finishes,
        "gang": gang,
        "cycles": cycles,
        "warmup": warmup,
        "actions_configured": list(scenario.config.actions),
        "load_seconds": round(scenario.load_seconds, 6),
        "load_wall_seconds": round(load_wall, 6),
        "cache_seconds": round(cache_seconds, 6),
        "placement_seconds": round(placement_seconds, 6),
        "placement_binds": placement_binds,
        "settle_seconds": round(settle_seconds, 6),
        "settle_binds": settle_binds,
        "cycle_seconds": _median([r["session"] for r in measured]),
        "wall_seconds": _median([r["wall"] for r in measured]),
        "wall_seconds_mean": round(statistics.fmean(r["wall"] for r in measured), 6),
        "wall_seconds_max": max(r["wall"] for r in measured),
        "gc_full_collections": sum(r["gc_full_collections"] for r in measured),
        "parts": parts,
        "cycle_session_seconds": [r["session"] for r in measured],
        "binds_per_cycle": [r["binds"] for r in records],
        "all_bound": all(r["binds"] == r["arrivals"] and r["pending_after"] == 0 for r in records),
        "decisions_sha256": decisions.hexdigest(),
        "cycle_records": records,
        "peak_rss_after_setup_mib": rss_after_setup,
        "peak_rss_mib": peak_rss_mib(),
        "python": platform.python_version(),
        "python_implementation": platform.python_implementation(),
    }


def main(argv: list[str] | None = None) -> int:
    """Run W5 on one W1 file and write its record to ``--result`` (or print it)."""
    parser = argparse.ArgumentParser(
        prog="python -m benchmarks.steady", description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter
    )
    parser.add_argument("file", type=Path, help="a W1 workload file (YAML or JSON)")
    parser.add_argument("--workload", default="W5")
    parser.add_argument("--size", required=True)
    parser.add_argument("--format", dest="fmt", default="yaml", choices=("yaml", "block", "json"))
    parser.add_argument("--seed", type=int, default=1, help="the scheduler's tie-break seed")
    parser.add_argument("--cycles", type=int, default=CYCLES, help=f"measured cycles (default {CYCLES})")
    parser.add_argument("--warmup", type=int, default=WARMUP, help=f"cycles before them (default {WARMUP})")
    parser.add_argument("--churn", type=int, default=CHURN, help=f"pods arriving and finishing per cycle ({CHURN})")
    parser.add_argument("--finishes", type=int, help="pods finishing per cycle (default: the churn)")
    parser.add_argument("--gang", type=int, default=GANG, help=f"pods per arriving PodGroup (default {GANG})")
    parser.add_argument("--profile", type=Path, help="write a cProfile .prof of one extra cycle here")
    parser.add_argument("--verify", action="store_true", help="run the scheduler in verify mode")
    parser.add_argument("--result", type=Path, help="write the JSON record here (default: standard output)")
    args = parser.parse_args(argv)
    try:
        record = steady_state(
            args.file,
            workload=args.workload,
            size=args.size,
            fmt=args.fmt,
            seed=args.seed,
            cycles=args.cycles,
            warmup=args.warmup,
            churn=args.churn,
            finishes=args.finishes,
            gang=args.gang,
            profile=args.profile,
            verify=args.verify,
            progress=lambda line: print(line, file=sys.stderr, flush=True),
        )
    except (SteadyStateError, ValueError) as exc:
        print(f"error: {exc}", file=sys.stderr)
        return 1
    write_record(record, args.result)
    return 0


if __name__ == "__main__":
    raise SystemExit(main())
