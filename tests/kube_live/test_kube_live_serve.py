"""``volcanolib serve`` through the stand-in: leader election, SIGTERM, metrics, status writes, errors."""

from __future__ import annotations

import os
import signal
import socket
import subprocess
import sys
import threading
import time
import urllib.request
from collections.abc import Callable
from pathlib import Path

import pytest
from conftest_helpers import cycle, eventually, settle
from kube_api import KubeApiServer, make_node, make_pod, make_podgroup

from volcanolib.cli import main
from volcanolib.kube.live import load_api
from volcanolib.kube.live.cache import KubernetesCache
from volcanolib.kube.live.serve import Server
from volcanolib.scheduler import Scheduler

# Lease duration, renew deadline, retry period (seconds): short enough for a failover test, with
# room for a loaded machine; LONG_LEASE where a lost lease would only make the test flaky.
LEASE = (4.0, 2.5, 0.2)
LONG_LEASE = (60.0, 40.0, 0.2)


def _bound(server: KubeApiServer, names: list[str]) -> bool:
    return all(server.get("pods", n)["spec"].get("nodeName") for n in names)


def _writes(server: KubeApiServer) -> list[tuple[str, str, int]]:
    """Every status write and event post so far."""
    return [r for r in server.requests() if r[0] in ("PATCH", "PUT") or (r[0] == "POST" and "/events" in r[1])]


def test_status_is_written_only_when_it_changes(
    server: KubeApiServer, make_cache: Callable[..., KubernetesCache]
) -> None:
    server.create("nodes", make_node("n0", cpu="2"))
    server.create("podgroups", make_podgroup("waits", min_member=2))
    server.create("podgroups", make_podgroup("runs", min_member=1))
    for i in range(2):
        server.create("pods", make_pod(f"waits-{i}", cpu="2", group="waits"))
    server.create("pods", make_pod("runs-0", cpu="100m", group="runs"))
    cache = make_cache()
    scheduler = Scheduler(cache)
    for _ in range(3):  # bind, then the groups' phases and conditions settle
        cycle(scheduler, cache)
        settle(server, cache)
        time.sleep(0.1)
    before = _writes(server)
    assert any("/podgroups/waits" in path for _, path, _ in before)
    assert any("/pods/waits-0/status" in path for _, path, _ in before)
    for _ in range(5):
        cycle(scheduler, cache)
        time.sleep(0.05)
    assert _writes(server) == before

    server.create("nodes", make_node("n1", cpu="2"))
    server.create("nodes", make_node("n2", cpu="2"))
    eventually(lambda: len(cache.snapshot().nodes) == 3, what="the new nodes")
    cycle(scheduler, cache)
    assert _bound(server, ["waits-0", "waits-1"])
    assert len(_writes(server)) > len(before)


def _serve(
    kubeconfig: Path,
    identity: str,
    stop: threading.Event,
    codes: dict[str, int],
    lease: tuple[float, float, float] = LEASE,
) -> Server:
    server = Server(
        load_api(str(kubeconfig)),
        period=0.05,
        leader_elect=True,
        lock_namespace="default",
        lease=lease,
        identity=identity,
    )
    threading.Thread(target=lambda: codes.__setitem__(identity, server.run(stop)), daemon=True).start()
    return server


def _scheduled(server: Server) -> int:
    return sum(1 for e in server.cache.events if e.reason == "Scheduled")


