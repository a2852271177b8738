"""The job controller's phases and lifecycle policies, rule by rule.

Section numbers (§) are those of the behavioural reference of Volcano's job
controller (reference/volcano-job-controller.md).
"""

from __future__ import annotations

from typing import Any

import pytest
from job_harness import NS, Harness, job, task, tf_job

from volcanolib.controllers import CreatePod, CreatePodGroup, DeletePod, DeletePodGroup, JobController, JobStatus


def running_tf(**spec: Any) -> Harness:
    h = Harness()
    h.submit(tf_job(**spec))
    h.admit()
    h.run_all()
    assert h.state().phase == "Running"
    return h


def phases(h: Harness, name: str = "tf") -> list[str]:
    return [s.phase for s in h.statuses if s.name == name]


# -- §10: the worked TensorFlow example ------------------------------------------------------


def test_s10_tf_eviction_restarts_the_job_with_a_new_version_then_a_completed_worker_task_completes_it() -> None:
    h = Harness()
    h.submit(tf_job())
    assert h.state().phase == "Pending" and h.pods == {}  # §10 step 1: PodGroup, no pods
    h.admit()  # step 4: admitted -> pods with version 0
    assert h.versions() == {"tf-ps-0": "0", "tf-worker-0": "0", "tf-worker-1": "0"}
    h.run_all()
    assert h.state().phase == "Running"  # step 7
    first_uids = {n: p["metadata"]["uid"] for n, p in h.pods.items()}

    changes = h.evict("tf-worker-1")  # E3: PodEvicted -> job policy RestartJob
    deleted = sorted(c.name for c in changes if isinstance(c, DeletePod))
    assert deleted == ["tf-ps-0", "tf-worker-0"]  # the others; worker-1 is already gone
    assert any(isinstance(c, DeletePodGroup) for c in changes)  # §2.1: a full kill deletes the PodGroup
    assert h.pods == {}
    state = h.state()
    assert (state.phase, state.retry_count, state.version) == ("Restarting", 1, 1)
    assert list(h.groups) == ["tf-tf-uid"]  # E4: recreated, not admitted yet
    assert h.pods == {}

    h.admit()  # E6: admitted again -> new pods, version 1, retry-count 1, new uids
    assert h.versions() == {"tf-ps-0": "1", "tf-worker-0": "1", "tf-worker-1": "1"}
    assert {p["metadata"]["annotations"]["volcano.sh/job-retry-count"] for p in h.pods.values()} == {"1"}
    assert not {p["metadata"]["uid"] for p in h.pods.values()} & set(first_uids.values())
    assert h.state().phase == "Pending"
    h.run_all()
    assert h.state().phase == "Running"  # E8

    h.phase("tf-worker-0", "Succeeded")  # step 8: 1 of 2 workers, no TaskCompleted
    assert h.state().phase == "Running"
    changes = h.phase("tf-worker-1", "Succeeded")  # step 9: TaskCompleted -> CompleteJob
    assert [c.name for c in changes if isinstance(c, DeletePod)] == ["tf-ps-0"]  # Soft: workers kept
    assert phases(h)[-2:] == ["Completing", "Completed"]  # steps 9-11
    state = h.state()
    assert (state.phase, state.retry_count, state.succeeded) == ("Completed", 1, 2)
    assert sorted(h.pods) == ["tf-worker-0", "tf-worker-1"]  # step 12: the workers remain
    assert phases(h) == ["Pending", "Running", "Restarting", "Pending", "Running", "Completing", "Completed"]


def test_s10_with_a_termination_grace_the_job_stays_restarting_until_old_pods_are_gone() -> None:
    h = Harness(grace=True)
    h.submit(tf_job())
    h.admit()
    h.run_all()
    h.evict("tf-worker-1")
    h.gone("tf-worker-1")  # E3
    assert h.state().phase == "Restarting"
    assert h.state().terminating == 2
    h.admit()  # E6 with ps-0 and worker-0 still terminating: their names are blocked
    assert h.alive() == ["tf-worker-1"]
    assert h.state().phase == "Restarting"  # 3 - 2 terminating < minAvailable 3
    h.gone("tf-ps-0")
    h.gone("tf-worker-0")  # their deletion raises a sync that recreates them
    assert h.alive() == ["tf-ps-0", "tf-worker-0", "tf-worker-1"]
    assert h.state().phase == "Pending"


