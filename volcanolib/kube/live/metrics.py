"""Prometheus metrics of ``volcanolib serve``, under Volcano's names where Volcano has them.

Volcano v1.14.1's scheduler metrics (all prefixed ``volcano_``, durations in
milliseconds, with its labels and buckets), and volcanolib's own (prefixed
``volcanolib_``); docs/serve.md lists every one of Volcano's names and which
are exported. What a cycle measures is recorded once the cycle is over
(:meth:`SchedulerMetrics.observe_cycle`, a few dictionary updates per bind
and per waiting job); what describes the cluster as the last session left
it (queues, shares, jobs' start times) is read from that session only when
``/metrics`` is scraped, so that it costs a cycle nothing.
"""

from __future__ import annotations

import json
import logging
import math
import ssl
import threading
import time
from collections import deque
from collections.abc import Callable, Iterable, Iterator, Mapping, Sequence
from http.server import BaseHTTPRequestHandler, ThreadingHTTPServer
from typing import TYPE_CHECKING, Any, Final

from volcanolib.api.queue import QueueFigures
from volcanolib.api.resource import INFINITE, Resource
from volcanolib.api.task import TaskStatus
from volcanolib.errors import ConfigError
from volcanolib.kube.live._client import import_prometheus
from volcanolib.scheduler import CycleResult

if TYPE_CHECKING:
    from volcanolib.framework.session import Session
    from volcanolib.kube.live.inspect import Inspector

__all__ = ["RATE_WINDOW", "Route", "SchedulerMetrics", "json_reply", "serve_http", "serve_routes"]

log = logging.getLogger("volcanolib.kube.live")

_NOT_ACTIONS = frozenset({"snapshot", "open", "close", "session"})
#: Seconds over which ``volcanolib_bound_pods_per_second`` counts binds.
RATE_WINDOW: Final = 60


def _exponential(start: float, factor: float, count: int) -> list[float]:
    """``count`` buckets ``start * factor**i``, as Go's ``prometheus.ExponentialBuckets``."""
    return [start * factor**i for i in range(count)]


def _spread(low: float, high: float, count: int) -> list[float]:
    """``count`` exponential buckets from ``low`` to ``high`` (Volcano's later ``ExponentialBucketsRange``)."""
    factor = (high / low) ** (1 / (count - 1))
    return [low * factor**i for i in range(count)]


class _Rate:
    """Events per second over the last ``window`` seconds, counted in one-second buckets (thread-safe)."""

    def __init__(self, window: int, clock: Callable[[], float] = time.monotonic) -> None:
        self.window = window
        self._clock = clock
        self._buckets: deque[list[int]] = deque()  # [second, count], oldest first
        self._lock = threading.Lock()

    def add(self, count: int = 1) -> None:
        second = int(self._clock())
        with self._lock:
            buckets = self._buckets
            if buckets and buckets[-1][0] == second:
                buckets[-1][1] += count
            else:
                buckets.append([second, count])
                while buckets[0][0] <= second - self.window:
                    buckets.popleft()

    def per_second(self) -> float:
        since = int(self._clock()) - self.window
        with self._lock:
            return sum(count for second, count in self._buckets if second > since) / self.window


