"""Why is it pending, would it fit: explanations and dry runs on a copy of a live cluster's snapshot.

:class:`Inspector` answers ``volcanolib explain --kubeconfig``, and
``GET /explain/NAMESPACE/PODGROUP`` and ``POST /dryrun`` of ``volcanolib
serve``. Each answer works on a private copy of the live cache's snapshot
(:meth:`~volcanolib.cache.memory.InMemoryCache.full_snapshot`), in a
session of a scheduler of its own, built from the configuration the live
scheduler runs, over a :class:`~volcanolib.cache.snapshot.SnapshotCache`:
a cache that holds the copy and nothing else. That session's binds,
evictions and status writes are recorded there and go nowhere: it has no
binder, no evictor, no status writer and no connection to reach the API
server with. One answer is computed at a time.
"""

from __future__ import annotations

import datetime
import logging
import threading
import time
import urllib.parse
from collections.abc import Callable, Mapping
from typing import Any, Final

import attrs

from volcanolib.api.job import ConditionType, JobInfo, PodGroupPhase
from volcanolib.api.task import TaskStatus
from volcanolib.cache.snapshot import SnapshotCache
from volcanolib.errors import ManifestError, VolcanolibError
from volcanolib.framework.config import SchedulerConfig
from volcanolib.framework.registry import Registry
from volcanolib.kube.live.cache import KubernetesCache
from volcanolib.kube.loader import ManifestLoader, cluster_queue_facts
from volcanolib.manifests import fields as f
from volcanolib.manifests.admission import default_pod_group, validate_pod_group
from volcanolib.manifests.documents import parse_documents
from volcanolib.manifests.fields import Ref
from volcanolib.scheduler import Scheduler
from volcanolib.sim.explain import Explanation, explain_with, find_group

__all__ = ["MAX_BODY", "DryRun", "InspectionError", "Inspector", "http_answer", "request_body"]

log = logging.getLogger("volcanolib.kube.live")

#: The largest request body ``POST /dryrun`` reads, in bytes (a larger one is refused with ``413``).
MAX_BODY: Final = 1 << 20
#: How long a request waits for the answer being computed before it is refused with ``429``.
WAIT: Final = 10.0
#: What a dry run takes, by kind: the API groups it is read from.
_KINDS: Final = {"Job": "batch.volcano.sh", "PodGroup": "scheduling.volcano.sh", "Pod": ""}
_GROUP_NAME: Final = "scheduling.k8s.io/group-name"


class InspectionError(VolcanolibError):
    """A request the inspector cannot answer: ``status`` is the HTTP status to answer with.

    :param status: ``400`` unreadable, ``404`` no such PodGroup, ``409`` the
        object already exists, ``413`` too large, ``422`` refused (an unknown
        kind, Volcano's admission), ``429`` busy, ``503`` not ready.
    """

    def __init__(self, status: int, message: str) -> None:
        super().__init__(message)
        self.status = status
        self.message = message


@attrs.frozen
class DryRun:
    """What the next cycle would do with a Job, or a PodGroup and its pods, submitted now.

    .. versionadded:: 0.2
    """

    #: ``namespace/name`` of the PodGroup (a Job's is made as Volcano's job controller makes it).
    pod_group: str
    queue: str
    #: ``bound`` (the gang would be bound), ``pipelined`` (placed once the pods in :attr:`evicts`
    #: are gone), ``pending`` (not placed: see :attr:`reason`), or ``not-enqueued`` (its PodGroup
    #: was not admitted by ``enqueue``).
    outcome: str
    #: The PodGroup's phase at the end of the cycle.
    phase: str
    #: Each pod: ``(namespace/name, node or "", bound|pipelined|pending, why it waits or "")``.
    pods: tuple[tuple[str, str, str, str], ...]
    #: Pods evicted on the nodes where the job's pods wait: ``(namespace/name, node, podGroup, reason)``.
    evicts: tuple[tuple[str, str, str, str], ...]
    #: The PodGroup's ``Unschedulable`` condition message, when it has one.
    reason: str
    #: What the job is short of, in words (``""``: nothing known).
    shortfall: str
    #: Binds and evictions the same cycle would make for other jobs.
    other_binds: int
    other_evictions: int
    #: Seconds: reading and admitting the objects (``read``), copying the cluster's snapshot (``copy``),
    #: then the cycle, its parts as :attr:`CycleResult.timings <volcanolib.scheduler.CycleResult.timings>` has them.
    seconds: Mapping[str, float]
    #: What reading the objects found questionable (a PodGroup with fewer pods than minMember, say).
    warnings: tuple[str, ...] = ()

    def to_dict(self) -> dict[str, Any]:
        """As JSON values (the answer of ``POST /dryrun``)."""
        return {
            "podGroup": self.pod_group,
            "queue": self.queue,
            "admitted": True,
            "outcome": self.outcome,
            "placed": self.outcome == "bound",
            "phase": self.phase,
            "pods": [
                {"pod": pod, "node": node or None, "how": how, "reason": reason or None}
                for pod, node, how, reason in self.pods
            ],
            "evicts": [
                {"pod": pod, "node": node, "podGroup": group or None, "reason": reason}
                for pod, node, group, reason in self.evicts
            ],
            "reason": self.reason or None,
            "shortfall": self.shortfall or None,
            "warnings": list(self.warnings),
            "cycle": {
                "otherBinds": self.other_binds,
                "otherEvictions": self.other_evictions,
                "seconds": {k: round(v, 4) for k, v in self.seconds.items()},
            },
        }


