"""The replay engine: the Scheduler, the job controller and a simulated kubelet over simulated time.

:func:`run_replay` keeps one :class:`~volcanolib.cache.memory.InMemoryCache`
and one :class:`~volcanolib.scheduler.Scheduler` for the whole replay. The
clock starts at the earliest arrival (0 when nothing has a
``creationTimestamp``) and a scheduling session runs every ``period``.
Between two sessions, events happen in time order; events at the same time
happen in this order (the tie rule), and in the order they were scheduled
within one kind:

1. arrivals (Volcano Jobs, PodGroups, pods), with the job controller's
   immediate reactions (a PodGroup, later its pods);
2. the actions of the workload's timeline (:mod:`volcanolib.replay.timeline`);
3. the job controller's timed reactions (``JobController.tick``);
4. pods starting (Running ``podStartup`` after their bind; a pod whose
   outcome is ``reject`` fails instead, its ``after`` later);
5. container restarts in place (the outcome's ``restarts N every D``);
6. pods finishing (Succeeded, or Failed by their exit code, as their
   attempt's outcome says; their resources are free from that moment);
7. deleted or evicted pods going away (``terminationGrace`` after the
   deletion), after which the job controller reacts (``PodEvicted``);
8. cancellations (a job not started ``cancel-after`` after its arrival is deleted).

Each pod attempt takes its outcome from :class:`~volcanolib.api.outcomes.PodOutcomes`
(per attempt, and per replica where they differ).

Events at the time of a session happen before it. Whatever an event or a
session causes at once (the controller creating pods, a PodGroup admitted by
``enqueue``) happens at that time too.

**Skipping.** A session changes the cluster only through binds, evictions
and PodGroup status; when one changed none of these and no event happened
since, the next session would see the same cluster and, seeded the same,
decide the same: nothing. Such sessions are skipped, up to the next event.
The tie-breaks of a session are seeded with ``seed`` plus the number of
earlier sessions that saw a changed cluster, so a session run on an
unchanged cluster (``every_period``) is seeded as the one before it, and the
results are the same either way. Events that change nothing a session
could act on skip sessions too: with only the actions of
:data:`FIT_BOUND_ACTIONS`, a pod is placed only where its request fits a
node's future idle resources, so while no pending pod fits any node (and no
PodGroup waits for admission, and no job still in the cluster changed since
the last session), the sessions after pods finish elsewhere are skipped.
Skipping needs every plugin and action to declare that it reads no clock
(``Traits(clock_free=True)``, see ``docs/incremental.md``); with one that
does not (for instance one admitting jobs that waited long enough), every
session runs, and the replay logs once which plugins or actions keep it off.

**Pods no node can ever take.** A pending pod whose request exceeds the
allocatable resources of every ready node, counting only the nodes its
``nodeSelector`` and required node affinity admit when the configuration
checks them (:data:`NODE_SELECTING_PLUGINS`), can never be placed: it is
reported once (a warning naming it and its job, when it arrives or at load
for bare pods), its job's record says why, and it no longer makes the
sessions after other pods finish run: it stays in the cluster and every
session that runs for another reason still tries it, so no decision about
any other job changes. The nodes are read at the start (a replay does not
change them).
"""

from __future__ import annotations

import gc
import heapq
import logging
import math
import time
from collections.abc import Callable, Hashable, Mapping
from pathlib import Path
from typing import Any, Final

import attrs

from volcanolib._gc import gc_frozen, gc_paused
from volcanolib.api.job import JobInfo, PodGroup, PodGroupPhase
from volcanolib.api.node import Node, NodeInfo, tolerated
from volcanolib.api.nodeselector import NodeSelector, required_node_affinity
from volcanolib.api.outcomes import Outcome
from volcanolib.api.queue import QueueInfo
from volcanolib.api.resource import CPU, MEMORY, PODS, Resource
from volcanolib.api.task import TaskInfo, TaskStatus
from volcanolib.cache.memory import InMemoryCache
from volcanolib.controllers.job import (
    Change,
    CreatePod,
    CreatePodGroup,
    DeletePod,
    DeletePodGroup,
    JobController,
    JobStatus,
    UpdatePodGroup,
)
from volcanolib.errors import ManifestError
from volcanolib.framework.config import DEFAULT_CONFIG, SchedulerConfig, load_config
from volcanolib.framework.traits import traits_of
from volcanolib.manifests import fields as f
from volcanolib.manifests.fields import Ref
from volcanolib.manifests.pods import PodReader, read_pod_group
from volcanolib.replay.inputs import PodTiming, TimedJob, Workload, pod_timing
from volcanolib.replay.records import JobRecord, PodRecord, QueueRecord, ReplayRecord, Sample
from volcanolib.replay.timeline import Action
from volcanolib.scheduler import Scheduler

__all__ = ["NODE_SELECTING_PLUGINS", "ReplayOptions", "run_replay"]

log = logging.getLogger("volcanolib.replay")

#: Plugins whose predicate refuses the nodes a pod's ``nodeSelector`` and required node affinity
#: exclude, unless their ``predicate.NodeAffinityEnable`` argument or ``enablePredicate`` switch is off.
NODE_SELECTING_PLUGINS: Final = frozenset({"predicates"})
#: Actions that place a task only on a node whose future idle resources fit its request.
FIT_BOUND_ACTIONS: Final = frozenset({"allocate", "backfill", "enqueue"})
#: Job phases in which a Volcano Job is finished (an Aborted one may be resumed).
FINISHED_PHASES: Final = frozenset({"Completed", "Failed", "Aborted", "Terminated"})
#: The annotation a Job's pod carries with its index in its task.
_TASK_INDEX: Final = "volcano.sh/task-index"

# Event kinds, in the order events of one time happen.
_ARRIVE, _ACTION, _TICK, _START, _RESTART, _FINISH, _GONE, _CANCEL = range(8)
#: Jobs with a pod no node can take that are named in a warning; the others are counted once.
_REPORTED: Final = 10
#: Sessions between two passes of the cyclic garbage collector in a replay (see _run).
_COLLECT_EVERY: Final = 2000
# Pod states.
_PENDING, _BOUND, _RUNNING, _DONE, _RELEASING, _GONE_STATE = range(6)
_HOLDS = frozenset({_BOUND, _RUNNING, _RELEASING})


