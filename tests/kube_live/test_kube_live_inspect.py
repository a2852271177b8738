"""Why is it pending, would it fit, on a live cluster: serve's /explain and /dryrun, explain --kubeconfig.

Each test runs against every API server of ``api_server``. The dry runs
are checked against the server's request log: nothing is written while one
runs (no bind, no eviction, no status, no event).
"""

from __future__ import annotations

import datetime
import http.client
import json
import re
import socket
import threading
import time
from collections.abc import Iterator
from pathlib import Path
from typing import Any

import pytest
import yaml
from conftest_helpers import ApiServer, eventually
from kube_api import make_node, make_pod, make_podgroup, make_queue

from volcanolib.cli import main
from volcanolib.kube.live import load_api
from volcanolib.kube.live.inspect import MAX_BODY
from volcanolib.kube.live.serve import Server

TIERS = """
tiers:
- plugins:
  - name: priority
  - name: gang
  - name: conformance
- plugins:
  - name: drf
  - name: predicates
  - name: proportion
  - name: nodeorder
"""
#: With preemption (the dry runs), and without (a pending gang: nothing moves).
CONF = 'actions: "enqueue, allocate, preempt, backfill"' + TIERS
QUIET_CONF = 'actions: "enqueue, allocate, backfill"' + TIERS
WRITES = ("POST", "PUT", "PATCH", "DELETE")


def _priority_class(name: str, value: int) -> dict[str, Any]:
    return {
        "apiVersion": "scheduling.k8s.io/v1",
        "kind": "PriorityClass",
        "metadata": {"name": name},
        "value": value,
    }


def _job(
    name: str, *, replicas: int = 1, cpu: str = "1", min_available: int | None = None, **spec: Any
) -> dict[str, Any]:
    """A Volcano Job of one task."""
    template = {
        "spec": {
            "containers": [
                {"name": "main", "image": "busybox", "resources": {"requests": {"cpu": cpu, "memory": "1Gi"}}}
            ]
        }
    }
    body: dict[str, Any] = {"tasks": [{"name": "work", "replicas": replicas, "template": template}], **spec}
    if min_available is not None:
        body["minAvailable"] = min_available
    return {"apiVersion": "batch.volcano.sh/v1alpha1", "kind": "Job", "metadata": {"name": name}, "spec": body}


class Http:
    """Requests to serve's HTTP address."""

    def __init__(self, serve: Server) -> None:
        self.host, self.port = serve.http.server_address[:2]

    def request(
        self, method: str, path: str, body: bytes | None = None, headers: dict[str, str] | None = None
    ) -> tuple[int, Any]:
        conn = http.client.HTTPConnection(self.host, self.port, timeout=60)
        try:
            conn.request(method, path, body=body, headers=headers or {})
            answer = conn.getresponse()
            data = answer.read()
            kind = answer.getheader("Content-Type", "")
        finally:
            conn.close()
        return answer.status, json.loads(data) if kind == "application/json" else data.decode()

    def dry_run(self, obj: Any, *, as_yaml: bool = True) -> tuple[int, Any]:
        text = yaml.safe_dump_all(obj) if as_yaml and isinstance(obj, list) else yaml.safe_dump(obj)
        if not as_yaml:
            text = json.dumps(obj)
        return self.request("POST", "/dryrun", text.encode(), {"Content-Type": "application/yaml"})


@pytest.fixture
def conf(tmp_path: Path) -> Path:
    path = tmp_path / "volcano-scheduler.conf"
    path.write_text(CONF)
    return path


@pytest.fixture
def quiet_conf(tmp_path: Path) -> Path:
    path = tmp_path / "quiet.conf"
    path.write_text(QUIET_CONF)
    return path


def _serve(kubeconfig: Path, conf: Path, **options: Any) -> Iterator[Server]:
    serve = Server(load_api(str(kubeconfig)), conf=str(conf), period=0.05, metrics_address=("127.0.0.1", 0), **options)
    stop = threading.Event()
    thread = threading.Thread(target=serve.run, args=(stop,), daemon=True)
    thread.start()
    try:
        eventually(lambda: serve.cycles > 2, what="cycles")
        yield serve
    finally:
        stop.set()
        thread.join(10)


def _quiet(api_server: ApiServer, seconds: float = 0.6) -> int:
    """Wait until the server received no write for ``seconds``; return how many requests it answered so far."""

    def still() -> int | None:
        count = len(api_server.requests())
        time.sleep(seconds)
        later = api_server.requests()
        new_writes = [r for r in later[count:] if r[0] in WRITES]
        return None if new_writes else len(later)

    found: int = eventually(still, timeout=20, what="the server to receive no more writes")
    return found


