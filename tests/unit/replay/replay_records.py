"""Hand-built replay records shared by the tests of the replay's outputs (metrics, CSV, tables, plots)."""

from __future__ import annotations

from typing import Any

from volcanolib.replay.records import JobRecord, PodRecord, QueueRecord, ReplayRecord, Sample

CAPACITY = {"cpu": 10.0, "memory": 100.0, "pods": 110.0}


def sample(
    time: float, q1: dict[str, float] | None = None, q2: dict[str, float] | None = None, **counts: int
) -> Sample:
    """The cluster of :data:`CAPACITY` with what queues q1 and q2 hold; the cluster's allocation is their sum."""
    queues = {name: alloc for name, alloc in (("q1", q1), ("q2", q2)) if alloc}
    allocated: dict[str, float] = {}
    for alloc in queues.values():
        for name, amount in alloc.items():
            allocated[name] = allocated.get(name, 0.0) + amount
    return Sample(
        time=time,
        pending_pods=counts.get("pending", 0),
        running_pods=counts.get("running", 0),
        allocated=allocated,
        capacity=dict(CAPACITY),
        queue_allocated=queues,
    )


def job(
    name: str, queue: str, submitted: float, started: float | None, finished: float | None, phase: str
) -> JobRecord:
    return JobRecord(
        name=name,
        queue=queue,
        submitted=submitted,
        started=started,
        finished=finished,
        phase=phase,
        restarts=0,
        evicted_pods=0,
        min_available=1,
    )


def pod(name: str, attempt: int = 0, **times: Any) -> PodRecord:
    return PodRecord(
        name=name,
        job="ns/j1",
        queue="q1",
        node=None if times.get("bound") is None else "n1",
        submitted=times.get("submitted") or 0.0,
        bound=times.get("bound"),
        started=times.get("started"),
        finished=times.get("finished"),
        phase=str(times.get("phase", "Succeeded")),
        attempt=attempt,
        request=times.get("request", {"memory": 10.0, "cpu": 4.0}),
    )


def two_queues(**keys: Any) -> ReplayRecord:
    """Cluster of cpu 10, memory 100 for 40 s; q1 (weight 1) and q2 (weight 3) with work, and an idle queue.

    0-10 s: nothing allocated; 10-30 s: q1 holds cpu 4, memory 10 and q2 cpu 2, memory 60;
    30-40 s: q1 alone, cpu 4, memory 10.
    """
    values: dict[str, Any] = {
        "start": 0.0,
        "end": 40.0,
        "sessions": 40,
        "pods": [],
        "jobs": [
            job("ns/j4", "q1", 12.0, None, None, "Pending"),
            job("ns/j1", "q1", 0.0, 10.0, 40.0, "Completed"),
            job("ns/j2", "q2", 5.0, 10.0, 30.0, "Failed"),
            job("ns/j3", "q2", 8.0, None, 20.0, "Cancelled"),
        ],
        "samples": [
            sample(0.0, pending=2),
            sample(10.0, {"cpu": 4, "memory": 10}, {"cpu": 2, "memory": 60}, running=3, pending=1),
            sample(30.0, {"cpu": 4, "memory": 10}, running=1),
        ],
        "queues": [
            QueueRecord(name="q2", weight=3, deserved=None, capability=None),
            QueueRecord(name="q1", weight=1, deserved=None, capability=None),
            QueueRecord(name="idle", weight=1, deserved=None, capability=None),
        ],
        "timings": {"events": 0.25, "wall": 1.0, "sessions": 0.5, "snapshots": 0.125},
    }
    values.update(keys)
    return ReplayRecord(**values)


def with_pods() -> ReplayRecord:
    """:func:`two_queues` with three pod attempts (one evicted and restarted, one never bound)."""
    return two_queues(
        pods=[
            pod("ns/j1-w-0", 1, submitted=20.0, bound=21.0, started=22.0, finished=40.0),
            pod("ns/j1-w-0", 0, submitted=0.0, bound=10.0, started=10.0, finished=20.0, phase="Evicted"),
            pod("ns/j1-w-1", 0, submitted=0.0, request={"cpu": 0.5, "nvidia.com/gpu": 1.0}, phase="Pending"),
        ]
    )