def test_s5_6_max_retry_exceeded_fails_the_job_and_the_last_retry_keeps_finished_pods() -> None:
    h = running_tf(maxRetry=2)
    h.phase("tf-worker-0", "Succeeded")
    h.evict("tf-worker-1")  # RestartJob 1: retryCount 0 < maxRetry - 1 = 1: not the last retry, all pods go
    assert h.pods == {} and h.state().retry_count == 1
    h.admit()
    h.run_all()
    h.phase("tf-worker-0", "Succeeded")
    h.evict("tf-worker-1")  # RestartJob 2: retryCount 1 >= 1 -> last retry: Soft, worker-0 (Succeeded) kept
    assert sorted(h.pods) == ["tf-worker-0"]
    state = h.state()
    assert (state.phase, state.retry_count) == ("Failed", 2)  # restart check: retryCount >= maxRetry
    assert phases(h)[-2:] == ["Restarting", "Failed"]
    assert h.groups == {}
    h.admit()  # nothing more happens in Failed
    assert sorted(h.pods) == ["tf-worker-0"]


def test_s5_6_default_max_retry_is_three_attempts() -> None:
    h = running_tf()
    for attempt in (1, 2):
        h.evict("tf-worker-1")
        assert (h.state().phase, h.state().retry_count) == ("Restarting", attempt)
        h.admit()
        h.run_all()
    h.evict("tf-worker-1")
    assert (h.state().phase, h.state().retry_count) == ("Failed", 3)


def test_s10_without_a_policy_an_evicted_pod_is_recreated_and_no_retry_is_counted() -> None:
    h = Harness()
    h.submit(job("tf", task("ps", 1), task("worker", 2)))
    h.admit()
    h.run_all()
    old = h.pods["tf-worker-1"]["metadata"]["uid"]
    h.evict("tf-worker-1")
    assert h.pods["tf-worker-1"]["metadata"]["uid"] != old  # §5.5 rule 5: recreated by the next sync
    assert h.pods["tf-worker-1"]["metadata"]["annotations"]["volcano.sh/job-version"] == "0"
    state = h.state()
    assert (state.phase, state.retry_count) == ("Pending", 0)  # §5.5 rule 4: 1 pending > 3 - 3
    h.phase("tf-worker-1", "Running")
    assert h.state().phase == "Running"


# -- §5.5: transition predicates ---------------------------------------------------------------


def test_s5_5_pending_to_running_counts_failed_pods() -> None:
    h = Harness()
    h.submit(job("j", task("a", 2), minAvailable=2))
    h.admit()
    h.phase("j-a-0", "Running")
    assert h.state("j").phase == "Pending"
    h.phase("j-a-1", "Failed", exit_code=1)  # Quirk: running 1 + failed 1 >= 2
    assert h.state("j").phase == "Running"


def test_s5_5_all_pods_succeeded_completes_the_job() -> None:
    h = Harness()
    h.submit(job("j", task("a", 2)))
    h.admit()
    h.run_all()
    h.phase("j-a-0", "Succeeded")
    assert h.state("j").phase == "Running"
    h.phase("j-a-1", "Succeeded")
    assert phases(h, "j")[-1] == "Completed"
    assert sorted(h.pods) == ["j-a-0", "j-a-1"]  # finished pods are retained


def test_s5_5_a_failed_pod_without_policy_is_not_recreated_and_the_job_fails_when_all_finish() -> None:
    h = Harness()
    h.submit(job("j", task("a", 2)))
    h.admit()
    h.run_all()
    h.phase("j-a-0", "Failed", exit_code=3)
    assert h.state("j").phase == "Running" and h.pods["j-a-0"]["status"]["phase"] == "Failed"
    h.phase("j-a-1", "Succeeded")  # rule 3a: task a has 1 Succeeded < minAvailable 2
    assert h.state("j").phase == "Failed"


def test_s5_5_rule_3c_succeeded_reaching_min_available_completes_when_task_minimums_are_lower() -> None:
    h = Harness()
    h.submit(job("j", task("a", 2, minAvailable=1), minAvailable=1))
    h.admit()
    h.run_all()
    h.phase("j-a-0", "Failed", exit_code=1)
    h.phase("j-a-1", "Succeeded")  # a: 1 Succeeded >= its minAvailable 1; 1 >= job minAvailable 1
    assert h.state("j").phase == "Completed"


