"""The openb reader: nodes, pods, runtime/patience rules, QoS classes, GPU models, fractional GPUs, bad rows."""

from __future__ import annotations

import logging
import re
from collections.abc import Callable
from pathlib import Path
from typing import Any

import pytest

from volcanolib.errors import ManifestError, TraceError
from volcanolib.kube import ManifestLoader
from volcanolib.replay.traces import TRACE_FORMATS, export_objects
from volcanolib.replay.traces.openb import POD_COLUMNS, QOS_CLASSES, read_openb
from volcanolib.sim import load_scenario, run_scenario

DATA = Path(__file__).resolve().parent / "data"
NODES = DATA / "openb_nodes.csv"
PODS = DATA / "openb_pods.csv"
HEADER = "name,cpu_milli,memory_mib,num_gpu,gpu_milli,gpu_spec,qos,pod_phase,creation_time,deletion_time,scheduled_time"


def by_name(objects: list[dict[str, Any]], kind: str) -> dict[str, dict[str, Any]]:
    return {o["metadata"]["name"]: o for o in objects if o["kind"] == kind}


@pytest.fixture(scope="module")
def objects() -> list[dict[str, Any]]:
    return read_openb([PODS], NODES)


def test_the_format_is_registered() -> None:
    fmt = TRACE_FORMATS["openb"]
    assert fmt.name == "openb" and fmt.needs_nodes
    assert fmt.read([PODS], NODES) == read_openb([PODS], NODES)


def test_nodes_have_allocatable_gpus_and_the_model_label(objects: list[dict[str, Any]]) -> None:
    nodes = by_name(objects, "Node")
    assert list(nodes) == ["cpu-node-0", "gpu-node-a", "gpu-node-b", "gpu-node-c"]
    assert nodes["cpu-node-0"]["status"]["allocatable"] == {"cpu": "32", "memory": "131072Mi", "pods": "110"}
    assert "alibabacloud.com/gpu-card-model" not in nodes["cpu-node-0"]["metadata"]["labels"]
    gpu = nodes["gpu-node-c"]
    assert gpu["status"]["allocatable"] == {"cpu": "48", "memory": "196608Mi", "nvidia.com/gpu": "4", "pods": "110"}
    assert gpu["metadata"]["labels"]["alibabacloud.com/gpu-card-model"] == "V100M32"


def test_a_scheduled_pod_runs_from_scheduled_to_deletion(objects: list[dict[str, Any]]) -> None:
    pod = by_name(objects, "Pod")["p-whole"]
    assert pod["metadata"]["creationTimestamp"] == "1970-01-01T00:00:00Z"
    assert pod["metadata"]["annotations"]["volcanolib.io/duration"] == "3598s"  # 3600 - 2
    assert "volcanolib.io/cancel-after" not in pod["metadata"]["annotations"]
    assert "volcanolib.io/exit-code" not in pod["metadata"]["annotations"]  # Running in the trace: ends Succeeded


def test_a_failed_pod_ends_failed_after_its_runtime(objects: list[dict[str, Any]]) -> None:
    annotations = by_name(objects, "Pod")["p-multi"]["metadata"]["annotations"]
    assert annotations["volcanolib.io/duration"] == "870s"  # 920 - 50
    assert annotations["volcanolib.io/exit-code"] == "1"


def test_a_pod_never_scheduled_gets_its_lifetime_as_patience_and_runtime(objects: list[dict[str, Any]]) -> None:
    annotations = by_name(objects, "Pod")["p-never"]["metadata"]["annotations"]
    assert annotations["volcanolib.io/cancel-after"] == annotations["volcanolib.io/duration"] == "60s"
    assert "volcanolib.io/exit-code" not in annotations


def test_fractional_times_are_kept(objects: list[dict[str, Any]]) -> None:
    pod = by_name(objects, "Pod")["p-cpu"]
    assert pod["metadata"]["annotations"]["volcanolib.io/duration"] == "59.5s"  # 90 - 30.5


def test_a_fractional_gpu_asks_for_one_whole_gpu_and_keeps_its_fraction(objects: list[dict[str, Any]]) -> None:
    pod = by_name(objects, "Pod")["p-frac"]
    assert pod["spec"]["containers"][0]["resources"]["requests"] == {
        "cpu": "4",
        "memory": "15258Mi",
        "nvidia.com/gpu": "1",
    }
    assert pod["metadata"]["annotations"]["alibabacloud.com/gpu-milli"] == "250"
    multi = by_name(objects, "Pod")["p-multi"]
    assert multi["spec"]["containers"][0]["resources"]["requests"]["nvidia.com/gpu"] == "4"
    assert "alibabacloud.com/gpu-milli" not in multi["metadata"]["annotations"]
    cpu = by_name(objects, "Pod")["p-cpu"]
    assert cpu["spec"]["containers"][0]["resources"]["requests"] == {"cpu": "2500m", "memory": "4096Mi"}


