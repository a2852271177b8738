"""``volcanolib serve``: schedule a live cluster, in place of Volcano's scheduler.

Lists and watches the cluster (:class:`~volcanolib.kube.live.cache.KubernetesCache`),
runs a :class:`~volcanolib.scheduler.Scheduler` cycle every period, serves
``/metrics`` and ``/healthz`` (and ``/explain`` and ``/dryrun``, see
:mod:`volcanolib.kube.live.inspect`), and optionally leads through a Lease. SIGTERM
(or SIGINT) stops it after the current cycle, once the binds and status
writes that cycle issued have been answered.
"""

from __future__ import annotations

import argparse
import logging
import os
import re
import signal
import ssl
import threading
from pathlib import Path
from typing import TYPE_CHECKING, Any, Final, TextIO

from volcanolib.errors import ConfigError

if TYPE_CHECKING:
    from volcanolib.kube.live.inspect import Inspector

__all__ = ["Server", "add_parser", "run"]

log = logging.getLogger("volcanolib.kube.live")

#: The plugin whose configuration makes serve watch HyperNodes.
TOPOLOGY_PLUGIN = "network-topology-aware"
#: Set to ``1`` or ``true`` to evict through the Eviction API (PodDisruptionBudgets honoured).
EVICTION_API_ENV = "VOLCANOLIB_EVICTION_API"


def _address(text: str) -> tuple[str, int]:
    host, sep, port = text.rpartition(":")
    try:
        number = int(port)
    except ValueError:
        number = -1
    if not sep or not 0 <= number <= 65535:
        raise argparse.ArgumentTypeError(f"expected HOST:PORT (such as :8080), got {text!r}")
    return host.strip("[]"), number


def _period(text: str) -> float:
    try:
        value = float(text)
    except ValueError:
        value = -1.0
    if not value > 0:
        raise argparse.ArgumentTypeError(f"expected a positive number of seconds, got {text!r}")
    return value


_UNITS: Final = {"h": 3600.0, "m": 60.0, "s": 1.0, "ms": 0.001}
_DURATION: Final = re.compile(r"(\d+(?:\.\d*)?|\.\d+)(h|ms|m|s)")


def _duration(text: str) -> float:
    """Seconds, from a number of seconds (``15``) or a Go duration (``15s``, ``1m30s``, ``500ms``), positive."""
    value = -1.0
    try:
        value = float(text)
    except ValueError:
        parts = _DURATION.findall(text)
        if parts and "".join(number + unit for number, unit in parts) == text:
            value = sum(float(number) * _UNITS[unit] for number, unit in parts)
    if not value > 0:
        raise argparse.ArgumentTypeError(f"expected a positive duration (such as 15s or 15), got {text!r}")
    return value


#: client-go's defaults, which Volcano's scheduler keeps: lease duration, renew deadline, retry period (seconds).
LEASE_DEFAULTS: Final = (15.0, 10.0, 2.0)


def add_parser(sub: Any) -> argparse.ArgumentParser:
    """Register the ``serve`` command on an argparse sub-parser collection."""
    serve = sub.add_parser(
        "serve",
        help="schedule a live Kubernetes cluster (extra 'kube')",
        description="Schedule the pods of a live Kubernetes cluster as Volcano's scheduler would: "
        "same schedulerName, PodGroup and Queue objects, same configuration file.",
    )
    serve.add_argument(
        "--kubeconfig", metavar="FILE", help="kubeconfig file (default: in-cluster, then ~/.kube/config)"
    )
    serve.add_argument("--conf", metavar="FILE", help="volcano-scheduler.conf, reloaded when it changes")
    serve.add_argument(
        "--scheduler-name",
        metavar="NAME",
        action="append",
        dest="scheduler_names",
        help="schedule pods with this spec.schedulerName (repeatable; default volcano)",
    )
    serve.add_argument(
        "--period", type=_period, default=1.0, metavar="SECONDS", help="seconds between cycles (default 1)"
    )
    serve.add_argument(
        "--metrics-address",
        type=_address,
        default=("", 8080),
        metavar="HOST:PORT",
        help="where /metrics and /healthz are served (default :8080)",
    )
    serve.add_argument(
        "--inspection",
        action=argparse.BooleanOptionalAction,
        default=True,
        help="serve GET /explain/NAMESPACE/PODGROUP and POST /dryrun on the metrics address (default: on)",
    )
    serve.add_argument(
        "--webhooks",
        action="store_true",
        help="also serve Volcano's admission as validating and mutating webhooks over HTTPS (docs/admission.md)",
    )
    serve.add_argument(
        "--webhook-address",
        type=_address,
        default=("", 8443),
        metavar="HOST:PORT",
        help="where the webhooks are served (default :8443)",
    )
    serve.add_argument("--tls-cert-file", metavar="FILE", help="PEM certificate (chain) of the webhooks' server")
    serve.add_argument("--tls-private-key-file", metavar="FILE", help="PEM private key of --tls-cert-file")
    serve.add_argument(
        "--leader-elect", action="store_true", help="schedule only while holding a coordination.k8s.io Lease"
    )
    serve.add_argument(
        "--lock-namespace",
        "--leader-elect-resource-namespace",
        metavar="NAMESPACE",
        default="volcano-system",
        help="namespace of the leader-election Lease (default volcano-system)",
    )
    lease_flags = (
        ("lease-duration", "how long a Lease its holder stopped renewing stays its"),
        ("renew-deadline", "how long the leader keeps scheduling without renewing its Lease"),
        ("retry-period", "time between two attempts to take or renew the Lease"),
    )
    for (flag, what), default in zip(lease_flags, LEASE_DEFAULTS, strict=True):
        serve.add_argument(
            f"--leader-elect-{flag}",
            f"--{flag}",
            dest=flag.replace("-", "_"),
            type=_duration,
            default=default,
            metavar="DURATION",
            help=f"{what} (default {default:g}s)",
        )
    serve.add_argument(
        "--verify", action="store_true", help="check every shortcut against computing afresh (slower, same decisions)"
    )
    serve.set_defaults(handler=run)
    parser: argparse.ArgumentParser = serve
    return parser


