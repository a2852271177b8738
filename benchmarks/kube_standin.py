"""How fast the stand-in Kubernetes API server (tests/kube_api) is, so that figures measured
against it (start-up, bind throughput) can be read against its own ceiling.

``python -m benchmarks.kube_standin [--nodes 5000] [--pods 50000] [--binds 3000]
[--connections 1,8,16] [--repeat 3]`` measures, each as the median of ``--repeat`` runs:

* load: :func:`load_cluster` of the nodes, running pods and their PodGroups (in process);
* list: every pod in pages of 500 (``limit``/``continue``) from another process, reading
  the raw answers (no JSON decoding, which is the client's cost, not the server's);
* bind: ``pods/binding`` requests per second from another process over N keep-alive
  connections, for each N, while a watch on every pod is open and read.

The server runs in its own process (``python -m kube_api``) for list and bind.
"""

from __future__ import annotations

import argparse
import http.client
import json
import os
import statistics
import subprocess
import sys
import threading
import time
from concurrent.futures import ThreadPoolExecutor
from pathlib import Path
from urllib.parse import quote, urlsplit

ROOT = Path(__file__).resolve().parents[1]
sys.path.insert(0, str(ROOT / "tests"))

from kube_api import KubeApiServer, load_cluster  # noqa: E402


def measure_load(nodes: int, pods: int) -> tuple[float, float]:
    """Wall-clock and CPU seconds to load the cluster into a fresh server (the CPU figure
    does not move with what else the machine runs)."""
    server = KubeApiServer()
    start, cpu = time.perf_counter(), time.process_time()
    load_cluster(server, nodes, running_pods=pods)
    return time.perf_counter() - start, time.process_time() - cpu


def _connect(url: str) -> http.client.HTTPConnection:
    parts = urlsplit(url)
    return http.client.HTTPConnection(parts.hostname or "127.0.0.1", parts.port)


def measure_list(url: str) -> tuple[float, int]:
    """Seconds to read every pod in pages of 500, and the number of pages."""
    conn = _connect(url)
    token, pages = "", 0
    start = time.perf_counter()
    while True:
        conn.request("GET", "/api/v1/pods?limit=500" + (f"&continue={quote(token)}" if token else ""))
        raw = conn.getresponse().read()
        pages += 1
        head = json.loads(raw[: raw.index(b',"items":')] + b"}")
        token = head["metadata"].get("continue", "")
        if not token:
            break
    return time.perf_counter() - start, pages


def measure_binds(url: str, first: int, count: int, connections: int, nodes: int, width: int) -> float:
    """``pods/binding`` requests per second over ``connections`` keep-alive connections."""
    local = threading.local()

    def bind(i: int) -> int:
        conn = getattr(local, "conn", None)
        if conn is None:
            conn = local.conn = _connect(url)
        name = f"pod-{i:0{width}d}"
        body = json.dumps(
            {"metadata": {"name": name}, "target": {"kind": "Node", "name": f"node-{i % nodes:0{width}d}"}}
        )
        conn.request(
            "POST", f"/api/v1/namespaces/default/pods/{name}/binding", body, {"Content-Type": "application/json"}
        )
        resp = conn.getresponse()
        resp.read()
        return resp.status

    start = time.perf_counter()
    with ThreadPoolExecutor(connections) as pool:
        codes = list(pool.map(bind, range(first, first + count)))
    elapsed = time.perf_counter() - start
    if codes.count(201) != count:
        raise RuntimeError(f"{count - codes.count(201)} binds failed")
    return count / elapsed


def process_cpu(pid: int) -> float | None:
    """CPU seconds (user + system) a process has used so far; None off Linux."""
    try:
        fields = Path(f"/proc/{pid}/stat").read_text().rsplit(")", 1)[1].split()
    except OSError:
        return None
    return (int(fields[11]) + int(fields[12])) / os.sysconf("SC_CLK_TCK")


class PodWatch:
    """A watch on every pod, read on a thread (as an adapter's informer would) and counted."""

    def __init__(self, url: str) -> None:
        self.events = 0
        self.conn = _connect(url)
        self.conn.request("GET", "/api/v1/pods?limit=1")
        head = self.conn.getresponse().read()
        rv = json.loads(head)["metadata"]["resourceVersion"]
        self.conn.request("GET", f"/api/v1/pods?watch=1&resourceVersion={rv}")
        self.resp = self.conn.getresponse()
        self.thread = threading.Thread(target=self._read, daemon=True)
        self.thread.start()

    def _read(self) -> None:
        try:
            for line in self.resp:
                if line.strip():
                    self.events += 1
        except (OSError, ValueError, http.client.HTTPException):
            pass


def main(argv: list[str] | None = None) -> int:
    """Run the measurements and print one line each."""
    parser = argparse.ArgumentParser(
        prog="python -m benchmarks.kube_standin",
        description=__doc__,
        formatter_class=argparse.RawDescriptionHelpFormatter,
    )
    parser.add_argument("--nodes", type=int, default=5000)
    parser.add_argument("--pods", type=int, default=50000)
    parser.add_argument("--binds", type=int, default=3000, help="binds per connection count and run")
    parser.add_argument("--connections", default="1,8,16")
    parser.add_argument("--repeat", type=int, default=3)
    args = parser.parse_args(argv)
    conns = [int(c) for c in args.connections.split(",") if c]

    loads = [measure_load(args.nodes, args.pods) for _ in range(args.repeat)]
    wall, cpu = statistics.median(w for w, _ in loads), statistics.median(c for _, c in loads)
    print(
        f"load {args.nodes} nodes + {args.pods} pods + {args.pods} podgroups: median {wall:.2f} s wall, {cpu:.2f} s CPU"
    )

    pending = args.binds * len(conns) * args.repeat
    proc = subprocess.Popen(
        [
            sys.executable,
            "-m",
            "kube_api",
            "--nodes",
            str(args.nodes),
            "--running-pods",
            str(args.pods),
            "--pending-pods",
            str(pending),
        ],
        cwd=ROOT / "tests",
        stdout=subprocess.PIPE,
        text=True,
    )
    try:
        assert proc.stdout is not None
        _, url, _ = proc.stdout.readline().split()
        lists = [measure_list(url) for _ in range(args.repeat)]
        print(
            f"list {args.pods + pending} pods in {lists[0][1]} pages of 500: "
            f"median {statistics.median(t for t, _ in lists):.2f} s"
        )
        first = args.pods
        watch = PodWatch(url)
        width = max(5, len(str(max(args.nodes, args.pods + pending))))  # as load_cluster names them
        for n in conns:
            rates, costs = [], []
            for _ in range(args.repeat):
                before = process_cpu(proc.pid)
                rates.append(measure_binds(url, first, args.binds, n, args.nodes, width))
                after = process_cpu(proc.pid)
                if before is not None and after is not None:
                    costs.append((after - before) / args.binds * 1e6)
                first += args.binds
            cost = f", server CPU {statistics.median(costs):.0f} us per bind" if costs else ""
            print(
                f"bind over {n} connection(s), one pod watch open: median {statistics.median(rates):.0f} pods/s{cost}"
            )
        deadline = time.monotonic() + 30
        while watch.events < first - args.pods and time.monotonic() < deadline:
            time.sleep(0.05)
        print(f"the watch saw {watch.events} of {first - args.pods} binds")
    finally:
        proc.terminate()
        proc.wait(timeout=30)
    return 0


if __name__ == "__main__":
    sys.exit(main())
