"""deploy/rbac.yaml grants exactly the calls the adapter makes: every one, and nothing more."""

from __future__ import annotations

import threading
from pathlib import Path
from urllib.parse import parse_qs, urlsplit

import yaml
from conftest_helpers import eventually
from kube_api import KubeApiServer, make_node, make_pod, make_podgroup

from volcanolib.kube.live import load_api
from volcanolib.kube.live.serve import Server

RBAC = Path(__file__).resolve().parents[2] / "deploy" / "rbac.yaml"
#: With network-topology-aware, serve also watches HyperNodes.
CONF = """actions: "enqueue, allocate, backfill"
tiers:
- plugins: [{name: priority}, {name: gang}, {name: conformance}]
- plugins: [{name: predicates}, {name: proportion}, {name: nodeorder}, {name: network-topology-aware}]
"""


def granted(path: Path = RBAC) -> set[tuple[str, str, str]]:
    """(API group, resource, verb) for every rule of the ClusterRole of ``path``."""
    (role,) = [d for d in yaml.safe_load_all(path.read_text()) if d and d["kind"] == "ClusterRole"]
    return {
        (group, resource, verb)
        for rule in role["rules"]
        for group in rule["apiGroups"]
        for resource in rule["resources"]
        for verb in rule["verbs"]
    }


def needed(method: str, url: str) -> tuple[str, str, str]:
    """The (API group, resource, verb) a request needs."""
    parts = urlsplit(url)
    segs = [s for s in parts.path.split("/") if s]
    if segs[0] == "api":
        group, rest = "", segs[2:]
    else:
        group, rest = segs[1], segs[3:]
    if rest[:1] == ["namespaces"] and len(rest) > 2:
        rest = rest[2:]
    resource = rest[0] + (f"/{rest[2]}" if len(rest) > 2 else "")
    named = len(rest) > 1
    if method == "GET":
        verb = "get" if named else ("watch" if parse_qs(parts.query).get("watch") == ["true"] else "list")
    else:
        verb = {"POST": "create", "PUT": "update", "PATCH": "patch", "DELETE": "delete"}[method]
    return group, resource, verb


def test_the_cluster_role_grants_exactly_what_serve_uses(
    server: KubeApiServer, kubeconfig: Path, tmp_path: Path
) -> None:
    conf = tmp_path / "volcano-scheduler.conf"
    conf.write_text(CONF)
    server.create("nodes", make_node("n0", cpu="4"))
    server.create("podgroups", make_podgroup("gang", min_member=2))
    for i in range(2):
        server.create("pods", make_pod(f"gang-{i}", cpu="1", group="gang"))
    for name in ("victim-a", "victim-b"):
        server.create("pods", make_pod(name, cpu="1", node_name="n0", phase="Running"))
    server.fail_next_binds(1, 500)  # a failed bind re-reads its pod and writes its condition
    serve = Server(load_api(str(kubeconfig)), conf=str(conf), period=0.05, leader_elect=True, lock_namespace="default",
                   lease=(4.0, 2.5, 0.2))  # fmt: skip
    stop = threading.Event()
    thread = threading.Thread(target=serve.run, args=(stop,), daemon=True)
    thread.start()
    eventually(lambda: all(server.get("pods", f"gang-{i}")["spec"].get("nodeName") for i in range(2)), 30)
    cache = serve.cache
    victims = {t.name: t for t in cache.tasks() if t.name.startswith("victim")}
    cache.evict(victims["victim-a"], "preempt")  # Volcano's way: conditions, then delete
    cache.evictor.eviction_api = True  # type: ignore[attr-defined]
    cache.evict(victims["victim-b"], "reclaim")  # through the Eviction API
    eventually(lambda: cache.flush(1) and server.requests("POST", "/events"), 30, "an event")
    stop.set()
    thread.join(30)

    used = {needed(method, url) for method, url, _ in server.requests()}
    assert used == granted()
