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


# ---------------------------------------------------------------------- what the real server stores


def test_events_and_status_are_stored_as_the_real_server_keeps_them(real: RealServer, tmp_path: Path) -> None:
    real.create("nodes", make_node("n0", cpu="2"))
    real.create("podgroups", make_podgroup("fits", min_member=2))
    real.create("podgroups", make_podgroup("waits", min_member=2))
    for i in range(2):
        real.create("pods", make_pod(f"fits-{i}", cpu="1", group="fits"))
        real.create("pods", make_pod(f"waits-{i}", cpu="2", group="waits"))
    cache = KubernetesCache(load_api(str(real.write_kubeconfig(tmp_path / "kubeconfig"))))
    cache.start()
    try:
        assert cache.wait_ready(30)
        scheduler = Scheduler(cache)
        for _ in range(3):
            cycle(scheduler, cache)
            settle(real, cache)
    finally:
        cache.stop(10)
    # Queue status through queues/status (the CRD's status subresource), PodGroup status through the
    # object itself (its CRD has none); every write accepted.
    writes = real.requests("PATCH")
    assert {code for _, _, code in writes} == {200}
    assert any(path.startswith("/apis/scheduling.volcano.sh/v1beta1/queues/default/status") for _, path, _ in writes)
    assert any(path.startswith("/apis/scheduling.volcano.sh/v1beta1/namespaces/default/podgroups/fits?")
               or path == "/apis/scheduling.volcano.sh/v1beta1/namespaces/default/podgroups/fits"
               for _, path, _ in writes)  # fmt: skip
    assert real.get("queues", "default")["status"]["allocated"]["cpu"] == "2"
    assert real.get("podgroups", "fits")["status"]["phase"] == "Running"
    waiting = real.get("podgroups", "waits")["status"]
    assert [(c["type"], c["reason"]) for c in waiting["conditions"]] == [("Unschedulable", "NotEnoughResources")]
    condition = next(c for c in real.get("pods", "waits-0")["status"]["conditions"] if c["type"] == "PodScheduled")
    assert (condition["status"], condition["reason"]) == ("False", "Unschedulable")
    # Events: accepted (201) and stored against their objects.
    assert {code for _, _, code in real.requests("POST", "/events")} == {201}
    events = [(e["involvedObject"]["kind"], e["involvedObject"]["name"], e["reason"], e["type"])
              for e in real.list("events", "default")]  # fmt: skip
    assert ("Pod", "fits-0", "Scheduled", "Normal") in events and ("Pod", "fits-1", "Scheduled", "Normal") in events
    assert ("PodGroup", "waits", "Unschedulable", "Warning") in events
    pod_uid = real.get("pods", "fits-0")["metadata"]["uid"]
    scheduled = next(e for e in real.list("events", "default") if e["involvedObject"]["name"] == "fits-0")
    assert scheduled["involvedObject"]["uid"] == pod_uid and scheduled["source"]["component"] == "volcano"


# ---------------------------------------------------------------------- binds the real server refuses


def test_a_bind_answered_409_or_404_leaves_the_cache_as_the_server_is(real: RealServer, tmp_path: Path) -> None:
    for name in ("n0", "n1"):
        real.create("nodes", make_node(name))
    real.create("pods", make_pod("bound-meanwhile"))
    real.create("pods", make_pod("deleted-meanwhile"))
    cache = KubernetesCache(load_api(str(real.write_kubeconfig(tmp_path / "kubeconfig"))))
    cache.start()
    try:
        assert cache.wait_ready(30)
        with cache.lock:  # the cache still holds both pods Pending when the cycle decides
            real.bind("bound-meanwhile", "n1")
            real.delete("pods", "deleted-meanwhile", grace_period=0)
            result = Scheduler(cache).run_once()
            assert sorted(t.name for t, _ in result.binds) == ["bound-meanwhile", "deleted-meanwhile"]
        assert cache.flush(30)
        settle(real, cache)
        binds = {path.split("/")[-2]: code for _, path, code in real.requests("POST", "/binding")}
        assert binds == {"bound-meanwhile": 409, "deleted-meanwhile": 404}
        (task,) = cache.tasks()
        assert (task.name, task.node_name, task.status) == ("bound-meanwhile", "n1", TaskStatus.BOUND)
        assert cache.consistency_problems() == []
    finally:
        cache.stop(10)