@attrs.frozen
class ReplayOptions:
    """How a replay runs (times in seconds).

    :param period: seconds between two scheduling sessions.
    :param pod_startup: seconds from a pod's bind to its start (Running).
    :param termination_grace: seconds from a pod's deletion (or eviction) to its disappearance.
    :param until: stop this many seconds after the start (``None``: when every job has
        finished or nothing can change any more).
    :param every_period: run every session, even those that cannot change anything.
    :param seed: seeds the scheduler's tie-breaks.
    :param verify: run the scheduler in verify mode (``docs/incremental.md``): slower, same decisions.
    """

    period: float = 1.0
    pod_startup: float = 0.0
    termination_grace: float = 0.0
    until: float | None = None
    every_period: bool = False
    seed: int = 0
    verify: bool = False

    @classmethod
    def for_workload(
        cls,
        workload: Workload,
        *,
        period: float | None = None,
        pod_startup: float | None = None,
        termination_grace: float | None = None,
        until: float | None = None,
        every_period: bool = False,
        seed: int = 0,
        verify: bool = False,
    ) -> ReplayOptions:
        """Options from the workload's ``replay:`` settings, each overridden by the argument given."""
        settings = workload.settings

        def pick(given: float | None, setting: float | None, default: float | None) -> float | None:
            return given if given is not None else setting if setting is not None else default

        return cls(
            period=pick(period, settings.period, 1.0) or 1.0,
            pod_startup=pick(pod_startup, settings.pod_startup, 0.0) or 0.0,
            termination_grace=pick(termination_grace, settings.termination_grace, 0.0) or 0.0,
            until=pick(until, settings.until, None),
            every_period=every_period,
            seed=seed,
            verify=verify,
        )


class _Job:
    __slots__ = (
        "active",
        "cancelled",
        "controlled",
        "expected",
        "finished",
        "key",
        "manifest",
        "pods",
        "queue",
        "record",
        "running",
        "succeeded",
        "timed",
    )

    def __init__(self, key: str, queue: str, submitted: float, min_available: int, controlled: bool) -> None:
        self.key = key
        self.queue = queue
        self.controlled = controlled
        self.record = JobRecord(key, queue, submitted, None, None, "Pending", 0, 0, min_available)
        self.record.set_phase("Pending", submitted)
        self.pods: list[_Pod] = []
        self.running = 0
        #: Pods not finished nor gone.
        self.active = 0
        self.succeeded = 0
        #: Bare pods announced but not arrived yet.
        self.expected = 0
        self.finished = False
        self.cancelled = False
        self.timed: TimedJob | None = None
        #: A Volcano Job's manifest as it is now (a scale changes it; the workload's stays as read).
        self.manifest: Mapping[str, Any] | None = None


class _Pod:
    __slots__ = ("ending", "job", "native", "outcome", "record", "state", "task", "token", "uid")

    def __init__(self, task: TaskInfo, job: _Job, record: PodRecord, outcome: Outcome) -> None:
        self.task = task
        self.uid = task.uid
        self.job = job
        self.record = record
        #: What this attempt does once placed.
        self.outcome = outcome
        self.native = _native(task.resreq)
        self.state = _PENDING
        #: Bumped when the pod's pending start or finish no longer applies.
        self.token = 0
        #: The phase its record takes when, terminating, it is gone (``Evicted`` or ``Deleted``); until
        #: then the record keeps the phase it had: a pod that had not ended when the replay ends is
        #: reported as ``Running`` or ``Pending``.
        self.ending: str | None = None


def _native(res: Resource) -> dict[str, float]:
    """A request in the resource's own units (milli-cpu, bytes, milli-units), without ``pods``."""
    out: dict[str, float] = {}
    if res.milli_cpu:
        out[CPU] = res.milli_cpu
    if res.memory:
        out[MEMORY] = res.memory
    for name, value in res.scalars.items():
        if name != PODS and value:
            out[name] = value
    return out


def _readable(native: Mapping[str, float]) -> dict[str, float]:
    """Native units -> cpu in cores, memory in bytes, other resources in units."""
    return {name: float(value) if name == MEMORY else value / 1000 for name, value in native.items()}


def _resource_dict(res: Resource | None) -> dict[str, float] | None:
    return None if res is None else _readable(_native(res))


class _Statuses:
    """The cache's status updater: notes the PodGroups whose status a session changed.

    A change counts when the phase or a condition's type, status or reason
    differs from what was last written, not a message alone: a message may
    name figures of other jobs (a queue's shortfall), which change without a
    session, so counting it would make skipped sessions matter.
    """

    def __init__(self) -> None:
        self.groups: dict[str, PodGroupPhase] = {}
        self.written: dict[str, tuple[object, ...]] = {}

    def update_pod_group(self, job: JobInfo) -> None:
        pod_group = job.pod_group
        status = (pod_group.phase, tuple((c.type, c.status, c.reason) for c in pod_group.conditions))
        if self.written.get(job.uid) != status:
            self.written[job.uid] = status
            self.groups[job.uid] = pod_group.phase

    def update_queue(self, queue: QueueInfo) -> None:
        """Queue status plays no part in a replay."""


def _clock_free(scheduler: Scheduler) -> bool:
    """Whether every plugin and action of the scheduler declares ``clock_free``; logs the others once."""
    host = scheduler.host
    reading = [f"plugin {name!r}" for name, plugin in host.plugins.items() if not traits_of(plugin).clock_free]
    reading += [f"action {action.name!r}" for action in host.actions if not traits_of(action).clock_free]
    if reading:
        log.info("every session runs: %s may read the clock (not declared clock_free)", ", ".join(reading))
    return not reading


def _selects_nodes(config: SchedulerConfig) -> bool:
    """Whether the configuration refuses the nodes a pod's ``nodeSelector`` and required node affinity exclude."""
    return any(
        option.name in NODE_SELECTING_PLUGINS
        and option.enabled("enablePredicate")
        and option.arguments.get_bool("predicate.NodeAffinityEnable", True)
        for option in config.plugin_options()
    )


def _request_text(task: TaskInfo) -> str:
    """The resources a task asks for, as a person reads them (``cpu 6, nvidia.com/gpu 1``), ``pods`` left out."""
    req = task.init_resreq
    return ", ".join(f"{name} {amount}" for name, amount in req.to_readable().items() if name != PODS and req.get(name))


