"""Volcano's own example/ folder, as ``simulate`` runs it: scheduled, or refused with Volcano's reason.

The examples are read from the pinned release in the Go module cache (see
``volcano_module.py``), never copied into this repository. Each runs on a
cluster of our own (four 16-cpu nodes, one with GPUs, one labelled with the
hostname the node-selector demo names), in which Volcano schedules every
demo in full; the invalid Jobs are refused by Volcano's admission webhook.

Differences that show here, each documented: ``simulate`` makes the pods of
a task with ``dependsOn`` at once (task-start-dependency binds every pod in
one session where Volcano starts the later stages as the earlier ones run).
"""

from __future__ import annotations

from pathlib import Path

import pytest
from volcano_module import volcano_module

from volcanolib.errors import ManifestError
from volcanolib.sim.runner import load_scenario, run_scenario

pytestmark = pytest.mark.go

NODES = """\
apiVersion: v1
kind: List
items:
- {apiVersion: v1, kind: Node,
   metadata: {name: n1, labels: {kubernetes.io/hostname: "192.168.23.24", kubernetes.io/os: linux}},
   status: {allocatable: {cpu: "16", memory: 64Gi, ephemeral-storage: 100Gi, pods: "110"}}}
- {apiVersion: v1, kind: Node, metadata: {name: n2, labels: {kubernetes.io/hostname: n2, kubernetes.io/os: linux}},
   status: {allocatable: {cpu: "16", memory: 64Gi, ephemeral-storage: 100Gi, pods: "110"}}}
- {apiVersion: v1, kind: Node, metadata: {name: n3, labels: {kubernetes.io/hostname: n3, kubernetes.io/os: linux}},
   status: {allocatable: {cpu: "16", memory: 64Gi, ephemeral-storage: 100Gi, pods: "110"}}}
- {apiVersion: v1, kind: Node, metadata: {name: n4, labels: {kubernetes.io/hostname: n4, kubernetes.io/os: linux}},
   status: {allocatable: {cpu: "16", memory: 64Gi, ephemeral-storage: 100Gi, pods: "110", nvidia.com/gpu: "4"}}}
"""

#: Files (relative to example/) -> the pods Volcano binds, per PodGroup (name prefix -> pods).
SCHEDULED: dict[str, dict[str, int]] = {
    "job.yaml": {"default/test-job": 6},
    "job-plugin.yaml": {"default/test-job-plugin": 3},
    "deployment": {"default/podgroup-replicaset-deploy-with-volcano-": 1},
    "hierarchical-jobs": {
        "default/eng-prod-job": 6,
        "default/eng-dev-job": 6,
        "default/sci-prod-job": 6,
        "default/sci-dev-job": 6,
    },
    # nginx.yaml's ReplicaSet names no scheduler: the default scheduler's, not Volcano's
    "kubecon-2019-china/drf": {"default/podgroup-replicaset-nginx-1": 8, "default/podgroup-replicaset-nginx-2": 8},
    "kubecon-2019-china/gang": {"default/lm-mpi-job": 4},
    "kubecon-2019-china/node-selector": {"default/podgroup-replicaset-nginx": 8},
    "kubecon-2019-china/horovod-sample": {"default/lm-horovod-job": 4},
    "kubecon-2019-china/mpi-sample": {"default/lm-mpi-job": 3},
    "kubecon-2019-china/tf-sample": {"default/tensorflow-benchmark": 3},
    # the same demo without normal-priority.yaml, which names high-pri again (see the refusals)
    "kubecon-2019-china/task-priority/elastic-job.yaml+high-priority.yaml+nginx.yaml": {"default/elastic-job": 10},
    # a SparkApplication (and a PodGroup of an old API group) need the Spark operator: nothing to schedule
    "kubecon-2019-china/spark-sample": {},
    "task-start-dependency/job.yaml": {"default/job": 11},
    "task-start-dependency/mpi.yaml": {"default/lm-mpi-job": 11},
    "integrations/mpi/mpi-example.yaml": {"default/lm-mpi-job": 3},
    "integrations/mxnet/train/train-mnist-cpu.yaml": {"default/mxnet-job": 5},
    "integrations/paddlepaddle/ctr-paddlepaddle-on-volcano.yaml": {"default/ctr-volcano": 4},
    "integrations/ray/ray-example.yaml": {"default/ray-cluster-job": 3},
    "integrations/tensorflow/benchmark/tf-example.yaml": {"default/tensorflow-benchmark": 3},
    "integrations/tensorflow/dist-mnist/tf-dist-mnist-example.yaml": {"default/tensorflow-dist-mnist": 3},
    "MindSpore-example/mindspore_cpu/mindspore-cpu.yaml": {"default/mindspore-cpu": 8},
    "MindSpore-example/mindspore_gpu/mindspore-gpu.yaml": {"default/mindspore-gpu": 3},
}

