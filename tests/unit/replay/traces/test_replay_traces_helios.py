"""The Helios reader: jobs as gangs split over their nodes, states, queues per VC and their weights, bad rows."""

from __future__ import annotations

from collections.abc import Callable
from pathlib import Path
from typing import Any

import pytest
from hypothesis import given
from hypothesis import strategies as st

from volcanolib.errors import ManifestError, TraceError
from volcanolib.kube import ManifestLoader
from volcanolib.replay.traces import TRACE_FORMATS
from volcanolib.replay.traces.helios import _tasks, read_helios

DATA = Path(__file__).resolve().parent / "data"
NODES = DATA / "helios_nodes.csv"
LOG = DATA / "helios_cluster_log.csv"
GPUS = DATA / "helios_gpu_number.csv"
HEADER = "job_id,user,vc,gpu_num,cpu_num,node_num,state,submit_time,start_time,end_time,duration,queue"


def by_name(objects: list[dict[str, Any]], kind: str) -> dict[str, dict[str, Any]]:
    return {o["metadata"]["name"]: o for o in objects if o["kind"] == kind}


@pytest.fixture(scope="module")
def objects() -> list[dict[str, Any]]:
    return read_helios([LOG, GPUS], NODES)


def test_the_format_is_registered() -> None:
    fmt = TRACE_FORMATS["helios"]
    assert fmt.name == "helios" and fmt.needs_nodes
    assert fmt.read([LOG], NODES) == read_helios([LOG], NODES)


def test_a_job_is_a_gang_of_node_num_pods_in_its_vc_queue(objects: list[dict[str, Any]]) -> None:
    job = by_name(objects, "Job")["job-1002"]
    assert job["metadata"]["creationTimestamp"] == "2020-06-09T18:42:00Z"
    assert job["spec"]["queue"] == "vcTeamB"
    assert job["spec"]["minAvailable"] == 2
    (task,) = job["spec"]["tasks"]
    assert task["replicas"] == 2
    assert task["template"]["spec"]["containers"][0]["resources"]["requests"] == {"cpu": "48", "nvidia.com/gpu": "8"}
    assert job["metadata"]["annotations"]["volcanolib.io/user"] == "uBeta"


def test_uneven_resources_are_split_exactly_over_the_pods(objects: list[dict[str, Any]]) -> None:
    loader = ManifestLoader()
    loader.add_objects(objects, source="helios")
    cluster = loader.load()
    pods = sorted(
        (t.resreq.milli_cpu, t.resreq.get("nvidia.com/gpu")) for t in cluster.tasks if t.job == "default/job-1003"
    )
    assert pods == [(5000, 1000), (5000, 2000)]  # 3 GPUs and 10 CPUs over 2 nodes
    group = next(pg for pg in cluster.pod_groups if pg.name == "job-1003")
    assert group.min_member == 2


@given(gpus=st.integers(0, 200), cpus=st.integers(0, 500), pods=st.integers(1, 40))
def test_the_split_sums_to_the_job_and_pods_differ_by_at_most_one(gpus: int, cpus: int, pods: int) -> None:
    shapes: list[tuple[int, int]] = []
    for task in _tasks(gpus, cpus, pods):
        requests = task["template"]["spec"]["containers"][0]["resources"]["requests"]
        shapes += [(int(requests.get("nvidia.com/gpu", 0)), int(requests["cpu"]))] * task["replicas"]
    assert len(shapes) == pods
    assert sum(g for g, _ in shapes) == gpus and sum(c for _, c in shapes) == cpus
    assert max(g for g, _ in shapes) - min(g for g, _ in shapes) <= 1
    assert max(c for _, c in shapes) - min(c for _, c in shapes) <= 1


def test_states_give_runtime_outcome_and_patience(objects: list[dict[str, Any]]) -> None:
    jobs = {name: job["metadata"]["annotations"] for name, job in by_name(objects, "Job").items()}
    assert jobs["job-1001"] == {"volcanolib.io/duration": "3600s", "volcanolib.io/user": "uAlpha"}  # COMPLETED
    assert jobs["job-1002"]["volcanolib.io/exit-code"] == "1"  # FAILED
    assert jobs["job-1004"]["volcanolib.io/exit-code"] == "1"  # TIMEOUT
    assert jobs["job-1004"]["volcanolib.io/duration"] == "7200s"
    never = jobs["job-1003"]  # CANCELLED before it started: 10 minutes of patience
    assert never["volcanolib.io/cancel-after"] == never["volcanolib.io/duration"] == "600s"
    assert "volcanolib.io/exit-code" not in never


