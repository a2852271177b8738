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


@attrs.define
class JobRecord:
    """One job (a Volcano Job, or the PodGroup of bare pods).

    ``started`` is when the job first had ``min_available`` pods running;
    ``phase`` is the job's last phase (Completed, Failed, Aborted,
    Terminated, Cancelled, or Running, Pending... when it had not finished).
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
