"""``volcanolib replay --format``: a bad trace row is one line and exit status 2; ``--export`` replays the same."""

from __future__ import annotations

import json
import os
import re
from collections.abc import Callable, Iterator
from pathlib import Path

import pytest

from volcanolib.cli import main

DATA = Path(__file__).resolve().parent / "data"
NODES = str(DATA / "openb_nodes.csv")


def test_a_bad_row_is_one_line_naming_file_row_and_column(tmp_path: Path, capsys: pytest.CaptureFixture[str]) -> None:
    bad = tmp_path / "pods.csv"
    lines = (DATA / "openb_pods.csv").read_text().splitlines()
    lines[3] = lines[3].replace(",Burstable,", ",Gold,")
    bad.write_text("\n".join(lines) + "\n")
    assert main(["replay", "--format", "openb", "--nodes", NODES, str(bad)]) == 2
    err = capsys.readouterr().err.strip().splitlines()
    assert err == [
        f"volcanolib: error: {bad}: row 4: column qos: unknown qos 'Gold' (expected LS, Guaranteed, Burstable, BE)"
    ]


def test_the_exported_trace_replays_to_the_same_json(tmp_path: Path) -> None:
    exported, first, second = tmp_path / "openb.yaml", tmp_path / "a.json", tmp_path / "b.json"
    pods = str(DATA / "openb_pods.csv")
    assert (
        main(["replay", "--format", "openb", "--nodes", NODES, pods, "--export", str(exported), "--json", str(first)])
        == 0
    )
    assert main(["replay", str(exported), "--json", str(second)]) == 0
    a, b = json.loads(first.read_text()), json.loads(second.read_text())
    for doc in (a, b):
        doc.pop("timings", None)
        doc["summary"].pop("timings", None)
    assert a == b
    assert a["summary"]["jobs"] == 5


@pytest.mark.parametrize(
    ("name", "expected"),
    [
        ("openb_pods.csv", "an openb pod list (CSV), not a replay file: read it with --format openb --nodes NODES.csv"),
        ("openb_nodes.csv", "a node list (CSV), not a replay file: give it with --nodes, and the trace with --format"),
        (
            "helios_cluster_log.csv",
            "a Helios job log (CSV), not a replay file: read it with --format helios --nodes NODES.csv",
        ),
        (
            "helios_gpu_number.csv",
            "a Helios per-VC GPU table (CSV), not a replay file: give it with --format helios after cluster_log.csv",
        ),
    ],
)
def test_a_trace_table_without_format_says_which_format_reads_it(
    tmp_path: Path, capsys: pytest.CaptureFixture[str], name: str, expected: str
) -> None:
    # Under another name too: the header tells the tables apart, not the suffix.
    copy = tmp_path / "trace.txt"
    copy.write_text((DATA / name).read_text())
    for path in (DATA / name, copy):
        assert main(["replay", str(path)]) == 2
        assert capsys.readouterr().err == f"volcanolib: error: {path}: {expected}\n"


def test_another_csv_file_names_the_formats(tmp_path: Path, capsys: pytest.CaptureFixture[str]) -> None:
    path = tmp_path / "jobs.csv"
    path.write_text("job,start,end\n" + "j1,0,3600\n" * 50)
    confs = Path(__file__).resolve().parents[4] / "examples" / "replay"
    conf_a, conf_b = str(confs / "volcano-scheduler.conf"), str(confs / "binpack.conf")
    assert main(["compare", "--conf", conf_a, "--conf", conf_b, str(path)]) == 2
    err = capsys.readouterr().err
    # The message's length without the file's name (a temporary path, longer under parallel workers).
    assert err.count("\n") == 1 and len(err.replace(str(path), "FILE")) < 200, err
    assert "a CSV file, not a replay file (YAML or JSON): read a trace with --format helios or --format openb" in err


def test_long_text_read_as_yaml_is_shown_by_its_start(tmp_path: Path, capsys: pytest.CaptureFixture[str]) -> None:
    path = tmp_path / "notes.txt"
    path.write_text("x,y\n" + "1,2 and a long line of words\n" * 200)
    assert main(["replay", str(path)]) == 2
    err = capsys.readouterr().err
    assert err.startswith(f"volcanolib: error: {path}: object: expected a Kubernetes object (a mapping), got the text ")
    assert re.search(r"'x,y 1,2 and a long line[^']*'\.\.\. \(\d+ characters\)\n$", err), err
    assert len(err.replace(str(path), "FILE")) < 200, err


@pytest.fixture
def pipe() -> Iterator[Callable[[str], str]]:
    """Pipes holding a text each, by the name a shell gives ``<(cat FILE)``: each can be read once."""
    opened: list[int] = []

    def make(text: str) -> str:
        read_end, write_end = os.pipe()
        os.write(write_end, text.encode())
        os.close(write_end)
        opened.append(read_end)
        return f"/dev/fd/{read_end}"

    yield make
    for fd in opened:
        os.close(fd)


@pytest.mark.skipif(not Path("/dev/fd").is_dir(), reason="no /dev/fd on this system")
@pytest.mark.parametrize(
    ("fmt", "trace", "nodes"),
    [
        ("openb", ["openb_pods.csv"], "openb_nodes.csv"),
        ("helios", ["helios_cluster_log.csv", "helios_gpu_number.csv"], "helios_nodes.csv"),
    ],
)
def test_traces_and_node_lists_read_through_pipes(
    tmp_path: Path, pipe: Callable[[str], str], fmt: str, trace: list[str], nodes: str
) -> None:
    from_files, from_pipes = tmp_path / "files.json", tmp_path / "pipes.json"
    args = ["replay", "--format", fmt, "--json"]
    assert main([*args, str(from_files), "--nodes", str(DATA / nodes), *(str(DATA / t) for t in trace)]) == 0
    pipes = [pipe((DATA / t).read_text()) for t in trace]
    assert main([*args, str(from_pipes), "--nodes", pipe((DATA / nodes).read_text()), *pipes]) == 0
    a, b = json.loads(from_files.read_text()), json.loads(from_pipes.read_text())
    a.pop("timings"), b.pop("timings")
    assert a == b and a["summary"]["jobs"] > 0
