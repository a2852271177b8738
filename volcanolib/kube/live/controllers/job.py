"""The job controller, live: :class:`~volcanolib.controllers.job.JobController` driven by watches.

Events in: Jobs, their pods (phase changes, deletion timestamps,
deletions), their PodGroups (the phase the scheduler writes), Commands
aimed at Jobs, and time (policy timeouts, ``ttlSecondsAfterFinished``).
Writes out, in this order for each reaction: the out-of-sync marker on the
pods about to be deleted, the Job's status subresource, then the creations
and deletions in the order the controller asked for them, except that a run
of pod creations (or of pod deletions) is sent at once, up to
:data:`PARALLEL_WRITES` in flight, as Volcano sends a job's pods. A Job Volcano's
admission would refuse is left alone, with a warning Event naming the
field; the others go on.

Restart-safe: a controller that starts takes every Job over from the
cluster (:meth:`JobController.restore`), creates nothing that exists
(names are the same, and "already exists" is not an error) and raises again
the events of pods whose reaction may not have been made.
"""

from __future__ import annotations

import heapq
import logging
from collections.abc import Callable, Iterable, Mapping
from concurrent.futures import ThreadPoolExecutor
from typing import Any, Final

from volcanolib.controllers._pods import OUT_OF_SYNC_KEY, exit_code_of
from volcanolib.controllers._sshkeys import rsa_key_pair
from volcanolib.controllers.job import (
    Change,
    CreateObject,
    CreatePod,
    CreatePodGroup,
    DeleteObject,
    DeletePod,
    DeletePodGroup,
    JobController,
    JobState,
    JobStatus,
)
from volcanolib.errors import ManifestError
from volcanolib.kube.live._client import ApiError
from volcanolib.kube.live._effectors import EventRecorder
from volcanolib.kube.live.controllers._api import Store, Writer, merge_patch
from volcanolib.manifests import fields as f
from volcanolib.manifests.admission import admit_job, queue_facts
from volcanolib.manifests.fields import Ref

__all__ = ["LiveJobController"]

log = logging.getLogger("volcanolib.kube.live.controllers")

JOB_API: Final = "batch.volcano.sh/v1alpha1"
_FINISHED: Final = frozenset({"Completed", "Failed", "Terminated"})
#: First and longest wait before a job whose writes failed is synced again, in seconds.
RETRY_FIRST: Final = 0.5
RETRY_MAX: Final = 30.0
#: The most pod creations (or deletions) of one reaction in flight at once.
PARALLEL_WRITES: Final = 16


def _map(value: Any) -> Mapping[str, Any]:
    return value if isinstance(value, dict) else {}


def job_owner(pod: Mapping[str, Any]) -> tuple[str, str] | None:
    """``(name, uid)`` of the Volcano Job controlling a pod, or ``None``."""
    for ref in _map(pod.get("metadata")).get("ownerReferences") or ():
        if (
            isinstance(ref, dict)
            and ref.get("controller") is True
            and ref.get("kind") == "Job"
            and str(ref.get("apiVersion", "")).startswith("batch.volcano.sh/")
        ):
            return str(ref.get("name") or ""), str(ref.get("uid") or "")
    return None


