"""The job controller's state of a job, and the predicates of its phase transitions.

A status function looks at a job after a sync or kill pass and names the
phase to move to (``None``: stay); it may count a retry. They follow the
state table and transition predicates of Volcano's job controller.
"""

from __future__ import annotations

from collections.abc import Callable
from typing import Final

import attrs

from volcanolib.controllers._lifecycle import Lifecycle
from volcanolib.controllers._pods import PodIndex
from volcanolib.kube.jobs import JobSpec

__all__ = [
    "FINISHED_PHASES",
    "PHASES",
    "JobData",
    "PodCounts",
    "Request",
    "StatusFn",
    "Timer",
    "alive_check",
    "pending_fn",
    "restart_check",
    "running_fn",
    "stay",
    "to",
    "to_restarting",
]

# Job phases.
PENDING: Final = "Pending"
RUNNING: Final = "Running"
RESTARTING: Final = "Restarting"
COMPLETING: Final = "Completing"
COMPLETED: Final = "Completed"
ABORTING: Final = "Aborting"
ABORTED: Final = "Aborted"
TERMINATING: Final = "Terminating"
TERMINATED: Final = "Terminated"
FAILED: Final = "Failed"
#: Every job phase, in the order of the reference's state table.
PHASES: Final = (
    PENDING,
    RUNNING,
    RESTARTING,
    COMPLETING,
    COMPLETED,
    ABORTING,
    ABORTED,
    TERMINATING,
    TERMINATED,
    FAILED,
)
#: The phases a job never leaves on its own (Aborted leaves on ResumeJob).
FINISHED_PHASES: Final = frozenset({COMPLETED, FAILED, TERMINATED, ABORTED})


@attrs.frozen
class PodCounts:
    """Pods by phase; ``terminating`` are pods being deleted, counted in no phase."""

    pending: int = 0
    running: int = 0
    succeeded: int = 0
    failed: int = 0
    terminating: int = 0
    unknown: int = 0


@attrs.frozen
class Request:
    """One request of the controller's queue: an event of a job, or a command."""

    event: str
    task: str = ""
    pod: str = ""
    pod_uid: str = ""
    version: int = 0
    exit_code: int = 0
    action: str = ""


@attrs.define(eq=False)
class Timer:
    """A delayed action (a policy with a ``timeout``), ordered by when it is due."""

    due: float
    seq: int
    job: JobData
    key: str
    action: str
    request: Request
    cancelled: bool = False

    def __lt__(self, other: Timer) -> bool:
        return (self.due, self.seq) < (other.due, other.seq)


@attrs.define(eq=False)
class JobData:
    """The controller's state of one job: spec, status, pods, PodGroup, delayed actions."""

    spec: JobSpec
    life: Lifecycle
    phase: str = ""
    version: int = 0
    retry_count: int = 0
    status: PodCounts = PodCounts()
    task_status: dict[str, dict[str, int]] = attrs.Factory(dict)
    pods: PodIndex = attrs.field(init=False)
    pg_exists: bool = False
    pg_phase: str = ""
    delayed: dict[str, Timer] = attrs.Factory(dict)
    deleted: bool = False
    #: The job plugins' objects exist (made on a sync of a new job, deleted on every kill).
    plugin_objects: bool = False

    def __attrs_post_init__(self) -> None:
        self.pods = PodIndex([(t.name, t.replicas) for t in self.spec.tasks])

    @property
    def key(self) -> tuple[str, str]:
        return (self.spec.namespace, self.spec.name)


StatusFn = Callable[[JobData], str | None]


# Status functions: given the job after a pass, the phase to move to (None: stay).


def stay(job: JobData) -> str | None:
    return None


def to(phase: str) -> StatusFn:
    def fn(job: JobData) -> str | None:
        return phase

    return fn


def to_restarting(job: JobData) -> str | None:
    job.retry_count += 1
    return RESTARTING


def alive_check(phase: str) -> StatusFn:
    """Move to ``phase`` once no pod is terminating, pending or running."""

    def fn(job: JobData) -> str | None:
        s = job.status
        return phase if s.terminating == 0 and s.pending == 0 and s.running == 0 else None

    return fn


def pending_fn(job: JobData) -> str | None:
    """Pending -> Running once running + succeeded + failed reach minAvailable (failed pods count)."""
    s = job.status
    return RUNNING if job.spec.min_available <= s.running + s.succeeded + s.failed else None


def running_fn(job: JobData) -> str | None:
    """Running -> Completed / Failed / Pending, in the reference's order."""
    s, spec = job.status, job.spec
    total = spec.replicas
    if total == 0:
        return None
    min_success = job.life.min_success
    if min_success is not None and s.succeeded >= min_success:
        return COMPLETED
    if s.succeeded + s.failed == total:
        if spec.min_available >= sum(t.min_available for t in spec.tasks):
            for task in spec.tasks:
                counted = job.task_status.get(task.name)
                if counted is not None and counted.get("Succeeded", 0) < task.min_available:
                    return FAILED
        if min_success is not None and s.succeeded < min_success:
            return FAILED
        return COMPLETED if s.succeeded >= spec.min_available else FAILED
    if s.pending > total - spec.min_available:
        return PENDING
    return None


def restart_check(job: JobData) -> str | None:
    """Restarting -> Failed when the retries are used up, -> Pending once enough pods are not terminating."""
    if job.retry_count >= job.life.max_retry:
        return FAILED
    if job.spec.replicas - job.status.terminating >= job.spec.min_available:
        return PENDING
    return None
