"""Bad input: exit status 2 and one line naming the file, object and field; never a traceback."""

from __future__ import annotations

import json
import subprocess
from pathlib import Path

import pytest
from cli_helpers import EXAMPLES, command, run

from volcanolib import cli

NODE = "- {apiVersion: v1, kind: Node, metadata: {name: n1}, status: {allocatable: {cpu: '4', pods: '10'}}}\n"
POD = (
    "- apiVersion: v1\n  kind: Pod\n  metadata: {name: p1, namespace: ns}\n"
    "  spec: {schedulerName: volcano, containers: [{name: c, resources: {requests: {cpu: %s}}}]}\n"
)

CASES = {
    "unreadable YAML": ("s.yaml", "objects: [\n", "s.yaml: not valid YAML at line 2 column 1"),
    "invalid JSON": ("s.json", '{"objects": [}', "s.json: not valid JSON at line 1 column 14: Expecting value"),
    "not a scenario": ("s.yaml", "just: text\n", "s.yaml: not a scenario (no 'objects' key) nor a Kubernetes object"),
    "missing name": (
        "s.yaml",
        "objects:\n- {apiVersion: v1, kind: Node, metadata: {}}\n",
        "s.yaml: Node at objects[0]: metadata.name: missing required field: metadata.name",
    ),
    "missing allocatable": (
        "s.yaml",
        "objects:\n- {apiVersion: v1, kind: Node, metadata: {name: n1}}\n",
        "s.yaml: Node n1: status.allocatable: missing required field",
    ),
    "invalid quantity": (
        "s.yaml",
        "objects:\n" + POD % "'2 cores'",
        "s.yaml: Pod ns/p1: spec.containers[0].resources.requests.cpu: invalid quantity '2 cores'",
    ),
    "negative quantity": (
        "s.yaml",
        "objects:\n" + POD % "'-1'",
        "s.yaml: Pod ns/p1: spec.containers[0].resources.requests.cpu: negative quantity '-1'",
    ),
    "duplicate object": (
        "s.yaml",
        "objects:\n" + NODE + NODE,
        "s.yaml: Node n1: duplicate object: already defined at ",
    ),
    "unknown plugin": (
        "s.yaml",
        "scheduler: {actions: allocate, tiers: [{plugins: [{name: gnag}]}]}\nobjects: []\n",
        "s.yaml: scheduler: tiers[0].plugins[0].name: unknown plugin 'gnag' (did you mean 'gang'?); "
        "installed plugins: ",
    ),
    "unknown action": (
        "s.yaml",
        "scheduler: {actions: 'enqueue, alocate', tiers: []}\nobjects: []\n",
        "s.yaml: scheduler: actions: unknown action 'alocate' (did you mean 'allocate'?); "
        "installed actions: allocate, ",
    ),
    "bad configuration": (
        "s.yaml",
        "scheduler: {actions: allocate, tiers: [{plugins: [{name: gang, enableJobOrder: maybe}]}]}\nobjects: []\n",
        "s.yaml: scheduler: tiers[0].plugins[0].enableJobOrder: expected true or false, got 'maybe'",
    ),
    "unknown expect key": (
        "s.yaml",
        "objects: []\nexpect: {bindcount: 1}\n",
        "s.yaml: expect: bindcount: unknown key 'bindcount' (did you mean 'bindCount'?)",
    ),
    "bad Volcano Job": (
        "s.yaml",
        "objects:\n- {apiVersion: batch.volcano.sh/v1alpha1, kind: Job, metadata: {name: j},\n"
        "   spec: {minAvailable: 5, tasks: [{name: t, replicas: 1, template: {spec: {containers: [{name: c}]}}}]}}\n",
        "s.yaml: Job default/j: spec.minAvailable: 5 is more than the 1 replicas",
    ),
    "Volcano Job with an unknown policy action": (
        "s.yaml",
        "objects:\n- {apiVersion: batch.volcano.sh/v1alpha1, kind: Job, metadata: {name: j},\n"
        "   spec: {policies: [{event: PodFailed, action: RestartJobb}],\n"
        "          tasks: [{name: t, replicas: 1, template: {spec: {containers: [{name: c}]}}}]}}\n",
        "s.yaml: Job default/j: spec.policies[0].action: unknown action 'RestartJobb'",
    ),
}


