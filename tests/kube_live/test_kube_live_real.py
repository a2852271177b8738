"""The live adapter against a real kube-apiserver only: what the stand-in cannot show.

deploy/rbac.yaml's role and nothing else, Events and status subresources as
the real server stores them, HyperNodes, watch expiry by etcd compaction, the
API server restarted, ``serve`` killed mid-gang, leader election between two
``serve`` processes, binds answered ``409`` and ``404``, and jobs run to the
end by ``volcanolib kubelet-sim``. Each test is skipped without ``go``
(see ``tests/realcluster.py``).
"""

from __future__ import annotations

import os
import signal
import subprocess
import sys
import threading
import time
from collections import Counter
from collections.abc import Callable, Iterator
from pathlib import Path
from typing import Any
from urllib.parse import parse_qs, urlsplit

import pytest
import yaml
from conftest_helpers import cycle, eventually, settle
from kube_api import make_node, make_pod, make_podgroup, make_queue
from realcluster import RealCluster, RealServer

from volcanolib.api.task import TaskStatus
from volcanolib.kube.live import load_api
from volcanolib.kube.live.cache import KubernetesCache
from volcanolib.kube.live.kubelet import KubeletSim
from volcanolib.kube.live.serve import Server
from volcanolib.scheduler import Scheduler

DEPLOY = Path(__file__).resolve().parents[2] / "deploy"
TOPOLOGY_CONF = """actions: "enqueue, allocate"
tiers:
- plugins: [{name: priority}, {name: gang}]
- plugins: [{name: predicates}, {name: nodeorder}, {name: network-topology-aware}]
"""


@pytest.fixture
def real(real_cluster: RealCluster) -> Iterator[RealServer]:
    """The session's real server, emptied, with the default queue; deleted pods are removed."""
    real_cluster.reset()
    handle = RealServer(real_cluster)
    handle.create("queues", make_queue("default"))
    handle.finalize_deleted_pods()
    yield handle
    handle.close()


def _serve(kubeconfig: Path, stop: threading.Event, **options: Any) -> tuple[Server, threading.Thread]:
    serve = Server(load_api(str(kubeconfig)), period=0.05, **options)
    thread = threading.Thread(target=serve.run, args=(stop,), daemon=True)
    thread.start()
    return serve, thread


def _bound(server: Any, names: list[str], namespace: str = "default") -> bool:
    return all(server.get("pods", n, namespace)["spec"].get("nodeName") for n in names)


def _topology(server: Any) -> None:
    """Two racks of two 2-cpu nodes, one rack's first node full: a gang of two 2-cpu pods fits one rack only."""
    for rack in ("r0", "r1"):
        for n in range(2):
            server.create("nodes", make_node(f"{rack}-n{n}", cpu="2"))
        member = {"type": "Node", "selector": {"regexMatch": {"pattern": f"^{rack}-"}}}
        server.create(
            "hypernodes",
            {"apiVersion": "topology.volcano.sh/v1alpha1", "kind": "HyperNode", "metadata": {"name": f"rack-{rack}"},
             "spec": {"tier": 1, "members": [member]}},
        )  # fmt: skip
    server.create("pods", make_pod("busy", cpu="2", node_name="r0-n0", scheduler_name="default-scheduler"))
    group = make_podgroup("gang", min_member=2)
    group["spec"]["networkTopology"] = {"mode": "hard", "highestTierAllowed": 1}
    server.create("podgroups", group)
    for i in range(2):
        server.create("pods", make_pod(f"gang-{i}", cpu="2", group="gang"))


# ---------------------------------------------------------------------- RBAC


def _rbac_identity(real: RealServer) -> tuple[str, str]:
    """deploy/'s namespace, ServiceAccount, ClusterRole and binding applied; a token of that account."""
    cluster = real.cluster
    cluster.apply_manifests(DEPLOY / "namespace.yaml")
    cluster.apply_manifests(DEPLOY / "rbac.yaml")
    (account,) = [d for d in yaml.safe_load_all((DEPLOY / "rbac.yaml").read_text()) if d["kind"] == "ServiceAccount"]
    namespace, name = account["metadata"]["namespace"], account["metadata"]["name"]
    return cluster.service_account(name, namespace), f"system:serviceaccount:{namespace}:{name}"


def _granted() -> set[tuple[str, str, str]]:
    (role,) = [d for d in yaml.safe_load_all((DEPLOY / "rbac.yaml").read_text()) if d["kind"] == "ClusterRole"]
    return {(g, r, v) for rule in role["rules"] for g in rule["apiGroups"] for r in rule["resources"]
            for v in rule["verbs"]}  # fmt: skip


