"""The public priority queues for actions: build_queues orders queues, jobs and tasks as the plugins say."""

from __future__ import annotations

import doctest
import functools
import random
from collections.abc import Iterable
from typing import Any, ClassVar

import pytest

from volcanolib import PluginError, Registry, hookimpl
from volcanolib.api.job import JobInfo, PodGroupPhase
from volcanolib.api.task import TaskInfo, TaskStatus
from volcanolib.framework import queues as queues_module
from volcanolib.framework.queues import PriorityQueue, build_queues
from volcanolib.framework.session import Session
from volcanolib.testing import FakeCache, build_node, build_pod_group, build_queue, build_task, open_session

CONF = """
actions: "allocate"
tiers:
- plugins:
  - name: priority
  - name: gang
- plugins:
  - name: drf
  - name: proportion
"""


def test_the_module_doctests_pass() -> None:
    failures, tried = doctest.testmod(queues_module)
    assert tried > 0 and failures == 0


def test_equal_keys_come_out_in_push_order_and_keys_are_taken_at_push() -> None:
    items = [[2, "a"], [1, "b"], [2, "c"], [1, "d"]]
    q: PriorityQueue[list[Any]] = PriorityQueue(lambda item: item[0], items[:2])
    q.push(items[2])
    q.push(items[3])
    items[0][0] = 0  # changed while queued: the key taken at push still decides
    assert len(q) == 4 and q and not q.empty()
    assert [q.pop()[1] for _ in range(4)] == ["b", "d", "a", "c"]
    assert q.empty() and not q
    with pytest.raises(IndexError):
        q.pop()


def random_session(seed: int) -> Session:
    rng = random.Random(seed)
    cache = FakeCache()
    names = ["default", "q1", "q2", "q3"]
    for name in names:
        cache.add_queue(build_queue(name, weight=rng.randint(1, 4), priority=rng.randint(0, 2)))
    for i in range(4):
        cache.add_node(build_node(f"n{i}", "16", "64Gi"))
    for j in range(rng.randint(4, 14)):
        pg = f"job{j}"
        phase = rng.choice([PodGroupPhase.INQUEUE, PodGroupPhase.INQUEUE, PodGroupPhase.PENDING])
        cache.add_pod_group(
            build_pod_group(
                pg,
                queue=rng.choice(names),
                min_member=rng.randint(1, 3),
                phase=phase,
                creation_timestamp=float(rng.randint(0, 5)),
            )
        )
        for k in range(rng.randint(1, 5)):
            running = rng.random() < 0.3
            cache.add_task(
                build_task(
                    f"{pg}-t-{k}",
                    job=pg,
                    cpu=str(rng.randint(1, 4)),
                    node=f"n{rng.randint(0, 3)}" if running else "",
                    priority=rng.randint(0, 3),
                    creation_timestamp=float(rng.randint(0, 3)),
                )
            )
    return open_session(cache, CONF)


def _pending(job: JobInfo) -> list[TaskInfo] | None:
    tasks = list(job.tasks_in(TaskStatus.PENDING))
    return tasks or None


def _plain_order(ssn: Session, select: Any) -> list[TaskInfo]:
    """The order build_queues must give, by sorting with the session's comparators."""
    picked = {job.uid: list(tasks) for job in ssn.jobs.values() if (tasks := select(job)) is not None}
    jobs = [ssn.jobs[uid] for uid in picked if ssn.jobs[uid].queue in ssn.queues]
    queues = sorted({ssn.queues[j.queue].name: ssn.queues[j.queue] for j in jobs}.values(),
                    key=functools.cmp_to_key(ssn.compare_queues))  # fmt: skip
    ordered: list[TaskInfo] = []
    for queue in queues:
        for job in sorted((j for j in jobs if j.queue == queue.name), key=functools.cmp_to_key(ssn.compare_jobs)):
            ordered.extend(sorted(picked[job.uid], key=functools.cmp_to_key(ssn.compare_tasks)))
    return ordered


