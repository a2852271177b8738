"""deploy/controllers.yaml grants exactly the calls ``volcanolib controllers`` makes: every one, and nothing more.

On the stand-in, every request the controllers make is compared with the
ClusterRole. On the real server they run as deploy/controllers.yaml's
ServiceAccount, bound to its ClusterRole and nothing else: a verb missing
there is refused (``403``), and the test fails.
"""

from __future__ import annotations

import threading
from collections.abc import Iterator
from pathlib import Path
from typing import Any

import pytest
import yaml
from conftest_helpers import eventually
from kube_api import make_node
from test_kube_live_rbac import granted, needed

from volcanolib.kube.live import load_api
from volcanolib.kube.live.controllers import ControllerManager

DEPLOY = Path(__file__).resolve().parents[2] / "deploy" / "controllers.yaml"


@pytest.fixture
def controllers(server: Any, tmp_path: Path) -> Iterator[tuple[Any, Path]]:
    """The handle whose :meth:`requests` are the controllers', and the kubeconfig they run with.

    On the real server: deploy/'s namespace, and deploy/controllers.yaml's
    ServiceAccount, ClusterRole and binding (not its Deployment, whose image
    is not there); the kubeconfig holds a token of that ServiceAccount.
    """
    if not hasattr(server, "cluster"):  # the stand-in: every request it logs is the controllers'
        yield server, Path(server.write_kubeconfig(tmp_path / "kubeconfig"))
        return
    from realcluster import RealServer

    cluster = server.cluster
    cluster.apply_manifests(DEPLOY.parent / "namespace.yaml")
    cluster.apply_manifests(DEPLOY, skip={"Deployment"})
    (account,) = [d for d in yaml.safe_load_all(DEPLOY.read_text()) if d["kind"] == "ServiceAccount"]
    meta = account["metadata"]
    identity = RealServer(cluster, meta["name"], cluster_role=None, namespace=meta["namespace"])
    yield identity, identity.write_kubeconfig(tmp_path / "kubeconfig")


def owned_pods(server: Any, namespace: str) -> None:
    """A pod owned by a ReplicaSet, a StatefulSet, a DaemonSet and a batch Job each, named for Volcano.

    On the stand-in the owners are only named by the pods. On the real server
    they exist (its garbage collector deletes what a missing owner owned): the
    ReplicaSet's and the StatefulSet's controllers make their pods, and the
    test makes the DaemonSet's and the Job's, whose controllers do not run.
    """
    spec = {"schedulerName": "volcano", "containers": [container()]}
    kinds = {"ReplicaSet": "apps/v1", "StatefulSet": "apps/v1", "DaemonSet": "apps/v1", "Job": "batch/v1"}
    real = hasattr(server, "cluster")
    for i, (kind, api) in enumerate(kinds.items()):
        if real:
            resource = {"ReplicaSet": "replicasets", "StatefulSet": "statefulsets", "DaemonSet": "daemonsets",
                        "Job": "jobs.batch"}[kind]  # fmt: skip
            labels = {"owner": f"o{i}"}
            body: dict[str, Any] = {
                "apiVersion": api,
                "kind": kind,
                "metadata": {"name": f"o{i}", "namespace": namespace},
                "spec": {"template": {"metadata": {"labels": labels}, "spec": spec}},
            }
            if kind == "Job":
                body["spec"]["template"]["spec"] = {**spec, "restartPolicy": "Never"}
            else:
                body["spec"]["selector"] = {"matchLabels": labels}
            if kind in ("ReplicaSet", "StatefulSet"):
                server.create(resource, {**body, "spec": {**body["spec"], "replicas": 1}})
                continue  # its controller makes the pod
            uid = server.create(resource, body)["metadata"]["uid"]
        else:
            uid = f"u{i}"
        owner = {"apiVersion": api, "kind": kind, "name": f"o{i}", "uid": uid, "controller": True}
        pod = {
            "apiVersion": "v1",
            "kind": "Pod",
            "metadata": {"name": f"p{i}", "namespace": namespace, "ownerReferences": [owner]},
            "spec": spec,
        }
        server.create("pods", pod)


def container() -> dict[str, object]:
    return {"name": "c", "image": "x", "resources": {"requests": {"cpu": "1"}}}


