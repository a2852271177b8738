"""The stand-in driven by the real ``kubectl``: it must speak what a Go client expects
(discovery, OpenAPI v3 field validation, apply's strategic merge patch, watch streams,
graceful deletion with kubectl's wait)."""

from __future__ import annotations

import json
import os
import shutil
import subprocess
import threading
import time
from collections.abc import Callable
from pathlib import Path
from typing import Any

import pytest

from .bulk import make_node, make_pod, make_podgroup, make_queue
from .server import KubeApiServer

KUBECTL = shutil.which("kubectl")
pytestmark = pytest.mark.skipif(KUBECTL is None, reason="kubectl is not installed (Debian package kubernetes-client)")

POD = """\
apiVersion: v1
kind: Pod
metadata:
  name: web
  labels: {app: web}
spec:
  schedulerName: volcano
  containers:
  - name: main
    image: nginx
"""


@pytest.fixture
def kubectl(kube_api: KubeApiServer, tmp_path: Path) -> Any:
    config = kube_api.write_kubeconfig(tmp_path / "kubeconfig")
    env = {**os.environ, "KUBECONFIG": str(config), "HOME": str(tmp_path)}

    def run(*args: str, check: bool = True) -> subprocess.CompletedProcess[str]:
        assert KUBECTL is not None
        proc = subprocess.run([KUBECTL, *args], env=env, capture_output=True, text=True, timeout=60)
        if check and proc.returncode != 0:
            raise AssertionError(f"kubectl {' '.join(args)} failed: {proc.stderr}")
        return proc

    run.env = env  # type: ignore[attr-defined]
    return run


def test_kubectl_gets_nodes_as_json(kube_api: KubeApiServer, kubectl: Any) -> None:
    kube_api.create("nodes", make_node("n1", cpu="4"))
    kube_api.create("nodes", make_node("n2"))
    out = json.loads(kubectl("get", "nodes", "-o", "json").stdout)
    assert [n["metadata"]["name"] for n in out["items"]] == ["n1", "n2"]
    assert out["items"][0]["status"]["allocatable"]["cpu"] == "4"
    assert kubectl("get", "node", "n2", "-o", "jsonpath={.metadata.name}").stdout == "n2"
    missing = kubectl("get", "node", "absent", check=False)
    assert missing.returncode == 1 and 'nodes "absent" not found' in missing.stderr


def test_kubectl_apply_creates_then_patches_a_pod(kube_api: KubeApiServer, kubectl: Any, tmp_path: Path) -> None:
    manifest = tmp_path / "pod.yaml"
    manifest.write_text(POD)
    assert "pod/web created" in kubectl("apply", "-f", str(manifest)).stdout
    pod = kube_api.get("pods", "web")
    assert pod["spec"]["schedulerName"] == "volcano" and pod["status"]["phase"] == "Pending"
    assert "kubectl.kubernetes.io/last-applied-configuration" in pod["metadata"]["annotations"]
    assert "pod/web unchanged" in kubectl("apply", "-f", str(manifest)).stdout
    manifest.write_text(POD.replace("{app: web}", "{app: web2, tier: front}").replace("nginx", "nginx:2"))
    assert "pod/web configured" in kubectl("apply", "-f", str(manifest)).stdout
    pod = kube_api.get("pods", "web")
    assert pod["metadata"]["labels"] == {"app": "web2", "tier": "front"}
    assert pod["spec"]["containers"][0]["image"] == "nginx:2"
    # kubectl's patch goes through the strategic merge patch with its $setElementOrder directives.
    patches = kube_api.requests("PATCH", "/pods/web")
    assert patches and all(code == 200 for _, _, code in patches)


def test_kubectl_watch_sees_an_update(kube_api: KubeApiServer, kubectl: Any, tmp_path: Path) -> None:
    manifest = tmp_path / "pod.yaml"
    manifest.write_text(POD)
    kubectl("apply", "-f", str(manifest))
    assert KUBECTL is not None
    watcher = subprocess.Popen(
        [KUBECTL, "get", "pods", "-w", "-o", "json", "--output-watch-events"],
        env=kubectl.env,
        stdout=subprocess.PIPE,
        stderr=subprocess.PIPE,
        text=True,
    )
    lines: list[str] = []
    reader = threading.Thread(target=lambda: lines.extend(iter(watcher.stdout.readline, "")), daemon=True)
    reader.start()
    try:
        # Wait until kubectl has opened its watch (after its initial list), then change the pod.
        _wait_for(lambda: kube_api.requests("GET", "watch=true"), "kubectl never opened a watch")
        kube_api.set_pod_phase("web", "Running")
        _wait_for(lambda: len(_json_documents("".join(lines))) >= 2, "kubectl never printed the update")
    finally:
        watcher.terminate()
        watcher.communicate(timeout=30)
        reader.join(timeout=30)
    out = "".join(lines)
    events = [json.loads(doc) for doc in _json_documents(out)]
    assert [e["type"] for e in events] == ["ADDED", "MODIFIED"]
    assert events[1]["object"]["status"]["phase"] == "Running"


def test_kubectl_delete_waits_for_a_graceful_pod_deletion(kube_api: KubeApiServer, kubectl: Any) -> None:
    kube_api.create("pods", make_pod("bound", node_name="n1"))
    out = kubectl("delete", "pod", "bound").stdout
    assert 'pod "bound" deleted' in out
    assert kube_api.find("pods", "bound") is None
    # The deletion went through Terminating (deletionTimestamp) before the pod was removed,
    # and kubectl waited for the removal.
    assert [t for t, _, name, _ in kube_api.history("pods") if name == "bound"] == ["ADDED", "MODIFIED", "DELETED"]
    assert kubectl("get", "pod", "bound", check=False).returncode == 1


