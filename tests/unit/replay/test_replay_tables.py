"""The terminal tables of replay and compare show the figures of the summary."""

from __future__ import annotations

import io

from replay_records import two_queues

from volcanolib._console import output, render_text, text_console
from volcanolib.replay.metrics import summarise
from volcanolib.replay.tables import (
    comparison_blocks,
    duration,
    render_comparison,
    render_summary,
    summary_blocks,
)


def test_durations_as_a_person_reads_them() -> None:
    assert [duration(x) for x in (None, 0.0, 7.5, 59.96, 60.0, 750.0, 3600.0, 11100.0, 187200.0)] == [
        "-",
        "0s",
        "7.5s",
        "60s",
        "1m 00s",
        "12m 30s",
        "1h 00m",
        "3h 05m",
        "2d 04h",
    ]


def test_summary_tables_show_the_figures() -> None:
    text = render_text(summary_blocks(summarise(two_queues())))
    lines = text.splitlines()
    assert lines[0] == "Jobs: 4 (1 completed, 1 failed, 1 cancelled, 1 unfinished)"
    assert lines[1] == "Unfinished: ns/j4"
    assert lines[2] == "Pods evicted (preempted or reclaimed): 0"
    assert lines[3] == "Simulated: 40s over 40 session periods, makespan 40s"
    assert "  wait    7.5s   7.5s   9.8s   9.9s  10s" in lines
    assert "  jct    32.5s  32.5s  39.2s  39.9s  40s" in lines
    assert "  cpu           40.0%" in lines and "  memory        37.5%" in lines
    assert "Queues (3), fairness (Jain's index of share / deserved): 0.800" in lines
    q1 = next(line for line in lines if line.split()[:1] == ["q1"])
    assert q1.split() == ["q1", "2", "0", "30.0%", "25.0%", "(weight)", "10s", "10s", "40s", "40s"]
    idle = next(line for line in lines if line.split()[:1] == ["idle"])
    assert idle.split() == ["idle", "0", "0", "0.0%", "-", "-", "-", "-", "-"]


def test_render_summary_prints_to_a_console() -> None:
    out = io.StringIO()
    with output(out) as console:
        render_summary(summarise(two_queues()), console)
    assert out.getvalue() == render_text(summary_blocks(summarise(two_queues())))


def test_comparison_side_by_side() -> None:
    explicit = two_queues()
    explicit.queues[1].deserved = {"cpu": 5.0}
    extra = two_queues()
    extra.jobs[0].queue = "q3"  # a queue only the third run has
    runs = [("weights", summarise(two_queues())), ("deserved", summarise(explicit)), ("third", summarise(extra))]
    console = text_console()
    render_comparison(runs, console)
    lines = [line.rstrip() for line in console.file.getvalue().splitlines()]  # type: ignore[attr-defined]
    assert lines == render_text(comparison_blocks(runs)).splitlines()
    assert lines[0].split() == ["FIGURE", "weights", "deserved", "third"]
    rows = {line.split("  ")[1]: line.split()[-3:] for line in lines[1:]}
    assert rows["fairness (Jain)"] == ["0.800", "1.000", "0.800"]
    assert rows["jct mean"] == ["32.5s", "32.5s", "32.5s"]
    assert rows["utilisation cpu"] == ["40.0%", "40.0%", "40.0%"]
    assert rows["share q3"] == ["-", "-", "0.0%"]


def test_evictions_show_in_the_summary_and_the_queue_table() -> None:
    record = two_queues()
    record.jobs[1].evicted_pods = 3  # ns/j1, queue q1
    lines = render_text(summary_blocks(summarise(record))).splitlines()
    assert lines[2] == "Pods evicted (preempted or reclaimed): 3"
    header = next(line for line in lines if line.startswith("  QUEUE"))
    assert header.split()[:3] == ["QUEUE", "JOBS", "EVICTED"]
    assert next(line for line in lines if line.split()[:1] == ["q1"]).split()[:3] == ["q1", "2", "3"]


def test_the_comparison_shows_each_queues_wait_and_evictions() -> None:
    evicting = two_queues()
    evicting.jobs[1].evicted_pods = 2  # ns/j1, queue q1
    evicting.jobs[1].started = 30.0  # its wait: 30 s instead of 10 s
    runs = [("a", summarise(two_queues())), ("b", summarise(evicting))]
    lines = render_text(comparison_blocks(runs)).splitlines()
    rows = {line.split("  ")[1]: line.split()[-2:] for line in lines[1:]}
    assert rows["evicted pods"] == ["0", "2"]
    assert rows["evicted pods q1"] == ["0", "2"] and rows["evicted pods q2"] == ["0", "0"]
    assert rows["wait mean q1"] == ["10s", "30s"] and rows["wait p95 q1"] == ["10s", "30s"]
    assert rows["wait mean q2"] == ["5s", "5s"] and rows["wait mean idle"] == ["-", "-"]
    labels = [line.split("  ")[1] for line in lines[1:]]
    # Each queue's wait right after the cluster's, before the completion times.
    assert labels.index("wait max") < labels.index("wait mean q1") < labels.index("jct mean")