class Server:
    """One ``volcanolib serve`` process, without the command line: for tests and embedding.

    :param api: the connection.
    :param conf: a volcano-scheduler.conf (reloaded when it changes), or
        ``None`` for the default configuration.
    :param scheduler_names: the ``spec.schedulerName`` values served.
    :param period: seconds between the end of a cycle and the start of the next.
    :param metrics_address: ``(host, port)`` for ``/metrics`` and ``/healthz``; ``None`` serves none.
    :param leader_elect: schedule only while holding the Lease.
    :param lock_namespace: the Lease's namespace.
    :param lease: ``(lease_duration, renew_deadline, retry_period)`` in seconds.
    :param inspection: serve ``/explain`` and ``/dryrun`` on the metrics address
        (:mod:`volcanolib.kube.live.inspect`).
    :param verify: run the scheduler in verify mode (``docs/incremental.md``).
    :param webhooks: ``(host, port, TLS context)`` where Volcano's admission is served as
        webhooks (:mod:`volcanolib.kube.live.webhooks`), by every replica, leading or not;
        ``None`` serves none.
    :param cache_options: more keyword arguments for :class:`KubernetesCache`.
    """

    def __init__(
        self,
        api: Any,
        *,
        conf: str | None = None,
        scheduler_names: tuple[str, ...] = ("volcano",),
        period: float = 1.0,
        metrics_address: tuple[str, int] | None = None,
        leader_elect: bool = False,
        lock_namespace: str = "volcano-system",
        lease: tuple[float, float, float] = LEASE_DEFAULTS,
        identity: str | None = None,
        inspection: bool = True,
        verify: bool = False,
        webhooks: tuple[str, int, ssl.SSLContext] | None = None,
        **cache_options: Any,
    ) -> None:
        from volcanolib.kube.live.cache import KubernetesCache
        from volcanolib.kube.live.leader import LeaseElector
        from volcanolib.kube.live.metrics import SchedulerMetrics
        from volcanolib.scheduler import Scheduler

        self.api = api
        self.period = period
        self.metrics = SchedulerMetrics()
        self.metrics_address = metrics_address
        self.elector: LeaseElector | None = None
        if leader_elect:
            name = scheduler_names[0] if len(scheduler_names) == 1 else "volcano"
            duration, deadline, retry = lease
            self.elector = LeaseElector(
                api,
                lock_namespace,
                name,
                identity=identity,
                lease_duration=duration,
                renew_deadline=deadline,
                retry_period=retry,
            )
        cache_options.setdefault("eviction_api", os.environ.get(EVICTION_API_ENV, "").lower() in ("1", "true", "yes"))
        self.cache = KubernetesCache(
            api,
            scheduler_names=scheduler_names,
            may_write=self.elector.is_leader if self.elector is not None else None,
            on_bound=self.metrics.observe_bound,
            on_relist=lambda kind: self.metrics.relists.labels(kind).inc(),
            on_failure=self.metrics.observe_failure,
            **cache_options,
        )
        self.scheduler = Scheduler(self.cache, Path(conf) if conf else None, period=period, verify=verify)
        #: Answers ``/explain`` and ``/dryrun`` (``None`` with ``inspection=False``).
        self.inspector: Inspector | None = None
        if inspection:
            from volcanolib.kube.live.inspect import Inspector

            scheduler = self.scheduler
            self.inspector = Inspector(
                self.cache,
                lambda: scheduler.config,
                registry=scheduler.registry,
                seed=scheduler.seed,
                unavailable=self._unavailable,
            )
        unresolved = self.cache.unresolved
        self.metrics.unresolved.set_function(lambda: float(len(unresolved)))
        if TOPOLOGY_PLUGIN in {p.name for tier in self.scheduler.config.tiers for p in tier.plugins}:
            self.cache.watch_hyper_nodes()
        self.healthy = threading.Event()
        #: Cycles run so far.
        self.cycles = 0
        self.http: Any = None
        self.webhooks = webhooks
        self.webhook_scheduler_name = scheduler_names[0]
        self.https: Any = None

    def _unavailable(self) -> str | None:
        """Why this replica cannot explain or dry-run now, or ``None``."""
        if self.elector is not None and not self.elector.is_leader():
            return (
                f"this replica ({self.elector.identity}) is not leading, so it does not watch the cluster: "
                f"ask the replica holding Lease {self.elector.namespace}/{self.elector.name}"
            )
        return None

    def run(self, stop: threading.Event) -> int:
        """Lead (if asked), list, then schedule every period until ``stop`` is set.

        :returns: 0 after a requested stop, 1 when the Lease was lost.
        """
        from volcanolib.kube.live.metrics import serve_http

        if self.metrics_address is not None:
            self.http = serve_http(self.metrics, *self.metrics_address, self.healthy, self.inspector)
        if self.webhooks is not None:
            from volcanolib.kube.live.webhooks import serve_webhooks

            try:
                self.https = serve_webhooks(*self.webhooks, scheduler_name=self.webhook_scheduler_name)
            except BaseException:
                self._close_http()
                raise
        self.healthy.set()
        code = 0
        started = False
        try:
            if self.elector is not None:
                self.elector.start()
                if not self.elector.wait_leading(stop):
                    return 0
                self.metrics.leader.set(1)
            self.cache.start()
            started = True
            while not self.cache.wait_ready(0.2):
                if stop.is_set():
                    return 0
            self.metrics.ready.set(1)
            nodes, _, tasks = self.cache.counts()
            log.info("cache ready: %d nodes, %d tasks", nodes, tasks)
            while not stop.is_set():
                if self.elector is not None and not self.elector.is_leader():
                    log.error("leadership lost: stopping")
                    code = 1
                    break
                with self.metrics.lock:  # a scrape reads the last session: not while the next one runs
                    try:
                        with self.cache.holding():  # binds and writes start once the cycle is over
                            result = self.scheduler.run_once()
                    except Exception:  # a failing cycle is reported; the next one starts afresh
                        log.exception("scheduling cycle failed")
                    else:
                        self.metrics.observe_cycle(result)
                self.cycles += 1
                stop.wait(self.period)
        finally:
            if started:
                self.cache.stop()
            if self.elector is not None:
                self.elector.stop(release=code == 0)
                self.metrics.leader.set(0)
            self.healthy.clear()
            self._close_http()
        return code

    def _close_http(self) -> None:
        for server in (self.http, self.https):
            if server is not None:
                server.shutdown()
                server.server_close()
        self.http = self.https = None