def test_the_cluster_role_grants_exactly_what_the_controllers_use(server: Any, controllers: tuple[Any, Path]) -> None:
    identity, kubeconfig = controllers
    server.create("nodes", make_node("n0"))
    server.create("namespaces", {"apiVersion": "v1", "kind": "Namespace", "metadata": {"name": "ns1"}})
    manager = ControllerManager(
        load_api(str(kubeconfig)), leader_elect=True, lock_namespace="default", lease=(60.0, 40.0, 0.2)
    )
    stop = threading.Event()
    thread = threading.Thread(target=manager.run, args=(stop,), daemon=True)
    thread.start()
    assert manager.ready.wait(20)

    # a Job with every plugin that makes objects, restarted once, then finished and deleted at once (TTL 0)
    job = {
        "apiVersion": "batch.volcano.sh/v1alpha1",
        "kind": "Job",
        "metadata": {"name": "j", "namespace": "ns1"},
        "spec": {
            "ttlSecondsAfterFinished": 0,
            "plugins": {"svc": [], "ssh": [], "env": []},
            "policies": [{"event": "PodFailed", "action": "RestartJob"}],
            "tasks": [{"name": "a", "replicas": 1, "template": {"spec": {"containers": [container()]}}}],
        },
    }
    uid = server.create("jobs", job)["metadata"]["uid"]
    group = f"j-{uid}"

    def admitted_pod(what: str) -> None:
        """Admit the PodGroup every cycle, as the scheduler would, until the controllers make the pod."""

        def admit() -> object:
            try:
                server.patch("podgroups", group, {"status": {"phase": "Inqueue"}}, "ns1")
            except Exception as exc:  # the stand-in's or the client's ApiError: the group is not made yet
                if 404 not in (getattr(exc, "code", None), getattr(exc, "status", None)):
                    raise
            return server.find("pods", "j-a-0", "ns1")

        eventually(admit, 20, what)

    admitted_pod("the pod")
    first = server.get("pods", "j-a-0", "ns1")["metadata"]["uid"]
    server.set_pod_phase("j-a-0", "Failed", "ns1")
    eventually(lambda: (server.get("jobs", "j", "ns1").get("status") or {}).get("retryCount") == 1, 20, "a restart")

    def gone() -> bool:
        pod = server.find("pods", "j-a-0", "ns1")
        return pod is None or pod["metadata"]["uid"] != first  # gone, or already made again

    eventually(gone, 30, "the pod gone")
    admitted_pod("the pod again")
    server.set_pod_phase("j-a-0", "Succeeded", "ns1")
    eventually(lambda: server.find("jobs", "j", "ns1") is None, 20, "the Job deleted after its TTL")

    # pods of owners of each kind get their owner's PodGroup, the owner's annotations read
    owned_pods(server, "ns1")
    eventually(lambda: len(server.list_objects("podgroups", "ns1")) == 4, 20, "four PodGroups")

    # a queue, closed through a Command; a Job refused (an Event)
    queue = server.create(
        "queues", {"apiVersion": "scheduling.volcano.sh/v1beta1", "kind": "Queue", "metadata": {"name": "q"}}
    )
    target = {
        "apiVersion": "scheduling.volcano.sh/v1beta1",
        "kind": "Queue",
        "name": "q",
        "uid": queue["metadata"]["uid"],
    }
    command = {"apiVersion": "bus.volcano.sh/v1alpha1", "kind": "Command", "metadata": {"name": "close"}}
    server.create("commands", {**command, "target": target, "action": "CloseQueue"})
    eventually(lambda: (server.get("queues", "q").get("status") or {}).get("state") == "Closed", 20, "q closed")
    server.create(
        "jobs", {**job, "metadata": {"name": "bad", "namespace": "ns1"}, "spec": {**job["spec"], "queue": "q"}}
    )
    eventually(lambda: identity.requests("POST", "/events"), 20, "an event")
    assert manager.wait_idle()
    stop.set()
    thread.join(30)

    # the test's own reads and writes go to the stand-in directly: every request logged is the controllers'
    requests = identity.requests()
    assert [r for r in requests if r[2] in (401, 403)] == []  # nothing refused
    used = {needed(method, url) for method, url, _ in requests}
    assert used <= granted(DEPLOY)
    # a Command's target is read only when the Command's event comes before its target's: a race
    assert granted(DEPLOY) - used <= {("scheduling.volcano.sh", "queues", "get"), ("batch.volcano.sh", "jobs", "get")}