class _Replay:
    def __init__(self, workload: Workload, config: SchedulerConfig, options: ReplayOptions) -> None:
        self.workload = workload
        self.options = options
        self.statuses = _Statuses()
        self.cache = InMemoryCache(status_updater=self.statuses, max_events=0)
        self.now = 0.0
        self.scheduler = Scheduler(self.cache, config, seed=options.seed, clock=self._clock, verify=options.verify)
        self.skip = not options.every_period and _clock_free(self.scheduler)
        #: Whether pending pods that fit no node's future idle can be left waiting without a session.
        self.fit_bound = set(self.scheduler.config.actions) <= FIT_BOUND_ACTIONS
        #: Pending pods by uid.
        self.waiting: dict[str, _Pod] = {}
        #: Whether no pending pod fit any node when last checked; nodes given resources back since then.
        self.no_fit = False
        self.freed: set[str] = set()
        #: Whether a node the pod's own constraints exclude counts as one it cannot go to.
        self.selects_nodes = _selects_nodes(self.scheduler.config)
        #: The ready nodes a pod could go to, as read at the start (see _read_nodes).
        self.fit_nodes: list[NodeInfo] = []
        #: Why no ready node can ever take a pod of that request and node constraints; ``None``: one can.
        self.fit_answers: dict[Hashable, str | None] = {}
        #: Pending pods (uids) no ready node can ever take: left out of _may_place.
        self.unplaceable: set[str] = set()
        #: Jobs already reported for a pod no node can take.
        self.reported: set[str] = set()
        self.controller = JobController(scheduler_name=workload.scheduler_name)
        classes = {pc.name: pc for pc in workload.cluster.priority_classes}
        self.reader = PodReader(workload.scheduler_name, classes)
        self.heap: list[tuple[float, int, int, Any]] = []
        self.seq = 0
        self.jobs: dict[str, _Job] = {}
        self.job_list: list[_Job] = []
        #: Cache job uid (``namespace/podgroup``) -> the job it belongs to.
        self.groups: dict[str, _Job] = {}
        self.group_phase: dict[str, PodGroupPhase] = {}
        self.pods: dict[str, _Pod] = {}
        #: Latest attempt of each pod name (``namespace/name``).
        self.latest: dict[str, _Pod] = {}
        self.attempts: dict[str, int] = {}
        self.records: list[PodRecord] = []
        self.pending = 0
        self.running = 0
        self.alive = 0
        self.unfinished = 0
        self.arrivals_left = 0
        self.allocated: dict[str, float] = {}
        self.queue_allocated: dict[str, dict[str, float]] = {}
        self.samples: list[Sample] = []
        self.tick_at: float | None = None
        self.dirty = True
        #: Jobs (cache uids) whose pods changed since the last session.
        self.touched: set[str] = set()
        self.uid_counter = 0
        self.capacity: dict[str, float] = {}
        self.timings = {"sessions": 0.0, "snapshots": 0.0, "events": 0.0}

    def _clock(self) -> float:
        return self.now

    # ------------------------------------------------------------------ events

    def push(self, at: float, kind: int, payload: Any) -> None:
        self.seq += 1
        heapq.heappush(self.heap, (at, kind, self.seq, payload))

    # ------------------------------------------------------------------ setup

    def setup(self) -> float:
        wl = self.workload
        cluster = wl.cluster
        cache = self.cache
        for pc in cluster.priority_classes:
            cache.add_priority_class(pc.name, pc.value, global_default=pc.global_default)
        for queue in cluster.queues:
            cache.add_queue(queue.clone())
        for node in cluster.nodes:
            cache.add_node(node)
        self._recount_capacity()
        for queue_name in sorted(q.name for q in cache.queues()):
            self.queue_allocated[queue_name] = {}
        times = list(wl.arrivals.values())
        times += [job.arrival for job in wl.jobs if job.arrival is not None]
        start = min(times) if times else 0.0
        self.now = start
        for pg in cluster.pod_groups:
            key = f"{pg.namespace}/{pg.name}"
            at = wl.arrivals.get(key)
            if at is None:
                self._arrive_group(pg)
            else:
                self.arrivals_left += 1
                self.push(at, _ARRIVE, ("group", pg))
        for task in cluster.tasks:
            at = wl.arrivals.get(task.uid)
            job = self.groups.get(task.job)
            if at is None:
                self._arrive_task(task)
            else:
                self.arrivals_left += 1
                if job is not None:
                    job.expected += 1
                self.push(at, _ARRIVE, ("pod", task))
        for timed in wl.jobs:
            if timed.arrival is None:
                self._submit(timed)
            else:
                self.arrivals_left += 1
                self.push(timed.arrival, _ARRIVE, ("job", timed))
        for job in list(self.job_list):
            if job.pods:  # a group whose pods had all finished before the start
                self._check_bare(job)
        for action in wl.timeline:
            self.arrivals_left += 1  # the replay goes on until the timeline is done too
            self.push(start + action.at if action.relative else action.at, _ACTION, action)
        for task in cluster.tasks:  # bare pods arriving later are reported now, at load
            if task.job and task.status is TaskStatus.PENDING:
                reason = self._fits_no_node(task)
                if reason is not None:
                    self._report_unplaceable(task.job, task, reason)
        return start

    # ------------------------------------------------------------------ pods no node can take

    def _read_nodes(self) -> None:
        """Take the ready nodes as they are now for :meth:`_fits_no_node`, and sort the pending pods again.

        Called at the start; a change of nodes (added, removed, relabelled,
        ready or not) must call it again, so that a pod a new node can take
        counts as one that may fit.
        """
        self.fit_nodes = [node for node in self.cache.nodes() if node.ready]
        self.fit_answers = {}
        self.unplaceable = {uid for uid, pod in self.waiting.items() if self._fits_no_node(pod.task) is not None}
        self.no_fit = False

    def _fits_no_node(self, task: TaskInfo) -> str | None:
        """Why no ready node can ever take the task; ``None`` when one can.

        A node can never take it when the task's request exceeds the node's
        allocatable resources (a pod is placed only where it fits the future
        idle, which is never more), or when the configuration checks node
        selection and the task's ``nodeSelector`` and required node affinity
        exclude the node (node labels do not change in a replay).
        """
        pod = task.pod
        selector: NodeSelector | None = None
        token: Hashable = None
        if self.selects_nodes and pod is not None and (pod.node_selector or pod.affinity):
            selector = required_node_affinity(pod.node_selector, pod.affinity)
            if selector.trivial:
                selector = None
            else:
                node_affinity = (pod.affinity or {}).get("nodeAffinity") or {}
                token = (
                    tuple(sorted(pod.node_selector.items())),
                    repr(node_affinity.get("requiredDuringSchedulingIgnoredDuringExecution")),
                )
        req = task.init_resreq
        key = (req.milli_cpu, req.memory, tuple(sorted(req.scalars.items())), token)
        try:
            return self.fit_answers[key]
        except KeyError:
            pass
        admitted = self.fit_nodes if selector is None else [n for n in self.fit_nodes if selector.matches(n.node)]
        answer: str | None = None
        if not any(req.less_equal(node.allocatable) for node in admitted):
            if selector is None:
                answer = f"it requests {_request_text(task)}, more than any ready node has"
            elif admitted:
                answer = (
                    f"it requests {_request_text(task)}, more than any of the {len(admitted)} ready node(s) "
                    "its nodeSelector and node affinity admit has"
                )
            else:
                answer = "no ready node matches its nodeSelector and node affinity"
        self.fit_answers[key] = answer
        return answer

    def _report_unplaceable(self, job: str, task: TaskInfo, reason: str) -> None:
        """Warn once per job (``namespace/podgroup``) of a pod no node can take, the first few jobs by name."""
        if job in self.reported:
            return
        self.reported.add(job)
        if len(self.reported) <= _REPORTED:
            log.warning("job %s: pod %s fits no node: %s; it is left pending", job, task.key, reason)
        elif len(self.reported) == _REPORTED + 1:
            log.warning("more jobs have a pod that fits no node; --json lists them all under summary.unplaceable")

    # ------------------------------------------------------------------ jobs and pods

    def _new_job(self, key: str, queue: str, min_available: int, controlled: bool) -> _Job:
        job = _Job(key, queue, self.now, min_available, controlled)
        self.jobs[key] = job
        self.job_list.append(job)
        self.unfinished += 1
        return job

    def _arrive_group(self, pg: PodGroup) -> None:
        key = f"{pg.namespace}/{pg.name}"
        job = self.groups.get(key)
        if job is None:
            job = self._new_job(key, pg.queue or self.cache.default_queue, pg.min_member, False)
            self.groups[key] = job
            timing = self.workload.timings.get(key)
            if timing is not None and timing.cancel_after is not None:
                self.push(self.now + timing.cancel_after, _CANCEL, job)
        job.record.note_pod_group_phase(pg.phase.value, self.now)
        self.cache.add_pod_group(pg.clone())

    def _arrive_task(self, task: TaskInfo) -> None:
        job = self.groups.get(task.job)
        if job is None:
            if task.job:  # a pod naming a PodGroup that does not exist: never scheduled, counted as a job
                job = self._new_job(task.job, self.cache.default_queue, 1, False)
                self.groups[task.job] = job
            else:  # a pod of another scheduler: it only occupies its node
                self.cache.add_task(task.clone())
                return
        elif job.expected:
            job.expected -= 1
        timing = self.workload.timings.get(task.uid, PodTiming())
        self._add_pod(task.clone(), job, timing)
        if timing.cancel_after is not None:
            self.push(self.now + timing.cancel_after, _CANCEL, job)

    def _add_pod(self, task: TaskInfo, job: _Job, timing: PodTiming) -> _Pod:
        key = task.key
        attempt = self.attempts.get(key, 0)
        self.attempts[key] = attempt + 1
        if task.uid in self.pods:
            self.uid_counter += 1
            task.uid = f"{task.uid}#{attempt}"
        record = PodRecord(key, job.key, job.queue, None, self.now, None, None, None, "Pending", attempt, {})
        raw_index = task.pod.annotations.get(_TASK_INDEX, "") if task.pod is not None else ""
        index = int(raw_index) if raw_index.isdigit() else None
        pod = _Pod(task, job, record, timing.outcomes.outcome(attempt, index))
        record.request = _readable(pod.native)
        self.records.append(record)
        self.pods[task.uid] = pod
        self.latest[key] = pod
        job.pods.append(pod)
        self.touched.add(task.job)
        job.active += 1
        self.alive += 1
        status = task.status
        self.cache.add_task(task)
        if task.node_name and status in (TaskStatus.BOUND, TaskStatus.BINDING, TaskStatus.RUNNING):
            pod.state = _BOUND
            record.node = task.node_name
            record.bound = self.now
            self._hold(pod, 1)
            if status is TaskStatus.RUNNING:
                self._start(pod)
            else:
                self.push(self.now + self.options.pod_startup, _START, (pod, pod.token))
        elif status in (TaskStatus.SUCCEEDED, TaskStatus.FAILED):  # finished before the replay starts
            pod.state = _DONE
            record.node = task.node_name or None
            record.phase = "Succeeded" if status is TaskStatus.SUCCEEDED else "Failed"
            job.active -= 1
            self.alive -= 1
            job.succeeded += status is TaskStatus.SUCCEEDED
        elif status is TaskStatus.RELEASING and task.node_name:  # being deleted: gone after the grace period
            record.node = task.node_name
            record.phase = "Deleted"
            self._hold(pod, 1)
            pod.state = _RELEASING
            self.push(self.now + self.options.termination_grace, _GONE, pod)
        else:
            self.pending += 1
            self.waiting[task.uid] = pod
            reason = self._fits_no_node(task)
            if reason is None:
                self.no_fit = False
            else:  # no session can place it: it need not make one run
                self.unplaceable.add(task.uid)
                self._report_unplaceable(job.key, task, reason)
                if job.record.unplaceable is None:
                    job.record.unplaceable = f"pod {task.key} fits no node: {reason}"
        return pod

    def _hold(self, pod: _Pod, sign: int) -> None:
        if sign < 0 and pod.record.node is not None:
            self.freed.add(pod.record.node)
        allocated = self.allocated
        queue = self.queue_allocated.get(pod.job.queue)
        if queue is None:
            queue = self.queue_allocated[pod.job.queue] = {}
        for name, value in pod.native.items():
            allocated[name] = allocated.get(name, 0) + sign * value
            queue[name] = queue.get(name, 0) + sign * value

    def _submit(self, timed: TimedJob) -> None:
        key = f"{timed.namespace}/{timed.name}"
        job = self._new_job(key, timed.queue, timed.min_available, True)
        job.timed = timed
        job.manifest = timed.manifest
        if timed.timing.cancel_after is not None:
            self.push(self.now + timed.timing.cancel_after, _CANCEL, job)
        self.apply(self.controller.submit(timed.manifest, now=self.now), job)

    # ------------------------------------------------------------------ the controller's changes

    def apply(self, changes: list[Change], context: _Job | None = None) -> None:
        """Apply one answer of the job controller as one step, in order, then report what it caused.

        A pod deleted while Pending or finished is gone at once, but the
        controller hears of it only once every change of the answer is
        applied: a kill's "delete the pods, then the PodGroup" must not be
        interleaved with the controller's reaction to the first deletion
        (which may make the PodGroup again).
        """
        gone: list[_Pod] = []
        for change in changes:
            if isinstance(change, CreatePod):
                self._create_pod(change.manifest, context)
            elif isinstance(change, DeletePod):
                pod = self._delete_pod(f"{change.namespace}/{change.name}")
                if pod is not None:
                    gone.append(pod)
            elif isinstance(change, CreatePodGroup):
                self._create_group(change.manifest, context)
            elif isinstance(change, UpdatePodGroup):
                self._update_group(change.manifest)
            elif isinstance(change, DeletePodGroup):
                self.cache.delete_pod_group(change.namespace, change.name)
                self.group_phase.pop(f"{change.namespace}/{change.name}", None)
            elif isinstance(change, JobStatus):
                self._job_status(change)
        for pod in gone:
            self._gone_to_controller(pod, evicted=False)
        deadline = self.controller.next_deadline()
        if deadline is not None and deadline != self.tick_at:
            self.tick_at = deadline
            self.push(max(deadline, self.now), _TICK, deadline)

    def _owner(self, manifest: Mapping[str, Any], context: _Job | None) -> _Job | None:
        meta = manifest.get("metadata") or {}
        namespace = str(meta.get("namespace") or "default")
        for owner in meta.get("ownerReferences") or ():
            if isinstance(owner, dict) and owner.get("kind") == "Job" and owner.get("name"):
                job = self.jobs.get(f"{namespace}/{owner['name']}")
                if job is not None:
                    return job
        return context

    def _create_group(self, manifest: dict[str, Any], context: _Job | None) -> None:
        meta = manifest["metadata"]
        ref = Ref("job controller", "", "PodGroup", str(meta["name"]), str(meta.get("namespace") or "default"))
        pg = read_pod_group(manifest, ref, self.cache.default_queue)
        key = f"{pg.namespace}/{pg.name}"
        job = self._owner(manifest, context)
        if job is not None:
            self.groups[key] = job
            job.record.note_pod_group_phase(pg.phase.value, self.now)
        self.group_phase.pop(key, None)
        self.statuses.written.pop(key, None)
        self.cache.add_pod_group(pg)

    def _update_group(self, manifest: dict[str, Any]) -> None:
        """A PodGroup's spec changed (a scaled Job): its status, as the sessions wrote it, stays."""
        meta = manifest["metadata"]
        ref = Ref("job controller", "", "PodGroup", str(meta["name"]), str(meta.get("namespace") or "default"))
        pg = read_pod_group(manifest, ref, self.cache.default_queue)
        old = next((j.pod_group for j in self.cache.jobs() if j.uid == f"{pg.namespace}/{pg.name}"), None)
        if old is not None:
            pg.phase, pg.conditions = old.phase, [c.copy() for c in old.conditions]
            pg.running, pg.succeeded, pg.failed = old.running, old.succeeded, old.failed
            pg.annotations = {**pg.annotations, **old.annotations}
            pg.creation_timestamp = old.creation_timestamp
        self.touched.add(f"{pg.namespace}/{pg.name}")
        self.cache.update_pod_group(pg)

    def _create_pod(self, manifest: dict[str, Any], context: _Job | None) -> None:
        meta = manifest["metadata"]
        namespace = str(meta.get("namespace") or "default")
        name = str(meta["name"])
        owner = self.controller.owner_of(namespace, name)
        job = self.jobs.get(f"{owner[0]}/{owner[1]}") if owner is not None else None
        if job is None:
            job = self._owner(manifest, context)
        if job is None:  # pragma: no cover - the controller makes pods only for the jobs it was given
            raise ManifestError(f"the job controller made pod {namespace}/{name} for an unknown job")
        ref = Ref("job controller", "", "Pod", name, namespace)
        task = self.reader.read(manifest, ref)
        if task is None:  # a pod of another scheduler: it plays no part here
            return
        annotations = f.string_map(meta.get("annotations"), ref, "metadata.annotations")
        inherited = job.timed.timing if job.timed is not None else PodTiming()
        if job.timed is not None:
            role = annotations.get("volcano.sh/task-spec", "")
            inherited = job.timed.task_timings.get(role, inherited)
        timing = pod_timing(annotations, ref, inherited=inherited)
        self._add_pod(task, job, timing)

    def _job_status(self, change: JobStatus) -> None:
        job = self.jobs.get(f"{change.namespace}/{change.name}")
        if job is None or job.cancelled:
            return
        job.record.restarts = change.retry_count
        job.record.version = change.version
        if job.finished and change.phase not in FINISHED_PHASES:  # an Aborted job resumed
            job.finished = False
            job.record.finished = None
            self.unfinished += 1
        if job.finished:
            return
        job.record.set_phase(change.phase, self.now)
        if change.phase in FINISHED_PHASES:
            self._finish_job(job)

    def _finish_job(self, job: _Job) -> None:
        job.finished = True
        job.record.finished = self.now
        self.unfinished -= 1
        self._retire(job)

    def _retire(self, job: _Job) -> None:
        """Take a finished job's finished pods out of the cache, and its PodGroup once it holds nothing."""
        remaining = False
        for pod in job.pods:
            if pod.state == _DONE:
                self.cache.delete_task(pod.uid)
                pod.state = _GONE_STATE
            elif pod.state != _GONE_STATE:
                remaining = True
        if not remaining:
            for key, owner in list(self.groups.items()):
                if owner is job:
                    namespace, _, name = key.partition("/")
                    self.cache.delete_pod_group(namespace, name)
                    self.group_phase.pop(key, None)
                    self.statuses.written.pop(key, None)
                    del self.groups[key]

    # ------------------------------------------------------------------ the simulated kubelet

    def _start(self, pod: _Pod) -> None:
        outcome = pod.outcome
        if not outcome.runs:  # it fails before it runs: Failed, never Running
            self.push(self.now + (outcome.after or 0.0), _FINISH, (pod, pod.token))
            return
        pod.state = _RUNNING
        self.touched.add(pod.task.job)
        pod.record.started = self.now
        pod.record.phase = "Running"
        self.cache.set_task_phase(pod.uid, TaskStatus.RUNNING)
        self.running += 1
        job = pod.job
        job.running += 1
        if job.record.started is None and job.running >= job.record.min_available:
            job.record.started = self.now
            if not job.controlled:
                job.record.set_phase("Running", self.now)
        if outcome.after is not None:
            self.push(self.now + outcome.after, _FINISH, (pod, pod.token))
        for after in outcome.restart_times():
            self.push(self.now + after, _RESTART, (pod, pod.token))
        if job.controlled:
            self.apply(self.controller.pod_phase(pod.task.namespace, pod.task.name, "Running", now=self.now), job)

    def _finish(self, pod: _Pod) -> None:
        outcome = pod.outcome
        failed = outcome.phase == "Failed"
        phase = "Failed" if failed else "Succeeded"
        ran = pod.state == _RUNNING
        pod.state = _DONE
        self.touched.add(pod.task.job)
        pod.record.finished = self.now
        pod.record.phase = phase
        self.cache.set_task_phase(pod.uid, TaskStatus.FAILED if failed else TaskStatus.SUCCEEDED)
        self._hold(pod, -1)
        self.alive -= 1
        job = pod.job
        if ran:
            self.running -= 1
            job.running -= 1
        job.active -= 1
        if not failed:
            job.succeeded += 1
        if job.controlled:
            changes = self.controller.pod_phase(
                pod.task.namespace, pod.task.name, phase, now=self.now, exit_code=outcome.exit_code
            )
            self.apply(changes, job)
        else:
            self._check_bare(job)
        if job.finished:
            self._retire(job)

    def _restart(self, pod: _Pod) -> None:
        """The pod's container exits and is restarted in place: it stays Running, its restart count grows."""
        pod.record.restarts += 1
        self.touched.add(pod.task.job)
        if pod.job.controlled:
            task = pod.task
            self.apply(
                self.controller.pod_restarted(task.namespace, task.name, pod.record.restarts, now=self.now), pod.job
            )

    def _check_bare(self, job: _Job) -> None:
        """A job of bare pods finishes when none of its pods is left to run or arrive."""
        if job.controlled or job.finished or job.active or job.expected:
            return
        job.record.set_phase("Completed" if job.succeeded >= job.record.min_available else "Failed", self.now)
        self._finish_job(job)

    def _release(self, pod: _Pod) -> None:
        """A placed pod starts terminating: it goes away after the grace period."""
        if pod.record.deleted is None:
            pod.record.deleted = self.now
        if pod.state == _RUNNING:
            self.running -= 1
            pod.job.running -= 1
        pod.state = _RELEASING
        if pod.record.node is not None:  # what it holds counts as free for placement from now on
            self.freed.add(pod.record.node)
        self.touched.add(pod.task.job)
        pod.token += 1
        self.push(self.now + self.options.termination_grace, _GONE, pod)

    def _delete_pod(self, key: str) -> _Pod | None:
        """Delete the latest attempt of a pod: one on a node terminates; one Pending or finished is gone at once.

        :returns: the pod when it is gone at once (the caller reports it to its job), else ``None``.
        """
        pod = self.latest.get(key)
        if pod is None or pod.state in (_RELEASING, _GONE_STATE):
            return None
        if pod.state in (_BOUND, _RUNNING):
            if pod.record.phase in ("Pending", "Running"):
                pod.ending = "Deleted"
            self.cache.set_task_phase(pod.uid, TaskStatus.RELEASING)
            self._release(pod)
            return None
        # Not on a node (Pending) or finished: gone at once.
        if pod.state == _PENDING:
            self.pending -= 1
            del self.waiting[pod.uid]
            self.unplaceable.discard(pod.uid)
            self.alive -= 1
            pod.job.active -= 1
            pod.record.phase = "Deleted"
            pod.record.finished = self.now
        pod.state = _GONE_STATE
        pod.record.deleted = self.now
        self.touched.add(pod.task.job)
        pod.token += 1
        self.cache.delete_task(pod.uid)
        return pod

    def _gone(self, pod: _Pod) -> None:
        if pod.state == _GONE_STATE:  # removed with its node before its grace period ended
            return
        evicted = pod.ending == "Evicted"
        if pod.ending is not None:
            pod.record.phase = pod.ending
        pod.state = _GONE_STATE
        self.touched.add(pod.task.job)
        pod.record.finished = self.now
        self.cache.delete_task(pod.uid)
        self._hold(pod, -1)
        self.alive -= 1
        pod.job.active -= 1
        self._gone_to_controller(pod, evicted=evicted)

    def _gone_to_controller(self, pod: _Pod, *, evicted: bool) -> None:
        job = pod.job
        if job.controlled:
            task = pod.task
            self.apply(self.controller.pod_deleted(task.namespace, task.name, now=self.now, evicted=evicted), job)
        else:
            self._check_bare(job)
        if job.finished:
            self._retire(job)

    def _cancel(self, job: _Job) -> None:
        if job.finished or job.record.started is not None:
            return
        job.cancelled = True
        job.record.set_phase("Cancelled", self.now)
        job.expected = 0
        self._finish_job(job)
        if job.controlled:
            self.apply(self.controller.delete(*job.key.split("/", 1), now=self.now), job)
        else:
            for pod in list(job.pods):
                if pod.state not in (_DONE, _RELEASING, _GONE_STATE):
                    gone = self._delete_pod(pod.task.key)
                    if gone is not None:
                        self._gone_to_controller(gone, evicted=False)

    # ------------------------------------------------------------------ the timeline

    def _act(self, action: Action) -> None:
        """One action of the timeline (on an object that does not exist now: nothing)."""
        kind = action.kind
        if kind == "deletePod":
            pod = self.latest.get(action.target)
            if pod is not None:
                self._remove_pod(pod, "Deleted")
        elif kind in ("cordon", "uncordon", "drain", "taint", "untaint"):
            node = self.cache.get_node(action.target)
            if node is None:
                return
            spec = node.node or Node(node.name)
            if kind in ("cordon", "drain"):
                spec = attrs.evolve(spec, unschedulable=True)
            elif kind == "uncordon":
                spec = attrs.evolve(spec, unschedulable=False)
            elif kind == "taint" and action.taint is not None:
                spec = attrs.evolve(spec, taints=(*spec.taints, action.taint))
            elif kind == "untaint" and action.taint is not None:
                spec = attrs.evolve(spec, taints=tuple(t for t in spec.taints if t.key != action.taint.key))
            self._replace_node(node, spec)
            taint = action.taint
            for pod in self._pods_on(action.target):
                if kind == "drain" or (
                    kind == "taint"
                    and taint is not None
                    and taint.effect == "NoExecute"
                    and not tolerated(pod.task.pod.tolerations if pod.task.pod is not None else (), taint)
                ):
                    pod.job.record.evicted_pods += 1
                    self._remove_pod(pod, "Evicted")
        elif kind == "addNode" and action.node is not None:
            self.cache.add_node(action.node)
            self.no_fit = False
            self._recount_capacity()
        elif kind == "removeNode":
            if self.cache.get_node(action.target) is None:
                return
            for pod in self._pods_on(action.target):
                self._vanish(pod)
            self.cache.delete_node(action.target)
            self._recount_capacity()
        elif kind in ("suspendJob", "resumeJob", "deleteJob", "scaleJob"):
            self._act_on_job(action)

    def _act_on_job(self, action: Action) -> None:
        job = self.jobs.get(action.target)
        if job is None or not job.controlled or job.timed is None:
            return
        namespace, _, name = action.target.partition("/")
        kind = action.kind
        if kind == "deleteJob":
            if not job.finished:
                job.record.set_phase("Deleted", self.now)
                job.cancelled = True
                self._finish_job(job)
            self.apply(self.controller.delete(namespace, name, now=self.now), job)
        elif kind in ("suspendJob", "resumeJob"):
            if self.controller.job(namespace, name).deleted:
                return
            command = "AbortJob" if kind == "suspendJob" else "ResumeJob"
            self.apply(self.controller.command(namespace, name, command, now=self.now), job)
        else:  # scaleJob
            manifest = _scaled(job.manifest or job.timed.manifest, action)
            job.manifest = manifest
            self.apply(self.controller.update(manifest, now=self.now), job)

    def _pods_on(self, node: str) -> list[_Pod]:
        """The pods holding a place on ``node`` now (bound, running or terminating), oldest first."""
        return [
            pod for pod in self.pods.values() if pod.record.node == node and pod.state in (_BOUND, _RUNNING, _RELEASING)
        ]

    def _remove_pod(self, pod: _Pod, ending: str) -> None:
        """Delete a pod from outside (a user, a node's taint or drain): terminating when placed, gone at once if not."""
        if pod.state in (_RELEASING, _GONE_STATE):
            return
        if pod.state in (_BOUND, _RUNNING):
            if pod.record.phase in ("Pending", "Running"):
                pod.ending = ending
            self.cache.set_task_phase(pod.uid, TaskStatus.RELEASING)
            self._release(pod)
            return
        gone = self._delete_pod(pod.task.key)
        if gone is not None:
            self._gone_to_controller(gone, evicted=False)

    def _vanish(self, pod: _Pod) -> None:
        """A pod whose node left the cluster: gone at once, whatever it was doing."""
        if pod.state == _GONE_STATE:
            return
        if pod.state in (_BOUND, _RUNNING):
            if pod.state == _RUNNING:
                self.running -= 1
                pod.job.running -= 1
            pod.record.phase = "Deleted"
        elif pod.state == _RELEASING and pod.ending is not None:
            pod.record.phase = pod.ending
        if pod.record.deleted is None:
            pod.record.deleted = self.now
        pod.record.finished = self.now if pod.record.finished is None or pod.state != _DONE else pod.record.finished
        if pod.state != _DONE:
            self._hold(pod, -1)
            self.alive -= 1
            pod.job.active -= 1
        pod.state = _GONE_STATE
        pod.token += 1
        self.touched.add(pod.task.job)
        self.cache.delete_task(pod.uid)
        self._gone_to_controller(pod, evicted=False)

    def _replace_node(self, node: NodeInfo, spec: Node) -> None:
        fresh = NodeInfo(node.name, node.allocatable, node=spec, capability=node.capability)
        fresh.ready = node.ready
        fresh.not_ready_reason = node.not_ready_reason
        self.cache.update_node(fresh)
        self.no_fit = False

    def _recount_capacity(self) -> None:
        """Read the nodes again: the capacity (the ready nodes' allocatable, summed) and the pods none can take."""
        capacity: dict[str, float] = {}
        for node in self.cache.nodes():
            if node.ready:
                for name, value in _native(node.allocatable).items():
                    capacity[name] = capacity.get(name, 0) + value
        self.capacity = _readable(capacity)
        self._read_nodes()

    # ------------------------------------------------------------------ one event

    def handle(self, kind: int, payload: Any) -> bool:
        """Apply one event; whether it was still due (a stale start or finish is not)."""
        if kind == _START:
            pod, token = payload
            if pod.token != token or pod.state != _BOUND:
                return False
            self._start(pod)
        elif kind == _FINISH:
            pod, token = payload
            if pod.token != token or not (pod.state == _RUNNING or (pod.state == _BOUND and not pod.outcome.runs)):
                return False
            self._finish(pod)
        elif kind == _GONE:
            if payload.state == _GONE_STATE:
                return False
            self._gone(payload)
        elif kind == _RESTART:
            pod, token = payload
            if pod.token != token or pod.state != _RUNNING:
                return False
            self._restart(pod)
        elif kind == _ACTION:
            self.arrivals_left -= 1
            self._act(payload)
        elif kind == _ARRIVE:
            self.arrivals_left -= 1
            what, obj = payload
            if what == "job":
                self._submit(obj)
            elif what == "group":
                self._arrive_group(obj)
            else:
                self._arrive_task(obj)
        elif kind == _TICK:
            if payload != self.tick_at:
                return False
            self.tick_at = None
            self.apply(self.controller.tick(now=self.now))
        elif kind == _CANCEL:
            if payload.finished or payload.record.started is not None:
                return False
            self._cancel(payload)
        return True

    # ------------------------------------------------------------------ one session

    def session(self, seed: int) -> bool:
        """Run a session at the current time; whether it changed the cluster."""
        statuses = self.statuses
        statuses.groups = {}
        self.touched = set()
        t0 = time.perf_counter()
        result = self.scheduler.run_once(seed=seed)
        if result.session is not None:
            result.session.detach_plugins()  # freed by reference counting once the next session replaces it
        self.timings["sessions"] += time.perf_counter() - t0
        self.timings["snapshots"] += result.timings.get("snapshot", 0.0)
        changed = bool(result.binds or result.evictions or result.failed_binds or statuses.groups)
        now = self.now
        startup = self.options.pod_startup
        for task, node in result.binds:
            pod = self.pods[task.uid]
            pod.state = _BOUND
            pod.record.node = node
            pod.record.bound = now
            self.touched.add(task.job)
            self.pending -= 1
            del self.waiting[task.uid]
            self.unplaceable.discard(task.uid)
            self._hold(pod, 1)
            self.push(now + startup, _START, (pod, pod.token))
        for task, _reason in result.evictions:
            pod = self.pods[task.uid]
            pod.ending = "Evicted"
            pod.job.record.evicted_pods += 1
            self._release(pod)
        for uid, phase in statuses.groups.items():
            if self.group_phase.get(uid) is phase:
                continue
            self.group_phase[uid] = phase
            job = self.groups.get(uid)
            if job is not None:
                job.record.note_pod_group_phase(phase.value, now)
            if job is not None and job.controlled and not job.finished:
                namespace, _, name = uid.partition("/")
                self.apply(self.controller.pod_group_phase(namespace, name, phase.value, now=now), job)
        return changed

    def needs_session(self) -> bool:
        """Whether a session now could change anything.

        With no pod pending that fits some node (or none at all, when
        actions other than :data:`FIT_BOUND_ACTIONS` run) and no PodGroup
        waiting for admission, no action has anything to place, admit or
        make room for; and the PodGroup
        status a session writes is a function of the job's pods and stored
        phase that the last session already wrote, unless the pods of a job
        still in the cache changed since.
        """
        if self.pending and self._may_place():
            return True
        jobs = self.cache.jobs()
        pending = PodGroupPhase.PENDING
        for job in jobs:
            if job.pod_group.phase is pending:
                return True
        touched = self.touched
        return bool(touched) and any(job.uid in touched for job in jobs)

    def _may_place(self) -> bool:
        """Whether some pending pod fits the future idle resources of some ready node.

        When none does and the actions place pods only where they fit
        (:data:`FIT_BOUND_ACTIONS`), a session can place no pending pod; the
        answer is kept and, until a pod joins the pending ones, only nodes
        that gave resources back since are checked again. Pods no node can
        ever take (:meth:`_fits_no_node`) are not counted.
        """
        if not self.fit_bound:
            return True
        cache = self.cache
        if self.no_fit:
            nodes = [node for node in map(cache.get_node, self.freed) if node is not None]
        else:
            nodes = cache.nodes()
        self.freed = set()
        tried = set()  # requests already checked: pods of one job usually ask for the same
        unplaceable = self.unplaceable
        for pod in self.waiting.values():
            if pod.uid in unplaceable:  # no node can ever take it (see _fits_no_node)
                continue
            req = pod.task.init_resreq
            key = (req.milli_cpu, req.memory, tuple(req.scalars.items()))
            if key in tried:
                continue
            tried.add(key)
            for node in nodes:
                if node.ready and node.fits_future_idle(req):
                    self.no_fit = False
                    return True
        self.no_fit = True
        return False

    def sample(self) -> None:
        """Record the cluster now, unless it is as the last sample left it."""
        queues = {name: _readable(values) for name, values in self.queue_allocated.items()}
        allocated = _readable(self.allocated)
        samples = self.samples
        if samples:
            last = samples[-1]
            same = (
                last.pending_pods == self.pending
                and last.running_pods == self.running
                and last.allocated == allocated
                and last.queue_allocated == queues
            )
            if same:
                return
            if last.time == self.now:
                samples.pop()
        samples.append(Sample(self.now, self.pending, self.running, allocated, self.capacity, queues))

    def done(self) -> bool:
        return self.arrivals_left == 0 and self.unfinished == 0 and not self._alive_pods()

    def _alive_pods(self) -> bool:
        return self.alive > 0