class SchedulerMetrics:
    """The metrics of one scheduler, in a registry of their own.

    Hold :attr:`lock` while a cycle runs and :meth:`observe_cycle` records
    it (``volcanolib serve`` does): a scrape reads the last session under it.

    :param registry: a ``prometheus_client.CollectorRegistry`` (a new one by default).
    :param clock: seconds since the epoch (job times).
    """

    def __init__(self, registry: Any = None, clock: Callable[[], float] = time.time) -> None:
        prom = import_prometheus()
        self.registry = registry if registry is not None else prom.CollectorRegistry()
        self.clock = clock
        reg = self.registry
        h, g, c = prom.Histogram, prom.Gauge, prom.Counter
        five = _exponential(5, 2, 15)
        self.e2e = h(
            "volcano_e2e_scheduling_latency_milliseconds",
            "E2e scheduling latency in milliseconds (scheduling algorithm + binding)",
            buckets=five,
            registry=reg,
        )
        self.e2e_job = h(
            "volcano_e2e_job_scheduling_latency_milliseconds",
            "E2e job scheduling latency in milliseconds",
            buckets=_exponential(32, 2, 10),
            registry=reg,
        )
        self.open = h(
            "volcano_open_session_duration_milliseconds",
            "Open session duration in milliseconds",
            buckets=_spread(1, 5000, 20),
            registry=reg,
        )
        self.action = h(
            "volcano_action_scheduling_latency_milliseconds",
            "Action scheduling latency in milliseconds",
            ["action"],
            buckets=five,
            registry=reg,
        )
        self.plugin = h(
            "volcano_plugin_scheduling_latency_milliseconds",
            "Plugin scheduling latency in milliseconds",
            ["plugin", "OnSession"],
            buckets=five,
            registry=reg,
        )
        self.task = h(
            "volcano_task_scheduling_latency_milliseconds",
            "Task scheduling latency in milliseconds",
            buckets=five,
            registry=reg,
        )
        self.attempts = c(
            "volcano_schedule_attempts",
            "Number of attempts to schedule pods, by the result. 'unschedulable' means a pod could not be "
            "scheduled, while 'error' means an internal scheduler problem.",
            ["result"],
            registry=reg,
        )
        self.victims = g("volcano_pod_preemption_victims", "Number of selected preemption victims", registry=reg)
        self.unschedule_jobs = g("volcano_unschedule_job_count", "Number of jobs could not be scheduled", registry=reg)
        self.unschedule_tasks = g(
            "volcano_unschedule_task_count", "Number of tasks could not be scheduled", ["job_id"], registry=reg
        )
        self.evictions = c("volcano_eviction_transactions", "Number of evictions issued", ["action"], registry=reg)
        self.bind_failures = c(
            "volcanolib_bind_failures",
            "Binds that did not take effect (refused, or unanswered and unbound)",
            registry=reg,
        )
        self.binds_throttled = c(
            "volcanolib_binds_throttled",
            "Binds the API server refused with 429 (each sent again after its Retry-After)",
            registry=reg,
        )
        self.evictions_refused = c(
            "volcanolib_evictions_refused", "Evictions refused by the Eviction API (429)", registry=reg
        )
        self.relists = c("volcanolib_watch_relists", "Kinds listed again after a 410 Gone", ["kind"], registry=reg)
        self.ready = g("volcanolib_cache_ready", "1 once every kind has been listed", registry=reg)
        self.leader = g("volcanolib_leader", "1 while this replica schedules", registry=reg)
        self.resumed = c(
            "volcanolib_plugin_resumes",
            "Cycles in which a plugin resumed its kept state rather than opening afresh",
            ["plugin"],
            registry=reg,
        )
        self.unresolved = g(
            "volcanolib_binds_unresolved",
            "Binds whose answer was lost while the pod could not be read: their pods keep their nodes meanwhile",
            registry=reg,
        )
        self._rate = _Rate(RATE_WINDOW)
        self.pods_per_second = g(
            "volcanolib_bound_pods_per_second",
            f"Pods the API server confirmed bound in the last {RATE_WINDOW} seconds, divided by {RATE_WINDOW}",
            registry=reg,
        )
        self.pods_per_second.set_function(self._rate.per_second)
        #: Held while a cycle runs and is recorded, and while a scrape reads the last session.
        self.lock = threading.Lock()
        self._session: Session | None = None
        #: Counters whose names are Volcano's without ``_total`` (exposed by :meth:`expose`).
        self._retries: dict[str, float] = {}
        self._preemption_attempts = 0.0
        #: Per job uid: (name, queue, namespace, duration ms, unix seconds) of its last allocation.
        self._job_times: dict[str, tuple[str, str, str, float, float]] = {}
        #: Scalar resources each queue gauge reported (reported 0 once they go, as Volcano does).
        self._scalars: dict[tuple[str, str], set[str]] = {}
        self._unschedulable: set[str] = set()
        reg.register(_SessionCollector(self))

    # ------------------------------------------------------------------ what happens

    def observe_cycle(self, result: CycleResult) -> None:
        """Record one scheduling cycle (hold :attr:`lock`); its session is what the next scrape reads."""
        timings = result.timings
        self.e2e.observe(timings.get("session", 0.0) * 1000)
        self.open.observe((timings.get("snapshot", 0.0) + timings.get("open", 0.0)) * 1000)
        for name, seconds in timings.items():
            if name not in _NOT_ACTIONS:
                self.action.labels(name).observe(seconds * 1000)
        reasons: dict[str, int] = {}
        for _task, reason in result.evictions:
            reasons[reason] = reasons.get(reason, 0) + 1
        for reason, count in reasons.items():
            self.evictions.labels(reason).inc(count)
        if result.binds:
            self.attempts.labels("scheduled").inc(len(result.binds))
        if result.failed_binds:
            self.attempts.labels("error").inc(len(result.failed_binds))
            self.bind_failures.inc(len(result.failed_binds))  # refused by the cache; the API's come by observe_failure
        for plugin in result.resumed:
            self.resumed.labels(plugin).inc()
        session = result.session
        self._session = session
        if session is None:
            return
        for moment, seconds_by_plugin in session.plugin_seconds.items():
            for plugin, seconds in seconds_by_plugin.items():
                self.plugin.labels(plugin, moment).observe(seconds * 1000)
        if session.preemption_attempts:
            self._preemption_attempts += session.preemption_attempts
        if session.preemption_victims is not None:
            self.victims.set(session.preemption_victims)
        self._placed(session, result)
        self._waiting(session)
        if len(self._job_times) + len(self._retries) > 2 * len(session.jobs) + 1024:
            self._forget_gone_jobs(session)  # seldom: when nobody scrapes, the series of gone jobs pile up

    def _forget_gone_jobs(self, session: Session) -> None:
        """Drop the per-job series of jobs the session no longer has, as Volcano does when a job is deleted."""
        jobs = session.jobs
        times = self._job_times
        for uid in [uid for uid in times if uid not in jobs]:
            del times[uid]
        names = {job.pod_group.name for job in jobs.values()}
        retries = self._retries
        for name in [name for name in retries if name not in names]:
            del retries[name]

    def _placed(self, session: Session, result: CycleResult) -> None:
        """Volcano's end-to-end job figures, for each task the cycle placed (bound or pipelined)."""
        if not result.binds and not result.pipelined:
            return
        now = self.clock()
        jobs = session.jobs
        for task, _node in (*result.binds, *result.pipelined):
            job = jobs.get(task.job)
            if job is None:
                continue
            pg = job.pod_group
            waited = max(0.0, now - job.creation_timestamp) * 1000
            self.e2e_job.observe(waited)
            self._job_times[job.uid] = (pg.name, job.queue, pg.namespace, waited, now)

    def _waiting(self, session: Session) -> None:
        """The gang figures: jobs this session found unschedulable, their missing tasks, their retries."""
        unschedulable: set[str] = set()
        pending = 0
        for job in session.unsettled_jobs():  # a settled job is ready: it has no such condition
            if job.pod_group.unschedulable_in(session.uid):
                name = job.pod_group.name
                unschedulable.add(name)
                self.unschedule_tasks.labels(name).set(max(0, job.min_available - job.ready_task_num()))
                self._retries[name] = self._retries.get(name, 0.0) + 1
                pending += len(job.task_status_index.get(TaskStatus.PENDING) or ())
        for gone in self._unschedulable - unschedulable:
            self.unschedule_tasks.remove(gone)
        self._unschedulable = unschedulable
        self.unschedule_jobs.set(len(unschedulable))
        if pending:
            self.attempts.labels("unschedulable").inc(pending)

    def observe_failure(self, what: str) -> None:
        """A bind did not take effect (``"bind"``), was throttled (``"throttled"``), an eviction was refused."""
        if what == "bind":
            self.bind_failures.inc()
            self.attempts.labels("error").inc()
        elif what == "throttled":
            self.binds_throttled.inc()
        else:
            self.evictions_refused.inc()

    def observe_bound(self, created: float) -> None:
        """A bind took effect for a pod created at ``created`` (seconds since the epoch)."""
        self._rate.add()
        if created:
            self.task.observe(max(0.0, self.clock() - created) * 1000)

    # ------------------------------------------------------------------ exposition

    def expose(self) -> bytes:
        """The text of ``/metrics``: the registry's, then the counters Volcano names without ``_total``."""
        prom = import_prometheus()
        text: bytes = prom.generate_latest(self.registry)  # collects under the lock (the session's gauges)
        with self.lock:
            retries = dict(self._retries)
            attempts = self._preemption_attempts
        plain = _counter_text(
            "volcano_job_retry_counts",
            "Number of retry counts for one job",
            (({"job_id": name}, value) for name, value in sorted(retries.items())),
        ) + _counter_text(
            "volcano_total_preemption_attempts", "Total preemption attempts in the cluster till now", [({}, attempts)]
        )
        return text + plain.encode()

    # ------------------------------------------------------------------ read at scrape time

    def _collect(self) -> Iterator[Any]:
        """The gauges read from the last session (call with :attr:`lock` held)."""
        session = self._session
        if session is None:
            return
        jobs = session.jobs
        yield from self._queue_families(session)
        shares, namespaces = _plugin_shares(session)
        prom = import_prometheus()
        family = prom.core.GaugeMetricFamily
        job_share = family("volcano_job_share", "Share for one job", labels=["job_ns", "job_id"])
        for uid, share in shares.items():
            job = jobs.get(uid)
            if job is not None:
                job_share.add_metric([job.pod_group.namespace, job.pod_group.name], share)
        yield job_share
        namespace_share = family("volcano_namespace_share", "Share for one namespace", labels=["namespace_name"])
        for namespace, share in namespaces.items():
            namespace_share.add_metric([namespace], share)
        yield namespace_share
        labels = ["job_name", "queue", "job_namespace"]
        start = family("volcano_e2e_job_scheduling_start_time", "E2E job scheduling start time", labels=labels)
        for job in jobs.values():
            pg = job.pod_group
            start.add_metric([pg.name, job.queue, pg.namespace], float(int(job.creation_timestamp)))
        yield start
        duration = family("volcano_e2e_job_scheduling_duration", "E2E job scheduling duration", labels=labels)
        last = family("volcano_e2e_job_scheduling_last_time", "E2E job scheduling last time", labels=labels)
        self._forget_gone_jobs(session)
        for name, queue, namespace, waited, when in self._job_times.values():
            duration.add_metric([name, queue, namespace], waited)
            last.add_metric([name, queue, namespace], float(int(when)))
        yield duration
        yield last

    def _queue_families(self, session: Session) -> Iterator[Any]:
        """Volcano's ``volcano_queue_*`` gauges from the plugins that report queue figures."""
        prom = import_prometheus()
        family = prom.core.GaugeMetricFamily
        figures: dict[str, QueueFigures] = {}
        reported = False
        for plugin in session.plugins.values():
            report = getattr(plugin, "queue_figures", None)
            if callable(report):
                reported = True
                for figure in report():
                    figures.setdefault(figure.name, figure)
        if not reported:
            return
        # Queues without jobs: nothing allocated or requested, as Volcano's plugins report them.
        idle = [name for name in session.queues if name not in figures]
        vectors: dict[str, Callable[[QueueFigures], Resource | None]] = {
            "allocated": lambda f: f.allocated,
            "request": lambda f: f.request,
            "deserved": lambda f: f.deserved,
            "capacity": lambda f: f.capability,
            "real_capacity": lambda f: f.real_capability,
        }
        for what, read in vectors.items():
            cpu = family(
                f"volcano_queue_{what}_milli_cpu", f"{_title(what)} CPU count for one queue", labels=["queue_name"]
            )
            memory = family(
                f"volcano_queue_{what}_memory_bytes", f"{_title(what)} memory for one queue", labels=["queue_name"]
            )
            scalars = family(
                f"volcano_queue_{what}_scalar_resources",
                f"{_title(what)} scalar resources for one queue",
                labels=["queue_name", "resource"],
            )
            if what in ("allocated", "request"):
                for name in idle:
                    cpu.add_metric([name], 0.0)
                    memory.add_metric([name], 0.0)
            for name, figure in figures.items():
                vector = read(figure)
                if vector is None:
                    continue
                cpu.add_metric([name], _finite(vector.milli_cpu))
                memory.add_metric([name], _finite(vector.memory))
                seen = self._scalars.setdefault((what, name), set())
                seen.update(vector.scalars)
                for resource in sorted(seen):
                    scalars.add_metric([name, resource], _finite(vector.scalars.get(resource, 0.0)))
            yield from (cpu, memory, scalars)
        share = family("volcano_queue_share", "Share for one queue", labels=["queue_name"])
        weight = family("volcano_queue_weight", "Weight for one queue", labels=["queue_name"])
        overused = family("volcano_queue_overused", "If one queue is overused", labels=["queue_name"])
        for name, figure in figures.items():
            share.add_metric([name], figure.share)
            overused.add_metric([name], 1.0 if figure.overused else 0.0)
            if figure.weight is not None:
                weight.add_metric([name], float(figure.weight))
        yield from (share, weight, overused)