def _assert_one_line_error(proc: object, expected: str) -> None:
    assert proc.returncode == 2, (proc.stdout, proc.stderr)  # type: ignore[attr-defined]
    stderr: str = proc.stderr  # type: ignore[attr-defined]
    assert "Traceback" not in stderr
    errors = [line for line in stderr.splitlines() if not line.startswith("volcanolib: warning:")]
    assert len(errors) == 1, stderr
    assert errors[0].startswith("volcanolib: error: "), stderr
    assert expected in errors[0], errors[0]


@pytest.mark.parametrize("case", sorted(CASES))
def test_bad_input_exits_2_with_one_line(case: str, tmp_path: Path) -> None:
    name, text, expected = CASES[case]
    path = tmp_path / name
    path.write_text(text)
    proc = run("simulate", path, cwd=tmp_path)
    _assert_one_line_error(proc, expected.replace(name, str(path), 1))


@pytest.mark.parametrize(
    ("spec", "expected"),
    [
        ("{plugins: {tensorflw: []}, tasks: [%s]}", "Job default/j: spec.plugins.tensorflw: unknown job plugin"),
        ("{queue: nowhere, tasks: [%s]}", "Job default/j: spec.queue: queue 'nowhere' does not exist"),
        (
            "{policies: [{event: PodFailed, action: RestartJob}, {event: PodFailed, action: AbortJob}], tasks: [%s]}",
            "Job default/j: spec.policies[1]: event 'PodFailed' is already handled by policy 0",
        ),
    ],
)
def test_simulate_and_replay_refuse_a_job_the_webhook_refuses(spec: str, expected: str, tmp_path: Path) -> None:
    task = "{name: t, replicas: 1, template: {spec: {containers: [{name: c}]}}}"
    path = tmp_path / "job.yaml"
    path.write_text(
        "objects:\n- {apiVersion: v1, kind: Node, metadata: {name: n1}, status: {allocatable: {cpu: '4'}}}\n"
        f"- {{apiVersion: batch.volcano.sh/v1alpha1, kind: Job, metadata: {{name: j}}, spec: {spec % task}}}\n"
    )
    for command_name in ("simulate", "replay"):
        _assert_one_line_error(run(command_name, path, cwd=tmp_path), f"{path}: {expected}")


def test_missing_file(tmp_path: Path) -> None:
    proc = run("simulate", tmp_path / "nope.yaml")
    _assert_one_line_error(proc, f"{tmp_path / 'nope.yaml'}: cannot read: No such file or directory")


def test_missing_conf_file(tmp_path: Path) -> None:
    proc = run("simulate", EXAMPLES / "quickstart.yaml", "--conf", tmp_path / "nope.conf")
    _assert_one_line_error(proc, f"{tmp_path / 'nope.conf'}: cannot read: No such file or directory")


def test_invalid_conf_file(tmp_path: Path) -> None:
    conf = tmp_path / "bad.conf"
    conf.write_text("actions: [\n")
    proc = run("simulate", EXAMPLES / "quickstart.yaml", "--conf", conf)
    _assert_one_line_error(proc, f"{conf}: not valid YAML")


def test_explain_unknown_group() -> None:
    proc = run("explain", EXAMPLES / "cluster-dump.yaml", "research/hp-sweeep")
    _assert_one_line_error(proc, "no PodGroup 'research/hp-sweeep' in the scenario; did you mean research/hp-sweep?")


@pytest.mark.parametrize(
    ("args", "says"),
    [
        (["--kubeconfig", "kc", str(EXAMPLES / "cluster-dump.yaml")], "give scenario FILEs or --kubeconfig, not both"),
        ([], "give scenario FILEs, or --kubeconfig to explain from a live cluster"),
        ([str(EXAMPLES / "cluster-dump.yaml"), "--scheduler-name", "x"], "--scheduler-name goes with --kubeconfig"),
        (["--kubeconfig", "kc", "--sessions", "2"], "--sessions goes with scenario FILEs"),
    ],
    ids=["both", "neither", "scheduler name offline", "sessions live"],
)
def test_explain_takes_files_or_a_kubeconfig(args: list[str], says: str) -> None:
    proc = run("explain", *args, "research/hp-sweep")
    _assert_one_line_error(proc, says)


def test_explain_with_a_missing_kubeconfig(tmp_path: Path) -> None:
    proc = run("explain", "--kubeconfig", tmp_path / "nowhere", "ns/pg")
    assert proc.returncode == 2 and "Traceback" not in proc.stderr
    assert proc.stderr.count("\n") == 1 and "nowhere" in proc.stderr


