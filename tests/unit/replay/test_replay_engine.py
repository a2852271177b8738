"""The replay engine: time semantics, the job controller's reactions, skipping, inputs and the commands."""

from __future__ import annotations

import json
from pathlib import Path
from typing import Any

import pytest

from volcanolib._console import render_text
from volcanolib.errors import ManifestError
from volcanolib.replay import PodRecord, ReplayOptions, ReplayRecord, load_workload, parse_duration, run_replay
from volcanolib.replay.inputs import load_objects
from volcanolib.replay.metrics import summarise, to_json
from volcanolib.replay.tables import summary_blocks

ROOT = Path(__file__).resolve().parents[3]
EXAMPLE = ROOT / "examples" / "replay"

PREEMPT_CONF = """
actions: "enqueue, allocate, preempt, backfill"
tiers:
- plugins:
  - name: priority
  - name: gang
  - name: conformance
- plugins:
  - name: overcommit
  - name: drf
  - name: predicates
  - name: nodeorder
"""


def node(name: str, cpu: str = "8", memory: str = "16Gi") -> dict[str, Any]:
    return {
        "apiVersion": "v1",
        "kind": "Node",
        "metadata": {"name": name},
        "status": {"allocatable": {"cpu": cpu, "memory": memory, "pods": "110"}},
    }


def priority_class(name: str, value: int) -> dict[str, Any]:
    return {"apiVersion": "scheduling.k8s.io/v1", "kind": "PriorityClass", "metadata": {"name": name}, "value": value}


def pod(
    name: str, at: int | None, cpu: str, *, annotations: dict[str, str] | None = None, **spec: Any
) -> dict[str, Any]:
    meta: dict[str, Any] = {"name": name, "namespace": "ns", "annotations": annotations or {}}
    if at is not None:
        meta["creationTimestamp"] = f"1970-01-01T00:{at // 60:02d}:{at % 60:02d}Z"
    return {
        "apiVersion": "v1",
        "kind": "Pod",
        "metadata": meta,
        "spec": {
            "schedulerName": "volcano",
            "containers": [{"name": "c", "resources": {"requests": {"cpu": cpu}}}],
            **spec,
        },
    }


def tf_job(*, worker_duration: str = "10m", min_available: int = 3, at: str = "1970-01-01T00:00:00Z") -> dict[str, Any]:
    """The TensorFlow example of Volcano: ps + 2 workers, PodEvicted -> RestartJob, TaskCompleted -> CompleteJob."""

    def template(duration: str | None, *, preemptable: bool = True) -> dict[str, Any]:
        spec = {"restartPolicy": "Never", "containers": [{"name": "tf", "resources": {"requests": {"cpu": "2"}}}]}
        annotations = {"volcanolib.io/duration": duration} if duration else {}
        if not preemptable:
            annotations["volcano.sh/preemptable"] = "false"
        return {"metadata": {"annotations": annotations}, "spec": spec}

    return {
        "apiVersion": "batch.volcano.sh/v1alpha1",
        "kind": "Job",
        "metadata": {"name": "tf", "namespace": "ns", "creationTimestamp": at},
        "spec": {
            "minAvailable": min_available,
            "schedulerName": "volcano",
            "priorityClassName": "low",
            "policies": [{"event": "PodEvicted", "action": "RestartJob"}],
            "tasks": [
                {"name": "ps", "replicas": 1, "template": template(None, preemptable=False)},
                {
                    "name": "worker",
                    "replicas": 2,
                    "minAvailable": min_available - 1,
                    "policies": [{"event": "TaskCompleted", "action": "CompleteJob"}],
                    "template": template(worker_duration),
                },
            ],
        },
    }


def write(tmp_path: Path, objects: list[dict[str, Any]], name: str = "workload.yaml", **extra: Any) -> Path:
    path = tmp_path / name
    path.write_text(json.dumps({"objects": objects, **extra}))
    return path


def document(record: ReplayRecord) -> str:
    """The JSON of ``--json`` without the wall-clock timings."""
    doc = summarise(record)
    doc.pop("timings")
    return to_json(doc)