def _scaled(manifest: Mapping[str, Any], action: Action) -> dict[str, Any]:
    """A Job manifest with one task's replicas (and minAvailable) changed, as ``kubectl edit`` would."""
    spec = dict(manifest.get("spec") or {})
    tasks = []
    for i, raw in enumerate(spec.get("tasks") or ()):
        task = dict(raw)
        if (task.get("name") or f"default{i}") == action.task:
            task["replicas"] = action.replicas
            if action.min_available is not None:
                task["minAvailable"] = action.min_available
        tasks.append(task)
    spec["tasks"] = tasks
    return {**manifest, "spec": spec}


def _config(config: str | Path | SchedulerConfig | None, workload: Workload) -> SchedulerConfig:
    if isinstance(config, SchedulerConfig):
        return config
    if config is not None:
        return load_config(config)
    return workload.config if workload.config is not None else DEFAULT_CONFIG


def run_replay(
    workload: Workload,
    config: str | Path | SchedulerConfig | None = None,
    options: ReplayOptions = ReplayOptions(),
    *,
    progress: Callable[[float, float], None] | None = None,
) -> ReplayRecord:
    """Replay a workload over simulated time and return what happened.

    :param workload: from :func:`~volcanolib.replay.inputs.load_workload`.
    :param config: a volcano-scheduler.conf file or a parsed configuration;
        by default the workload's ``scheduler`` block, else the default configuration.
    :param options: period, delays, stop time, seed; the module documentation
        says how time advances and when sessions are skipped.
    :param progress: called now and then with the simulated seconds done and
        the seconds expected (the last arrival, or ``until``).
    :returns: one :class:`PodRecord` per pod attempt, one :class:`JobRecord`
        per job, the cluster sampled after every change, the queues, and the
        wall-clock seconds spent.
    :raises ConfigError: when the configuration is invalid.
    """
    if options.period <= 0:
        raise ManifestError(f"the period must be more than 0, got {options.period}")
    wall = time.perf_counter()
    replay = _Replay(workload, _config(config, workload), options)
    # The scheduler pauses the cyclic collector during each session; between sessions it runs, so
    # that what each session leaves behind is freed.
    return _run(replay, wall, progress)


