"""JobController.restore: a controller that starts again takes its jobs over from the cluster.

Each test runs a job with one controller (the Harness), then hands the
cluster as it stands (the Job's status, its pods, its PodGroup) to a new
controller, as ``volcanolib controllers`` does when it starts again.
"""

from __future__ import annotations

import copy
from typing import Any

from job_harness import NS, Harness, job, task, tf_job

from volcanolib.controllers import CreatePod, CreatePodGroup, DeletePod, DeletePodGroup, JobController
from volcanolib.controllers._pods import OUT_OF_SYNC_KEY


def status_of(h: Harness, name: str) -> dict[str, Any]:
    state = h.state(name)
    s = state.status
    return {
        "state": {"phase": state.phase},
        "version": state.version,
        "retryCount": state.retry_count,
        "pending": s.pending,
        "running": s.running,
        "succeeded": s.succeeded,
        "failed": s.failed,
        "terminating": s.terminating,
        "unknown": s.unknown,
        "taskStatusCount": {t: {"phase": dict(c)} for t, c in state.task_status.items()},
        "controlledResources": dict(state.controlled_resources),
    }


def take_over(h: Harness, manifest: dict[str, Any], name: str) -> tuple[Harness, list[Any]]:
    """A new controller takes the job over; returns its harness (same cluster) and the writes of the takeover."""
    new = Harness(JobController(), grace=h.grace)
    new.pods, new.groups, new.deleting = h.pods, h.groups, h.deleting
    pods = []
    for pod_name, pod in h.pods.items():
        pod = copy.deepcopy(pod)
        if pod_name in h.deleting:
            pod["metadata"]["deletionTimestamp"] = "2024-01-01T00:00:00Z"
        pods.append(pod)
    job_manifest = {**copy.deepcopy(manifest), "status": status_of(h, name)}
    uid = manifest["metadata"]["uid"]
    group = h.groups.get(f"{name}-{uid}")
    changes = new.apply(new.ctrl.restore(job_manifest, pods=pods, pod_group=group, now=h.now))
    return new, changes


def running_tf() -> tuple[Harness, dict[str, Any]]:
    h = Harness()
    manifest = tf_job()
    h.submit(copy.deepcopy(manifest))
    h.admit()
    h.run_all()
    assert h.state().phase == "Running"
    return h, manifest


def test_a_running_job_taken_over_makes_nothing_again() -> None:
    h, manifest = running_tf()
    new, changes = take_over(h, manifest, "tf")
    assert changes == []  # no pod, PodGroup or status write
    state = new.state()
    assert (state.phase, state.running, state.version) == ("Running", 3, 0)
    # and the new controller goes on: the workers finish, TaskCompleted completes the job
    new.phase("tf-worker-0", "Succeeded")
    new.phase("tf-worker-1", "Succeeded")
    assert new.state().phase == "Completed"
    assert new.alive() == ["tf-worker-0", "tf-worker-1"]


def test_a_failure_while_no_controller_ran_is_reacted_to() -> None:
    h, manifest = running_tf()
    h.pods["tf-ps-0"]["status"]["phase"] = "Failed"  # the pod failed; nobody told the (dead) controller
    h.pods["tf-ps-0"]["status"]["containerStatuses"] = [{"state": {"terminated": {"exitCode": 5}}}]
    manifest["spec"]["policies"] = [{"exitCode": 5, "action": "RestartJob"}]
    new, changes = take_over(h, manifest, "tf")
    assert sorted(c.name for c in changes if isinstance(c, DeletePod)) == ["tf-ps-0", "tf-worker-0", "tf-worker-1"]
    assert any(isinstance(c, DeletePodGroup) for c in changes)
    assert (new.state().phase, new.state().retry_count, new.state().version) == ("Restarting", 1, 1)


def test_a_reaction_already_made_is_not_made_twice() -> None:
    h, manifest = running_tf()
    h.phase("tf-worker-0", "Succeeded")
    h.phase("tf-worker-1", "Succeeded")  # TaskCompleted -> CompleteJob, made by the first controller
    assert h.state().phase == "Completed"
    new, changes = take_over(h, manifest, "tf")
    assert [c for c in changes if isinstance(c, (CreatePod, DeletePod, CreatePodGroup))] == []
    assert new.state().phase == "Completed"


