"""The figures of a replay, checked on hand-built records whose answers are worked out here by hand."""

from __future__ import annotations

import json

import pytest
from replay_records import sample, two_queues, with_pods

from volcanolib.replay.metrics import (
    JOB_COLUMNS,
    JOB_HISTORY_KEYS,
    POD_COLUMNS,
    deserved_shares,
    percentile,
    queue_shares,
    statistics,
    summarise,
    time_weights,
    to_json,
)
from volcanolib.replay.records import ReplayRecord, Sample


def test_percentiles_interpolate_between_the_nearest_ranks() -> None:
    assert percentile([1.0, 2.0, 3.0, 4.0], 0.5) == 2.5
    assert percentile([5.0, 10.0], 0.95) == pytest.approx(9.75)
    assert percentile([7.0], 0.99) == 7.0
    assert percentile([0.0, 10.0, 20.0], 1.0) == 20.0
    assert statistics([10.0, 5.0]) == {"mean": 7.5, "p50": 7.5, "p95": 9.75, "p99": 9.95, "max": 10.0}
    assert statistics([]) == {"mean": None, "p50": None, "p95": None, "p99": None, "max": None}


def test_summary_counts_waits_completion_times_and_makespan() -> None:
    summary = summarise(two_queues())["summary"]
    assert list(summary) == [
        "jobs",
        "completed",
        "failed",
        "cancelled",
        "unfinished",
        "unplaceable",
        "evicted_pods",
        "wait",
        "jct",
        "makespan",
        "utilisation",
        "fairness",
        "sessions",
        "simulated_seconds",
    ]
    assert (summary["jobs"], summary["completed"], summary["failed"], summary["cancelled"]) == (4, 1, 1, 1)
    assert summary["unfinished"] == 1  # j4, still pending
    assert summary["unplaceable"] == {}
    # Waits of the jobs that started: j1 10 - 0, j2 10 - 5.
    assert summary["wait"] == {"mean": 7.5, "p50": 7.5, "p95": 9.75, "p99": 9.95, "max": 10.0}
    # Completion times of the jobs that ended (not the cancelled j3): j1 40, j2 25.
    assert summary["jct"] == {"mean": 32.5, "p50": 32.5, "p95": 39.25, "p99": 39.85, "max": 40.0}
    assert summary["makespan"] == 40.0  # last finish 40 - first arrival 0
    assert summary["sessions"] == 40 and summary["simulated_seconds"] == 40.0


def test_evicted_pods_are_counted_in_the_summary_and_per_queue() -> None:
    record = two_queues()
    jobs = {job.name: job for job in record.jobs}
    jobs["ns/j1"].evicted_pods, jobs["ns/j2"].evicted_pods, jobs["ns/j3"].evicted_pods = 2, 1, 3
    document = summarise(record)
    assert document["summary"]["evicted_pods"] == 6
    assert {q["name"]: q["evicted_pods"] for q in document["queues"]} == {"idle": 0, "q1": 2, "q2": 4}
    assert list(document["queues"][0])[:3] == ["name", "jobs", "evicted_pods"]


def test_utilisation_is_time_weighted_and_leaves_out_pods() -> None:
    utilisation = summarise(two_queues())["summary"]["utilisation"]
    # cpu: (0 * 10 + 6 * 20 + 4 * 10) / (10 * 40); memory: (70 * 20 + 10 * 10) / (100 * 40)
    assert utilisation == {"cpu": 0.4, "memory": 0.375}


def test_utilisation_divides_resource_seconds_when_the_capacity_changes() -> None:
    record = two_queues(
        samples=[
            Sample(0.0, 0, 1, {"cpu": 5.0}, {"cpu": 10.0}, {"q1": {"cpu": 5.0}}),
            Sample(20.0, 0, 1, {"cpu": 5.0}, {"cpu": 20.0}, {"q1": {"cpu": 5.0}}),
        ]
    )
    # used 5 * 40 = 200 of 10 * 20 + 20 * 20 = 600 cpu-seconds
    assert summarise(record)["summary"]["utilisation"] == {"cpu": pytest.approx(1 / 3, abs=1e-6)}


