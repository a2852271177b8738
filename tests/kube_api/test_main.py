"""``python -m kube_api``: the stand-in in its own process."""

from __future__ import annotations

import json
import signal
import subprocess
import sys
import urllib.request
from pathlib import Path

TESTS = Path(__file__).resolve().parents[1]


def test_the_stand_in_runs_as_a_process_with_a_loaded_cluster() -> None:
    proc = subprocess.Popen(
        [sys.executable, "-m", "kube_api", "--nodes", "2", "--pending-pods", "3", "--group-size", "3"],
        cwd=TESTS,
        stdout=subprocess.PIPE,
        text=True,
    )
    try:
        assert proc.stdout is not None
        ready, url, rv = proc.stdout.readline().split()
        assert ready == "READY"
        with urllib.request.urlopen(f"{url}/api/v1/pods?fieldSelector=spec.nodeName%3D") as resp:
            pods = json.loads(resp.read())
        assert len(pods["items"]) == 3 and pods["metadata"]["resourceVersion"] == rv
        with urllib.request.urlopen(f"{url}/apis/scheduling.volcano.sh/v1beta1/podgroups") as resp:
            assert [g["spec"]["minMember"] for g in json.loads(resp.read())["items"]] == [3]
    finally:
        proc.send_signal(signal.SIGTERM)
        assert proc.wait(timeout=30) == 0
