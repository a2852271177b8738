"""The fast loader gives the same cluster as creating every object through the API."""

from __future__ import annotations

import json
import urllib.request
from typing import Any

from .bulk import cluster_objects, load_cluster
from .server import KubeApiServer

PATHS = {
    "queues": "/apis/scheduling.volcano.sh/v1beta1/queues",
    "nodes": "/api/v1/nodes",
    "podgroups": "/apis/scheduling.volcano.sh/v1beta1/namespaces/default/podgroups",
    "pods": "/api/v1/namespaces/default/pods",
}


def _http(server: KubeApiServer, method: str, path: str, body: Any = None) -> Any:
    data = json.dumps(body).encode() if body is not None else None
    req = urllib.request.Request(
        server.url + path, data=data, method=method, headers={"Content-Type": "application/json"}
    )
    with urllib.request.urlopen(req) as resp:
        return json.loads(resp.read())


def _without_timestamps(items: list[dict[str, Any]]) -> list[dict[str, Any]]:
    for item in items:
        item["metadata"].pop("creationTimestamp")
    return items


def test_load_cluster_equals_creating_each_object_through_the_api(kube_api_factory: Any) -> None:
    options = {"group_size": 2, "scheduler_name": "volcano"}
    fast = kube_api_factory()
    loaded = load_cluster(fast, 3, 5, 2, **options)
    plain = kube_api_factory()
    for resource, objs in cluster_objects(3, 5, 2, **options):
        for obj in objs:
            _http(plain, "POST", PATHS[resource], obj)
    assert loaded.podgroups == 4 and loaded.resource_version == plain.resource_version
    for resource, path in PATHS.items():
        a, b = _http(fast, "GET", path), _http(plain, "GET", path)
        assert a["metadata"] == b["metadata"]
        assert _without_timestamps(a["items"]) == _without_timestamps(b["items"]), resource
    # Both ways leave the same watch history: a watcher cannot tell them apart.
    assert fast.history("pods") == plain.history("pods")


def test_load_cluster_spreads_running_pods_over_the_nodes(kube_api: KubeApiServer) -> None:
    load_cluster(kube_api, 2, running_pods=3, pending_pods=1, group_size=2)
    pods = {p["metadata"]["name"]: p for p in kube_api.list("pods")}
    assert [(p["spec"].get("nodeName"), p["status"]["phase"]) for p in pods.values()] == [
        ("node-00000", "Running"),
        ("node-00001", "Running"),
        ("node-00000", "Running"),
        (None, "Pending"),
    ]
    groups = {p["metadata"]["name"]: p["status"]["phase"] for p in kube_api.list("podgroups")}
    assert groups == {"pg-00000": "Running", "pg-00001": "Pending"}
    assert pods["pod-00003"]["metadata"]["annotations"] == {"scheduling.k8s.io/group-name": "pg-00001"}
