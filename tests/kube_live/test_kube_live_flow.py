"""The whole flow, live: a Job through the controllers, the scheduler, the kubelet and back.

Each test that takes ``flow`` runs ``volcanolib controllers`` and ``volcanolib
serve`` on threads against each API server of ``flow.py``: the stand-in, and
the real control plane (kube-apiserver, etcd and kube-controller-manager's
controllers, from the Go modules) with ``volcanolib kubelet-sim`` (marked
``go``: skipped without Go, a failure under ``VOLCANOLIB_REQUIRE_GO=1``).
Pods start when bound; they end when a test writes their status, as a
kubelet would.
"""

from __future__ import annotations

import os
import signal
import subprocess
import sys
from collections.abc import Iterator
from pathlib import Path
from typing import Any

import pytest
from flow import BACKENDS, FlowCluster, flow_cluster, wait
from kube_api import KubeApiServer, make_queue

from volcanolib.cli import main

NS = "default"


@pytest.fixture(params=[pytest.param(b, marks=[pytest.mark.go] if b == "real" else []) for b in BACKENDS])
def flow(request: pytest.FixtureRequest, tmp_path: Path) -> Iterator[FlowCluster]:
    """The flow on each backend; the real one is the test run's control plane (``real_cluster``)."""
    real = request.getfixturevalue("real_cluster") if request.param == "real" else None
    with flow_cluster(tmp_path, request.param, real=real) as cluster:
        yield cluster


def container(cpu: str = "1") -> dict[str, Any]:
    return {"name": "c", "image": "busybox", "resources": {"requests": {"cpu": cpu}}}


def task(name: str, replicas: int, **extra: Any) -> dict[str, Any]:
    return {
        "name": name,
        "replicas": replicas,
        "template": {"spec": {"containers": [container()], "restartPolicy": "Never"}},
        **extra,
    }


def job(name: str, *tasks: dict[str, Any], **spec: Any) -> dict[str, Any]:
    return {
        "apiVersion": "batch.volcano.sh/v1alpha1",
        "kind": "Job",
        "metadata": {"name": name, "namespace": NS},
        "spec": {"schedulerName": "volcano", "tasks": list(tasks), **spec},
    }


def tensorflow_job() -> dict[str, Any]:
    """Volcano's dist-mnist example, in our own words: ps x1, worker x2 whose TaskCompleted completes the job."""
    return job(
        "tf",
        task("ps", 1),
        task("worker", 2, policies=[{"event": "TaskCompleted", "action": "CompleteJob"}]),
        minAvailable=3,
        plugins={"env": [], "svc": []},
        policies=[{"event": "PodEvicted", "action": "RestartJob"}],
    )


def conditions(flow: FlowCluster, name: str) -> list[str]:
    status = (flow.get("jobs", name) or {}).get("status") or {}
    return [c["status"] for c in status.get("conditions") or []]