def _writes_since(api_server: ApiServer, mark: int) -> list[tuple[str, str, int]]:
    return [r for r in api_server.requests()[mark:] if r[0] in WRITES]


# ---------------------------------------------------------------------------- a pending gang


@pytest.fixture
def waiting(api_server: ApiServer, api_kubeconfig: Path, quiet_conf: Path) -> Iterator[tuple[Server, ApiServer]]:
    """serve on three nodes of 4 to 4.8 cpu: gang ``wide`` (4 pods of 2.5 cpu) waits; ``capped`` waits for its queue.

    The nodes differ, so that each cycle places the gang's pods alike (their
    conditions then stop changing, and the cluster gets quiet).
    """
    for name, cpu in (("n0", "4"), ("n1", "4400m"), ("n2", "4800m")):
        api_server.create("nodes", make_node(name, cpu=cpu, memory="16Gi", pods="10"))
    queue = make_queue("capped")
    queue["spec"]["capability"] = {"cpu": "2"}
    api_server.create("queues", queue)
    api_server.create("podgroups", make_podgroup("wide", min_member=4))
    for i in range(4):
        api_server.create("pods", make_pod(f"wide-{i}", cpu="2500m", memory="1Gi", group="wide"))
    group = make_podgroup("capped", min_member=2, queue="capped")
    group["spec"]["minResources"] = {"cpu": "3"}
    api_server.create("podgroups", group)
    for i in range(2):
        api_server.create("pods", make_pod(f"capped-{i}", cpu="1500m", memory="1Gi", group="capped"))
    for serve in _serve(api_kubeconfig, quiet_conf):
        yield serve, api_server


def _condition(api_server: ApiServer, group: str) -> str:
    for cond in (api_server.get("podgroups", group).get("status") or {}).get("conditions") or []:
        if cond["type"] == "Unschedulable":
            return str(cond["message"])
    return ""


def test_a_pending_gangs_reason_names_the_nodes_shortfall_where_users_look(
    waiting: tuple[Server, ApiServer],
) -> None:
    serve, api_server = waiting
    message = eventually(lambda: _condition(api_server, "wide"), what="the Unschedulable condition")
    # Volcano's text first (its reason is NotEnoughResources), then the shortfall in numbers.
    pattern = (
        r"1/4 tasks in gang unschedulable: pod group is not ready, 4 Pending, 4 minAvailable; "
        r"Pending: 1 Unschedulable, 3 Schedulable\. Origin reason is (wide-\d): 0/3 nodes are available: "
        r"3 Insufficient cpu\. Short of nodes: the gang needs 4 more pod\(s\), room was found for 3; "
        r"the next, default/(wide-\d), asks cpu 2500m, memory 1Gi and fits no node\."
    )
    found = re.fullmatch(pattern, message)
    assert found is not None, message
    unplaced = found.group(1)
    assert found.group(2) == unplaced

    def failed_scheduling() -> list[str]:
        return [
            e["message"]
            for e in api_server.list("events")
            if e.get("reason") == "FailedScheduling" and e["involvedObject"]["name"] == unplaced
        ]

    (event,) = eventually(failed_scheduling, what="the FailedScheduling event")
    assert event.startswith("0/3 nodes are available: 3 Insufficient cpu. Short of nodes: the gang needs 4 more")
    pod = api_server.get("pods", unplaced)
    (cond,) = [c for c in pod["status"]["conditions"] if c["type"] == "PodScheduled"]
    assert (cond["status"], cond["reason"], cond["message"]) == ("False", "Unschedulable", event)
    assert serve.cycles > 2


