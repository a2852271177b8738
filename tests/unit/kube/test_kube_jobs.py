"""Volcano Job expansion: the PodGroup and the pods the job controller would create."""

from __future__ import annotations

import copy
from typing import Any

import pytest

from volcanolib import ManifestError, PodGroupPhase
from volcanolib.api.resource import PODS
from volcanolib.kube import ManifestLoader, expand_job


def tf_job(**overrides: Any) -> dict[str, Any]:
    job: dict[str, Any] = {
        "apiVersion": "batch.volcano.sh/v1alpha1",
        "kind": "Job",
        "metadata": {
            "name": "tf",
            "namespace": "ns1",
            "annotations": {"volcano.sh/preemptable": "false", "x": "y"},
            "labels": {"team": "ml", "volcano.sh/preemptable": "false"},
        },
        "spec": {
            "minAvailable": 3,
            "queue": "q1",
            "priorityClassName": "high",
            "maxRetry": 5,
            "ttlSecondsAfterFinished": 60,
            "plugins": {"env": [], "svc": []},
            "policies": [{"event": "PodEvicted", "action": "RestartJob"}],
            "volumes": [{"mountPath": "/data", "volumeClaimName": "data"}],
            "tasks": [
                {
                    "name": "ps",
                    "replicas": 1,
                    "template": {
                        "metadata": {"labels": {"role": "ps"}},
                        "spec": {
                            "containers": [
                                {"name": "c", "image": "tf", "resources": {"requests": {"cpu": "1", "memory": "1Gi"}}}
                            ]
                        },
                    },
                },
                {
                    "name": "worker",
                    "replicas": 2,
                    "policies": [{"event": "TaskCompleted", "action": "CompleteJob"}],
                    "template": {
                        "spec": {
                            "containers": [
                                {"name": "c", "image": "tf", "resources": {"requests": {"cpu": "2", "memory": "2Gi"}}}
                            ]
                        }
                    },
                },
            ],
        },
    }
    for key, value in overrides.items():
        job["spec"][key] = value
    return job


def test_pod_group_of_a_job_without_uid_is_named_after_the_job() -> None:
    exp = expand_job(tf_job())
    assert exp.pod_group_name == "tf"
    pg = exp.pod_group
    assert pg is not None
    assert pg["metadata"]["name"] == "tf" and pg["metadata"]["namespace"] == "ns1"
    assert pg["metadata"]["annotations"] == {"volcano.sh/preemptable": "false", "x": "y"}
    assert pg["metadata"]["labels"] == {"team": "ml", "volcano.sh/preemptable": "false"}
    assert pg["spec"]["minMember"] == 3
    assert pg["spec"]["minTaskMember"] == {"ps": 1, "worker": 2}
    assert pg["spec"]["queue"] == "q1" and pg["spec"]["priorityClassName"] == "high"
    assert pg["spec"]["minResources"] == {"cpu": "5", "memory": "5Gi", "pods": "3"}
    assert pg["status"] == {"phase": "Pending"}


def test_pod_group_of_a_job_with_uid_is_named_like_the_controller_names_it() -> None:
    job = tf_job()
    job["metadata"]["uid"] = "abc-123"
    exp = expand_job(job)
    assert exp.pod_group_name == "tf-abc-123"
    assert all(p["metadata"]["annotations"]["scheduling.k8s.io/group-name"] == "tf-abc-123" for p in exp.pods)


def test_pods_carry_the_controllers_names_annotations_and_labels() -> None:
    exp = expand_job(tf_job(), scheduler_name="my-scheduler")
    assert [p["metadata"]["name"] for p in exp.pods] == ["tf-ps-0", "tf-worker-0", "tf-worker-1"]
    worker = exp.pods[2]
    assert worker["metadata"]["annotations"] == {
        "volcano.sh/task-index": "1",
        "volcano.sh/task-spec": "worker",
        "scheduling.k8s.io/group-name": "tf",
        "volcano.sh/job-name": "tf",
        "volcano.sh/queue-name": "q1",
        "volcano.sh/job-version": "0",
        "volcano.sh/template-uid": "tf-worker",
        "volcano.sh/job-retry-count": "0",
        "volcano.sh/preemptable": "false",
    }
    assert worker["metadata"]["labels"] == {
        "volcano.sh/task-index": "1",
        "volcano.sh/job-name": "tf",
        "volcano.sh/task-spec": "worker",
        "volcano.sh/job-namespace": "ns1",
        "volcano.sh/queue-name": "q1",
        "volcano.sh/preemptable": "false",
    }
    assert exp.pods[0]["metadata"]["labels"]["role"] == "ps"
    assert worker["spec"]["schedulerName"] == "my-scheduler"
    assert worker["spec"]["priorityClassName"] == "high"
    assert worker["metadata"]["ownerReferences"][0]["kind"] == "Job"
    assert worker["status"] == {"phase": "Pending"}