def test_pods_marked_out_of_sync_are_deleted() -> None:
    h, manifest = running_tf()
    h.pods["tf-worker-1"]["metadata"]["annotations"][OUT_OF_SYNC_KEY] = "true"  # marked, then the controller died
    new, changes = take_over(h, manifest, "tf")
    assert [(c.name, c.reason) for c in changes if isinstance(c, DeletePod)] == [("tf-worker-1", "OutOfSync")]
    # its deletion only syncs (no PodEvicted -> RestartJob), and the pod is made again
    assert any(isinstance(c, CreatePod) and c.manifest["metadata"]["name"] == "tf-worker-1" for c in changes)
    assert new.state().retry_count == 0


def test_a_restart_cut_short_is_finished() -> None:
    """The status says Restarting at version 1, but the old pods and PodGroup are still there."""
    h, manifest = running_tf()
    uid = manifest["metadata"]["uid"]
    h.groups[f"tf-{uid}"]["metadata"]["annotations"]["volcanolib.io/job-version"] = "0"
    status = status_of(h, "tf")
    status.update(state={"phase": "Restarting"}, version=1, retryCount=1)
    new = Harness(JobController())
    new.pods, new.groups = h.pods, h.groups
    job_manifest = {**copy.deepcopy(manifest), "status": status}
    changes = new.apply(
        new.ctrl.restore(job_manifest, pods=list(h.pods.values()), pod_group=h.groups[f"tf-{uid}"], now=1.0)
    )
    deleted = sorted(c.name for c in changes if isinstance(c, DeletePod))
    assert deleted == ["tf-ps-0", "tf-worker-0", "tf-worker-1"]
    kinds = [type(c).__name__ for c in changes]
    assert kinds.index("DeletePodGroup") < kinds.index("CreatePodGroup")  # the stale group goes, a new one comes
    assert (new.state().phase, new.state().version) == ("Restarting", 1)  # until the new group is admitted
    new.admit()
    assert new.state().phase == "Pending"
    assert set(new.versions().values()) == {"1"}


def test_missing_pods_of_an_admitted_group_are_made_and_only_those() -> None:
    h = Harness()
    manifest = job("j", task("a", 3))
    h.submit(copy.deepcopy(manifest))
    h.admit()
    del h.pods["j-a-2"]  # as if the controller had died before making it
    _, changes = take_over(h, manifest, "j")
    assert [c.manifest["metadata"]["name"] for c in changes if isinstance(c, CreatePod)] == ["j-a-2"]


def test_a_pending_timeout_starts_again_after_a_takeover() -> None:
    h = Harness()
    policy = {"event": "PodPending", "timeout": "30s", "action": "RestartJob"}
    manifest = job("p", task("a", 1), policies=[policy])
    h.submit(copy.deepcopy(manifest))
    h.admit()
    assert h.ctrl.next_deadline() == 30.0
    h.now = 10.0
    new, _ = take_over(h, manifest, "p")
    assert new.ctrl.next_deadline() == 40.0  # the timer starts at the takeover
    new.tick(40.0)
    assert new.state("p").phase == "Restarting"


def test_known_pod_forget_pod_and_sync() -> None:
    h = Harness()
    h.submit(job("j", task("a", 2)))
    h.admit()
    assert h.ctrl.known_pod(NS, "j-a-0") == ("Pending", False)
    assert h.ctrl.known_pod(NS, "nope") is None
    del h.pods["j-a-1"]
    assert h.ctrl.forget_pod(NS, "j-a-1") and not h.ctrl.forget_pod(NS, "j-a-1")
    changes = h.apply(h.ctrl.sync(NS, "j", now=1.0))  # the pod the API server refused is made again
    assert [c.manifest["metadata"]["name"] for c in changes if isinstance(c, CreatePod)] == ["j-a-1"]
    assert h.ctrl.sync(NS, "unknown", now=1.0) == []