class LiveJobController:
    """Drives a :class:`JobController` from the stores' events and writes its changes.

    :param writer: sends the writes.
    :param stores: the stores by kind (``Job``, ``Pod``, ``PodGroup``, ``Queue``, ``Command``, ``PriorityClass``).
    :param recorder: posts Events.
    :param clock: wall-clock seconds (timestamps and policy timeouts).
    :param schedule: asks the manager to call :meth:`tick` at a time.
    :param scheduler_name: the scheduler name of pods whose template and Job name none.
    :param default_queue: the queue of a Job that names none.
    """

    def __init__(
        self,
        writer: Writer,
        stores: Mapping[str, Store],
        recorder: EventRecorder,
        clock: Callable[[], float],
        *,
        scheduler_name: str = "volcano",
        default_queue: str = "default",
    ) -> None:
        self.writer = writer
        self.stores = stores
        self.recorder = recorder
        self.clock = clock
        self.scheduler_name = scheduler_name
        self.default_queue = default_queue
        self.ctrl = JobController(scheduler_name=scheduler_name, default_queue=default_queue)
        #: The jobs this controller runs, by (namespace, name): their uid.
        self.uids: dict[tuple[str, str], str] = {}
        #: Jobs left alone (admission would refuse them), by (namespace, name): their uid.
        self.refused: dict[tuple[str, str], str] = {}
        #: The status last written (or read) per job.
        self._status: dict[tuple[str, str], dict[str, Any]] = {}
        self._ttl: list[tuple[float, str, str, str]] = []
        self._retry: list[tuple[float, str, str]] = []
        self._backoff: dict[tuple[str, str], float] = {}
        self._pool: ThreadPoolExecutor | None = None

    # ------------------------------------------------------------------ start and time

    def start(self) -> None:
        """Take over every Job the cluster holds, then the Commands waiting for them."""
        self._priority_classes()
        by_owner = jobs_of(self.stores["Pod"].items())
        for job in self.stores["Job"].items():
            uid = str(_map(job.get("metadata")).get("uid") or "")
            self._adopt(job, by_owner.get(uid, []))
        for command in self.stores["Command"].items():
            self.on_command("ADDED", command, None)

    def close(self) -> None:
        """Stop the threads that send pod writes (after the last reaction)."""
        if self._pool is not None:
            self._pool.shutdown(wait=True)
            self._pool = None

    def next_due(self) -> float | None:
        """When :meth:`tick` has something to do (wall-clock seconds), or ``None``."""
        times = [t for t in (self.ctrl.next_deadline(),) if t is not None]
        if self._ttl:
            times.append(self._ttl[0][0])
        if self._retry:
            times.append(self._retry[0][0])
        return min(times) if times else None

    def tick(self) -> None:
        """Run what is due: policy timeouts, finished jobs' TTLs, syncs after failed writes."""
        now = self.clock()
        changes = self.ctrl.tick(now=now)
        if changes:
            self._apply(changes, set())
        while self._ttl and self._ttl[0][0] <= now:
            _, namespace, name, uid = heapq.heappop(self._ttl)
            self._expire(namespace, name, uid)
        while self._retry and self._retry[0][0] <= now:
            _, namespace, name = heapq.heappop(self._retry)
            self._apply(self.ctrl.sync(namespace, name, now=now), {(namespace, name)})

    # ------------------------------------------------------------------ events in

    def on_job(self, event: str, job: dict[str, Any], old: dict[str, Any] | None) -> None:
        """A Job was added, changed or deleted."""
        meta = _map(job.get("metadata"))
        key = (str(meta.get("namespace") or "default"), str(meta.get("name") or ""))
        uid = str(meta.get("uid") or "")
        if event == "DELETED":
            if self.uids.get(key) == uid:
                self._forget(key)
                self._apply(self.ctrl.delete(*key, now=self.clock()), set())
            if self.refused.get(key) == uid:
                del self.refused[key]
            return
        if self.uids.get(key) == uid or self.refused.get(key) == uid:
            return  # our own status writes, or a change of a Job this controller runs (scaling is not followed)
        if key in self.uids:  # the name is taken by a new Job: the old one is gone
            self._forget(key)
            self._apply(self.ctrl.delete(*key, now=self.clock()), set())
        self._adopt(job, jobs_of(self.stores["Pod"].items()).get(uid, []))

    def on_pod(self, event: str, pod: dict[str, Any], old: dict[str, Any] | None) -> None:
        """A pod changed: a job's pod moving phase, being deleted or gone raises the job's events."""
        meta = _map(pod.get("metadata"))
        namespace, name = str(meta.get("namespace") or "default"), str(meta.get("name") or "")
        known = self.ctrl.known_pod(namespace, name)
        if known is None or job_owner(pod) is None:
            return
        owner = self.ctrl.owner_of(namespace, name)
        keys = {owner} if owner is not None else set()
        now = self.clock()
        if event == "DELETED":
            self._apply(self.ctrl.pod_deleted(namespace, name, now=now), keys)
            return
        phase = str(_map(pod.get("status")).get("phase") or "Pending")
        changes: list[Change] = []
        if phase != known[0]:
            changes += self.ctrl.pod_phase(namespace, name, phase, now=now, exit_code=exit_code_of(pod))
        if meta.get("deletionTimestamp") is not None and not known[1]:
            changes += self.ctrl.pod_terminating(namespace, name, now=now)
        if changes or phase != known[0]:
            self._apply(changes, keys)

    def on_pod_group(self, event: str, group: dict[str, Any], old: dict[str, Any] | None) -> None:
        """A PodGroup's phase changed (the scheduler admitted it, or it went Unknown)."""
        if event == "DELETED":
            return  # Volcano's controller does not react to a PodGroup going away
        meta = _map(group.get("metadata"))
        namespace = str(meta.get("namespace") or "default")
        phase = str(_map(group.get("status")).get("phase") or "")
        changes = self.ctrl.pod_group_phase(namespace, str(meta.get("name") or ""), phase, now=self.clock())
        if changes:
            self._apply(changes, set())

    def on_command(self, event: str, command: dict[str, Any], old: dict[str, Any] | None) -> bool:
        """A Command aimed at a Job (``vcctl job suspend`` is AbortJob, ``resume`` ResumeJob); whether it was one."""
        target = _map(command.get("target"))
        if event == "DELETED" or target.get("kind") != "Job":
            return False
        meta = _map(command.get("metadata"))
        namespace = str(meta.get("namespace") or "default")
        action = str(command.get("action") or "")
        # as Volcano does: the Command is deleted first, then acted on; a Command already gone was handled
        if not self.writer.delete("Command", namespace, str(meta.get("name") or "")):
            return True
        key = (namespace, str(target.get("name") or ""))
        if key not in self.uids and key not in self.refused:
            # the Command came before the Job's own event: read the Job now
            job = self.writer.get("Job", *key)
            if job is not None:
                self.on_job("ADDED", job, None)
        if key not in self.uids or (target.get("uid") and target.get("uid") != self.uids[key]):
            return True
        try:
            changes = self.ctrl.command(*key, action, now=self.clock())
        except ValueError as exc:
            self._event(key, "Warning", "CommandRefused", str(exc))
            return True
        self._apply(changes, {key})
        return True

    def on_priority_class(self, event: str, obj: dict[str, Any], old: dict[str, Any] | None) -> None:
        """PriorityClasses order a Job's tasks when its PodGroup's minResources is made."""
        self._priority_classes()

    # ------------------------------------------------------------------ taking a Job over

    def _priority_classes(self) -> None:
        classes = self.ctrl.priority_classes
        classes.clear()
        for pc in self.stores["PriorityClass"].items():
            value = pc.get("value")
            if isinstance(value, int) and not isinstance(value, bool):
                classes[str(_map(pc.get("metadata")).get("name") or "")] = value

    def _adopt(self, job: dict[str, Any], pods: list[Mapping[str, Any]]) -> None:
        meta = _map(job.get("metadata"))
        key = (str(meta.get("namespace") or "default"), str(meta.get("name") or ""))
        uid = str(meta.get("uid") or "")
        if meta.get("deletionTimestamp") is not None:
            return
        ref = Ref(None, "", "Job", key[1], key[0])
        status = _map(job.get("status"))
        try:
            admit_job(
                job,
                ref,
                queues=queue_facts(self.stores["Queue"].items()),
                scheduler_name=self.scheduler_name,
                default_queue=self.default_queue,
            )
        except ManifestError as exc:
            self.refused[key] = uid
            log.warning("Job %s/%s is left alone: %s", *key, exc)
            reason = f"{exc.field}: {exc.message}" if exc.field else exc.message
            self._event(key, "Warning", "AdmissionRefused", f"Volcano's admission would refuse this Job: {reason}", uid)
            return
        group_name = f"{key[1]}-{uid}" if uid else key[1]
        group = self.stores["PodGroup"].get(key[0], group_name) or self.stores["PodGroup"].get(key[0], key[1])
        now = self.clock()
        try:
            if _map(status.get("state")).get("phase") or pods or group is not None:
                changes = self.ctrl.restore(job, pods=pods, pod_group=group, now=now)
            else:
                changes = self.ctrl.submit(job, now=now)
        except ManifestError as exc:  # a name still held by a deleted Job's terminating pods
            log.warning("Job %s/%s is not taken over: %s", *key, exc)
            return
        self.uids[key] = uid
        self._status[key] = dict(status)
        self._apply(changes, {key})

    def _forget(self, key: tuple[str, str]) -> None:
        self.uids.pop(key, None)
        self._status.pop(key, None)
        self._backoff.pop(key, None)

    def _expire(self, namespace: str, name: str, uid: str) -> None:
        """``ttlSecondsAfterFinished`` is up: delete the Job (its pods and PodGroup go with it)."""
        key = (namespace, name)
        if self.uids.get(key) != uid:
            return
        state = self.ctrl.job(namespace, name)
        if state.phase not in _FINISHED or state.deleted:
            return
        try:
            self.writer.delete("Job", namespace, name, propagation="Foreground")
        except ApiError as exc:
            log.warning("Job %s/%s: cannot delete it after its TTL: %s", namespace, name, exc)
            heapq.heappush(self._ttl, (self.clock() + RETRY_MAX, namespace, name, uid))

    # ------------------------------------------------------------------ writes out

    def _apply(self, changes: list[Change], keys: set[tuple[str, str]]) -> None:
        """Write one reaction: markers on the pods to delete, the statuses, then the changes in order."""
        touched = set(keys)
        for change in changes:
            key = self._job_of(change)
            if key is not None:
                touched.add(key)
        failed: set[tuple[str, str]] = set()
        for change in changes:
            if isinstance(change, DeletePod) and change.reason != "JobDeleted":
                self._guard(failed, change.namespace, change.name, self._mark, change)
        phases: dict[tuple[str, str], list[str]] = {}
        for change in changes:
            if isinstance(change, JobStatus):
                phases.setdefault((change.namespace, change.name), []).append(change.phase)
        for key in sorted(touched):
            if key in self.uids:
                self._guard(failed, *key, self._write_status, key, phases.get(key, []))
        followups: list[Change] = []
        self._write_changes(changes, failed, followups)
        for key in failed:
            self._retry_later(key)
        if followups:
            self._apply(followups, set())

    def _guard(
        self, failed: set[tuple[str, str]], namespace: str, name: str, fn: Callable[..., None], *args: Any
    ) -> None:
        try:
            fn(*args)
        except ApiError as exc:
            owner = self.ctrl.owner_of(namespace, name) or (namespace, name)
            log.warning("job %s/%s: a write failed: %s", *owner, exc)
            failed.add(owner)

    def _mark(self, change: DeletePod) -> None:
        patch = {"metadata": {"annotations": {OUT_OF_SYNC_KEY: "true"}}}
        self.writer.patch("Pod", change.namespace, change.name, patch)

    def _write_changes(self, changes: list[Change], failed: set[tuple[str, str]], followups: list[Change]) -> None:
        """Send the changes in order; a run of pod creations (or deletions) goes out at once, as Volcano's does."""
        i = 0
        while i < len(changes):
            j = i + 1
            kind = type(changes[i])
            if kind in (CreatePod, DeletePod):
                while j < len(changes) and type(changes[j]) is kind:
                    j += 1
            run = changes[i:j]
            if len(run) == 1:
                self._settle(run[0], self._send(run[0]), failed, followups)
            else:
                if self._pool is None:
                    self._pool = ThreadPoolExecutor(PARALLEL_WRITES, thread_name_prefix="job-writes")
                outcomes = list(self._pool.map(self._send, run))
                for change, outcome in zip(run, outcomes, strict=True):
                    self._settle(change, outcome, failed, followups)
            i = j

    def _send(self, change: Change) -> bool | ApiError:
        """Write one change (on any thread: the controller's state is not touched); what came back."""
        try:
            if isinstance(change, CreatePodGroup):
                self.writer.create(change.manifest)
            elif isinstance(change, CreatePod):
                manifest = dict(change.manifest)
                manifest["metadata"] = {k: v for k, v in manifest["metadata"].items() if k != "uid"}
                self.writer.create(manifest)
            elif isinstance(change, DeletePod):
                return self.writer.delete("Pod", change.namespace, change.name)
            elif isinstance(change, DeletePodGroup):
                self.writer.delete("PodGroup", change.namespace, change.name)
            elif isinstance(change, CreateObject):
                manifest = change.manifest
                if change.ssh_key:
                    private, public = rsa_key_pair()
                    data = {
                        **manifest["stringData"],
                        "id_rsa": private,
                        "id_rsa.pub": public,
                        "authorized_keys": public,
                    }
                    manifest = {**manifest, "stringData": data}
                self.writer.create(manifest)
            elif isinstance(change, DeleteObject):
                self.writer.delete(change.kind, change.namespace, change.name)
        except ApiError as exc:
            return exc
        return True

    def _settle(
        self, change: Change, outcome: bool | ApiError, failed: set[tuple[str, str]], followups: list[Change]
    ) -> None:
        """React to what a write came back with (on the controller's thread)."""
        if outcome is False and isinstance(change, DeletePod):
            # already gone: its deletion event came before the controller asked, or never will
            followups.extend(self.ctrl.pod_deleted(change.namespace, change.name, now=self.clock()))
        if not isinstance(outcome, ApiError):
            return
        if isinstance(change, CreatePod):
            meta = change.manifest["metadata"]
            owner = self.ctrl.owner_of(meta["namespace"], meta["name"])
            self.ctrl.forget_pod(meta["namespace"], meta["name"])  # the next sync makes it again
            log.warning("pod %s/%s not created: %s", meta["namespace"], meta["name"], outcome)
            if owner is not None:
                failed.add(owner)
            return
        log.warning("%s not written: %s", type(change).__name__, outcome)
        key = self._job_of(change)
        if key is not None:
            failed.add(key)

    def _job_of(self, change: Change) -> tuple[str, str] | None:
        """The job a change belongs to (``None`` for a PodGroup or a plugin's object)."""
        if isinstance(change, JobStatus):
            return (change.namespace, change.name)
        if isinstance(change, CreatePod):
            return self.ctrl.owner_of(change.manifest["metadata"]["namespace"], change.manifest["metadata"]["name"])
        if isinstance(change, DeletePod):
            return self.ctrl.owner_of(change.namespace, change.name)
        return None

    def _retry_later(self, key: tuple[str, str]) -> None:
        delay = min(RETRY_MAX, self._backoff.get(key, RETRY_FIRST / 2) * 2)
        self._backoff[key] = delay
        heapq.heappush(self._retry, (self.clock() + delay, *key))

    def _write_status(self, key: tuple[str, str], phases: list[str]) -> None:
        state = self.ctrl.job(*key)
        old = self._status.get(key, {})
        now = self.clock()
        # each phase the reaction passed through is a write of its own, as in Volcano: a watch sees every one
        for phase in passed_phases(old_phase(old), phases, state.phase):
            new = status_of(state, old, now, phase)
            if not self.writer.patch("Job", key[0], key[1], {"status": merge_patch(old, new)}, "status"):
                return
            old = self._status[key] = new
        new = status_of(state, old, now)
        if new == old:
            return
        if self.writer.patch("Job", key[0], key[1], {"status": merge_patch(old, new)}, "status"):
            self._status[key] = new
            self._backoff.pop(key, None)
        if state.phase in _FINISHED and state.ttl_after_finished is not None and state.phase != old_phase(old):
            due = f.timestamp(new["state"]["lastTransitionTime"], Ref(None, ""), "") + state.ttl_after_finished
            heapq.heappush(self._ttl, (due, key[0], key[1], self.uids[key]))

    def _event(self, key: tuple[str, str], type_: str, reason: str, message: str, uid: str = "") -> None:
        self.recorder.record("Job", key[0], key[1], uid or self.uids.get(key, ""), type_, reason, message)


