"""Volcano's own scheduler and ``volcanolib serve`` side by side, each on a fresh real API server.

Examples::

    python -m benchmarks live                     # small: 500 nodes, 5,000 pending pods; 14,000 running for restart
    python -m benchmarks live --size issue        # the issue's: 5,000 nodes, 50,000 pending; 140,000 running
    python -m benchmarks live --parts bind --sides volcanolib --nodes 1000 --pods 10000

Each part runs each side in turn on a control plane of its own
(``tools/cluster``: kube-apiserver and etcd built from the pinned modules),
started fresh and loaded with the same objects by ``apiload`` (a Go client
that sends them as fast as the server takes them): the Nodes (Ready, as a
kubelet registers them; no kubelet runs, and with no node lifecycle
controller they stay Ready), the ``default`` Queue (Open), then PodGroups
and their pods. Then the scheduler starts as a process of its own:

* ``volcano``: Volcano's scheduler, built from the Volcano release the
  oracle pins (``oracle/cmd/vc-scheduler``, Volcano's own packages);
* ``volcanolib``: ``python -m volcanolib serve``;

both with the same volcano-scheduler.conf (Volcano's default, which is
volcanolib's), a period of one second, and their metrics on a local port.
A Go watcher records each pod's bind as the API server announces it.

Parts:

* ``ceiling``: the API server's own ceiling on binds, on a control plane
  loaded as for ``bind``: ``apiload`` posts every pod's Binding (nodes
  round robin) from many connections, no scheduler running. Its rate of pod
  creations while loading is recorded too.
* ``bind``: ``--pods`` pending pods in gangs of ``--gang`` (PodGroups of
  that ``minMember``) on ``--nodes`` nodes: the time from the scheduler's
  start to its first bind, binds per second from the 10th to the 90th
  percentile of the pods, the time until all are bound, and then the
  steady cycle (the mean of ``volcano_e2e_scheduling_latency_milliseconds``,
  which both export, over ``--steady`` seconds with nothing to do); and
  the decisions: gangs placed, nodes used, pods per node.
* ``restart``: ``--running`` pods already bound and Running (in Running
  PodGroups) and one new pending pod: the time from the scheduler's start
  to that pod's bind, then the steady cycle as above.

For each run it records the scheduler's CPU seconds and peak memory, the
API server's CPU seconds, and the load average (the machine may be shared).
A table goes to stdout, the records to ``bench-results/live.json``.
"""

from __future__ import annotations

import argparse
import contextlib
import http.client
import json
import os
import platform
import re
import statistics
import subprocess
import sys
import threading
import time
import urllib.request
from collections import Counter
from collections.abc import Callable, Iterable, Iterator
from datetime import date
from pathlib import Path
from typing import Any

ROOT = Path(__file__).resolve().parents[1]
sys.path.insert(0, str(ROOT / "tools"))

import volcanobin  # noqa: E402
from controlplane import ControlPlane  # noqa: E402

SIDES = volcanobin.SIDES
PARTS = ("ceiling", "bind", "restart")
#: name -> (nodes, pending pods, running pods)
SIZES = {"small": (500, 5_000, 14_000), "issue": (5_000, 50_000, 140_000)}
NAMESPACE = "default"
PODS = f"/api/v1/namespaces/{NAMESPACE}/pods"
PODGROUPS = f"/apis/scheduling.volcano.sh/v1beta1/namespaces/{NAMESPACE}/podgroups"
QUEUES = "/apis/scheduling.volcano.sh/v1beta1/queues"
#: Every node's capacity; a pending pod's and a running pod's request (cpu, memory).
NODE_CAPACITY = {"cpu": "32", "memory": "128Gi", "pods": "110"}
PENDING_REQUEST = ("1", "2Gi")
RUNNING_REQUEST = ("500m", "1Gi")
LATENCY = "volcano_e2e_scheduling_latency_milliseconds"

Request = dict[str, Any]


