"""Volcano's controller manager and ``volcanolib controllers`` on the same Jobs, each on a fresh real API server.

Examples::

    python -m benchmarks live-controllers                         # 1,000 Jobs of 10 pods, both sides
    python -m benchmarks live-controllers --jobs 100 --sides volcanolib
    python -m benchmarks live-controllers --volcano-arg=--kube-api-qps=1000 --volcano-arg=--kube-api-burst=1000

For each side in turn: a fresh control plane (``tools/cluster``), the
``default`` Queue (Open), and the side's whole flow as processes
(``tools/volcanobin.py``'s ``Flow``): ``volcanolib kubelet-sim`` with
``--nodes`` nodes (pods Running a second after their bind), then the side's
scheduler and controllers, both Volcano's (``vc-scheduler`` and
``vc-controller-manager`` with its job, PodGroup, queue and garbage
collection controllers, built from the pinned Volcano release, at
Volcano's own default settings unless ``--volcano-arg`` says otherwise) or
both volcanolib's (``serve`` and ``controllers``); a Job needs a
scheduler to leave Pending, and each side's controllers run with their own
side's scheduler. Then ``apiload`` creates every Job at once (``--jobs``
Jobs of ``--pods`` pods, each one task, ``minAvailable`` all of them, pods
that run until deleted) and Go watchers follow the Jobs' phases and the
pods' phases. Measured from the first creation: the first Job Running,
Jobs Running per second (10th to 90th percentile), every Job Running;
when the pods were made, and the first and the last pod Running; each process's CPU seconds; the load
average (the machine may be shared). Records go to
``bench-results/live-controllers.json``, a table to stdout.
"""

from __future__ import annotations

import argparse
import json
import os
import platform
import sys
import time
from datetime import date
from pathlib import Path
from typing import Any

from benchmarks.live import NAMESPACE, ROOT, Usage, default_queue, fresh_plane, load_average

sys.path.insert(0, str(ROOT / "tools"))

import volcanobin

JOBS = f"/apis/batch.volcano.sh/v1alpha1/namespaces/{NAMESPACE}/jobs"
SHAPE = ("--cpu", "16", "--memory", "64Gi", "--pods", "110")
POD_REQUEST = {"cpu": "100m", "memory": "128Mi"}


def jobs(count: int, pods: int) -> list[dict[str, Any]]:
    """``count`` Jobs of one task of ``pods`` pods, with the defaults Volcano's webhook would add written out."""
    container = {"name": "main", "image": "busybox", "resources": {"requests": POD_REQUEST}}
    template = {"spec": {"containers": [container], "restartPolicy": "Never"}}
    task = {"name": "worker", "replicas": pods, "minAvailable": pods, "maxRetry": 3, "template": template}
    spec = {"schedulerName": "volcano", "queue": "default", "maxRetry": 3, "minAvailable": pods, "tasks": [task]}
    return [
        {"path": JOBS, "body": {"apiVersion": "batch.volcano.sh/v1alpha1", "kind": "Job",
                                "metadata": {"name": f"job-{i}", "namespace": NAMESPACE}, "spec": spec}}
        for i in range(count)
    ]  # fmt: skip


def _rate(times: list[float], expected: int) -> float | None:
    """Per second from the 10th to the 90th percentile of ``expected``."""
    times = sorted(times)
    low, high = int(0.1 * (expected - 1)), int(0.9 * (expected - 1))
    if high < len(times) and times[high] > times[low]:
        return round((high - low) / (times[high] - times[low]), 1)
    return None


def _first_times(changes: list[tuple[float, str, str]], value: str | None = None) -> list[float]:
    """Each object's first change (to ``value`` when given)."""
    first: dict[str, float] = {}
    for t, key, v in changes:
        if (value is None or v == value) and key not in first:
            first[key] = t
    return list(first.values())


def run_side(side: str, args: argparse.Namespace, logs: Path) -> dict[str, Any]:
    """All the Jobs on one side, until every one is Running (or ``--timeout``)."""
    expected_pods = args.jobs * args.pods
    record: dict[str, Any] = {"side": side, "jobs": args.jobs, "pods_per_job": args.pods, "nodes": args.nodes,
                              "load_average_before": load_average()}  # fmt: skip
    extra = args.volcano_arg if side == "volcano" else []
    record["controllers_args"] = list(extra)
    conf = logs / "volcano-scheduler.conf"
    with fresh_plane() as plane:
        volcanobin.post(plane.kubeconfig, default_queue())
        flow = volcanobin.Flow(side, plane.kubeconfig, conf, logs, nodes=args.nodes, shape=SHAPE,
                               controllers_extra=extra)  # fmt: skip
        flow.start()
        phases = volcanobin.Watch(plane.kubeconfig, JOBS, "status.state.phase")
        pods = volcanobin.Watch(plane.kubeconfig, f"/api/v1/namespaces/{NAMESPACE}/pods", "status.phase")
        try:
            assert phases.synced.wait(60) and pods.synced.wait(60), "the watches could not list"
            time.sleep(args.settle)  # the controllers and the scheduler have listed the (empty) cluster
            usage = {name: Usage(process.pid) for name, process in flow.processes.items()}
            server = Usage(plane.pid)
            started = time.time()
            created = volcanobin.post(plane.kubeconfig, jobs(args.jobs, args.pods), workers=args.workers)
            record["create_seconds"] = round(created["seconds"], 2)

            def all_running(seen: list[tuple[float, str, str]]) -> bool:
                return len({key for _t, key, v in seen if v == "Running"}) >= args.jobs

            phases.wait(all_running, args.timeout)
            running = sorted(_first_times(phases.changes, "Running"))
            made = sorted(_first_times(pods.changes))
            pods_running = sorted(_first_times(pods.changes, "Running"))
            record.update(
                jobs_running=len(running),
                first_job_running_seconds=round(running[0] - started, 2) if running else None,
                all_jobs_running_seconds=round(running[-1] - started, 2) if len(running) >= args.jobs else None,
                last_job_running_seconds=round(running[-1] - started, 2) if running else None,
                jobs_running_per_second=_rate(running, args.jobs),
                pods_made=len(made),
                all_pods_made_seconds=round(made[-1] - started, 2) if len(made) >= expected_pods else None,
                pods_made_per_second=_rate(made, expected_pods),
                pods_running=len(pods_running),
                first_pod_running_seconds=round(pods_running[0] - started, 2) if pods_running else None,
                all_pods_running_seconds=(
                    round(pods_running[-1] - started, 2) if len(pods_running) >= expected_pods else None
                ),
                pods_running_per_second=_rate(pods_running, expected_pods),
                cpu_seconds={name: u.since_start() for name, u in usage.items()},
                apiserver_cpu_seconds=server.since_start(),
                peak_rss_mib={name: u.peak_mib() for name, u in usage.items()},
                load_average_after=load_average(),
            )
        finally:
            phases.stop()
            pods.stop()
            flow.stop()
    return record


