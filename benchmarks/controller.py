"""The job controller's cost over one job's whole life, by job size.

    python -m benchmarks.controller                 # 100, 1,000 and 10,000 pods, 5 runs each
    python -m benchmarks.controller --pods 2000 --repeat 9

One Volcano Job of N pods (one task, PodEvicted -> RestartJob) goes through
its life: submitted, PodGroup admitted, every pod Running, one pod evicted
(the whole job restarts), admitted again, every pod Running, every pod
Succeeded (Completed). The controller's writes are applied by a minimal
loop (a deleted pod is gone at once). The figure is the median wall time of
the runs, and the calls and writes it took.
"""

from __future__ import annotations

import argparse
import statistics
import time
from collections import deque
from typing import Any

from volcanolib.controllers import Change, CreatePod, DeletePod, JobController

NS = "bench"


def _job(pods: int) -> dict[str, Any]:
    container = {"name": "c", "image": "busybox", "resources": {"requests": {"cpu": "1"}}}
    return {
        "apiVersion": "batch.volcano.sh/v1alpha1",
        "kind": "Job",
        "metadata": {"name": "j", "namespace": NS, "uid": "u1"},
        "spec": {
            "policies": [{"event": "PodEvicted", "action": "RestartJob"}],
            "tasks": [{"name": "t", "replicas": pods, "template": {"spec": {"containers": [container]}}}],
        },
    }


def life(pods: int) -> tuple[float, int, int]:
    """Run one job's life; returns (seconds, controller calls, writes)."""
    ctrl = JobController()
    alive: set[str] = set()
    calls = writes = 0

    def apply(changes: list[Change]) -> None:
        nonlocal calls, writes
        queue = deque(changes)
        while queue:
            change = queue.popleft()
            writes += 1
            if isinstance(change, CreatePod):
                alive.add(change.manifest["metadata"]["name"])
            elif isinstance(change, DeletePod):
                alive.discard(change.name)
                calls += 1
                queue.extend(ctrl.pod_deleted(NS, change.name, now=0.0))

    def each(phase: str) -> None:
        nonlocal calls
        for name in sorted(alive):
            calls += 1
            apply(ctrl.pod_phase(NS, name, phase, now=0.0))

    start = time.perf_counter()
    apply(ctrl.submit(_job(pods), now=0.0))
    apply(ctrl.pod_group_phase(NS, "j-u1", "Inqueue", now=0.0))
    each("Running")
    victim = min(alive)
    alive.discard(victim)
    apply(ctrl.pod_deleted(NS, victim, now=0.0, evicted=True))
    apply(ctrl.pod_group_phase(NS, "j-u1", "Inqueue", now=0.0))
    each("Running")
    each("Succeeded")
    seconds = time.perf_counter() - start
    assert ctrl.job(NS, "j").phase == "Completed", ctrl.job(NS, "j")
    return seconds, calls + 6, writes


def main(argv: list[str] | None = None) -> int:
    """Parse the command line, run the sizes and print the medians."""
    parser = argparse.ArgumentParser(prog="python -m benchmarks.controller", description=__doc__.splitlines()[0])
    parser.add_argument("--pods", default="100,1000,10000", help="job sizes, comma-separated")
    parser.add_argument("--repeat", type=int, default=5, help="runs per size (the median is shown)")
    args = parser.parse_args(argv)
    print(f"{'pods':>7} {'median s':>9} {'calls':>7} {'writes':>7} {'us/call':>8}")
    for pods in (int(p) for p in args.pods.split(",") if p.strip()):
        runs = [life(pods) for _ in range(max(1, args.repeat))]
        median = statistics.median(r[0] for r in runs)
        _, calls, writes = runs[0]
        print(f"{pods:>7} {median:>9.3f} {calls:>7} {writes:>7} {median / calls * 1e6:>8.1f}")
    return 0


if __name__ == "__main__":
    raise SystemExit(main())
