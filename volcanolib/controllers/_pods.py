"""A job's pods as the job controller's cache holds them, with the counts kept up to date.

Every change of a pod goes through :class:`PodIndex`, so that the counts by
phase, the per-task counts and the set of missing pod slots never need a
walk over all pods: a sync pass costs the pods it creates, not the job's
size.
"""

from __future__ import annotations

from collections.abc import Iterator, Mapping, Sequence
from typing import Any, Final

import attrs

__all__ = ["OUT_OF_SYNC_KEY", "POD_PHASES", "PodEntry", "PodIndex", "entry_of", "exit_code_of"]

#: The pod phases the controller counts.
POD_PHASES = ("Pending", "Running", "Succeeded", "Failed", "Unknown")


@attrs.define(eq=False)
class PodEntry:
    """One pod of a job."""

    name: str
    task: str
    #: The index of the pod in its task.
    index: int
    uid: str
    #: The job version stamped on the pod.
    version: int
    phase: str = "Pending"
    #: Being deleted (it has a deletion timestamp): it counts as terminating.
    deleting: bool = False
    #: Deleted by the controller itself (Volcano's out-of-sync marker): its events only sync.
    out_of_sync: bool = False
    #: How many times its containers were restarted in place.
    restarts: int = 0


class PodIndex:
    """The pods of one job, indexed by name, by phase and by task.

    :param tasks: the job's tasks as ``(name, replicas)``, in spec order.
    """

    def __init__(self, tasks: Sequence[tuple[str, int]]) -> None:
        self._tasks = {name: (pos, replicas) for pos, (name, replicas) in enumerate(tasks)}
        self._pods: dict[str, PodEntry] = {}
        #: Pods not being deleted, by phase.
        self._live: dict[str, dict[str, PodEntry]] = {phase: {} for phase in POD_PHASES}
        self.terminating = 0
        #: Per task, pods by phase: every pod, and the pods not being deleted.
        self._task_all: dict[str, dict[str, int]] = {}
        self._task_live: dict[str, dict[str, int]] = {}
        #: (task position, index) of the expected pods that do not exist.
        self._missing: set[tuple[int, int]] = {
            (pos, index) for pos, (_, replicas) in enumerate(tasks) for index in range(replicas)
        }

    def __iter__(self) -> Iterator[PodEntry]:
        return iter(self._pods.values())

    def __len__(self) -> int:
        return len(self._pods)

    def get(self, name: str) -> PodEntry | None:
        """The pod of that name, or ``None``."""
        return self._pods.get(name)

    def _slot(self, pod: PodEntry) -> tuple[int, int] | None:
        found = self._tasks.get(pod.task)
        if found is None or pod.index >= found[1]:
            return None
        return (found[0], pod.index)

    def _bump(self, table: dict[str, dict[str, int]], pod: PodEntry, by: int) -> None:
        counts = table.setdefault(pod.task, {})
        counts[pod.phase] = counts.get(pod.phase, 0) + by

    def add(self, pod: PodEntry) -> None:
        """Add a pod (its name must be free)."""
        self._pods[pod.name] = pod
        self._bump(self._task_all, pod, 1)
        if pod.deleting:
            self.terminating += 1
        else:
            self._live[pod.phase][pod.name] = pod
            self._bump(self._task_live, pod, 1)
        slot = self._slot(pod)
        if slot is not None and slot in self._missing:
            self._missing.discard(slot)
            if not self._missing:
                self._missing = set()  # a set never shrinks: an emptied one would still cost its old size to scan

    def set_phase(self, pod: PodEntry, phase: str) -> None:
        """Move a pod to another phase."""
        self._bump(self._task_all, pod, -1)
        if not pod.deleting:
            del self._live[pod.phase][pod.name]
            self._bump(self._task_live, pod, -1)
        pod.phase = phase
        self._bump(self._task_all, pod, 1)
        if not pod.deleting:
            self._live[phase][pod.name] = pod
            self._bump(self._task_live, pod, 1)

    def mark_deleting(self, pod: PodEntry, *, out_of_sync: bool) -> None:
        """The pod is being deleted (by the controller when ``out_of_sync``)."""
        pod.out_of_sync = pod.out_of_sync or out_of_sync
        if pod.deleting:
            return
        pod.deleting = True
        del self._live[pod.phase][pod.name]
        self._bump(self._task_live, pod, -1)
        self.terminating += 1

    def remove(self, name: str) -> PodEntry | None:
        """Remove a pod that is gone; returns it, or ``None`` when there is none of that name."""
        pod = self._pods.pop(name, None)
        if pod is None:
            return None
        self._bump(self._task_all, pod, -1)
        if pod.deleting:
            self.terminating -= 1
        else:
            del self._live[pod.phase][pod.name]
            self._bump(self._task_live, pod, -1)
        slot = self._slot(pod)
        if slot is not None:
            self._missing.add(slot)
        return pod

    def live(self, phase: str) -> list[PodEntry]:
        """The pods in ``phase`` that are not being deleted, oldest first."""
        return list(self._live[phase].values())

    def count(self, phase: str) -> int:
        """How many pods are in ``phase`` and not being deleted."""
        return len(self._live[phase])

    def task_count(self, task: str, *phases: str) -> int:
        """How many pods of ``task`` (being deleted or not) are in one of ``phases``."""
        counts = self._task_all.get(task, {})
        return sum(counts.get(phase, 0) for phase in phases)

    def task_status(self) -> dict[str, dict[str, int]]:
        """Per task, the pods not being deleted by phase (tasks with none are left out)."""
        out: dict[str, dict[str, int]] = {}
        for task, counts in self._task_live.items():
            kept = {phase: n for phase, n in counts.items() if n}
            if kept:
                out[task] = kept
        return out

    def resize(self, tasks: Sequence[tuple[str, int]]) -> None:
        """The job's tasks now have these replicas (a scale): the missing slots follow."""
        self._tasks = {name: (pos, replicas) for pos, (name, replicas) in enumerate(tasks)}
        taken = {slot for pod in self._pods.values() if (slot := self._slot(pod)) is not None}
        self._missing = {(pos, index) for pos, (_, replicas) in enumerate(tasks) for index in range(replicas)} - taken

    def beyond(self) -> list[PodEntry]:
        """The pods not being deleted whose index is past their task's replicas (after a scale down)."""
        return [pod for pod in self._pods.values() if not pod.deleting and self._slot(pod) is None]

    def restarts(self, task: str) -> int:
        """Container restarts of the task's Running and Pending pods (being deleted or not)."""
        return sum(p.restarts for p in self._pods.values() if p.task == task and p.phase in ("Running", "Pending"))

    def missing(self) -> list[tuple[int, int]]:
        """``(task position, index)`` of the expected pods that do not exist, in spec order."""
        return sorted(self._missing) if self._missing else []