def test_eviction_through_the_eviction_api_removes_the_pod(real: RealServer, tmp_path: Path) -> None:
    real.create("nodes", make_node("n0"))
    real.create("pods", make_pod("victim", node_name="n0"))
    cache = KubernetesCache(load_api(str(real.write_kubeconfig(tmp_path / "kubeconfig"))), eviction_api=True)
    cache.start()
    try:
        assert cache.wait_ready(30)
        (task,) = cache.tasks()
        cache.evict(task, "reclaim")
        assert [(code) for _, _, code in real.requests("POST", "/pods/victim/eviction")] == [201]
        eventually(lambda: real.find("pods", "victim") is None, 30, "the pod to go")
        eventually(lambda: cache.get_task(task.uid) is None, 30, "the cache to drop it")
    finally:
        cache.stop(10)


# ---------------------------------------------------------------------- a cluster that runs jobs to the end


def test_serve_and_kubelet_sim_run_gangs_to_the_end(real: RealServer, tmp_path: Path) -> None:
    kubeconfig = real.write_kubeconfig(tmp_path / "kubeconfig")
    sim = KubeletSim(load_api(str(kubeconfig)), [f"sim-{i}" for i in range(3)], pod_startup=0.2)
    sim.start()
    stop = threading.Event()
    _, thread = _serve(kubeconfig, stop)
    try:
        for job, (size, exit_code) in {"ok": (3, "0"), "bad": (2, "1")}.items():
            real.create("podgroups", make_podgroup(job, min_member=size))
            for i in range(size):
                pod = make_pod(f"{job}-{i}", cpu="2", group=job)
                pod["metadata"]["annotations"].update(
                    {"volcanolib.io/duration": "1s", "volcanolib.io/exit-code": exit_code}
                )
                real.create("pods", pod)
        phases = lambda: {p["metadata"]["name"]: p["status"]["phase"] for p in real.list("pods")}  # noqa: E731
        eventually(lambda: set(phases().values()) <= {"Succeeded", "Failed"}, 60, "every pod to end")
        assert phases() == {"ok-0": "Succeeded", "ok-1": "Succeeded", "ok-2": "Succeeded",
                            "bad-0": "Failed", "bad-1": "Failed"}  # fmt: skip
        # The PodGroups follow: the scheduler counts what ended.
        eventually(lambda: real.get("podgroups", "ok")["status"].get("succeeded") == 3, 30, "the counts")
        eventually(lambda: real.get("podgroups", "bad")["status"].get("failed") == 2, 30, "the counts")
        # the simulator counts an end once its status write is answered, which on a loaded machine can come
        # after the scheduler has already seen the pod end and counted it
        eventually(lambda: (sim.started, sim.ended) == (5, 5), 10, "the simulator to count what it ran")
        assert (sim.started, sim.ended, sim.removed) == (5, 5, 0)
    finally:
        stop.set()
        thread.join(30)
        sim.stop()


# ---------------------------------------------------------------------- serve processes: leader election, SIGKILL


def _serve_process(kubeconfig: Path, *flags: str) -> subprocess.Popen[str]:
    env = {k: v for k, v in os.environ.items() if k != "PYTEST_ADDOPTS"}
    return subprocess.Popen(
        [sys.executable, "-m", "volcanolib", "serve", "--kubeconfig", str(kubeconfig), "--period", "0.05",
         "--metrics-address", "127.0.0.1:0", *flags],
        stdout=subprocess.PIPE, stderr=subprocess.PIPE, text=True, env=env,
    )  # fmt: skip


