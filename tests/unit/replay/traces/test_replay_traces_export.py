"""export_objects: a converted trace written as a replay file reads back to the same objects and the same cluster."""

from __future__ import annotations

from pathlib import Path
from typing import Any

import pytest

from volcanolib.errors import ManifestError
from volcanolib.kube import ManifestLoader, read_documents
from volcanolib.replay.traces import TRACE_FORMATS, export_objects, trace_format
from volcanolib.replay.traces._objects import duration_text, rfc3339
from volcanolib.sim import load_scenario

ROOT = Path(__file__).resolve().parents[4]
DATA = Path(__file__).resolve().parent / "data"
EXAMPLES = ROOT / "examples" / "replay" / "traces"

TRACES = {
    "openb": ([DATA / "openb_pods.csv"], DATA / "openb_nodes.csv"),
    "helios": ([DATA / "helios_cluster_log.csv", DATA / "helios_gpu_number.csv"], DATA / "helios_nodes.csv"),
}


def cluster_view(objects: list[dict[str, Any]]) -> list[tuple[Any, ...]]:
    loader = ManifestLoader()
    loader.add_objects(objects, source="x")
    cluster = loader.load()
    return [
        *((n.name, str(n.allocatable), tuple(sorted(n.node.labels.items()))) for n in cluster.nodes),
        *((t.uid, t.job, str(t.resreq), t.priority, t.creation_timestamp) for t in cluster.tasks),
        *((q.name, q.weight) for q in cluster.queues),
    ]


@pytest.mark.parametrize("suffix", [".yaml", ".json"])
@pytest.mark.parametrize("fmt", sorted(TRACES))
def test_the_exported_file_reads_back_to_the_same_objects(tmp_path: Path, fmt: str, suffix: str) -> None:
    paths, nodes = TRACES[fmt]
    objects = TRACE_FORMATS[fmt].read(paths, nodes)
    path = tmp_path / f"trace{suffix}"
    export_objects(objects, path, source=f"{fmt} trace")
    (document,) = read_documents(path)
    assert document == {"source": f"{fmt} trace", "objects": objects}
    scenario = load_scenario([path])
    assert scenario.warnings == []
    direct = ManifestLoader()
    direct.add_objects(objects, source=fmt)
    assert cluster_view(objects) == cluster_view(document["objects"])
    assert len(scenario.cluster.tasks) == len(direct.load().tasks) > 0


def test_an_unwritable_path_is_a_one_line_error(tmp_path: Path) -> None:
    with pytest.raises(ManifestError, match=r"missing/out.yaml: cannot write"):
        export_objects([], tmp_path / "missing" / "out.yaml")


def test_formats_are_looked_up_by_name() -> None:
    assert trace_format("openb") is TRACE_FORMATS["openb"]
    assert set(TRACE_FORMATS) >= {"openb", "helios"}
    with pytest.raises(ManifestError, match=r"unknown trace format 'philly' \(expected one of helios, openb\)"):
        trace_format("philly")


@pytest.mark.parametrize(
    ("seconds", "time", "duration"),
    [
        (0, "1970-01-01T00:00:00Z", "0s"),
        (90.5, "1970-01-01T00:01:30.5Z", "90.5s"),
        (86400 * 150 + 7, "1970-05-31T00:00:07Z", "12960007s"),
    ],
)
def test_times_and_durations_read_back_as_the_seconds_they_came_from(seconds: float, time: str, duration: str) -> None:
    assert rfc3339(seconds) == time
    assert duration_text(seconds) == duration
    loader = ManifestLoader()
    loader.add(
        {
            "apiVersion": "v1",
            "kind": "Pod",
            "metadata": {"name": "p", "creationTimestamp": time},
            "spec": {"schedulerName": "volcano", "containers": [{"name": "c"}]},
        }
    )
    (task,) = loader.load().tasks
    assert task.creation_timestamp == seconds


@pytest.mark.parametrize(
    ("fmt", "files", "nodes"),
    [
        ("openb", ["openb/pods.csv"], "openb/nodes.csv"),
        ("helios", ["helios/cluster_log.csv", "helios/cluster_gpu_number.csv"], "helios/nodes.csv"),
    ],
)
def test_the_example_traces_convert_and_load(fmt: str, files: list[str], nodes: str) -> None:
    objects = TRACE_FORMATS[fmt].read([EXAMPLES / f for f in files], EXAMPLES / nodes)
    loader = ManifestLoader()
    loader.add_objects(objects, source=fmt)
    cluster = loader.load()
    assert cluster.warnings == []
    assert len(cluster.tasks) >= 10 and len(cluster.nodes) >= 3
