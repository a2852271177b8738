"""Every command of the console script, run as a user runs it."""

from __future__ import annotations

import json
import subprocess
import sys
import time
from pathlib import Path

import pytest
import yaml
from cli_helpers import EXAMPLES, ROOT, run

QUICKSTART = EXAMPLES / "quickstart.yaml"
DUMP = EXAMPLES / "cluster-dump.yaml"


def test_version() -> None:
    proc = run("--version")
    assert proc.returncode == 0 and proc.stdout.startswith("volcanolib ")


def test_simulate_quickstart_as_tables() -> None:
    proc = run("simulate", QUICKSTART)
    assert proc.returncode == 0, proc.stderr
    out = proc.stdout
    assert out.startswith("Scenario: quickstart - a TensorFlow job on three nodes\n")
    assert "Binds (3)" in out
    assert "default/tensorflow-dist-mnist  default  Running  3/3" in out
    assert "Pending (0)\n  none\n" in out
    assert proc.stderr == ""


def test_simulate_json_is_byte_identical_across_runs() -> None:
    first = run("simulate", DUMP, "--json")
    second = run("simulate", DUMP, "--json")
    assert first.returncode == 0, first.stderr
    assert first.stdout == second.stdout
    data = json.loads(first.stdout)
    assert list(data) == sorted(data)
    assert set(data) == {"binds", "evictions", "pipelined", "podGroups", "sessions", "unschedulable"}
    assert data["podGroups"]["research/resnet-train"] == {"minMember": 4, "phase": "Running", "scheduled": 4}
    assert all(node == "gpu-node-1" for pod, node in data["binds"].items() if "resnet" in pod)
    assert data["podGroups"]["production/nightly-etl-9a8b7c6d-3333-4e5f-b000-000000000001"]["scheduled"] == 4


def test_simulate_timings() -> None:
    proc = run("simulate", QUICKSTART, "--json", "--timings")
    timings = json.loads(proc.stdout)["timings"]
    assert {"load", "snapshot", "open", "enqueue", "allocate", "backfill", "close", "session"} <= set(timings)
    assert all(isinstance(v, float) and v >= 0 for v in timings.values())
    assert "Timings (seconds)" in run("simulate", QUICKSTART, "--timings").stdout


#: The phases of ``simulate --timings`` one after the other; the rest are parts of ``session``.
PHASES = ("startup", "load", "cache", "scheduler", "session", "bookkeeping", "output")


def test_simulate_timings_cover_the_whole_command() -> None:
    begin = time.perf_counter()
    proc = run("simulate", DUMP, "--json", "--timings")
    wall = time.perf_counter() - begin
    assert proc.returncode == 0, proc.stderr
    timings = json.loads(proc.stdout)["timings"]
    assert set(PHASES) | {"total"} <= set(timings)
    assert sum(timings[p] for p in PHASES) == pytest.approx(timings["total"], abs=0.01)
    # The process's start is known to a clock tick (1/100 s here), so the total may overshoot by that much.
    assert timings["total"] <= wall + 0.05
    if sys.platform.startswith("linux"):  # where the process's start is known, startup counts the imports
        assert timings["total"] >= 0.75 * wall, (timings, wall)


def test_simulate_timings_as_tables_end_with_the_total() -> None:
    proc = run("simulate", QUICKSTART, "--timings")
    assert proc.returncode == 0, proc.stderr
    head, table = proc.stdout.split("\nTimings (seconds)\n")
    assert head == run("simulate", QUICKSTART).stdout
    steps = [line.split()[0] for line in table.splitlines()[1:]]
    assert steps[:4] == ["startup", "load", "cache", "scheduler"]
    assert steps[-4:] == ["session", "bookkeeping", "output", "total"]


def test_simulate_conf_sessions_and_seed(tmp_path: Path) -> None:
    conf = tmp_path / "volcano-scheduler.conf"
    conf.write_text('actions: "enqueue"\ntiers:\n- plugins:\n  - name: gang\n')
    proc = run("simulate", QUICKSTART, "--conf", conf, "--sessions", "2", "--seed", "7", "--json")
    assert proc.returncode == 0, proc.stderr
    data = json.loads(proc.stdout)
    assert data["sessions"] == 2 and data["binds"] == {}
    assert data["podGroups"]["default/tensorflow-dist-mnist"]["phase"] == "Inqueue"