def test_explain_endpoint_names_the_shortfall_of_a_pending_gang(waiting: tuple[Server, ApiServer]) -> None:
    serve, api_server = waiting
    eventually(lambda: _condition(api_server, "capped") and _condition(api_server, "wide"), what="conditions")
    code, answer = Http(serve).request("GET", "/explain/default/wide")
    assert code == 200, answer
    assert answer["podGroup"] == "default/wide"
    assert answer["reason"] == _condition(api_server, "wide")  # as the scheduler last wrote it
    assert answer["minMember"] == 4 and answer["phase"] == "Inqueue"
    nodes = answer["shortfall"]["nodes"]
    assert len(nodes) == 1, nodes
    (room,) = nodes
    assert (room["nodesWithRoom"], room["room"], room["pending"], room["totalNodes"]) == (3, 3, 4, 3)
    assert room["request"] == {"cpu": "2500m", "memory": "1Gi"}
    text = "3 of 3 nodes have cpu 2500m, memory 1Gi idle, room for 3 of the 4 pending pod(s)"
    assert text in answer["shortfall"]["text"]
    (pod,) = answer["pods"]
    assert pod["summary"] == "3/3 nodes are available." and pod["similar"] == 3

    code, capped = Http(serve).request("GET", "/explain/default/capped?maxNodes=1")
    assert code == 200, capped
    (queue,) = capped["shortfall"]["queue"]
    assert queue == {
        "plugin": "proportion",
        "queue": "capped",
        "step": "enqueue",
        "limit": "capability",
        "limitResources": {"cpu": "2"},
        "held": {"cpu": "0"},
        "need": {"cpu": "3"},
        "short": {"cpu": "1"},
    }
    assert "queue capped is short of cpu 1 for this gang (proportion)" in capped["reason"]
    assert len(capped["pods"][0]["nodes"]) == 1 and capped["pods"][0]["nodesOmitted"] == 2
    # A bare name unique across namespaces is enough; an unknown one is a JSON 404 naming the closest.
    assert Http(serve).request("GET", "/explain/default/wid")[0] == 404
    code, missing = Http(serve).request("GET", "/explain/default/wid")
    assert missing == {"status": 404, "error": "no PodGroup 'default/wid' in the cluster; did you mean default/wide?"}


def test_explain_from_the_command_line_reads_the_cluster_and_writes_nothing(
    waiting: tuple[Server, ApiServer], api_kubeconfig: Path, quiet_conf: Path, capsys: pytest.CaptureFixture[str]
) -> None:
    _, api_server = waiting
    eventually(lambda: _condition(api_server, "wide"), what="the condition")
    mark = _quiet(api_server)
    conf = str(quiet_conf)
    code = main(["explain", "--kubeconfig", str(api_kubeconfig), "--conf", conf, "default/wide", "--json"])
    out = capsys.readouterr().out
    assert code == 0
    answer = json.loads(out)
    assert answer["shortfall"]["nodes"][0]["room"] == 3
    assert answer["reason"].startswith("1/4 tasks in gang unschedulable")
    code = main(["explain", "--kubeconfig", str(api_kubeconfig), "--conf", conf, "capped"])
    text = capsys.readouterr().out
    assert code == 0
    assert "Short of queue room: queue capped is short of cpu 1 for this gang (proportion)" in text
    assert "Pending pods, checked node by node on the cluster as it is now:" in text
    assert _writes_since(api_server, mark) == []


# ---------------------------------------------------------------------------- dry runs


@pytest.fixture
def busy(api_server: ApiServer, api_kubeconfig: Path, conf: Path) -> Iterator[tuple[Server, ApiServer]]:
    """serve on two 4-cpu nodes, each holding a 3-cpu pod of the low-priority job ``low`` (minMember 1)."""
    api_server.create("priorityclasses", _priority_class("low", 10))
    api_server.create("priorityclasses", _priority_class("high", 1000))
    for name in ("n0", "n1"):
        api_server.create("nodes", make_node(name, cpu="4", memory="16Gi", pods="10"))
    group = make_podgroup("low", min_member=1, phase="Running")
    group["spec"]["priorityClassName"] = "low"
    api_server.create("podgroups", group)
    for i, node in enumerate(("n0", "n1")):
        api_server.create("pods", make_pod(f"low-{i}", cpu="3", group="low", node_name=node, priority_class="low"))
    for serve in _serve(api_kubeconfig, conf):
        yield serve, api_server


def _cluster_state(api_server: ApiServer) -> tuple[Any, ...]:
    pods = sorted(
        (p["metadata"]["name"], p["spec"].get("nodeName"), p["metadata"].get("deletionTimestamp"))
        for p in api_server.list("pods")
    )
    groups = sorted(g["metadata"]["name"] for g in api_server.list("podgroups"))
    return pods, groups


def test_a_dry_run_of_a_job_that_fits_says_where_and_binds_nothing(busy: tuple[Server, ApiServer]) -> None:
    serve, api_server = busy
    before = _cluster_state(api_server)
    mark = _quiet(api_server)
    code, answer = Http(serve).dry_run(_job("small", replicas=2, min_available=2))
    assert code == 200, answer
    assert answer["podGroup"] == "default/small" and answer["admitted"] is True
    assert (answer["outcome"], answer["placed"], answer["evicts"]) == ("bound", True, [])
    assert sorted(p["pod"] for p in answer["pods"]) == ["default/small-work-0", "default/small-work-1"]
    assert {p["how"] for p in answer["pods"]} == {"bound"}
    assert {p["node"] for p in answer["pods"]} == {"n0", "n1"}  # 1 cpu left on each
    assert _writes_since(api_server, mark) == []  # no bind, no status, no event
    assert _cluster_state(api_server) == before
    # The same as JSON.
    code, again = Http(serve).dry_run(_job("small", replicas=2, min_available=2), as_yaml=False)
    assert code == 200 and again["outcome"] == "bound"


