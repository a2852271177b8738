"""The replay format of Volcano's end-to-end tests: outcomes per attempt, container restarts, the timeline.

The examples under ``examples/replay/`` (``retries.yaml``, ``operations.yaml``)
run here, and each outside action and each kind of outcome is checked on
what the replay records.
"""

from __future__ import annotations

import json
from pathlib import Path
from typing import Any

import pytest

from volcanolib import cli
from volcanolib.errors import ManifestError
from volcanolib.replay import ReplayOptions, ReplayRecord, load_workload, run_replay
from volcanolib.replay.metrics import summarise, to_json
from volcanolib.replay.records import JobRecord, PodRecord

EXAMPLE = Path(__file__).resolve().parents[3] / "examples" / "replay"


def pods_of(record: ReplayRecord, name: str) -> list[PodRecord]:
    return sorted((p for p in record.pods if p.name == name), key=lambda p: p.attempt)


def job_of(record: ReplayRecord, name: str) -> JobRecord:
    return next(j for j in record.jobs if j.name == name)


def replay(name: str, *, every_period: bool = False) -> ReplayRecord:
    workload = load_workload([EXAMPLE / name])
    return run_replay(workload, None, ReplayOptions.for_workload(workload, every_period=every_period))


@pytest.fixture(scope="module")
def retries() -> ReplayRecord:
    return replay("retries.yaml")


def test_a_pod_fails_once_then_succeeds_after_a_restart(retries: ReplayRecord) -> None:
    start = retries.start
    flaky = job_of(retries, "e2e/flaky")
    assert (flaky.phase, flaky.restarts) == ("Completed", 1)
    worker = pods_of(retries, "e2e/flaky-worker-0")
    assert [(p.phase, p.finished - p.started) for p in worker if p.started is not None] == [
        ("Failed", 60.0),  # attempt 0: fail after 1m
        ("Succeeded", 300.0),  # attempt 1: succeed after 5m
    ]
    # replica 1 has its own outcome; its first attempt was killed by the restart
    assert [p.phase for p in pods_of(retries, "e2e/flaky-worker-1")] == ["Deleted", "Succeeded"]
    assert [phase for _, phase in flaky.phases] == [
        "Pending",
        "Running",
        "Restarting",
        "Pending",
        "Running",
        "Completing",
        "Completed",
    ]
    assert flaky.phases[2][0] - start == 63.0  # bound at 1 s, started 2 s later, failed 1m after
    # CompleteJob kills softly: the finished pods are kept; the restart deleted the first attempts
    assert flaky.kept_pods == 2
    assert all(p.deleted is not None for p in retries.pods if p.job == "e2e/flaky" and p.attempt == 0)
    assert flaky.version is not None and flaky.version >= 2


def test_container_restarts_raise_task_failed(retries: ReplayRecord) -> None:
    crashloop = job_of(retries, "e2e/crashloop")
    (pod,) = pods_of(retries, "e2e/crashloop-server-0")
    assert pod.restarts == 2  # maxRetry 2: the second restart raises TaskFailed
    assert crashloop.phase == "Aborted"
    assert pod.started is not None and crashloop.finished == pod.started + 40.0


def test_a_pod_that_fails_before_it_runs(retries: ReplayRecord) -> None:
    (pod,) = pods_of(retries, "e2e/bad-image")
    assert (pod.phase, pod.started) == ("Failed", None)
    assert pod.bound is not None and pod.finished == pod.bound + 2.0 + 10.0  # podStartup, then 10s


def test_the_json_has_each_jobs_phases_version_pod_group_phases_and_kept_pods(
    retries: ReplayRecord, tmp_path: Path, capsys: pytest.CaptureFixture[str]
) -> None:
    out = tmp_path / "replay.json"
    assert cli.main(["replay", str(EXAMPLE / "retries.yaml"), "--json", str(out)]) == 0
    capsys.readouterr()
    doc = json.loads(out.read_text())
    flaky = next(j for j in doc["jobs"] if j["name"] == "e2e/flaky")
    assert [phase for _, phase in flaky["phases"]][:3] == ["Pending", "Running", "Restarting"]
    assert [phase for _, phase in flaky["pod_group_phases"]][:3] == ["Pending", "Inqueue", "Running"]
    assert (flaky["version"], flaky["kept_pods"]) == (job_of(retries, "e2e/flaky").version, 2)
    bare = next(j for j in doc["jobs"] if j["name"].endswith("bad-image"))
    assert bare["version"] is None
    pod = next(p for p in doc["pods"] if p["name"] == "e2e/crashloop-server-0")
    assert (pod["restarts"], pod["deleted"]) == (2, summarise(retries)["jobs"][0]["finished"])


@pytest.fixture(scope="module")
def operations() -> ReplayRecord:
    return replay("operations.yaml")


def test_a_node_added_takes_pods_and_a_drained_and_removed_one_gives_them_back(operations: ReplayRecord) -> None:
    t0 = operations.start
    on_new = [p for p in operations.pods if p.node == "node-2"]
    assert on_new and min(p.bound or 0 for p in on_new) - t0 >= 60.0  # added at 1m
    for pod in on_new:
        assert pod.finished is not None and pod.finished - t0 <= 13 * 60 + 10  # drained at 12m, grace 10s
    drained = [p for p in on_new if p.deleted is not None and p.deleted - t0 == 12 * 60]
    assert drained and all(p.phase == "Evicted" for p in drained)