class Inspector:
    """Explanations and dry runs on copies of a live cache's snapshot, one at a time.

    :param cache: the live cache (read only: its snapshot is copied).
    :param config: the configuration the live scheduler runs now (asked at
        each answer, so a reloaded configuration is followed).
    :param registry: where plugins and actions are found.
    :param unavailable: why no answer can be given now (a replica that is
        not leading has no cache), or ``None``.
    :param wait: seconds a request waits for the answer being computed before it is refused.
    """

    def __init__(
        self,
        cache: KubernetesCache,
        config: Callable[[], SchedulerConfig],
        *,
        registry: Registry | None = None,
        seed: int = 0,
        unavailable: Callable[[], str | None] | None = None,
        wait: float = WAIT,
    ) -> None:
        self.cache = cache
        self.config = config
        self.registry = registry or Registry()
        self.seed = seed
        self.unavailable = unavailable
        self.wait = wait
        self._lock = threading.Lock()
        self._scheduler: Scheduler | None = None

    # ------------------------------------------------------------------ the session

    def _check(self) -> None:
        why = self.unavailable() if self.unavailable is not None else None
        if why is None and not self.cache.ready:
            missing = ", ".join(r.kind for r in self.cache.reflectors if not r.synced.is_set())
            why = f"the cache is not ready: still listing {missing}"
        if why is not None:
            raise InspectionError(503, why)

    def _scheduler_on(self, snapshot: SnapshotCache) -> Scheduler:
        """A scheduler of the running configuration over ``snapshot`` (built again when the configuration changes)."""
        config = self.config()
        scheduler = self._scheduler
        if scheduler is None or scheduler.config is not config:
            scheduler = Scheduler(snapshot, config, seed=self.seed, registry=self.registry)
            self._scheduler = scheduler
        scheduler.cache = snapshot
        return scheduler

    def _one_at_a_time(self) -> threading.Lock:
        if not self._lock.acquire(timeout=self.wait):
            raise InspectionError(429, f"busy: another explanation or dry run took more than {self.wait:g} s")
        return self._lock

    # ------------------------------------------------------------------ explain

    def explain(self, name: str) -> Explanation:
        """Why the PodGroup ``name`` (``namespace/name``, or a name unique across namespaces) waits.

        As ``volcanolib explain`` offline, on a copy of the cluster as the
        cache holds it now; the reason is the group's ``Unschedulable``
        condition as the scheduler last wrote it.

        :raises InspectionError: ``404`` for a PodGroup the cluster does not
            have, ``503`` before the cache is ready, ``429`` when busy.
        """
        self._check()
        lock = self._one_at_a_time()
        try:
            cluster = self.cache.full_snapshot()
            known = set(cluster.jobs) | set(cluster.skipped_jobs)
            try:
                uid = find_group(known, name, "the cluster")
            except ManifestError as exc:
                raise InspectionError(404, str(exc)) from None
            job = cluster.jobs.get(uid)
            reason = _unschedulable(job) if job is not None else cluster.skipped_jobs.get(uid)
            return explain_with(self._scheduler_on(SnapshotCache(cluster)), uid, reason=reason, state="as it is now")
        finally:
            lock.release()

    # ------------------------------------------------------------------ dry run

    def dry_run(self, text: str, *, source: str = "request body") -> DryRun:
        """What the next cycle would do with the Job, or PodGroup and pods, of ``text`` (YAML or JSON).

        The objects go through Volcano's admission (a Job's defaults and
        checks, a PodGroup's queue), a Job is made into its PodGroup and
        pods as Volcano's job controller makes them, and they are added,
        new, to a copy of the cluster; one cycle of the running
        configuration runs on it. Nothing is bound, evicted or written.

        :raises InspectionError: ``400`` for text that is not YAML or JSON,
            ``422`` for objects a dry run does not take or admission refuses,
            ``409`` for a PodGroup or pod the cluster already has, ``503``
            before the cache is ready, ``429`` when busy.
        """
        self._check()
        try:
            documents = parse_documents(text, source=source)
        except ManifestError as exc:
            raise InspectionError(400, str(exc)) from None
        objects = _objects(documents)
        lock = self._one_at_a_time()
        try:
            return self._dry_run(objects, source)
        finally:
            lock.release()

    def _dry_run(self, objects: list[dict[str, Any]], source: str) -> DryRun:
        cache = self.cache
        started = time.perf_counter()
        with cache.lock:
            queues = cache.queues()
            classes = list(cache.reader.priority_classes.values())
        loader = ManifestLoader(scheduler_name=cache.scheduler_names[0], default_queue=cache.default_queue)
        loader.log_warnings = False  # they are the asker's: they go into the answer
        loader.know(queues=queues, priority_classes=classes)
        facts = cluster_queue_facts(queues, cache.default_queue)
        now = _now()
        try:
            for i, obj in enumerate(objects):
                where = f"object {i + 1}" if len(objects) > 1 else ""
                ref = Ref(source, where, obj["kind"])
                meta = dict(f.mapping(obj.get("metadata"), ref, "metadata"))
                meta.setdefault("namespace", "default")
                meta.setdefault("creationTimestamp", now)
                obj = {**obj, "metadata": meta}
                if obj["kind"] == "PodGroup":
                    obj = default_pod_group(obj)
                    ref.name, ref.namespace = str(meta.get("name") or ""), str(meta["namespace"])
                    validate_pod_group(obj, ref, queues=facts)
                loader.add(obj, source=source, where=where)
            loaded = loader.load()
        except ManifestError as exc:
            raise InspectionError(422, str(exc)) from None
        job = self._new_job(loaded, objects)
        read = time.perf_counter()
        cluster = cache.full_snapshot()
        if job.uid in cluster.jobs or job.uid in cluster.skipped_jobs:
            raise InspectionError(
                409, f"PodGroup {job.uid} already exists in the cluster: a dry run answers for a new one"
            )
        known_pods = {t.key for node in cluster.nodes.values() for t in node.tasks.values()}
        known_pods.update(t.key for j in cluster.jobs.values() for t in j.tasks.values())
        taken = sorted(t.key for t in job.tasks.values() if t.key in known_pods)
        if taken:
            raise InspectionError(409, f"pod {taken[0]} already exists in the cluster: a dry run answers for new pods")
        if job.queue not in cluster.queues:
            raise InspectionError(422, f"queue {job.queue!r} of PodGroup {job.uid} does not exist")
        cluster.jobs[job.uid] = job
        copied = time.perf_counter()
        snapshot = SnapshotCache(cluster)
        result = self._scheduler_on(snapshot).run_once()
        seconds = {"read": read - started, "copy": copied - read, **result.timings}
        after = result.session.jobs.get(job.uid) if result.session is not None else None
        return _outcome(job, after, snapshot, seconds, tuple(loaded.warnings))

    def _new_job(self, loaded: Any, objects: list[dict[str, Any]]) -> JobInfo:
        """The one new job the loaded objects make, with its tasks, as the cache would build it."""
        groups = loaded.pod_groups
        if len(groups) != 1:
            names = ", ".join(f"{pg.namespace}/{pg.name}" for pg in groups)
            raise InspectionError(422, f"a dry run takes the pods of one PodGroup; these make {len(groups)}: {names}")
        pg = groups[0]
        uid = f"{pg.namespace}/{pg.name}"
        job = JobInfo.from_pod_group(pg.clone(), priority=self.cache.job_priority(pg))
        if not pg.queue:
            job.queue = self.cache.default_queue
        for task in loaded.tasks:
            if task.job != uid:
                raise InspectionError(422, f"pod {task.key} is not a pod of PodGroup {uid} (annotation {_GROUP_NAME})")
            if task.node_name or task.status is not TaskStatus.PENDING:
                raise InspectionError(422, f"pod {task.key} is already placed: a dry run takes pods not yet scheduled")
            job.add_task_info(task)
        if not job.tasks:
            names = ", ".join(self.cache.scheduler_names)
            raise InspectionError(
                422, f"PodGroup {uid} has no pod this scheduler would schedule (schedulerName {names})"
            )
        return job