class _SessionCollector:
    """Reads the last session's gauges when the registry is collected."""

    def __init__(self, metrics: SchedulerMetrics) -> None:
        self.metrics = metrics

    def collect(self) -> Iterator[Any]:
        with self.metrics.lock:
            families = list(self.metrics._collect())
        yield from families

    def describe(self) -> list[Any]:
        return []  # read at scrape time: nothing to check at registration


def _plugin_shares(session: Session) -> tuple[Mapping[str, float], Mapping[str, float]]:
    """Job shares by job uid and namespace shares, from the first plugin reporting them (drf)."""
    for plugin in session.plugins.values():
        jobs = getattr(plugin, "job_shares", None)
        namespaces = getattr(plugin, "namespace_shares", None)
        if callable(jobs) and callable(namespaces):
            return jobs(), namespaces()
    return {}, {}


def _title(what: str) -> str:
    return {"real_capacity": "Real capacity"}.get(what, what.capitalize())


def _finite(value: float) -> float:
    """A resource amount as a sample (unbounded: +Inf)."""
    return math.inf if value >= INFINITE else float(value)


def _escape(value: str) -> str:
    return value.replace("\\", "\\\\").replace("\n", "\\n").replace('"', '\\"')


def _counter_text(name: str, help_text: str, samples: Iterable[tuple[Mapping[str, str], float]]) -> str:
    """A counter family in the Prometheus text format, under ``name`` exactly (no ``_total`` added)."""
    prom = import_prometheus()
    lines = [f"# HELP {name} {help_text}\n", f"# TYPE {name} counter\n"]
    for labels, value in samples:
        label_text = ",".join(f'{key}="{_escape(val)}"' for key, val in sorted(labels.items()))
        lines.append(f"{name}{{{label_text}}} " if label_text else f"{name} ")
        lines.append(f"{prom.utils.floatToGoString(value)}\n")
    return "".join(lines)


