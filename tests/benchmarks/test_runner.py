"""The benchmark runner: records carry every field, W1-S binds every pod, W4-S evicts; JSON and YAML agree;
W5's cycles bind their arrivals in the room their finishes free.

Figures are measured here, never asserted: only counts and the shape of the records are checked.
"""

from __future__ import annotations

import contextlib
import io
import json
import re
import sys
from pathlib import Path
from typing import Any

import pytest
import yaml

ROOT = Path(__file__).resolve().parents[2]
if str(ROOT) not in sys.path:  # the benchmarks package lives beside volcanolib, uninstalled
    sys.path.insert(0, str(ROOT))

from benchmarks import __main__ as cli  # noqa: E402
from benchmarks.workloads import ANCHORS, BenchmarkError, ensure_workload, selection, table  # noqa: E402
from volcanolib.kube import read_documents  # noqa: E402
from volcanolib.sim import load_scenario, run_scenario  # noqa: E402

RECORD_FIELDS = {
    "workload",
    "size",
    "format",
    "nodes",
    "pods",
    "load_seconds",
    "cache_seconds",
    "snapshot_seconds",
    "open_seconds",
    "actions",
    "close_seconds",
    "session_seconds",
    "binds",
    "evictions",
    "pipelined",
    "peak_rss_mib",
    "python",
    "anchor_seconds",
    "ratio",
    "repeats",
    "session_seconds_runs",
}


@pytest.fixture(scope="module")
def run(tmp_path_factory: pytest.TempPathFactory) -> tuple[dict[str, Any], str, Path]:
    """``python -m benchmarks W1 W4 S`` (each workload in its own subprocess), with its JSON and printed table."""
    tmp = tmp_path_factory.mktemp("bench")
    out = tmp / "results.json"
    stdout, stderr = io.StringIO(), io.StringIO()
    with contextlib.redirect_stdout(stdout), contextlib.redirect_stderr(stderr):
        status = cli.main(["W1", "W4", "S", "--out", str(out), "--generated", str(tmp / "gen")])
    assert status == 0, stderr.getvalue()
    return json.loads(out.read_text()), stdout.getvalue(), tmp


def test_records_have_every_field(run: tuple[dict[str, Any], str, Path]) -> None:
    document, _, _ = run
    assert document["python"]
    records = document["results"]
    assert [(r["workload"], r["size"], r["format"]) for r in records] == [("W1", "S", "yaml"), ("W4", "S", "yaml")]
    for record in records:
        assert not RECORD_FIELDS - set(record), RECORD_FIELDS - set(record)
        assert record["anchor_seconds"] == ANCHORS[(record["workload"], record["size"])].seconds
        assert record["peak_rss_mib"] > 0
        assert record["session_seconds"] >= 0


def test_w1_small_binds_every_pod(run: tuple[dict[str, Any], str, Path]) -> None:
    (w1,) = [r for r in run[0]["results"] if r["workload"] == "W1"]
    assert (w1["nodes"], w1["pods"]) == (100, 1000)
    assert w1["binds"] == w1["pods"] == 1000
    assert w1["evictions"] == 0
    assert set(w1["actions"]) == {"enqueue", "allocate", "backfill"}


def test_w4_small_reclaims(run: tuple[dict[str, Any], str, Path]) -> None:
    (w4,) = [r for r in run[0]["results"] if r["workload"] == "W4"]
    assert w4["evictions"] > 0
    assert "reclaim" in w4["actions"]


def test_table_shows_the_anchor_beside_each_workload(run: tuple[dict[str, Any], str, Path]) -> None:
    _, printed, _ = run
    assert "v1.7" in printed and "ours/v1.7" in printed
    w1_row = next(line for line in printed.splitlines() if line.startswith("W1-S "))
    assert "0.820" in w1_row


def test_generated_files_are_reused(run: tuple[dict[str, Any], str, Path]) -> None:
    gen = run[2] / "gen"
    path = gen / "W1-S-seed1.yaml"
    mtime = path.stat().st_mtime_ns
    assert ensure_workload("W1", "S", directory=gen) == path
    assert path.stat().st_mtime_ns == mtime


def test_selection() -> None:
    assert selection(["all"], ["S", "M"])[:2] == [("W1", "S"), ("W1", "M")]
    assert ("W3", "L") not in selection(["all"], ["L"])
    assert ("W5", "L") in selection(["all"], ["L"]) and ("W5", "M") in selection(["all"], ["S", "M"])
    assert selection(["w2"], ["L"]) == [("W2", "L")]
    with pytest.raises(BenchmarkError, match="unknown workload"):
        selection(["W9"], ["S"])
    with pytest.raises(BenchmarkError, match="no workload"):
        selection(["W3"], ["L"])


def test_bad_arguments_are_one_line_errors(capsys: pytest.CaptureFixture[str]) -> None:
    with pytest.raises(SystemExit):
        cli.main(["W9"])
    err = capsys.readouterr().err.strip().splitlines()[-1]
    assert "unknown suite 'W9'" in err