def _objects(documents: list[Any]) -> list[dict[str, Any]]:
    """The objects of the documents (lists flattened), each of a kind a dry run takes."""
    out: list[dict[str, Any]] = []
    stack = list(reversed(documents))
    while stack:
        obj = stack.pop()
        if obj is None:
            continue
        if not isinstance(obj, dict):
            raise InspectionError(422, f"expected a Kubernetes object (a mapping), got {type(obj).__name__}")
        kind = obj.get("kind")
        if isinstance(kind, str) and kind.endswith("List") and isinstance(obj.get("items"), list):
            stack.extend(reversed(obj["items"]))
            continue
        api_version = obj.get("apiVersion")
        group = api_version.rpartition("/")[0] if isinstance(api_version, str) and "/" in api_version else ""
        if not isinstance(kind, str) or _KINDS.get(kind) != group:
            label = f"{kind} ({api_version})" if api_version else str(kind)
            raise InspectionError(
                422,
                f"unknown kind {label}: a dry run takes a Volcano Job (batch.volcano.sh/v1alpha1), "
                "or a PodGroup (scheduling.volcano.sh/v1beta1) with its Pods (v1)",
            )
        out.append(obj)
    if not out:
        raise InspectionError(422, "no object: a dry run takes a Volcano Job, or a PodGroup with its Pods")
    kinds = [obj["kind"] for obj in out]
    if kinds.count("Job") + kinds.count("PodGroup") != 1 or ("Job" in kinds and len(kinds) > 1):
        raise InspectionError(
            422, f"a dry run takes one Volcano Job alone, or one PodGroup with its Pods; got {', '.join(kinds)}"
        )
    if "PodGroup" in kinds:
        (group,) = [_name(obj) for obj in out if obj["kind"] == "PodGroup"]
        for obj in out:
            meta = obj.get("metadata")
            annotations = meta.get("annotations") if isinstance(meta, dict) else None
            named = annotations.get(_GROUP_NAME) if isinstance(annotations, dict) else None
            if obj["kind"] == "Pod" and named != group:
                says = f"its annotation {_GROUP_NAME} says {named!r}"
                raise InspectionError(422, f"pod {_name(obj)} is not a pod of PodGroup {group}: {says}")
    return out


