"""``volcanolib serve`` against the stand-in API server: start-up, bind throughput, steady cycles.

Examples::

    python -m benchmarks serve-startup              # list 5,000 nodes and 50,000 pods, ready to schedule
    python -m benchmarks serve-bind                 # bind 10,000 pending pods
    python -m benchmarks serve-steady               # 50,000 running pods, 500 new per period
    python -m benchmarks serve-steady --nodes 500 --running 5000 --new 50 --cycles 20
    python -m benchmarks serve-steady --metrics     # the same, each cycle's metrics recorded and timed
    python -m benchmarks serve-failover             # SIGKILL the leader: time until the other binds
    python -m benchmarks serve-inspect              # /explain, /dryrun and explain --kubeconfig on 1,000 nodes

The stand-in (tests/kube_api) runs in a child process, as an API server would,
with the cluster loaded there without HTTP; the adapter (KubernetesCache, the
Scheduler) runs in this process and talks to it over HTTP on localhost. The
figures are wall-clock seconds on whatever else the machine runs; each
suite prints a JSON record (and writes it with ``--out``).
"""

from __future__ import annotations

import argparse
import json
import logging
import multiprocessing
import statistics
import sys
import time
from multiprocessing.connection import Connection
from pathlib import Path
from typing import Any

ROOT = Path(__file__).resolve().parents[1]
SUITES = ("serve-startup", "serve-bind", "serve-steady", "serve-failover", "serve-inspect")


# ---------------------------------------------------------------------- the stand-in, in a child process


