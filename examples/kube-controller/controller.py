"""A Kubernetes controller in Python that schedules with volcanolib and a plugin of its own.

It watches the cluster through :class:`~volcanolib.kube.live.KubernetesCache`
(the same cache ``volcanolib serve`` uses), and runs the usual Volcano
actions and plugins plus ``maintenance``, a plugin defined below: a node
labelled ``example.com/maintenance=true`` takes no new pods, while the pods
already on it keep running.

Run it against a cluster (or the test suite's stand-in API server)::

    python examples/kube-controller/controller.py --kubeconfig ~/.kube/config --scheduler-name volcano

It needs the ``kube`` extra: ``pip install 'volcanolib[kube]'``.
"""

from __future__ import annotations

import argparse
import signal
import sys
import threading
from collections.abc import Mapping, Sequence
from typing import Any, ClassVar, Final

from volcanolib import NoArguments, NodeInfo, Registry, Scheduler, Session, Status, TaskInfo, hookimpl
from volcanolib.kube.live import KubernetesCache, load_api

#: The node label that puts a node under maintenance.
MAINTENANCE_LABEL: Final = "example.com/maintenance"

CONFIG = """
actions: "enqueue, allocate, backfill"
tiers:
- plugins:
  - name: priority
  - name: gang
  - name: conformance
  - name: maintenance
- plugins:
  - name: drf
  - name: proportion
  - name: binpack
"""


class MaintenancePlugin:
    """Keeps new pods off nodes labelled ``example.com/maintenance=true``."""

    name: ClassVar[str] = "maintenance"
    Arguments: ClassVar[type[NoArguments]] = NoArguments

    def __init__(self, arguments: NoArguments) -> None:
        self.arguments = arguments

    @staticmethod
    def _check(node: NodeInfo) -> Status:
        labels = node.node.labels if node.node is not None else {}
        if labels.get(MAINTENANCE_LABEL) == "true":
            return Status.unresolvable("node(s) under maintenance", plugin="maintenance")
        return Status.success()

    @hookimpl
    def predicate(self, ssn: Session, task: TaskInfo, node: NodeInfo) -> Status:
        """Refuse a node under maintenance."""
        return self._check(node)

    @hookimpl
    def batch_predicate(self, ssn: Session, task: TaskInfo, nodes: Sequence[NodeInfo]) -> Mapping[str, Status]:
        """Refuse every node under maintenance among ``nodes``."""
        return {node.name: status for node in nodes if not (status := self._check(node)).ok}


def main(argv: list[str] | None = None) -> int:
    """Schedule until SIGTERM, SIGINT or ``--max-cycles``."""
    parser = argparse.ArgumentParser(description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter)
    parser.add_argument("--kubeconfig", help="kubeconfig file (default: in-cluster, then ~/.kube/config)")
    parser.add_argument("--scheduler-name", default="volcano", help="the spec.schedulerName served")
    parser.add_argument("--period", type=float, default=1.0, help="seconds between cycles")
    parser.add_argument("--max-cycles", type=int, default=0, help="stop after this many cycles (0: never)")
    args = parser.parse_args(argv)

    cache = KubernetesCache(load_api(args.kubeconfig), scheduler_names=[args.scheduler_name])
    scheduler = Scheduler(cache, CONFIG, registry=Registry(plugins={"maintenance": MaintenancePlugin}))
    stop = threading.Event()
    signal.signal(signal.SIGTERM, lambda *_: stop.set())
    signal.signal(signal.SIGINT, lambda *_: stop.set())

    cache.start()
    cache.wait_ready()
    cycles = 0

    def report(result: Any) -> None:
        nonlocal cycles
        cycles += 1
        for task, node in result.binds:
            print(f"bind {task.namespace}/{task.name} to {node}", flush=True)
        if args.max_cycles and cycles >= args.max_cycles:
            stop.set()

    try:
        scheduler.run(stop, on_cycle=report)
    finally:
        cache.stop()  # waits for the binds and status writes in flight
    return 0


if __name__ == "__main__":
    sys.exit(main())
