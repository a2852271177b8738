"""Volcano's job controller as pure logic: events in, changes out.

The caller (replay's engine, or a live controller) reports what happened to
Jobs, their PodGroups and pods; :class:`JobController` answers with the
writes Volcano's job controller would make: PodGroups and pods to create,
pods and PodGroups to delete, job phase changes. It keeps no clock and does
no I/O: every call names the time ``now``, and timed reactions (policy
timeouts) are run by :meth:`JobController.tick` at
:meth:`JobController.next_deadline`.

What it follows (see the docs page "Job controller"): the webhook's defaults
and refusals, the PodGroup and pods made for a Job, the requests raised by
pod, PodGroup and Job events, the lifecycle policies (task-level first, then
job-level, with ``timeout``), the state machine of the job phases with its
two primitives (sync: create missing pods once the PodGroup is admitted,
count, maybe change phase; kill: delete pods, count, maybe change phase,
delete the PodGroup), ``maxRetry``, ``minSuccess``, task ``minAvailable`` and
``dependsOn``. Every status write that changes the phase is followed by a
sync pass in the new phase, as the Job's update event causes in Volcano.

Kubernetes objects are plain dicts in API form.
"""

from __future__ import annotations

import heapq
import uuid
from collections import deque
from collections.abc import Iterable, Mapping
from typing import Any, Final, final

import attrs

from volcanolib.controllers._changes import (
    Change,
    CreateObject,
    CreatePod,
    CreatePodGroup,
    DeleteObject,
    DeletePod,
    DeletePodGroup,
    JobState,
    JobStatus,
    UpdatePodGroup,
)
from volcanolib.controllers._lifecycle import Policy, read_lifecycle
from volcanolib.controllers._plugins import controlled_resources, job_objects, on_pod_create
from volcanolib.controllers._pods import POD_PHASES, PodEntry
from volcanolib.controllers._restore import take_over
from volcanolib.controllers._states import (
    ABORTED,
    ABORTING,
    COMPLETED,
    COMPLETING,
    PENDING,
    RESTARTING,
    RUNNING,
    TERMINATED,
    TERMINATING,
    JobData,
    PodCounts,
    Request,
    StatusFn,
    Timer,
    alive_check,
    pending_fn,
    restart_check,
    running_fn,
    stay,
    to,
    to_restarting,
)
from volcanolib.kube.jobs import JobSpec, TaskSpec, parse_job, pod_group_manifest, pod_manifest
from volcanolib.manifests import fields as f

__all__ = [
    "Change",
    "CreateObject",
    "CreatePod",
    "CreatePodGroup",
    "DeleteObject",
    "DeletePod",
    "DeletePodGroup",
    "JobController",
    "JobState",
    "JobStatus",
    "PodCounts",
    "UpdatePodGroup",
]

# Request events: the policy events plus the controller's internal ones.
POD_PENDING: Final = "PodPending"
POD_RUNNING: Final = "PodRunning"
POD_FAILED: Final = "PodFailed"
POD_EVICTED: Final = "PodEvicted"
TASK_COMPLETED: Final = "TaskCompleted"
TASK_FAILED: Final = "TaskFailed"
UNKNOWN: Final = "Unknown"
OUT_OF_SYNC: Final = "OutOfSync"
COMMAND_ISSUED: Final = "CommandIssued"
_INTERNAL_EVENTS: Final = frozenset({OUT_OF_SYNC, COMMAND_ISSUED, POD_RUNNING})
_POD_EVENTS: Final = frozenset({POD_PENDING, POD_RUNNING, POD_FAILED, POD_EVICTED})

# Actions.
SYNC_JOB: Final = "SyncJob"
RESTART_JOB: Final = "RestartJob"
RESTART_TASK: Final = "RestartTask"
RESTART_POD: Final = "RestartPod"
RESTART_PARTITION: Final = "RestartPartition"
ABORT_JOB: Final = "AbortJob"
COMPLETE_JOB: Final = "CompleteJob"
TERMINATE_JOB: Final = "TerminateJob"
RESUME_JOB: Final = "ResumeJob"
_JOB_ACTIONS: Final = frozenset({ABORT_JOB, RESTART_JOB, TERMINATE_JOB, COMPLETE_JOB, RESUME_JOB})
_TARGETED: Final = frozenset({RESTART_TASK, RESTART_POD, RESTART_PARTITION})
#: Actions a ``vcctl``-style command may carry.
COMMAND_ACTIONS: Final = frozenset({*_JOB_ACTIONS, SYNC_JOB})

