"""Replays of small Volcano Jobs whose lifecycle Volcano v1.14.1 decides rule by rule.

Each replay here pins one rule of the pinned release where the scheduler's
PodGroup status and the job controller meet.
"""

from __future__ import annotations

from typing import Any

import pytest

from volcanolib.framework.config import parse_config
from volcanolib.replay import ReplayOptions, ReplayRecord, run_replay
from volcanolib.replay.inputs import load_objects

GANG_CONF = """
actions: "enqueue, allocate, backfill"
tiers:
- plugins:
  - name: priority
  - name: gang
- plugins:
  - name: drf
  - name: proportion
"""


def node(name: str, cpu: str = "8") -> dict[str, Any]:
    return {
        "apiVersion": "v1",
        "kind": "Node",
        "metadata": {"name": name},
        "status": {"allocatable": {"cpu": cpu, "memory": "16Gi", "pods": "110"}},
    }


def task(name: str, replicas: int = 1, annotations: dict[str, str] | None = None, **extra: Any) -> dict[str, Any]:
    return {
        "name": name,
        "replicas": replicas,
        "template": {
            "metadata": {"annotations": annotations or {}},
            "spec": {"restartPolicy": "Never", "containers": [{"name": "c", "resources": {"requests": {"cpu": "1"}}}]},
        },
        **extra,
    }


def vcjob(name: str, *tasks: dict[str, Any], **spec: Any) -> dict[str, Any]:
    return {
        "apiVersion": "batch.volcano.sh/v1alpha1",
        "kind": "Job",
        "metadata": {"name": name, "namespace": "ns", "creationTimestamp": "1970-01-01T00:00:00Z"},
        "spec": {"schedulerName": "volcano", "tasks": list(tasks), **spec},
    }


def replay(*objects: dict[str, Any], **options: Any) -> ReplayRecord:
    workload = load_objects([node("n1"), *objects], source="test")
    return run_replay(workload, parse_config(GANG_CONF), ReplayOptions(**options))


def job_record(record: ReplayRecord, name: str) -> Any:
    return next(j for j in record.jobs if j.name == name)


# ---------------------------------------------------------------------- item 2: a failed pod is not ready


def failing_gang(policy: str) -> dict[str, Any]:
    """A gang of two: ``a`` runs 100 s, ``b`` fails after 10 s; on ``Unknown``, ``policy``."""
    return vcjob(
        "gang",
        task("a", annotations={"volcanolib.io/duration": "100s"}),
        task("b", annotations={"volcanolib.io/duration": "10s", "volcanolib.io/exit-code": "1"}),
        minAvailable=2,
        policies=[{"event": "Unknown", "action": policy}],
    )


def test_a_failed_pod_leaves_the_gang_unknown_and_unknown_policies_fire() -> None:
    """b fails at 10 s: gang counts a alone (Failed is not ready), the PodGroup goes Unknown, AbortJob fires."""
    record = replay(failing_gang("AbortJob"))
    job = job_record(record, "ns/gang")
    assert job.phase == "Aborted"
    assert job.finished == 11.0  # the session after the failure writes Unknown; the kill is at once
    a = next(p for p in record.pods if p.name == "ns/gang-a-0")
    assert (a.phase, a.finished) == ("Deleted", 11.0)


def test_an_unknown_of_an_older_job_version_is_ignored_after_a_restart() -> None:
    """RestartJob on the first Unknown (version 1); the second Unknown carries version 0 and only syncs."""
    record = replay(failing_gang("RestartJob"))
    job = job_record(record, "ns/gang")
    assert job.restarts == 1
    # the second attempt's b fails too, its Unknown is ignored: the job runs until a ends, then fails
    assert job.phase == "Failed"
    a = [p for p in record.pods if p.name == "ns/gang-a-0"]
    assert [(p.attempt, p.phase) for p in a] == [(0, "Deleted"), (1, "Succeeded")]


def test_restart_task_on_unknown_kills_nothing_and_counts_a_retry() -> None:
    """An Unknown request names no task: RestartTask restarts nothing, but the retry is counted.

    Like every kill in Volcano v1.14.1 it deletes the PodGroup; the new one, with b still failed,
    goes Unknown at the next sessions, until the retries are used up and the job fails (the job
    sequence task-less-restart-task-on-unknown.yaml shows Volcano's controller doing the same).
    """
    record = replay(failing_gang("RestartTask"))
    job = job_record(record, "ns/gang")
    assert (job.restarts, job.phase, job.finished) == (3, "Failed", 13.0)
    assert sorted((p.name, p.attempt, p.phase) for p in record.pods) == [
        ("ns/gang-a-0", 0, "Deleted"),
        ("ns/gang-b-0", 0, "Failed"),
    ]


@pytest.mark.parametrize("policy", ["AbortJob", "RestartJob", "RestartTask"])
def test_without_the_failure_nothing_is_unknown(policy: str) -> None:
    job = vcjob(
        "gang",
        task("a", annotations={"volcanolib.io/duration": "100s"}),
        task("b", annotations={"volcanolib.io/duration": "10s"}),
        minAvailable=2,
        policies=[{"event": "Unknown", "action": policy}],
    )
    record = replay(job)
    assert (job_record(record, "ns/gang").phase, job_record(record, "ns/gang").restarts) == ("Completed", 0)


# ---------------------------------------------------------------------- item 4: a kill during Restarting


def test_a_delayed_abort_while_restarting_kills_and_the_job_runs_again() -> None:
    """PodFailed -> RestartJob, PodPending -> AbortJob after 20 s; pods take 30 s to terminate.

    At 11 s b fails: RestartJob (retry 1) deletes a (terminating until 41 s) and b. The new PodGroup
    is admitted at once and b is made again, but a gang of two cannot start while a terminates: b
    stays Pending and its AbortJob fires at 31 s, the job still Restarting. In Restarting, AbortJob
    only kills again: the pending b is gone at once and the PodGroup is deleted; the controller hears
    of b's deletion once that whole kill is applied, and makes the PodGroup again (before the fix the
    kill's deletion of the PodGroup came after, and removed the new one: the job stayed Restarting).
    At 41 s a is gone: Pending, then Running with both pods; b fails again at 51 s: RestartJob makes
    the retry count 2, which is maxRetry: Failed.
    """
    job = vcjob(
        "j",
        task("a", annotations={"volcanolib.io/duration": "100s"}),
        task("b", annotations={"volcanolib.io/duration": "10s", "volcanolib.io/exit-code": "1"}),
        minAvailable=2,
        maxRetry=2,
        policies=[
            {"event": "PodFailed", "action": "RestartJob"},
            {"event": "PodPending", "action": "AbortJob", "timeout": "20s"},
        ],
    )
    record = replay(job, termination_grace=30.0)
    result = job_record(record, "ns/j")
    assert (result.phase, result.restarts, result.finished) == ("Failed", 2, 51.0)
    b = [(p.attempt, p.phase, p.submitted, p.bound, p.finished) for p in record.pods if p.name == "ns/j-b-0"]
    assert b == [
        (0, "Failed", 0.0, 1.0, 11.0),
        (1, "Deleted", 11.0, None, 31.0),  # made once the new PodGroup was admitted; killed by the AbortJob
        (2, "Failed", 31.0, 41.0, 51.0),  # the job ran again
    ]