def test_s5_5_rule_3d_too_few_succeeded_fails() -> None:
    h = Harness()
    # job minAvailable 2 < sum of task minimums 3: rule 3a is skipped, 3c/3d decide
    h.submit(job("j", task("a", 3), minAvailable=2))
    h.admit()
    h.run_all()
    h.phase("j-a-0", "Succeeded")
    h.phase("j-a-1", "Failed", exit_code=1)
    h.phase("j-a-2", "Failed", exit_code=1)
    assert h.state("j").phase == "Failed"


def test_s5_5_min_success_completes_the_job_while_pods_still_run_and_kills_them_softly() -> None:
    h = Harness()
    h.submit(job("j", task("a", 3), minSuccess=2))
    h.admit()
    h.run_all()
    h.phase("j-a-0", "Succeeded")
    assert h.state("j").phase == "Running"
    changes = h.phase("j-a-1", "Succeeded")  # rule 2: succeeded 2 >= minSuccess 2
    assert phases(h, "j")[-1] == "Completed"
    assert [c.name for c in changes if isinstance(c, DeletePod)] == ["j-a-2"]
    assert sorted(h.pods) == ["j-a-0", "j-a-1"]


def test_s5_5_min_success_not_reached_when_all_finished_fails() -> None:
    h = Harness()
    # minAvailable 1 keeps rule 3a from deciding first
    h.submit(job("j", task("a", 3, minAvailable=1), minAvailable=1, minSuccess=2))
    h.admit()
    h.run_all()
    h.phase("j-a-0", "Succeeded")
    h.phase("j-a-1", "Failed", exit_code=1)
    h.phase("j-a-2", "Failed", exit_code=1)  # rule 3b: 1 < minSuccess 2
    assert h.state("j").phase == "Failed"


def test_s5_5_task_min_available_failing_task_fails_the_job() -> None:
    h = Harness()
    h.submit(job("j", task("a", 1), task("b", 2, minAvailable=2)))
    h.admit()
    h.run_all()
    h.phase("j-a-0", "Succeeded")
    h.phase("j-b-0", "Succeeded")
    h.phase("j-b-1", "Failed", exit_code=2)  # rule 3a: task b 1 Succeeded < 2
    assert h.state("j").phase == "Failed"


# -- §4.2: policy resolution --------------------------------------------------------------------


def test_s4_2_exit_code_policy_matches_pod_failed_with_that_code_only() -> None:
    h = Harness()
    h.submit(job("j", task("a", 2), policies=[{"exitCode": 3, "action": "AbortJob"}]))
    h.admit()
    h.run_all()
    h.phase("j-a-0", "Failed", exit_code=1)
    assert h.state("j").phase == "Running"
    h.phase("j-a-1", "Failed", exit_code=3)
    assert phases(h, "j")[-2:] == ["Aborting", "Aborted"]


def two_level_policies() -> Harness:
    """Task a: PodFailed -> CompleteJob; the job: PodFailed -> AbortJob; running."""
    h = Harness()
    spec = job(
        "j",
        task("a", 1, policies=[{"event": "PodFailed", "action": "CompleteJob"}]),
        task("b", 1),
        policies=[{"event": "PodFailed", "action": "AbortJob"}],
    )
    h.submit(spec)
    h.admit()
    h.run_all()
    return h


def test_s4_2_task_policies_win_over_job_policies() -> None:
    h = two_level_policies()
    h.phase("j-a-0", "Failed", exit_code=1)
    assert h.state("j").phase == "Completed"  # a's own policy, not the job's AbortJob


def test_s4_2_job_policies_handle_events_of_tasks_without_a_match() -> None:
    h = two_level_policies()
    h.phase("j-b-0", "Failed", exit_code=1)
    assert h.state("j").phase == "Aborted"


def test_s4_2_any_event_matches_every_event_but_pod_pending() -> None:
    h = Harness()
    h.submit(job("j", task("a", 2), policies=[{"events": ["*"], "action": "TerminateJob"}]))
    h.admit()  # PodPending for the new pods: '*' without a timeout does not match
    assert h.state("j").phase == "Pending"
    h.run_all()
    h.phase("j-a-0", "Failed", exit_code=1)
    assert phases(h, "j")[-2:] == ["Terminating", "Terminated"]
    assert sorted(h.pods) == ["j-a-0"]  # Soft: the failed pod is kept