def by_name(record: ReplayRecord, name: str) -> list[PodRecord]:
    return sorted((p for p in record.pods if p.name == name), key=lambda p: p.attempt)


# ---------------------------------------------------------------------- the TensorFlow job


@pytest.fixture
def tf_replay(tmp_path: Path) -> ReplayRecord:
    """The TF job on one 8-cpu node; at 5 min a high-priority pod preempts a worker.

    The job's ``minAvailable`` is 2 (ps 1, worker 1), so that gang lets one of
    its three pods go; the ps pod is not preemptable, so preempt takes a worker.
    """
    return _tf_preempted(tmp_path, ReplayOptions(termination_grace=30))


def _tf_preempted(tmp_path: Path, options: ReplayOptions) -> ReplayRecord:
    objects = [
        node("n1"),
        priority_class("high", 1000),
        priority_class("low", 1),
        tf_job(min_available=2),
        pod("urgent", 300, "3", annotations={"volcanolib.io/duration": "1m"}, priorityClassName="high"),
    ]
    conf = tmp_path / "preempt.conf"
    conf.write_text(PREEMPT_CONF)
    return run_replay(load_workload([write(tmp_path, objects)]), conf, options)


def test_tf_job_restarts_after_an_eviction_and_completes_when_its_workers_complete(tf_replay: ReplayRecord) -> None:
    record = tf_replay
    job = next(j for j in record.jobs if j.name == "ns/tf")
    assert job.restarts == 1
    assert job.evicted_pods == 1
    assert job.phase == "Completed"
    evicted = [p for p in record.pods if p.job == "ns/tf" and p.phase == "Evicted"]
    assert len(evicted) == 1 and evicted[0].name.startswith("ns/tf-worker-")
    # The eviction at 5 min (the urgent pod's arrival) takes effect after the 30 s grace.
    assert evicted[0].finished == 330.0
    # Every pod of the job was made again: a second attempt each, created after the restart.
    for name in ("ns/tf-ps-0", "ns/tf-worker-0", "ns/tf-worker-1"):
        attempts = by_name(record, name)
        assert [p.attempt for p in attempts] == [0, 1]
        assert attempts[1].submitted >= 330.0
        assert attempts[0].phase in ("Evicted", "Deleted")
    workers = [p for p in record.pods if p.name.startswith("ns/tf-worker-") and p.attempt == 1]
    assert all(p.phase == "Succeeded" for p in workers)
    # CompleteJob deletes the ps, which goes after the grace period; the job is then Completed.
    ps = by_name(record, "ns/tf-ps-0")[1]
    last_worker = max(p.finished for p in workers if p.finished is not None)
    assert ps.phase == "Deleted" and ps.finished == last_worker + 30
    assert job.finished == ps.finished
    urgent = next(p for p in record.pods if p.name == "ns/urgent")
    assert urgent.bound == 330.0 and urgent.phase == "Succeeded"


def test_a_pod_still_terminating_when_the_replay_ends_is_reported_as_not_ended(tmp_path: Path) -> None:
    """Evicted at 5 min with a 30 s grace, the worker has not gone at 310 s: Running, not yet Evicted."""
    record = _tf_preempted(tmp_path, ReplayOptions(termination_grace=30, until=310))
    assert record.end == 310.0
    job = next(j for j in record.jobs if j.name == "ns/tf")
    assert job.evicted_pods == 1
    workers = [p for p in record.pods if p.name.startswith("ns/tf-worker-")]
    assert sorted((p.phase, p.finished) for p in workers) == [("Running", None), ("Running", None)]
    assert all(p.phase not in ("Evicted", "Deleted") or p.finished is not None for p in record.pods)


def test_tf_job_without_eviction_completes_without_restart(tmp_path: Path) -> None:
    objects = [node("n1"), priority_class("low", 1), tf_job()]
    workload = load_workload([write(tmp_path, objects)])
    record = run_replay(workload)
    job = record.jobs[0]
    assert (job.phase, job.restarts, job.evicted_pods) == ("Completed", 0, 0)
    assert all(p.attempt == 0 for p in record.pods)
    # Submitted at 0, admitted by the first session, pods made then and bound by the next one.
    assert job.started == 1.0
    assert job.finished == 601.0