def test_table_without_anchor() -> None:
    record = {
        "workload": "W2",
        "size": "L",
        "format": "json",
        "nodes": 1,
        "pods": 2,
        "load_seconds": 1.5,
        "cache_seconds": 0.1,
        "snapshot_seconds": 0.1,
        "open_seconds": 0.1,
        "actions": {"allocate": 12.3},
        "close_seconds": 0.1,
        "session_seconds": 123.4,
        "binds": 2,
        "evictions": 0,
        "pipelined": 0,
        "peak_rss_mib": 10.0,
        "anchor_seconds": None,
        "ratio": None,
    }
    text = table([record])
    assert "W2-L" in text and "allocate 12.3" in text


@pytest.mark.parametrize("fmt", ["json", "block"])
@pytest.mark.parametrize("workload", ["W1", "W4"])
def test_converted_copies_give_the_yaml_result(tmp_path: Path, workload: str, fmt: str) -> None:
    yaml_path = ensure_workload(workload, "S", directory=tmp_path)
    copy_path = ensure_workload(workload, "S", fmt=fmt, directory=tmp_path)
    text = copy_path.read_text()
    if fmt == "json":
        assert copy_path.suffix == ".json" and text.startswith("{")
    else:  # block style, as kubectl writes it: no flow mapping holds a Kubernetes object
        assert copy_path.name.endswith(".block.yaml") and "- apiVersion: " in text and "- {" not in text
    assert read_documents(copy_path) == read_documents(yaml_path)
    from_yaml = run_scenario(load_scenario([yaml_path]), sessions=1, seed=1)
    from_copy = run_scenario(load_scenario([copy_path]), sessions=1, seed=1)
    assert from_copy.to_dict() == from_yaml.to_dict()
    assert from_yaml.binds or from_yaml.evictions


def test_generated_workloads_use_the_default_tiers() -> None:
    from benchmarks import gen_workload
    from volcanolib.framework.config import DEFAULT_CONFIG, parse_config

    scenario = yaml.safe_load(gen_workload.header("x", "enqueue, allocate, preempt"))
    config = parse_config(scenario["scheduler"])
    assert config.actions == ("enqueue", "allocate", "preempt")
    assert config.tiers == DEFAULT_CONFIG.tiers


def test_the_generator_writes_json_for_a_json_name_and_the_same_scenario(tmp_path: Path) -> None:
    from benchmarks import gen_workload

    gen_workload.main(["W1", "S", "-o", str(tmp_path / "w1s.yaml")])
    gen_workload.main(["W1", "S", "-o", str(tmp_path / "w1s.json")])
    gen_workload.main(["W1", "S", "-o", str(tmp_path / "w1s.txt"), "--format", "json"])
    (scenario,) = read_documents(tmp_path / "w1s.yaml")
    assert json.loads((tmp_path / "w1s.json").read_text()) == scenario
    assert json.loads((tmp_path / "w1s.txt").read_text()) == scenario
    assert len([o for o in scenario["objects"] if o["kind"] == "Pod"]) == 1000


def test_the_generators_help_names_only_files_that_exist(capsys: pytest.CaptureFixture[str]) -> None:
    from benchmarks import gen_workload

    with pytest.raises(SystemExit):
        gen_workload.main(["--help"])
    text = capsys.readouterr().out
    named = set(re.findall(r"[\w./-]+\.md\b", text))  # the pages it sends the reader to
    assert named, text
    assert [name for name in sorted(named) if not (ROOT / name).exists()] == []


# ---------------------------------------------------------------- W5, the steady state

STEADY_FIELDS = {
    "workload",
    "kind",
    "size",
    "format",
    "nodes",
    "pods",
    "churn",
    "cycles",
    "warmup",
    "load_seconds",
    "placement_seconds",
    "placement_binds",
    "cycle_seconds",
    "wall_seconds",
    "wall_seconds_max",
    "parts",
    "cycle_session_seconds",
    "binds_per_cycle",
    "all_bound",
    "cycle_records",
    "decisions_sha256",
    "peak_rss_mib",
    "repeats",
    "cycle_seconds_runs",
}