def run(args: argparse.Namespace, out: TextIO) -> int:
    """Run ``volcanolib serve`` until SIGTERM or SIGINT; return the exit status."""
    from volcanolib.kube.live._client import load_api

    if args.conf and not Path(args.conf).is_file():
        raise ConfigError("no such file", source=args.conf)
    lease = (args.lease_duration, args.renew_deadline, args.retry_period)
    if not lease[2] < lease[1] < lease[0]:
        raise ConfigError(
            "leader election needs --leader-elect-retry-period < --leader-elect-renew-deadline"
            f" < --leader-elect-lease-duration, got {lease[2]:g}s, {lease[1]:g}s and {lease[0]:g}s"
        )
    webhooks = None
    if args.webhooks:
        from volcanolib.kube.live.webhooks import tls_context

        if not args.tls_cert_file or not args.tls_private_key_file:
            raise ConfigError("--webhooks needs --tls-cert-file and --tls-private-key-file")
        webhooks = (*args.webhook_address, tls_context(args.tls_cert_file, args.tls_private_key_file))
    names = tuple(dict.fromkeys(args.scheduler_names or ["volcano"]))
    api = load_api(args.kubeconfig)
    server = Server(
        api,
        conf=args.conf,
        scheduler_names=names,
        period=args.period,
        metrics_address=args.metrics_address,
        leader_elect=args.leader_elect,
        lock_namespace=args.lock_namespace,
        lease=lease,
        inspection=args.inspection,
        verify=args.verify,
        webhooks=webhooks,
    )
    stop = threading.Event()

    def request_stop(signum: int, frame: Any) -> None:
        stop.set()

    signal.signal(signal.SIGTERM, request_stop)
    signal.signal(signal.SIGINT, request_stop)
    out.write(f"volcanolib serve: scheduling pods of {', '.join(names)}\n")
    out.flush()
    return server.run(stop)