def _needed(event: dict[str, Any]) -> tuple[str, str, str]:
    ref = event.get("objectRef") or {}
    resource = ref.get("resource", "") + (f"/{ref['subresource']}" if ref.get("subresource") else "")
    return ref.get("apiGroup", ""), resource, event["verb"]


def test_serve_needs_nothing_but_the_cluster_role_of_deploy(real: RealServer, tmp_path: Path) -> None:
    token, user = _rbac_identity(real)
    kubeconfig = real.cluster.write_kubeconfig(tmp_path / "kubeconfig", token)
    conf = tmp_path / "volcano-scheduler.conf"
    conf.write_text(TOPOLOGY_CONF)  # HyperNodes are watched too
    _topology(real)
    real.create("nodes", make_node("spare", cpu="4"))
    for name in ("victim-a", "victim-b"):
        real.create("pods", make_pod(name, cpu="1", node_name="spare"))
    stop = threading.Event()
    serve, thread = _serve(kubeconfig, stop, conf=str(conf), leader_elect=True, lock_namespace="volcanolib-system",
                           lease=(4.0, 2.5, 0.2))  # fmt: skip
    cache = serve.cache
    eventually(lambda: _bound(real, ["gang-0", "gang-1"]), 30, "the gang")
    # A pod bound by someone else while serve's bind of it waits: the bind is refused (409), the pod re-read.
    cache.bind_pool.hold()
    real.create("pods", make_pod("taken", cpu="1"))
    eventually(lambda: any(t.name == "taken" and t.node_name for t in cache.tasks()), 30, "serve to bind it")
    real.bind("taken", "r0-n1")
    cache.bind_pool.release()
    eventually(lambda: any(t.name == "taken" and t.node_name == "r0-n1" for t in cache.tasks()), 30, "the re-read")
    victims = {t.name: t for t in cache.tasks() if t.name.startswith("victim")}
    cache.evict(victims["victim-a"], "preempt")  # Volcano's way: conditions, then delete
    cache.evictor.eviction_api = True  # type: ignore[attr-defined]
    cache.evict(victims["victim-b"], "reclaim")  # through the Eviction API
    eventually(lambda: cache.flush(1), 30, "the writes")
    stop.set()
    thread.join(30)

    events = real.cluster.audit(user, load_api(str(kubeconfig)))
    refused = sorted({(e["verb"], e["requestURI"]) for e in events if e["responseStatus"]["code"] == 403})
    assert refused == []
    used = {_needed(e) for e in events if e["requestURI"] != "/version" and not e["requestURI"].startswith("/version?")}
    assert used == _granted()


# ---------------------------------------------------------------------- HyperNodes


def test_hyper_nodes_are_watched_when_network_topology_aware_is_configured(real: RealServer, tmp_path: Path) -> None:
    conf = tmp_path / "volcano-scheduler.conf"
    conf.write_text(TOPOLOGY_CONF)
    _topology(real)
    stop = threading.Event()
    serve, thread = _serve(real.write_kubeconfig(tmp_path / "kubeconfig"), stop, conf=str(conf))
    try:
        eventually(lambda: _bound(real, ["gang-0", "gang-1"]), 30, "the gang")
        assert sorted(h.name for h in serve.cache.hyper_nodes()) == ["rack-r0", "rack-r1"]
        # The whole gang in the rack with room for it, as its PodGroup's hard topology asks.
        assert {real.get("pods", f"gang-{i}")["spec"]["nodeName"] for i in range(2)} == {"r1-n0", "r1-n1"}
        # A HyperNode deleted leaves the cache too.
        real.delete("hypernodes", "rack-r0")
        eventually(lambda: [h.name for h in serve.cache.hyper_nodes()] == ["rack-r1"], what="the deletion")
    finally:
        stop.set()
        thread.join(30)


def test_without_network_topology_aware_hyper_nodes_are_not_watched(real: RealServer, tmp_path: Path) -> None:
    stop = threading.Event()
    serve, thread = _serve(real.write_kubeconfig(tmp_path / "kubeconfig"), stop)
    try:
        eventually(lambda: serve.cycles > 0, 30, "a cycle")
        assert "hypernodes" not in [r.kind for r in serve.cache.reflectors]
        assert real.requests("GET", "/hypernodes") == []
    finally:
        stop.set()
        thread.join(30)