def _standin(conn: Connection, nodes: int, running: int, pending: int, group_size: int) -> None:
    """Run the stand-in with a loaded cluster and answer the parent's commands until ``stop``."""
    sys.path.insert(0, str(ROOT / "tests"))
    from kube_api import KubeApiServer, load_cluster, make_pod, make_podgroup

    server = KubeApiServer(history_size=200_000, pod_deletion_delay=None).start()
    t0 = time.perf_counter()
    load_cluster(server, nodes, running, pending, group_size=group_size, node_cpu="64", node_memory="256Gi")
    conn.send((server.url, time.perf_counter() - t0))
    batch = 0
    while True:
        command, arg = conn.recv()
        if command == "stop":
            break
        if command == "add":  # arg pending pods, in new groups of group_size
            batch += 1
            groups = max(1, arg // group_size)
            server.create_many(
                "podgroups", (make_podgroup(f"new-{batch}-{g}", min_member=group_size) for g in range(groups))
            )
            server.create_many(
                "pods",
                (
                    make_pod(f"new-{batch}-{i}", cpu="100m", memory="128Mi", group=f"new-{batch}-{i // group_size}")
                    for i in range(groups * group_size)
                ),
            )
            conn.send(groups * group_size)
        elif command == "bound":
            conn.send(sum(1 for p in server.store.objects(server.rt("pods")) if p["spec"].get("nodeName")))
        elif command == "requests":
            conn.send(len(server.requests(arg)))
        elif command == "cpu":
            conn.send(time.process_time())
        elif command == "create":  # arg (resource, objects)
            conn.send(server.create_many(arg[0], arg[1]))
    server.stop()
    conn.send("stopped")


class StandIn:
    """The stand-in API server in a child process."""

    def __init__(self, nodes: int, running: int, pending: int, group_size: int) -> None:
        ctx = multiprocessing.get_context("spawn")
        self.conn, child = ctx.Pipe()
        self.process = ctx.Process(target=_standin, args=(child, nodes, running, pending, group_size), daemon=True)
        self.process.start()
        self.url, self.load_seconds = self.conn.recv()

    def call(self, command: str, arg: Any = None) -> Any:
        self.conn.send((command, arg))
        return self.conn.recv()

    def kubeconfig(self, path: Path) -> Path:
        path.write_text(
            json.dumps(
                {
                    "apiVersion": "v1",
                    "kind": "Config",
                    "clusters": [{"name": "standin", "cluster": {"server": self.url}}],
                    "users": [{"name": "standin", "user": {}}],
                    "contexts": [{"name": "standin", "context": {"cluster": "standin", "user": "standin"}}],
                    "current-context": "standin",
                }
            )
        )
        return path

    def stop(self) -> None:
        self.call("stop")
        self.process.join(30)


def _cache(kubeconfig: Path, **options: Any) -> Any:
    from volcanolib.kube.live import load_api
    from volcanolib.kube.live.cache import KubernetesCache

    return KubernetesCache(load_api(str(kubeconfig)), **options)


# ---------------------------------------------------------------------- suites


def startup(args: argparse.Namespace, workdir: Path) -> dict[str, Any]:
    """From a cold cache to ready to schedule: every kind listed and applied, the first snapshot taken."""
    standin = StandIn(args.nodes, args.running, 0, args.group_size)
    try:
        kubeconfig = standin.kubeconfig(workdir / "kubeconfig")
        t0 = time.perf_counter()
        cpu0 = time.process_time()
        server_cpu0 = standin.call("cpu")
        cache = _cache(kubeconfig)
        cache.start()
        cache.wait_ready()
        t1 = time.perf_counter()
        snapshot = cache.snapshot()
        t2 = time.perf_counter()
        cpu = time.process_time() - cpu0
        server_cpu = standin.call("cpu") - server_cpu0
        lists = {
            r.kind: {"fetch": round(r.list_seconds[0], 3), "apply": round(r.list_seconds[1], 3)}
            for r in cache.reflectors
        }
        record = {
            "suite": "serve-startup",
            "nodes": len(snapshot.nodes),
            "tasks": len(cache.tasks()),
            "jobs": len(snapshot.jobs),
            "list_and_apply_seconds": round(t1 - t0, 3),
            "first_snapshot_seconds": round(t2 - t1, 3),
            "ready_seconds": round(t2 - t0, 3),
            "adapter_cpu_seconds": round(cpu, 3),
            "standin_cpu_seconds": round(server_cpu, 3),
            "target_seconds": 10.0,
            "standin_load_seconds": round(standin.load_seconds, 3),
            "list_seconds_by_kind": lists,
        }
        cache.stop()
        return record
    finally:
        standin.stop()


def bind(args: argparse.Namespace, workdir: Path) -> dict[str, Any]:
    """Pending pods bound through pods/binding: cycles until all are bound, and the binder's own rate."""
    from volcanolib.scheduler import Scheduler

    standin = StandIn(args.nodes, 0, args.pending, args.group_size)
    try:
        kubeconfig = standin.kubeconfig(workdir / "kubeconfig")
        cache = _cache(kubeconfig, bind_workers=args.workers)
        cache.start()
        cache.wait_ready()
        scheduler = Scheduler(cache, args.conf, period=0)
        first: list[float] = []
        binder_bind = cache.binder.bind

        def bind_timed(tasks: Any) -> Any:  # notes when the first bind is handed to the binder
            if not first:
                first.append(time.perf_counter())
            return binder_bind(tasks)

        cache.binder.bind = bind_timed
        submitted = 0
        cycles: list[dict[str, float]] = []
        bind_seconds = 0.0
        drains: list[tuple[int, float, float]] = []
        t0 = time.perf_counter()
        while submitted < args.pending:
            with cache.holding():  # as volcanolib serve runs a cycle: its binds start when it ends
                result = scheduler.run_once()
            c1 = time.perf_counter()
            cycles.append({k: round(v, 4) for k, v in result.timings.items()})
            submitted += len(result.binds)
            in_flight = cache.bind_pool.pending
            cpu = time.process_time()
            cache.bind_pool.flush()  # the binder's part: from the cycle's end to the last answer
            bind_seconds += time.perf_counter() - c1
            drains.append((in_flight, time.perf_counter() - c1, time.process_time() - cpu))
            cache.flush()  # the status writes of the cycle, before the next one
            if not result.binds:
                break
        total = time.perf_counter() - t0
        binding = time.perf_counter() - first[0] if first else 0.0
        bound = standin.call("bound")
        session = sum(c["session"] for c in cycles)
        record = {
            "suite": "serve-bind",
            "nodes": args.nodes,
            "pending": args.pending,
            "bind_workers": args.workers,
            "bound": bound,
            "cycles": len(cycles),
            "session_seconds": round(session, 3),
            "after_cycle_bind_seconds": round(bind_seconds, 3),
            "first_bind_to_last_answer_seconds": round(binding, 3),
            "binds_per_second": round(bound / binding, 1) if binding else None,
            "end_to_end_seconds": round(total, 3),
            # After the session: the binds still in flight, answered with nothing else running here.
            "drain_binds": sum(d[0] for d in drains),
            "drain_binds_per_second": round(sum(d[0] for d in drains) / sum(d[1] for d in drains), 1),
            "adapter_cpu_us_per_bind": round(sum(d[2] for d in drains) / max(1, sum(d[0] for d in drains)) * 1e6),
            "end_to_end_per_second": round(bound / total, 1),
            "target_binds_per_second": 1000,
            "status_writes": dict(cache.status.writes),
        }
        cache.stop()
        return record
    finally:
        standin.stop()


def steady(args: argparse.Namespace, workdir: Path) -> dict[str, Any]:
    """Cycles over running pods with ``--new`` pods arriving before each one; where the time goes."""
    from volcanolib.scheduler import Scheduler

    standin = StandIn(args.nodes, args.running, 0, args.group_size)
    try:
        kubeconfig = standin.kubeconfig(workdir / "kubeconfig")
        cache = _cache(kubeconfig, bind_workers=args.workers)
        cache.start()
        cache.wait_ready()
        scheduler = Scheduler(cache, args.conf, period=0)
        metrics = None
        if args.metrics:  # as volcanolib serve records each cycle (SchedulerMetrics.observe_cycle)
            from volcanolib.kube.live.metrics import SchedulerMetrics

            metrics = SchedulerMetrics()
        # Warm up: the first cycles write the status of every group once (phase, counts, conditions).
        for _ in range(args.warmup):
            with cache.holding():
                scheduler.run_once()
            cache.flush()
        writes_before = dict(cache.status.writes)
        import gc

        from benchmarks.steady import _GcTimer

        collector = _GcTimer()
        gc.callbacks.append(collector)
        measured: list[dict[str, float]] = []
        binds: list[int] = []
        apply_waits: list[float] = []
        full_collections = 0
        for _ in range(args.cycles):
            period_cpu = time.process_time()
            gc_period, full_period = collector.seconds, collector.full
            expected = len(cache.tasks()) + standin.call("add", args.new)
            w0 = time.perf_counter()
            while len(cache.tasks()) < expected:  # the watch delivers them (not part of the cycle)
                time.sleep(0.001)
            apply_waits.append(time.perf_counter() - w0)
            c0 = time.perf_counter()
            p0 = time.process_time()
            t0 = time.thread_time()
            gc_cycle = collector.seconds
            with cache.holding():  # as volcanolib serve runs a cycle: binds and writes start after it
                if args.profile is not None and len(measured) == args.cycles - 1:
                    import cProfile

                    profiler = cProfile.Profile()
                    result = profiler.runcall(scheduler.run_once)
                    profiler.dump_stats(str(args.profile))
                else:
                    result = scheduler.run_once()
                cycle_seconds = time.perf_counter() - c0
                cycle_cpu = time.thread_time() - t0
                cycle_cpu_all = time.process_time() - p0
                gc_cycle = collector.seconds - gc_cycle
            timings = dict(result.timings)
            if metrics is not None:
                m0 = time.perf_counter()
                with metrics.lock:
                    metrics.observe_cycle(result)
                timings["metrics"] = time.perf_counter() - m0
            timings["cycle"] = cycle_seconds
            timings["cycle_cpu_all_threads"] = cycle_cpu_all
            timings["cycle_cpu"] = cycle_cpu
            timings["handover"] = time.perf_counter() - c0 - cycle_seconds
            binds.append(len(result.binds))
            d0 = time.perf_counter()
            cache.flush()  # the binds, events and status writes of the cycle, answered
            timings["drain"] = time.perf_counter() - d0
            timings["adapter_cpu_outside_cycle"] = time.process_time() - period_cpu - cycle_cpu_all
            timings["gc_in_cycle"] = gc_cycle
            timings["gc_in_period"] = collector.seconds - gc_period
            full_collections += collector.full - full_period
            measured.append(timings)
        gc.callbacks.remove(collector)
        keys = sorted({k for t in measured for k in t})
        medians = {k: round(statistics.median(t.get(k, 0.0) for t in measured) * 1000, 2) for k in keys}
        scrape_ms = None
        if metrics is not None:  # one /metrics text, from the last session (queues, shares, every job's start)
            s0 = time.perf_counter()
            scrape_bytes = len(metrics.expose())
            scrape_ms = round((time.perf_counter() - s0) * 1000, 1)
        record = {
            "suite": "serve-steady",
            "metrics": bool(args.metrics),
            "scrape_ms": scrape_ms,
            "scrape_bytes": scrape_bytes if metrics is not None else None,
            "nodes": args.nodes,
            "running": args.running,
            "new_per_cycle": args.new,
            "cycles": args.cycles,
            "binds_per_cycle": binds,
            "median_ms": medians,
            "max_cycle_ms": round(max(t["cycle"] for t in measured) * 1000, 2),
            "cycle_ms": [round(t["cycle"] * 1000, 1) for t in measured],
            "cycle_gc_ms": [round(t["gc_in_cycle"] * 1000, 1) for t in measured],
            "median_watch_delivery_ms": round(statistics.median(apply_waits) * 1000, 2),
            "target_cycle_ms": 100,
            "full_gc_collections": full_collections,
            "status_writes": dict(cache.status.writes),
            "podgroup_writes_per_cycle": (cache.status.writes["podgroup"] - writes_before["podgroup"]) / args.cycles,
        }
        cache.stop()
        return record
    finally:
        standin.stop()


def _serve_process(kubeconfig: Path, port: int, lease: tuple[str, str, str]) -> Any:
    """A ``volcanolib serve --leader-elect`` process with these lease settings, metrics on ``port``."""
    import os
    import subprocess

    argv = [sys.executable, "-m", "volcanolib", "serve", "--kubeconfig", str(kubeconfig), "--leader-elect",
            "--lock-namespace", "default", "--lease-duration", lease[0], "--renew-deadline", lease[1],
            "--retry-period", lease[2], "--metrics-address", f"127.0.0.1:{port}"]  # fmt: skip
    env = dict(os.environ, PYTHONPATH=str(ROOT))
    return subprocess.Popen(argv, stdout=subprocess.DEVNULL, stderr=subprocess.DEVNULL, env=env)


def _leads(port: int) -> bool:
    import urllib.request

    try:
        with urllib.request.urlopen(f"http://127.0.0.1:{port}/metrics", timeout=2) as answer:
            return b"volcanolib_leader 1.0" in answer.read()
    except OSError:
        return False


def failover(args: argparse.Namespace, workdir: Path) -> dict[str, Any]:
    """Two leader-electing replicas; the leader is killed (SIGKILL) at a random moment; time until a new pod binds.

    Each trial: wait until one replica leads and the other has been standing
    by for a while, kill the leader, create one pod, and time from the kill
    to that pod's bind; the killed replica is started again as the next
    standby. ``--lease`` lists the settings tried, each as
    ``DURATION/DEADLINE/RETRY`` (the flags' values).
    """
    import random
    import socket

    standin = StandIn(args.nodes, 0, 0, 1)
    results: dict[str, Any] = {}
    try:
        kubeconfig = standin.kubeconfig(workdir / "kubeconfig")
        for setting in args.lease:
            lease = tuple(setting.split("/"))
            assert len(lease) == 3, f"--lease {setting!r}: expected DURATION/DEADLINE/RETRY"
            ports = []
            for _ in range(2):
                with socket.socket() as probe:
                    probe.bind(("127.0.0.1", 0))
                    ports.append(probe.getsockname()[1])
            processes = [_serve_process(kubeconfig, port, lease) for port in ports]  # type: ignore[arg-type]
            seconds: list[float] = []
            try:
                for _ in range(args.trials):
                    deadline = time.monotonic() + 120
                    while not any(_leads(p) for p in ports):
                        assert time.monotonic() < deadline, "no replica leads"
                        time.sleep(0.05)
                    leader = next(i for i, p in enumerate(ports) if _leads(p))
                    time.sleep(3.0 + random.random() * 2)  # the standby is up and polling; a random phase
                    bound = standin.call("bound")
                    killed = time.monotonic()
                    processes[leader].kill()
                    processes[leader].wait()
                    standin.call("add", 1)
                    while standin.call("bound") <= bound:
                        assert time.monotonic() < killed + 300, "the pod was not bound"
                        time.sleep(0.02)
                    seconds.append(round(time.monotonic() - killed, 2))
                    processes[leader] = _serve_process(kubeconfig, ports[leader], lease)  # type: ignore[arg-type]
            finally:
                for process in processes:
                    process.kill()
                    process.wait()
            results[setting] = {
                "seconds": seconds,
                "median": round(statistics.median(seconds), 2),
                "min": min(seconds),
                "max": max(seconds),
            }
    finally:
        standin.stop()
    return {"suite": "serve-failover", "nodes": args.nodes, "trials": args.trials, "by_lease": results}


def _median_range(values: list[float]) -> dict[str, float]:
    return {
        "median": round(statistics.median(values), 4),
        "min": round(min(values), 4),
        "max": round(max(values), 4),
    }


def inspect(args: argparse.Namespace, workdir: Path) -> dict[str, Any]:
    """``/explain`` and ``/dryrun`` of a running ``volcanolib serve``, and ``explain --kubeconfig``, timed.

    The cluster: ``--nodes`` nodes of 64 cpu, ``--running`` running pods, and one gang (``wait``, 10
    pods of 100 cpu) that no node can hold. Each request is sent ``--repeat`` times, one at a time,
    while serve schedules every period.
    """
    import threading
    import urllib.request

    import yaml

    from volcanolib.kube.live import load_api
    from volcanolib.kube.live.inspect import Inspector
    from volcanolib.kube.live.serve import Server

    sys.path.insert(0, str(ROOT / "tests"))
    from kube_api import make_pod, make_podgroup

    standin = StandIn(args.nodes, args.running, 0, args.group_size)
    try:
        standin.call("create", ("podgroups", [make_podgroup("wait", min_member=10)]))
        standin.call("create", ("pods", [make_pod(f"wait-{i}", cpu="100", group="wait") for i in range(10)]))
        kubeconfig = standin.kubeconfig(workdir / "kubeconfig")
        serve = Server(load_api(str(kubeconfig)), conf=str(args.conf) if args.conf else None, period=1.0,
                       metrics_address=("127.0.0.1", 0))  # fmt: skip
        stop = threading.Event()
        thread = threading.Thread(target=serve.run, args=(stop,), daemon=True)
        thread.start()
        while serve.cycles < 2:
            time.sleep(0.1)
        host, port = serve.http.server_address[:2]

        def call(method: str, path: str, body: bytes | None = None) -> tuple[float, dict[str, Any]]:
            request = urllib.request.Request(f"http://{host}:{port}{path}", data=body, method=method)
            t0 = time.perf_counter()
            with urllib.request.urlopen(request, timeout=600) as answer:
                data = json.loads(answer.read())
            return time.perf_counter() - t0, data

        def job(name: str, replicas: int, cpu: str) -> bytes:
            template = {"spec": {"containers": [{"name": "c", "resources": {"requests": {"cpu": cpu}}}]}}
            task = {"name": "t", "replicas": replicas, "template": template}
            spec = {"minAvailable": replicas, "tasks": [task]}
            manifest = {"apiVersion": "batch.volcano.sh/v1alpha1", "kind": "Job", "metadata": {"name": name}}
            manifest["spec"] = spec
            return yaml.safe_dump(manifest).encode()

        record: dict[str, Any] = {"suite": "serve-inspect", "nodes": args.nodes, "running": args.running}
        copies = []
        for _ in range(args.repeat):  # what each answer starts with: a private copy of the cluster
            t0 = time.perf_counter()
            serve.cache.full_snapshot()
            copies.append(time.perf_counter() - t0)
        record["copy_seconds"] = _median_range(copies)
        explain = [call("GET", "/explain/default/wait")[0] for _ in range(args.repeat)]
        record["explain_seconds"] = _median_range(explain)
        for label, body in (("dryrun_fits", job("fits", 10, "1")), ("dryrun_does_not_fit", job("big", 10, "100"))):
            runs = [call("POST", "/dryrun", body) for _ in range(args.repeat)]
            record[f"{label}_seconds"] = _median_range([seconds for seconds, _ in runs])
            last = runs[-1][1]
            record[f"{label}_outcome"] = last["outcome"]
            record[f"{label}_parts"] = last["cycle"]["seconds"]
        stop.set()
        thread.join(30)
        # explain --kubeconfig: a cache listed once, then one explanation.
        cli = []
        for _ in range(args.repeat):
            t0 = time.perf_counter()
            cache = _cache(kubeconfig, may_write=lambda: False)
            cache.list_once()
            config = serve.scheduler.config
            Inspector(cache, lambda: config).explain("default/wait")  # noqa: B023
            cache.stop(1.0)
            cli.append(time.perf_counter() - t0)
        record["explain_kubeconfig_seconds"] = _median_range(cli)
        return record
    finally:
        standin.stop()


def main(argv: list[str]) -> int:
    """Run one serve suite; print its record as JSON."""
    parser = argparse.ArgumentParser(prog="python -m benchmarks", description=__doc__,
                                     formatter_class=argparse.RawDescriptionHelpFormatter)  # fmt: skip
    parser.add_argument("suite", choices=SUITES)
    parser.add_argument("--nodes", type=int, help="nodes (default 5,000; serve-bind 1,000)")
    parser.add_argument("--running", type=int, default=50_000, help="running pods (default 50,000)")
    parser.add_argument("--pending", type=int, default=10_000, help="serve-bind: pending pods (default 10,000)")
    parser.add_argument("--new", type=int, default=500, help="serve-steady: pods arriving per cycle (default 500)")
    parser.add_argument("--group-size", type=int, default=10, help="pods per PodGroup (default 10)")
    parser.add_argument("--workers", type=int, default=16, help="bind threads (default 16)")
    parser.add_argument("--cycles", type=int, default=10, help="serve-steady: measured cycles (default 10)")
    parser.add_argument("--warmup", type=int, default=3, help="serve-steady: cycles before them (default 3)")
    parser.add_argument("--conf", type=Path, help="volcano-scheduler.conf to schedule with (default: the default one)")
    parser.add_argument("--out", type=Path, help="also write the record to this JSON file")
    parser.add_argument("--profile", type=Path, help="serve-steady: write a cProfile .prof of the last cycle")
    parser.add_argument(
        "--metrics", action="store_true", help="serve-steady: record each cycle's metrics as serve does, and time it"
    )
    parser.add_argument(
        "--lease",
        action="append",
        help="serve-failover: lease duration/renew deadline/retry period to try, such as 15s/10s/2s "
        "(repeatable; default 15s/10s/2s, 8s/5s/1s, 4s/2500ms/500ms, 2s/1500ms/200ms)",
    )
    parser.add_argument("--trials", type=int, default=3, help="serve-failover: kills per setting (default 3)")
    parser.add_argument("--repeat", type=int, default=5, help="serve-inspect: requests of each kind (default 5)")
    args = parser.parse_args(argv)
    if args.nodes is None:
        args.nodes = {"serve-bind": 1000, "serve-failover": 100, "serve-inspect": 1000}.get(args.suite, 5000)
    if args.lease is None:
        args.lease = ["15s/10s/2s", "8s/5s/1s", "4s/2500ms/500ms", "2s/1500ms/200ms"]
    logging.basicConfig(level=logging.WARNING)
    workdir = ROOT / "bench-results"
    workdir.mkdir(exist_ok=True)
    suites = {"serve-startup": startup, "serve-bind": bind, "serve-steady": steady, "serve-failover": failover}
    run = {**suites, "serve-inspect": inspect}[args.suite]
    record = run(args, workdir)
    text = json.dumps(record, indent=2, sort_keys=True)
    print(text)
    if args.out is not None:
        args.out.write_text(text + "\n")
    return 0