# ---------------------------------------------------------------------- time semantics


def test_pods_start_after_startup_run_their_duration_and_fail_by_exit_code(tmp_path: Path) -> None:
    objects = [
        node("n1", cpu="4"),
        pod("a", 10, "3", annotations={"volcanolib.io/duration": "30s"}),
        pod("b", 12, "2", annotations={"volcanolib.io/duration": "1m", "volcanolib.io/exit-code": "3"}),
    ]
    workload = load_workload([write(tmp_path, objects)])
    record = run_replay(workload, options=ReplayOptions(pod_startup=5))
    a, b = by_name(record, "ns/a")[0], by_name(record, "ns/b")[0]
    assert (a.submitted, a.bound, a.started, a.finished, a.phase) == (10.0, 10.0, 15.0, 45.0, "Succeeded")
    # b fits only once a has finished; the session at 45 s runs after the events of 45 s.
    assert (b.bound, b.started, b.finished, b.phase) == (45.0, 50.0, 110.0, "Failed")
    assert record.start == 10.0 and record.end == 110.0
    assert [j.phase for j in record.jobs] == ["Completed", "Failed"]


def test_patience_cancels_a_job_that_has_not_started(tmp_path: Path) -> None:
    objects = [
        node("n1", cpu="4"),
        pod("running", 0, "4", annotations={"volcanolib.io/duration": "5m"}),
        pod("waiting", 10, "4", annotations={"volcanolib.io/duration": "1m", "volcanolib.io/cancel-after": "2m"}),
        pod("patient", 20, "4", annotations={"volcanolib.io/duration": "1m", "volcanolib.io/cancel-after": "1h"}),
    ]
    record = run_replay(load_workload([write(tmp_path, objects)]))
    waiting = by_name(record, "ns/waiting")[0]
    assert (waiting.phase, waiting.bound, waiting.finished) == ("Deleted", None, 130.0)
    assert {j.name.rsplit("-", 1)[-1]: j.phase for j in record.jobs} == {
        "running": "Completed",
        "waiting": "Cancelled",
        "patient": "Completed",
    }
    assert by_name(record, "ns/patient")[0].started == 300.0


def test_until_stops_the_replay_and_reports_what_is_unfinished(tmp_path: Path) -> None:
    objects = [node("n1", cpu="4"), pod("forever", 0, "4"), pod("later", 5, "4")]
    record = run_replay(load_workload([write(tmp_path, objects)]), options=ReplayOptions(until=3600))
    assert record.end == 3600.0
    assert [p.phase for p in record.pods] == ["Running", "Pending"]
    assert [j.phase for j in record.jobs] == ["Running", "Pending"]


def test_without_until_a_replay_that_cannot_change_stops(tmp_path: Path) -> None:
    objects = [node("n1", cpu="4"), pod("forever", 0, "4"), pod("never", 5, "8")]
    record = run_replay(load_workload([write(tmp_path, objects)]))
    assert record.end == 0.0 or record.end == 5.0
    assert [p.phase for p in record.pods] == ["Running", "Pending"]


def test_file_settings_apply_and_options_override_them(tmp_path: Path) -> None:
    objects = [node("n1"), pod("a", 0, "1", annotations={"volcanolib.io/duration": "10s"})]
    path = write(tmp_path, objects, replay={"period": "5s", "podStartup": "2s"})
    workload = load_workload([path])
    from_file = run_replay(workload, options=ReplayOptions.for_workload(workload))
    assert by_name(from_file, "ns/a")[0].started == 2.0
    overridden = run_replay(workload, options=ReplayOptions.for_workload(workload, pod_startup=0))
    assert by_name(overridden, "ns/a")[0].started == 0.0
    assert ReplayOptions.for_workload(workload).period == 5.0


def test_samples_follow_allocation(tmp_path: Path) -> None:
    objects = [
        node("n1", cpu="4"),
        pod("a", 0, "3", annotations={"volcanolib.io/duration": "30s"}),
        pod("b", 10, "2", annotations={"volcanolib.io/duration": "30s"}),
    ]
    record = run_replay(load_workload([write(tmp_path, objects)]))
    steps = [(s.time, s.pending_pods, s.running_pods, s.allocated.get("cpu", 0.0)) for s in record.samples]
    assert steps == [*[(0.0, 1, 0, 0.0), (0.0, 0, 1, 3.0)][1:], (10.0, 1, 1, 3.0), (30.0, 0, 1, 2.0), (60.0, 0, 0, 0.0)]
    assert record.samples[-1].capacity["cpu"] == 4.0


