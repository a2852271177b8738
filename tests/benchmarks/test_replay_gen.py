"""The replay benchmarks' generators (shape, determinism) and runner (records, table, JSON).

Figures are measured by ``python -m benchmarks replay-day|replay-openb``, never asserted here.
"""

from __future__ import annotations

import contextlib
import io
import json
import statistics
import sys
from collections import Counter
from pathlib import Path
from typing import Any

import pytest

ROOT = Path(__file__).resolve().parents[2]
if str(ROOT) not in sys.path:  # the benchmarks package lives beside volcanolib, uninstalled
    sys.path.insert(0, str(ROOT))

from benchmarks import __main__ as cli  # noqa: E402
from benchmarks import replay, replay_gen  # noqa: E402
from volcanolib.replay.traces.openb import POD_COLUMNS, read_openb  # noqa: E402


@pytest.fixture(scope="module")
def day() -> list[dict[str, Any]]:
    return replay_gen.day_objects(2_000, seed=3)


def test_the_day_has_1000_nodes_three_queues_and_the_jobs(day: list[dict[str, Any]]) -> None:
    kinds = Counter(o["kind"] for o in day)
    assert kinds == {"Node": 1_000, "Queue": 3, "Job": 2_000}
    gpu_nodes = [o for o in day if o["kind"] == "Node" and "nvidia.com/gpu" in o["status"]["allocatable"]]
    assert len(gpu_nodes) == 200
    assert {o["metadata"]["name"]: o["spec"]["weight"] for o in day if o["kind"] == "Queue"} == {
        "production": 3,
        "research": 2,
        "batch": 1,
    }


def test_day_jobs_are_gangs_of_1_to_64_pods_about_5_on_average_over_24_hours(day: list[dict[str, Any]]) -> None:
    jobs = [o for o in day if o["kind"] == "Job"]
    sizes = [j["spec"]["tasks"][0]["replicas"] for j in jobs]
    assert min(sizes) == 1 and max(sizes) == 64
    assert 4.0 <= statistics.mean(sizes) <= 6.0
    assert all(j["spec"]["minAvailable"] == j["spec"]["tasks"][0]["replicas"] for j in jobs)
    times = [j["metadata"]["creationTimestamp"] for j in jobs]
    assert times == sorted(times)
    assert times[0] >= "1970-01-01T00:00:00" and times[-1] < "1970-01-02T00:00:00"
    assert {j["spec"]["queue"] for j in jobs} == {"production", "research", "batch"}
    runtimes = sorted(float(j["metadata"]["annotations"]["volcanolib.io/duration"][:-1]) for j in jobs)
    assert runtimes[0] > 0 and runtimes[-1] <= 2 * 86_400
    assert 2_400 <= runtimes[len(runtimes) // 2] <= 5_400  # log-normal, median one hour
    gpu_jobs = sum(
        "nvidia.com/gpu" in j["spec"]["tasks"][0]["template"]["spec"]["containers"][0]["resources"]["requests"]
        for j in jobs
    )
    assert 0.15 <= gpu_jobs / len(jobs) <= 0.25


def test_the_generators_are_deterministic_per_seed() -> None:
    assert replay_gen.day_objects(300, seed=5) == replay_gen.day_objects(300, seed=5)
    assert replay_gen.day_objects(300, seed=5) != replay_gen.day_objects(300, seed=6)
    assert replay_gen.openb_tables(nodes=50, pods=200, seed=5) == replay_gen.openb_tables(nodes=50, pods=200, seed=5)
    assert replay_gen.openb_tables(nodes=50, pods=200, seed=5) != replay_gen.openb_tables(nodes=50, pods=200, seed=6)


@pytest.fixture(scope="module")
def openb(tmp_path_factory: pytest.TempPathFactory) -> tuple[Path, Path]:
    return replay_gen.write_openb(tmp_path_factory.mktemp("openb"), seed=2)


def test_the_synthetic_openb_trace_has_the_real_size_and_reads_cleanly(openb: tuple[Path, Path]) -> None:
    nodes, pods = openb
    rows = pods.read_text().splitlines()
    assert rows[0] == ",".join(POD_COLUMNS)
    assert len(rows) == 1 + 8_152 and len(nodes.read_text().splitlines()) == 1 + 1_523
    objects = read_openb([pods], nodes)  # every row obeys the reader's rules
    assert Counter(o["kind"] for o in objects)["Pod"] == 8_152


def test_the_synthetic_openb_mix_and_times(openb: tuple[Path, Path]) -> None:
    _, pods = openb
    header, *rows = [line.split(",") for line in pods.read_text().splitlines()]
    col = {name: i for i, name in enumerate(header)}
    gpus = Counter(int(r[col["num_gpu"]]) for r in rows)
    assert gpus.most_common(1)[0][0] == 1 and 0.75 <= gpus[1] / len(rows) <= 0.85
    one = [r for r in rows if r[col["num_gpu"]] == "1"]
    fractional = sum(int(r[col["gpu_milli"]]) < 1000 for r in one) / len(one)
    assert 0.40 <= fractional <= 0.50
    creation = [int(r[col["creation_time"]]) for r in rows]
    deletion = [int(r[col["deletion_time"]]) for r in rows]
    assert creation == sorted(creation)
    assert 140 * 86_400 <= max(deletion) <= 150 * 86_400
    assert sum(c < 115 * 86_400 for c in creation) / len(rows) < 0.05  # most arrive over the last 35 days
    never = [r for r in rows if not r[col["scheduled_time"]]]
    assert never and all(r[col["pod_phase"]] == "Pending" for r in never)
    assert {r[col["pod_phase"]] for r in rows} == {"Running", "Failed", "Succeeded", "Pending"}


def test_the_runner_writes_a_record_per_run(tmp_path: Path) -> None:
    out = tmp_path / "openb.json"
    stdout, stderr = io.StringIO(), io.StringIO()
    argv = ["replay-openb", "--nodes", "20", "--pods", "40", "--out", str(out), "--generated", str(tmp_path / "gen")]
    with contextlib.redirect_stdout(stdout), contextlib.redirect_stderr(stderr):
        status = cli.main(argv)
    assert status == 0, stderr.getvalue()
    (record,) = json.loads(out.read_text())["results"]
    assert record["benchmark"] == "replay-openb"
    assert record["nodes"] == 20 and record["jobs"] == 40 and record["pod_attempts"] == 40
    assert sum(record["job_phases"].values()) == 40
    for key in (
        "process_wall_seconds",
        "process_cpu_seconds",
        "load_seconds",
        "replay_seconds",
        "sessions_seconds",
        "snapshots_seconds",
    ):
        assert record[key] >= 0
    assert record["process_wall_seconds"] >= record["replay_seconds"]
    assert record["peak_rss_mib"] > 0 and record["sessions_run"] > 0
    lines = stdout.getvalue().splitlines()
    assert lines[0].split()[:3] == ["nodes", "jobs", "pods"] and lines[1].split()[:3] == ["20", "40", "40"]


def test_the_runner_refuses_bad_sizes() -> None:
    with pytest.raises(SystemExit), contextlib.redirect_stderr(io.StringIO()):
        replay.main(["replay-day", "--jobs", "0"])
    with pytest.raises(SystemExit), contextlib.redirect_stderr(io.StringIO()):
        replay.main(["replay-openb", "--pods", "0"])