def table(records: list[dict[str, Any]], release: str) -> str:
    """Both sides' figures, in Markdown."""
    by = {r["side"]: r for r in records}

    def cell(side: str, key: str, unit: str = "") -> str:
        record = by.get(side)
        if record is None:
            return "not run"
        value = record.get(key)
        if value is None and key == "all_jobs_running_seconds":
            return f"{record['jobs_running']} of {record['jobs']} in {record['last_job_running_seconds']} s"
        if isinstance(value, dict):
            return ", ".join(f"{k} {v}" for k, v in value.items())
        return "n/a" if value is None else f"{value}{unit}"

    rows = [
        ("first Job Running", "first_job_running_seconds", " s"),
        ("Jobs Running per second (10th to 90th percentile)", "jobs_running_per_second", ""),
        ("every Job Running", "all_jobs_running_seconds", " s"),
        ("pods made per second", "pods_made_per_second", ""),
        ("every pod made", "all_pods_made_seconds", " s"),
        ("first pod Running", "first_pod_running_seconds", " s"),
        ("every pod Running", "all_pods_running_seconds", " s"),
        ("CPU seconds by process", "cpu_seconds", ""),
        ("API server CPU seconds", "apiserver_cpu_seconds", ""),
    ]
    lines = [f"| figure | {release} | volcanolib |", "|---|---|---|"]
    lines += [
        f"| {label} | {cell('volcano', key, unit)} | {cell('volcanolib', key, unit)} |" for label, key, unit in rows
    ]
    return "\n".join(lines)


def main(argv: list[str]) -> int:
    """``python -m benchmarks live-controllers ...``."""
    parser = argparse.ArgumentParser(prog="python -m benchmarks live-controllers", description=__doc__,
                                     formatter_class=argparse.RawDescriptionHelpFormatter)  # fmt: skip
    parser.add_argument("--jobs", type=int, default=1000, help="Jobs created at once (default 1,000)")
    parser.add_argument("--pods", type=int, default=10, help="pods per Job (default 10)")
    parser.add_argument("--nodes", type=int, default=100, help="kubelet-sim nodes of 110 pods each (default 100)")
    parser.add_argument("--sides", default=",".join(volcanobin.SIDES), help="volcano, volcanolib (default both)")
    parser.add_argument("--timeout", type=float, default=1200, help="seconds until every Job runs (default 1200)")
    parser.add_argument("--settle", type=float, default=5, help="seconds between the start and the Jobs (default 5)")
    parser.add_argument("--workers", type=int, default=32, help="connections creating the Jobs (default 32)")
    parser.add_argument(
        "--volcano-arg", action="append", default=[], metavar="--FLAG=VALUE", help="a flag for Volcano's controllers"
    )
    parser.add_argument("--out", type=Path, default=Path("bench-results/live-controllers.json"))
    args = parser.parse_args(argv[1:])
    sides = [s.strip() for s in args.sides.split(",") if s.strip()]
    if any(s not in volcanobin.SIDES for s in sides):
        parser.error(f"--sides: expected {', '.join(volcanobin.SIDES)}")
    if args.jobs * args.pods > args.nodes * 110:
        parser.error(f"{args.jobs * args.pods} pods do not fit {args.nodes} nodes of 110 pods")

    from volcanolib.framework.config import DEFAULT_CONFIG_TEXT

    logs = args.out.parent / "live-controllers-logs"
    logs.mkdir(parents=True, exist_ok=True)
    (logs / "volcano-scheduler.conf").write_text(DEFAULT_CONFIG_TEXT)
    release = volcanobin.volcano_release()
    records: list[dict[str, Any]] = []
    document = {"date": date.today().isoformat(), "volcano": release, "python": platform.python_version(),
                "cpus": os.cpu_count(), "records": records}  # fmt: skip
    for side in sides:
        print(f"{side} ...", file=sys.stderr, flush=True)
        records.append(run_side(side, args, logs))
        print(json.dumps(records[-1]), file=sys.stderr, flush=True)
        args.out.write_text(json.dumps(document, indent=2) + "\n")
    print(f"Measured {document['date']}, {release}, {os.cpu_count()} CPUs, {args.jobs} Jobs of {args.pods} pods\n")
    print(table(records, release.replace("volcano.sh/volcano ", "Volcano ")))
    print(f"\nrecords written to {args.out}", file=sys.stderr)
    return 0