# ---------------------------------------------------------------------- skipping


def _workloads(tmp_path: Path) -> list[tuple[str, Any, Path | None, ReplayOptions]]:
    conf = tmp_path / "preempt.conf"
    conf.write_text(PREEMPT_CONF)
    tf = [node("n1"), priority_class("high", 1000), priority_class("low", 1)]
    tf.append(tf_job(min_available=2))
    tf.append(pod("urgent", 300, "3", annotations={"volcanolib.io/duration": "1m"}, priorityClassName="high"))
    bare = [node("n1", cpu="4"), node("n2", cpu="4")]
    for i in range(12):
        annotations = {"volcanolib.io/duration": f"{30 + 17 * i}s"}
        if i % 4 == 3:
            annotations["volcanolib.io/cancel-after"] = "40s"
        bare.append(pod(f"p{i}", 7 * i, str(1 + i % 3), annotations=annotations))
    traces = ROOT / "examples" / "replay" / "traces"
    return [
        ("tf", load_workload([write(tmp_path, tf, "tf.yaml")]), conf, ReplayOptions(termination_grace=30)),
        ("bare", load_workload([write(tmp_path, bare, "bare.yaml")]), None, ReplayOptions(pod_startup=3)),
        ("example", load_workload([EXAMPLE / "workload.yaml"]), None, ReplayOptions(pod_startup=5, period=2)),
        (
            "openb",
            load_workload([traces / "openb" / "pods.csv"], format="openb", nodes=traces / "openb" / "nodes.csv"),
            None,
            ReplayOptions(),
        ),
    ]


def test_skipping_sessions_gives_the_same_json_as_running_every_one(tmp_path: Path) -> None:
    for name, workload, conf, options in _workloads(tmp_path):
        skipped = run_replay(workload, conf, options)
        every = run_replay(workload, conf, ReplayOptions(**{**_fields(options), "every_period": True}))
        assert document(skipped) == document(every), name
        assert skipped.timings["sessions_run"] < every.timings["sessions_run"], name


def test_a_plugin_that_may_read_the_clock_has_every_session_run_and_is_named(
    tmp_path: Path, caplog: pytest.LogCaptureFixture
) -> None:
    """Skipping reads the plugins' declared traits: contrib's ``sla`` reads the clock and declares no ``clock_free``."""
    workload = load_workload([EXAMPLE / "workload.yaml"])
    conf = tmp_path / "sla.conf"
    conf.write_text(EXAMPLE.joinpath("volcano-scheduler.conf").read_text() + "  - name: sla\n")
    options = ReplayOptions(pod_startup=5, period=2, until=600)
    with caplog.at_level("INFO", logger="volcanolib.replay"):
        with_sla = run_replay(workload, conf, options)
    every = run_replay(workload, conf, ReplayOptions(**{**_fields(options), "every_period": True}))
    assert with_sla.timings["sessions_run"] == every.timings["sessions_run"]
    assert [r.message for r in caplog.records if "every session runs" in r.message] == [
        "every session runs: plugin 'sla' may read the clock (not declared clock_free)"
    ]
    assert run_replay(workload, None, options).timings["sessions_run"] < every.timings["sessions_run"]


