"""A plugin hook that raises: recorded against the plugin and hook, the job left as it was, the rest goes on.

Every test runs real Scheduler cycles over an InMemoryCache with the
default plugins plus a faulty plugin registered through a Registry; the
faulty plugin raises only for the job ``bad`` (or for everything, for
``on_session_open``), so the other jobs show whether scheduling went on.
"""

from __future__ import annotations

from collections.abc import Callable, Sequence
from typing import Any, ClassVar

import pytest

from volcanolib import InMemoryCache, PluginError, Registry, Scheduler, Status, TaskInfo, TaskStatus, hookimpl
from volcanolib.framework.nodeclass import NodeClassKey
from volcanolib.testing import build_node, build_pod_group, build_queue, build_resource, build_task

BAD = "default/bad"


class Switch:
    """Whether the faulty plugins raise (tests disarm it to see the next cycle recover)."""

    armed: ClassVar[bool] = True


def _hits(*items: Any) -> bool:
    if not Switch.armed:
        return False
    for item in items:
        job = getattr(item, "job", None)
        uid = getattr(item, "uid", None)
        if job == BAD or uid == BAD:
            return True
    return False


def _boom(hook: str) -> RuntimeError:
    return RuntimeError(f"faulty {hook}")


def _same(node: Any) -> str:
    return ""


def _raising_key(node: Any) -> str:
    raise RuntimeError("faulty key function")


class _Base:
    name: ClassVar[str] = "faulty"

    def __init__(self, arguments: Any) -> None:
        pass


def _plugin(hook: str) -> type[Any]:
    """A plugin class implementing ``hook`` (and what it needs to be called), raising for the bad job."""

    def predicate(self: Any, task: TaskInfo, node: Any) -> Status:
        if hook == "predicate" and _hits(task):
            raise _boom(hook)
        return Status.success()

    def batch_predicate(self: Any, task: TaskInfo, nodes: Sequence[Any]) -> dict[str, Status]:
        if _hits(task):
            raise _boom(hook)
        return {}

    def node_order(self: Any, task: TaskInfo, node: Any) -> float:
        if hook == "node_order" and _hits(task):
            raise _boom(hook)
        return 0.0

    def node_class_key(self: Any, task: TaskInfo) -> NodeClassKey:
        if hook == "node_class_key" and _hits(task):
            raise _boom(hook)
        if hook == "node_class_key_function" and _hits(task):
            return NodeClassKey("faulty-raising", _raising_key)
        return NodeClassKey("faulty", _same)

    def job_order(self: Any, left: Any, right: Any) -> int:
        if _hits(left, right):
            raise _boom(hook)
        return 0

    def job_ready(self: Any, job: Any) -> bool:
        if _hits(job):
            raise _boom(hook)
        return True

    def on_allocate(self: Any, event: Any) -> None:
        if _hits(event.task):
            raise _boom(hook)

    def preemptable(self: Any, preemptor: TaskInfo, preemptees: Sequence[TaskInfo]) -> None:
        if _hits(preemptor):
            raise _boom(hook)

    def on_session_open(self: Any, ssn: Any) -> None:
        if Switch.armed:
            raise _boom(hook)

    table: dict[str, tuple[Callable[..., Any], ...]] = {
        "predicate": (predicate, node_class_key),
        "batch_predicate": (batch_predicate, node_class_key),
        "node_order": (node_order, node_class_key),
        "node_class_key": (predicate, node_class_key),
        "node_class_key_function": (predicate, node_class_key),
        "job_order": (job_order,),
        "job_ready": (job_ready,),
        "on_allocate": (on_allocate,),
        "preemptable": (preemptable,),
        "on_session_open": (on_session_open,),
    }
    attrs = {fn.__name__: hookimpl(fn) for fn in table[hook]}
    return type(f"Faulty_{hook}", (_Base,), attrs)


def _conf(actions: str) -> str:
    return f"""
actions: "{actions}"
tiers:
- plugins:
  - name: faulty
  - name: priority
  - name: gang
  - name: conformance
- plugins:
  - name: drf
  - name: predicates
  - name: proportion
  - name: nodeorder
  - name: binpack
"""