# ---------------------------------------------------------------------- the objects, the same on every side


def node_name(index: int) -> str:
    return f"node-{index}"


def nodes(count: int) -> Iterator[Request]:
    """Nodes as a kubelet registers them: capacity, a Ready condition."""
    ready = {"type": "Ready", "status": "True", "reason": "KubeletReady"}
    status = {"capacity": NODE_CAPACITY, "allocatable": NODE_CAPACITY, "conditions": [ready]}
    for i in range(count):
        name = node_name(i)
        labels = {"kubernetes.io/hostname": name, "kubernetes.io/os": "linux"}
        body = {"apiVersion": "v1", "kind": "Node", "metadata": {"name": name, "labels": labels}, "status": status}
        yield {"path": "/api/v1/nodes", "body": body}


def default_queue() -> list[Request]:
    """The ``default`` Queue, Open (as Volcano's queue controller would leave it)."""
    body = {
        "apiVersion": "scheduling.volcano.sh/v1beta1",
        "kind": "Queue",
        "metadata": {"name": "default"},
        "spec": {"weight": 1, "reclaimable": True},
    }
    return [{"path": QUEUES, "body": body, "status": {"state": "Open"}}]


def podgroup(name: str, min_member: int, status: dict[str, Any]) -> Request:
    """A PodGroup in the default queue (its CRD has no status subresource: the status is created with it)."""
    body = {
        "apiVersion": "scheduling.volcano.sh/v1beta1",
        "kind": "PodGroup",
        "metadata": {"name": name, "namespace": NAMESPACE},
        "spec": {"minMember": min_member, "queue": "default"},
        "status": status,
    }
    return {"path": PODGROUPS, "body": body}


def pod(name: str, group: str, request: tuple[str, str], node: str = "") -> dict[str, Any]:
    """A pod of one PodGroup for the scheduler ``volcano``; bound to ``node`` when given."""
    cpu, memory = request
    container = {"name": "main", "image": "busybox", "resources": {"requests": {"cpu": cpu, "memory": memory}}}
    spec: dict[str, Any] = {
        "schedulerName": "volcano",
        "automountServiceAccountToken": False,
        "containers": [container],
    }
    if node:
        spec["nodeName"] = node
    meta = {"name": name, "namespace": NAMESPACE, "annotations": {"scheduling.k8s.io/group-name": group}}
    return {"apiVersion": "v1", "kind": "Pod", "metadata": meta, "spec": spec}


