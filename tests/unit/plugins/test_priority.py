"""priority: task and job order, preemption of lower priorities, starving."""

from __future__ import annotations

from volcanolib.api.task import TaskStatus
from volcanolib.testing import FakeCache, build_node, build_pod_group, build_task, open_session

CONF = """
actions: ""
tiers:
- plugins:
    - name: priority
"""


def cluster() -> FakeCache:
    cache = FakeCache()
    cache.add_node(build_node("n1", cpu="8", memory="16Gi"))
    cache.add_priority_class("high", 100)
    cache.add_priority_class("mid", 50)
    cache.add_pod_group(build_pod_group("hi", min_member=1, priority_class_name="high", creation_timestamp=3))
    cache.add_pod_group(build_pod_group("mid", min_member=1, priority_class_name="mid", creation_timestamp=2))
    cache.add_pod_group(build_pod_group("mid2", min_member=1, priority_class_name="mid", creation_timestamp=1))
    cache.add_task(build_task("hi-p-0", job="hi", priority=10))
    cache.add_task(build_task("hi-r-1", job="hi", node="n1", priority=5))
    cache.add_task(build_task("hi-r-2", job="hi", node="n1", priority=10))
    cache.add_task(build_task("hi-r-3", job="hi", node="n1", priority=20))
    cache.add_task(build_task("mid-r-0", job="mid", node="n1"))
    cache.add_task(build_task("mid2-r-0", job="mid2", node="n1"))
    return cache


def test_task_order_puts_higher_priority_first_and_keys_agree() -> None:
    ssn = open_session(cluster(), CONF)
    tasks = ssn.jobs["default/hi"].tasks
    low, high = tasks["default-hi-r-1"], tasks["default-hi-r-3"]
    assert ssn.compare_tasks(high, low) < 0
    assert ssn.compare_tasks(low, high) > 0
    ordered = sorted(tasks.values(), key=ssn.task_key)
    assert [t.name for t in ordered] == ["hi-r-3", "hi-p-0", "hi-r-2", "hi-r-1"]
    # Equal priorities fall back to the pod-name index.
    assert ssn.compare_tasks(tasks["default-hi-p-0"], tasks["default-hi-r-2"]) < 0


def test_job_order_by_priority_class_then_creation() -> None:
    ssn = open_session(cluster(), CONF)
    jobs = ssn.jobs
    assert ssn.compare_jobs(jobs["default/hi"], jobs["default/mid"]) < 0
    ordered = sorted(jobs.values(), key=ssn.job_key)
    assert [j.name for j in ordered] == ["hi", "mid2", "mid"]
    assert ssn.plugins["priority"].job_order(ssn, jobs["default/mid"], jobs["default/mid2"]) == 0


def test_preemptable_other_jobs_need_strictly_lower_job_priority() -> None:
    ssn = open_session(cluster(), CONF)
    node_tasks = ssn.nodes["n1"].tasks
    preemptor = ssn.jobs["default/mid"].tasks["default-mid-r-0"]
    candidates = [node_tasks["default/mid2-r-0"], node_tasks["default/hi-r-1"]]
    # mid2 has the same priority as mid, hi a higher one: no victims at all.
    assert ssn.plugins["priority"].preemptable(ssn, preemptor, candidates) == []
    high_preemptor = ssn.jobs["default/hi"].tasks["default-hi-p-0"]
    victims = ssn.preemptable(high_preemptor, [node_tasks["default/mid-r-0"], node_tasks["default/mid2-r-0"]])
    assert [t.name for t in victims or []] == ["mid-r-0", "mid2-r-0"]


def test_preemptable_within_the_job_compares_task_priority() -> None:
    ssn = open_session(cluster(), CONF)
    node_tasks = ssn.nodes["n1"].tasks
    preemptor = ssn.jobs["default/hi"].tasks["default-hi-p-0"]
    candidates = [node_tasks[f"default/hi-r-{i}"] for i in (1, 2, 3)]
    assert [t.name for t in ssn.preemptable(preemptor, candidates) or []] == ["hi-r-1"]


def test_priority_has_no_reclaim_rule() -> None:
    ssn = open_session(cluster(), CONF)
    preemptor = ssn.jobs["default/hi"].tasks["default-hi-p-0"]
    assert ssn.reclaimable(preemptor, [ssn.nodes["n1"].tasks["default/mid-r-0"]]) is None


def test_job_starving_counts_all_tasks_and_not_pending_best_effort() -> None:
    cache = FakeCache()
    cache.add_node(build_node("n1"))
    cache.add_pod_group(build_pod_group("a", min_member=1))
    cache.add_task(build_task("a-t-0", job="a", node="n1"))
    cache.add_task(build_task("a-t-1", job="a", node="n1", status=TaskStatus.PIPELINED))
    cache.add_pod_group(build_pod_group("b", min_member=1))
    cache.add_task(build_task("b-t-0", job="b", node="n1"))
    cache.add_task(build_task("b-t-1", job="b", cpu=None, memory=None))
    ssn = open_session(cache, CONF)
    assert not ssn.job_starving(ssn.jobs["default/a"])
    # The pending best-effort task is not ready: one of two tasks is placed, so b is starving.
    assert ssn.job_starving(ssn.jobs["default/b"])