def test_s4_2_rule_4_events_of_an_older_version_only_sync() -> None:
    h = Harness()
    policies = [{"event": "Unknown", "action": "AbortJob"}, {"event": "PodEvicted", "action": "RestartJob"}]
    h.submit(job("j", task("a", 1), policies=policies))
    h.admit()
    h.run_all()
    h.evict("j-a-0")  # RestartJob: version 0 -> 1
    h.admit()
    h.run_all()
    assert (h.state("j").phase, h.state("j").version) == ("Running", 1)
    h.admit(phase="Unknown")  # PodGroup events carry version 0 < 1: no policy, a sync
    assert h.state("j").phase == "Running"  # Quirk §12.2: Unknown is ignored once version > 0


def test_s3_2_pod_group_unknown_raises_unknown_for_job_policies() -> None:
    h = Harness()
    h.submit(job("j", task("a", 1), policies=[{"event": "Unknown", "action": "AbortJob"}]))
    h.admit()
    h.run_all()
    h.admit(phase="Unknown")
    assert h.state("j").phase == "Aborted"


def test_s5_6_quirk_task_less_restart_task_kills_nothing_but_counts_a_retry() -> None:
    h = Harness()
    h.submit(job("j", task("a", 2), policies=[{"event": "Unknown", "action": "RestartTask"}]))
    h.admit()
    h.run_all()
    before = {n: p["metadata"]["uid"] for n, p in h.pods.items()}
    h.admit(phase="Unknown")
    assert {n: p["metadata"]["uid"] for n, p in h.pods.items()} == before
    assert h.state("j").retry_count == 1
    assert phases(h, "j")[-2:] == ["Restarting", "Pending"]
    h.admit()  # the kill deleted the PodGroup: once the new one is admitted, the pods count again
    assert phases(h, "j")[-1] == "Running"


def test_s3_2_task_completed_fires_once_every_replica_succeeded() -> None:
    h = Harness()
    h.submit(job("j", task("a", 1), task("b", 2, policies=[{"event": "TaskCompleted", "action": "TerminateJob"}])))
    h.admit()
    h.run_all()
    h.phase("j-b-0", "Succeeded")
    assert h.state("j").phase == "Running"
    h.phase("j-b-1", "Succeeded")
    assert h.state("j").phase == "Terminated"
    assert "j-a-0" not in h.pods


# -- §5.6 targeted restarts ----------------------------------------------------------------------


def test_s5_6_restart_task_deletes_the_task_pods_and_the_pod_group_keeps_the_version() -> None:
    h = Harness()
    h.submit(job("j", task("a", 1), task("b", 2, policies=[{"event": "PodFailed", "action": "RestartTask"}])))
    h.admit()
    h.run_all()
    h.phase("j-b-0", "Succeeded")
    a_uid = h.pods["j-a-0"]["metadata"]["uid"]
    changes = h.phase("j-b-1", "Failed", exit_code=1)
    assert sorted(c.name for c in changes if isinstance(c, DeletePod)) == ["j-b-0", "j-b-1"]  # finished ones too
    # Volcano (v1.14.1) deletes the PodGroup on every kill, targeted ones too: a new one must be admitted
    kinds = [type(c).__name__ for c in changes if isinstance(c, (DeletePodGroup, CreatePodGroup))]
    assert kinds == ["DeletePodGroup", "CreatePodGroup"]
    assert not any(isinstance(c, CreatePod) for c in changes)
    assert h.pods["j-a-0"]["metadata"]["uid"] == a_uid
    state = h.state("j")
    assert (state.phase, state.retry_count, state.version) == ("Restarting", 1, 0)
    changes = h.admit()
    assert sorted(c.manifest["metadata"]["name"] for c in changes if isinstance(c, CreatePod)) == ["j-b-0", "j-b-1"]
    assert phases(h, "j")[-2:] == ["Restarting", "Pending"]