@pytest.fixture
def processes() -> Iterator[list[subprocess.Popen[str]]]:
    started: list[subprocess.Popen[str]] = []
    yield started
    for process in started:
        if process.poll() is None:
            process.kill()
        process.communicate(timeout=30)


def _binds_per_pod(real: RealServer) -> dict[str, list[int]]:
    binds: dict[str, list[int]] = {}
    for _, path, code in real.requests("POST", "/binding"):
        binds.setdefault(path.split("/")[-2], []).append(code)
    return binds


def test_two_serve_processes_on_a_lease_and_the_leader_killed(
    real: RealServer, tmp_path: Path, processes: list[subprocess.Popen[str]]
) -> None:
    kubeconfig = real.write_kubeconfig(tmp_path / "kubeconfig")
    real.create("nodes", make_node("n0", pods="100"))
    flags = ("--leader-elect", "--lock-namespace", "default")
    processes.append(_serve_process(kubeconfig, *flags))
    first = [f"first-{i}" for i in range(5)]
    for name in first:
        real.create("pods", make_pod(name, cpu="100m"))
    eventually(lambda: _bound(real, first), 60, "the leader to bind")
    leader = real.get("leases", "volcano")["spec"]["holderIdentity"]
    processes.append(_serve_process(kubeconfig, *flags))  # the standby: it waits for the Lease
    time.sleep(3)
    assert real.get("leases", "volcano")["spec"]["holderIdentity"] == leader
    processes[0].send_signal(signal.SIGKILL)  # no release: the standby takes over once the Lease expires
    killed = time.monotonic()
    second = [f"second-{i}" for i in range(5)]
    for name in second:
        real.create("pods", make_pod(name, cpu="100m"))
    eventually(lambda: _bound(real, second), 60, "the standby to take over and bind")
    took_over = time.monotonic() - killed
    lease = real.get("leases", "volcano")["spec"]
    assert lease["holderIdentity"] not in ("", leader)
    assert lease["leaseTransitions"] >= 1
    assert took_over >= 10  # not before the killed leader's Lease ran out (15 s, renewed every 2 s)
    assert _binds_per_pod(real) == {name: [201] for name in first + second}
    assert processes[1].poll() is None


def test_serve_killed_mid_gang_and_restarted_binds_the_rest_once(
    real: RealServer, tmp_path: Path, processes: list[subprocess.Popen[str]]
) -> None:
    kubeconfig = real.write_kubeconfig(tmp_path / "kubeconfig")
    nodes, size = 50, 200
    for i in range(nodes):
        real.create("nodes", make_node(f"n{i}", cpu="4", memory="64Gi"))
    real.create("podgroups", make_podgroup("gang", min_member=size))
    names = [f"gang-{i}" for i in range(size)]
    for name in names:
        real.create("pods", make_pod(name, cpu="1", memory="1Gi", group="gang"))
    api = real.cluster.admin

    def bound() -> int:
        page = api.request("GET", "/api/v1/namespaces/default/pods", query={"fieldSelector": "spec.nodeName!="})
        return len(page["items"])

    processes.append(_serve_process(kubeconfig))
    while not bound():
        assert processes[0].poll() is None, processes[0].communicate()[1]
    processes[0].send_signal(signal.SIGKILL)
    processes[0].wait(30)
    time.sleep(0.5)
    half = bound()
    assert 0 < half < size, "serve was to be killed mid-gang"
    processes.append(_serve_process(kubeconfig))
    eventually(lambda: bound() == size, 120, "the restarted serve to bind the rest")
    # The killed process's binds in flight are logged 504 (its connection went away), whether or not they
    # landed; a loaded API server may also answer a bind 500 (etcd timed out), landed or not, and serve
    # tries it again. No pod is bound twice. A pod is tried again (409) only when such a bind landed
    # after serve listed it or tried again: at most one per bind whose answer left that open.
    binds = _binds_per_pod(real)
    answered = {name: [code for code in codes if code != 504] for name, codes in binds.items()}
    odd = {name: codes for name, codes in binds.items() if [c for c in codes if c != 504] not in ([201], [])}
    assert all(codes.count(201) <= 1 and set(codes) <= {201, 409, 500, 504} for codes in binds.values()), odd
    in_flight = sum(codes.count(504) + codes.count(500) for codes in binds.values())
    assert sum(codes.count(409) for codes in binds.values()) <= in_flight, odd
    assert sorted(answered) == sorted(names)
    per_node = Counter(p["spec"]["nodeName"] for p in real.list("pods"))
    assert max(per_node.values()) <= 4  # no node over-committed
    print(f"killed with {half} of {size} bound")