def test_a_pod_no_node_can_hold_does_not_make_every_finish_a_session(tmp_path: Path) -> None:
    # "huge" asks more than any node has and waits to the end; ten pods come and go meanwhile, each fitting at once.
    objects = [node("n1", cpu="4"), node("n2", cpu="4"), node("n3", cpu="4"), pod("huge", 0, "6")]
    for i in range(10):
        objects.append(pod(f"p{i}", 20 * i, "1", annotations={"volcanolib.io/duration": f"{30 + 7 * i}s"}))
    workload = load_workload([write(tmp_path, objects)])
    options = ReplayOptions(until=600)
    skipped = run_replay(workload, None, options)
    every = run_replay(workload, None, ReplayOptions(**{**_fields(options), "every_period": True}))
    assert document(skipped) == document(every)
    assert [p.phase for p in by_name(skipped, "ns/huge")] == ["Pending"]
    # Each arrival binds in one session and its group moves to Running in the next; no finish needs one.
    assert skipped.timings["sessions_run"] <= 2 * 10 + 2

    # A pod that fits once others finish keeps a session after every finish until it is placed.
    objects[2] = pod("big", 0, "4")
    workload = load_workload([write(tmp_path, objects, "fits.yaml")])
    skipped = run_replay(workload, None, options)
    every = run_replay(workload, None, ReplayOptions(**{**_fields(options), "every_period": True}))
    assert document(skipped) == document(every)
    assert by_name(skipped, "ns/big")[0].node is not None


def _labelled(name: str, cpu: str, model: str) -> dict[str, Any]:
    labelled = node(name, cpu=cpu)
    labelled["metadata"]["labels"] = {"example.com/model": model}
    return labelled


def _needs_model(model: str) -> dict[str, Any]:
    term = {"matchExpressions": [{"key": "example.com/model", "operator": "In", "values": [model]}]}
    return {"nodeAffinity": {"requiredDuringSchedulingIgnoredDuringExecution": {"nodeSelectorTerms": [term]}}}


NO_PREDICATES_CONF = """
actions: "enqueue, allocate, backfill"
tiers:
- plugins:
  - name: priority
  - name: gang
- plugins:
  - name: drf
  - name: proportion
"""


def test_a_pod_its_node_affinity_keeps_off_every_node_that_could_hold_it(
    tmp_path: Path, caplog: pytest.LogCaptureFixture
) -> None:
    # "wide" needs a node of model a and 6 cpu: the model-a nodes have 4, the model-b node 8.
    objects = [_labelled("n1", "4", "a"), _labelled("n2", "4", "a"), _labelled("n3", "8", "b")]
    objects.append(pod("wide", 0, "6", affinity=_needs_model("a")))
    for i in range(10):
        objects.append(pod(f"p{i}", 20 * i, "1", annotations={"volcanolib.io/duration": f"{30 + 7 * i}s"}))
    workload = load_workload([write(tmp_path, objects)])
    options = ReplayOptions(until=600)
    with caplog.at_level("WARNING", logger="volcanolib.replay"):
        skipped = run_replay(workload, None, options)
    reports = [r.getMessage() for r in caplog.records if "fits no node" in r.getMessage()]
    why = "it requests cpu 6, more than any of the 2 ready node(s) its nodeSelector and node affinity admit has"
    assert reports == [f"job ns/podgroup-ns-wide: pod ns/wide fits no node: {why}; it is left pending"]
    every = run_replay(workload, None, ReplayOptions(**{**_fields(options), "every_period": True}))
    assert document(skipped) == document(every)
    assert [p.phase for p in by_name(skipped, "ns/wide")] == ["Pending"]
    # It makes no session run after the others finish: each arrival binds in one session and its
    # group moves to Running in the next.
    assert skipped.timings["sessions_run"] <= 2 * 10 + 2
    summary = summarise(skipped)["summary"]
    assert summary["unplaceable"] == {"ns/podgroup-ns-wide": f"pod ns/wide fits no node: {why}"}
    assert summary["unfinished"] == 1

    # Where no plugin checks node affinity, the pod goes to the node that has room: nothing is reported.
    conf = tmp_path / "no-predicates.conf"
    conf.write_text(NO_PREDICATES_CONF)
    caplog.clear()
    placed = run_replay(workload, conf, options)
    assert by_name(placed, "ns/wide")[0].node == "n3"
    assert not [r for r in caplog.records if "fits no node" in r.getMessage()]
    assert summarise(placed)["summary"]["unplaceable"] == {}