def test_s5_6_restart_pod_recreates_only_that_pod_once_the_new_pod_group_is_admitted() -> None:
    h = Harness()
    h.submit(job("j", task("a", 3), policies=[{"event": "PodFailed", "action": "RestartPod"}]))
    h.admit()
    h.run_all()
    changes = h.phase("j-a-1", "Failed", exit_code=1)
    assert [c.name for c in changes if isinstance(c, DeletePod)] == ["j-a-1"]
    assert any(isinstance(c, DeletePodGroup) for c in changes)
    assert not any(isinstance(c, CreatePod) for c in changes)
    assert h.state("j").retry_count == 1
    changes = h.admit()
    assert [c.manifest["metadata"]["name"] for c in changes if isinstance(c, CreatePod)] == ["j-a-1"]
    h.phase("j-a-1", "Running")
    assert h.state("j").phase == "Running"


def test_s5_6_restart_pod_after_eviction_kills_nothing_and_the_pod_comes_back() -> None:
    h = Harness()
    h.submit(job("j", task("a", 2), policies=[{"event": "PodEvicted", "action": "RestartPod"}]))
    h.admit()
    h.run_all()
    h.evict("j-a-0")
    assert sorted(h.pods) == ["j-a-1"]  # the PodGroup was deleted: the pod waits for the new one
    assert (h.state("j").retry_count, h.state("j").phase) == (1, "Pending")
    h.admit()
    assert sorted(h.pods) == ["j-a-0", "j-a-1"]


# -- §5.1: phase x action -------------------------------------------------------------------------


def command(h: Harness, action: str, name: str = "j") -> list[Any]:
    return h.apply(h.ctrl.command(NS, name, action, now=h.now))


def test_s5_1_abort_job_then_resume_job_restarts_with_a_retry() -> None:
    h = Harness(grace=True)
    h.submit(job("j", task("a", 2)))
    h.admit()
    h.run_all()
    h.phase("j-a-0", "Succeeded")
    command(h, "AbortJob")  # Running + AbortJob: KillJob(Soft) -> Aborting
    assert h.state("j").phase == "Aborting"
    assert h.deleting == {"j-a-1"} and h.groups == {}
    h.gone("j-a-1")  # alive check: nothing alive -> Aborted
    assert h.state("j").phase == "Aborted"
    command(h, "ResumeJob")  # Aborted + ResumeJob: KillJob(Soft) -> Restarting, retry+1
    assert phases(h, "j")[-3:] == ["Aborted", "Restarting", "Pending"]
    assert h.state("j").retry_count == 1
    assert list(h.groups) == ["j-j-uid"]  # recreated in Restarting
    h.admit()
    assert sorted(h.alive()) == ["j-a-0", "j-a-1"]  # the Succeeded pod stays, a-1 is made again
    # every kill pass (Abort, Aborting, Aborted, Resume) bumped the version the new pod carries
    assert h.pods["j-a-1"]["metadata"]["annotations"]["volcano.sh/job-version"] == str(h.state("j").version)
    assert h.state("j").version >= 2


def test_s5_1_resume_job_from_aborting() -> None:
    h = Harness(grace=True)
    h.submit(job("j", task("a", 1)))
    h.admit()
    h.run_all()
    command(h, "AbortJob")
    assert h.state("j").phase == "Aborting"
    command(h, "ResumeJob")
    assert h.state("j").phase == "Restarting" and h.state("j").retry_count == 1
    h.gone("j-a-0")
    h.admit()
    assert h.state("j").phase == "Pending" and h.alive() == ["j-a-0"]


def test_s5_1_terminate_job_goes_through_terminating() -> None:
    h = Harness(grace=True)
    h.submit(job("j", task("a", 1)))
    h.admit()
    command(h, "TerminateJob")  # Pending + TerminateJob
    assert h.state("j").phase == "Terminating"
    h.gone("j-a-0")
    assert h.state("j").phase == "Terminated"


def test_s5_1_complete_job_command_from_pending() -> None:
    h = Harness()
    h.submit(job("j", task("a", 1)))
    command(h, "CompleteJob")
    assert phases(h, "j") == ["Pending", "Completing", "Completed"]
    assert h.groups == {}


def test_s5_1_quirk_abort_in_restarting_only_kills_pods_again() -> None:
    h = Harness(grace=True)
    h.submit(job("j", task("a", 2), policies=[{"event": "PodFailed", "action": "RestartJob"}]))
    h.admit()
    h.run_all()
    h.phase("j-a-0", "Failed", exit_code=1)
    assert h.state("j").phase == "Restarting"
    command(h, "AbortJob")
    assert h.state("j").phase == "Restarting"