#: One route of :func:`serve_routes`: ``(method, path and query, header, read)`` to
#: ``(status, body, content type)``, or ``None`` for a path it does not serve.
Route = Callable[[str, str, Callable[[str], str | None], Callable[[int], bytes]], tuple[int, bytes, str] | None]


def json_reply(code: int, payload: object) -> tuple[int, bytes, str]:
    """A :data:`Route`'s answer carrying ``payload`` as JSON."""
    return code, (json.dumps(payload, indent=2) + "\n").encode(), "application/json"


def serve_http(
    metrics: SchedulerMetrics,
    host: str,
    port: int,
    healthy: threading.Event,
    inspector: Inspector | None = None,
    *,
    max_body: int | None = None,
) -> ThreadingHTTPServer:
    """Serve ``/metrics`` and ``/healthz`` in a daemon thread; return the server (``server_address`` has the port).

    With an ``inspector``, ``GET /explain/NAMESPACE/PODGROUP`` and ``POST
    /dryrun`` too (:func:`~volcanolib.kube.live.inspect.http_answer`),
    answered in JSON; without one they are ``404`` like any unknown path.

    :param max_body: the largest ``/dryrun`` body read, in bytes (``413`` beyond).
    :raises ConfigError: naming ``--metrics-address`` when the address cannot be listened on
        (a port in use, a host that does not resolve or is not this machine's).
    """
    prom = import_prometheus()
    from volcanolib.kube.live.inspect import MAX_BODY, http_answer

    limit = MAX_BODY if max_body is None else max_body

    def basics(method: str, target: str, header: Callable[[str], str | None], read: Callable[[int], bytes]) -> Any:
        path = target.split("?", 1)[0]
        if method == "GET" and path == "/metrics":
            return 200, metrics.expose(), prom.CONTENT_TYPE_LATEST
        if method == "GET" and path == "/healthz":
            ok = healthy.is_set()
            return (200 if ok else 503), (b"ok" if ok else b"not running"), "text/plain"
        return None

    routes: list[Route] = [basics]
    if inspector is not None:

        def inspect(method: str, target: str, header: Callable[[str], str | None], read: Callable[[int], bytes]) -> Any:
            answer = http_answer(inspector, method, target, header, read, max_body=limit)
            return None if answer is None else json_reply(*answer)

        routes.append(inspect)
    return serve_routes(host, port, routes, max_body=limit, flag="--metrics-address", name="metrics-http")


