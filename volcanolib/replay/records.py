"""What a replay recorded: per pod attempt, per job, the cluster over time, the queues.

These are plain records, filled in by the engine while it runs and read by
the metrics, the CSV writer and the plots.
"""

from __future__ import annotations

import attrs

__all__ = ["JobRecord", "PodRecord", "QueueRecord", "ReplayRecord", "Sample"]


@attrs.define
class PodRecord:
    """One pod attempt: a restarted pod is a new record with the next ``attempt``.

    ``phase`` is Succeeded, Failed, Evicted or Deleted for an attempt that
    ended, Running or Pending for one that had not ended when the replay did.
    ``request`` maps a resource name to an amount (cpu in cores, memory in
    bytes, others in units).
    """

    name: str
    job: str
    queue: str
    node: str | None
    submitted: float
    bound: float | None
    started: float | None
    finished: float | None
    phase: str
    attempt: int
    request: dict[str, float]
    #: How many times its container was restarted in place.
    restarts: int = 0
    #: When the pod object was deleted (by its job's controller, a user, an eviction); ``None``: it still
    #: exists at the end (a finished pod kept), or was never deleted.
    deleted: float | None = None


@attrs.define
class JobRecord:
    """One job (a Volcano Job, or the PodGroup of bare pods).

    ``started`` is when the job first had ``min_available`` pods running;
    ``phase`` is the job's last phase (Completed, Failed, Aborted,
    Terminated, Cancelled, Deleted, or Running, Pending... when it had not finished).
    """

    name: str
    queue: str
    submitted: float
    started: float | None
    finished: float | None
    phase: str
    restarts: int
    evicted_pods: int
    min_available: int
    #: The job's phases, each with the time it began (the first is its arrival, Pending).
    phases: list[tuple[float, str]] = attrs.field(factory=list)
    #: A Volcano Job's ``status.version`` at the end (+1 on every kill of the whole job); ``None`` for bare pods.
    version: int | None = None
    #: The phases of the job's PodGroup as sessions wrote them, each with its time (a new PodGroup
    #: starts Pending).
    pod_group_phases: list[tuple[float, str]] = attrs.field(factory=list)
    #: How many of the job's finished (Succeeded or Failed) pods still exist at the end.
    kept_pods: int = 0

    def set_phase(self, phase: str, now: float) -> None:
        """Move to ``phase`` at ``now``, noting it in :attr:`phases` when it differs from the last."""
        self.phase = phase
        if not self.phases or self.phases[-1][1] != phase:
            self.phases.append((now, phase))

    def note_pod_group_phase(self, phase: str, now: float) -> None:
        """Note a phase of the job's PodGroup at ``now`` when it differs from the last one noted."""
        if not self.pod_group_phases or self.pod_group_phases[-1][1] != phase:
            self.pod_group_phases.append((now, phase))

    #: Why a pod of the job could never be placed (no ready node can take it), if one could not.
    unplaceable: str | None = None


@attrs.define
class Sample:
    """The cluster after the events at ``time``; it holds until the next sample (a step function)."""

    time: float
    pending_pods: int
    running_pods: int
    allocated: dict[str, float]
    capacity: dict[str, float]
    queue_allocated: dict[str, dict[str, float]]


@attrs.define
class QueueRecord:
    """A queue as configured: its weight, and its ``deserved`` and ``capability`` resources when set."""

    name: str
    weight: int
    deserved: dict[str, float] | None
    capability: dict[str, float] | None


@attrs.define
class ReplayRecord:
    """Everything a replay recorded, from ``start`` to ``end`` (simulated seconds).

    ``timings`` holds wall-clock seconds: ``wall``, ``sessions``,
    ``snapshots``, ``events``.
    """

    start: float
    end: float
    sessions: int
    pods: list[PodRecord]
    jobs: list[JobRecord]
    samples: list[Sample]
    queues: list[QueueRecord]
    timings: dict[str, float]