def test_s5_1_finished_phases_take_no_action() -> None:
    h = Harness()
    h.submit(job("j", task("a", 1)))
    h.admit()
    h.run_all()
    h.phase("j-a-0", "Succeeded")
    assert h.state("j").phase == "Completed"
    for action in ("RestartJob", "AbortJob", "ResumeJob", "TerminateJob"):
        command(h, action)
        assert h.state("j").phase == "Completed"
    assert sorted(h.pods) == ["j-a-0"]


def test_s5_1_resume_job_in_pending_is_a_sync() -> None:
    h = Harness()
    h.submit(job("j", task("a", 1)))
    assert command(h, "ResumeJob") == []
    assert h.state("j").phase == "Pending" and h.state("j").retry_count == 0


def test_s3_2_user_deletion_of_a_job_pod_is_pod_evicted() -> None:
    h = Harness()
    h.submit(job("j", task("a", 1), policies=[{"event": "PodEvicted", "action": "AbortJob"}]))
    h.admit()
    h.run_all()
    del h.pods["j-a-0"]
    h.apply(h.ctrl.pod_deleted(NS, "j-a-0", now=0.0, evicted=False))
    assert h.state("j").phase == "Aborted"


# -- §4.3: delayed actions ------------------------------------------------------------------------


def test_s4_3_pod_pending_timeout_restarts_the_job_when_a_pod_stays_pending() -> None:
    h = Harness()
    h.submit(job("j", task("a", 2), policies=[{"event": "PodPending", "action": "RestartJob", "timeout": "10m"}]))
    h.admit()
    assert h.ctrl.next_deadline() == 600.0
    h.phase("j-a-0", "Running")  # cancels a-0's timer, a-1's stays
    assert h.ctrl.next_deadline() == 600.0
    assert h.tick(599.0) == []
    h.tick(600.0)
    assert (h.state("j").phase, h.state("j").retry_count) == ("Restarting", 1)
    assert h.ctrl.next_deadline() is None  # the job-level action cleaned up the others


def test_s4_3_a_pod_that_starts_running_cancels_its_pending_timer() -> None:
    h = Harness()
    h.submit(job("j", task("a", 1), policies=[{"event": "PodPending", "action": "RestartJob", "timeout": "60s"}]))
    h.admit()
    assert h.ctrl.next_deadline() == 60.0
    h.phase("j-a-0", "Running")
    assert h.ctrl.next_deadline() is None
    assert h.tick(100.0) == []
    assert h.state("j").phase == "Running"


def test_s4_3_a_recreated_pod_running_cancels_a_delayed_pod_failed_action() -> None:
    h = Harness()
    h.submit(
        job(
            "j",
            task("a", 2),
            policies=[{"event": "PodEvicted", "action": "AbortJob", "timeout": "30s"}],
        )
    )
    h.admit()
    h.run_all()
    h.evict("j-a-0")  # AbortJob waits 30 s; a delayed request runs no sync, so no new pod yet
    assert h.ctrl.next_deadline() == 30.0 and "j-a-0" not in h.pods
    h.phase("j-a-1", "Succeeded")  # the next sync recreates a-0
    assert "j-a-0" in h.pods
    h.phase("j-a-0", "Running")  # PodRunning cancels the delayed PodEvicted action
    assert h.ctrl.next_deadline() is None
    h.tick(30.0)
    assert h.state("j").phase == "Running"


def test_s4_3_the_same_action_does_not_reset_the_timer_and_a_replaced_one_still_fires() -> None:
    ctrl = JobController()
    h = Harness(ctrl)
    h.submit(
        job(
            "j",
            task("a", 1, policies=[{"event": "PodFailed", "action": "RestartPod", "timeout": "20s"}]),
            policies=[{"event": "PodEvicted", "action": "AbortJob", "timeout": "50s"}],
        )
    )
    h.admit()
    h.run_all()
    h.now = 5.0
    h.phase("j-a-0", "Failed", exit_code=1)  # RestartPod in 20 s (due 25)
    assert ctrl.next_deadline() == 25.0
    h.phase("j-a-0", "Pending")
    h.phase("j-a-0", "Failed", exit_code=1)  # same action again: dropped, still due 25
    assert ctrl.next_deadline() == 25.0
    h.now = 10.0
    h.evict("j-a-0")  # a different action for the same pod replaces the entry; the old timer still fires
    assert ctrl.next_deadline() == 25.0
    h.tick(25.0)  # the replaced RestartPod fires: Restarting, retry 1
    assert h.state("j").retry_count == 1
    assert ctrl.next_deadline() == 60.0
    h.tick(60.0)
    assert h.state("j").phase in ("Aborting", "Aborted")