def test_a_tensorflow_job_runs_to_completed(flow: FlowCluster) -> None:
    flow.start_controllers()
    created = flow.create("jobs", tensorflow_job())
    uid = created["metadata"]["uid"]
    pods = wait(lambda: len(flow.running(prefix="tf-")) == 3 and flow.running(prefix="tf-"), "three running pods")
    assert pods == ["tf-ps-0", "tf-worker-0", "tf-worker-1"]
    wait(lambda: flow.job_phase("tf") == "Running", "the job Running")

    group = flow.get("podgroups", f"tf-{uid}")
    assert group is not None and group["spec"]["minMember"] == 3
    assert group["spec"]["minTaskMember"] == {"ps": 1, "worker": 2}
    worker = flow.get("pods", "tf-worker-1")
    assert worker is not None
    annotations, labels = worker["metadata"]["annotations"], worker["metadata"]["labels"]
    assert annotations["scheduling.k8s.io/group-name"] == f"tf-{uid}"
    assert (annotations["volcano.sh/task-spec"], annotations["volcano.sh/task-index"]) == ("worker", "1")
    assert (annotations["volcano.sh/job-version"], annotations["volcano.sh/job-retry-count"]) == ("0", "0")
    assert (labels["volcano.sh/job-name"], labels["volcano.sh/queue-name"]) == ("tf", "default")
    env = {e["name"]: e for e in worker["spec"]["containers"][0]["env"]}
    assert env["VK_TASK_INDEX"]["value"] == env["VC_TASK_INDEX"]["value"] == "1"  # env plugin
    assert env["VC_WORKER_HOSTS"]["valueFrom"]["configMapKeyRef"] == {"name": "tf-svc", "key": "VC_WORKER_HOSTS"}
    assert (worker["spec"]["hostname"], worker["spec"]["subdomain"]) == ("tf-worker-1", "tf")  # svc plugin
    service = flow.get("services", "tf")
    assert service is not None and service["spec"]["clusterIP"] == "None"
    hosts = flow.get("configmaps", "tf-svc")
    assert hosts is not None and hosts["data"]["VC_WORKER_HOSTS"] == "tf-worker-0.tf,tf-worker-1.tf"
    status = (flow.get("jobs", "tf") or {})["status"]
    assert (status["running"], status["minAvailable"], status["controlledResources"]) == (
        3,
        3,
        {"plugin-env": "env", "plugin-svc": "svc"},
    )

    flow.pod_phase("tf-worker-0", "Succeeded")
    flow.pod_phase("tf-worker-1", "Succeeded")  # TaskCompleted -> CompleteJob: ps is killed
    wait(lambda: flow.job_phase("tf") == "Completed", "the job Completed")
    wait(lambda: flow.get("pods", "tf-ps-0") is None, "ps deleted")
    assert flow.get("pods", "tf-worker-0") is not None  # finished pods are kept
    assert conditions(flow, "tf") == ["Pending", "Running", "Completing", "Completed"]
    assert flow.get("services", "tf") is None and flow.get("podgroups", f"tf-{uid}") is None


def test_a_failed_pod_restarts_the_job_once_then_it_completes(flow: FlowCluster) -> None:
    flow.start_controllers()
    flow.create("jobs", job("r", task("a", 2), policies=[{"event": "PodFailed", "action": "RestartJob"}]))
    wait(lambda: len(flow.running(prefix="r-")) == 2, "two running pods")
    first = {name: p["metadata"]["uid"] for name, p in flow.pods(prefix="r-").items()}
    flow.pod_phase("r-a-0", "Failed", exit_code=3)
    wait(lambda: ((flow.get("jobs", "r") or {}).get("status") or {}).get("retryCount") == 1, "retryCount 1")
    wait(
        lambda: (
            len(flow.running(prefix="r-")) == 2
            and all(p["metadata"]["uid"] not in first.values() for p in flow.pods(prefix="r-").values())
        ),
        "the pods made again",
    )
    again = flow.get("pods", "r-a-0")
    assert again is not None and again["metadata"]["annotations"]["volcano.sh/job-version"] == "1"
    assert again["metadata"]["annotations"]["volcano.sh/job-retry-count"] == "1"
    wait(lambda: flow.job_phase("r") == "Running", "Running again")
    flow.pod_phase("r-a-0", "Succeeded")
    flow.pod_phase("r-a-1", "Succeeded")
    wait(lambda: flow.job_phase("r") == "Completed", "Completed")
    status = (flow.get("jobs", "r") or {})["status"]
    assert (status["retryCount"], status["version"]) == (1, 2)
    assert conditions(flow, "r")[:4] == ["Pending", "Running", "Restarting", "Pending"]


def test_max_retry_reached_ends_failed(flow: FlowCluster) -> None:
    flow.start_controllers()
    with flow.job_phases("m") as phases:
        flow.create(
            "jobs", job("m", task("a", 1), maxRetry=1, policies=[{"event": "PodFailed", "action": "RestartJob"}])
        )
        wait(lambda: flow.running(prefix="m-") == ["m-a-0"], "the pod running")
        flow.pod_phase("m-a-0", "Failed", exit_code=1)
        wait(lambda: phases[-1:] == ["Failed"], "Failed")
    assert phases == ["Pending", "Running", "Restarting", "Failed"]  # each phase written, as Volcano writes them
    assert ((flow.get("jobs", "m") or {})["status"])["retryCount"] == 1
    assert flow.get("pods", "m-a-0") is not None  # the last retry keeps the failed pod