#: Files -> (field, the reason, in volcanolib's words) Volcano refuses them for.
REFUSED: dict[str, tuple[str | None, str]] = {
    "invalid_jobs/duplicatedPolicyEvent-webhook-deny.yaml": (
        "spec.policies[1]",
        "event 'PodFailed' is already handled by policy 0 of this list",
    ),
    "invalid_jobs/duplicatedTaskName-webhook-deny.yaml": ("spec.tasks[1].name", "duplicate task name 'task-1'"),
    "invalid_jobs/minAvailable-webhook-deny.yaml": ("spec.minAvailable", "5 is more than the 4 replicas"),
    # both files create PriorityClass high-pri: the API server refuses the second (AlreadyExists)
    "kubecon-2019-china/task-priority": (None, "PriorityClass high-pri: duplicate object"),
}


@pytest.fixture(scope="module")
def examples() -> Path:
    return volcano_module() / "example"


def _files(examples: Path, entry: str) -> list[Path]:
    folder, _, names = entry.rpartition("/") if "+" in entry else ("", "", "")
    if names:
        return [examples / folder / name for name in names.split("+")]
    path = examples / entry
    return sorted(path.glob("*.yaml")) if path.is_dir() else [path]


@pytest.mark.parametrize("entry", sorted(SCHEDULED))
def test_volcano_example_schedules(entry: str, examples: Path, tmp_path: Path) -> None:
    nodes = tmp_path / "nodes.yaml"
    nodes.write_text(NODES)
    result = run_scenario(load_scenario([nodes, *_files(examples, entry)]))
    bound: dict[str, int] = {}
    for name, group in result.pod_groups.items():
        for prefix in SCHEDULED[entry]:
            if name.startswith(prefix):
                bound[prefix] = group.scheduled
                assert group.phase.value == "Running", (name, group.phase)
    assert bound == SCHEDULED[entry]
    assert len(result.binds) == sum(SCHEDULED[entry].values())
    assert not result.unschedulable
    if entry == "kubecon-2019-china/node-selector":
        assert set(result.binds.values()) == {"n1"}  # the node labelled 192.168.23.24


@pytest.mark.parametrize("entry", sorted(REFUSED))
def test_volcano_example_is_refused_for_volcanos_reason(entry: str, examples: Path, tmp_path: Path) -> None:
    nodes = tmp_path / "nodes.yaml"
    nodes.write_text(NODES)
    field, reason = REFUSED[entry]
    with pytest.raises(ManifestError) as info:
        load_scenario([nodes, *_files(examples, entry)])
    assert info.value.field == field
    assert reason in str(info.value)
    assert str(info.value).startswith(str(examples)), str(info.value)  # names the file


def test_every_demo_folder_is_covered(examples: Path) -> None:
    covered = {entry.split("+")[0].rpartition("/")[0] if "+" in entry else entry for entry in [*SCHEDULED, *REFUSED]}
    for folder in ("deployment", "invalid_jobs", "task-start-dependency", "hierarchical-jobs"):
        for path in (examples / folder).glob("*.yaml"):
            rel = str(path.relative_to(examples))
            assert folder in covered or rel in covered, rel
    for path in (examples / "kubecon-2019-china").iterdir():
        if any(path.glob("*.yaml")):
            assert f"kubecon-2019-china/{path.name}" in covered or any(
                c.startswith(f"kubecon-2019-china/{path.name}") for c in covered
            ), path.name