# -- §7: dependsOn -------------------------------------------------------------------------------


def test_s7_depends_on_creates_a_task_once_the_tasks_it_names_are_running() -> None:
    h = Harness()
    h.submit(job("j", task("ps", 2), task("worker", 2, dependsOn={"name": ["ps"]}), minAvailable=2))
    h.admit()
    assert sorted(h.pods) == ["j-ps-0", "j-ps-1"]
    h.phase("j-ps-0", "Running")
    assert sorted(h.pods) == ["j-ps-0", "j-ps-1"]  # 1 ready < ps minAvailable 2
    h.phase("j-ps-1", "Running")
    assert sorted(h.pods) == ["j-ps-0", "j-ps-1", "j-worker-0", "j-worker-1"]


def test_s7_depends_on_any_needs_one_named_task_ready() -> None:
    h = Harness()
    spec = job(
        "j",
        task("a", 1),
        task("b", 1),
        task("c", 1, dependsOn={"name": ["a", "b"], "iteration": "any"}),
        minAvailable=2,
    )
    h.submit(spec)
    h.admit()
    assert sorted(h.pods) == ["j-a-0", "j-b-0"]
    h.phase("j-b-0", "Succeeded")  # Succeeded counts as ready
    assert "j-c-0" in h.pods


def test_s7_depends_on_all_needs_every_named_task() -> None:
    h = Harness()
    h.submit(job("j", task("a", 1), task("b", 1), task("c", 1, dependsOn={"name": ["a", "b"]}), minAvailable=2))
    h.admit()
    h.phase("j-a-0", "Running")
    assert "j-c-0" not in h.pods
    h.phase("j-b-0", "Running")
    assert "j-c-0" in h.pods


# -- the Job's deletion ---------------------------------------------------------------------------


def test_deleting_the_job_removes_its_pods_and_pod_group_and_stops_reacting() -> None:
    h = Harness()
    h.submit(job("j", task("a", 2), policies=[{"event": "PodPending", "action": "AbortJob", "timeout": "1m"}]))
    h.admit()
    h.phase("j-a-0", "Succeeded")
    changes = h.apply(h.ctrl.delete(NS, "j", now=1.0))
    assert sorted(c.name for c in changes if isinstance(c, DeletePod)) == ["j-a-0", "j-a-1"]
    assert h.pods == {} and h.groups == {}
    assert h.ctrl.job(NS, "j").deleted
    assert h.ctrl.next_deadline() is None
    assert h.ctrl.delete(NS, "j", now=2.0) == []
    # the name may be used again
    h.submit(job("j", task("a", 1)))
    assert h.ctrl.job(NS, "j").phase == "Pending" and not h.ctrl.job(NS, "j").deleted


def test_s4_2_rule_3_a_job_submitted_again_waits_for_the_old_pods_and_ignores_their_events() -> None:
    h = Harness(grace=True)
    spec = job("j", task("a", 2), policies=[{"event": "PodEvicted", "action": "AbortJob"}])
    h.submit(spec)
    h.admit()
    h.run_all()
    h.evict("j-a-0")  # terminating, not gone yet
    h.apply(h.ctrl.delete(NS, "j", now=0.0))
    h.gone("j-a-1")
    h.submit(spec)
    assert h.state("j").terminating == 1  # the old j-a-0 still holds its name
    h.admit()
    assert h.alive() == ["j-a-1"]
    h.gone("j-a-0")  # the old pod's deletion is not a PodEvicted of the new job
    assert h.state("j").phase == "Pending"
    assert h.alive() == ["j-a-0", "j-a-1"]


def test_job_status_changes_are_reported_with_the_retry_count() -> None:
    h = running_tf()
    h.evict("tf-worker-1")
    assert JobStatus(NS, "tf", "Restarting", 1, version=1) in h.statuses  # the kill of the restart bumps the version