def test_queue_shares_are_time_averaged_dominant_shares() -> None:
    record = two_queues()
    # q1: max(4/10, 10/100) = 0.4 for 30 of 40 s; q2: max(2/10, 60/100) = 0.6 for 20 of 40 s.
    assert queue_shares(record) == {"idle": 0.0, "q1": pytest.approx(0.3), "q2": pytest.approx(0.3)}


def test_deserved_shares_by_weight_among_queues_with_jobs() -> None:
    record = two_queues()
    assert deserved_shares(record) == {"idle": (None, None), "q1": (0.25, "weight"), "q2": (0.75, "weight")}
    document = summarise(record)
    by_name = {q["name"]: q for q in document["queues"]}
    assert [q["name"] for q in document["queues"]] == ["idle", "q1", "q2"]
    assert by_name["q1"]["deserved"] == {"share": 0.25, "from": "weight"}
    assert by_name["q2"]["share"] == {"mean": 0.3}
    # Ratios 0.3 / 0.25 = 1.2 and 0.3 / 0.75 = 0.4: (1.6)^2 / (2 * (1.44 + 0.16)) = 0.8. The idle queue is left out.
    assert document["summary"]["fairness"] == {"jain": 0.8}


def test_explicit_deserved_shares_and_the_rest_by_weight() -> None:
    record = two_queues()
    record.queues[1].deserved = {"cpu": 5.0, "pods": 100.0}  # q1: half the cpu; pods do not count
    shares = deserved_shares(record)
    assert shares["q1"] == (0.5, "deserved")
    assert shares["q2"] == (0.5, "weight")  # what q1 leaves, q2 being the only queue by weight
    # Ratios 0.3 / 0.5 twice: perfectly fair.
    assert summarise(record)["summary"]["fairness"] == {"jain": 1.0}


def test_jain_is_one_over_n_when_one_queue_has_everything() -> None:
    record = two_queues(samples=[sample(0.0, {"cpu": 10.0})])
    assert summarise(record)["summary"]["fairness"] == {"jain": 0.5}


def test_per_queue_distributions() -> None:
    queues = {q["name"]: q for q in summarise(two_queues())["queues"]}
    assert queues["q1"]["jobs"] == 2 and queues["q2"]["jobs"] == 2 and queues["idle"]["jobs"] == 0
    assert queues["q1"]["wait"] == {"mean": 10.0, "p50": 10.0, "p95": 10.0, "p99": 10.0, "max": 10.0}
    assert queues["q2"]["jct"]["mean"] == 25.0  # j2 only: j3 was cancelled
    assert queues["idle"]["wait"]["mean"] is None
    assert list(queues["q1"]) == ["name", "jobs", "evicted_pods", "wait", "jct", "share", "deserved"]


def test_jobs_by_arrival_with_wait_and_jct() -> None:
    jobs = summarise(two_queues())["jobs"]
    assert [j["name"] for j in jobs] == ["ns/j1", "ns/j2", "ns/j3", "ns/j4"]
    assert all(tuple(j) == JOB_COLUMNS + JOB_HISTORY_KEYS for j in jobs)
    assert {k: jobs[1][k] for k in JOB_COLUMNS} == {
        "name": "ns/j2",
        "queue": "q2",
        "submitted": 5.0,
        "started": 10.0,
        "finished": 30.0,
        "phase": "Failed",
        "wait": 5.0,
        "jct": 25.0,
        "restarts": 0,
        "evicted_pods": 0,
        "version": None,
        "kept_pods": 0,
    }
    assert jobs[2]["wait"] is None and jobs[2]["jct"] == 12.0  # the cancelled job's own record keeps its times
    assert jobs[3]["started"] is None and jobs[3]["jct"] is None