def test_kubectl_gets_podgroups_and_queues_by_their_full_names(kube_api: KubeApiServer, kubectl: Any) -> None:
    kube_api.create("queues", make_queue("research", weight=3))
    kube_api.create("podgroups", make_podgroup("pg-a", min_member=3, queue="research"))
    out = json.loads(kubectl("get", "podgroups.scheduling.volcano.sh", "-o", "json").stdout)
    assert [(p["metadata"]["name"], p["spec"]["minMember"]) for p in out["items"]] == [("pg-a", 3)]
    assert "pg-a" in kubectl("get", "pg").stdout
    queues = json.loads(kubectl("get", "queues.scheduling.volcano.sh", "-o", "json").stdout)
    assert [q["metadata"]["name"] for q in queues["items"]] == ["research"]
    resources = kubectl("api-resources", "--api-group=scheduling.volcano.sh", "-o", "name").stdout.split()
    assert resources == ["podgroups.scheduling.volcano.sh", "queues.scheduling.volcano.sh"]


def test_kubectl_label_and_patch_a_custom_resource(kube_api: KubeApiServer, kubectl: Any) -> None:
    kube_api.create("podgroups", make_podgroup("pg-a"))
    kubectl("label", "podgroup", "pg-a", "team=ml")
    kubectl("patch", "podgroup", "pg-a", "--type=merge", "-p", '{"spec":{"minMember":4}}')
    pg = kube_api.get("podgroups", "pg-a")
    assert pg["metadata"]["labels"] == {"team": "ml"} and pg["spec"]["minMember"] == 4


def test_kubectl_prints_tables_for_people(kube_api: KubeApiServer, kubectl: Any) -> None:
    kube_api.create("nodes", make_node("n1"))
    kube_api.create("nodes", make_node("n2", ready=False, unschedulable=True))
    kube_api.create("pods", make_pod("bound", node_name="n1"))
    kube_api.create("pods", make_pod("waiting"))
    rows = [line.split() for line in kubectl("get", "pods", "-o", "wide").stdout.splitlines()]
    assert rows[0][:5] == ["NAME", "READY", "STATUS", "RESTARTS", "AGE"] and "NODE" in rows[0]
    assert [(r[0], r[1], r[2], r[6]) for r in rows[1:]] == [
        ("bound", "1/1", "Running", "n1"),
        ("waiting", "0/1", "Pending", "<none>"),
    ]
    nodes = [line.split()[:2] for line in kubectl("get", "nodes").stdout.splitlines()]
    assert nodes == [["NAME", "STATUS"], ["n1", "Ready"], ["n2", "NotReady,SchedulingDisabled"]]


def test_kubectl_describe_shows_a_pods_events(kube_api: KubeApiServer, kubectl: Any) -> None:
    pod = kube_api.create("pods", make_pod("p1", node_name="n1"))
    involved = {"kind": "Pod", "name": "p1", "namespace": "default", "uid": pod["metadata"]["uid"]}
    kube_api.create(
        "events",
        {
            "metadata": {"name": "p1.1"},
            "involvedObject": involved,
            "type": "Normal",
            "reason": "Scheduled",
            "message": "Successfully assigned default/p1 to n1",
            "source": {"component": "volcano"},
        },
    )
    out = kubectl("describe", "pod", "p1").stdout
    assert "Successfully assigned default/p1 to n1" in out and "Scheduled" in out


def test_kubectl_drain_evicts_through_the_eviction_api_and_honours_budgets(
    kube_api: KubeApiServer, kubectl: Any
) -> None:
    kube_api.create("nodes", make_node("n1"))
    kube_api.create("pods", make_pod("free", node_name="n1"))
    kube_api.create("pods", make_pod("guarded", node_name="n1", labels={"app": "db"}))
    kube_api.create(
        "poddisruptionbudgets",
        {
            "metadata": {"name": "db"},
            "spec": {"minAvailable": 1, "selector": {"matchLabels": {"app": "db"}}},
        },
    )
    drain = kubectl("drain", "n1", "--force", "--timeout=3s", check=False)
    assert drain.returncode != 0
    assert "Cannot evict pod as it would violate the pod's disruption budget" in drain.stderr
    assert kube_api.get("nodes", "n1", "")["spec"]["unschedulable"] is True
    assert kube_api.find("pods", "free") is None and kube_api.find("pods", "guarded") is not None
    assert kube_api.requests("POST", "/pods/guarded/eviction")[0][2] == 429


def test_kubectl_typed_create_sends_protobuf_which_the_stand_in_refuses(kubectl: Any) -> None:
    out = kubectl("create", "namespace", "x", check=False)
    assert out.returncode == 1 and "UnsupportedMediaType" in out.stderr


def _wait_for(condition: Callable[[], Any], message: str, timeout: float = 30.0) -> None:
    deadline = time.monotonic() + timeout
    while not condition():
        if time.monotonic() > deadline:
            raise AssertionError(message)
        time.sleep(0.05)


def _json_documents(text: str) -> list[str]:
    """Split kubectl's stream of pretty-printed JSON objects into documents."""
    docs, depth, start = [], 0, 0
    in_string = escaped = False
    for i, ch in enumerate(text):
        if in_string:
            if escaped:
                escaped = False
            elif ch == "\\":
                escaped = True
            elif ch == '"':
                in_string = False
        elif ch == '"':
            in_string = True
        elif ch == "{":
            if depth == 0:
                start = i
            depth += 1
        elif ch == "}":
            depth -= 1
            if depth == 0:
                docs.append(text[start : i + 1])
    return docs