def test_a_pod_no_node_can_take_is_reported_at_load_and_named_among_the_unfinished(
    tmp_path: Path, caplog: pytest.LogCaptureFixture
) -> None:
    objects = [_labelled("n1", "4", "a"), _labelled("n2", "8", "b")]
    objects.append(pod("late", 500, "6", affinity=_needs_model("a")))  # arrives after --until
    objects.append(pod("gpu", 0, "1", nodeSelector={"example.com/model": "c"}))  # no node of model c
    objects += [pod(f"q{i}", 0, "1") for i in range(7)]  # never finish: unfinished too
    workload = load_workload([write(tmp_path, objects)])
    with caplog.at_level("WARNING", logger="volcanolib.replay"):
        record = run_replay(workload, None, ReplayOptions(until=100))
    reports = sorted(r.getMessage() for r in caplog.records if "fits no node" in r.getMessage())
    assert reports == [
        "job ns/podgroup-ns-gpu: pod ns/gpu fits no node: no ready node matches its nodeSelector and node affinity; "
        "it is left pending",
        "job ns/podgroup-ns-late: pod ns/late fits no node: it requests cpu 6, more than any of the 1 ready node(s) "
        "its nodeSelector and node affinity admit has; it is left pending",
    ]
    document = summarise(record)
    assert list(document["summary"]["unplaceable"]) == ["ns/podgroup-ns-gpu"]  # "late" never arrived
    lines = render_text(summary_blocks(document)).splitlines()
    assert lines[1] == (
        "Unfinished: ns/podgroup-ns-gpu (fits no node), ns/podgroup-ns-q0, ns/podgroup-ns-q1, "
        "ns/podgroup-ns-q2, ns/podgroup-ns-q3 and 3 more"
    )


def test_beyond_ten_jobs_with_a_pod_no_node_can_take_the_warnings_stop(
    tmp_path: Path, caplog: pytest.LogCaptureFixture
) -> None:
    objects = [node("n1", cpu="4")] + [pod(f"big{i:02d}", 0, "8") for i in range(12)]
    workload = load_workload([write(tmp_path, objects)])
    with caplog.at_level("WARNING", logger="volcanolib.replay"):
        record = run_replay(workload, None, ReplayOptions(until=10))
    messages = [r.getMessage() for r in caplog.records if r.name == "volcanolib.replay"]
    assert len(messages) == 11 and all("fits no node" in m for m in messages[:10])
    assert messages[10] == "more jobs have a pod that fits no node; --json lists them all under summary.unplaceable"
    assert len(summarise(record)["summary"]["unplaceable"]) == 12


def test_a_new_node_that_can_take_the_pod_makes_it_placeable_again(tmp_path: Path) -> None:
    from volcanolib.api.builders import build_node
    from volcanolib.replay.engine import _config, _Replay

    workload = load_workload([write(tmp_path, [node("n1", cpu="4"), pod("big", None, "6")])])
    replay = _Replay(workload, _config(None, workload), ReplayOptions())
    replay.setup()
    assert len(replay.unplaceable) == 1 and not replay._may_place()
    replay.cache.add_node(build_node("n2", cpu="8", memory="16Gi"))
    replay._read_nodes()  # what a change of nodes calls
    assert replay.unplaceable == set() and replay._may_place()


def _fields(options: ReplayOptions) -> dict[str, Any]:
    return {
        "period": options.period,
        "pod_startup": options.pod_startup,
        "termination_grace": options.termination_grace,
        "until": options.until,
        "seed": options.seed,
    }


def test_same_seed_same_json_and_seeds_matter_only_through_ties(tmp_path: Path) -> None:
    workload = load_workload([EXAMPLE / "workload.yaml"])
    first = document(run_replay(workload, options=ReplayOptions(seed=3)))
    assert document(run_replay(workload, options=ReplayOptions(seed=3))) == first


# ---------------------------------------------------------------------- inputs


@pytest.mark.parametrize(
    ("text", "seconds"),
    [("90s", 90.0), ("1h30m", 5400.0), ("1.5h", 5400.0), ("250ms", 0.25), ("45", 45.0), (12, 12.0), ("2m0.5s", 120.5)],
)
def test_parse_duration(text: Any, seconds: float) -> None:
    assert parse_duration(text) == pytest.approx(seconds)


