"""Submitting a Job: the webhook's defaults and refusals, and what the controller creates (§1, §2)."""

from __future__ import annotations

import copy
from typing import Any

import pytest
from job_harness import NS, Harness, job, task, tf_job

from volcanolib import ManifestError
from volcanolib.controllers import CreatePodGroup, JobController, JobStatus
from volcanolib.kube import ManifestLoader, expand_job


def refused(manifest: dict[str, Any]) -> str:
    with pytest.raises(ManifestError) as info:
        JobController().submit(manifest, now=0.0)
    return str(info.value)


def test_s2_1_submit_makes_the_pod_group_and_writes_pending() -> None:
    changes = JobController().submit(tf_job(), now=90.0)
    assert changes[0] == JobStatus(NS, "tf", "Pending", 0)
    (group,) = [c.manifest for c in changes if isinstance(c, CreatePodGroup)]
    assert group["metadata"]["name"] == "tf-tf-uid"  # <job>-<uid>
    assert group["metadata"]["creationTimestamp"] == "1970-01-01T00:01:30Z"
    assert group["spec"]["minMember"] == 3
    assert group["spec"]["minTaskMember"] == {"ps": 1, "worker": 2}
    assert group["metadata"]["ownerReferences"][0]["name"] == "tf"


def test_s2_1_the_pod_group_is_the_one_simulate_makes() -> None:
    manifest = tf_job()
    (group,) = [c.manifest for c in JobController().submit(manifest, now=0.0) if isinstance(c, CreatePodGroup)]
    made = expand_job(manifest)
    assert made.pod_group is not None
    assert group["spec"] == made.pod_group["spec"]
    assert group["metadata"]["name"] == made.pod_group_name


def test_s2_3_pods_carry_the_template_annotations_version_and_a_new_uid_per_attempt() -> None:
    manifest = tf_job()
    manifest["spec"]["tasks"][1]["template"]["metadata"] = {
        "annotations": {"volcanolib.io/duration": "90s", "volcanolib.io/exit-code": "1"}
    }
    h = Harness()
    h.now = 5.0
    h.submit(manifest)
    h.admit()
    worker = h.pods["tf-worker-1"]
    annotations = worker["metadata"]["annotations"]
    assert annotations["volcanolib.io/duration"] == "90s"
    assert annotations["volcanolib.io/exit-code"] == "1"
    assert annotations["volcano.sh/job-version"] == "0"
    assert annotations["volcano.sh/task-spec"] == "worker"
    assert annotations["scheduling.k8s.io/group-name"] == "tf-tf-uid"
    assert worker["metadata"]["creationTimestamp"] == "1970-01-01T00:00:05Z"
    assert worker["spec"]["schedulerName"] == "volcano"
    assert h.ctrl.owner_of(NS, "tf-worker-1") == (NS, "tf")
    assert h.ctrl.owner_of(NS, "other") is None
    uids = {p["metadata"]["uid"] for p in h.pods.values()}
    assert len(uids) == 3


def test_job_level_volcanolib_annotations_reach_every_pod_unless_the_template_sets_them() -> None:
    manifest = tf_job()
    manifest["metadata"]["annotations"] = {
        "volcanolib.io/duration": "1h",
        "volcanolib.io/exit-code": "2",
        "volcanolib.io/cancel-after": "5m",
        "x": "y",
    }
    manifest["spec"]["tasks"][1]["template"]["metadata"] = {"annotations": {"volcanolib.io/duration": "90s"}}
    h = Harness()
    h.submit(manifest)
    h.admit()
    ps = h.pods["tf-ps-0"]["metadata"]["annotations"]
    worker = h.pods["tf-worker-0"]["metadata"]["annotations"]
    assert (ps["volcanolib.io/duration"], ps["volcanolib.io/exit-code"]) == ("1h", "2")
    assert (worker["volcanolib.io/duration"], worker["volcanolib.io/exit-code"]) == ("90s", "2")
    assert "x" not in ps  # other Job annotations stay on the Job, as in Volcano
    assert "volcanolib.io/cancel-after" not in ps  # the Job's patience is the Job's


def test_s2_3_controller_pods_load_like_the_pods_simulate_makes() -> None:
    h = Harness()
    h.submit(tf_job())
    h.admit()
    loader = ManifestLoader()
    loader.add_objects([*h.groups.values(), *h.pods.values()])
    cluster = loader.load()
    assert [g.name for g in cluster.pod_groups] == ["tf-tf-uid"]
    assert sorted(t.name for t in cluster.tasks) == ["tf-ps-0", "tf-worker-0", "tf-worker-1"]
    assert {t.job for t in cluster.tasks} == {"ns1/tf-tf-uid"}


def test_s1_default_queue_of_the_controller_applies_to_a_job_naming_none() -> None:
    manifest = tf_job()
    del manifest["spec"]["queue"]
    ctrl = JobController(default_queue="batch")
    (group,) = [c.manifest for c in ctrl.submit(manifest, now=0.0) if isinstance(c, CreatePodGroup)]
    assert group["spec"]["queue"] == "batch"


