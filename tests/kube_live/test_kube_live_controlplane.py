"""tools/cluster and the fixtures' handling of a machine without Go."""

from __future__ import annotations

import os
import shutil
import signal
import subprocess
import sys
import time
from pathlib import Path

import pytest
from realcluster import start_control_plane

from volcanolib.kube.live import load_api

TOOL = Path(__file__).resolve().parents[2] / "tools" / "cluster"


def _without_go(monkeypatch: pytest.MonkeyPatch, tmp_path: Path) -> dict[str, str]:
    """A PATH with this Python but no go."""
    bin_dir = tmp_path / "bin"
    bin_dir.mkdir()
    (bin_dir / "python3").symlink_to(sys.executable)
    monkeypatch.setenv("PATH", str(bin_dir))
    return {**os.environ, "PATH": str(bin_dir)}


def test_without_go_a_test_that_needs_the_control_plane_is_skipped_and_says_why(
    monkeypatch: pytest.MonkeyPatch, tmp_path: Path
) -> None:
    _without_go(monkeypatch, tmp_path)
    monkeypatch.delenv("VOLCANOLIB_REQUIRE_GO", raising=False)
    with pytest.raises(pytest.skip.Exception, match="needs go to build the control plane"):
        start_control_plane()


def test_without_go_on_ci_it_is_a_failure(monkeypatch: pytest.MonkeyPatch, tmp_path: Path) -> None:
    _without_go(monkeypatch, tmp_path)
    monkeypatch.setenv("VOLCANOLIB_REQUIRE_GO", "1")
    with pytest.raises(pytest.fail.Exception, match=r"needs go to build the control plane \(VOLCANOLIB_REQUIRE_GO=1"):
        start_control_plane()


def test_tools_cluster_without_go_is_one_line_and_status_2(monkeypatch: pytest.MonkeyPatch, tmp_path: Path) -> None:
    env = _without_go(monkeypatch, tmp_path)
    done = subprocess.run([str(TOOL), "--kubeconfig", str(tmp_path / "kc")], capture_output=True, text=True, env=env)
    assert done.returncode == 2
    assert done.stderr.splitlines() == ["tools/cluster: needs go to build the control plane (no 'go' on PATH)"]


def test_tools_cluster_serves_until_sigterm_and_keeps_its_data_dir(tmp_path: Path) -> None:
    if shutil.which("go") is None:
        start_control_plane()  # skips, or fails on CI, as every test that needs the control plane does
    kubeconfig, data = tmp_path / "kc", tmp_path / "data"

    def run() -> subprocess.Popen[str]:
        process = subprocess.Popen(
            [str(TOOL), "--kubeconfig", str(kubeconfig), "--data-dir", str(data)],
            stdout=subprocess.PIPE, stderr=subprocess.PIPE, text=True,
        )  # fmt: skip
        assert process.stdout is not None
        lines = [process.stdout.readline().strip() for _ in range(3)]
        assert [line.split()[0] for line in lines] == ["etcd", "apiserver", "ready"], process.stderr
        return process

    process = run()
    api = load_api(str(kubeconfig))
    namespaces = {n["metadata"]["name"] for n in api.request("GET", "/api/v1/namespaces")["items"]}
    assert {"default", "kube-system", "kube-node-lease"} <= namespaces
    crds = {
        c["metadata"]["name"]
        for c in api.request("GET", "/apis/apiextensions.k8s.io/v1/customresourcedefinitions")["items"]
    }
    assert {"podgroups.scheduling.volcano.sh", "queues.scheduling.volcano.sh", "jobs.batch.volcano.sh",
            "commands.bus.volcano.sh", "hypernodes.topology.volcano.sh"} <= crds  # fmt: skip
    api.request("POST", "/api/v1/namespaces/default/configmaps", body={"metadata": {"name": "kept"}})
    first = kubeconfig.read_text()
    process.send_signal(signal.SIGTERM)
    stopping = time.monotonic()
    _, err = process.communicate(timeout=60)
    assert process.returncode == 0, err
    assert time.monotonic() - stopping < 30
    # Again on the same data: the same server, the same credentials, the object still there.
    process = run()
    try:
        assert kubeconfig.read_text() == first
        assert api.request("GET", "/api/v1/namespaces/default/configmaps/kept")  # the client from before works
    finally:
        process.send_signal(signal.SIGINT)
        process.communicate(timeout=60)
    assert process.returncode == 0