def test_an_exit_code_policy_and_task_completed(flow: FlowCluster) -> None:
    flow.start_controllers()
    spec = job(
        "e",
        task("main", 1, policies=[{"event": "TaskCompleted", "action": "CompleteJob"}]),
        task("side", 1),
        policies=[{"exitCode": 7, "action": "AbortJob"}],
    )
    flow.create("jobs", spec)
    wait(lambda: len(flow.running(prefix="e-")) == 2, "both running")
    flow.pod_phase("e-side-0", "Failed", exit_code=7)
    wait(lambda: flow.job_phase("e") == "Aborted", "Aborted by the exit code")
    flow.create(
        "jobs",
        job("t", task("main", 1, policies=[{"event": "TaskCompleted", "action": "CompleteJob"}]), task("side", 1)),
    )
    wait(lambda: len(flow.running(prefix="t-")) == 2, "both running")
    flow.pod_phase("t-main-0", "Succeeded")
    wait(lambda: flow.job_phase("t") == "Completed", "TaskCompleted -> CompleteJob")
    wait(lambda: flow.get("pods", "t-side-0") is None, "the side task killed")


def test_depends_on_starts_the_tasks_in_order(flow: FlowCluster) -> None:
    flow.start_controllers()
    first = task("first", 1)
    first["template"]["spec"]["nodeSelector"] = {"stage": "one"}  # no node has it yet: the first pod waits
    flow.create("jobs", job("d", first, task("then", 2, dependsOn={"name": ["first"]}), minAvailable=1))
    wait(lambda: list(flow.pods(prefix="d-")) == ["d-first-0"], "the first task's pod")
    wait(lambda: flow.job_phase("d") == "Pending", "the job Pending")
    assert flow.controllers is not None and flow.controllers.wait_idle()
    assert list(flow.pods(prefix="d-")) == ["d-first-0"]  # the second task waits for the first to run
    flow.patch("nodes", "n0", {"metadata": {"labels": {"stage": "one"}}})
    wait(lambda: flow.running(prefix="d-") == ["d-first-0", "d-then-0", "d-then-1"], "the next task running")


def test_suspend_and_resume_through_commands(flow: FlowCluster) -> None:
    flow.start_controllers()
    uid = flow.create("jobs", job("s", task("a", 2)))["metadata"]["uid"]
    wait(lambda: flow.job_phase("s") == "Running", "Running")

    def command(action: str) -> None:
        owner = {"apiVersion": "batch.volcano.sh/v1alpha1", "kind": "Job", "name": "s", "uid": uid, "controller": True}
        body = {
            "apiVersion": "bus.volcano.sh/v1alpha1",
            "kind": "Command",
            "metadata": {"generateName": f"s-{action.lower()}-", "namespace": NS, "ownerReferences": [owner]},
            "target": owner,
            "action": action,
        }
        flow.create("commands", body)

    command("AbortJob")  # vcctl job suspend
    wait(lambda: flow.job_phase("s") == "Aborted", "Aborted")
    wait(lambda: not flow.pods(prefix="s-"), "the pods deleted")
    assert flow.list("commands") == []  # a Command is deleted once handled
    command("ResumeJob")  # vcctl job resume
    wait(lambda: len(flow.running(prefix="s-")) == 2, "running again")
    wait(lambda: flow.job_phase("s") == "Running", "Running again")
    assert ((flow.get("jobs", "s") or {})["status"])["retryCount"] == 1
    assert "Aborting" in conditions(flow, "s") and "Restarting" in conditions(flow, "s")


