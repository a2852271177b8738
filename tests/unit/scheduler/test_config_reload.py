"""Configuration: a clear ConfigError at start; on reload the last good configuration keeps running."""

from __future__ import annotations

import logging
import os
import threading
from pathlib import Path
from typing import Any

import pytest

from volcanolib import ConfigError, InMemoryCache, PluginError, Registry, Scheduler, TaskStatus
from volcanolib.api.cluster import ClusterInfo
from volcanolib.testing import build_node, build_pod_group, build_task

GOOD = """
actions: "enqueue, allocate"
tiers:
- plugins:
  - name: gang
  - name: picky
"""


class Picky:
    """A plugin whose constructor fails on a bad argument with a plain exception, not a ConfigError."""

    name = "picky"

    def __init__(self, arguments: Any) -> None:
        self.limit = int(arguments.get("limit", 1))


REGISTRY = Registry(plugins={"picky": Picky})

BAD_FILES: dict[str, bytes] = {
    "yaml": b"actions: [\n",
    "unknown plugin": GOOD.replace("picky", "picky-typo").encode(),
    "not a mapping": b"- just\n- a list\n",
    "plugin refuses its arguments": (GOOD + "    arguments: {limit: lots}\n").encode(),
    "action argument type": (
        GOOD + "configurations:\n- name: allocate\n  arguments: {nodeClassesEnable: maybe}\n"
    ).encode(),
    "unknown action": GOOD.replace("allocate", "allocat").encode(),
    "not UTF-8": b"actions: \xff\xfe\n",
    # a file emptied or cut short while it is rewritten, or the wrong file: never "schedule nothing"
    "empty": b"",
    "truncated to blank lines": b"\n\n",
    "truncated after the actions key": b"actions:",
    "no actions key": b"tiers:\n- plugins:\n  - name: gang\n",
    "a ConfigMap": (
        b"apiVersion: v1\nkind: ConfigMap\nmetadata: {name: volcano-scheduler-configmap}\n"
        b"data:\n  volcano-scheduler.conf: |\n"
        + b"".join(b"    " + line.encode() + b"\n" for line in GOOD.splitlines())
    ),
    "a nodes file": b"- {apiVersion: v1, kind: Node, metadata: {name: n1}}\n",
}


def _write(path: Path, data: bytes, stamp: float) -> None:
    path.write_bytes(data)
    os.utime(path, (stamp, stamp))


def _cache() -> InMemoryCache:
    cache = InMemoryCache()
    cache.add_node(build_node("n1", cpu="8", memory="16Gi"))
    return cache


def _add_job(cache: InMemoryCache, name: str) -> None:
    cache.add_pod_group(build_pod_group(name, min_member=1))
    cache.add_task(build_task(f"{name}-t-0", job=name))


@pytest.mark.parametrize("case", sorted(BAD_FILES))
def test_an_invalid_configuration_at_start_is_one_clear_config_error(case: str, tmp_path: Path) -> None:
    conf = tmp_path / "volcano-scheduler.conf"
    _write(conf, BAD_FILES[case], 1_000_000)
    with pytest.raises(ConfigError) as info:
        Scheduler(_cache(), conf, registry=REGISTRY)
    message = str(info.value)
    assert str(conf) in message and "\n" not in message
    assert not isinstance(info.value, PluginError)


@pytest.mark.parametrize("case", sorted(BAD_FILES))
def test_a_bad_reload_keeps_the_last_good_configuration_and_is_reported_once(
    case: str, tmp_path: Path, caplog: pytest.LogCaptureFixture
) -> None:
    conf = tmp_path / "volcano-scheduler.conf"
    _write(conf, GOOD.encode(), 1_000_000)
    cache = _cache()
    scheduler = Scheduler(cache, conf, registry=REGISTRY, period=0.0)
    good = scheduler.config
    _write(conf, BAD_FILES[case], 1_000_100)
    seen: list[str] = []
    stop = threading.Event()

    def on_cycle(result: Any) -> None:
        seen.append(result.session_uid)
        _add_job(cache, f"job{len(seen)}")  # work keeps arriving and is scheduled by the old configuration
        if len(seen) == 6:
            stop.set()

    with caplog.at_level(logging.ERROR, logger="volcanolib.scheduler"):
        scheduler.run(stop, on_cycle=on_cycle)
    reports = [r for r in caplog.records if "keeping the last good configuration" in r.getMessage()]
    assert len(reports) == 1, [r.getMessage() for r in reports]
    assert str(conf) in reports[0].getMessage()
    assert scheduler.config is good and list(scheduler.host.plugins) == ["gang", "picky"]
    assert scheduler.config_error is not None and str(conf) in scheduler.config_error
    assert len(seen) == 6
    # every cycle ran; the job added after the last cycle waits for the next one
    assert {t.name: t.status for t in cache.tasks() if t.status is not TaskStatus.BOUND} == {
        "job6-t-0": TaskStatus.PENDING
    }
    assert len(cache.tasks()) == 6

    # touching the file with the same bad content is not reported again
    _write(conf, BAD_FILES[case], 1_000_200)
    with caplog.at_level(logging.ERROR, logger="volcanolib.scheduler"):
        assert scheduler.reload_config() is False
    assert len([r for r in caplog.records if "keeping the last good" in r.getMessage()]) == 1

    # a fixed file is installed and clears the error
    _write(conf, GOOD.replace("- name: gang\n", "").encode(), 1_000_300)
    assert scheduler.reload_config() is True
    assert scheduler.config_error is None and list(scheduler.host.plugins) == ["picky"]


