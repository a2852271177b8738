"""What the job controller does on container restarts (TaskFailed) and on a Job update (a scale), as Volcano v1.14.1."""

from __future__ import annotations

import copy

import pytest
from job_harness import NS, Harness, job, task

from volcanolib import ManifestError
from volcanolib.controllers import DeletePod, JobStatus, UpdatePodGroup


def running(manifest: dict[str, object]) -> Harness:
    h = Harness()
    h.submit(manifest)
    h.admit()
    h.run_all()
    return h


def test_container_restarts_reaching_max_retry_raise_task_failed() -> None:
    """jobCache.TaskFailed: the restarts of a task's Running and Pending pods reach its maxRetry (here 2)."""
    h = running(job("j", task("a", 2, maxRetry=2), policies=[{"event": "TaskFailed", "action": "AbortJob"}]))
    h.apply(h.ctrl.pod_restarted(NS, "j-a-0", 1, now=0.0))
    assert h.state("j").phase == "Running"  # one restart: an update that only syncs
    h.apply(h.ctrl.pod_restarted(NS, "j-a-1", 1, now=0.0))
    assert h.state("j").phase == "Aborted"  # 1 + 1 = maxRetry: TaskFailed -> AbortJob


def test_a_task_max_retry_defaults_to_three() -> None:
    """The task's maxRetry counts container restarts for TaskFailed (3 when unset; the CRD refuses below 0)."""
    for max_retry, expected in ((None, "Aborted"), (4, "Running")):
        extra = {} if max_retry is None else {"maxRetry": max_retry}
        h = running(job("j", task("a", 1, **extra), policies=[{"event": "TaskFailed", "action": "AbortJob"}]))
        h.apply(h.ctrl.pod_restarted(NS, "j-a-0", 3, now=0.0))
        assert h.state("j").phase == expected, max_retry


def scalable() -> dict[str, object]:
    return job("j", task("a", 2), task("b", 1), minAvailable=2)


def scaled(manifest: dict[str, object], replicas: int, **extra: object) -> dict[str, object]:
    out = copy.deepcopy(manifest)
    out["spec"]["tasks"][0].update(replicas=replicas, **extra)  # type: ignore[index]
    return out


def test_a_scale_up_updates_the_pod_group_and_creates_the_new_pods() -> None:
    manifest = scalable()
    h = running(manifest)
    changes = h.apply(h.ctrl.update(scaled(manifest, 4, minAvailable=3), now=1.0))
    (update,) = [c for c in changes if isinstance(c, UpdatePodGroup)]
    assert update.manifest["spec"]["minTaskMember"] == {"a": 3, "b": 1}
    assert update.manifest["spec"]["minMember"] == 2  # the Job's minAvailable cannot change
    assert h.alive() == ["j-a-0", "j-a-1", "j-a-2", "j-a-3", "j-b-0"]


def test_a_scale_down_deletes_the_pods_past_the_replicas_and_their_deletion_is_pod_evicted() -> None:
    """Volcano deletes them without its out-of-sync mark: once gone they raise PodEvicted, and policies fire."""
    manifest = scalable()
    manifest["spec"]["policies"] = [{"event": "PodEvicted", "action": "RestartJob"}]  # type: ignore[index]
    h = running(manifest)
    changes = h.apply(h.ctrl.update(scaled(manifest, 1), now=1.0))
    assert next(c.name for c in changes if isinstance(c, DeletePod)) == "j-a-1"
    assert JobStatus(NS, "j", "Restarting", 1, version=1) in h.statuses  # j-a-1 gone: PodEvicted -> RestartJob


@pytest.mark.parametrize(
    ("change", "message"),
    [
        (lambda m: m["spec"]["tasks"].pop(), "spec.tasks: job updates may not add or remove tasks"),
        (
            lambda m: m["spec"]["tasks"][0]["template"]["spec"].update(priorityClassName="high"),
            "spec.tasks[0]: job updates may not change fields other than minAvailable",
        ),
    ],
)
def test_the_webhook_refuses_other_updates(change: object, message: str) -> None:
    manifest = scalable()
    h = running(manifest)
    new = copy.deepcopy(manifest)
    change(new)  # type: ignore[operator]
    with pytest.raises(ManifestError) as info:
        h.ctrl.update(new, now=1.0)
    assert message in str(info.value)