@pytest.mark.parametrize("phase", ["Inqueue", "Running"])
def test_s5_2_pods_are_made_only_once_the_pod_group_is_admitted(phase: str) -> None:
    h = Harness()
    h.submit(job("j", task("a", 2)))
    h.admit(phase="Pending")
    assert h.pods == {}
    h.admit(phase=phase)
    assert sorted(h.pods) == ["j-a-0", "j-a-1"]


def test_s10_e1_a_pod_evicted_with_a_grace_counts_as_terminating_until_it_is_gone() -> None:
    h = Harness(grace=True)
    h.submit(job("j", task("a", 2)))
    h.admit()
    h.run_all()
    h.evict("j-a-0")  # E1: deletion timestamp set -> a sync; no rule fires
    state = h.state("j")
    assert (state.phase, state.running, state.terminating) == ("Running", 1, 1)
    assert (state.status.running, state.status.terminating) == (1, 1)
    assert "j-a-0" in h.deleting  # its name is still taken: no new pod yet
    h.gone("j-a-0")  # E3: PodEvicted, no policy -> the next sync recreates it
    assert h.alive() == ["j-a-0", "j-a-1"] and h.state("j").phase == "Pending"


def test_s5_6_targeted_restarts_also_use_up_max_retry() -> None:
    h = Harness()
    h.submit(job("j", task("a", 2), maxRetry=2, policies=[{"event": "PodFailed", "action": "RestartPod"}]))
    h.admit()
    h.run_all()
    h.phase("j-a-0", "Failed", exit_code=1)
    assert (h.state("j").phase, h.state("j").retry_count) == ("Restarting", 1)
    h.admit()  # the new PodGroup: a-0 comes back
    assert (h.state("j").phase, h.state("j").retry_count) == ("Pending", 1)
    h.run_all()
    h.phase("j-a-0", "Failed", exit_code=1)  # retry 2 >= maxRetry 2: the restart check fails the job
    assert (h.state("j").phase, h.state("j").retry_count) == ("Failed", 2)
    assert phases(h, "j")[-2:] == ["Restarting", "Failed"]
    assert h.pods == {}  # the Failed state's soft kill deletes the pods still running or pending


def test_s4_3_timeouts_due_together_all_fire_before_the_job_reacts() -> None:
    # Pods made together wait out their PodPending timeouts together. Volcano's timers then all
    # fire at that instant: the second RestartPod runs in the Restarting phase the first left
    # (a kill, no second retry), before the job's sync takes it back to Pending.
    h = Harness()
    policy = {"event": "PodPending", "action": "RestartPod", "timeout": "10s"}
    h.submit(job("j", task("a", 3, minAvailable=2, policies=[policy]), minAvailable=2))
    h.admit()
    h.phase("j-a-0", "Running")  # a-1 and a-2 stay Pending: two timers due at 10 s
    changes = h.tick(10.0)
    assert sorted(c.name for c in changes if isinstance(c, DeletePod)) == ["j-a-1", "j-a-2"]
    state = h.state("j")
    assert (state.phase, state.retry_count) == ("Pending", 1)


def test_s4_3_a_timeout_due_with_another_fires_although_the_other_cleans_up_its_scope() -> None:
    # Two job-level RestartJob timeouts due together: the first's clean-up cannot stop the second,
    # which has fired too; it kills again in Restarting (no second retry).
    h = Harness()
    policy = {"event": "PodPending", "action": "RestartJob", "timeout": "10s"}
    h.submit(job("j", task("a", 2), policies=[policy]))
    h.admit()
    version = h.state("j").version
    h.tick(10.0)
    state = h.state("j")
    assert (state.phase, state.retry_count, state.version) == ("Restarting", 1, version + 2)


def test_s4_3_a_delayed_action_runs_in_the_phase_of_the_moment_it_fires() -> None:
    h = Harness()
    policy = {"event": "PodPending", "action": "RestartJob", "timeout": "10m"}
    h.submit(job("j", task("a", 2, minAvailable=1), minAvailable=1, minSuccess=1, policies=[policy]))
    h.admit()
    h.phase("j-a-0", "Running")  # a-1 stays Pending: its timer keeps running
    h.phase("j-a-0", "Succeeded")  # minSuccess 1: Completed, a-1 killed
    assert h.state("j").phase == "Completed"
    assert h.ctrl.next_deadline() == 600.0
    h.tick(600.0)  # RestartJob in Completed: a soft kill pass, no phase change
    assert (h.state("j").phase, h.state("j").retry_count) == ("Completed", 0)