def test_template_scheduler_and_priority_class_win_over_the_jobs() -> None:
    job = tf_job(schedulerName="volcano")
    spec = job["spec"]["tasks"][0]["template"]["spec"]
    spec.update(schedulerName="other", priorityClassName="low")
    ps = expand_job(job).pods[0]
    assert ps["spec"]["schedulerName"] == "other" and ps["spec"]["priorityClassName"] == "low"


def test_webhook_defaults_task_names_min_available_and_queue() -> None:
    job = tf_job(minAvailable=0, queue=None)
    del job["spec"]["tasks"][0]["name"]
    job["spec"]["tasks"][1]["minAvailable"] = 1
    exp = expand_job(job)
    pg = exp.pod_group
    assert pg is not None
    assert pg["spec"]["minMember"] == 2  # ps 1 (= replicas) + worker 1
    assert pg["spec"]["minTaskMember"] == {"default0": 1, "worker": 1}
    assert pg["spec"]["queue"] == "default"
    assert exp.pods[0]["metadata"]["name"] == "tf-default0-0"


def test_min_resources_take_higher_priority_tasks_first_then_fill_with_spare_replicas() -> None:
    job = tf_job(minAvailable=3)
    job["spec"]["tasks"][0]["replicas"] = 2
    job["spec"]["tasks"][0]["minAvailable"] = 1
    job["spec"]["tasks"][1]["minAvailable"] = 1
    job["spec"]["tasks"][1]["template"]["spec"]["priorityClassName"] = "high"
    exp = expand_job(job, priority_classes={"high": 100})
    pg = exp.pod_group
    assert pg is not None
    # round 1: worker (high) 1 x 2 cpu, ps 1 x 1 cpu; round 2: worker's spare replica first, 2 cpu
    assert pg["spec"]["minResources"] == {"cpu": "5", "memory": "5Gi", "pods": "3"}


def test_min_available_above_replicas_is_refused_like_the_webhook() -> None:
    with pytest.raises(ManifestError, match=r"Job ns1/tf: spec.minAvailable: 4 is more than the 3 replicas"):
        expand_job(tf_job(minAvailable=4), _ref())


def _ref() -> Any:
    from volcanolib.manifests.fields import Ref

    return Ref("job.yaml", "objects[0]", "Job", "tf", "ns1")


@pytest.mark.parametrize(
    ("change", "message"),
    [
        (lambda j: j["spec"].update(tasks=[]), "spec.tasks: missing required field"),
        (lambda j: j["spec"]["tasks"][1].update(name="ps"), "spec.tasks[1].name: duplicate task name 'ps'"),
        (lambda j: j["spec"]["tasks"][0].pop("template"), "spec.tasks[0].template: missing required field"),
        (
            lambda j: j["spec"]["tasks"][0]["template"]["spec"]["containers"][0]["resources"]["requests"].update(
                cpu="x"
            ),
            "spec.tasks[0].template.spec.containers[0].resources.requests.cpu: invalid quantity 'x'",
        ),
        (lambda j: j["spec"]["tasks"][0].update(replicas=-1), "spec.tasks[0].replicas: must be at least 0"),
    ],
)
def test_malformed_jobs_name_the_field(change: Any, message: str) -> None:
    job = tf_job()
    change(job)
    with pytest.raises(ManifestError) as info:
        expand_job(job, _ref())
    assert str(info.value).startswith(f"job.yaml: Job ns1/tf: {message}"), str(info.value)