def gangs(
    prefix: str, pods: int, gang: int, request: tuple[str, str], *, on_nodes: int = 0
) -> tuple[list[Request], Iterator[Request]]:
    """PodGroups ``PREFIX-G`` of ``minMember`` ``gang`` and their pods ``PREFIX-G-I``.

    Pending; or, with ``on_nodes``, created bound (round robin over that
    many nodes) and their status then written Running, in PodGroups created
    Running.
    """
    running = on_nodes > 0
    group_status = {"phase": "Running", "running": gang} if running else {"phase": "Pending"}
    groups = [podgroup(f"{prefix}-{g}", min(gang, pods - g * gang), group_status) for g in range(-(-pods // gang))]
    started = time.strftime("%Y-%m-%dT%H:%M:%SZ", time.gmtime())
    pod_status = {"phase": "Running", "startTime": started, "conditions": [{"type": "Ready", "status": "True"}]}

    def pod_requests() -> Iterator[Request]:
        for i in range(pods):
            group = f"{prefix}-{i // gang}"
            body = pod(f"{group}-{i % gang}", group, request, node_name(i % on_nodes) if running else "")
            yield {"path": PODS, "body": body, "status": pod_status} if running else {"path": PODS, "body": body}

    return groups, pod_requests()


def load(plane: ControlPlane, batches: Iterable[tuple[str, Iterable[Request]]], workers: int) -> dict[str, Any]:
    """Send each batch of objects in turn (all of one before the next); each batch's request rate."""
    record: dict[str, Any] = {}
    for name, requests in batches:
        summary = volcanobin.post(plane.kubeconfig, requests, workers=workers)
        seconds, rate = round(summary["seconds"], 2), round(summary["per_second"])
        record[name] = {"requests": summary["requests"], "seconds": seconds, "per_second": rate}
    return record


# ---------------------------------------------------------------------- processes and what they report


@contextlib.contextmanager
def fresh_plane() -> Iterator[ControlPlane]:
    """A new control plane, removed after use."""
    plane = ControlPlane().start()
    try:
        yield plane
    finally:
        plane.remove()


class Usage:
    """A process's CPU seconds and peak resident memory, read from ``/proc`` (Linux)."""

    def __init__(self, pid: int | None) -> None:
        self.pid = pid
        self.start = self.cpu()

    def cpu(self) -> float:
        try:
            fields = Path(f"/proc/{self.pid}/stat").read_text().rpartition(")")[2].split()
        except OSError:
            return 0.0
        return (int(fields[11]) + int(fields[12])) / os.sysconf("SC_CLK_TCK")

    def since_start(self) -> float:
        return round(self.cpu() - self.start, 2)

    def peak_mib(self) -> float | None:
        with contextlib.suppress(OSError):
            for line in Path(f"/proc/{self.pid}/status").read_text().splitlines():
                if line.startswith("VmHWM:"):
                    return round(int(line.split()[1]) / 1024, 1)
        return None


def metrics_text(port: int, timeout: float) -> str | None:
    """A scheduler's ``/metrics`` text, or None when it does not answer (yet)."""
    try:
        with urllib.request.urlopen(f"http://127.0.0.1:{port}/metrics", timeout=timeout) as answer:
            return str(answer.read().decode())
    except (OSError, http.client.HTTPException):
        return None


def latency(port: int) -> tuple[float, int] | None:
    """The sum (ms) and count of the e2e scheduling latency histogram, or None when /metrics does not answer."""
    text = metrics_text(port, 10)
    if text is None:
        return None
    found = dict(re.findall(rf"^{LATENCY}_(sum|count) (\S+)$", text, re.MULTILINE))
    if len(found) < 2:
        return None
    return float(found["sum"]), int(float(found["count"]))


class Startup(threading.Thread):
    """Follows a scheduler's ``/metrics`` from its start, every quarter second, until its first cycle has ended.

    It notes when the endpoint first answered, when the cache said it was
    ready (``volcanolib_cache_ready``, volcanolib's only), when the first
    cycle had ended and how long that cycle took.
    """

    def __init__(self, port: int, started: float) -> None:
        super().__init__(daemon=True)
        self.port, self.started = port, started
        self.figures: dict[str, float] = {}
        self.done = threading.Event()

    def _note(self, name: str, value: float) -> None:
        self.figures.setdefault(name, round(value, 2))

    def run(self) -> None:
        while not self.done.wait(0.25):
            text = metrics_text(self.port, 60)
            if text is None:
                continue
            now = time.time() - self.started
            self._note("metrics_up_seconds", now)
            if re.search(r"^volcanolib_cache_ready 1", text, re.MULTILINE):
                self._note("cache_ready_seconds", now)
            found = dict(re.findall(rf"^{LATENCY}_(sum|count) (\S+)$", text, re.MULTILINE))
            if float(found.get("count", 0)) >= 1:
                self._note("first_cycle_end_seconds", now)
                self._note("first_cycle_seconds", float(found["sum"]) / 1000 / float(found["count"]))
                return

    def stop(self) -> dict[str, float]:
        """Stop following; the figures noted."""
        self.done.set()
        self.join(70)
        return self.figures


def steady_cycle(port: int, seconds: float) -> dict[str, Any]:
    """The mean cycle (ms) over ``seconds``, once a cycle has started and ended since the call."""
    first = latency(port)
    deadline = time.monotonic() + 120
    while first is not None and time.monotonic() < deadline:  # the cycle in flight may hold the last binds
        time.sleep(0.5)
        now = latency(port)
        if now is not None and now[1] >= first[1] + 2:
            first = now
            break
    time.sleep(seconds)
    last = latency(port)
    if first is None or last is None or last[1] <= first[1]:
        return {"cycles": 0, "mean_ms": None}
    return {"cycles": last[1] - first[1], "mean_ms": round((last[0] - first[0]) / (last[1] - first[1]), 1)}


@contextlib.contextmanager
def scheduler(side: str, plane: ControlPlane, conf: Path, log: Path) -> Iterator[tuple[float, int, Usage]]:
    """Start one side's scheduler; yield its start (Unix seconds), metrics port and usage; stop it after."""
    port = volcanobin.free_port()
    argv = volcanobin.scheduler_command(side, plane.kubeconfig, conf, metrics_port=port)  # built before the clock
    with log.open("w") as out:
        started = time.time()
        process = subprocess.Popen(argv, stdout=out, stderr=subprocess.STDOUT, env=volcanobin.python_env())
        try:
            yield started, port, Usage(process.pid)
        finally:
            process.terminate()
            try:
                process.wait(30)
            except subprocess.TimeoutExpired:
                process.kill()
                process.wait()


def load_average() -> list[float]:
    return [round(x, 1) for x in os.getloadavg()]


# ---------------------------------------------------------------------- figures


def bind_figures(times: list[float], started: float, expected: int) -> dict[str, Any]:
    """First bind, sustained rate (10th to 90th percentile of ``expected``) and last bind, from bind times."""
    times = sorted(times)
    record: dict[str, Any] = {"bound": len(times), "expected": expected}
    if not times:
        return record
    record["first_bind_seconds"] = round(times[0] - started, 2)
    record["last_bind_seconds"] = round(times[-1] - started, 2)
    record["all_bound_seconds"] = record["last_bind_seconds"] if len(times) >= expected else None
    low, high = int(0.1 * (expected - 1)), int(0.9 * (expected - 1))
    if high < len(times) and times[high] > times[low]:
        record["binds_per_second"] = round((high - low) / (times[high] - times[low]), 1)
    elif len(times) > 1 and times[-1] > times[0]:  # fewer than 90 % bound: the rate over what was
        record["binds_per_second"] = round((len(times) - 1) / (times[-1] - times[0]), 1)
    return record


def decisions(placements: dict[str, str], gang: int) -> dict[str, Any]:
    """Gangs placed whole, nodes used and pods per node, from ``{"namespace/pod": node}``."""
    per_node = Counter(placements.values())
    per_group = Counter(key.partition("/")[2].rpartition("-")[0] for key in placements)
    counts = sorted(per_node.values())
    return {
        "pods_bound": len(placements),
        "gangs_placed": sum(1 for n in per_group.values() if n >= gang),
        "gangs_partly_placed": sum(1 for n in per_group.values() if n < gang),
        "nodes_used": len(per_node),
        "pods_per_node": {"min": counts[0], "median": statistics.median(counts), "max": counts[-1]} if counts else {},
        "nodes_by_pod_count": dict(sorted(Counter(counts).items())),
    }


# ---------------------------------------------------------------------- parts


def part_ceiling(args: argparse.Namespace, conf: Path, logs: Path) -> dict[str, Any]:
    """The API server's ceiling on binds (no scheduler), on the ``bind`` part's cluster."""
    record: dict[str, Any] = {"part": "ceiling", "nodes": args.nodes, "pods": args.pods,
                              "load_average_before": load_average()}  # fmt: skip
    with fresh_plane() as plane:
        podgroups, pods = gangs("gang", args.pods, args.gang, PENDING_REQUEST)
        record["load"] = load(plane, [("nodes", nodes(args.nodes)), ("queues", default_queue()),
                                      ("podgroups", podgroups), ("pods", pods)], args.workers)  # fmt: skip
        names = (f"gang-{i // args.gang}-{i % args.gang}" for i in range(args.pods))
        binds = (
            {"path": f"{PODS}/{name}/binding", "body": {"apiVersion": "v1", "kind": "Binding",
                                                        "metadata": {"name": name},
                                                        "target": {"kind": "Node", "name": node_name(i % args.nodes)}}}
            for i, name in enumerate(names)
        )  # fmt: skip
        server = Usage(plane.pid)
        summary = volcanobin.post(plane.kubeconfig, binds, workers=args.ceiling_workers)
        record.update(binds=summary["requests"], seconds=round(summary["seconds"], 2),
                      binds_per_second=round(summary["per_second"]), workers=args.ceiling_workers,
                      apiserver_cpu_seconds=server.since_start(), load_average_after=load_average())  # fmt: skip
    return record


def part_bind(side: str, args: argparse.Namespace, conf: Path, logs: Path) -> dict[str, Any]:
    """Pending gangs bound by one side's scheduler, started on a loaded cluster."""
    record: dict[str, Any] = {"part": "bind", "side": side, "nodes": args.nodes, "pods": args.pods,
                              "gang": args.gang, "load_average_before": load_average()}  # fmt: skip
    with fresh_plane() as plane:
        podgroups, pods = gangs("gang", args.pods, args.gang, PENDING_REQUEST)
        record["load"] = load(plane, [("nodes", nodes(args.nodes)), ("queues", default_queue()),
                                      ("podgroups", podgroups), ("pods", pods)], args.workers)  # fmt: skip
        watch = volcanobin.Watch(plane.kubeconfig, PODS, "spec.nodeName")
        try:
            assert watch.synced.wait(120), "the pods could not be listed"
            server = Usage(plane.pid)
            with scheduler(side, plane, conf, logs / f"bind-{side}.log") as (started, port, usage):
                startup = Startup(port, started)
                startup.start()
                watch.wait(lambda changes: len(changes) >= args.pods, args.timeout)
                record.update(bind_figures([t for t, _k, _v in watch.changes], started, args.pods))
                record["binding_cpu_seconds"] = usage.since_start()
                record["apiserver_cpu_seconds"] = server.since_start()
                record["load_average_binding"] = load_average()
                if record["all_bound_seconds"] is not None:
                    record["steady"] = steady_cycle(port, args.steady)
                record["startup"] = startup.stop()  # the first cycle may end after the last bind
                record["cpu_seconds"] = usage.since_start()
                record["peak_rss_mib"] = usage.peak_mib()
            record["decisions"] = decisions(watch.latest(), args.gang)
        finally:
            watch.stop()
    record["load_average_after"] = load_average()
    return record


def part_restart(side: str, args: argparse.Namespace, conf: Path, logs: Path) -> dict[str, Any]:
    """One side's scheduler started on ``--running`` running pods and one new pod: the time to that pod's bind."""
    record: dict[str, Any] = {"part": "restart", "side": side, "nodes": args.nodes, "running": args.running,
                              "load_average_before": load_average()}  # fmt: skip
    with fresh_plane() as plane:
        running_groups, running = gangs("run", args.running, args.gang, RUNNING_REQUEST, on_nodes=args.nodes)
        new_group, new = gangs("new", 1, 1, RUNNING_REQUEST)
        record["load"] = load(plane, [("nodes", nodes(args.nodes)), ("queues", default_queue()),
                                      ("podgroups", [*running_groups, *new_group]),
                                      ("pods running", running), ("new pod", new)], args.workers)  # fmt: skip
        watch = volcanobin.Watch(plane.kubeconfig, PODS, "spec.nodeName", field_selector="metadata.name=new-0-0")
        try:
            assert watch.synced.wait(120), "the new pod could not be listed"
            server = Usage(plane.pid)
            with scheduler(side, plane, conf, logs / f"restart-{side}.log") as (started, port, usage):
                startup = Startup(port, started)
                startup.start()
                bound = watch.wait(lambda changes: bool(changes), args.timeout)
                record["restart_to_first_bind_seconds"] = round(watch.changes[0][0] - started, 2) if bound else None
                record["start_cpu_seconds"] = usage.since_start()
                record["apiserver_cpu_seconds"] = server.since_start()
                if bound:
                    record["steady"] = steady_cycle(port, args.steady)
                record["startup"] = startup.stop()  # the first cycle may end after the bind: stopped once it has
                record["cpu_seconds"] = usage.since_start()
                record["peak_rss_mib"] = usage.peak_mib()
        finally:
            watch.stop()
    record["load_average_after"] = load_average()
    return record


# ---------------------------------------------------------------------- the table


def _cell(record: dict[str, Any] | None, figure: Callable[[dict[str, Any]], Any]) -> str:
    if record is None:
        return "not run"
    with contextlib.suppress(KeyError, TypeError):
        value = figure(record)
        if value is not None:
            return str(value)
    return "n/a"


def _first_cycle(record: dict[str, Any]) -> str:
    startup = record["startup"]
    ready = f"cache ready {startup['cache_ready_seconds']} s; " if "cache_ready_seconds" in startup else ""
    return f"{ready}{startup['first_cycle_end_seconds']} s ({startup['first_cycle_seconds']} s)"


def table(records: list[dict[str, Any]], release: str) -> str:
    """The side-by-side figures, in Markdown."""
    by = {(r["part"], r.get("side")): r for r in records}
    rows: list[tuple[str, str, Callable[[dict[str, Any]], Any]]] = [
        ("bind", "first cycle ended after start (its length)", _first_cycle),
        ("bind", "first bind after start", lambda r: f"{r['first_bind_seconds']} s"),
        ("bind", "binds per second (10th to 90th percentile)", lambda r: r["binds_per_second"]),
        ("bind", "all bound after start",
         lambda r: f"{r['all_bound_seconds']} s" if r["all_bound_seconds"] is not None
         else f"{r['bound']} of {r['expected']} in {r['last_bind_seconds']} s"),
        ("bind", "steady cycle after", lambda r: f"{r['steady']['mean_ms']} ms ({r['steady']['cycles']} cycles)"),
        ("bind", "scheduler CPU / peak memory", lambda r: f"{r['cpu_seconds']} s / {r['peak_rss_mib']} MiB"),
        ("bind", "gangs placed whole (partly)",
         lambda r: f"{r['decisions']['gangs_placed']} ({r['decisions']['gangs_partly_placed']})"),
        ("bind", "nodes used; pods per node min / median / max",
         lambda r: "{nodes_used}; {pods_per_node[min]} / {pods_per_node[median]} / {pods_per_node[max]}".format(
             **r["decisions"])),
        ("restart", "first cycle ended after start (its length)", _first_cycle),
        ("restart", "restart to first bind", lambda r: f"{r['restart_to_first_bind_seconds']} s"),
        ("restart", "steady cycle after", lambda r: f"{r['steady']['mean_ms']} ms ({r['steady']['cycles']} cycles)"),
        ("restart", "scheduler CPU / peak memory", lambda r: f"{r['cpu_seconds']} s / {r['peak_rss_mib']} MiB"),
    ]  # fmt: skip
    lines = [f"| figure | {release} | volcanolib |", "|---|---|---|"]
    for part, label, figure in rows:
        if not any(p == part for p, _s in by):
            continue
        size = next(r for (p, _s), r in by.items() if p == part)
        what = f"{size['nodes']:,} nodes, " + (
            f"{size['pods']:,} pending" if part == "bind" else f"{size['running']:,} running"
        )
        lines.append(f"| {part} ({what}): {label} | {_cell(by.get((part, 'volcano')), figure)} "
                     f"| {_cell(by.get((part, 'volcanolib')), figure)} |")  # fmt: skip
    ceiling = by.get(("ceiling", None))
    if ceiling is not None:
        lines.append(f"| API server's ceiling: binds per second ({ceiling['workers']} connections, no scheduler) "
                     f"| {ceiling['binds_per_second']} (same server) | |")  # fmt: skip
    return "\n".join(lines)


# ---------------------------------------------------------------------- the command


def main(argv: list[str]) -> int:
    """``python -m benchmarks live ...``."""
    parser = argparse.ArgumentParser(prog="python -m benchmarks live", description=__doc__,
                                     formatter_class=argparse.RawDescriptionHelpFormatter)  # fmt: skip
    parser.add_argument("--size", choices=sorted(SIZES), default="small", help="small (default) or issue")
    parser.add_argument("--nodes", type=int, help="nodes (default: the size's)")
    parser.add_argument("--pods", type=int, help="bind, ceiling: pending pods (default: the size's)")
    parser.add_argument("--running", type=int, help="restart: running pods (default: the size's)")
    parser.add_argument("--gang", type=int, default=10, help="pods per PodGroup (default 10)")
    parser.add_argument(
        "--parts", default=",".join(PARTS), help=f"comma-separated, of {', '.join(PARTS)} (default all)"
    )
    parser.add_argument("--sides", default=",".join(SIDES), help="comma-separated: volcano, volcanolib (default both)")
    parser.add_argument("--timeout", type=float, default=1800, help="seconds a scheduler gets to bind (default 1800)")
    parser.add_argument("--steady", type=float, default=20, help="seconds of steady cycles measured (default 20)")
    parser.add_argument("--workers", type=int, default=32, help="connections loading the objects (default 32)")
    parser.add_argument("--ceiling-workers", type=int, default=64, help="connections binding in ceiling (default 64)")
    parser.add_argument("--out", type=Path, default=Path("bench-results/live.json"))
    args = parser.parse_args(argv[1:])
    default_nodes, default_pods, default_running = SIZES[args.size]
    args.nodes = args.nodes or default_nodes
    args.pods = args.pods or default_pods
    args.running = args.running or default_running
    parts = [p.strip() for p in args.parts.split(",") if p.strip()]
    sides = [s.strip() for s in args.sides.split(",") if s.strip()]
    for name, chosen, known in (("part", parts, PARTS), ("side", sides, SIDES)):
        unknown = [c for c in chosen if c not in known]
        if unknown:
            parser.error(f"unknown {name} {unknown[0]!r} (expected {', '.join(known)})")

    from volcanolib.framework.config import DEFAULT_CONFIG_TEXT

    logs = args.out.parent / "live-logs"
    logs.mkdir(parents=True, exist_ok=True)
    conf = logs / "volcano-scheduler.conf"
    conf.write_text(DEFAULT_CONFIG_TEXT)
    release = volcanobin.volcano_release()
    records: list[dict[str, Any]] = []
    document = {"date": date.today().isoformat(), "volcano": release, "python": platform.python_version(),
                "cpus": os.cpu_count(), "records": records}  # fmt: skip

    def save(record: dict[str, Any]) -> None:
        records.append(record)
        print(json.dumps(record), file=sys.stderr, flush=True)
        args.out.write_text(json.dumps(document, indent=2) + "\n")  # after each run: a long run keeps what it measured

    if "ceiling" in parts:
        print(f"ceiling: {args.nodes} nodes, {args.pods} pods ...", file=sys.stderr, flush=True)
        save(part_ceiling(args, conf, logs))
    for part, run in (("bind", part_bind), ("restart", part_restart)):
        if part in parts:
            for side in sides:
                print(f"{part}: {side} ...", file=sys.stderr, flush=True)
                save(run(side, args, conf, logs))
    print(f"Measured {document['date']}, {release}, {os.cpu_count()} CPUs, load average in the records\n")
    print(table(records, release.replace("volcano.sh/volcano ", "Volcano ")))
    print(f"\nrecords written to {args.out}", file=sys.stderr)
    return 0