def _name(obj: Mapping[str, Any]) -> str:
    meta = obj.get("metadata")
    return str(meta.get("name") or "") if isinstance(meta, dict) else ""


def _now() -> str:
    return datetime.datetime.now(datetime.timezone.utc).strftime("%Y-%m-%dT%H:%M:%SZ")


def _unschedulable(job: JobInfo) -> str | None:
    """The message of the group's ``Unschedulable`` condition, if it has one."""
    for cond in job.pod_group.conditions:
        if cond.type is ConditionType.UNSCHEDULABLE and cond.status == "True":
            return cond.message
    return None


def _outcome(
    job: JobInfo, after: JobInfo | None, snapshot: SnapshotCache, seconds: dict[str, float], warnings: tuple[str, ...]
) -> DryRun:
    """The dry run's answer from the cycle's records (``after``: the job as the session left it)."""
    ours = set(job.tasks)
    bound = {task.uid: node for task, node in snapshot.binds if task.uid in ours}
    state = after if after is not None else job
    pods = []
    waiting_on: set[str] = set()
    for task in sorted(state.tasks.values(), key=lambda t: t.name):
        if task.uid in bound:
            pods.append((task.key, bound[task.uid], "bound", ""))
        elif task.status is TaskStatus.PIPELINED:
            waiting_on.add(task.node_name)
            pods.append((task.key, task.node_name, "pipelined", state.task_scheduling_reason(task)[1]))
        else:
            pods.append((task.key, "", "pending", state.task_scheduling_reason(task)[1]))
    evicts = tuple(
        (task.key, task.node_name, task.job, why) for task, why in snapshot.evictions if task.node_name in waiting_on
    )
    phase = state.pod_group.phase
    if len(bound) >= state.min_available and bound:
        outcome = "bound"
    elif waiting_on:
        outcome = "pipelined"
    elif phase is PodGroupPhase.PENDING:
        outcome = "not-enqueued"
    else:
        outcome = "pending"
    return DryRun(
        pod_group=job.uid,
        queue=job.queue,
        outcome=outcome,
        phase=phase.value,
        pods=tuple(pods),
        evicts=evicts,
        reason=_unschedulable(state) or "",
        shortfall=state.shortfall,
        other_binds=len(snapshot.binds) - len(bound),
        other_evictions=len(snapshot.evictions) - len(evicts),
        seconds=seconds,
        warnings=warnings,
    )


