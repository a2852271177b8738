from __future__ import annotations

import threading
import time
from pathlib import Path

import pytest

from volcanolib import ConfigError, PluginError, Registry, Scheduler, hookimpl
from volcanolib.testing import FakeCache, build_node, build_pod_group, build_task

GOOD = "actions: ''\ntiers:\n- plugins:\n  - name: scripted-a\n"


def cache() -> FakeCache:
    c = FakeCache()
    c.add_node(build_node("n1"))
    c.add_pod_group(build_pod_group("pg"))
    c.add_task(build_task("pg-t-0", job="pg"))
    return c


def bump(path: Path, text: str) -> None:
    path.write_text(text)
    stamp = time.time() + 5
    import os

    os.utime(path, (stamp, stamp))


def test_invalid_configuration_at_start_is_an_error(tmp_path: Path) -> None:
    conf = tmp_path / "sched.conf"
    conf.write_text("actions: [\n")
    with pytest.raises(ConfigError) as info:
        Scheduler(cache(), conf)
    assert str(conf) in str(info.value)


def test_reload_keeps_the_last_good_configuration(tmp_path: Path) -> None:
    conf = tmp_path / "sched.conf"
    conf.write_text(GOOD)
    scheduler = Scheduler(cache(), conf)
    assert list(scheduler.host.plugins) == ["scripted-a"]
    bump(conf, GOOD.replace("scripted-a", "no-such-plugin"))
    assert scheduler.reload_config() is False
    assert list(scheduler.host.plugins) == ["scripted-a"]
    assert "no-such-plugin" in (scheduler.config_error or "")
    assert scheduler.reload_config() is False  # reported once: unchanged file is not re-read
    bump(conf, GOOD.replace("scripted-a", "scripted-b"))
    assert scheduler.reload_config() is True
    assert list(scheduler.host.plugins) == ["scripted-b"] and scheduler.config_error is None


def test_run_stops_and_reloads(tmp_path: Path) -> None:
    conf = tmp_path / "sched.conf"
    conf.write_text(GOOD)
    scheduler = Scheduler(cache(), conf, period=0.01)
    stop = threading.Event()
    seen: list[str] = []

    def on_cycle(result: object) -> None:
        seen.append(result.session_uid)  # type: ignore[attr-defined]
        if len(seen) == 3:
            stop.set()

    scheduler.run(stop, on_cycle=on_cycle)
    assert seen == ["cycle-1", "cycle-2", "cycle-3"]


class FailsOnOpen:
    name = "fails-on-open"

    def __init__(self, arguments: object) -> None:
        pass

    @hookimpl
    def on_session_open(self, ssn: object) -> None:
        raise RuntimeError("boom")


class Counting:
    name = "counting"
    executed = 0

    def execute(self, ssn: object) -> None:
        Counting.executed += 1


def test_plugin_failing_at_open_skips_the_cycle_and_the_next_cycle_runs() -> None:
    registry = Registry(plugins={"fails-on-open": FailsOnOpen}, actions={"counting": Counting})
    scheduler = Scheduler(
        cache(), "actions: counting\ntiers:\n- plugins:\n  - name: fails-on-open\n", registry=registry
    )
    Counting.executed = 0
    result = scheduler.run_once()
    assert result.ran is False and Counting.executed == 0
    assert isinstance(result.plugin_errors[0], PluginError)
    assert result.plugin_errors[0].plugin == "fails-on-open" and result.plugin_errors[0].hook == "on_session_open"
    again = scheduler.run_once()
    assert again.session_uid == "cycle-2"


def test_timings_cover_every_phase() -> None:
    registry = Registry(actions={"counting": Counting})
    result = Scheduler(cache(), "actions: counting\ntiers: []\n", registry=registry).run_once()
    assert set(result.timings) == {"snapshot", "open", "counting", "close", "session"}
    assert all(v >= 0 for v in result.timings.values())