def old_phase(status: Mapping[str, Any]) -> str:
    """The phase of a Job status."""
    return str(_map(status.get("state")).get("phase") or "")


def passed_phases(previous: str, phases: Iterable[str], final: str) -> list[str]:
    """The phases between ``previous`` and ``final`` that ``phases`` (one reaction's, in order) went through."""
    passed: list[str] = []
    for phase in phases:
        if phase != (passed[-1] if passed else previous):
            passed.append(phase)
    while passed and passed[-1] == final:
        passed.pop()
    return passed


def status_of(state: JobState, old: Mapping[str, Any], now: float, phase: str = "") -> dict[str, Any]:
    """The Job's status subresource for the controller's state (phase, counts, version, conditions, plugins).

    :param old: the status written last.
    :param phase: a phase the job passed through, written instead of its current one.
    """
    counts = state.status
    phase = phase or state.phase
    previous = old_phase(old)
    stamp = str(_map(old.get("state")).get("lastTransitionTime") or "")
    conditions: list[Any] = list(old.get("conditions") or [])
    if phase != previous or not stamp:
        stamp = f.format_timestamp(now)
    if phase != previous:
        conditions.append({"status": phase, "lastTransitionTime": stamp})
    out: dict[str, Any] = {
        "state": {"phase": phase, "lastTransitionTime": stamp},
        "minAvailable": state.min_available,
        "pending": counts.pending,
        "running": counts.running,
        "succeeded": counts.succeeded,
        "failed": counts.failed,
        "terminating": counts.terminating,
        "unknown": counts.unknown,
        "version": state.version,
        "retryCount": state.retry_count,
        "conditions": conditions,
    }
    if state.task_status:
        out["taskStatusCount"] = {task: {"phase": dict(counts_)} for task, counts_ in state.task_status.items()}
    if state.controlled_resources:
        out["controlledResources"] = dict(state.controlled_resources)
    return out


def jobs_of(pods: Iterable[Mapping[str, Any]]) -> dict[str, list[Mapping[str, Any]]]:
    """Pods by the uid of the Job that controls them."""
    out: dict[str, list[Mapping[str, Any]]] = {}
    for pod in pods:
        owner = job_owner(pod)
        if owner is not None:
            out.setdefault(owner[1], []).append(pod)
    return out