def test_a_cycle_that_fails_outright_does_not_stop_run() -> None:
    class Flaky(InMemoryCache):
        calls = 0

        def snapshot(self) -> ClusterInfo:
            Flaky.calls += 1
            if Flaky.calls == 2:
                raise ConnectionError("cluster unreachable")
            return super().snapshot()

    cache = Flaky()
    cache.add_node(build_node("n1"))
    _add_job(cache, "a")
    scheduler = Scheduler(cache, period=0.0)
    stop = threading.Event()
    done: list[str] = []

    def on_cycle(result: Any) -> None:
        done.append(result.session_uid)
        if len(done) == 3:
            stop.set()

    scheduler.run(stop, on_cycle=on_cycle)
    assert done == ["cycle-1", "cycle-3", "cycle-4"]


def test_an_unchanged_file_is_not_read_again(tmp_path: Path) -> None:
    conf = tmp_path / "volcano-scheduler.conf"
    _write(conf, GOOD.encode(), 1_000_000)
    scheduler = Scheduler(_cache(), conf, registry=REGISTRY)
    host = scheduler.host
    assert scheduler.reload_config() is False and scheduler.reload_config() is False
    assert scheduler.host is host  # plugins are not rebuilt every cycle
    _write(conf, GOOD.encode(), 1_000_100)
    assert scheduler.reload_config() is True and scheduler.host is not host


def test_run_once_reloads_a_changed_file_before_the_cycle(tmp_path: Path) -> None:
    conf = tmp_path / "volcano-scheduler.conf"
    _write(conf, GOOD.encode(), 1_000_000)
    cache = _cache()
    scheduler = Scheduler(cache, conf, registry=REGISTRY)
    _add_job(cache, "a")
    assert scheduler.run_once().binds  # enqueue, allocate: the job is placed
    _write(conf, GOOD.replace('"enqueue, allocate"', '"enqueue"').encode(), 1_000_100)
    _add_job(cache, "b")
    result = scheduler.run_once()  # the embedding loop: no run(), no explicit reload_config()
    assert scheduler.config.actions == ("enqueue",)
    assert not result.binds and [a.name for a in scheduler.host.actions] == ["enqueue"]


def test_run_once_keeps_the_last_good_configuration_when_the_file_is_emptied(
    tmp_path: Path, caplog: pytest.LogCaptureFixture
) -> None:
    conf = tmp_path / "volcano-scheduler.conf"
    _write(conf, GOOD.encode(), 1_000_000)
    cache = _cache()
    scheduler = Scheduler(cache, conf, registry=REGISTRY)
    _write(conf, b"", 1_000_100)
    _add_job(cache, "a")
    with caplog.at_level(logging.ERROR, logger="volcanolib.scheduler"):
        result = scheduler.run_once()
    assert [task.name for task, _ in result.binds] == ["a-t-0"]
    assert scheduler.config.actions == ("enqueue", "allocate")
    [report] = [r.getMessage() for r in caplog.records if "keeping the last good configuration" in r.getMessage()]
    assert f"{conf}: empty: not a scheduler configuration" in report


def test_a_string_naming_a_file_is_a_file_backed_configuration(tmp_path: Path, monkeypatch: pytest.MonkeyPatch) -> None:
    monkeypatch.chdir(tmp_path)
    _write(tmp_path / "sched.conf", GOOD.encode(), 1_000_000)
    scheduler = Scheduler(_cache(), "sched.conf", registry=REGISTRY)
    assert list(scheduler.host.plugins) == ["gang", "picky"] and scheduler.config.source == "sched.conf"
    _write(tmp_path / "sched.conf", GOOD.replace("  - name: gang\n", "").encode(), 1_000_100)
    scheduler.run_once()
    assert list(scheduler.host.plugins) == ["picky"]  # reloaded like a Path
    # YAML text stays text, even on one line
    assert Scheduler(_cache(), "{actions: allocate}").config.actions == ("allocate",)
    assert Scheduler(_cache(), "actions: allocate").config.source is None


def test_a_string_naming_no_file_says_a_path_is_expected(tmp_path: Path, monkeypatch: pytest.MonkeyPatch) -> None:
    monkeypatch.chdir(tmp_path)
    with pytest.raises(ConfigError) as info:
        Scheduler(_cache(), "missing.conf")
    message = str(info.value)
    assert message.startswith("missing.conf: no such file") and "pathlib.Path" in message