@pytest.mark.parametrize("text", ["", "1d", "h", "-5s", "5 s", "1h-2m", True, None])
def test_parse_duration_refuses(text: Any) -> None:
    with pytest.raises(ValueError, match="duration"):
        parse_duration(text)


def test_bad_annotation_names_object_and_field(tmp_path: Path) -> None:
    path = write(tmp_path, [node("n1"), pod("a", 0, "1", annotations={"volcanolib.io/duration": "soon"})])
    with pytest.raises(ManifestError) as info:
        load_workload([path])
    assert "Pod ns/a" in str(info.value) and "volcanolib.io/duration" in str(info.value)


def test_bad_job_template_annotation_names_the_task(tmp_path: Path) -> None:
    job = tf_job()
    job["spec"]["tasks"][1]["template"]["metadata"]["annotations"]["volcanolib.io/exit-code"] = "oops"
    with pytest.raises(ManifestError) as info:
        load_workload([write(tmp_path, [node("n1"), job])])
    assert "Job ns/tf" in str(info.value) and "spec.tasks[1].template.metadata.annotations" in str(info.value)


def test_bad_replay_setting_is_refused(tmp_path: Path) -> None:
    with pytest.raises(ManifestError, match=r"replay\.period"):
        load_workload([write(tmp_path, [node("n1")], replay={"period": "0s"})])
    with pytest.raises(ManifestError, match=r"replay\.speed"):
        load_workload([write(tmp_path, [node("n1")], replay={"speed": 2})])


def test_job_refused_by_the_webhook_fails_at_load(tmp_path: Path) -> None:
    with pytest.raises(ManifestError, match="minAvailable"):
        load_workload([write(tmp_path, [node("n1"), tf_job(min_available=9)])])


def test_objects_without_time_exist_from_the_start(tmp_path: Path) -> None:
    objects = [node("n1", cpu="4"), pod("early", None, "1"), pod("late", 100, "1")]
    workload = load_objects(objects, source="test")
    assert workload.arrivals.keys() == {"ns-late", "ns/podgroup-ns-late"}
    record = run_replay(workload, options=ReplayOptions(until=10))
    assert record.start == 100.0
    early = by_name(record, "ns/early")[0]
    assert early.submitted == 100.0 and early.bound == 100.0


# ---------------------------------------------------------------------- the commands


def test_replay_command_writes_json_and_csv(tmp_path: Path, capsys: pytest.CaptureFixture[str]) -> None:
    from volcanolib.cli import main

    out = tmp_path / "out.json"
    status = main(["replay", str(EXAMPLE / "workload.yaml"), "--json", str(out), "--csv", str(tmp_path / "csv")])
    assert status == 0
    doc = json.loads(out.read_text())
    assert doc["summary"]["jobs"] == 16 and doc["summary"]["cancelled"] == 1
    assert (tmp_path / "csv" / "pods.csv").is_file()
    assert "Jobs: 16" in capsys.readouterr().out


def test_replay_command_bad_input_is_one_line_and_status_2(tmp_path: Path, capsys: pytest.CaptureFixture[str]) -> None:
    from volcanolib.cli import main

    path = write(tmp_path, [node("n1"), pod("a", 0, "1", annotations={"volcanolib.io/cancel-after": "later"})])
    assert main(["replay", str(path)]) == 2
    err = capsys.readouterr().err.strip().splitlines()
    assert len(err) == 1 and "volcanolib.io/cancel-after" in err[0] and str(path) in err[0]
    assert main(["replay", str(path), "--nodes", str(path)]) == 2


def test_export_reads_back_to_the_same_replay(tmp_path: Path) -> None:
    from volcanolib.cli import main

    traces = EXAMPLE / "traces" / "openb"
    exported, first, second = tmp_path / "openb.yaml", tmp_path / "a.json", tmp_path / "b.json"
    args = [str(traces / "pods.csv"), "--format", "openb", "--nodes", str(traces / "nodes.csv")]
    assert main(["replay", *args, "--export", str(exported), "--json", str(first)]) == 0
    assert main(["replay", str(exported), "--json", str(second)]) == 0
    a, b = json.loads(first.read_text()), json.loads(second.read_text())
    a.pop("timings")
    b.pop("timings")
    assert a == b and a["summary"]["jobs"] > 0


