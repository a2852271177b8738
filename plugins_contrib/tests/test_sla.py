"""The sla plugin: waiting times, job order, enqueue and pipelining votes; Go durations."""

from __future__ import annotations

import pytest
from volcanolib_contrib.sla import SlaPlugin

from volcanolib.api.duration import parse_duration, parse_duration_ns
from volcanolib.errors import ConfigError
from volcanolib.framework.config import parse_config
from volcanolib.framework.registry import PluginHost
from volcanolib.framework.session import Session
from volcanolib.framework.status import Vote
from volcanolib.testing import FakeCache, build_node, build_pod_group, build_task, open_session


@pytest.mark.parametrize(
    ("text", "ns"),
    [
        ("0", 0),
        ("3m", 180 * 10**9),
        ("1h2m3s4ms5us6ns", 3723 * 10**9 + 4 * 10**6 + 5 * 10**3 + 6),
        ("1h2m3s4ms5\u00b5s6ns", 3723 * 10**9 + 4 * 10**6 + 5 * 10**3 + 6),
        ("1.5h", 5400 * 10**9),
        (".5s", 5 * 10**8),
        ("-1m", -60 * 10**9),
        ("+2s", 2 * 10**9),
    ],
)
def test_go_durations(text: str, ns: int) -> None:
    assert parse_duration_ns(text) == ns


@pytest.mark.parametrize("text", ["", "1", "3", "1x", "h", "1h2", ".s", "-"])
def test_invalid_go_durations(text: str) -> None:
    with pytest.raises(ValueError, match="duration"):
        parse_duration(text)


def _session(conf_args: str = "", *, clock: float = 1000.0) -> Session:
    cache = FakeCache()
    cache.add_node(build_node("n0", "4", "8Gi"))
    # none: no annotation; hour: 1h; short: 30s via the volcano.sh/ key (wins over the plain key); bad: unparseable.
    groups = {
        "none": {},
        "hour": {"sla-waiting-time": "1h"},
        "short": {"volcano.sh/sla-waiting-time": "30s", "sla-waiting-time": "2h"},
        "bad": {"sla-waiting-time": "soon"},
        "zero": {"sla-waiting-time": "0s"},
    }
    for i, (name, notes) in enumerate(groups.items()):
        cache.add_pod_group(build_pod_group(name, creation_timestamp=100.0 + i, annotations=notes))
        cache.add_task(build_task(f"{name}-0", job=name, cpu="1"))
    args = f"\n    arguments: {{{conf_args}}}" if conf_args else ""
    ssn = open_session(cache, f"actions: ''\ntiers:\n- plugins:\n  - name: sla{args}\n")
    ssn.clock = lambda: clock
    return ssn


def _plugin(ssn: Session) -> SlaPlugin:
    plugin = ssn.plugins["sla"]
    assert isinstance(plugin, SlaPlugin)
    return plugin


def test_waiting_times_come_from_the_annotations_then_the_argument() -> None:
    ssn = _session("sla-waiting-time: 3m")
    sla = _plugin(ssn)
    names = ("none", "hour", "short", "bad", "zero")
    waits = {name: sla.job_waiting_time(ssn.jobs[f"default/{name}"]) for name in names}
    assert waits == {"none": 180.0, "hour": 3600.0, "short": 30.0, "bad": 180.0, "zero": 180.0}
    assert _plugin(_session()).job_waiting_time(_session().jobs["default/none"]) is None


def test_job_order_is_by_deadline_and_jobs_without_one_go_last() -> None:
    ssn = _session()
    jobs = ssn.jobs
    ordered = sorted(jobs.values(), key=ssn.job_key)
    # short: 102 + 30s; hour: 101 + 1h; then the jobs without a waiting time by creation time.
    assert [j.name for j in ordered] == ["short", "hour", "none", "bad", "zero"]
    assert ssn.compare_jobs(jobs["default/hour"], jobs["default/none"]) < 0
    sla = _plugin(ssn)
    assert sla.job_order(ssn, jobs["default/none"], jobs["default/bad"]) == 0


def test_job_order_with_the_global_waiting_time_compares_deadlines() -> None:
    ssn = _session("sla-waiting-time: 3m")
    jobs = ssn.jobs
    sla = _plugin(ssn)
    # none: 100 + 180s is before hour: 101 + 3600s (Volcano's "sla normal placement").
    assert sla.job_order(ssn, jobs["default/none"], jobs["default/hour"]) < 0
    assert sla.job_order(ssn, jobs["default/hour"], jobs["default/none"]) > 0


@pytest.mark.parametrize(("clock", "vote"), [(131.9, Vote.ABSTAIN), (132.0, Vote.PERMIT), (5000.0, Vote.PERMIT)])
def test_a_job_that_waited_its_time_is_permitted(clock: float, vote: Vote) -> None:
    ssn = _session(clock=clock)
    sla = _plugin(ssn)
    short = ssn.jobs["default/short"]  # created at 102, waits 30s
    assert sla.job_enqueueable(ssn, short) is vote
    assert sla.job_pipelined(ssn, short) is vote
    assert sla.job_enqueueable(ssn, ssn.jobs["default/none"]) is Vote.ABSTAIN


@pytest.mark.parametrize("value", ["1", "0s", "-3m", "soon", "true"])
def test_a_bad_global_waiting_time_is_refused_naming_the_key(value: str) -> None:
    # Volcano logs such a value (its "sla error type placement" case passes the integer 1) and runs without it.
    text = f"actions: ''\ntiers:\n- plugins:\n  - name: sla\n    arguments: {{sla-waiting-time: {value}}}\n"
    config = parse_config(text)
    with pytest.raises(ConfigError, match="sla-waiting-time"):
        PluginHost(config)
