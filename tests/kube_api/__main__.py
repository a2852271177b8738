"""Run the stand-in API server in its own process (for benchmarks: the server then does not
share the client's interpreter lock).

``python -m kube_api [--port N] [--nodes N] [--running-pods N] [--pending-pods N]
[--group-size N] [--history-size N] [--run-bound-pods] [--tls] [--token T] [--kubeconfig FILE]`` (with ``tests/`` on
``sys.path``, or ``python -m tests.kube_api`` from the repository root) loads the cluster,
prints one line ``READY <url> <resourceVersion>`` on stdout and serves until SIGTERM or
SIGINT.
"""

from __future__ import annotations

import argparse
import signal
import sys
import threading

from .bulk import load_cluster
from .server import KubeApiServer


def main(argv: list[str] | None = None) -> int:
    """Parse the options, start the server, load the cluster, serve until a signal."""
    parser = argparse.ArgumentParser(prog="kube_api", description="stand-in Kubernetes API server")
    parser.add_argument("--host", default="127.0.0.1")
    parser.add_argument("--port", type=int, default=0)
    parser.add_argument("--nodes", type=int, default=0)
    parser.add_argument("--running-pods", type=int, default=0)
    parser.add_argument("--pending-pods", type=int, default=0)
    parser.add_argument("--group-size", type=int, default=1)
    parser.add_argument("--scheduler-name", default="volcano")
    parser.add_argument("--history-size", type=int, default=10_000)
    parser.add_argument("--run-bound-pods", action="store_true")
    parser.add_argument("--tls", action="store_true", help="serve HTTPS with a self-signed certificate")
    parser.add_argument("--token", help="require this bearer token")
    parser.add_argument("--kubeconfig", help="write a kubeconfig for the server to this file")
    args = parser.parse_args(argv)
    server = KubeApiServer(
        args.host,
        args.port,
        tls=args.tls,
        token=args.token,
        history_size=args.history_size,
        run_bound_pods=args.run_bound_pods,
    )
    if args.nodes or args.running_pods or args.pending_pods:
        load_cluster(
            server,
            args.nodes,
            args.running_pods,
            args.pending_pods,
            group_size=args.group_size,
            scheduler_name=args.scheduler_name,
        )
    stop = threading.Event()
    signal.signal(signal.SIGTERM, lambda *_: stop.set())
    signal.signal(signal.SIGINT, lambda *_: stop.set())
    server.start()
    if args.kubeconfig:
        server.write_kubeconfig(args.kubeconfig)
    print(f"READY {server.url} {server.resource_version}", flush=True)
    stop.wait()
    server.stop()
    return 0


if __name__ == "__main__":
    sys.exit(main())