class CountingBinder:
    """Binds everything, counting successful binds per task."""

    def __init__(self) -> None:
        self.bound: dict[str, int] = {}

    def bind(self, tasks: Sequence[TaskInfo]) -> Sequence[TaskInfo]:
        for task in tasks:
            self.bound[task.key] = self.bound.get(task.key, 0) + 1
        return ()


def _allocate_cluster() -> tuple[InMemoryCache, CountingBinder]:
    binder = CountingBinder()
    cache = InMemoryCache(binder=binder)
    for i in range(3):
        cache.add_node(build_node(f"n{i}", cpu="4", memory="8Gi"))
    for name, count, created in (("bad", 2, 0.0), ("good1", 2, 1.0), ("good2", 3, 2.0)):
        cache.add_pod_group(build_pod_group(name, min_member=count, creation_timestamp=created))
        for t in range(count):
            cache.add_task(build_task(f"{name}-t-{t}", job=name, cpu="1", memory="1Gi", creation_timestamp=created))
    return cache, binder


def _status(cache: InMemoryCache, job: str) -> set[TaskStatus]:
    return {t.status for t in cache.tasks() if t.job == f"default/{job}"}


@pytest.fixture(autouse=True)
def _armed() -> Any:
    Switch.armed = True
    yield
    Switch.armed = True


def _assert_errors(errors: Sequence[PluginError], hook: str) -> None:
    assert errors, "the failure was not recorded"
    for err in errors:
        assert isinstance(err, PluginError)
        assert err.plugin == "faulty" and err.hook == hook, str(err)
        assert "faulty" in str(err) and hook in str(err)


ALLOCATE_HOOKS = [
    ("predicate", "predicate"),
    ("batch_predicate", "batch_predicate"),
    ("node_order", "node_order"),
    ("node_class_key", "node_class_key"),
    ("node_class_key_function", "node_class_key"),
    ("job_ready", "job_ready"),
    ("on_allocate", "on_allocate"),
]


@pytest.mark.parametrize(("variant", "hook"), ALLOCATE_HOOKS)
def test_a_failing_hook_leaves_its_job_pending_and_the_others_are_bound(variant: str, hook: str) -> None:
    cache, binder = _allocate_cluster()
    registry = Registry(plugins={"faulty": _plugin(variant)})
    scheduler = Scheduler(cache, _conf("enqueue, allocate, backfill"), registry=registry)

    first = scheduler.run_once()
    assert first.ran
    _assert_errors(first.plugin_errors, hook)
    assert _status(cache, "bad") == {TaskStatus.PENDING}
    assert all(not t.node_name for t in cache.tasks() if t.job == BAD)
    assert _status(cache, "good1") == {TaskStatus.BOUND} and _status(cache, "good2") == {TaskStatus.BOUND}
    assert not any(task.job == BAD for task, _ in first.binds)
    assert cache.consistency_problems() == []
    assert first.session is not None  # the job keeps its state in the session too: its statement was discarded
    assert all(t.status is TaskStatus.PENDING and not t.node_name for t in first.session.jobs[BAD].tasks.values())
    assert not any(t.job == BAD for node in first.session.node_list for t in node.tasks.values())

    second = scheduler.run_once()  # the next cycle runs, and fails the same way
    assert second.ran and second.session_uid == "cycle-2"
    _assert_errors(second.plugin_errors, hook)
    assert _status(cache, "bad") == {TaskStatus.PENDING}

    Switch.armed = False  # the plugin is fixed: the job is scheduled on the next cycle
    third = scheduler.run_once()
    assert third.plugin_errors == ()
    assert _status(cache, "bad") == {TaskStatus.BOUND}
    assert all(count == 1 for count in binder.bound.values()) and len(binder.bound) == 7
    assert cache.consistency_problems() == []


def test_a_failing_job_order_abstains_and_every_job_is_scheduled() -> None:
    cache, _ = _allocate_cluster()
    scheduler = Scheduler(
        cache, _conf("enqueue, allocate, backfill"), registry=Registry(plugins={"faulty": _plugin("job_order")})
    )
    result = scheduler.run_once()
    assert result.ran
    _assert_errors(result.plugin_errors, "job_order")
    assert len(result.plugin_errors) == 1  # reported once per session, not once per comparison
    assert {t.status for t in cache.tasks()} == {TaskStatus.BOUND}
    assert cache.consistency_problems() == []