def test_gpu_spec_becomes_required_node_affinity_on_the_model_label(objects: list[dict[str, Any]]) -> None:
    pod = by_name(objects, "Pod")["p-multi"]
    terms = pod["spec"]["affinity"]["nodeAffinity"]["requiredDuringSchedulingIgnoredDuringExecution"]
    assert terms["nodeSelectorTerms"] == [
        {
            "matchExpressions": [
                {"key": "alibabacloud.com/gpu-card-model", "operator": "In", "values": ["A100", "V100M32"]}
            ]
        }
    ]
    assert "affinity" not in by_name(objects, "Pod")["p-whole"]["spec"]


def test_qos_maps_to_priority_classes_in_order(objects: list[dict[str, Any]]) -> None:
    classes = by_name(objects, "PriorityClass")
    assert {name: pc["value"] for name, pc in classes.items()} == dict(QOS_CLASSES.values())
    loader = ManifestLoader()
    loader.add_objects(objects, source="openb")
    priority = {t.name: t.priority for t in loader.load().tasks}
    # LS > Guaranteed > Burstable > BE
    assert priority["p-whole"] > priority["p-cpu"] > priority["p-multi"] > priority["p-frac"] == priority["p-never"]


def test_only_the_qos_classes_used_are_written(tmp_path: Path) -> None:
    pods = tmp_path / "pods.csv"
    pods.write_text(f"{HEADER}\na,1000,1024,0,0,,BE,Running,0,10,0\n")
    assert list(by_name(read_openb([pods], NODES), "PriorityClass")) == ["openb-be"]


def test_the_converted_trace_schedules_pods_only_on_their_gpu_models(tmp_path: Path) -> None:
    path = tmp_path / "openb.yaml"
    export_objects(read_openb([PODS], NODES), path)
    result = run_scenario(load_scenario([path]), sessions=1)
    assert result.binds["default/p-multi"] in {"gpu-node-a", "gpu-node-c"}
    assert result.binds["default/p-never"] == "gpu-node-b"
    assert result.binds["default/p-cpu"]  # a CPU pod fits anywhere
    assert len(result.binds) == 5


def test_pandas_style_cells_are_read(tmp_path: Path) -> None:
    pods = tmp_path / "pods.csv"
    pods.write_text(f"{HEADER}\na,1000.0,1024.0,1.0,500.0,nan,ls,running,0.0,10.0,nan\n")
    (pod,) = by_name(read_openb([pods], NODES), "Pod").values()
    assert pod["spec"]["containers"][0]["resources"]["requests"] == {
        "cpu": "1",
        "memory": "1024Mi",
        "nvidia.com/gpu": "1",
    }
    assert pod["spec"]["priorityClassName"] == "openb-ls"
    assert "affinity" not in pod["spec"]
    assert pod["metadata"]["annotations"]["volcanolib.io/cancel-after"] == "10s"


def test_several_pod_lists_are_merged_and_names_must_differ(tmp_path: Path) -> None:
    other = tmp_path / "more.csv"
    other.write_text(f"{HEADER}\nq,1000,1024,0,0,,BE,Running,5,10,5\n")
    names = list(by_name(read_openb([PODS, other], NODES), "Pod"))
    assert names == ["p-whole", "p-frac", "p-multi", "p-cpu", "p-never", "q"]
    other.write_text(f"{HEADER}\np-frac,1000,1024,0,0,,BE,Running,5,10,5\n")
    with pytest.raises(TraceError) as info:
        read_openb([PODS, other], NODES)
    assert str(info.value) == f"{other}: row 2: column name: pod 'p-frac' is already listed at {PODS} row 3"


def test_an_unknown_gpu_model_is_a_warning(tmp_path: Path, caplog: pytest.LogCaptureFixture) -> None:
    pods = tmp_path / "pods.csv"
    pods.write_text(
        f"{HEADER}\na,1000,1024,1,1000,H100|H800,LS,Running,0,10,0\nb,1000,1024,1,1000,T4,LS,Running,0,10,0\n"
    )
    with caplog.at_level(logging.WARNING, logger="volcanolib.replay"):
        read_openb([pods], NODES)
    assert [r.getMessage() for r in caplog.records] == [
        "1 pod(s) require GPU model H100|H800, which no node has: they will never be placed"
    ]


# ------------------------------------------------------------------- bad input


@pytest.mark.parametrize(
    ("row", "column", "value", "message"),
    [
        (3, "creation_time", "-5", "negative time '-5'"),
        (3, "deletion_time", "", "missing value"),
        (2, "cpu_milli", "12k", "expected a number, got '12k'"),
        (2, "memory_mib", "inf", "expected a finite number, got 'inf'"),
        (2, "num_gpu", "1.5", "expected a whole number, got '1.5'"),
        (2, "num_gpu", "-1", "expected a number at least 0, got '-1'"),
        (3, "gpu_milli", "1500", "expected a number at most 1000, got '1500'"),
        (5, "gpu_milli", "300", "300 thousandths of a GPU but num_gpu is 0"),
        (4, "qos", "Gold", "unknown qos 'Gold' (expected LS, Guaranteed, Burstable, BE)"),
        (4, "qos", "", "missing value"),
        (4, "pod_phase", "Lost", "unknown pod_phase 'Lost' (expected Succeeded, Running, Pending, Failed)"),
        (6, "deletion_time", "39", "deletion_time 39 is before creation_time 40"),
        (4, "scheduled_time", "19", "scheduled_time 19 is before creation_time 20"),
        (4, "scheduled_time", "921", "scheduled_time 921 is after deletion_time 920"),
        (2, "name", "", "missing value"),
    ],
)
def test_a_bad_row_names_the_file_row_and_column(
    with_cell: Callable[[Path, int, str, str], Path], row: int, column: str, value: str, message: str
) -> None:
    path = with_cell(PODS, row, column, value)
    with pytest.raises(TraceError) as info:
        read_openb([path], NODES)
    assert str(info.value) == f"{path}: row {row}: column {column}: {message}"
    assert (info.value.row, info.value.column) == (row, column)
    assert isinstance(info.value, ManifestError)  # the CLI prints one line and exits 2