def test_w5_through_the_runner(run: tuple[dict[str, Any], str, Path]) -> None:
    """``python -m benchmarks W5 S`` (few cycles, a churn of 100): the record, its cycles and the table."""
    tmp = run[2]
    out = tmp / "w5.json"
    stdout, stderr = io.StringIO(), io.StringIO()
    argv = ["W5", "S", "--cycles", "3", "--warmup", "1", "--churn", "100", "--out", str(out)]
    with contextlib.redirect_stdout(stdout), contextlib.redirect_stderr(stderr):
        status = cli.main([*argv, "--generated", str(tmp / "gen")])
    assert status == 0, stderr.getvalue()
    (record,) = json.loads(out.read_text())["results"]
    assert not STEADY_FIELDS - set(record), STEADY_FIELDS - set(record)
    assert (record["workload"], record["kind"], record["nodes"], record["pods"]) == ("W5", "steady", 100, 1000)
    assert record["placement_binds"] == 1000
    assert (record["churn"], record["warmup"], record["cycles"]) == (100, 1, 3)
    assert [c["phase"] for c in record["cycle_records"]] == ["warmup", "measured", "measured", "measured"]
    for cycle in record["cycle_records"]:
        assert (cycle["arrivals"], cycle["finishes"], cycle["binds"]) == (100, 100, 100)
        assert (cycle["pending_after"], cycle["placed_after"]) == (0, 1000)
        assert cycle["session"] >= cycle["snapshot"] and cycle["wall"] >= cycle["session"]
        assert set(cycle["actions"]) == {"enqueue", "allocate", "backfill"}
    assert record["binds_per_cycle"] == [100] * 4 and record["all_bound"]
    # one W1 gang of 100 finishes, ten gangs of 10 arrive
    assert [c["pod_groups_after"] for c in record["cycle_records"]] == [19, 28, 37, 46]
    assert set(record["parts"]) >= {"events", "snapshot", "open", "allocate", "close", "start", "gc"}
    assert record["cycle_seconds"] == sorted(record["cycle_session_seconds"])[1] > 0
    assert record["anchor_seconds"] is None
    assert "binds per cycle: 100 100 100 100" in stderr.getvalue()
    w5_row = next(line for line in stdout.getvalue().splitlines() if line.startswith("W5-S "))
    assert " 1+3 " in w5_row and " 100 " in w5_row


def _full_cluster(path: Path, nodes: int = 4, jobs: int | None = None) -> Path:
    """A W1-shaped scenario: nodes of 10 cpu, ``jobs`` gangs of 10 one-cpu pods (one per node by default)."""
    from benchmarks import gen_workload

    out = gen_workload.Out()
    for i in range(nodes):
        out.node(f"n{i:05d}", 10, 40)
    for j in range(nodes if jobs is None else jobs):
        group = f"job{j:04d}"
        out.podgroup("w1", group, 10, "default", "Pending", gen_workload.res_map(10_000, 20))
        for k in range(10):
            out.pod("w1", f"{group}-{k}", group, gen_workload.res_map(1000, 2))
    path.write_text(gen_workload.header("full", "enqueue, allocate, backfill") + "\n".join(out.lines) + "\n")
    return path


def test_w5_arrivals_bind_in_the_room_finishes_free(tmp_path: Path) -> None:
    """Room for one gang of 10 (80 cpu, 70 running pods): later gangs bind only because 10 pods finished."""
    from benchmarks.steady import steady_state

    path = _full_cluster(tmp_path / "full.yaml", nodes=8, jobs=7)
    record = steady_state(path, size="T", cycles=4, warmup=1, churn=10, gang=10)
    assert (record["placement_binds"], record["settle_binds"]) == (70, 0)
    assert [(c["finishes"], c["binds"], c["pending_after"], c["placed_after"]) for c in record["cycle_records"]] == [
        (10, 10, 0, 70)
    ] * 5
    assert record["all_bound"]
    again = steady_state(path, size="T", cycles=4, warmup=1, churn=10, gang=10)
    assert again["decisions_sha256"] == record["decisions_sha256"]

    # the control: nothing finishes; the first gang takes the room left, the next ones wait
    stuck = steady_state(path, size="T", cycles=2, warmup=1, churn=10, finishes=0, gang=10)
    assert [(c["finishes"], c["binds"], c["pending_after"], c["placed_after"]) for c in stuck["cycle_records"]] == [
        (0, 10, 0, 80),
        (0, 0, 10, 80),
        (0, 0, 20, 80),
    ]
    assert not stuck["all_bound"]


def test_w5_finishes_the_oldest_pods_first(tmp_path: Path) -> None:
    """Finishes take the W1 jobs in name order, then the arrivals; a finished job's PodGroup goes too."""
    from benchmarks import steady
    from volcanolib import Scheduler

    path = _full_cluster(tmp_path / "full.yaml", nodes=2)
    scenario = load_scenario([path])
    cache = scenario.cluster.to_cache()
    scheduler = Scheduler(cache, scenario.config, seed=1)
    scheduler.run_once()
    cache.start_bound_tasks()
    books = steady._Books()
    for job in sorted(cache.jobs(), key=lambda j: j.uid):
        books.add(job.uid, sorted(job.tasks))
    assert steady._finish(cache, books, 15) == 15
    left = sorted(t.key for t in cache.tasks())
    assert left == sorted(f"w1/job0001-{k}" for k in range(5, 10))
    assert [j.uid for j in cache.jobs()] == ["w1/job0001"]
    assert steady._finish(cache, books, 15) == 5
    assert cache.tasks() == [] and cache.jobs() == []