def test_scaling_a_job_up_and_down(operations: ReplayRecord) -> None:
    t0 = operations.start
    new = [p for p in operations.pods if p.name in ("ops/web-srv-2", "ops/web-srv-3")]
    assert {p.submitted - t0 for p in new} == {120.0}  # scaled to 4 at 2m
    assert {p.deleted - t0 for p in new if p.deleted is not None} == {360.0}  # back to 1 at 6m


def test_deleting_a_pod_and_a_no_execute_taint_evict_and_restart_the_batch_job(operations: ReplayRecord) -> None:
    t0 = operations.start
    batch = job_of(operations, "ops/batch")
    first = pods_of(operations, "ops/batch-w-1")[0]
    assert first.deleted is not None and first.deleted - t0 == 180.0  # deletePod at 3m
    assert batch.restarts == 2 and batch.phase == "Completed"  # PodEvicted -> RestartJob, twice
    tainted = [p for p in operations.pods if p.node == "node-1" and p.deleted is not None and p.deleted - t0 == 300]
    assert tainted and all(p.phase == "Evicted" for p in tainted)  # the NoExecute taint at 5m
    assert not [p for p in operations.pods if p.node == "node-1" and p.bound is not None and p.bound - t0 > 300]


def test_suspending_resuming_and_deleting_a_job(operations: ReplayRecord) -> None:
    t0 = operations.start
    web = job_of(operations, "ops/web")
    phases = [(t - t0, phase) for t, phase in web.phases]
    assert (480.0, "Aborting") in phases and (600.0, "Restarting") in phases
    assert phases[-1] == (1800.0, "Deleted") and web.finished == t0 + 1800
    assert summarise(operations)["summary"]["cancelled"] == 1


def test_skipping_sessions_changes_nothing_with_a_timeline() -> None:
    for name in ("operations.yaml", "retries.yaml"):
        workload = load_workload([EXAMPLE / name])
        docs = []
        for every in (False, True):  # one workload for both: a replay must not change it
            doc = summarise(run_replay(workload, None, ReplayOptions.for_workload(workload, every_period=every)))
            doc.pop("timings")
            docs.append(to_json(doc))
        assert docs[0] == docs[1], name


def _file(tmp_path: Path, timeline: list[Any]) -> Path:
    path = tmp_path / "ops.yaml"
    text = (EXAMPLE / "operations.yaml").read_text()
    doc = __import__("yaml").safe_load(text)
    doc["replay"]["timeline"] = timeline
    path.write_text(json.dumps(doc))
    return path


@pytest.mark.parametrize(
    ("timeline", "field", "message"),
    [
        ([{"cordon": "node-0"}], "replay.timeline[0].at", "missing required field: at"),
        ([{"at": "soon", "cordon": "node-0"}], "replay.timeline[0].at", "expected a duration"),
        ([{"at": "1m", "reboot": "node-0"}], "replay.timeline[0].reboot", "unknown action 'reboot'"),
        ([{"at": "1m", "cordon": "node-0", "drain": "node-0"}], "replay.timeline[0]", "exactly one action"),
        ([{"at": "1m", "cordon": "node-9"}], "replay.timeline[0].cordon", "no node named 'node-9'"),
        ([{"at": "1m", "suspendJob": "ops/nope"}], "replay.timeline[0].suspendJob", "no Volcano Job named"),
        (
            [{"at": "1m", "scaleJob": {"job": "ops/web", "task": "db", "replicas": 2}}],
            "replay.timeline[0].scaleJob",
            "no task named 'db'",
        ),
        ([{"at": "1m", "deletePod": "ops/web-db-0"}], "replay.timeline[0].deletePod", "no pod named"),
        (
            [{"at": "1m", "taint": {"node": "node-0", "key": "k", "effect": "Never"}}],
            "replay.timeline[0].taint.effect",
            "unknown effect 'Never'",
        ),
        ([{"at": "1m", "addNode": {"kind": "Node", "metadata": {"name": "n"}}}], "status.allocatable", "missing"),
    ],
)
def test_bad_timelines_are_refused_at_load_naming_the_file_and_field(
    tmp_path: Path, timeline: list[Any], field: str, message: str
) -> None:
    path = _file(tmp_path, timeline)
    with pytest.raises(ManifestError) as info:
        load_workload([path])
    text = str(info.value)
    assert str(path) in text and field in text and message in text


def test_a_node_added_by_the_timeline_may_be_named_by_it(tmp_path: Path) -> None:
    node = {"kind": "Node", "metadata": {"name": "n9"}, "status": {"allocatable": {"cpu": "1", "memory": "1Gi"}}}
    path = _file(tmp_path, [{"at": "2m", "cordon": "n9"}, {"at": "1m", "addNode": node}])
    assert [a.kind for a in load_workload([path]).timeline] == ["cordon", "addNode"]