def test_a_dry_run_that_needs_preemption_names_its_victims_and_evicts_none(busy: tuple[Server, ApiServer]) -> None:
    serve, api_server = busy
    before = _cluster_state(api_server)
    mark = _quiet(api_server)
    code, answer = Http(serve).dry_run(_job("urgent", cpu="3", priorityClassName="high"))
    assert code == 200, answer
    assert answer["outcome"] == "pipelined" and answer["placed"] is False
    ((pod,),) = [answer["pods"]]
    (victim,) = answer["evicts"]
    assert pod["how"] == "pipelined" and pod["node"] == victim["node"]
    assert victim["pod"] in ("default/low-0", "default/low-1")
    assert (victim["podGroup"], victim["reason"]) == ("default/low", "preempt")
    assert _writes_since(api_server, mark) == []  # no eviction, no delete, no status
    assert _cluster_state(api_server) == before


def test_a_dry_run_of_a_job_that_does_not_fit_says_why(busy: tuple[Server, ApiServer]) -> None:
    serve, _ = busy
    # Admitted (its minimum, one pod of 5 cpu, fits what the queue may hold), but the queue holds 6 of the
    # 8 cpu it deserves: allocate gives it nothing (and no node has 5 cpu, even with victims).
    code, answer = Http(serve).dry_run(_job("huge", replicas=2, cpu="5", min_available=1))
    assert code == 200, answer
    assert (answer["outcome"], answer["placed"], answer["evicts"], answer["phase"]) == ("pending", False, [], "Inqueue")
    assert answer["reason"].startswith("1/2 tasks in gang unschedulable")
    assert answer["shortfall"] == (
        "Short of queue room: queue default is short of cpu 3 for this gang (proportion): it holds cpu 6, "
        "memory 2Gi, the pods the gang still needs ask cpu 5, memory 1Gi more, its deserved share is cpu 8, memory 4Gi."
    )
    assert {p["reason"] for p in answer["pods"]} == {answer["reason"]}
    # Not admitted: its minimum (two pods of 5 cpu) is more than the queue may ever hold.
    code, answer = Http(serve).dry_run(_job("huger", replicas=2, cpu="5", min_available=2))
    assert code == 200, answer
    assert (answer["outcome"], answer["phase"]) == ("not-enqueued", "Pending")
    assert "queue default is short of cpu 2 for this gang (proportion)" in answer["shortfall"]
    assert "its realCapability is cpu 8" in answer["shortfall"]


def test_a_pod_group_with_its_pods_can_be_dry_run(busy: tuple[Server, ApiServer]) -> None:
    serve, _ = busy
    group = make_podgroup("pair", min_member=2)
    pods = [make_pod(f"pair-{i}", cpu="500m", memory="1Gi", group="pair") for i in range(2)]
    code, answer = Http(serve).dry_run({"apiVersion": "v1", "kind": "List", "items": [group, *pods]})
    assert code == 200, answer
    assert answer["podGroup"] == "default/pair" and answer["outcome"] == "bound"


BAD = [
    ("not YAML", b"kind: Job\n  metadata: [", 400, "request body"),
    ("not UTF-8", b"\xff\xfe", 400, "not UTF-8"),
    (
        "unknown kind",
        yaml.safe_dump(make_queue("q")).encode(),
        422,
        "unknown kind Queue (scheduling.volcano.sh/v1beta1)",
    ),
    ("two jobs", yaml.safe_dump_all([_job("a"), _job("b")]).encode(), 422, "one Volcano Job alone"),
    (
        "pod of no group",
        yaml.safe_dump_all([make_podgroup("g"), make_pod("p")]).encode(),
        422,
        "pod p is not a pod of PodGroup g",
    ),
    ("refused", yaml.safe_dump(_job("greedy", replicas=1, min_available=3)).encode(), 422, "minAvailable"),
    ("no queue", yaml.safe_dump(_job("lost", queue="nowhere")).encode(), 422, "nowhere"),
    (
        "exists",
        yaml.safe_dump(make_podgroup("low")).encode() + b"---\n" + yaml.safe_dump(make_pod("x", group="low")).encode(),
        409,
        "already exists",
    ),
]


