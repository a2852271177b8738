"""Job keys remembered between a job's changes must order exactly as keys taken afresh."""

from __future__ import annotations

import attrs
import pytest
from test_node_classes import PREEMPT, decisions

from volcanolib import Registry, Traits, hookimpl
from volcanolib.api.job import PodGroupPhase
from volcanolib.api.task import TaskStatus
from volcanolib.framework import fastpath
from volcanolib.framework.compiled import KEPT_KEYS
from volcanolib.framework.session import Session
from volcanolib.framework.traits import traits_of
from volcanolib.plugins.gang import GangPlugin
from volcanolib.plugins.priority import PriorityPlugin
from volcanolib.testing import FakeCache, build_node, build_pod_group, build_task, open_session

CONF = """
actions: "allocate"
tiers:
- plugins:
  - name: priority
  - name: gang
- plugins:
  - name: drf
"""


def _not_local(monkeypatch: pytest.MonkeyPatch, plugin: type, trait: str) -> None:
    """Have a plugin class stop declaring one of its traits."""
    monkeypatch.setattr(plugin, "traits", attrs.evolve(traits_of(plugin), **{trait: False}))


@pytest.mark.parametrize("seed", range(40))
def test_remembered_keys_are_the_keys_taken_afresh(seed: int, monkeypatch: pytest.MonkeyPatch) -> None:
    """Every remembered job and task key is checked against the key taken again (the fast path switch)."""
    monkeypatch.setenv(fastpath.CHECK_ENV, "1")
    before = fastpath.CHECKED[KEPT_KEYS.name]
    decisions(seed, True, PREEMPT)
    assert fastpath.CHECKED[KEPT_KEYS.name] > before


def _session() -> FakeCache:
    cache = FakeCache()
    cache.add_node(build_node("n1", "8", "16Gi"))
    cache.add_pod_group(build_pod_group("j", min_member=2, phase=PodGroupPhase.INQUEUE))
    for k in range(2):
        cache.add_task(build_task(f"j-{k}", job="j", cpu="2"))
    return cache


def test_a_job_key_is_taken_again_once_a_task_of_the_job_changes() -> None:
    ssn = open_session(_session(), CONF)
    try:
        job = ssn.jobs["default/j"]
        plugins = [ssn.plugins[name] for name in ("priority", "gang", "drf")]

        def fresh() -> tuple[object, ...]:
            return tuple(plugin.job_order_key(ssn, job) for plugin in plugins)

        before = ssn.job_key_by_plugins(job)
        assert before == fresh() and ssn._job_keys == {job.uid: before}
        stmt = ssn.statement()
        for task in list(job.tasks.values()):
            stmt.allocate(task, ssn.nodes["n1"])
            assert ssn.job_key_by_plugins(job) == fresh()
        assert ssn.job_key_by_plugins(job) != before  # ready now, and a larger drf share
        stmt.discard()
        assert ssn.job_key_by_plugins(job) == fresh() == before
    finally:
        ssn.close()


def test_keys_are_not_remembered_unless_every_key_plugin_says_they_are_local(monkeypatch: pytest.MonkeyPatch) -> None:
    ssn = open_session(_session(), CONF)
    assert ssn._job_keys is not None
    ssn.close()
    _not_local(monkeypatch, GangPlugin, "local_job_keys")
    ssn = open_session(_session(), CONF)
    assert ssn._job_keys is None
    ssn.close()


class EarlyAsker:
    """Asks for job keys while the session opens, before drf (a later tier) has prepared."""

    name = "early-asker"
    traits = Traits(local_job_keys=True)

    def __init__(self, arguments: object) -> None:
        pass

    @hookimpl
    def on_session_open(self, ssn: Session) -> None:
        assert ssn.job_key_by_plugins is not None
        for job in ssn.jobs.values():
            ssn.job_key_by_plugins(job)


def test_keys_taken_while_the_session_opens_are_not_kept() -> None:
    cache = _session()
    cache.add_pod_group(build_pod_group("busy", min_member=1, phase=PodGroupPhase.RUNNING))
    cache.add_task(build_task("busy-0", job="busy", cpu="2", node="n1", status=TaskStatus.RUNNING))
    conf = CONF.replace("  - name: gang\n", "  - name: gang\n  - name: early-asker\n")
    ssn = open_session(cache, conf, registry=Registry(plugins={"early-asker": EarlyAsker}))
    try:
        busy = ssn.jobs["default/busy"]
        # drf's share of the running job is known only once drf has opened.
        assert ssn.job_key_by_plugins(busy)[-1] == ssn.plugins["drf"].job_share(busy.uid) > 0
    finally:
        ssn.close()


# ---------------------------------------------------------------------------- task keys


def test_a_task_key_is_taken_again_once_the_task_changes() -> None:
    ssn = open_session(_session(), CONF)
    try:
        task = ssn.jobs["default/j"].tasks["default-j-0"]
        key = ssn.task_key(task)
        assert ssn._task_keys == {task.uid: key}
        stmt = ssn.statement()
        stmt.allocate(task, ssn.nodes["n1"])
        assert task.uid not in ssn._task_keys
        assert ssn.task_key(task) == key and task.uid in ssn._task_keys
        stmt.discard()
        assert task.uid not in ssn._task_keys
    finally:
        ssn.close()


def test_task_keys_are_not_remembered_unless_every_key_plugin_says_they_are_local(
    monkeypatch: pytest.MonkeyPatch,
) -> None:
    ssn = open_session(_session(), CONF)
    assert ssn._task_keys is not None
    ssn.close()
    _not_local(monkeypatch, PriorityPlugin, "local_task_keys")
    ssn = open_session(_session(), CONF)
    assert ssn._task_keys is None
    ssn.close()
