"""Taking over a job from the cluster: its status, pods and PodGroup -> the controller's state of it.

A controller that starts (or starts again) finds Jobs that ran before. It
reads each one's status (phase, version, retry count, counters, the plugins'
objects), its pods (task, index, version stamp, phase, being deleted, the
out-of-sync marker) and its PodGroup, and works out what the controller it
replaces had left undone:

* pods carrying the out-of-sync marker are deleted (Volcano's sync does the
  same);
* in Restarting, pods of an older job version are deleted, unless the
  retries are used up (a restart that wrote its status and stopped before
  its deletions);
* a PodGroup made for an older job version (its ``volcanolib.io/job-version``
  annotation) is deleted: a full kill deletes the group;
* the events of the pods' current state are raised again, oldest reaction
  first: PodFailed for failed pods, TaskCompleted for tasks whose pods all
  succeeded, PodPending for pending pods (policy timeouts start again). A
  reaction already made has removed its cause (the pods were deleted, or
  the job moved to a phase where every action only kills), so raising the
  event again changes nothing; one that was not made is made now.
"""

from __future__ import annotations

from collections.abc import Iterable, Mapping
from typing import Any

import attrs

from volcanolib.controllers._pods import PodEntry, entry_of, exit_code_of
from volcanolib.controllers._states import RESTARTING, JobData, PodCounts, Request

__all__ = ["Takeover", "take_over"]


def _int(value: Any) -> int:
    return value if isinstance(value, int) and not isinstance(value, bool) and value >= 0 else 0


def _map(value: Any) -> Mapping[str, Any]:
    return value if isinstance(value, dict) else {}


@attrs.frozen
class Takeover:
    """What is left to do for a job taken over from the cluster."""

    #: The PodGroup is stale (made for an older job version): delete it.
    stale_group: bool
    #: Pods to delete, with why.
    delete: tuple[tuple[PodEntry, str], ...]
    #: The events to raise again, in order.
    requests: tuple[Request, ...]


def take_over(
    job: JobData,
    status: Mapping[str, Any],
    pods: Iterable[Mapping[str, Any]],
    pod_group: Mapping[str, Any] | None,
    *,
    group_version_key: str,
) -> Takeover:
    """Fill ``job`` (new, from the Job's spec) from the cluster; return what is left to do.

    :param status: the Job's ``status``.
    :param pods: the job's pods, as the API server holds them.
    :param pod_group: its PodGroup, or ``None``.
    :param group_version_key: the PodGroup annotation holding the job version that made it.
    """
    state = _map(status.get("state"))
    job.phase = str(state.get("phase") or "")
    job.version = _int(status.get("version"))
    job.retry_count = _int(status.get("retryCount"))
    job.status = PodCounts(
        *(_int(status.get(k)) for k in ("pending", "running", "succeeded", "failed", "terminating", "unknown"))
    )
    job.task_status = {
        str(task): {str(phase): _int(n) for phase, n in _map(_map(counts).get("phase")).items()}
        for task, counts in _map(status.get("taskStatusCount")).items()
    }
    job.plugin_objects = any(str(k).startswith("plugin-") for k in _map(status.get("controlledResources")))
    stale_group = False
    if pod_group is not None:
        stamp = str(_map(_map(pod_group.get("metadata")).get("annotations")).get(group_version_key) or "")
        if stamp.isdigit() and int(stamp) < job.version:
            stale_group = True
        else:
            job.pg_exists = True
            job.pg_phase = str(_map(pod_group.get("status")).get("phase") or "")
    tasks = {t.name for t in job.spec.tasks}
    retries_left = job.retry_count < job.life.max_retry
    delete: list[tuple[PodEntry, str]] = []
    requests: list[Request] = []
    succeeded: dict[str, PodEntry] = {}
    for pod in pods:
        entry = entry_of(pod)
        if entry is None or entry.task not in tasks or job.pods.get(entry.name) is not None:
            continue
        job.pods.add(entry)
        if entry.deleting:
            continue
        if entry.out_of_sync:
            delete.append((entry, "OutOfSync"))
            continue
        if job.phase == RESTARTING and entry.version < job.version and retries_left:
            delete.append((entry, "RestartJob"))
            continue
        if entry.version < job.version:
            continue  # kept from an earlier incarnation: its events only sync
        request = Request("", entry.task, entry.name, entry.uid, entry.version)
        if entry.phase == "Failed":
            requests.append(attrs.evolve(request, event="PodFailed", exit_code=exit_code_of(pod)))
        elif entry.phase == "Pending":
            requests.append(attrs.evolve(request, event="PodPending"))
        elif entry.phase == "Succeeded":
            succeeded.setdefault(entry.task, entry)
    for task in job.spec.tasks:
        entry = succeeded.get(task.name)
        if entry is not None and job.pods.task_count(task.name, "Succeeded") >= task.replicas:
            requests.append(Request("TaskCompleted", entry.task, entry.name, entry.uid, entry.version))
    return Takeover(stale_group, tuple(delete), tuple(requests))