def test_check_reports_bad_files_and_exits_2(tmp_path: Path) -> None:
    path = tmp_path / "broken.yaml"
    path.write_text("objects: [\n")
    proc = run("check", path)
    assert proc.returncode == 2 and "Traceback" not in proc.stderr
    first = proc.stdout.splitlines()[0]
    assert first.startswith(f"ERROR {path}: not valid YAML")
    assert first.count(str(path)) == 1


def test_usage_errors_exit_2() -> None:
    proc = run("simulate", EXAMPLES / "quickstart.yaml", "--sessions", "0")
    assert proc.returncode == 2 and "expected a positive integer" in proc.stderr
    assert run().returncode == 2


@pytest.mark.parametrize("text", ["", "# nothing but a comment\n", "---\n---\n"])
def test_an_empty_file_is_no_objects_passed(tmp_path: Path, text: str) -> None:
    path = tmp_path / "empty.yaml"
    path.write_text(text)
    proc = run("simulate", path)
    _assert_one_line_error(proc, f"{path}: no objects passed")


@pytest.mark.parametrize("command", ["simulate", "replay"])
@pytest.mark.parametrize(
    "text",
    [
        "apiVersion: v1\nkind: List\nitems: []\n",  # what kubectl prints for an empty namespace
        "apiVersion: v1\nkind: List\nitems: null\n",
        '{"apiVersion": "v1", "kind": "List", "metadata": {"resourceVersion": ""}, "items": []}',
        "kind: List\nitems:\n- {kind: List, items: []}\n",
    ],
)
def test_a_list_without_items_is_no_objects_passed(
    tmp_path: Path, capsys: pytest.CaptureFixture[str], command: str, text: str
) -> None:
    path = tmp_path / "empty.yaml"
    path.write_text(text)
    assert cli.main([command, str(path)]) == 2
    err = capsys.readouterr().err
    assert err == f"volcanolib: error: {path}: no objects passed: the file's List has no items\n"


def test_simulate_reads_standard_input(tmp_path: Path) -> None:
    text = (EXAMPLES / "quickstart.yaml").read_text()
    from_file = run("simulate", EXAMPLES / "quickstart.yaml", "--json")
    proc = subprocess.run(
        [*command(), "simulate", "-", "--json"], input=text, capture_output=True, text=True, cwd=tmp_path, timeout=120
    )
    assert proc.returncode == 0, proc.stderr
    assert json.loads(proc.stdout)["binds"] == json.loads(from_file.stdout)["binds"]
    assert json.loads(proc.stdout)["binds"]


def test_empty_standard_input_is_no_objects_passed(tmp_path: Path) -> None:
    proc = subprocess.run([*command(), "simulate", "-"], input="", capture_output=True, text=True, timeout=120)
    _assert_one_line_error(proc, "<stdin>: no objects passed")


def test_a_plugin_failure_is_a_warning_and_the_run_succeeds(tmp_path: Path) -> None:
    conf = tmp_path / "s.conf"
    conf.write_text(
        "actions: enqueue, allocate\n"
        "tiers: [{plugins: [{name: gang}, {name: scripted-a, arguments: {raiseIn: job_ready}}]}]\n"
    )
    proc = run("simulate", EXAMPLES / "quickstart.yaml", "--conf", conf)
    assert proc.returncode == 0, proc.stderr
    assert "fails in job_ready" in proc.stderr
    assert "volcanolib: error:" not in proc.stderr
    assert all(line.startswith("volcanolib: warning:") for line in proc.stderr.splitlines())
    assert "Plugin errors" in proc.stdout


@pytest.mark.parametrize("command", ["simulate", "replay"])
def test_a_cluster_file_given_as_conf_is_not_a_configuration(capsys: pytest.CaptureFixture[str], command: str) -> None:
    workload = EXAMPLES / ("quickstart.yaml" if command == "simulate" else "replay/workload.yaml")
    cluster = EXAMPLES / "topology" / "cluster.yaml"  # several documents: HyperNodes, Nodes, Pods, ...
    assert cli.main([command, str(workload), "--conf", str(cluster)]) == 2
    assert capsys.readouterr().err == (
        f"volcanolib: error: {cluster}: 17 YAML documents of Kubernetes objects (HyperNode, Job, Node, Pod, "
        "PodGroup), not a scheduler configuration: a configuration is one mapping with 'actions' and 'tiers' "
        "(cluster files are given as FILE arguments)\n"
    )
