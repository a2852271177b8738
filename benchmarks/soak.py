"""Soak: many consecutive cycles of a large cluster with jobs arriving and finishing; no task may be lost.

Every cycle, new gang jobs arrive (seeded), the scheduler runs one cycle of
enqueue, allocate, preempt, reclaim and backfill with the default plugins,
bound pods start, running pods finish after a few cycles, and jobs whose pods
have all finished are deleted, as a job controller's garbage collection would.
Optionally the binder fails a fraction of its calls. At the end every
submitted task is accounted for: finished (bound exactly once), evicted, or
still pending or running; the cache's bookkeeping is checked every few
cycles. Memory is measured: peak RSS, and with tracemalloc the traced memory
after the warm-up cycles and at the end. Figures are printed as JSON; nothing
here asserts a timing.

    python benchmarks/soak.py --cycles 200 --nodes 1000
"""

from __future__ import annotations

import argparse
import gc
import json
import random
import resource
import statistics
import sys
import time
import tracemalloc
from collections.abc import Sequence
from typing import Any

from volcanolib import InMemoryCache, Scheduler, TaskInfo, TaskStatus
from volcanolib.testing import build_node, build_pod_group, build_queue, build_task

__all__ = ["SoakError", "main", "run_soak"]

CONF = """
actions: "enqueue, allocate, preempt, reclaim, backfill"
tiers:
- plugins:
  - name: priority
  - name: gang
  - name: conformance
- plugins:
  - name: drf
  - name: predicates
  - name: proportion
  - name: nodeorder
  - name: binpack
"""
QUEUES = ("default", "batch", "research", "prod")


class SoakError(AssertionError):
    """A task was lost, bound twice, or the cache's bookkeeping went wrong."""


class CountingBinder:
    """Binds, failing each task with probability ``fail`` (seeded); counts successful binds per task."""

    def __init__(self, seed: int, fail: float) -> None:
        self.rng = random.Random(seed)
        self.fail = fail
        self.bound: dict[str, int] = {}
        self.failures = 0

    def bind(self, tasks: Sequence[TaskInfo]) -> Sequence[TaskInfo]:
        failed = [t for t in tasks if self.fail and self.rng.random() < self.fail]
        self.failures += len(failed)
        refused = {t.uid for t in failed}
        for task in tasks:
            if task.uid not in refused:
                self.bound[task.uid] = self.bound.get(task.uid, 0) + 1
        return failed


def _rss_mib() -> float:
    peak = resource.getrusage(resource.RUSAGE_SELF).ru_maxrss
    return peak / 1024 if sys.platform != "darwin" else peak / (1024 * 1024)