def test_a_deployment_of_five_replicas_gets_one_podgroup_and_five_bound_pods(flow: FlowCluster) -> None:
    """Volcano's PodGroup controller names a pod's group after its controlling owner.

    The five pods of the Deployment's ReplicaSet share one group. On the real
    server the Deployment and ReplicaSet controllers make the ReplicaSet and
    the pods; on the stand-in the test makes them as they would.
    """
    flow.start_controllers()
    template = {
        "metadata": {"labels": {"app": "web"}, "annotations": {"scheduling.volcano.sh/queue-name": "default"}},
        "spec": {"schedulerName": "volcano", "containers": [container("500m")]},
    }
    rs = flow.create_deployment(
        {
            "apiVersion": "apps/v1",
            "kind": "Deployment",
            "metadata": {"name": "web", "namespace": NS, "annotations": {"volcano.sh/owner-note": "kept"}},
            "spec": {"replicas": 5, "selector": {"matchLabels": {"app": "web"}}, "template": template},
        }
    )
    wait(lambda: len(flow.running(prefix="web-")) == 5, "five running pods")
    (group,) = flow.list("podgroups")
    assert group["metadata"]["name"] == f"podgroup-{rs['metadata']['uid']}"
    assert (group["spec"]["minMember"], group["spec"]["queue"]) == (1, "default")
    assert group["spec"]["minResources"]["cpu"] == "500m"
    assert group["metadata"]["annotations"] == {"volcano.sh/owner-note": "kept"}  # the owner's volcano.sh/ ones
    assert [r["uid"] for r in group["metadata"]["ownerReferences"]] == [rs["metadata"]["uid"]]
    for pod in flow.pods(prefix="web-").values():
        assert group["metadata"]["ownerReferences"] == pod["metadata"]["ownerReferences"]  # the pods' controller
        assert pod["metadata"]["annotations"]["scheduling.k8s.io/group-name"] == group["metadata"]["name"]


def test_the_controllers_killed_and_restarted_mid_job_lose_nothing(flow: FlowCluster) -> None:
    flow.start_controllers()
    uid = flow.create("jobs", job("k", task("a", 3), policies=[{"event": "PodFailed", "action": "RestartJob"}]))[
        "metadata"
    ]["uid"]
    wait(lambda: len(flow.running(prefix="k-")) == 3, "three running")
    wait(lambda: flow.job_phase("k") == "Running", "Running")
    before = {name: p["metadata"]["uid"] for name, p in flow.pods(prefix="k-").items()}
    group_uid = (flow.get("podgroups", f"k-{uid}") or {})["metadata"]["uid"]

    flow.stop_controllers()
    flow.start_controllers()  # nothing happened meanwhile: nothing is made again
    assert flow.controllers is not None and flow.controllers.wait_idle()
    assert {name: p["metadata"]["uid"] for name, p in flow.pods(prefix="k-").items()} == before
    assert (flow.get("podgroups", f"k-{uid}") or {})["metadata"]["uid"] == group_uid
    assert flow.job_phase("k") == "Running"

    flow.stop_controllers()
    flow.pod_phase("k-a-1", "Failed", exit_code=2)  # while no controller runs
    flow.start_controllers()
    wait(lambda: ((flow.get("jobs", "k") or {}).get("status") or {}).get("retryCount") == 1, "the restart made")
    wait(
        lambda: (
            len(flow.running(prefix="k-")) == 3
            and not set(before.values()) & {p["metadata"]["uid"] for p in flow.pods(prefix="k-").values()}
        ),
        "three new pods running",
    )
    wait(lambda: flow.job_phase("k") == "Running", "Running again")
    assert len(flow.list("podgroups")) == 1


def test_a_job_admission_would_refuse_is_left_alone_with_a_warning_event(flow: FlowCluster) -> None:
    flow.start_controllers()
    bad = flow.create("jobs", job("bad", task("a", 1), policies=[{"event": "PodFailed", "action": "RestartJobb"}]))
    flow.create("jobs", job("good", task("a", 1)))
    wait(lambda: flow.running(prefix="good-") == ["good-a-0"], "the good job running")
    events = wait(
        lambda: [e for e in flow.list("events") if e["involvedObject"]["name"] == "bad"], "an event on the refused job"
    )
    assert events[0]["type"] == "Warning" and events[0]["involvedObject"]["uid"] == bad["metadata"]["uid"]
    assert "spec.policies[0].action: unknown action 'RestartJobb'" in events[0]["message"]
    assert flow.pods(prefix="bad-") == {} and flow.job_phase("bad") == ""
    assert [g["metadata"]["name"] for g in flow.list("podgroups")] == [
        f"good-{flow.get('jobs', 'good')['metadata']['uid']}"
    ]  # type: ignore[index]