def test_simulate_merges_files_in_order(tmp_path: Path) -> None:
    dump = yaml.safe_load(DUMP.read_text())
    nodes = [i for i in dump["items"] if i["kind"] in ("Node", "Queue", "PriorityClass")]
    rest = [i for i in dump["items"] if i not in nodes]
    (tmp_path / "cluster.yaml").write_text(yaml.safe_dump({"apiVersion": "v1", "kind": "List", "items": nodes}))
    (tmp_path / "work.json").write_text(json.dumps({"apiVersion": "v1", "kind": "List", "items": rest}))
    merged = run("simulate", tmp_path / "cluster.yaml", tmp_path / "work.json", "--json")
    whole = run("simulate", DUMP, "--json")
    assert merged.returncode == 0, merged.stderr
    assert merged.stdout == whole.stdout


def test_warnings_go_to_stderr_and_keep_json_clean(tmp_path: Path) -> None:
    path = tmp_path / "s.yaml"
    path.write_text(
        "objects:\n"
        "- {apiVersion: v1, kind: Node, metadata: {name: n1}, status: {allocatable: {cpu: '1', pods: '5'}}}\n"
        "- apiVersion: v1\n  kind: Pod\n"
        "  metadata: {name: p, namespace: ns, annotations: {scheduling.k8s.io/group-name: ghost}}\n"
        "  spec: {schedulerName: volcano, containers: [{name: c}]}\n"
        "- {apiVersion: v1, kind: ConfigMap, metadata: {name: cm}}\n"
        "- {apiVersion: scheduling.volcano.sh/v1beta1, kind: PodGroup, metadata: {name: pg, namespace: ns},\n"
        "   spec: {minMember: 1, queue: nowhere}}\n"
    )
    proc = run("simulate", path, "--json")
    assert proc.returncode == 0
    assert json.loads(proc.stdout)["unschedulable"] == {
        "ns/ghost": "PodGroup ns/ghost does not exist",
        "ns/pg": "queue 'nowhere' of PodGroup ns/pg does not exist",
    }
    lines = proc.stderr.splitlines()
    assert (
        "volcanolib: warning: ignored 1 object(s) of kind ConfigMap (v1): volcanolib does not read this kind" in lines
    )
    assert "volcanolib: warning: 1 pod(s) name PodGroup ns/ghost, which does not exist: they are not scheduled" in lines
    assert "volcanolib: warning: PodGroup ns/pg: queue 'nowhere' does not exist: the job is not scheduled" in lines


def test_simulate_warns_of_a_gang_short_of_pods_and_of_depends_on(tmp_path: Path) -> None:
    path = tmp_path / "s.yaml"
    path.write_text(
        "objects:\n"
        "- {apiVersion: v1, kind: Node, metadata: {name: n1}, status: {allocatable: {cpu: '8', pods: '20'}}}\n"
        "- {apiVersion: scheduling.volcano.sh/v1beta1, kind: PodGroup, metadata: {name: pg, namespace: ns},\n"
        "   spec: {minMember: 3}}\n"
        "- apiVersion: v1\n  kind: Pod\n"
        "  metadata: {name: p, namespace: ns, annotations: {scheduling.k8s.io/group-name: pg}}\n"
        "  spec: {schedulerName: volcano, containers: [{name: c}]}\n"
        "- apiVersion: batch.volcano.sh/v1alpha1\n  kind: Job\n  metadata: {name: mpi, namespace: ns}\n"
        "  spec:\n    tasks:\n"
        "    - {name: master, replicas: 1, template: {spec: {containers: [{name: c}]}},\n"
        "       dependsOn: {name: [worker]}}\n"
        "    - {name: worker, replicas: 2, template: {spec: {containers: [{name: c}]}}}\n"
    )
    proc = run("simulate", path, "--json")
    assert proc.returncode == 0, proc.stderr
    assert set(json.loads(proc.stdout)["binds"]) == {"ns/mpi-master-0", "ns/mpi-worker-0", "ns/mpi-worker-1"}
    lines = proc.stderr.splitlines()
    assert (
        "volcanolib: warning: 1 PodGroup has fewer pods that can run than minMember and is not scheduled "
        "(NotEnoughTasks): ns/pg (1 of 3)"
    ) in lines
    assert (
        "volcanolib: warning: 1 Volcano Job uses dependsOn, which volcanolib does not follow yet: the pods of "
        "those tasks are created with the others' and may be scheduled before the tasks they depend on: "
        "ns/mpi (task master)"
    ) in lines