def serve_routes(
    host: str,
    port: int,
    routes: Sequence[Route],
    *,
    max_body: int,
    flag: str,
    name: str,
    tls: ssl.SSLContext | None = None,
) -> ThreadingHTTPServer:
    """Serve ``routes`` (GET and POST) in a daemon thread, over HTTPS with ``tls``; return the server.

    The first route that answers a request answers it; a path none serves is
    ``404``. A POST announcing a body above ``max_body`` bytes is ``413``
    before its body is sent (``Expect: 100-continue``); a body a route did
    not read is read away, so that it is not taken for the next request.

    :param flag: the command-line flag named when the address cannot be listened on.
    :param name: the serving thread's name.
    :raises ConfigError: naming ``flag`` when the address cannot be listened on
        (a port in use, a host that does not resolve or is not this machine's).
    """
    limit = max_body

    class Handler(BaseHTTPRequestHandler):
        protocol_version = "HTTP/1.1"
        #: Seconds a connection may stay silent (a TLS handshake included).
        timeout = 30

        def setup(self) -> None:
            super().setup()
            if isinstance(self.request, ssl.SSLSocket):  # the handshake, in this request's thread
                self.request.do_handshake()

        def do_GET(self) -> None:
            self._route("GET")

        def do_POST(self) -> None:
            self._route("POST")

        def _route(self, method: str) -> None:
            read = [False]

            def body(size: int) -> bytes:
                read[0] = True
                return self.rfile.read(size)

            for route in routes:
                answer = route(method, self.path, self.headers.get, body)
                if answer is not None:
                    break
            else:
                answer = (404, b"not found", "text/plain")
            if method == "POST" and not read[0]:
                self._discard_body()
            self._answer(*answer)

        def handle_expect_100(self) -> bool:
            # A client asking before it sends its body learns at once that it is too large.
            length = self.headers.get("Content-Length", "")
            if self.command == "POST" and length.isdigit() and int(length) > limit:
                self.close_connection = True
                self._answer(
                    *json_reply(413, {"status": 413, "error": f"the body has {length} bytes; at most {limit} are read"})
                )
                return False
            return bool(super().handle_expect_100())

        def _discard_body(self) -> None:
            """Read an unread body away (up to a bound), then close: it must not be taken for the next request.

            Closing with unread bytes would reset the connection and could
            lose the answer before the client reads it.
            """
            self.close_connection = True
            length = self.headers.get("Content-Length", "")
            left = min(int(length), 4 * limit) if length.isdigit() else 0
            while left > 0:
                chunk = self.rfile.read(min(left, 65536))
                if not chunk:
                    break
                left -= len(chunk)

        def _answer(self, code: int, body: bytes, content_type: str) -> None:
            self.send_response(code)
            self.send_header("Content-Type", content_type)
            self.send_header("Content-Length", str(len(body)))
            if self.close_connection:
                self.send_header("Connection", "close")
            self.end_headers()
            self.wfile.write(body)

        def log_message(self, format: str, *args: Any) -> None:
            pass

    class Server(ThreadingHTTPServer):
        daemon_threads = True

        def handle_error(self, request: Any, client_address: Any) -> None:
            # A client that breaks off (or fails the TLS handshake) costs a debug line, not a traceback.
            log.debug("%s: connection from %s failed", name, client_address, exc_info=True)

    try:
        server = Server((host, port), Handler, bind_and_activate=True)
    except OSError as exc:  # in use, no such host, not an address of this machine
        reason = exc.strerror or str(exc) or type(exc).__name__
        raise ConfigError(f"cannot listen on {host or '*'}:{port}: {reason}", key=flag) from None
    if tls is not None:
        server.socket = tls.wrap_socket(server.socket, server_side=True, do_handshake_on_connect=False)
    threading.Thread(target=server.serve_forever, name=name, daemon=True).start()
    return server