# ---------------------------------------------------------------------- the API server and etcd


def test_a_watch_expired_by_etcd_compaction_is_listed_again(
    make_control_plane: Callable[..., RealCluster], tmp_path: Path
) -> None:
    # Without the watch cache, watches read etcd, so a compacted resourceVersion is 410 Gone.
    cluster = make_control_plane(audit=True, apiserver_args=["--watch-cache=false"])
    real = RealServer(cluster)
    real.create("queues", make_queue("default"))
    real.create("nodes", make_node("n0", pods="50"))
    real.create("podgroups", make_podgroup("g", min_member=1))
    for i in range(10):
        real.create("pods", make_pod(f"p{i}", cpu="100m", group="g"))
    cache = KubernetesCache(load_api(str(real.write_kubeconfig(tmp_path / "kubeconfig"))), watch_timeout=1)
    cache.start()
    try:
        assert cache.wait_ready(30)
        pods = next(r for r in cache.reflectors if r.kind == "pods")
        with cache.lock:
            # The pods watch gets this event and waits for the lock; its stream ends meanwhile (1 s), so the
            # changes below reach it only by a new watch from its last version, which etcd then no longer has.
            real.create("pods", make_pod("trigger", cpu="100m", group="g"))
            time.sleep(2.5)
            real.delete("pods", "p3", grace_period=0)
            real.delete("pods", "p4", grace_period=0)
            real.create("pods", make_pod("late", cpu="100m", group="g"))
            cluster.compact()
        eventually(lambda: pods.lists >= 2, 30, "a relist")  # listed again only after a 410
        settle(real, cache)
        expected = sorted([f"p{i}" for i in range(10) if i not in (3, 4)] + ["trigger", "late"])
        assert sorted(t.name for t in cache.tasks()) == expected
        assert cache.consistency_problems() == []
        # And it goes on: the pods bind.
        result = cycle(Scheduler(cache), cache)
        assert sorted(t.name for t, _ in result.binds) == expected
    finally:
        cache.stop(10)


def test_serve_goes_on_after_the_api_server_restarts(
    make_control_plane: Callable[..., RealCluster], tmp_path: Path
) -> None:
    cluster = make_control_plane(audit=True)
    real = RealServer(cluster)
    real.create("queues", make_queue("default"))
    real.create("nodes", make_node("n0", pods="50"))
    stop = threading.Event()
    serve, thread = _serve(real.write_kubeconfig(tmp_path / "kubeconfig"), stop)
    try:
        before = [f"before-{i}" for i in range(3)]
        for name in before:
            real.create("pods", make_pod(name, cpu="100m"))
        eventually(lambda: _bound(real, before), 30, "the first pods")
        kept = load_api(str(real.write_kubeconfig(tmp_path / "kept")))
        assert kept.direct and kept.request("GET", "/version")["major"] == "1"  # a connection kept alive
        cluster.restart()  # same ports, same etcd data, same credentials
        # The kept connection is dead (its server exited without closing TLS): replaced, not an error.
        assert kept.request("GET", "/version")["major"] == "1"
        after = [f"after-{i}" for i in range(3)]
        for name in after:
            real.create("pods", make_pod(name, cpu="100m"))
        eventually(lambda: _bound(real, after), 90, "the pods made after the restart")
        assert thread.is_alive()
        settle(real, serve.cache)
        assert serve.cache.consistency_problems() == []
        assert _binds_per_pod(real) == {name: [201] for name in before + after}
    finally:
        stop.set()
        thread.join(30)
