"""A session's lifecycle: load a snapshot, let plugins prepare, run, close."""

from __future__ import annotations

from typing import Any, ClassVar

import pytest

from volcanolib import InMemoryCache, PluginError, Registry, Scheduler, Session, hookimpl
from volcanolib.testing import build_node, build_pod_group, build_queue, build_task

CONF = """
actions: "enqueue, allocate"
tiers:
- plugins:
  - name: gang
  - name: watcher
"""


class Watcher:
    """Records what the session held each time it opened; raises there when ``fail`` is set."""

    name: ClassVar[str] = "watcher"
    fail: ClassVar[bool] = False
    seen: ClassVar[list[list[str]]] = []

    def __init__(self, arguments: Any) -> None:
        pass

    @hookimpl
    def on_session_open(self, ssn: Session) -> None:
        Watcher.seen.append(sorted(ssn.jobs))
        if Watcher.fail:
            raise RuntimeError("cannot prepare")


@pytest.fixture
def scheduler() -> Scheduler:
    Watcher.seen = []
    Watcher.fail = False
    cache = InMemoryCache()
    cache.add_queue(build_queue("default"))
    cache.add_node(build_node("n1", "4", "8Gi"))
    cache.add_pod_group(build_pod_group("pg"))
    cache.add_task(build_task("pg-0", job="pg"))
    return Scheduler(cache, CONF, registry=Registry(plugins={"watcher": Watcher}))


def test_load_calls_no_plugin_and_prepare_calls_each_once(scheduler: Scheduler) -> None:
    ssn = scheduler.new_session()
    ssn.load(scheduler.cache.snapshot())
    assert Watcher.seen == []
    ssn.prepare()
    assert Watcher.seen == [["default/pg"]]


def test_open_is_load_then_prepare(scheduler: Scheduler) -> None:
    ssn = scheduler.new_session()
    ssn.open()
    assert Watcher.seen == [["default/pg"]]
    assert list(ssn.jobs) == ["default/pg"] and list(ssn.nodes) == ["n1"]


def test_a_plugin_failing_to_prepare_raises_and_the_cycle_runs_no_action(scheduler: Scheduler) -> None:
    Watcher.fail = True
    ssn = scheduler.new_session()
    ssn.load(scheduler.cache.snapshot())
    with pytest.raises(PluginError, match="watcher"):
        ssn.prepare()
    result = scheduler.run_once()
    assert not result.ran and result.binds == ()
    assert [err.plugin for err in result.plugin_errors] == ["watcher"]
    assert len(Watcher.seen) == 2


def test_a_cycle_prepares_plugins_once(scheduler: Scheduler) -> None:
    result = scheduler.run_once()
    assert result.ran and [t.name for t, _ in result.binds] == ["pg-0"]
    assert Watcher.seen == [["default/pg"]]


def test_each_plugins_opening_and_closing_is_timed_even_when_it_fails(
    scheduler: Scheduler, monkeypatch: pytest.MonkeyPatch
) -> None:
    import volcanolib.framework.combine as combine

    ticks = iter(range(0, 1000, 10))
    monkeypatch.setattr(combine.time, "perf_counter", lambda: float(next(ticks)))
    result = scheduler.run_once()
    assert result.session is not None
    assert result.session.plugin_seconds == {  # only the plugins that open or close
        "OnSessionOpen": {"watcher": 10.0},
        "OnSessionClose": {"gang": 10.0},
    }
    Watcher.fail = True
    failed = scheduler.run_once()
    assert failed.session is not None and not failed.ran
    assert failed.session.plugin_seconds["OnSessionOpen"] == {"watcher": 10.0}
