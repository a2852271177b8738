"""examples/kube-controller runs against the stand-in and its plugin keeps pods off nodes under maintenance."""

from __future__ import annotations

import os
import subprocess
import sys
from pathlib import Path

from kube_api import KubeApiServer, make_node, make_pod

CONTROLLER = Path(__file__).resolve().parents[2] / "examples" / "kube-controller" / "controller.py"


def test_the_controller_binds_only_to_nodes_not_under_maintenance(server: KubeApiServer, kubeconfig: Path) -> None:
    # The node under maintenance is the fuller one, which binpack would pick without the plugin.
    server.create("nodes", make_node("drained", cpu="8", labels={"example.com/maintenance": "true"}))
    server.create("nodes", make_node("open", cpu="8"))
    server.create("pods", make_pod("running", cpu="4", node_name="drained", scheduler_name="default-scheduler"))
    for i in range(3):
        server.create("pods", make_pod(f"p{i}", cpu="1"))
    env = {k: v for k, v in os.environ.items() if k != "PYTEST_ADDOPTS"}
    done = subprocess.run(
        [sys.executable, str(CONTROLLER), "--kubeconfig", str(kubeconfig), "--period", "0.05", "--max-cycles", "3"],
        capture_output=True, text=True, timeout=120, env=env,
    )  # fmt: skip
    assert done.returncode == 0, done.stderr
    assert sorted(done.stdout.splitlines()) == [f"bind default/p{i} to open" for i in range(3)]
    assert {server.get("pods", f"p{i}")["spec"]["nodeName"] for i in range(3)} == {"open"}
    assert server.get("pods", "running")["spec"]["nodeName"] == "drained"  # pods already there stay