def test_existing_pod_group_and_pods_are_not_made_again() -> None:
    exp = expand_job(tf_job(), existing_groups={"ns1/tf"}, existing_pods={("ns1", "tf-worker-0")})
    assert exp.pod_group is None and exp.pod_group_name == "tf"
    assert [p["metadata"]["name"] for p in exp.pods] == ["tf-ps-0", "tf-worker-1"]


@pytest.mark.parametrize("phase", ["Completed", "Failed", "Aborted", "Terminating", "Restarting"])
def test_finished_jobs_get_nothing_new(phase: str) -> None:
    job = tf_job()
    job["status"] = {"state": {"phase": phase}}
    exp = expand_job(job)
    assert exp.pod_group is None and exp.pods == []


def test_the_loader_expands_jobs_and_keeps_user_fields_harmless() -> None:
    loader = ManifestLoader()
    job = tf_job()
    original = copy.deepcopy(job)
    loader.add_objects(
        [{"apiVersion": "scheduling.volcano.sh/v1beta1", "kind": "Queue", "metadata": {"name": "q1"}}, job]
    )
    cluster = loader.load()
    assert job == original
    (pg,) = cluster.pod_groups
    assert (pg.name, pg.min_member, pg.phase) == ("tf", 3, PodGroupPhase.PENDING)
    assert pg.min_resources is not None and pg.min_resources.get(PODS) == 3
    tasks = {t.name: t for t in cluster.tasks}
    assert set(tasks) == {"tf-ps-0", "tf-worker-0", "tf-worker-1"}
    assert tasks["tf-worker-1"].role == "worker" and tasks["tf-worker-1"].template == "tf-worker"
    assert tasks["tf-worker-1"].job == "ns1/tf" and tasks["tf-worker-1"].preemptable is False
    snap = cluster.to_cache().snapshot()
    assert len(snap.jobs["ns1/tf"].tasks) == 3


def test_a_dump_with_the_job_its_pod_group_and_pods_is_not_doubled() -> None:
    job = tf_job()
    job["metadata"]["uid"] = "u1"
    job["status"] = {"state": {"phase": "Running"}}
    made = expand_job(job)
    assert made.pod_group is not None
    loader = ManifestLoader()
    loader.add_objects([{"kind": "Queue", "metadata": {"name": "q1"}}, job, made.pod_group, *made.pods[:2]])
    cluster = loader.load()
    assert [g.name for g in cluster.pod_groups] == ["tf-u1"]
    assert sorted(t.name for t in cluster.tasks) == ["tf-ps-0", "tf-worker-0", "tf-worker-1"]


def test_depends_on_is_not_followed_yet_and_the_loader_says_so() -> None:
    job = tf_job()
    job["spec"]["tasks"][1]["dependsOn"] = {"name": ["ps"], "iteration": "any"}
    exp = expand_job(job)
    assert exp.depends_on_ignored == ("worker",)
    assert len(exp.pods) == 3  # the workers' pods are made with the ps pod's
    # once the pods of the task exist, there is nothing to wait for
    made = expand_job(job, existing_pods={("ns1", "tf-worker-0"), ("ns1", "tf-worker-1")})
    assert made.depends_on_ignored == ()
    assert expand_job(tf_job()).depends_on_ignored == ()

    loader = ManifestLoader()
    loader.add_objects(
        [{"apiVersion": "scheduling.volcano.sh/v1beta1", "kind": "Queue", "metadata": {"name": "q1"}}, job]
    )
    warnings = loader.load().warnings
    assert (
        "1 Volcano Job uses dependsOn, which volcanolib does not follow yet: the pods of those tasks are created "
        "with the others' and may be scheduled before the tasks they depend on: ns1/tf (task worker)"
    ) in warnings


def test_a_malformed_depends_on_names_the_field() -> None:
    job = tf_job()
    job["spec"]["tasks"][1]["dependsOn"] = {"name": "ps"}
    with pytest.raises(ManifestError) as info:
        expand_job(job, _ref())
    assert str(info.value) == "job.yaml: Job ns1/tf: spec.tasks[1].dependsOn.name: expected a list, got 'ps'"
