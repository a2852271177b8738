"""Prometheus metrics of ``volcanolib serve``, under Volcano's names where Volcano has them.

Volcano's names (all prefixed ``volcano_``, durations in milliseconds):
``e2e_scheduling_latency_milliseconds``, ``open_session_duration_milliseconds``,
``action_scheduling_latency_milliseconds`` (label ``action``),
``task_scheduling_latency_milliseconds`` (label ``stage``: ``Bound``),
``unschedule_job_count``, ``unschedule_task_count`` (label ``job_id``),
``job_retry_counts`` (label ``job_id``), ``pod_preemption_victims``,
``eviction_transactions_total``. volcanolib's own (prefixed ``volcanolib_``):
``bind_failures_total``, ``evictions_refused_total``, ``watch_relists_total``
(label ``kind``), ``cache_ready`` and ``leader``.
"""

from __future__ import annotations

import threading
import time
from http.server import BaseHTTPRequestHandler, ThreadingHTTPServer
from typing import Any

from volcanolib.kube.live._client import import_prometheus
from volcanolib.scheduler import CycleResult

__all__ = ["SchedulerMetrics", "serve_http"]

_NOT_ACTIONS = frozenset({"snapshot", "open", "close", "session"})


def _buckets(low: float, high: float, count: int) -> list[float]:
    """``count`` exponential buckets from ``low`` to ``high``, as Volcano's histograms have."""
    factor = (high / low) ** (1 / (count - 1))
    return [low * factor**i for i in range(count)]


class SchedulerMetrics:
    """The metrics of one scheduler, in a registry of their own.

    :param registry: a ``prometheus_client.CollectorRegistry`` (a new one by default).
    """

    def __init__(self, registry: Any = None) -> None:
        prom = import_prometheus()
        self.registry = registry if registry is not None else prom.CollectorRegistry()
        reg = self.registry
        h, g, c = prom.Histogram, prom.Gauge, prom.Counter
        self.e2e = h(
            "volcano_e2e_scheduling_latency_milliseconds",
            "E2e scheduling latency in milliseconds (scheduling algorithm + binding)",
            buckets=_buckets(1, 5000, 20),
            registry=reg,
        )
        self.open = h(
            "volcano_open_session_duration_milliseconds",
            "Open session duration in milliseconds",
            buckets=_buckets(1, 5000, 20),
            registry=reg,
        )
        self.action = h(
            "volcano_action_scheduling_latency_milliseconds",
            "Action scheduling latency in milliseconds",
            ["action"],
            buckets=_buckets(1, 2000, 20),
            registry=reg,
        )
        self.task = h(
            "volcano_task_scheduling_latency_milliseconds",
            "Task scheduling latency in milliseconds",
            ["stage"],
            buckets=_buckets(50, 60000, 30),
            registry=reg,
        )
        self.unschedule_jobs = g(
            "volcano_unschedule_job_count", "Number of jobs that could not be scheduled", registry=reg
        )
        self.unschedule_tasks = g(
            "volcano_unschedule_task_count", "Number of tasks that could not be scheduled", ["job_id"], registry=reg
        )
        self.retries = c("volcano_job_retry_counts", "Number of retry counts for one job", ["job_id"], registry=reg)
        self.victims = g("volcano_pod_preemption_victims", "Number of selected preemption victims", registry=reg)
        self.evictions = c("volcano_eviction_transactions", "Number of evictions issued", ["action"], registry=reg)
        self.bind_failures = c(
            "volcanolib_bind_failures", "Binds the API server refused or that could not be sent", registry=reg
        )
        self.evictions_refused = c(
            "volcanolib_evictions_refused", "Evictions refused by the Eviction API (429)", registry=reg
        )
        self.relists = c("volcanolib_watch_relists", "Kinds listed again after a 410 Gone", ["kind"], registry=reg)
        self.ready = g("volcanolib_cache_ready", "1 once every kind has been listed", registry=reg)
        self.leader = g("volcanolib_leader", "1 while this replica schedules", registry=reg)
        self._unschedulable: set[str] = set()

    def observe_cycle(self, result: CycleResult) -> None:
        """Record one scheduling cycle."""
        timings = result.timings
        self.e2e.observe(timings.get("session", 0.0) * 1000)
        self.open.observe((timings.get("snapshot", 0.0) + timings.get("open", 0.0)) * 1000)
        for name, seconds in timings.items():
            if name not in _NOT_ACTIONS:
                self.action.labels(name).observe(seconds * 1000)
        for _task, reason in result.evictions:
            self.evictions.labels(reason).inc()
        if result.evictions:
            self.victims.set(len(result.evictions))
        self.bind_failures.inc(len(result.failed_binds))  # refused by the cache; the API's come by observe_failure
        session = result.session
        if session is None:
            return
        unschedulable: set[str] = set()
        for job in session.jobs.values():
            if job.pod_group.unschedulable_in(session.uid):
                name = job.pod_group.name
                unschedulable.add(name)
                self.unschedule_tasks.labels(name).set(max(0, job.min_available - job.ready_task_num()))
                self.retries.labels(name).inc()
        for gone in self._unschedulable - unschedulable:
            self.unschedule_tasks.remove(gone)
        self._unschedulable = unschedulable
        self.unschedule_jobs.set(len(unschedulable))

    def observe_failure(self, what: str) -> None:
        """The API server refused a bind (``"bind"``) or an eviction (``"eviction"``)."""
        (self.bind_failures if what == "bind" else self.evictions_refused).inc()

    def observe_bound(self, created: float) -> None:
        """A bind succeeded for a pod created at ``created`` (seconds since the epoch)."""
        if created:
            self.task.labels("Bound").observe(max(0.0, time.time() - created) * 1000)


def serve_http(metrics: SchedulerMetrics, host: str, port: int, healthy: threading.Event) -> ThreadingHTTPServer:
    """Serve ``/metrics`` and ``/healthz`` in a daemon thread; return the server (``server_address`` has the port)."""
    prom = import_prometheus()

    class Handler(BaseHTTPRequestHandler):
        def do_GET(self) -> None:
            path = self.path.split("?", 1)[0]
            if path == "/metrics":
                body = prom.generate_latest(metrics.registry)
                self._answer(200, body, prom.CONTENT_TYPE_LATEST)
            elif path == "/healthz":
                ok = healthy.is_set()
                self._answer(200 if ok else 503, b"ok" if ok else b"not running", "text/plain")
            else:
                self._answer(404, b"not found", "text/plain")

        def _answer(self, code: int, body: bytes, content_type: str) -> None:
            self.send_response(code)
            self.send_header("Content-Type", content_type)
            self.send_header("Content-Length", str(len(body)))
            self.end_headers()
            self.wfile.write(body)

        def log_message(self, format: str, *args: Any) -> None:
            pass

    server = ThreadingHTTPServer((host, port), Handler)
    server.daemon_threads = True
    threading.Thread(target=server.serve_forever, name="metrics-http", daemon=True).start()
    return server