def test_a_failing_job_order_key_abstains_and_sorts_the_job_last() -> None:
    class FaultyKey(_Base):
        @hookimpl
        def job_order_key(self, job: Any) -> int:
            if _hits(job):
                raise _boom("job_order_key")
            return 0

    cache = InMemoryCache()
    cache.add_node(build_node("n0", cpu="4", memory="8Gi"))
    for name, created in (("bad", 0.0), ("good", 1.0)):
        cache.add_pod_group(build_pod_group(name, min_member=2, creation_timestamp=created))
        for t in range(2):
            cache.add_task(build_task(f"{name}-t-{t}", job=name, cpu="1", memory="1Gi"))
    registry = Registry(plugins={"faulty": FaultyKey})
    result = Scheduler(cache, _conf("enqueue, allocate"), registry=registry).run_once()
    _assert_errors(result.plugin_errors, "job_order_key")
    assert len(result.plugin_errors) == 1
    # the bad job was created first, but its order could not be worked out: it goes after the other, and is placed
    assert [task.job for task, _ in result.binds] == ["default/good"] * 2 + [BAD] * 2


def test_a_failing_on_allocate_does_not_leave_other_plugins_out_of_step() -> None:
    """Plugins after the faulty one see both the allocation and its undo, so queue quotas stay right."""
    cache = InMemoryCache()
    cache.add_queue(build_queue("q", capability=build_resource("2", "100Gi")))
    cache.add_node(build_node("n0", cpu="8", memory="32Gi"))
    cache.add_pod_group(build_pod_group("bad", queue="q", creation_timestamp=0.0))
    cache.add_task(build_task("bad-t-0", job="bad", cpu="1", memory="1Gi"))
    cache.add_pod_group(build_pod_group("good", queue="q", creation_timestamp=1.0))
    for t in range(3):
        cache.add_task(build_task(f"good-t-{t}", job="good", cpu="1", memory="1Gi", creation_timestamp=1.0))
    registry = Registry(plugins={"faulty": _plugin("on_allocate")})
    result = Scheduler(cache, _conf("enqueue, allocate"), registry=registry).run_once()
    _assert_errors(result.plugin_errors, "on_allocate")
    bound = [t for t in cache.tasks() if t.status is TaskStatus.BOUND]
    assert sorted(t.name for t in bound) == ["good-t-0", "good-t-1"]  # the queue's capability is 2 cpus


def _preempt_cluster() -> InMemoryCache:
    cache = InMemoryCache()
    cache.add_priority_class("low", 1)
    cache.add_priority_class("high", 1000)
    for i in range(2):
        cache.add_node(build_node(f"n{i}", cpu="2", memory="8Gi"))
    cache.add_pod_group(build_pod_group("victims", priority_class_name="low", phase="Running"))
    for t in range(4):
        cache.add_task(build_task(f"victims-t-{t}", job="victims", node=f"n{t % 2}", cpu="1", memory="1Gi"))
    for name, created in (("bad", 0.0), ("good", 1.0)):
        cache.add_pod_group(build_pod_group(name, priority_class_name="high", creation_timestamp=created))
        cache.add_task(build_task(f"{name}-t-0", job=name, cpu="1", memory="1Gi", priority=1000))
    return cache


def test_a_failing_preemptable_discards_that_job_and_others_still_preempt() -> None:
    cache = _preempt_cluster()
    registry = Registry(plugins={"faulty": _plugin("preemptable")})
    scheduler = Scheduler(cache, _conf("enqueue, allocate, preempt"), registry=registry)
    result = scheduler.run_once()
    assert result.ran
    _assert_errors(result.plugin_errors, "preemptable")
    preemptors = {t.job for t, _ in result.pipelined}
    assert preemptors == {"default/good"}
    assert len(result.evictions) == 1
    assert cache.consistency_problems() == []
    assert sum(t.status is TaskStatus.RELEASING for t in cache.tasks()) == 1

    cache.finish_evictions()
    Switch.armed = False
    again = scheduler.run_once()
    assert again.plugin_errors == () and len(again.evictions) == 1
    cache.finish_evictions()
    scheduler.run_once()
    assert _status(cache, "bad") == {TaskStatus.BOUND} and _status(cache, "good") == {TaskStatus.BOUND}
    assert cache.consistency_problems() == []


