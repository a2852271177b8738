"""Sweeps run every point as the same replay run alone would, locally or on Dask, and resume."""

from __future__ import annotations

import json
from pathlib import Path
from typing import Any

import pytest
import yaml

from volcanolib.cli import main
from volcanolib.framework.config import parse_config
from volcanolib.replay import ReplayOptions, load_workload, run_replay
from volcanolib.replay.inputs import compress_arrivals
from volcanolib.replay.metrics import summarise
from volcanolib.sweep.output import flatten
from volcanolib.sweep.run import run_sweep
from volcanolib.sweep.spec import Point, load_sweep

ROOT = Path(__file__).resolve().parents[3]
EXAMPLE = ROOT / "examples" / "replay"


def small_sweep(tmp_path: Path, **extra: Any) -> Path:
    """Two configurations x two loads x one seed on the example workload, cut at two hours."""
    sweep = {
        "workload": [str(EXAMPLE / "workload.yaml")],
        "replay": {"until": "2h"},
        "configurations": [
            {"name": "default", "file": str(EXAMPLE / "volcano-scheduler.conf")},
            {"base": str(EXAMPLE / "volcano-scheduler.conf"), "vary": [{"plugin": "drf", "enabled": [False]}]},
        ],
        "load": [1.0, 2.0],
        "seeds": [3],
        **extra,
    }
    path = tmp_path / "sweep.yaml"
    path.write_text(yaml.safe_dump(sweep))
    return path


def alone(point: Point) -> dict[str, Any]:
    """The point replayed the plain way: load, compress, replay, summarise."""
    workload = compress_arrivals(load_workload([EXAMPLE / "workload.yaml"]), point.load)
    options = ReplayOptions.for_workload(workload, until=7200.0, seed=point.seed)
    summary = summarise(run_replay(workload, parse_config(point.config_text), options))
    return {"summary": summary["summary"], "queues": summary["queues"]}


def comparable(row: dict[str, Any]) -> dict[str, Any]:
    return {"summary": row["summary"], "queues": row["queues"]}


def test_every_point_equals_its_replay_run_alone(tmp_path: Path) -> None:
    sweep = load_sweep(small_sweep(tmp_path))
    rows = run_sweep(sweep, tmp_path / "out", workers=1)
    assert [r["error"] for r in rows] == [None] * 4
    for point, row in zip(sweep.points, rows, strict=True):
        assert (row["configuration"], row["load"], row["seed"]) == (point.configuration, point.load, point.seed)
        assert comparable(row) == alone(point)
    # the load factor changes the replay: arrivals twice as dense wait at least as long in total
    by = {(r["configuration"], r["load"]): r for r in rows}
    assert by[("default", 1.0)]["summary"] != by[("default", 2.0)]["summary"]


def test_a_small_sweep_on_a_local_dask_cluster_equals_the_replays_run_alone(tmp_path: Path) -> None:
    distributed = pytest.importorskip("distributed")  # the dask extra is part of the test install
    sweep = load_sweep(small_sweep(tmp_path))
    with distributed.LocalCluster(n_workers=2, threads_per_worker=1, processes=True, dashboard_address=None) as cluster:
        rows = run_sweep(sweep, tmp_path / "out", dask_address=cluster.scheduler_address)
    assert len(rows) == len(sweep.points) == 4
    for point, row in zip(sweep.points, rows, strict=True):
        assert row["error"] is None
        assert comparable(row) == alone(point)


def test_a_failed_point_is_reported_and_the_others_go_on_and_resume_skips_done_points(tmp_path: Path) -> None:
    conf = tmp_path / "bad-args.conf"
    conf.write_text(
        (EXAMPLE / "volcano-scheduler.conf")
        .read_text()
        .replace("- name: nodeorder", "- name: nodeorder\n    arguments: {leastrequested.weight: lots}")
    )
    path = small_sweep(tmp_path)
    data = yaml.safe_load(path.read_text())
    data["configurations"].append({"name": "broken", "file": str(conf)})
    data["load"] = [1.0]
    path.write_text(yaml.safe_dump(data))
    sweep = load_sweep(path)
    rows = run_sweep(sweep, tmp_path / "out", workers=2)
    errors = {r["configuration"]: r["error"] for r in rows}
    assert errors["default"] is None and errors["volcano-scheduler[drf=off]"] is None
    assert "leastrequested.weight" in errors["broken"]
    # resume: the results on disk are taken as they are (marked so they can be recognised), the rest replayed
    done = tmp_path / "out" / "points" / f"{sweep.points[0].key}.json"
    kept = json.loads(done.read_text())
    kept["marker"] = "from disk"
    done.write_text(json.dumps(kept))
    again = run_sweep(sweep, tmp_path / "out", workers=1, resume=True)
    assert again[0].get("marker") == "from disk"
    assert comparable(again[1]) == comparable(rows[1])
    assert flatten(again[1])["jobs"] == rows[1]["summary"]["jobs"]


def test_the_sweep_command_writes_the_table_and_exits_2_on_a_bad_file_before_any_replay(
    tmp_path: Path, capsys: pytest.CaptureFixture[str]
) -> None:
    path = small_sweep(tmp_path, seeds=[0])
    out = tmp_path / "results"
    assert main(["sweep", str(path), "--out", str(out), "--jobs", "1", "--plot", str(tmp_path / "sweep.svg")]) == 0
    text = capsys.readouterr().out
    assert "volcano-scheduler[drf=off]" in text and "4 of 4 points replayed" in text
    header = (out / "results.csv").read_text().splitlines()[0].split(",")
    assert header[:4] == ["configuration", "load", "seed", "error"]
    assert len((out / "results.csv").read_text().splitlines()) == 5
    assert (tmp_path / "sweep.svg").read_text().lstrip().startswith("<?xml")
    bad = yaml.safe_load(path.read_text())
    bad["configurations"][1]["vary"] = [{"plugin": "drf", "enabled": []}]
    path.write_text(yaml.safe_dump(bad))
    assert main(["sweep", str(path), "--out", str(tmp_path / "never")]) == 2
    err = capsys.readouterr().err.strip().splitlines()
    assert len(err) == 1 and "configurations[1].vary[0].enabled" in err[0]
    assert not (tmp_path / "never").exists()