def test_queues_per_vc_weighted_by_their_gpus_on_the_last_date(objects: list[dict[str, Any]]) -> None:
    queues = by_name(objects, "Queue")
    assert {name: q["spec"]["weight"] for name, q in queues.items()} == {"vcIdle": 4, "vcTeamA": 8, "vcTeamB": 16}
    plain = by_name(read_helios([LOG], NODES), "Queue")
    assert {name: q["spec"]["weight"] for name, q in plain.items()} == {"vcTeamA": 1, "vcTeamB": 1}


def test_the_runtime_comes_from_the_times_when_duration_is_absent_and_times_may_be_numbers(tmp_path: Path) -> None:
    log = tmp_path / "cluster_log.csv"
    log.write_text(
        "job_id,user,vc,gpu_num,cpu_num,node_num,state,submit_time,start_time,end_time\n"
        "7,u,vc,1,1,1,COMPLETED,100,160,220.5\n"
        "8,u,vc,1,1,1,COMPLETED,2020-06-09T18:41:01Z,2020-06-09T18:41:01+00:00,2020-06-09 18:42:01\n"
    )
    jobs = by_name(read_helios([log], NODES), "Job")
    assert jobs["job-7"]["metadata"]["creationTimestamp"] == "1970-01-01T00:01:40Z"
    assert jobs["job-7"]["metadata"]["annotations"]["volcanolib.io/duration"] == "60.5s"
    assert jobs["job-8"]["metadata"]["annotations"]["volcanolib.io/duration"] == "60s"


@pytest.mark.parametrize(
    ("row", "column", "value", "message"),
    [
        (2, "submit_time", "yesterday", "expected a time such as 2020-06-09 18:41:01, got 'yesterday'"),
        (2, "submit_time", "", "missing value"),
        (2, "end_time", "-3", "negative time '-3'"),
        (2, "end_time", "2020-06-09 18:00:00", "end_time 2020-06-09 18:00:00 is before start_time 2020-06-09 18:41:01"),
        (
            3,
            "start_time",
            "2020-06-09 18:41:00",
            "start_time 2020-06-09 18:41:00 is before submit_time 2020-06-09 18:42:00",
        ),
        (
            4,
            "end_time",
            "2020-06-09 18:00:00",
            "end_time 2020-06-09 18:00:00 is before submit_time 2020-06-09 18:43:00",
        ),
        (3, "node_num", "0", "a job runs on at least one node, got 0"),
        (3, "gpu_num", "two", "expected a number, got 'two'"),
        (5, "state", "RUNNING", "unknown state 'RUNNING' (expected COMPLETED, FAILED, CANCELLED, TIMEOUT, NODE_FAIL)"),
        (5, "vc", "", "missing value"),
        (5, "duration", "-1", "negative time '-1'"),
        (3, "job_id", "1001", "job '1001' is already listed at row 2"),
    ],
)
def test_a_bad_row_names_the_file_row_and_column(
    with_cell: Callable[[Path, int, str, str], Path], row: int, column: str, value: str, message: str
) -> None:
    path = with_cell(LOG, row, column, value)
    with pytest.raises(TraceError) as info:
        read_helios([path], NODES)
    assert str(info.value) == f"{path}: row {row}: column {column}: {message}"


def test_files_in_the_wrong_place_are_refused(tmp_path: Path) -> None:
    with pytest.raises(ManifestError, match="the helios format needs the nodes"):
        read_helios([LOG], None)
    with pytest.raises(TraceError, match=r"helios_nodes.csv: row 1: this is a node list, not a job log"):
        read_helios([NODES, LOG], NODES)
    with pytest.raises(TraceError, match=r"row 1: a second per-VC GPU table"):
        read_helios([LOG, GPUS, GPUS], NODES)
    with pytest.raises(ManifestError, match=r"no Helios job log \(cluster_log.csv\) given"):
        read_helios([GPUS], NODES)
    bad = tmp_path / "gpus.csv"
    bad.write_text("date,vcA,total\n2020-06-01,x,8\n")
    with pytest.raises(TraceError, match=r"gpus.csv: row 2: column vcA: expected a number, got 'x'"):
        read_helios([LOG, bad], NODES)