#: The PodGroup phases in which the scheduler has not admitted the group yet (no pods are made).
_NOT_ADMITTED: Final = frozenset({"", "Pending"})
_RETAIN_SOFT: Final = frozenset({"Succeeded", "Failed"})
_UID_SPACE: Final = uuid.UUID("5d0e7bd8-3f0c-4c55-9a7a-6f4f3c1f0b11")
#: The PodGroup annotation naming the job version that made the group.
GROUP_VERSION_KEY: Final = "volcanolib.io/job-version"


@final
class JobController:
    """Volcano's job controller for ``batch.volcano.sh/v1alpha1`` Jobs.

    Each method takes the event, runs the requests it raises (and the
    follow-up passes those cause) to completion, and returns the writes in
    order. Apply them in that order: a restart deletes the PodGroup before
    it creates the new one.

    :param scheduler_name: the scheduler name given to pods whose template and Job name none.
    :param default_queue: the queue of a Job that names none.
    :param priority_classes: PriorityClass values by name; they order a Job's
        tasks when its PodGroup's ``minResources`` is computed.
    """

    def __init__(
        self,
        *,
        scheduler_name: str = "volcano",
        default_queue: str = "default",
        priority_classes: Mapping[str, int] | None = None,
    ) -> None:
        self.scheduler_name = scheduler_name
        self.default_queue = default_queue
        self.priority_classes = dict(priority_classes or {})
        self._jobs: dict[tuple[str, str], JobData] = {}
        self._groups: dict[tuple[str, str], JobData] = {}
        self._owners: dict[tuple[str, str], tuple[str, str]] = {}
        self._attempts: dict[tuple[str, str], int] = {}
        self._timers: list[Timer] = []
        self._seq = 0
        self._out: list[Change] = []
        self._queue: deque[tuple[JobData, Request]] = deque()
        self._queued: set[tuple[JobData, Request]] = set()

    # ------------------------------------------------------------------ events in

    def submit(self, job: Mapping[str, Any], *, now: float) -> list[Change]:
        """Accept a new Job: its PodGroup is created at once, its pods once the scheduler admits the PodGroup.

        A ``status`` in the manifest is ignored: the Job starts anew.

        :param job: a ``batch.volcano.sh/v1alpha1`` Job manifest.
        :param now: the time, in seconds.
        :returns: the writes (the PodGroup, the job's status Pending).
        :raises ManifestError: naming the field, when Volcano's admission would refuse the Job,
            or when a Job of that name exists and is not deleted.
        """
        js = self._parse(job)
        life = read_lifecycle(js)
        old = self._jobs.get((js.namespace, js.name))
        if old is not None and not old.deleted:
            js.ref.fail("a Job of that name already exists")
        state = JobData(js, life)
        if old is not None:
            # pods of the deleted incarnation still terminating keep their names taken
            for pod in old.pods:
                if pod.deleting:
                    # an old incarnation's pod: its events only sync (Volcano compares the job uid)
                    pod.out_of_sync = True
                    state.pods.add(pod)
            self._groups.pop((js.namespace, old.spec.pod_group_name), None)
        self._jobs[state.key] = state
        self._groups[(js.namespace, js.pod_group_name)] = state
        return self._run(state, Request(OUT_OF_SYNC), now)

    def restore(
        self,
        job: Mapping[str, Any],
        *,
        pods: Iterable[Mapping[str, Any]] = (),
        pod_group: Mapping[str, Any] | None = None,
        now: float,
    ) -> list[Change]:
        """Take over a Job as the cluster holds it: its status, its pods and its PodGroup.

        For a controller that starts while Jobs run (or starts again after a
        crash): the job continues from its status (phase, version, retry
        count, counters); pods and the PodGroup that exist are not made again;
        what the previous controller left undone is done (see
        :mod:`volcanolib.controllers._restore`), then the job is synced.

        :param job: the Job manifest, with its ``status``.
        :param pods: the job's pods as the API server holds them.
        :param pod_group: the job's PodGroup, or ``None`` when there is none.
        :returns: the writes.
        :raises ManifestError: naming the field, when Volcano's admission would refuse the Job,
            or when a Job of that name is known and not deleted.
        """
        js = self._parse(job)
        old = self._jobs.get((js.namespace, js.name))
        if old is not None and not old.deleted:
            js.ref.fail("a Job of that name already exists")
        state = JobData(js, read_lifecycle(js))
        status = job.get("status")
        todo = take_over(
            state,
            status if isinstance(status, dict) else {},
            pods,
            pod_group,
            group_version_key=GROUP_VERSION_KEY,
        )
        self._jobs[state.key] = state
        self._groups[(js.namespace, js.pod_group_name)] = state
        for pod in state.pods:
            self._owners[(js.namespace, pod.name)] = state.key
        if todo.stale_group:
            self._out.append(DeletePodGroup(js.namespace, js.pod_group_name))
        for pod, reason in todo.delete:
            self._delete_pod(state, pod, reason)
        if todo.delete and state.phase == RESTARTING:
            # the kill the status tells of is finished: its counters are those of a kill pass
            state.status = PodCounts(terminating=state.pods.terminating)
            state.task_status = {}
        for request in todo.requests:
            self._enqueue(state, request)
        return self._run(state, Request(OUT_OF_SYNC), now)

    def sync(self, namespace: str, name: str, *, now: float) -> list[Change]:
        """Sync a job again (Volcano's OutOfSync request): after a failed write, or a change of the Job.

        :returns: the writes; nothing for a Job that is unknown or deleted.
        """
        job = self._jobs.get((namespace, name))
        if job is None or job.deleted:
            return []
        return self._run(job, Request(OUT_OF_SYNC), now)

    def forget_pod(self, namespace: str, pod: str) -> bool:
        """A pod this controller asked for was never made (the API server refused it): forget it, raising no event.

        The next sync makes it again. Returns whether the pod was known.
        """
        found = self._pod(namespace, pod)
        if found is None:
            return False
        found[0].pods.remove(pod)
        return True

    def known_pod(self, namespace: str, pod: str) -> tuple[str, bool] | None:
        """``(phase, being deleted)`` of a pod of a job as this controller knows it, or ``None``."""
        found = self._pod(namespace, pod)
        return None if found is None else (found[1].phase, found[1].deleting)

    def _parse(self, job: Mapping[str, Any]) -> JobSpec:
        return parse_job(
            job,
            priority_classes=self.priority_classes,
            scheduler_name=self.scheduler_name,
            default_queue=self.default_queue,
        )

    def delete(self, namespace: str, name: str, *, now: float) -> list[Change]:
        """The user deleted the Job: Kubernetes' garbage collector removes its pods and PodGroup.

        :returns: the deletions; nothing when the Job is unknown or already deleted.
        """
        job = self._jobs.get((namespace, name))
        if job is None or job.deleted:
            return []
        job.deleted = True
        for timer in job.delayed.values():
            timer.cancelled = True
        job.delayed.clear()
        out: list[Change] = []
        for pod in job.pods:
            if not pod.deleting:
                job.pods.mark_deleting(pod, out_of_sync=True)
                out.append(DeletePod(namespace, pod.name, "JobDeleted"))
        if job.pg_exists:
            job.pg_exists = False
            out.append(DeletePodGroup(namespace, job.spec.pod_group_name))
        return out

    def command(self, namespace: str, name: str, action: str, *, now: float) -> list[Change]:
        """A bus Command aimed at the Job (``vcctl job suspend`` is AbortJob, ``resume`` ResumeJob).

        :param action: one of AbortJob, RestartJob, TerminateJob, CompleteJob, ResumeJob, SyncJob.
        :raises KeyError: when the Job is unknown.
        :raises ValueError: for another action.
        """
        if action not in COMMAND_ACTIONS:
            raise ValueError(
                f"unknown command action {action!r} (expected one of {', '.join(sorted(COMMAND_ACTIONS))})"
            )
        job = self._jobs[(namespace, name)]
        return self._run(job, Request(COMMAND_ISSUED, action=action), now)

    def pod_group_phase(self, namespace: str, name: str, phase: str, *, now: float) -> list[Change]:
        """The scheduler moved a job's PodGroup to ``phase``; once admitted (Inqueue, Running, ...) pods are made.

        :param name: the PodGroup's name.
        :returns: the writes; nothing for a PodGroup this controller does not manage.
        """
        job = self._groups.get((namespace, name))
        if job is None or job.deleted or not job.pg_exists or job.pg_phase == phase:
            return []
        job.pg_phase = phase
        # PodGroup events carry no task and job version 0
        return self._run(job, Request(UNKNOWN if phase == UNKNOWN else ""), now)

    def pod_phase(
        self,
        namespace: str,
        pod: str,
        phase: str,
        *,
        now: float,
        exit_code: int | None = None,
        reason: str = "",
    ) -> list[Change]:
        """A pod of a job moved to ``phase`` (Pending, Running, Succeeded, Failed or Unknown).

        :param exit_code: for Failed, the exit code of the pod's first container (0 when unknown).
        :param reason: the kubelet's reason (informational).
        :returns: the writes; nothing for a pod this controller does not know.
        :raises ValueError: for a phase that is not a pod phase.
        """
        if phase not in POD_PHASES:
            raise ValueError(f"unknown pod phase {phase!r} (expected one of {', '.join(POD_PHASES)})")
        found = self._pod(namespace, pod)
        if found is None:
            return []
        job, p = found
        old = p.phase
        job.pods.set_phase(p, phase)
        event = OUT_OF_SYNC
        code = 0
        if p.out_of_sync:
            pass
        elif old == phase:
            if phase in ("Running", "Pending") and self._task_failed(job, p.task):
                event = TASK_FAILED
        elif phase == "Pending":
            event = POD_PENDING
        elif phase == "Running":
            event = POD_RUNNING
        elif phase == "Failed":
            event, code = POD_FAILED, exit_code or 0
        elif phase == "Succeeded" and self._task_completed(job, p.task):
            event = TASK_COMPLETED
        request = Request(event, p.task, p.name, p.uid, p.version, code)
        return self._run(job, request, now)

    def pod_restarted(self, namespace: str, pod: str, restarts: int, *, now: float) -> list[Change]:
        """A pod's containers were restarted in place: their restart count (summed) is now ``restarts``.

        The pod keeps its phase. Once the Running and Pending pods of its
        task have restarted the task's ``maxRetry`` times (3 by default; -1:
        never), the update raises ``TaskFailed``, as in Volcano.

        .. versionadded:: 0.2

        :returns: the writes; nothing for a pod this controller does not know.
        """
        found = self._pod(namespace, pod)
        if found is None:
            return []
        job, p = found
        p.restarts = restarts
        event = OUT_OF_SYNC
        if not p.out_of_sync and p.phase in ("Running", "Pending") and self._task_failed(job, p.task):
            event = TASK_FAILED
        return self._run(job, Request(event, p.task, p.name, p.uid, p.version), now)

    def update(self, job: Mapping[str, Any], *, now: float) -> list[Change]:
        """The user changed a Job: its tasks' ``replicas`` or ``minAvailable`` (a scale), as Volcano's admission allows.

        The webhook keeps the Job's ``minAvailable`` and ``priorityClassName``
        as they were and refuses any other change of the spec, or a different
        number of tasks. The PodGroup's ``minTaskMember`` and ``minResources``
        follow; then a sync pass creates the missing pods (once the PodGroup is
        admitted) and deletes those past the new replicas (their deletion is
        not the controller's kill: once gone they raise ``PodEvicted``).

        .. versionadded:: 0.2

        :param job: the whole new Job manifest.
        :returns: the writes.
        :raises ManifestError: naming the field, when the webhook would refuse the update.
        :raises KeyError: when no Job of that name was submitted.
        """
        new = parse_job(job, priority_classes=self.priority_classes, scheduler_name=self.scheduler_name)
        state = self._jobs[(new.namespace, new.name)]
        old = state.spec
        if len(new.tasks) != len(old.tasks):
            new.ref.fail("job updates may not add or remove tasks", "spec.tasks")
        for before, after in zip(old.tasks, new.tasks, strict=True):
            unchanged = (before.name, before.template_meta, before.template_spec, before.depends_on, before.iteration)
            if unchanged != (after.name, after.template_meta, after.template_spec, after.depends_on, after.iteration):
                new.ref.fail(
                    "job updates may not change fields other than minAvailable and the tasks' replicas",
                    f"spec.tasks[{after.index}]",
                )
        tasks = tuple(
            attrs.evolve(before, replicas=after.replicas, min_available=after.min_available)
            for before, after in zip(old.tasks, new.tasks, strict=True)
        )
        total = sum(t.replicas for t in tasks)
        if old.min_available > total:
            new.ref.fail(
                f"the job's minAvailable {old.min_available} is more than the {total} replicas of its tasks",
                "spec.tasks",
            )
        state.spec = attrs.evolve(old, tasks=tasks)
        state.pods.resize([(t.name, t.replicas) for t in tasks])
        if state.deleted:
            return []
        if state.pg_exists:
            manifest = pod_group_manifest(state.spec)
            del manifest["status"]
            self._out.append(UpdatePodGroup(manifest))
        return self._run(state, Request(OUT_OF_SYNC), now)

    def pod_terminating(self, namespace: str, pod: str, *, now: float) -> list[Change]:
        """A pod of a job is being deleted by someone else (an eviction with a grace period): it counts as terminating.

        Optional: call it when the pod gets its deletion timestamp, then
        :meth:`pod_deleted` when it is gone. Without it the pod counts by its
        phase until it is gone.

        :returns: the writes; nothing for a pod this controller does not know or already deletes.
        """
        found = self._pod(namespace, pod)
        if found is None or found[1].deleting:
            return []
        job, p = found
        job.pods.mark_deleting(p, out_of_sync=False)
        return self._run(job, Request(OUT_OF_SYNC, p.task, p.name, p.uid, p.version), now)

    def pod_deleted(self, namespace: str, pod: str, *, now: float, evicted: bool = False) -> list[Change]:
        """A pod of a job is gone.

        Any deletion the controller did not make itself raises PodEvicted, as
        in Volcano (scheduler eviction, a user's delete, node loss).

        :param evicted: the scheduler evicted the pod (informational: the event is the same).
        :returns: the writes; nothing for a pod this controller does not know.
        """
        found = self._pod(namespace, pod)
        if found is None:
            return []
        job, p = found
        job.pods.remove(pod)
        if job.deleted:
            return []
        event = OUT_OF_SYNC if p.out_of_sync else POD_EVICTED
        return self._run(job, Request(event, p.task, p.name, p.uid, p.version), now)

    def tick(self, *, now: float) -> list[Change]:
        """Run the timed reactions due at or before ``now`` (policy timeouts), oldest first.

        Timeouts due at the same instant fire together, as Volcano's timers
        do: each runs in the phase the ones before it left, none is cancelled
        by another's clean-up, and the jobs react once all of them ran.
        """
        out: list[Change] = []
        while self._timers and self._timers[0].due <= now:
            due = self._timers[0].due
            fired: list[Timer] = []
            while self._timers and self._timers[0].due == due:
                timer = heapq.heappop(self._timers)
                if not timer.cancelled:
                    fired.append(timer)
            for timer in fired:
                job = timer.job
                if job.delayed.get(timer.key) is timer:
                    del job.delayed[timer.key]
                if job.deleted:
                    continue
                self._execute(job, timer.action, timer.request, now)
                self._cleanup_delayed(job, timer.action, timer.request)
            out.extend(self._drain(now))
        return out

    def next_deadline(self) -> float | None:
        """The time of the next timed reaction, or ``None`` when none is waiting."""
        while self._timers and self._timers[0].cancelled:
            heapq.heappop(self._timers)
        return self._timers[0].due if self._timers else None

    # ------------------------------------------------------------------ queries

    def job(self, namespace: str, name: str) -> JobState:
        """The state of one job.

        :raises KeyError: when no Job of that name was submitted.
        """
        job = self._jobs[(namespace, name)]
        pods = job.pods
        return JobState(
            namespace=namespace,
            name=name,
            phase=job.phase or PENDING,
            retry_count=job.retry_count,
            version=job.version,
            min_available=job.spec.min_available,
            pending=pods.count("Pending"),
            running=pods.count("Running"),
            succeeded=pods.count("Succeeded"),
            failed=pods.count("Failed"),
            terminating=pods.terminating,
            status=job.status,
            deleted=job.deleted,
            task_status={task: dict(counts) for task, counts in job.task_status.items()},
            controlled_resources=controlled_resources(list(job.life.plugins)) if job.plugin_objects else {},
            ttl_after_finished=job.life.ttl_after_finished,
            uid=job.spec.uid,
        )

    def jobs(self) -> list[tuple[str, str]]:
        """Every job submitted, as ``(namespace, name)``, in submission order."""
        return list(self._jobs)

    def owner_of(self, namespace: str, pod: str) -> tuple[str, str] | None:
        """``(namespace, job name)`` of a pod this controller made, or ``None``."""
        return self._owners.get((namespace, pod))

    # ------------------------------------------------------------------ request processing

    def _pod(self, namespace: str, pod: str) -> tuple[JobData, PodEntry] | None:
        owner = self._owners.get((namespace, pod))
        job = self._jobs.get(owner) if owner else None
        p = job.pods.get(pod) if job else None
        return (job, p) if job is not None and p is not None else None

    def _run(self, job: JobData, request: Request, now: float) -> list[Change]:
        self._enqueue(job, request)
        return self._drain(now)

    def _enqueue(self, job: JobData, request: Request) -> None:
        # identical requests still waiting are merged into one
        item = (job, request)
        if item not in self._queued:
            self._queued.add(item)
            self._queue.append(item)

    def _drain(self, now: float) -> list[Change]:
        while self._queue:
            item = self._queue.popleft()
            self._queued.discard(item)
            job, request = item
            self._process(job, request, now)
        out, self._out = self._out, []
        return out

    def _process(self, job: JobData, req: Request, now: float) -> None:
        """One request: cancel delayed actions it ends, resolve the policy, act or wait."""
        if job.deleted:
            return
        if req.event in _POD_EVENTS:
            self._clean_pod_delayed(job, req)
        action, delay = self._apply_policies(job, req)
        if delay > 0:
            self._add_delayed(job, req, action, now + delay)
            return
        self._execute(job, action, req, now)
        if action != SYNC_JOB:
            self._cleanup_delayed(job, action, req)

    def _apply_policies(self, job: JobData, req: Request) -> tuple[str, float]:
        """The action for a request: command, internal event, stale version, task policies, job policies."""
        if req.action:
            return req.action, 0.0
        if req.event in _INTERNAL_EVENTS or req.version < job.version:
            return SYNC_JOB, 0.0
        if req.task:
            for policy in job.life.task_policies.get(req.task, ()):
                if _matches(policy, req):
                    return policy.action, policy.timeout
        for policy in job.life.policies:
            if _matches(policy, req):
                return policy.action, policy.timeout
        return SYNC_JOB, 0.0

    # ------------------------------------------------------------------ delayed actions

    def _add_delayed(self, job: JobData, req: Request, action: str, due: float) -> None:
        key = req.pod
        current = job.delayed.get(key)
        if current is not None and current.action == action:
            return  # the same action is already waiting: its timer is not reset
        # a different action replaces the entry, but the old timer still fires (as in Volcano)
        self._seq += 1
        timer = Timer(due, self._seq, job, key, action, req)
        job.delayed[key] = timer
        heapq.heappush(self._timers, timer)

    def _clean_pod_delayed(self, job: JobData, req: Request) -> None:
        timer = job.delayed.get(req.pod)
        if timer is None or not req.pod:
            return
        waiting = timer.request.event
        if (req.event != POD_PENDING and waiting == POD_PENDING and timer.request.pod_uid == req.pod_uid) or (
            req.event == POD_RUNNING and waiting in (POD_FAILED, POD_EVICTED)
        ):
            timer.cancelled = True
            del job.delayed[req.pod]

    def _cleanup_delayed(self, job: JobData, action: str, req: Request) -> None:
        """After an action ran, cancel the delayed actions of the same scope."""
        for key, timer in list(job.delayed.items()):
            same = (
                (action in _JOB_ACTIONS and timer.action in _JOB_ACTIONS)
                or (action == RESTART_TASK and timer.action == RESTART_TASK and timer.request.task == req.task)
                or (
                    action in (RESTART_POD, RESTART_PARTITION)
                    and timer.action == action
                    and timer.request.pod == req.pod
                )
            )
            if same:
                timer.cancelled = True
                del job.delayed[key]

    # ------------------------------------------------------------------ the state machine

    def _execute(self, job: JobData, action: str, req: Request, now: float) -> None:
        """Run ``action`` in the state of the job's phase (an empty phase is Pending)."""
        phase = job.phase or PENDING
        if phase in (PENDING, RUNNING):
            if action == RESTART_JOB:
                self._kill(job, soft=False, fn=to_restarting, now=now, reason=action)
            elif action in _TARGETED:
                self._kill_target(job, action, req, fn=to_restarting, now=now)
            elif action == ABORT_JOB:
                self._kill(job, soft=True, fn=to(ABORTING), now=now, reason=action)
            elif action == COMPLETE_JOB:
                self._kill(job, soft=True, fn=to(COMPLETING), now=now, reason=action)
            elif action == TERMINATE_JOB:
                self._kill(job, soft=True, fn=to(TERMINATING), now=now, reason=action)
            else:
                self._sync(job, pending_fn if phase == PENDING else running_fn, now)
        elif phase == RESTARTING:
            if action in _TARGETED:
                self._kill_target(job, action, req, fn=restart_check, now=now)
            elif action in _JOB_ACTIONS:
                # in Restarting, AbortJob and TerminateJob only kill the pods again
                self._kill(job, soft=False, fn=restart_check, now=now, reason=action)
            else:
                self._sync(job, restart_check, now)
        elif phase in (ABORTING, ABORTED):
            if action == RESUME_JOB:
                self._kill(job, soft=True, fn=to_restarting, now=now, reason=action)
            else:
                self._kill(
                    job, soft=True, fn=alive_check(ABORTED) if phase == ABORTING else stay, now=now, reason=action
                )
        elif phase == COMPLETING:
            self._kill(job, soft=True, fn=alive_check(COMPLETED), now=now, reason=action)
        elif phase == TERMINATING:
            self._kill(job, soft=True, fn=alive_check(TERMINATED), now=now, reason=action)
        else:  # Completed, Failed, Terminated
            self._kill(job, soft=True, fn=stay, now=now, reason=action)

    def _write_status(self, job: JobData, phase: str | None, retry_count: int | None = None) -> None:
        """Write the job's phase and retry count; a phase change is followed by a sync pass."""
        new_phase = job.phase if phase is None else phase
        new_retry = job.retry_count if retry_count is None else retry_count
        if new_phase == job.phase and new_retry == job.retry_count:
            return
        changed = new_phase != job.phase
        job.phase, job.retry_count = new_phase, new_retry
        self._out.append(JobStatus(job.spec.namespace, job.spec.name, new_phase, new_retry, job.version))
        if changed:
            self._enqueue(job, Request(OUT_OF_SYNC))

    def _apply_fn(self, job: JobData, fn: StatusFn) -> None:
        before = job.retry_count
        phase = fn(job)
        retry = job.retry_count
        job.retry_count = before
        self._write_status(job, phase, retry)

    def _ensure_pod_group(self, job: JobData, now: float) -> None:
        if not job.pg_exists:
            job.pg_exists = True
            job.pg_phase = ""
            self._groups[(job.spec.namespace, job.spec.pod_group_name)] = job
            manifest = pod_group_manifest(job.spec, f.format_timestamp(now))
            # which incarnation made the group: a restarted controller deletes a group a kill left behind
            manifest["metadata"]["annotations"][GROUP_VERSION_KEY] = str(job.version)
            self._out.append(CreatePodGroup(manifest))

    def _plugins_add(self, job: JobData) -> None:
        """The plugins' objects for a new (or newly Pending) job, unless they exist."""
        if job.plugin_objects or not job.life.plugins:
            return
        job.plugin_objects = True
        for _, manifest, ssh_key in job_objects(job.spec, job.life.plugins):
            self._out.append(CreateObject(manifest, ssh_key))

    def _plugins_delete(self, job: JobData) -> None:
        """On a kill, the plugins' objects go (they are made again when the job is Pending again)."""
        if not job.plugin_objects:
            return
        job.plugin_objects = False
        for _, manifest, _ in job_objects(job.spec, job.life.plugins):
            meta = manifest["metadata"]
            self._out.append(DeleteObject(manifest["apiVersion"], manifest["kind"], meta["namespace"], meta["name"]))

    def _sync(self, job: JobData, fn: StatusFn, now: float) -> None:
        """SyncJob: make the PodGroup, and once it is admitted the missing pods; recount; maybe change phase."""
        if job.phase in ("", PENDING):
            self._plugins_add(job)
        if job.phase == "":
            self._write_status(job, PENDING)
        self._ensure_pod_group(job, now)
        if job.pg_phase in _NOT_ADMITTED:
            self._apply_fn(job, fn)  # on the stored counters
            return
        tasks = job.spec.tasks
        for pod in job.pods.beyond():  # past the replicas after a scale down: deleted, not killed
            job.pods.mark_deleting(pod, out_of_sync=False)
            self._out.append(DeletePod(job.spec.namespace, pod.name, "ScaleDown"))
        ready: dict[int, bool] = {}
        missing = job.pods.missing()
        stamp = f.format_timestamp(now) if missing else ""
        for pos, index in missing:
            task = tasks[pos]
            if pos not in ready:
                ready[pos] = self._depends_on_met(job, task)
            if ready[pos]:
                self._create_pod(job, task, index, stamp)
        pods = job.pods
        job.status = PodCounts(
            pods.count("Pending"),
            pods.count("Running"),
            pods.count("Succeeded"),
            pods.count("Failed"),
            pods.terminating,
            pods.count("Unknown"),
        )
        job.task_status = pods.task_status()
        self._apply_fn(job, fn)

    def _create_pod(self, job: JobData, task: TaskSpec, index: int, created: str) -> None:
        spec = job.spec
        manifest = pod_manifest(spec, task, index, created, version=job.version, retry_count=job.retry_count)
        on_pod_create(manifest, spec, job.life.plugins, index)
        name = manifest["metadata"]["name"]
        attempt = self._attempts.get((spec.namespace, name), 0)
        self._attempts[(spec.namespace, name)] = attempt + 1
        uid = str(uuid.uuid5(_UID_SPACE, f"{spec.namespace}/{name}/{attempt}"))
        manifest["metadata"]["uid"] = uid
        job.pods.add(PodEntry(name, task.name, index, uid, job.version))
        self._owners[(spec.namespace, name)] = job.key
        self._out.append(CreatePod(manifest))
        self._enqueue(job, Request(POD_PENDING, task.name, name, uid, job.version))

    def _depends_on_met(self, job: JobData, task: TaskSpec) -> bool:
        """A task's ``dependsOn``: all named tasks ready (any one with ``iteration: any`` and several names)."""
        if not task.depends_on:
            return True
        by_name = {t.name: t for t in job.spec.tasks}
        ready = (self._task_ready(job, by_name[n]) for n in task.depends_on)
        if task.iteration == "any" and len(task.depends_on) > 1:
            return any(ready)
        return all(ready)

    def _task_ready(self, job: JobData, task: TaskSpec) -> bool:
        """At least ``minAvailable`` of the task's pods Succeeded or Running (a running pod counts as ready)."""
        return job.pods.task_count(task.name, "Succeeded", "Running") >= task.min_available

    def _task_failed(self, job: JobData, task: str) -> bool:
        """The container restarts of the task's Running and Pending pods reached its ``maxRetry``."""
        return job.pods.restarts(task) >= job.life.task_max_retry.get(task, 3)

    def _task_completed(self, job: JobData, task: str) -> bool:
        """The cache holds at least ``replicas`` Succeeded pods of the task."""
        replicas = next((t.replicas for t in job.spec.tasks if t.name == task), 0)
        return job.pods.task_count(task, "Succeeded") >= replicas

    def _delete_pod(self, job: JobData, pod: PodEntry, reason: str) -> None:
        job.pods.mark_deleting(pod, out_of_sync=True)
        self._out.append(DeletePod(job.spec.namespace, pod.name, reason))

    def _kill(self, job: JobData, *, soft: bool, fn: StatusFn, now: float, reason: str) -> None:
        """KillJob: version+1, delete the pods (Soft keeps finished ones), zero the counters, delete the PodGroup."""
        last_retry = job.retry_count >= job.life.max_retry - 1
        retain = _RETAIN_SOFT if soft or last_retry else frozenset()
        job.version += 1
        for phase in POD_PHASES:
            if phase not in retain:
                for pod in job.pods.live(phase):
                    self._delete_pod(job, pod, reason or SYNC_JOB)
        job.status = PodCounts(terminating=job.pods.terminating)
        job.task_status = {}
        self._apply_fn(job, fn)
        self._plugins_delete(job)
        self._delete_pod_group(job)

    def _delete_pod_group(self, job: JobData) -> None:
        """The last write of every kill, targeted ones too (Volcano v1.14.1): a new PodGroup must be admitted."""
        if job.pg_exists:
            job.pg_exists = False
            job.pg_phase = ""
            self._out.append(DeletePodGroup(job.spec.namespace, job.spec.pod_group_name))

    def _kill_target(self, job: JobData, action: str, req: Request, *, fn: StatusFn, now: float) -> None:
        """KillTarget: delete one task's pods or one pod (finished ones too), then the PodGroup; the version stays."""
        if action == RESTART_PARTITION:
            return  # partitions are not modelled: the partition does not exist, nothing happens
        if action == RESTART_TASK:
            targets = [p for p in job.pods if req.task and p.task == req.task]
        else:
            pod = job.pods.get(req.pod) if req.pod else None
            targets = [pod] if pod is not None else []
        terminating = 0
        for pod in targets:
            if not pod.deleting:
                self._delete_pod(job, pod, action)
            terminating += 1
        job.status = PodCounts(terminating=terminating)
        job.task_status = {}
        self._apply_fn(job, fn)
        self._plugins_delete(job)
        self._delete_pod_group(job)


def _matches(policy: Policy, req: Request) -> bool:
    """Whether a policy applies to a request (PodPending matches only a policy with a timeout)."""
    if (
        policy.events
        and req.event
        and (req.event in policy.events or "*" in policy.events)
        and (req.event != POD_PENDING or policy.timeout > 0)
    ):
        return True
    return policy.exit_code is not None and policy.exit_code == req.exit_code
