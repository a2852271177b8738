from __future__ import annotations

from collections.abc import Sequence

import pytest

from volcanolib import CacheError, TaskInfo, TaskStatus
from volcanolib.cache.memory import InMemoryCache
from volcanolib.testing import build_node, build_pod_group, build_queue, build_task


class FlakyBinder:
    def __init__(self, fail: set[str]) -> None:
        self.fail = fail
        self.calls: list[list[str]] = []

    def bind(self, tasks: Sequence[TaskInfo]) -> Sequence[TaskInfo]:
        self.calls.append([t.key for t in tasks])
        return [t for t in tasks if t.name in self.fail]


class RefusingEvictor:
    def evict(self, task: TaskInfo, reason: str) -> None:
        raise RuntimeError("api server said no")


def cluster(**kwargs: object) -> InMemoryCache:
    cache = InMemoryCache(**kwargs)  # type: ignore[arg-type]
    cache.add_node(build_node("n1", cpu="4", memory="8Gi"))
    cache.add_pod_group(build_pod_group("pg", min_member=2))
    cache.add_task(build_task("pg-t-0", job="pg"))
    cache.add_task(build_task("pg-t-1", job="pg"))
    return cache


def session_copy(cache: InMemoryCache, name: str, node: str) -> TaskInfo:
    snap = cache.snapshot()
    task = snap.jobs["default/pg"].tasks[f"default-{name}"]
    task.node_name = node
    return task


def test_snapshot_shares_task_objects_between_job_and_node_and_is_independent() -> None:
    cache = cluster()
    cache.add_task(build_task("pg-t-2", job="pg", node="n1"))
    snap = cache.snapshot()
    job_task = snap.jobs["default/pg"].tasks["default-pg-t-2"]
    assert snap.nodes["n1"].tasks["default/pg-t-2"] is job_task
    job_task.status = TaskStatus.RELEASING
    assert cache.get_task("default-pg-t-2").status is TaskStatus.RUNNING  # type: ignore[union-attr]
    snap.nodes["n1"].idle.milli_cpu = 0
    assert cache.snapshot().nodes["n1"].idle.milli_cpu == 3000


def test_a_full_snapshot_s_node_holds_its_jobs_copies_and_clones_of_tasks_without_a_job() -> None:
    cache = cluster()
    cache.add_task(build_task("pg-t-2", job="pg", node="n1"))
    cache.add_task(build_task("lone", job="", node="n1"))
    cache.add_task(build_task("orphan-0", job="gone", node="n1"))  # its PodGroup does not exist
    cache.add_task(build_task("pg-t-3", job="pg", node="n1"))
    for snap in (cache.snapshot(), cache.full_snapshot()):
        held = snap.nodes["n1"].tasks
        assert list(held) == list(cache.get_node("n1").tasks)  # type: ignore[union-attr]
        job = snap.jobs["default/pg"]
        assert held["default/pg-t-2"] is job.tasks["default-pg-t-2"]
        assert held["default/pg-t-3"] is job.tasks["default-pg-t-3"]
        for key, uid in (("default/lone", "default-lone"), ("default/orphan-0", "default-orphan-0")):
            own = cache.get_task(uid)
            assert held[key] is not own and (held[key].key, held[key].status) == (own.key, own.status)  # type: ignore[union-attr]


def test_failed_bind_returns_task_to_pending_and_records_an_event() -> None:
    binder = FlakyBinder({"pg-t-1"})
    cache = cluster(binder=binder)
    failed = cache.bind([session_copy(cache, "pg-t-0", "n1"), session_copy(cache, "pg-t-1", "n1")])
    assert [(t.key, why) for t, why in failed] == [("default/pg-t-1", "the binder reported a failure")]
    ok, bad = cache.get_task("default-pg-t-0"), cache.get_task("default-pg-t-1")
    assert ok is not None and bad is not None
    assert ok.status is TaskStatus.BOUND and ok.node_name == "n1"
    assert bad.status is TaskStatus.PENDING and bad.node_name == ""
    assert [e.reason for e in cache.events if e.object == "Pod default/pg-t-1"] == ["FailedBinding"]
    node = cache.snapshot().nodes["n1"]
    assert node.used.milli_cpu == 1000 and list(node.tasks) == ["default/pg-t-0"]
    # the failed task is scheduled again next cycle
    assert cache.snapshot().jobs["default/pg"].pending_task_num() == 1