#: Volcano's marker on a pod its job controller is deleting (its events then only sync).
OUT_OF_SYNC_KEY: Final = "volcano.sh/controller-out-of-sync"
_TASK_SPEC_KEY: Final = "volcano.sh/task-spec"
_TASK_INDEX_KEY: Final = "volcano.sh/task-index"
_JOB_VERSION_KEY: Final = "volcano.sh/job-version"


def _map(value: Any) -> Mapping[str, Any]:
    return value if isinstance(value, dict) else {}


def exit_code_of(pod: Mapping[str, Any]) -> int:
    """The exit code of a pod's first container, as Volcano reads it for PodFailed (0 when it has none)."""
    status = pod.get("status")
    statuses = status.get("containerStatuses") if isinstance(status, dict) else None
    if not isinstance(statuses, list) or not statuses or not isinstance(statuses[0], dict):
        return 0
    state = statuses[0].get("state")
    terminated = state.get("terminated") if isinstance(state, dict) else None
    code = terminated.get("exitCode") if isinstance(terminated, dict) else None
    return code if isinstance(code, int) and not isinstance(code, bool) else 0


def entry_of(pod: Mapping[str, Any]) -> PodEntry | None:
    """The controller's entry for a job's pod manifest (from the cluster), or ``None`` when it is not a job's pod."""
    meta = pod.get("metadata")
    if not isinstance(meta, dict):
        return None
    annotations = _map(meta.get("annotations"))
    task = str(annotations.get(_TASK_SPEC_KEY) or "")
    name = str(meta.get("name") or "")
    if not task or not name:
        return None
    raw_index = str(annotations.get(_TASK_INDEX_KEY) or name.rpartition("-")[2])
    raw_version = str(annotations.get(_JOB_VERSION_KEY) or "0")
    if not raw_index.isdigit() or not raw_version.isdigit():
        return None
    status = _map(pod.get("status"))
    phase = str(status.get("phase") or "Pending")
    return PodEntry(
        name,
        task,
        int(raw_index),
        str(meta.get("uid") or ""),
        int(raw_version),
        phase if phase in POD_PHASES else "Unknown",
        deleting=meta.get("deletionTimestamp") is not None,
        out_of_sync=OUT_OF_SYNC_KEY in annotations,
    )