def test_a_plugin_failing_at_session_open_skips_the_whole_cycle() -> None:
    cache, _ = _allocate_cluster()
    phases = {job.uid: job.pod_group.phase for job in cache.jobs()}
    registry = Registry(plugins={"faulty": _plugin("on_session_open")})
    scheduler = Scheduler(cache, _conf("enqueue, allocate, backfill"), registry=registry)
    result = scheduler.run_once()
    assert result.ran is False
    _assert_errors(result.plugin_errors, "on_session_open")
    assert result.binds == () and result.evictions == ()
    assert {t.status for t in cache.tasks()} == {TaskStatus.PENDING}
    assert {job.uid: job.pod_group.phase for job in cache.jobs()} == phases  # no status written
    assert cache.events == []

    Switch.armed = False
    again = scheduler.run_once()
    assert again.ran and again.plugin_errors == ()
    assert {t.status for t in cache.tasks()} == {TaskStatus.BOUND}


def test_a_failing_on_deallocate_still_undoes_the_whole_statement() -> None:
    """The bad gang cannot be completed; undoing its placements fails in a plugin, yet every one is undone."""

    class FaultyUndo(_Base):
        @hookimpl
        def on_deallocate(self, event: Any) -> None:
            if _hits(event.task):
                raise _boom("on_deallocate")

    cache = InMemoryCache()
    cache.add_node(build_node("n0", cpu="4", memory="32Gi"))
    cache.add_pod_group(build_pod_group("bad", min_member=3, creation_timestamp=0.0))
    for t, cpu in enumerate(("1", "1", "64")):
        cache.add_task(build_task(f"bad-t-{t}", job="bad", cpu=cpu, memory="1Gi"))
    cache.add_pod_group(build_pod_group("good", min_member=4, creation_timestamp=1.0))
    for t in range(4):
        cache.add_task(build_task(f"good-t-{t}", job="good", cpu="1", memory="1Gi", creation_timestamp=1.0))
    registry = Registry(plugins={"faulty": FaultyUndo})
    result = Scheduler(cache, _conf("enqueue, allocate"), registry=registry).run_once()
    _assert_errors(result.plugin_errors, "on_deallocate")
    assert _status(cache, "good") == {TaskStatus.BOUND}  # the node was left whole for it
    assert result.session is not None
    for task in result.session.jobs[BAD].tasks.values():
        assert task.status is TaskStatus.PENDING and task.node_name == ""
    assert cache.consistency_problems() == []


@pytest.mark.parametrize(("variant", "hook"), [("predicate", "predicate"), ("on_allocate", "on_allocate")])
def test_backfill_a_failing_hook_leaves_the_best_effort_job_alone(variant: str, hook: str) -> None:
    cache = InMemoryCache()
    for i in range(2):
        cache.add_node(build_node(f"n{i}", cpu="4", memory="8Gi"))
    for name in ("bad", "good"):
        cache.add_pod_group(build_pod_group(name, min_member=2))
        for t in range(2):
            cache.add_task(build_task(f"{name}-t-{t}", job=name, cpu=None, memory=None))
    registry = Registry(plugins={"faulty": _plugin(variant)})
    scheduler = Scheduler(cache, _conf("enqueue, allocate, backfill"), registry=registry)
    result = scheduler.run_once()
    _assert_errors(result.plugin_errors, hook)
    assert _status(cache, "bad") == {TaskStatus.PENDING} and _status(cache, "good") == {TaskStatus.BOUND}
    assert result.session is not None
    assert {t.status for t in result.session.jobs[BAD].tasks.values()} == {TaskStatus.PENDING}
    assert all(not any(t.job == BAD for t in node.tasks.values()) for node in result.session.node_list)
    Switch.armed = False
    scheduler.run_once()
    assert _status(cache, "bad") == {TaskStatus.BOUND}
    assert cache.consistency_problems() == []