def test_raising_binder_fails_the_whole_batch_without_losing_tasks() -> None:
    class Broken:
        def bind(self, tasks: Sequence[TaskInfo]) -> Sequence[TaskInfo]:
            raise ConnectionError("down")

    cache = cluster(binder=Broken())
    failed = cache.bind([session_copy(cache, "pg-t-0", "n1")])
    assert [(t.key, why) for t, why in failed] == [("default/pg-t-0", "binder raised ConnectionError: down")]
    assert [e.message for e in cache.events] == ["binding to n1 failed: binder raised ConnectionError: down"]
    assert cache.get_task("default-pg-t-0").status is TaskStatus.PENDING  # type: ignore[union-attr]
    assert cache.snapshot().nodes["n1"].used.milli_cpu == 0


def test_failed_eviction_keeps_the_task_running() -> None:
    cache = cluster(evictor=RefusingEvictor())
    cache.add_task(build_task("x", job="pg", node="n1"))
    with pytest.raises(CacheError):
        cache.evict(cache.snapshot().jobs["default/pg"].tasks["default-x"], "preempt")
    assert cache.get_task("default-x").status is TaskStatus.RUNNING  # type: ignore[union-attr]
    assert cache.snapshot().nodes["n1"].releasing.milli_cpu == 0


def test_eviction_then_finish_frees_the_node() -> None:
    cache = cluster()
    cache.add_task(build_task("x", job="pg", node="n1"))
    cache.evict(cache.snapshot().jobs["default/pg"].tasks["default-x"], "preempt")
    assert cache.snapshot().nodes["n1"].releasing.milli_cpu == 1000
    assert [t.key for t in cache.finish_evictions()] == ["default/x"]
    assert cache.snapshot().nodes["n1"].used.milli_cpu == 0


@pytest.mark.parametrize(
    ("status", "evictable"),
    [
        (TaskStatus.RUNNING, True),
        (TaskStatus.BOUND, True),
        (TaskStatus.RELEASING, False),
        (TaskStatus.SUCCEEDED, False),
        (TaskStatus.FAILED, False),
    ],
)
def test_a_task_releasing_or_finished_is_not_evicted_again(status: TaskStatus, evictable: bool) -> None:
    cache = cluster()
    cache.add_task(build_task("x", job="pg", node="n1"))
    task = cache.snapshot().jobs["default/pg"].tasks["default-x"]
    if status is TaskStatus.RELEASING:
        cache.evict(task, "preempt")
    elif status is not TaskStatus.RUNNING:
        cache.set_task_phase("default-x", status)
    if evictable:
        cache.evict(task, "reclaim")
        assert cache.get_task("default-x").status is TaskStatus.RELEASING  # type: ignore[union-attr]
        return
    with pytest.raises(CacheError, match=f"it is {status}"):
        cache.evict(task, "reclaim")
    assert cache.get_task("default-x").status is status  # type: ignore[union-attr]
    assert cache.events[-1].reason == "FailedEviction"


def test_job_without_queue_and_pods_without_group_are_skipped_with_a_reason() -> None:
    cache = cluster()
    cache.add_pod_group(build_pod_group("lost", queue="nowhere"))
    cache.add_task(build_task("orphan", job="ghost"))
    snap = cache.snapshot()
    assert "default/lost" not in snap.jobs and "nowhere" in snap.skipped_jobs["default/lost"]
    assert "does not exist" in snap.skipped_jobs["default/ghost"]
    cache.add_pod_group(build_pod_group("ghost"))
    assert "default/ghost" in cache.snapshot().jobs


def test_priority_classes_set_job_priority_at_snapshot() -> None:
    cache = cluster()
    cache.add_priority_class("high", 1000)
    cache.add_priority_class("base", 5, global_default=True)
    cache.add_pod_group(build_pod_group("hi", priority_class_name="high"))
    snap = cache.snapshot()
    assert snap.jobs["default/hi"].priority == 1000
    assert snap.jobs["default/pg"].priority == 5


def test_not_ready_nodes_are_not_in_the_snapshot_and_node_replacement_keeps_tasks() -> None:
    cache = cluster()
    cache.add_task(build_task("x", job="pg", node="n2"))  # unknown node: placeholder, not ready
    assert "n2" not in cache.snapshot().nodes
    cache.add_node(build_node("n2", cpu="2"))
    assert cache.snapshot().nodes["n2"].idle.milli_cpu == 1000
    cache.add_queue(build_queue("q"))
    assert {q.name for q in cache.queues()} == {"default", "root", "q"}
    cache.delete_queue("default")
    cache.delete_queue("root")
    assert {"default", "root"} <= {q.name for q in cache.queues()}