def test_two_leader_electing_servers_never_both_bind(server: KubeApiServer, kubeconfig: Path) -> None:
    server.create("nodes", make_node("n0", pods="100"))
    stops = {"a": threading.Event(), "b": threading.Event()}
    codes: dict[str, int] = {}
    # A stopping leader releases the Lease, so the other takes over at once however long the Lease.
    servers = {name: _serve(kubeconfig, name, stops[name], codes, LONG_LEASE) for name in ("a", "b")}
    both: list[float] = []
    sampling = threading.Event()

    def sample() -> None:
        while not sampling.is_set():
            if all(s.elector is not None and s.elector.is_leader() for s in servers.values()):
                both.append(time.monotonic())
            time.sleep(0.002)

    threading.Thread(target=sample, daemon=True).start()
    first = [f"first-{i}" for i in range(5)]
    for name in first:
        server.create("pods", make_pod(name, cpu="100m"))
    eventually(lambda: _bound(server, first), what="the first pods to bind")
    leader = eventually(lambda: next((n for n, s in servers.items() if s.cycles), None), what="a cycle")
    follower = "b" if leader == "a" else "a"
    assert _scheduled(servers[leader]) == 5 and _scheduled(servers[follower]) == 0

    stops[leader].set()  # the leader stops cleanly and releases the Lease
    eventually(lambda: leader in codes, what="the leader to stop")
    assert codes[leader] == 0
    second = [f"second-{i}" for i in range(5)]
    for name in second:
        server.create("pods", make_pod(name, cpu="100m"))
    eventually(lambda: _bound(server, second), what="the second pods to bind")
    assert _scheduled(servers[leader]) == 5 and _scheduled(servers[follower]) == 5, [
        (n, [(e.object, e.reason) for e in s.cache.events]) for n, s in servers.items()
    ]
    stops[follower].set()
    eventually(lambda: follower in codes, what="the follower to stop")
    sampling.set()
    assert both == []
    for name in first + second:
        assert [code for m, path, code in server.requests("POST", f"/pods/{name}/binding")] == [201]


def test_a_leader_that_cannot_renew_stops_binding_before_another_takes_over(
    server: KubeApiServer, kubeconfig: Path
) -> None:
    server.create("nodes", make_node("n0", pods="100"))
    codes: dict[str, int] = {}
    stop_a = threading.Event()
    a = _serve(kubeconfig, "a", stop_a, codes)
    eventually(lambda: a.cycles > 0, what="a to lead")
    server.fail_next(-1, 500, method="PUT", resource="leases")  # renewals fail from now on
    eventually(lambda: "a" in codes, what="a to give up")
    assert codes["a"] == 1
    assert a.elector is not None and not a.elector.is_leader()
    stop_b = threading.Event()
    b = _serve(kubeconfig, "b", stop_b, codes)
    server.create("pods", make_pod("p", cpu="100m"))
    time.sleep(0.3)
    assert not server.get("pods", "p")["spec"].get("nodeName")  # nobody may write yet
    server.clear_faults()
    eventually(lambda: _bound(server, ["p"]), what="b to bind")
    assert _scheduled(b) == 1 and _scheduled(a) == 0
    stop_b.set()
    eventually(lambda: "b" in codes, what="b to stop")


def test_metrics_and_healthz_are_served(server: KubeApiServer, kubeconfig: Path) -> None:
    server.create("nodes", make_node("n0"))
    server.create("pods", make_pod("p"))
    serve = Server(load_api(str(kubeconfig)), period=0.05, metrics_address=("127.0.0.1", 0))
    stop = threading.Event()
    codes: list[int] = []
    thread = threading.Thread(target=lambda: codes.append(serve.run(stop)), daemon=True)
    thread.start()
    eventually(lambda: serve.http is not None and serve.cycles > 1, what="cycles")
    host, port = serve.http.server_address[:2]
    with urllib.request.urlopen(f"http://{host}:{port}/healthz", timeout=5) as answer:
        assert answer.status == 200
    with urllib.request.urlopen(f"http://{host}:{port}/metrics", timeout=5) as answer:
        text = answer.read().decode()
    assert "volcano_e2e_scheduling_latency_milliseconds_count" in text
    assert 'volcano_action_scheduling_latency_milliseconds_count{action="allocate"}' in text
    assert "volcano_task_scheduling_latency_milliseconds_count 1.0" in text
    assert "volcanolib_cache_ready 1.0" in text
    stop.set()
    thread.join(10)
    assert codes == [0]