def run_soak(
    *,
    cycles: int = 200,
    nodes: int = 1000,
    arrivals: int | None = None,
    seed: int = 0,
    bind_failure: float = 0.02,
    check_every: int = 10,
    warmup: int = 10,
    trace_memory: bool = True,
) -> dict[str, Any]:
    """Run the soak and return its figures.

    The harness keeps books on live tasks only (a task leaves them when it
    is collected or evicted, after its checks), so the memory it measures
    is the scheduler's and the cache's, not a growing record of the past.

    :param arrivals: jobs arriving per cycle (default: one per 15 nodes).
    :raises SoakError: when a task is lost or bound twice, or the cache's
        bookkeeping is inconsistent.
    """
    rng = random.Random(seed)
    arrivals = arrivals if arrivals is not None else max(1, nodes // 15)
    binder = CountingBinder(seed, bind_failure)
    cache = InMemoryCache(binder=binder)
    cache.add_priority_class("low", 10, global_default=True)
    cache.add_priority_class("high", 1000)
    for i, name in enumerate(QUEUES):
        if name != "default":
            cache.add_queue(build_queue(name, weight=1 + i))
    for i in range(nodes):
        scalars = {"nvidia.com/gpu": "4"} if i % 10 == 0 else None
        cache.add_node(build_node(f"node-{i:05d}", cpu="4", memory="16Gi", pods=110, scalars=scalars))
    scheduler = Scheduler(cache, CONF, seed=seed)

    live: dict[str, str] = {}  # task uid -> job uid, while the task is in the cache
    started_at: dict[str, int] = {}  # task uid -> cycle it started running
    lifetime: dict[str, int] = {}  # task uid -> cycles it runs
    jobs_open: dict[str, set[str]] = {}  # job uid -> its task uids still in the cache
    submitted = finished = evicted = job_count = binds = checks = 0
    session_seconds: list[float] = []
    traced: dict[int, float] = {}  # cycle -> traced MiB after it
    gc.collect()
    if trace_memory:
        tracemalloc.start()
    wall = time.perf_counter()

    def leave(uid: str, *, bound: bool) -> None:
        """A task leaves the books; a finished one must have been bound exactly once, an evicted one once."""
        nonlocal binds
        count = binder.bound.pop(uid, 0)
        if count > 1 or (bound and count != 1):
            raise SoakError(f"task {uid} was bound {count} times")
        binds += count
        del live[uid]
        lifetime.pop(uid, None)
        started_at.pop(uid, None)

    for cycle in range(cycles):
        # arrivals
        for _ in range(arrivals):
            name = f"job-{job_count:06d}"
            job_count += 1
            size = rng.choice((1, 1, 2, 4, 8))
            high = rng.random() < 0.1
            cache.add_pod_group(
                build_pod_group(
                    name,
                    queue=rng.choice(QUEUES),
                    min_member=rng.randint(1, size),
                    priority_class_name="high" if high else "",
                    phase="Pending",
                    creation_timestamp=float(cycle),
                )
            )
            uids: set[str] = set()
            cpu = rng.choice(("500m", "1", "2", "4"))
            memory = rng.choice(("1Gi", "2Gi", "4Gi"))
            gpus = {"nvidia.com/gpu": "1"} if rng.random() < 0.05 else None
            run_for = rng.randint(2, 12)
            for t in range(size):
                task = build_task(
                    f"{name}-w-{t}",
                    job=name,
                    cpu=cpu,
                    memory=memory,
                    scalars=gpus,
                    priority=1000 if high else 10,
                    creation_timestamp=float(cycle),
                )
                cache.add_task(task)
                submitted += 1
                live[task.uid] = f"default/{name}"
                lifetime[task.uid] = run_for
                uids.add(task.uid)
            jobs_open[f"default/{name}"] = uids

        result = scheduler.run_once()
        session_seconds.append(result.timings["session"])
        if result.plugin_errors:
            raise SoakError(f"cycle {cycle}: plugin errors {result.plugin_errors}")

        # the cluster between cycles: evicted pods go, bound pods start, running pods finish
        for task in cache.finish_evictions():
            evicted += 1
            jobs_open[task.job].discard(task.uid)
            leave(task.uid, bound=False)
        for task in cache.start_bound_tasks():
            started_at[task.uid] = cycle
        for uid, since in list(started_at.items()):
            if cycle - since >= lifetime[uid]:
                cache.set_task_phase(uid, TaskStatus.SUCCEEDED)
                del started_at[uid]
        # garbage collection of jobs whose pods have all finished
        for job_uid, uids in list(jobs_open.items()):
            tasks = [cache.get_task(uid) for uid in uids]
            if all(t is not None and t.status is TaskStatus.SUCCEEDED for t in tasks):
                for uid in uids:
                    cache.delete_task(uid)
                    finished += 1
                    leave(uid, bound=True)
                namespace, name = job_uid.split("/", 1)
                cache.delete_pod_group(namespace, name)
                del jobs_open[job_uid]

        if check_every and (cycle + 1) % check_every == 0:
            problems = cache.consistency_problems()
            checks += 1
            if problems:
                raise SoakError(f"cycle {cycle}: {problems[:5]}")
        if trace_memory and (cycle + 1 == warmup or (check_every and (cycle + 1) % check_every == 0)):
            gc.collect()
            traced[cycle + 1] = round(tracemalloc.get_traced_memory()[0] / 2**20, 2)

    wall = time.perf_counter() - wall
    gc.collect()
    traced_end, traced_peak = tracemalloc.get_traced_memory() if trace_memory else (0, 0)
    if trace_memory:
        tracemalloc.stop()

    # every submitted task is accounted for
    present = {t.uid: t for t in cache.tasks()}
    by_status: dict[str, int] = {}
    for task in present.values():
        by_status[str(task.status)] = by_status.get(str(task.status), 0) + 1
    if set(present) != set(live):
        lost = sorted(set(live) - set(present))
        raise SoakError(f"{len(lost)} task(s) lost, e.g. {lost[:3]}")
    twice = [uid for uid, n in binder.bound.items() if n != 1]
    if twice:
        raise SoakError(f"{len(twice)} task(s) bound more than once, e.g. {twice[:3]}")
    binds += sum(binder.bound.values())
    if submitted != finished + evicted + len(present):
        raise SoakError("counts do not add up")
    problems = cache.consistency_problems()
    if problems:
        raise SoakError(f"at the end: {problems[:5]}")
    after_warmup = next((mib for cycle, mib in traced.items() if cycle >= warmup), 0.0)

    return {
        "cycles": cycles,
        "nodes": nodes,
        "seed": seed,
        "bind_failure": bind_failure,
        "jobs_submitted": job_count,
        "tasks_submitted": submitted,
        "tasks_finished": finished,
        "tasks_evicted": evicted,
        "tasks_present": len(present),
        "tasks_present_by_status": dict(sorted(by_status.items())),
        "binds": binds,
        "bind_failures": binder.failures,
        "consistency_checks": checks + 1,
        "session_seconds_median": round(statistics.median(session_seconds), 4),
        "session_seconds_max": round(max(session_seconds), 4),
        "wall_seconds": round(wall, 2),
        "peak_rss_mib": round(_rss_mib(), 1),
        "tracemalloc": trace_memory,
        "traced_mib_after_warmup": after_warmup,
        "traced_mib_end": round(traced_end / 2**20, 2),
        "traced_mib_peak": round(traced_peak / 2**20, 2),
        "traced_mib_by_cycle": {str(cycle): mib for cycle, mib in traced.items()},
    }


def main(argv: Sequence[str] | None = None) -> int:
    """Run the soak from the command line; print the figures as JSON. Exit status 1 when a check fails."""
    parser = argparse.ArgumentParser(prog="soak", description=__doc__.split("\n\n")[0])
    parser.add_argument("--cycles", type=int, default=200)
    parser.add_argument("--nodes", type=int, default=1000)
    parser.add_argument("--arrivals", type=int, default=None, help="jobs per cycle (default: nodes / 15)")
    parser.add_argument("--seed", type=int, default=0)
    parser.add_argument("--bind-failure", type=float, default=0.02, help="fraction of binds that fail")
    parser.add_argument("--check-every", type=int, default=10, help="check the cache's bookkeeping every N cycles")
    parser.add_argument("--no-tracemalloc", action="store_true", help="measure peak RSS only (faster)")
    args = parser.parse_args(argv)
    try:
        figures = run_soak(
            cycles=args.cycles,
            nodes=args.nodes,
            arrivals=args.arrivals,
            seed=args.seed,
            bind_failure=args.bind_failure,
            check_every=args.check_every,
            trace_memory=not args.no_tracemalloc,
        )
    except SoakError as exc:
        print(json.dumps({"error": str(exc)}), file=sys.stderr)
        return 1
    print(json.dumps(figures, indent=2))
    return 0


if __name__ == "__main__":
    sys.exit(main())