def test_compare_command_runs_each_configuration(tmp_path: Path) -> None:
    from volcanolib.cli import main

    out = tmp_path / "cmp.json"
    confs = ["--conf", str(EXAMPLE / "volcano-scheduler.conf"), "--conf", str(EXAMPLE / "binpack.conf")]
    assert main(["compare", *confs, str(EXAMPLE / "workload.yaml"), "--json", str(out)]) == 0
    runs = json.loads(out.read_text())["runs"]
    assert [r["name"] for r in runs] == ["volcano-scheduler.conf", "binpack.conf"]
    assert all(r["summary"]["jobs"] == 16 for r in runs)
    assert main(["compare", "--conf", str(EXAMPLE / "binpack.conf"), str(EXAMPLE / "workload.yaml")]) == 2


def test_pods_finished_or_terminating_at_the_start(tmp_path: Path) -> None:
    done = pod("done", None, "1", nodeName="n1")
    done["status"] = {"phase": "Succeeded"}
    done["metadata"]["annotations"]["scheduling.k8s.io/group-name"] = "pg"
    going = pod("going", None, "4", nodeName="n1")
    going["status"] = {"phase": "Running"}
    going["metadata"]["deletionTimestamp"] = "1970-01-01T00:00:00Z"
    group = {
        "apiVersion": "scheduling.volcano.sh/v1beta1",
        "kind": "PodGroup",
        "metadata": {"name": "pg", "namespace": "ns"},
        "spec": {"minMember": 1},
    }
    waiting = pod("waiting", 5, "4", annotations={"volcanolib.io/duration": "10s"})
    objects = [node("n1", cpu="4"), group, done, going, waiting]
    record = run_replay(load_workload([write(tmp_path, objects)]), options=ReplayOptions(termination_grace=20))
    assert by_name(record, "ns/done")[0].phase == "Succeeded"
    assert next(j for j in record.jobs if j.name == "ns/pg").phase == "Completed"
    gone = by_name(record, "ns/going")[0]
    assert (gone.phase, gone.finished) == ("Deleted", 25.0)
    assert by_name(record, "ns/waiting")[0].bound == 25.0
    assert record.end == 35.0


def test_the_python_example_of_the_docs_runs(
    monkeypatch: pytest.MonkeyPatch, capsys: pytest.CaptureFixture[str]
) -> None:
    import re

    page = (ROOT / "docs" / "replay.md").read_text(encoding="utf-8")
    blocks = re.findall(r"^```python\n(.*?)^```", page, re.S | re.M)
    assert len(blocks) == 1
    monkeypatch.chdir(ROOT)
    exec(compile(blocks[0], "docs/replay.md", "exec"), {})
    simulated, pods, sessions = capsys.readouterr().out.split()
    assert float(simulated) > 3600 and int(pods) > 16 and float(sessions) > 0


def test_a_status_write_counts_as_a_change_unless_only_a_message_moved() -> None:
    """Sessions that change only a condition's message (figures of other jobs) do not seed the next differently."""
    from volcanolib.api.job import ConditionType, JobInfo, PodGroupCondition, PodGroupPhase
    from volcanolib.replay.engine import _Statuses
    from volcanolib.testing import build_pod_group

    statuses = _Statuses()
    job = JobInfo.from_pod_group(build_pod_group("pg", min_member=2, phase=PodGroupPhase.INQUEUE))

    def write(reason: str, message: str) -> bool:
        statuses.groups = {}
        job.pod_group.conditions = [PodGroupCondition(ConditionType.UNSCHEDULABLE, "True", reason, message)]
        statuses.update_pod_group(job)
        return bool(statuses.groups)

    assert write("NotEnoughResources", "queue q is short of cpu 2")
    assert not write("NotEnoughResources", "queue q is short of cpu 1")
    assert write("NotEnoughPods", "queue q is short of cpu 1")
    job.pod_group.phase = PodGroupPhase.RUNNING
    assert write("NotEnoughPods", "queue q is short of cpu 1")
    statuses.written.pop(job.uid)  # the PodGroup made again: its first status is a change
    assert write("NotEnoughPods", "queue q is short of cpu 1")