def test_sigterm_while_binds_are_in_flight_finishes_them_and_exits_cleanly(
    server: KubeApiServer, kubeconfig: Path
) -> None:
    for i in range(3):
        server.create("nodes", make_node(f"n{i}", cpu="1"))
    server.create("podgroups", make_podgroup("gang", min_member=3))
    names = [f"gang-{i}" for i in range(3)]
    for name in names:
        server.create("pods", make_pod(name, cpu="1", group="gang"))
    server.delay(1.0, 3, method="POST", resource="pods", subresource="binding")
    process = subprocess.Popen(
        [sys.executable, "-m", "volcanolib", "serve", "--kubeconfig", str(kubeconfig), "--period", "0.05",
         "--metrics-address", "127.0.0.1:0"],
        stdout=subprocess.PIPE, stderr=subprocess.PIPE, text=True, env=dict(os.environ),
    )  # fmt: skip
    try:
        # All three binds have reached the server, which holds them for a second: the cycle is mid-flight.
        eventually(lambda: all(f.remaining == 0 for f in server.store.faults), 60, "the binds to arrive")
        process.send_signal(signal.SIGTERM)
        _out, err = process.communicate(timeout=30)
    finally:
        if process.poll() is None:
            process.kill()
    assert process.returncode == 0, err
    assert _bound(server, names)  # the gang is whole: no bind was abandoned half-way
    assert len(server.requests("POST", "/binding")) == 3


def test_serve_refuses_a_missing_kubeconfig_in_one_line(tmp_path: Path, capsys: pytest.CaptureFixture[str]) -> None:
    assert main(["serve", "--kubeconfig", str(tmp_path / "nope")]) == 2
    err = capsys.readouterr().err.strip().splitlines()
    assert err == [f"volcanolib: error: {tmp_path / 'nope'}: no such file"]


@pytest.mark.parametrize(
    ("listed", "expected"),
    [
        (
            None,
            "{home}/.kube/config: no such file (the default kubeconfig, read outside a cluster without "
            "--kubeconfig or KUBECONFIG)",
        ),
        (["a.conf"], "{tmp}/a.conf: no such file (named by KUBECONFIG)"),
        (["a.conf", "b.conf"], "{tmp}/a.conf, {tmp}/b.conf: no such files (named by KUBECONFIG)"),
    ],
)
def test_serve_names_a_missing_default_kubeconfig(
    tmp_path: Path,
    monkeypatch: pytest.MonkeyPatch,
    capsys: pytest.CaptureFixture[str],
    listed: list[str] | None,
    expected: str,
) -> None:
    home = tmp_path / "home"
    monkeypatch.setenv("HOME", str(home))
    monkeypatch.delenv("KUBERNETES_SERVICE_HOST", raising=False)  # not in a cluster
    if listed is None:
        monkeypatch.delenv("KUBECONFIG", raising=False)
    else:
        monkeypatch.setenv("KUBECONFIG", os.pathsep.join(str(tmp_path / name) for name in listed))
    assert main(["serve"]) == 2
    err = capsys.readouterr().err.strip().splitlines()
    assert err == ["volcanolib: error: " + expected.format(home=home, tmp=tmp_path)]


def test_without_the_kube_extra_the_error_names_it(monkeypatch: pytest.MonkeyPatch) -> None:
    monkeypatch.setitem(sys.modules, "kubernetes", None)
    with pytest.raises(Exception, match=r"pip install 'volcanolib\[kube\]'"):
        load_api("whatever")


def _free_port() -> int:
    with socket.socket() as probe:
        probe.bind(("127.0.0.1", 0))
        return int(probe.getsockname()[1])