@pytest.mark.parametrize("seed", range(25))
def test_drain_gives_the_order_of_the_session_comparators(seed: int) -> None:
    ssn = random_session(seed)
    expected = _plain_order(ssn, _pending)
    assert expected, "every random session has pending tasks"
    order = build_queues(ssn, _pending)
    assert [t.uid for t in order.drain()] == [t.uid for t in expected]
    assert not order.queues


@pytest.mark.parametrize("seed", range(10))
def test_each_level_pops_in_order(seed: int) -> None:
    ssn = random_session(seed)
    order = build_queues(ssn, lambda job: () if job.is_pending() else None)
    queue_names = []
    while order.queues:
        queue = order.queues.pop()
        queue_names.append(queue.name)
        jobs = order.jobs[queue.name]
        popped = [jobs.pop() for _ in range(len(jobs))]
        assert popped == sorted(popped, key=functools.cmp_to_key(ssn.compare_jobs))
        assert all(j.is_pending() and j.queue == queue.name and not order.tasks[j.uid] for j in popped)
    # Only queues with a selected job take part, each once.
    assert sorted(queue_names) == sorted({j.queue for j in ssn.jobs.values() if j.is_pending()})


def test_none_leaves_a_job_out_and_an_empty_selection_keeps_it() -> None:
    cache = FakeCache()
    cache.add_queue(build_queue("default"))
    cache.add_queue(build_queue("other"))
    for name, queue in (("a", "default"), ("b", "default"), ("c", "other")):
        cache.add_pod_group(build_pod_group(name, queue=queue))
        cache.add_task(build_task(f"{name}-t-0", job=name))
    ssn = open_session(cache, CONF)
    calls: list[str] = []

    def select(job: JobInfo) -> Iterable[TaskInfo] | None:
        calls.append(job.name)
        return None if job.name == "c" else ()

    order = build_queues(ssn, select)
    assert calls == ["a", "b", "c"]  # once per job, in the session's order
    assert set(order.jobs) == {"default"} and set(order.tasks) == {"default/a", "default/b"}
    assert [order.queues.pop().name] == ["default"] and not order.queues
    assert order.drain() == []


def test_a_job_whose_queue_is_gone_is_left_out_after_select_ran() -> None:
    cache = FakeCache()
    cache.add_queue(build_queue("default"))
    cache.add_queue(build_queue("gone"))
    cache.add_pod_group(build_pod_group("a"))
    cache.add_pod_group(build_pod_group("b", queue="gone"))
    cache.add_task(build_task("a-t-0", job="a"))
    cache.add_task(build_task("b-t-0", job="b"))
    ssn = open_session(cache, CONF)
    del ssn.queues["gone"]
    seen: list[str] = []
    order = build_queues(ssn, lambda job: seen.append(job.name) or list(job.tasks_in(TaskStatus.PENDING)))
    assert seen == ["a", "b"]
    assert [t.name for t in order.drain()] == ["a-t-0"]


class Boom:
    """job_valid raises for the job named ``bad``."""

    name: ClassVar[str] = "boom"

    def __init__(self, arguments: Any) -> None:
        pass

    @hookimpl
    def job_valid(self, ssn: Session, job: JobInfo) -> Any:
        if job.name == "bad":
            raise RuntimeError("cannot judge")
        return None


def test_a_plugin_failing_in_the_selector_is_recorded_and_its_job_left_out() -> None:
    cache = FakeCache()
    cache.add_queue(build_queue("default"))
    cache.add_node(build_node("n1"))
    for name in ("bad", "good"):
        cache.add_pod_group(build_pod_group(name))
        cache.add_task(build_task(f"{name}-t-0", job=name))
    conf = CONF + "  - name: boom\n"
    ssn = open_session(cache, conf, registry=Registry(plugins={"boom": Boom}))
    order = build_queues(ssn, lambda job: job.tasks_in(TaskStatus.PENDING) if ssn.job_schedulable(job) else None)
    assert [t.name for t in order.drain()] == ["good-t-0"]
    assert len(ssn.plugin_errors) == 1
    err = ssn.plugin_errors[0]
    assert isinstance(err, PluginError) and err.plugin == "boom" and err.hook == "job_valid"