def _scenario_with_expect(tmp_path: Path, name: str, expect: dict[str, object]) -> Path:
    data = yaml.safe_load(QUICKSTART.read_text())
    data["expect"] = expect
    path = tmp_path / name
    path.write_text(yaml.safe_dump(data))
    return path


def test_check_passes_and_fails(tmp_path: Path) -> None:
    good = _scenario_with_expect(
        tmp_path, "good.yaml", {"bindCount": 3, "podGroupPhases": {"default/tensorflow-dist-mnist": "Running"}}
    )
    bad = _scenario_with_expect(tmp_path, "bad.yaml", {"bindCount": 2, "evictions": ["default/x"]})
    proc = run("check", good)
    assert proc.returncode == 0
    assert proc.stdout == f"PASS {good} (quickstart - a TensorFlow job on three nodes)\n1 of 1 scenario passed\n"
    proc = run("check", good, bad)
    assert proc.returncode == 1
    assert proc.stdout.splitlines() == [
        f"PASS {good} (quickstart - a TensorFlow job on three nodes)",
        f"FAIL {bad} (quickstart - a TensorFlow job on three nodes): 2 differences",
        "  bindCount: expected 2, got 3",
        "  evictions: default/x expected, not evicted",
        "1 of 2 scenarios passed",
    ]
    quiet = run("check", "-q", good, bad)
    assert quiet.returncode == 1 and "PASS" not in quiet.stdout and "FAIL" in quiet.stdout


def test_check_without_expect_fails(tmp_path: Path) -> None:
    proc = run("check", QUICKSTART)
    assert proc.returncode == 1
    assert proc.stdout.startswith(f"FAIL {QUICKSTART}: nothing to check: the file has no 'expect' block\n")


def test_check_runs_the_scenario_suite_files() -> None:
    path = ROOT / "tests" / "scenarios" / "enqueue-pending-to-inqueue.yaml"
    proc = run("check", path)
    assert proc.returncode == 0, proc.stdout + proc.stderr


def test_explain_pending_group() -> None:
    proc = run("explain", DUMP, "research/hp-sweep")
    assert proc.returncode == 0, proc.stderr
    out = proc.stdout
    assert out.startswith("PodGroup research/hp-sweep (queue research): Running, 2 pods scheduled, minMember 1\n")
    assert "research/hp-sweep-trial-2: requests cpu 4, memory 8 GiB" in out
    assert "gpu-node-1  predicates  node(s) had untolerated taint {nvidia.com/gpu: present}" in out
    assert "Queue research, as the plugins see it:\n  proportion:\n" in out


def test_explain_accepts_a_bare_unique_name_and_limits_nodes() -> None:
    proc = run("explain", DUMP, "hp-sweep", "--max-nodes", "1")
    assert proc.returncode == 0, proc.stderr
    assert "... 2 more nodes (--max-nodes 0 shows all)" in proc.stdout


def test_plugins_lists_plugins_actions_distributions_and_hooks() -> None:
    proc = run("plugins")
    assert proc.returncode == 0, proc.stderr
    lines = proc.stdout.splitlines()
    gang = next(line for line in lines if line.split()[:1] == ["gang"])
    assert gang.split()[1] == "volcanolib" and "job_ready" in gang and "job_valid" in gang
    assert any(line.split()[:2] == ["predicates", "volcanolib-contrib"] for line in lines)
    assert any(line.split()[:3] == ["allocate", "volcanolib", "volcanolib.actions.allocate:Allocate"] for line in lines)
    data = json.loads(run("plugins", "--json").stdout)
    names = {p["name"]: p for p in data["plugins"]}
    assert "on_session_close" in names["gang"]["hooks"]
    assert names["gang"]["traits"] == ["clock-free", "local-job-keys", "status-through-session"]
    assert names["drf"]["traits"] == ["clock-free", "local-job-keys", "status-through-session", "resumes"]
    assert "node-classes" in names["binpack"]["traits"] and "clock-free" not in names["sla"]["traits"]
    assert "clock-free, local-job-keys" in gang
    assert {a["name"] for a in data["actions"]} >= {"enqueue", "allocate", "backfill", "preempt", "reclaim"}


def test_python_dash_m_runs_the_same_command() -> None:
    proc = subprocess.run(
        [sys.executable, "-m", "volcanolib", "simulate", QUICKSTART, "--json"],
        capture_output=True,
        text=True,
        cwd=ROOT,
        timeout=120,
    )
    assert proc.returncode == 0 and proc.stdout == run("simulate", QUICKSTART, "--json").stdout