def test_a_metrics_address_in_use_or_unknown_is_one_line_and_status_2(
    kubeconfig: Path, capsys: pytest.CaptureFixture[str]
) -> None:
    with socket.socket() as busy:
        busy.bind(("127.0.0.1", 0))
        busy.listen()
        port = busy.getsockname()[1]
        assert main(["serve", "--kubeconfig", str(kubeconfig), "--metrics-address", f"127.0.0.1:{port}"]) == 2
    err = capsys.readouterr().err.strip().splitlines()
    assert err == [f"volcanolib: error: --metrics-address: cannot listen on 127.0.0.1:{port}: Address already in use"]
    assert main(["serve", "--kubeconfig", str(kubeconfig), "--metrics-address", "no-such-host.invalid:8080"]) == 2
    (line,) = capsys.readouterr().err.strip().splitlines()
    assert line.startswith("volcanolib: error: --metrics-address: cannot listen on no-such-host.invalid:8080: ")


def test_lease_settings_are_flags_under_volcanos_names_and_short_ones() -> None:
    from volcanolib.cli import _parser

    args = _parser().parse_args(
        ["serve", "--leader-elect-lease-duration", "1m30s", "--renew-deadline", "20", "--retry-period", "500ms"]
    )
    assert (args.lease_duration, args.renew_deadline, args.retry_period) == (90.0, 20.0, 0.5)
    args = _parser().parse_args(["serve"])
    assert (args.lease_duration, args.renew_deadline, args.retry_period) == (15.0, 10.0, 2.0)


def test_lease_settings_out_of_order_are_refused_in_one_line(
    kubeconfig: Path, capsys: pytest.CaptureFixture[str]
) -> None:
    argv = ["serve", "--kubeconfig", str(kubeconfig), "--leader-elect", "--lease-duration", "5s"]
    assert main([*argv, "--renew-deadline", "5s"]) == 2
    (line,) = capsys.readouterr().err.strip().splitlines()
    assert "--leader-elect-renew-deadline < --leader-elect-lease-duration, got 2s, 5s and 5s" in line
    with pytest.raises(SystemExit) as exit_:
        main([*argv, "--retry-period", "soon"])
    assert exit_.value.code == 2
    assert "expected a positive duration (such as 15s or 15), got 'soon'" in capsys.readouterr().err


def _leading(port: int) -> bool:
    try:
        with urllib.request.urlopen(f"http://127.0.0.1:{port}/metrics", timeout=2) as answer:
            return "volcanolib_leader 1.0" in answer.read().decode()
    except OSError:
        return False


def test_after_the_leader_is_killed_the_other_replica_takes_over_with_the_lease_flags_given(
    server: KubeApiServer, kubeconfig: Path
) -> None:
    server.create("nodes", make_node("n0", pods="100"))
    ports = [_free_port(), _free_port()]
    lease = ["--lease-duration", "2s", "--renew-deadline", "1500ms", "--retry-period", "0.2"]
    argv = [sys.executable, "-m", "volcanolib", "serve", "--kubeconfig", str(kubeconfig), "--period", "0.05",
            "--leader-elect", "--lock-namespace", "default", *lease]  # fmt: skip
    processes = [
        subprocess.Popen(
            [*argv, "--metrics-address", f"127.0.0.1:{port}"],
            stdout=subprocess.DEVNULL,
            stderr=subprocess.PIPE,
            text=True,
            env=dict(os.environ),
        )
        for port in ports
    ]
    try:
        eventually(lambda: any(_leading(p) for p in ports), 60, "a replica to lead")
        leader = next(i for i, p in enumerate(ports) if _leading(p))
        lease_object = server.get("leases", "volcano")
        assert lease_object["spec"]["leaseDurationSeconds"] == 2
        processes[leader].kill()  # SIGKILL: the Lease is not given up
        server.create("pods", make_pod("after", cpu="100m"))
        eventually(lambda: _bound(server, ["after"]), 60, "the other replica to bind")
        assert _leading(ports[1 - leader])
    finally:
        for process in processes:
            if process.poll() is None:
                process.send_signal(signal.SIGTERM)
        for process in processes:
            try:
                process.communicate(timeout=30)
            except subprocess.TimeoutExpired:
                process.kill()