@pytest.mark.parametrize(("case", "body", "status", "says"), BAD, ids=[b[0] for b in BAD])
def test_bad_dry_runs_are_json_errors(
    busy: tuple[Server, ApiServer], case: str, body: bytes, status: int, says: str
) -> None:
    serve, api_server = busy
    mark = _quiet(api_server)
    code, answer = Http(serve).request("POST", "/dryrun", body, {"Content-Type": "application/yaml"})
    assert (code, answer["status"]) == (status, status), answer
    assert says in answer["error"]
    assert "\n" not in answer["error"]
    assert _writes_since(api_server, mark) == []


def test_requests_that_are_too_large_or_of_the_wrong_method_are_refused(busy: tuple[Server, ApiServer]) -> None:
    serve, _ = busy
    http = Http(serve)
    code, answer = http.request("POST", "/dryrun", b"#" * (MAX_BODY + 1))
    assert code == 413 and answer["error"] == f"the body has {MAX_BODY + 1} bytes; at most {MAX_BODY} are read"
    # A client that asks first is refused before it sends the body.
    with socket.create_connection((http.host, http.port), timeout=10) as sock:
        head = f"POST /dryrun HTTP/1.1\r\nHost: x\r\nContent-Length: {MAX_BODY + 1}\r\nExpect: 100-continue\r\n"
        sock.sendall(f"{head}\r\n".encode())
        chunks = []
        while chunk := sock.recv(65536):  # the server closes once it has answered
            chunks.append(chunk)
    answered = b"".join(chunks).decode()
    assert answered.startswith("HTTP/1.1 413 ") and '"status": 413' in answered
    assert http.request("GET", "/dryrun")[0] == 405
    assert http.request("POST", "/explain/default/low", b"")[0] == 405
    assert http.request("GET", "/explain/low")[0] == 400
    code, metrics = http.request("GET", "/metrics")  # the metrics are served as before
    assert code == 200 and "volcano_e2e_scheduling_latency_milliseconds" in metrics


def test_the_endpoints_can_be_turned_off(api_server: ApiServer, api_kubeconfig: Path, conf: Path) -> None:
    api_server.create("nodes", make_node("n0"))
    for serve in _serve(api_kubeconfig, conf, inspection=False):
        http = Http(serve)
        assert serve.inspector is None
        assert http.request("GET", "/explain/default/anything") == (404, "not found")
        assert http.request("POST", "/dryrun", yaml.safe_dump(_job("a")).encode()) == (404, "not found")
        assert http.request("GET", "/healthz") == (200, "ok")


def test_a_replica_that_does_not_lead_answers_503(api_server: ApiServer, api_kubeconfig: Path, conf: Path) -> None:
    now = datetime.datetime.now(datetime.timezone.utc).strftime("%Y-%m-%dT%H:%M:%S.%fZ")
    lease = {
        "apiVersion": "coordination.k8s.io/v1",
        "kind": "Lease",
        "metadata": {"name": "volcano", "namespace": "default"},
        "spec": {"holderIdentity": "the-other", "leaseDurationSeconds": 600, "acquireTime": now, "renewTime": now},
    }
    api_server.create("leases", lease)
    serve = Server(
        load_api(str(api_kubeconfig)),
        conf=str(conf),
        metrics_address=("127.0.0.1", 0),
        leader_elect=True,
        lock_namespace="default",
        identity="this-one",
        lease=(600.0, 400.0, 0.2),
    )
    stop = threading.Event()
    thread = threading.Thread(target=serve.run, args=(stop,), daemon=True)
    thread.start()
    try:
        eventually(lambda: serve.http is not None and serve.healthy.is_set(), what="the HTTP server")
        code, answer = Http(serve).request("GET", "/explain/default/anything")
        assert code == 503
        assert answer["error"] == (
            "this replica (this-one) is not leading, so it does not watch the cluster: "
            "ask the replica holding Lease default/volcano"
        )
        assert Http(serve).dry_run(_job("a"))[0] == 503
    finally:
        stop.set()
        thread.join(10)


def test_explain_from_the_command_line_without_an_api_server_is_a_one_line_error(
    api_server: ApiServer, api_kubeconfig: Path, capsys: pytest.CaptureFixture[str]
) -> None:
    from realcluster import RealServer

    if isinstance(api_server, RealServer):
        # The handle's kubelet watches pods: its retries while the server is down would be
        # logged, and printed by the command among its own lines.
        api_server.close()
    with api_server.outage():
        code = main(["explain", "--kubeconfig", str(api_kubeconfig), "default/anything"])
    err = capsys.readouterr().err
    assert code == 2
    assert err.startswith("volcanolib: error: cannot list ") and err.count("\n") == 1
    assert err.rstrip().endswith("(and 4 more kind(s))")
