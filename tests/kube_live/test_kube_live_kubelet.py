"""``volcanolib kubelet-sim``: nodes registered and kept Ready, bound pods run to their end, deleted pods removed."""

from __future__ import annotations

import logging
import os
import signal
import subprocess
import sys
import time
from collections.abc import Callable, Iterator
from pathlib import Path
from typing import Any

import pytest
from conftest_helpers import api_server, eventually
from kube_api import make_pod

from volcanolib.cli import main
from volcanolib.kube.live import load_api
from volcanolib.kube.live.kubelet import KubeletSim, NodeShape
from volcanolib.manifests.fields import format_timestamp


@pytest.fixture
def server(request: pytest.FixtureRequest) -> Iterator[Any]:
    """The API server, with nobody but the simulator to remove deleted pods."""
    yield from api_server(request, kubelet=False, pod_deletion_delay=None)


@pytest.fixture
def make_sim(kubeconfig: Path) -> Iterator[Callable[..., KubeletSim]]:
    sims: list[KubeletSim] = []

    def make(nodes: list[str] | None, **options: Any) -> KubeletSim:
        sim = KubeletSim(load_api(str(kubeconfig)), nodes, **options)
        sim.start()
        assert sim.wait_ready(10)
        sims.append(sim)
        return sim

    yield make
    for sim in sims:
        sim.stop()


def _phase(server: Any, name: str) -> str:
    return str(server.get("pods", name)["status"].get("phase"))


def test_nodes_are_registered_with_their_shape_and_kept_ready(server: Any, make_sim: Callable[..., KubeletSim]) -> None:
    shape = NodeShape(cpu="4", memory="16Gi", pods="20", gpu="2", labels={"zone": "a"})
    make_sim(["s0", "s1"], shape=shape, heartbeat=0.2, status_interval=0.2)
    for name in ("s0", "s1"):
        node = server.get("nodes", name)
        assert node["status"]["allocatable"] == {"cpu": "4", "memory": "16Gi", "pods": "20", "nvidia.com/gpu": "2"}
        assert node["metadata"]["labels"]["zone"] == "a"
        assert node["metadata"]["labels"]["kubernetes.io/hostname"] == name
        (ready,) = [c for c in node["status"]["conditions"] if c["type"] == "Ready"]
        assert ready["status"] == "True"
        lease = server.get("leases", name, "kube-node-lease")
        assert lease["spec"]["holderIdentity"] == name
        assert lease["metadata"]["ownerReferences"][0]["uid"] == node["metadata"]["uid"]
    # The heartbeats move on: the Lease's renewal and the Ready condition's heartbeat.
    lease = server.get("leases", "s0", "kube-node-lease")["spec"]["renewTime"]
    beat = server.get("nodes", "s0")["status"]["conditions"][0]["lastHeartbeatTime"]
    eventually(lambda: server.get("leases", "s0", "kube-node-lease")["spec"]["renewTime"] != lease, what="a renewal")
    eventually(
        lambda: server.get("nodes", "s0")["status"]["conditions"][0]["lastHeartbeatTime"] != beat,
        timeout=15,
        what="a node status heartbeat",
    )


def _pod(name: str, node: str, annotations: dict[str, str] | None = None) -> dict[str, Any]:
    pod = make_pod(name, node_name=node, phase="Pending")
    pod["metadata"]["annotations"] = dict(annotations or {})
    return pod


def test_bound_pods_start_then_end_as_their_annotations_say(server: Any, make_sim: Callable[..., KubeletSim]) -> None:
    sim = make_sim(["s0"], pod_startup=0.3)
    server.create("pods", _pod("ok", "s0", {"volcanolib.io/duration": "1s"}))
    server.create("pods", _pod("fails", "s0", {"volcanolib.io/duration": "500ms", "volcanolib.io/exit-code": "3"}))
    server.create("pods", _pod("forever", "s0"))
    server.create("pods", make_pod("elsewhere", node_name="other", phase="Pending"))  # not this kubelet's
    server.create("pods", make_pod("unbound"))
    created = time.monotonic()
    eventually(lambda: _phase(server, "forever") == "Running", what="the pod to start")
    assert time.monotonic() - created >= 0.3
    pod = server.get("pods", "forever")
    assert {c["type"]: c["status"] for c in pod["status"]["conditions"]}["Ready"] == "True"
    assert pod["status"]["containerStatuses"][0]["state"]["running"]["startedAt"]
    eventually(lambda: _phase(server, "ok") == "Succeeded", what="ok to succeed")
    eventually(lambda: _phase(server, "fails") == "Failed", what="fails to fail")
    failed = server.get("pods", "fails")["status"]["containerStatuses"][0]["state"]["terminated"]
    assert (failed["exitCode"], failed["reason"]) == (3, "Error")
    started = server.get("pods", "ok")["status"]["startTime"]
    ended = server.get("pods", "ok")["status"]["containerStatuses"][0]["state"]["terminated"]["finishedAt"]
    assert ended > started  # one second later (RFC 3339 in UTC compares as text)
    time.sleep(0.5)
    assert _phase(server, "forever") == "Running"
    assert _phase(server, "elsewhere") == "Pending" and _phase(server, "unbound") == "Pending"
    assert (sim.started, sim.ended) == (3, 2)