def test_a_finished_job_goes_after_its_ttl(flow: FlowCluster) -> None:
    flow.start_controllers()
    flow.create("jobs", job("ttl", task("a", 1), ttlSecondsAfterFinished=1))
    wait(lambda: flow.running(prefix="ttl-") == ["ttl-a-0"], "running")
    flow.pod_phase("ttl-a-0", "Succeeded")
    wait(lambda: flow.job_phase("ttl") == "Completed", "Completed")
    wait(lambda: flow.get("jobs", "ttl") is None, "the job deleted after its TTL", timeout=20)


def test_queues_close_and_open_through_commands(flow: FlowCluster) -> None:
    flow.start_controllers()
    flow.create(
        "queues",
        {
            "apiVersion": "scheduling.volcano.sh/v1beta1",
            "kind": "Queue",
            "metadata": {"name": "q1"},
            "spec": {"weight": 1},
        },
    )
    wait(lambda: ((flow.get("queues", "q1") or {}).get("spec") or {}).get("parent") == "root", "parent root")
    flow.create("jobs", job("inq", task("a", 1), queue="q1"))
    wait(lambda: flow.running(prefix="inq-") == ["inq-a-0"], "running in q1")
    queue = flow.get("queues", "q1") or {}

    def command(action: str) -> None:
        owner = {
            "apiVersion": "scheduling.volcano.sh/v1beta1",
            "kind": "Queue",
            "name": "q1",
            "uid": queue["metadata"]["uid"],
            "controller": True,
        }
        flow.create(
            "commands",
            {
                "apiVersion": "bus.volcano.sh/v1alpha1",
                "kind": "Command",
                "metadata": {
                    "generateName": f"q1-{action.lower()}-",
                    "namespace": "default",
                    "ownerReferences": [owner],
                },
                "target": owner,
                "action": action,
            },
        )

    def state() -> str:
        return str(((flow.get("queues", "q1") or {}).get("status") or {}).get("state") or "")

    wait(
        lambda: ((flow.get("queues", "q1") or {}).get("status") or {}).get("running") == 1, "one running group counted"
    )
    command("CloseQueue")
    wait(lambda: state() == "Closing", "Closing while a PodGroup remains")
    flow.create("jobs", job("late", task("a", 1), queue="q1"))
    wait(lambda: any(e["involvedObject"]["name"] == "late" for e in flow.list("events")), "the late job refused")
    flow.delete("jobs", "inq")
    wait(lambda: state() == "Closed", "Closed once its last PodGroup is gone")
    command("OpenQueue")
    wait(lambda: state() == "Open", "Open again")
    assert flow.list("commands") == []


def test_the_command_runs_the_controllers_until_sigterm(tmp_path: Path) -> None:
    server = KubeApiServer().start()
    try:
        kubeconfig = server.write_kubeconfig(tmp_path / "kubeconfig")
        server.create("queues", make_queue("default"))
        process = subprocess.Popen(
            [sys.executable, "-m", "volcanolib", "controllers", "--kubeconfig", str(kubeconfig)],
            stdout=subprocess.PIPE,
            stderr=subprocess.PIPE,
            text=True,
            env=dict(os.environ),
        )
        try:
            uid = server.create("jobs", job("cli", task("a", 1)))["metadata"]["uid"]
            wait(lambda: server.find("podgroups", f"cli-{uid}") is not None, "the PodGroup", 60)
            process.send_signal(signal.SIGTERM)
            out, err = process.communicate(timeout=30)
        finally:
            if process.poll() is None:
                process.kill()
        assert process.returncode == 0, err
        assert out == "volcanolib controllers: job, podgroup, queue\n"
    finally:
        server.stop()


def test_controllers_refuse_a_missing_kubeconfig_in_one_line(
    tmp_path: Path, capsys: pytest.CaptureFixture[str]
) -> None:
    assert main(["controllers", "--kubeconfig", str(tmp_path / "nope")]) == 2
    assert capsys.readouterr().err.strip().splitlines() == [f"volcanolib: error: {tmp_path / 'nope'}: no such file"]