def _run(replay: _Replay, wall: float, progress: Callable[[float, float], None] | None) -> ReplayRecord:
    events_seconds = 0.0
    t0 = time.perf_counter()
    with gc_paused():
        start = replay.setup()
    events_seconds += time.perf_counter() - t0
    # The cluster and the workload, built once, are left out of the collector's passes between sessions;
    # sessions are released once done (Session.release), so the collector runs every few thousand only.
    with gc_frozen(automatic=False):
        return _loop(replay, start, events_seconds, wall, progress)


def _loop(
    replay: _Replay,
    start: float,
    events_seconds: float,
    wall: float,
    progress: Callable[[float, float], None] | None,
) -> ReplayRecord:
    options = replay.options
    period = options.period
    limit = start + options.until if options.until is not None else math.inf
    last_arrival = max((at for at, kind, _, _ in replay.heap if kind in (_ARRIVE, _ACTION)), default=start)
    expected = (limit if options.until is not None else last_arrival) - start
    replay.sample()
    heap = replay.heap
    handle = replay.handle
    slot = 0  # the next session is at start + slot * period
    changes = 0  # sessions that changed the cluster so far (they seed the next one)
    last = start
    sessions_run = 0
    end: float | None = None
    reported = time.perf_counter()
    while True:
        next_event = heap[0][0] if heap else math.inf
        next_session = start + slot * period
        if replay.done():
            end = last
            break
        if min(next_event, next_session) > limit:
            end = limit
            break
        if next_event <= next_session:
            t1 = time.perf_counter()
            replay.now = next_event
            changed = False
            while heap and heap[0][0] == next_event:
                _, kind, _, payload = heapq.heappop(heap)
                changed = handle(kind, payload) or changed
            if changed:
                replay.dirty = True
                replay.sample()
                last = next_event
            events_seconds += time.perf_counter() - t1
            continue
        if not replay.dirty and not heap:
            end = limit if options.until is not None else last
            break
        if not replay.skip or (replay.dirty and replay.needs_session()):
            replay.now = next_session
            changed = replay.session(options.seed + changes)
            sessions_run += 1
            if not sessions_run % _COLLECT_EVERY:
                gc.collect()
            replay.dirty = changed
            if changed:
                changes += 1
                replay.sample()
                last = next_session
            slot += 1
        else:
            # A session now would change nothing: on to the first session at or after the next event.
            replay.dirty = False
            slot += 1
            if next_event < math.inf:
                first = math.ceil((next_event - start) / period)
                while start + first * period < next_event:
                    first += 1
                while first > 0 and start + (first - 1) * period >= next_event:
                    first -= 1
                slot = max(slot, first)
        if progress is not None and time.perf_counter() - reported > 0.2:
            reported = time.perf_counter()
            progress(replay.now - start, expected)
    if progress is not None:
        progress(end - start, expected)
    return _record(replay, start, end, _periods(start, end, period), sessions_run, events_seconds, wall)