def test_a_deleted_pod_is_removed_after_the_termination_grace(server: Any, make_sim: Callable[..., KubeletSim]) -> None:
    sim = make_sim(["s0"], pod_startup=0.0, termination_grace=0.5)
    server.create("pods", _pod("p", "s0"))
    eventually(lambda: _phase(server, "p") == "Running", what="the pod to start")
    server.delete("pods", "p")  # a graceful deletion (30 s grace): the pod stays, terminating
    deleted = time.monotonic()
    assert server.get("pods", "p")["metadata"]["deletionTimestamp"]
    eventually(lambda: server.find("pods", "p") is None, what="the pod to go")
    assert time.monotonic() - deleted >= 0.4
    eventually(lambda: sim.removed == 1, what="the simulator to count it")  # it counts once answered


def test_a_pod_ended_by_someone_else_is_not_ended_again(server: Any, make_sim: Callable[..., KubeletSim]) -> None:
    sim = make_sim(["s0"], pod_startup=0.0)
    server.create("pods", _pod("p", "s0", {"volcanolib.io/duration": "1s"}))
    eventually(lambda: _phase(server, "p") == "Running", what="the pod to start")
    server.patch("pods", "p", {"status": {"phase": "Failed"}}, subresource="status")  # its process died early
    time.sleep(1.5)  # past the end the annotation planned
    assert _phase(server, "p") == "Failed"
    assert sim.ended == 0


def test_a_running_pod_the_simulator_finds_at_start_ends_on_time(
    server: Any, make_sim: Callable[..., KubeletSim]
) -> None:
    server.create("nodes", {"metadata": {"name": "s0"}, "status": {"allocatable": {"cpu": "1"}}})
    pod = _pod("p", "s0", {"volcanolib.io/duration": "2s"})
    server.create("pods", pod)
    status = {"phase": "Running", "startTime": format_timestamp(time.time() - 1.5)}
    server.patch("pods", "p", {"status": status}, subresource="status")
    make_sim(["s0"])  # registered before: made Ready again, and the pod, started 1.5 s ago, ends in 0.5 s
    eventually(lambda: _phase(server, "p") == "Succeeded", timeout=1.9, what="the pod to end")


def test_an_annotation_that_is_no_duration_is_reported_and_the_pod_runs_on(
    server: Any, make_sim: Callable[..., KubeletSim], caplog: pytest.LogCaptureFixture
) -> None:
    make_sim(["s0"], pod_startup=0.0)
    with caplog.at_level(logging.WARNING, logger="volcanolib.kube.live"):
        server.create("pods", _pod("p", "s0", {"volcanolib.io/duration": "soon"}))
        eventually(lambda: _phase(server, "p") == "Running", what="the pod to start")
        eventually(lambda: "Pod default/p" in caplog.text, what="the warning")
    (line,) = [r.getMessage() for r in caplog.records if "Pod default/p" in r.getMessage()]
    assert "metadata.annotations.volcanolib.io/duration" in line and "runs until it is deleted" in line
    time.sleep(0.3)
    assert _phase(server, "p") == "Running"


@pytest.mark.parametrize(
    ("argv", "message"),
    [
        (["--nodes", "0"], "argument --nodes: expected a number of nodes of 1 or more, got '0'"),
        (["--nodes", "2", "--memory", "lots"], "argument --memory: expected a quantity such as 8, 500m or 32Gi"),
        (["--nodes", "2", "--pod-startup", "soon"], "argument --pod-startup: expected a duration"),
        (["--nodes", "2", "--heartbeat", "0s"], "argument --heartbeat: expected a duration of more than 0"),
        (["--nodes", "2", "--label", "zone"], "argument --label: expected KEY=VALUE, got 'zone'"),
    ],
)
def test_bad_flags_are_one_line_and_status_2(argv: list[str], message: str, capsys: pytest.CaptureFixture[str]) -> None:
    with pytest.raises(SystemExit) as exit_:
        main(["kubelet-sim", *argv])
    assert exit_.value.code == 2
    assert message in capsys.readouterr().err.strip().splitlines()[-1]


def test_the_command_registers_its_nodes_and_stops_on_sigterm(server: Any, kubeconfig: Path) -> None:
    process = subprocess.Popen(
        [sys.executable, "-m", "volcanolib", "kubelet-sim", "--kubeconfig", str(kubeconfig), "--nodes", "3",
         "--prefix", "cli-", "--cpu", "2", "--label", "pool=sim", "--pod-startup", "0s"],
        stdout=subprocess.PIPE, stderr=subprocess.PIPE, text=True, env=dict(os.environ),
    )  # fmt: skip
    try:
        assert process.stdout is not None
        assert process.stdout.readline().strip() == "volcanolib kubelet-sim: 3 nodes ready (cli-0 to cli-2)"
        assert server.get("nodes", "cli-2")["metadata"]["labels"]["pool"] == "sim"
        server.create("pods", _pod("p", "cli-1"))
        eventually(lambda: _phase(server, "p") == "Running", what="the pod to start")
        process.send_signal(signal.SIGTERM)
        out, err = process.communicate(timeout=30)
    finally:
        if process.poll() is None:
            process.kill()
    assert process.returncode == 0, err
    assert out.strip() == "volcanolib kubelet-sim: 1 pods started, 0 ended, 0 removed"