def test_s2_2_priority_classes_order_the_tasks_for_min_resources() -> None:
    manifest = job("j", task("a", 2), task("b", 2), minAvailable=2)
    manifest["spec"]["tasks"][1]["template"]["spec"]["containers"][0]["resources"]["requests"]["cpu"] = "4"
    manifest["spec"]["tasks"][1]["template"]["spec"]["priorityClassName"] = "high"
    plain = JobController().submit(copy.deepcopy(manifest), now=0.0)
    ranked = JobController(priority_classes={"high": 10}).submit(manifest, now=0.0)
    cpu = [
        [c.manifest["spec"]["minResources"]["cpu"] for c in out if isinstance(c, CreatePodGroup)]
        for out in (plain, ranked)
    ]
    assert cpu == [["2"], ["8"]]


def test_s1_max_retry_defaults_to_three() -> None:
    h = Harness()
    h.submit(job("j", task("a", 1), maxRetry=0, policies=[{"event": "PodFailed", "action": "RestartJob"}]))
    for retry in (1, 2, 3):
        h.admit()
        h.phase("j-a-0", "Failed", exit_code=1)
        assert h.state("j").retry_count == retry
    assert h.state("j").phase == "Failed"


@pytest.mark.parametrize(
    ("change", "message"),
    [
        (
            {"policies": [{"event": "PodFailed", "exitCode": 2, "action": "AbortJob"}]},
            "spec.policies[0]: a policy names events or an exitCode, not both",
        ),
        ({"policies": [{"action": "AbortJob"}]}, "spec.policies[0]: a policy needs events or an exitCode"),
        ({"policies": [{"exitCode": 0, "action": "AbortJob"}]}, "spec.policies[0].exitCode: 0 is a success"),
        (
            {
                "policies": [
                    {"event": "PodFailed", "action": "AbortJob"},
                    {"events": ["PodFailed"], "action": "RestartJob"},
                ]
            },
            "spec.policies[1]: event 'PodFailed' is already handled by policy 0 of this list",
        ),
        (
            {
                "policies": [
                    {"events": ["PodEvicted", "PodFailed"], "action": "AbortJob"},
                    {"events": ["TaskCompleted", "PodEvicted"], "action": "RestartJob"},
                ]
            },
            "spec.policies[1]: event 'PodEvicted' is already handled by policy 0 of this list",
        ),
        (
            {"policies": [{"exitCode": 3, "action": "AbortJob"}, {"exitCode": 3, "action": "RestartJob"}]},
            "spec.policies[1].exitCode: exit code 3 is already handled by policy 0 of this list",
        ),
        (
            {"policies": [{"event": "*", "action": "AbortJob"}, {"event": "PodFailed", "action": "RestartJob"}]},
            "spec.policies: '*' stands for every event: no other event may be named in the same list",
        ),
        ({"policies": [{"event": "PodGone", "action": "AbortJob"}]}, "spec.policies[0].event: unknown event 'PodGone'"),
        (
            {"policies": [{"event": "PodFailed", "action": "Explode"}]},
            "spec.policies[0].action: unknown action 'Explode'",
        ),
        (
            {"policies": [{"event": "PodFailed", "action": "AbortJob", "timeout": "soon"}]},
            "spec.policies[0].timeout: expected a duration",
        ),
        ({"plugins": {"nope": []}}, "spec.plugins.nope: unknown job plugin 'nope'"),
        ({"minSuccess": 0}, "spec.minSuccess: must be at least 1"),
        ({"maxRetry": -1}, "spec.maxRetry: must be at least 0"),
    ],
)
def test_s1_the_webhook_refuses(change: dict[str, Any], message: str) -> None:
    manifest = tf_job()
    manifest["spec"].update(change)
    assert message in refused(manifest)


def test_s1_the_webhook_refuses_bad_task_fields() -> None:
    manifest = job("j", task("a", 1, minAvailable=2), task("b", 2), minAvailable=1)
    assert "spec.tasks[0].minAvailable: 2 is more than the task's 1 replicas" in refused(manifest)
    manifest = job("j", task("a", 1, dependsOn={"name": ["b"]}))
    assert "spec.tasks[0].dependsOn.name[0]: no task named 'b'" in refused(manifest)
    manifest = job("j", task("a", 1, dependsOn={"name": ["b"]}), task("b", 1, dependsOn={"name": ["a"]}))
    assert "spec.tasks: the tasks' dependsOn form a cycle: a -> b -> a" in refused(manifest)
    manifest = job("j", task("a", 1, policies=[{"event": "PodFailed"}]))
    assert "spec.tasks[0].policies[0].action: unknown action ''" in refused(manifest)


def test_s1_a_second_job_of_one_name_is_refused_while_the_first_exists() -> None:
    ctrl = JobController()
    ctrl.submit(tf_job(), now=0.0)
    with pytest.raises(ManifestError, match="Job ns1/tf: a Job of that name already exists"):
        ctrl.submit(tf_job(), now=1.0)


def test_bad_calls_are_programming_errors() -> None:
    ctrl = JobController()
    ctrl.submit(tf_job(), now=0.0)
    with pytest.raises(ValueError, match="unknown pod phase 'Done'"):
        ctrl.pod_phase(NS, "tf-ps-0", "Done", now=0.0)
    with pytest.raises(ValueError, match="unknown command action 'Explode'"):
        ctrl.command(NS, "tf", "Explode", now=0.0)
    with pytest.raises(KeyError):
        ctrl.job(NS, "nope")
    assert ctrl.pod_phase(NS, "nope", "Running", now=0.0) == []
    assert ctrl.pod_deleted(NS, "nope", now=0.0) == []
    assert ctrl.pod_group_phase(NS, "nope", "Inqueue", now=0.0) == []
    assert ctrl.jobs() == [(NS, "tf")]