def _periods(start: float, end: float, period: float) -> int:
    """How many session times the replay covered: from the start up to and including the end."""
    count = math.floor((end - start) / period)
    while start + (count + 1) * period <= end:
        count += 1
    while count > 0 and start + count * period > end:
        count -= 1
    return count + 1


def _record(
    replay: _Replay, start: float, end: float, slots: int, sessions_run: int, events_seconds: float, wall: float
) -> ReplayRecord:
    queues = [
        QueueRecord(queue.name, queue.weight, _resource_dict(queue.deserved), _resource_dict(queue.capability))
        for queue in sorted(replay.cache.queues(), key=lambda q: q.name)
    ]
    timings = dict(replay.timings)
    timings["events"] = events_seconds
    timings["sessions_run"] = float(sessions_run)
    timings["wall"] = time.perf_counter() - wall
    for job in replay.job_list:
        record = job.record
        record.kept_pods = sum(
            1 for pod in job.pods if pod.record.phase in ("Succeeded", "Failed") and pod.record.deleted is None
        )
        if job.controlled and job.timed is not None:
            record.version = replay.controller.job(job.timed.namespace, job.timed.name).version
    return ReplayRecord(
        start=start,
        end=end,
        sessions=slots,
        pods=replay.records,
        jobs=[job.record for job in replay.job_list],
        samples=replay.samples,
        queues=queues,
        timings=timings,
    )