# ---------------------------------------------------------------------- HTTP


def http_answer(
    inspector: Inspector,
    method: str,
    target: str,
    header: Callable[[str], str | None],
    read: Callable[[int], bytes],
    *,
    max_body: int = MAX_BODY,
) -> tuple[int, dict[str, Any]] | None:
    """The answer to one request for ``/explain/...`` or ``/dryrun``, or ``None`` for any other path.

    :param target: the request's path and query.
    :param header: the value of one of its headers, by name (``Content-Length`` is read), or ``None``.
    :param read: reads that many bytes of its body (called only for a body
        within ``max_body``).
    :returns: the HTTP status and the JSON answer: the explanation or the
        dry run, or ``{"status": code, "error": message}``.
    """
    path, _, query = target.partition("?")
    params = urllib.parse.parse_qs(query)
    try:
        if path.startswith("/explain/") or path == "/explain":
            if method != "GET":
                raise InspectionError(405, f"{method} /explain: only GET is served")
            name = urllib.parse.unquote(path[len("/explain/") :]).strip("/")
            if name.count("/") != 1 or not all(name.split("/")):
                raise InspectionError(400, f"expected /explain/NAMESPACE/PODGROUP, got {path!r}")
            max_nodes = _natural(params.get("maxNodes", ["20"])[-1], "maxNodes")
            return 200, inspector.explain(name).to_dict(max_nodes=max_nodes)
        if path == "/dryrun":
            if method != "POST":
                raise InspectionError(405, f"{method} /dryrun: only POST is served")
            text = request_body(header, read, max_body)
            return 200, inspector.dry_run(text).to_dict()
    except InspectionError as exc:
        return exc.status, {"status": exc.status, "error": exc.message}
    except Exception as exc:  # a failing plugin or a bug: an answer all the same, and a log line
        log.exception("%s %s failed", method, path)
        return 500, {"status": 500, "error": f"{type(exc).__name__}: {exc}"}
    return None


def _natural(text: str, name: str) -> int:
    try:
        value = int(text)
    except ValueError:
        value = -1
    if value < 0:
        raise InspectionError(400, f"{name}: expected 0 or more, got {text!r}")
    return value


def request_body(header: Callable[[str], str | None], read: Callable[[int], bytes], max_body: int) -> str:
    """The request's body as text.

    :raises InspectionError: 411 without a ``Content-Length``, 413 above ``max_body`` bytes,
        400 for a body that is not UTF-8.
    """
    length_text = header("Content-Length")
    if length_text is None or header("Transfer-Encoding"):
        raise InspectionError(411, "the request needs a Content-Length (a body of known size)")
    try:
        length = int(length_text)
    except ValueError:
        raise InspectionError(400, f"Content-Length: expected a number, got {length_text!r}") from None
    if length > max_body:
        raise InspectionError(413, f"the body has {length} bytes; at most {max_body} are read")
    if length < 0:
        raise InspectionError(400, f"Content-Length: expected a number, got {length_text!r}")
    try:
        return read(length).decode("utf-8")
    except UnicodeDecodeError:
        raise InspectionError(400, "the body is not UTF-8 text (YAML or JSON)") from None