def test_the_comparison_plot_is_byte_stable_and_an_unwritable_path_is_one_line(tmp_path: Path) -> None:
    from volcanolib.errors import VolcanolibError
    from volcanolib.sweep.output import plot_sweep

    sweep = load_sweep(small_sweep(tmp_path, load=[1.0]))
    rows = run_sweep(sweep, tmp_path / "out", workers=1)
    plot_sweep(rows, tmp_path / "a.svg")
    plot_sweep(rows, tmp_path / "b.svg")
    assert (tmp_path / "a.svg").read_bytes() == (tmp_path / "b.svg").read_bytes()
    with pytest.raises(VolcanolibError) as err:
        plot_sweep(rows, tmp_path / "missing" / "c.png")
    assert "cannot write" in str(err.value) and "\n" not in str(err.value)


@pytest.mark.parametrize(
    ("address", "reason"),
    [
        ("tcp://127.0.0.1:1", "Timed out trying to connect to tcp://127.0.0.1:1 after 1 s"),
        ("nonsense://x", "unknown address scheme 'nonsense'"),
    ],
)
def test_a_dask_scheduler_that_cannot_be_reached_is_one_line_and_exit_2(
    tmp_path: Path, capsys: pytest.CaptureFixture[str], address: str, reason: str
) -> None:
    dask = pytest.importorskip("dask")
    pytest.importorskip("distributed")  # its configuration defaults, before the timeout is set over them
    path = small_sweep(tmp_path, seeds=[0])
    with dask.config.set({"distributed.comm.timeouts.connect": "1s"}):
        assert main(["sweep", str(path), "--out", str(tmp_path / "out"), "--dask", address]) == 2
    err = capsys.readouterr().err
    assert err.startswith(f"volcanolib: error: --dask {address}: cannot connect to the Dask scheduler: {reason}")
    assert err.count("\n") == 1 and "Traceback" not in err


def test_replay_and_compare_load_is_the_sweeps_load(tmp_path: Path, capsys: pytest.CaptureFixture[str]) -> None:
    path = small_sweep(tmp_path, seeds=[3], load=[1.5])
    rows = run_sweep(load_sweep(path), tmp_path / "out", workers=1)
    conf = str(EXAMPLE / "volcano-scheduler.conf")
    common = [str(EXAMPLE / "workload.yaml"), "--until", "2h", "--seed", "3", "--load", "1.5"]
    assert main(["replay", *common, "--conf", conf, "--json", str(tmp_path / "replay.json")]) == 0
    replayed = json.loads((tmp_path / "replay.json").read_text())
    assert comparable(replayed) == comparable(rows[0])
    assert comparable(replayed) != comparable(alone(Point("x", Path(conf).read_text(), 1.0, 3)))
    binpack = str(EXAMPLE / "binpack.conf")
    assert main(["compare", *common, "--conf", conf, "--conf", binpack, "--json", str(tmp_path / "c.json")]) == 0
    runs = json.loads((tmp_path / "c.json").read_text())["runs"]
    assert comparable(runs[0]) == comparable(rows[0])
    capsys.readouterr()
    with pytest.raises(SystemExit) as refused:
        main(["replay", *common[:-1], "0"])
    assert refused.value.code == 2
    assert (
        capsys.readouterr().err.splitlines()[-1].endswith("argument --load: a load factor is a number above 0, got '0'")
    )


def test_the_results_table_has_the_evicted_pods() -> None:
    row = {
        "configuration": "c",
        "load": 1.0,
        "seed": 0,
        "error": None,
        "summary": {"jobs": 3, "evicted_pods": 4},
        "queues": [{"name": "q1", "evicted_pods": 3}, {"name": "q2", "evicted_pods": 1}],
    }
    flat = flatten(row)
    assert flat["evicted_pods"] == 4
    assert (flat["q1:evicted_pods"], flat["q2:evicted_pods"]) == (3, 1)


def test_the_sweep_table_prints_times_as_replay_does() -> None:
    import io

    from volcanolib.replay.tables import duration
    from volcanolib.sweep.cli import _table

    summary = {
        "jobs": 16,
        "completed": 15,
        "wait": {"p50": 820.0, "p95": 7.5},
        "jct": {"p50": 11100.0},
        "fairness": {"jain": 0.98765},
    }
    rows = [
        {"configuration": "a", "load": 1.5, "seed": 0, "summary": summary},
        {"configuration": "b", "load": 1.0, "seed": 1, "summary": None},
    ]
    out = io.StringIO()
    _table(rows, out)
    lines = out.getvalue().splitlines()
    assert lines[0].split() == [
        "CONFIGURATION",
        "LOAD",
        "SEED",
        "JOBS",
        "COMPLETED",
        "WAIT",
        "P50",
        "WAIT",
        "P95",
        "JCT",
        "P50",
        "JAIN",
    ]
    assert lines[1].split() == ["a", "1.5", "0", "16", "15", "13m", "40s", "7.5s", "3h", "05m", "0.988"]
    assert (duration(820.0), duration(11100.0)) == ("13m 40s", "3h 05m")  # the replay's own format
    assert lines[2].split() == ["b", "1", "1", "error"]