def test_one_pod_record_per_attempt() -> None:
    record = with_pods()
    pods = summarise(record)["pods"]
    assert [(p["name"], p["attempt"]) for p in pods] == [("ns/j1-w-0", 0), ("ns/j1-w-1", 0), ("ns/j1-w-0", 1)]
    assert all(tuple(p) == POD_COLUMNS for p in pods)
    assert pods[0]["phase"] == "Evicted" and pods[2]["node"] == "n1"
    assert pods[1] == {
        "name": "ns/j1-w-1",
        "job": "ns/j1",
        "node": None,
        "submitted": 0.0,
        "bound": None,
        "started": None,
        "finished": None,
        "phase": "Pending",
        "attempt": 0,
        "restarts": 0,
        "deleted": None,
    }


def test_series_lists_every_sample() -> None:
    series = summarise(two_queues())["series"]
    assert series["time"] == [0.0, 10.0, 30.0]
    assert series["pending_pods"] == [2, 1, 0] and series["running_pods"] == [0, 3, 1]
    assert series["allocated"] == {"cpu": [0.0, 6.0, 4.0], "memory": [0.0, 70.0, 10.0]}
    assert series["queue_allocated"]["q2"] == {"cpu": [0.0, 2.0, 0.0], "memory": [0.0, 60.0, 0.0]}
    assert series["queue_allocated"]["idle"] == {"cpu": [0.0, 0.0, 0.0], "memory": [0.0, 0.0, 0.0]}


def test_time_weights_clip_to_the_replay_and_an_instant_weighs_its_last_sample() -> None:
    record = two_queues(start=5.0, end=35.0)
    assert [(s.time, w) for s, w in time_weights(record)] == [(0.0, 5.0), (10.0, 20.0), (30.0, 5.0)]
    instant = two_queues(start=10.0, end=10.0)
    assert [(s.time, w) for s, w in time_weights(instant)] == [(10.0, 1.0)]
    assert summarise(instant)["summary"]["utilisation"] == {"cpu": 0.6, "memory": 0.7}


def test_an_empty_replay_has_null_figures() -> None:
    document = summarise(ReplayRecord(0.0, 0.0, 0, [], [], [], [], {}))
    summary = document["summary"]
    assert summary["jobs"] == 0 and summary["makespan"] is None and summary["wait"]["p99"] is None
    assert summary["utilisation"] == {} and summary["fairness"] == {"jain": None}
    assert document["queues"] == [] and document["series"]["time"] == []
    json.loads(to_json(document))


def test_document_keys_rounding_and_bytes_are_stable() -> None:
    record = two_queues(end=30.0 + 1 / 3)
    document = summarise(record)
    assert list(document) == ["summary", "queues", "jobs", "pods", "series", "timings"]
    assert document["summary"]["simulated_seconds"] == 30.333333
    assert list(document["timings"]) == ["wall", "sessions", "snapshots", "events"]
    text = to_json(document)
    assert text == to_json(summarise(two_queues(end=30.0 + 1 / 3))) and text.endswith("}\n")
    # -0.0 never shows up: equal figures print equally.
    tiny = two_queues()
    tiny.jobs[0].submitted = -1e-9
    assert round(-1e-9, 6) == -0.0 and "-0.0" not in to_json(summarise(tiny))


def test_json_layout_one_row_per_line() -> None:
    document = summarise(with_pods())
    text = to_json(document)
    assert json.loads(text) == document
    lines = text.splitlines()
    assert lines[:3] == ["{", '  "summary": {', '    "jobs": 4,']
    assert '    "wait": {"mean": 7.5, "p50": 7.5, "p95": 9.75, "p99": 9.95, "max": 10.0},' in lines
    pod_lines = [line for line in lines if line.startswith('    {"name": "ns/j1-w-')]
    assert len(pod_lines) == 3 and all(json.loads(line.rstrip(",")) in document["pods"] for line in pod_lines)
    assert '    "time": [0.0, 10.0, 30.0],' in lines
    # compare's document: a list of whole documents, each laid out the same way
    runs = to_json({"runs": [{"name": "a", **document}]})
    assert json.loads(runs) == {"runs": [{"name": "a", **document}]}
    assert '        "time": [0.0, 10.0, 30.0],' in runs.splitlines()