def test_a_missing_column_names_it(tmp_path: Path) -> None:
    path = tmp_path / "pods.csv"
    path.write_text(HEADER.replace(",qos", "") + "\n")
    with pytest.raises(
        TraceError, match=r"pods.csv: row 1: not an openb pod list: missing column qos \(expected name,"
    ):
        read_openb([path], NODES)


def test_a_short_row_and_an_empty_list_are_refused(tmp_path: Path) -> None:
    path = tmp_path / "pods.csv"
    path.write_text(f"{HEADER}\n\na,1000,1024\n")
    with pytest.raises(TraceError, match=r"pods.csv: row 3: expected 11 fields, got 3$"):
        read_openb([path], NODES)
    path.write_text(f"{HEADER}\n")
    with pytest.raises(TraceError, match=r"pods.csv: the openb pod list has no rows$"):
        read_openb([path], NODES)
    path.write_text("")
    with pytest.raises(TraceError, match=r"pods.csv: not an openb pod list: the file is empty"):
        read_openb([path], NODES)


def test_the_node_list_is_required_and_must_not_be_given_as_a_pod_list(tmp_path: Path) -> None:
    with pytest.raises(ManifestError, match=r"the openb format needs the node list: --nodes NODES\.csv"):
        read_openb([PODS], None)
    with pytest.raises(TraceError, match=r"openb_nodes.csv: row 1: this is a node list, not a pod list"):
        read_openb([NODES, PODS], NODES)
    with pytest.raises(TraceError, match=r"missing.csv: cannot read: No such file"):
        read_openb([tmp_path / "missing.csv"], NODES)


@pytest.mark.parametrize(
    ("line", "column", "message"),
    [
        ("n1,32000,1024,x,", "gpu", "expected a number, got 'x'"),
        ("n1,-1,1024,0,", "cpu_milli", "expected a number at least 0, got '-1'"),
        (",32000,1024,0,", "sn", "missing value"),
    ],
)
def test_a_bad_node_row_names_the_file_row_and_column(tmp_path: Path, line: str, column: str, message: str) -> None:
    nodes = tmp_path / "nodes.csv"
    nodes.write_text(f"sn,cpu_milli,memory_mib,gpu,model\nn0,1000,1024,0,\n{line}\n")
    with pytest.raises(TraceError) as info:
        read_openb([PODS], nodes)
    assert str(info.value) == f"{nodes}: row 3: column {column}: {message}"


def test_a_node_listed_twice_is_refused(tmp_path: Path) -> None:
    nodes = tmp_path / "nodes.csv"
    nodes.write_text("sn,cpu_milli,memory_mib,gpu,model\nn0,1000,1024,0,\nn0,1000,1024,0,\n")
    with pytest.raises(TraceError, match=r"row 3: column sn: node 'n0' is already listed at row 2$"):
        read_openb([PODS], nodes)


def test_nodes_may_be_given_as_manifests(tmp_path: Path) -> None:
    manifests = tmp_path / "nodes.yaml"
    export_objects(list(by_name(read_openb([PODS], NODES), "Node").values()), manifests)
    assert read_openb([PODS], manifests) == read_openb([PODS], NODES)


def test_the_traces_page_says_which_pod_lists_the_format_takes(tmp_path: Path) -> None:
    page = (Path(__file__).resolve().parents[4] / "docs" / "traces.md").read_text(encoding="utf-8")
    section = page[page.index("## openb") : page.index("### Node list")]
    # The columns the page names are the reader's, in its order.
    named = re.search(r"eleven columns `([^`]*)`", section)
    assert named is not None
    assert [c.strip() for c in named.group(1).split(",")] == list(POD_COLUMNS)
    # A list in the multigpu lists' schema is refused with the line the page shows.
    shown = [line for line in section.splitlines() if line.startswith("openb_pod_list_multigpu50.csv: ")]
    assert len(shown) == 1
    multigpu = tmp_path / "openb_pod_list_multigpu50.csv"
    multigpu.write_text("name,cpu_milli,memory_mib,num_gpu,gpu_milli\nopenb-pod-0000,12000,16384,1,1000\n")
    with pytest.raises(TraceError) as refused:
        read_openb([multigpu], NODES)
    assert str(refused.value).replace(str(tmp_path) + "/", "") == shown[0]
