"""gangpreempt and gangreclaim: bundles, their order, victim pruning, and gangs kept whole."""

from __future__ import annotations

import math
import random

import pytest
from volcanolib_contrib.gangevict import (
    Bundle,
    GangPreempt,
    GangReclaim,
    bundle_roi,
    job_bundles,
    prune_victims,
    sort_bundles,
)

from volcanolib.api.job import JobInfo, PodGroupPhase
from volcanolib.api.resource import Resource
from volcanolib.api.task import TaskInfo, TaskStatus
from volcanolib.framework.registry import Registry
from volcanolib.testing import (
    FakeCache,
    build_node,
    build_pod_group,
    build_queue,
    build_task,
    open_session,
    run_session,
)


def _job(name: str, min_member: int, tasks: list[tuple[str, str, int, TaskStatus]], **pg: object) -> JobInfo:
    """A job of (task name, role, priority, status) tasks of 1 cpu each."""
    job = JobInfo.from_pod_group(build_pod_group(name, min_member=min_member, **pg))  # type: ignore[arg-type]
    for task_name, role, priority, status in tasks:
        job.add_task_info(build_task(task_name, job=name, role=role, priority=priority, status=status, cpu="1"))
    return job


def _names(tasks: list[TaskInfo]) -> list[str]:
    return [t.name for t in tasks]


RUNNING = TaskStatus.RUNNING


def test_surplus_tasks_lowest_priority_first_are_safe_and_the_rest_whole() -> None:
    # Design document, example 1: five running, minMember 3.
    job = _job("a", 3, [(f"t{i}", "", prio, RUNNING) for i, prio in enumerate([5, 5, 5, 1, 1])])
    safe, whole = job_bundles(job, list(job.tasks.values()))
    assert (safe.whole, _names(safe.tasks)) == (False, ["t3", "t4"])
    assert (whole.whole, _names(whole.tasks)) == (True, ["t0", "t1", "t2"])
    assert safe.global_cost.is_empty()
    assert whole.global_cost.milli_cpu == 5000


def test_role_minimums_limit_the_safe_bundle() -> None:
    # Design document, example 2: driver 1 (min 1), workers 4 (min 3), minMember 4.
    tasks = [("driver-0", "driver", 1, RUNNING)] + [(f"worker-{i}", "worker", 1, RUNNING) for i in range(4)]
    job = _job("b", 4, tasks, min_task_member={"driver": 1, "worker": 3})
    safe, whole = job_bundles(job, list(job.tasks.values()))
    assert _names(safe.tasks) == ["worker-0"]
    assert sorted(_names(whole.tasks)) == ["driver-0", "worker-1", "worker-2", "worker-3"]


def test_a_broken_gang_is_all_safe_and_a_gang_at_its_minimum_all_whole() -> None:
    broken = _job("c", 3, [("t0", "", 1, RUNNING), ("t1", "", 1, TaskStatus.PENDING)])
    (only,) = job_bundles(broken, [broken.tasks["default-t0"]])
    assert not only.whole
    exact = _job("d", 2, [("t0", "", 1, RUNNING), ("t1", "", 1, RUNNING)])
    (only,) = job_bundles(exact, list(exact.tasks.values()))
    assert only.whole


@pytest.mark.parametrize(
    ("local", "global_cost", "need", "roi"),
    [
        # Design document, section 3.4.3, examples 1 to 4.
        ({"nvidia.com/gpu": "2"}, {"nvidia.com/gpu": "4"}, {"nvidia.com/gpu": "2"}, 0.5),
        ({"nvidia.com/gpu": "2"}, {"nvidia.com/gpu": "2"}, {"nvidia.com/gpu": "2"}, 1.0),
        ({"cpu": "10"}, {"cpu": "20"}, {"cpu": "10"}, 0.5),
        ({"cpu": "2"}, {"cpu": "2"}, {"cpu": "10"}, 1.0),
        ({"cpu": "4", "memory": "4Gi"}, {"cpu": "4", "memory": "4Gi"}, {"cpu": "4", "memory": "16Gi"}, 1.0),
        ({"cpu": "4", "nvidia.com/gpu": "1"}, {"cpu": "4", "nvidia.com/gpu": "1"}, {"cpu": "4"}, 1.0),
    ],
)
def test_roi_is_freed_over_destroyed_on_the_needed_dimensions(
    local: dict[str, str], global_cost: dict[str, str], need: dict[str, str], roi: float
) -> None:
    job = _job("e", 1, [])
    bundle = Bundle(True, job, [], Resource.from_list(local), Resource.from_list(global_cost))
    assert bundle_roi(bundle, Resource.from_list(need)) == pytest.approx(roi)
    safe = Bundle(False, job, [], Resource.from_list(local), Resource())
    assert bundle_roi(safe, Resource.from_list(need)) == math.inf


def test_pruning_keeps_only_the_victim_the_pending_task_needs() -> None:
    # Volcano's prune test: four 6-cpu victims and one 8-cpu victim, each filling its node; an 8-cpu task is pending.
    cache = FakeCache()
    sizes = {"spot-a": 6, "spot-b": 6, "spot-c": 6, "spot-d": 6, "spot-e": 8}
    for i, (name, cpu) in enumerate(sizes.items(), 1):
        cache.add_node(build_node(f"node{i}", str(cpu), "8Gi"))
        cache.add_pod_group(build_pod_group(name, phase=PodGroupPhase.RUNNING))
        cache.add_task(build_task(name, job=name, cpu=str(cpu), memory="1Gi", node=f"node{i}", status=RUNNING))
    cache.add_pod_group(build_pod_group("prod"))
    cache.add_task(build_task("prod-new", job="prod", cpu="8", memory="1Gi"))
    ssn = open_session(cache, "actions: ''\ntiers:\n- plugins:\n  - name: gang\n")
    jobs = [ssn.jobs[f"default/{name}"] for name in sizes]
    bundles = [b for job in jobs for b in job_bundles(job, list(job.tasks.values()))]
    pending = list(ssn.jobs["default/prod"].tasks.values())
    assert _names(prune_victims(ssn, pending, ssn.node_list, bundles)) == ["spot-e"]
    # With one unit nothing is pruned.
    assert _names(prune_victims(ssn, pending, ssn.node_list, bundles[-1:])) == ["spot-e"]


def _interleaved_gangs(conf_gang: str) -> tuple[FakeCache, str]:
    """Two 2-pod gangs of queue qa interleaved on four 1-cpu nodes; a 2-pod job of qb is starving."""
    cache = FakeCache()
    for i in range(4):
        cache.add_node(build_node(f"n{i}", "1", "4Gi"))
    cache.add_queue(build_queue("qa", reclaimable=True))
    cache.add_queue(build_queue("qb"))
    for gang, nodes in (("g0", ("n0", "n2")), ("g1", ("n1", "n3"))):
        cache.add_pod_group(build_pod_group(gang, min_member=2, queue="qa", phase=PodGroupPhase.RUNNING))
        for j, node in enumerate(nodes):
            cache.add_task(build_task(f"{gang}-{j}", job=gang, cpu="1", memory="1Gi", node=node, status=RUNNING))
    cache.add_pod_group(build_pod_group("want", min_member=2, queue="qb"))
    for j in range(2):
        cache.add_task(build_task(f"want-{j}", job="want", cpu="1", memory="1Gi"))
    tiers = f"tiers:\n- plugins:\n  - name: priority\n  - name: gang{conf_gang}\n  - name: proportion\n"
    return cache, tiers


def _broken_gangs(cache: FakeCache) -> set[str]:
    return {key.rsplit("-", 1)[0] for key in cache.evicted}


def test_reclaim_breaks_a_pod_of_each_gang_where_gangreclaim_takes_one_whole_gang() -> None:
    # volcano-sh/volcano#4607: with gang's own protection off, task-by-task reclaim takes the first victim on
    # each node it tries and breaks both gangs.
    cache, tiers = _interleaved_gangs("\n    enableReclaimable: false")
    run_session(cache, "actions: reclaim\n" + tiers)
    assert sorted(cache.evicted) == ["default/g0-0", "default/g1-0"]
    assert _broken_gangs(cache) == {"default/g0", "default/g1"}
    # gangreclaim evicts one gang whole and pipelines both tasks where it ran.
    cache, tiers = _interleaved_gangs("")
    result = run_session(cache, "actions: gangreclaim\n" + tiers)
    assert sorted(cache.evicted) == ["default/g0-0", "default/g0-1"]
    assert sorted(t.name for t, _ in result.pipelined) == ["want-0", "want-1"]
    assert sorted(node for _, node in result.pipelined) == ["n0", "n2"]


def test_with_gang_protection_reclaim_takes_nothing() -> None:
    cache, tiers = _interleaved_gangs("")
    run_session(cache, "actions: reclaim\n" + tiers)
    assert cache.evicted == []


def test_gangreclaim_without_whole_bundles_takes_nothing_from_gangs_at_their_minimum() -> None:
    cache, tiers = _interleaved_gangs("")
    arguments = "configurations:\n- name: gangreclaim\n  arguments: {allowWholeBundle: false}\n"
    conf = "actions: gangreclaim\n" + tiers + arguments
    result = run_session(cache, conf)
    assert cache.evicted == []
    assert result.pipelined == ()


def test_a_failed_placement_leaves_nothing_evicted() -> None:
    # "big" goes first (same priority, smaller uid) and needs a 2-cpu node, which no prefix of bundles gives:
    # its trial evictions are undone; "want" then takes one gang as before.
    cache, tiers = _interleaved_gangs("")
    cache.add_pod_group(build_pod_group("big", min_member=1, queue="qb"))
    cache.add_task(build_task("big-0", job="big", cpu="2", memory="1Gi"))
    result = run_session(cache, "actions: gangreclaim\n" + tiers)
    assert all(not t.name.startswith("big") for t, _ in result.pipelined)
    assert sorted(cache.evicted) == ["default/g0-0", "default/g0-1"]


@pytest.mark.parametrize("action", ["gangpreempt", "gangreclaim"])
@pytest.mark.parametrize("seed", range(5))
def test_the_key_sort_gives_the_comparison_order(action: str, seed: int) -> None:
    rng = random.Random(seed)
    cache = FakeCache()
    cache.add_node(build_node("n0", "64", "256Gi"))
    for q in range(3):
        cache.add_queue(build_queue(f"q{q}", reclaimable=True))
    for j in range(12):
        running = rng.randint(1, 5)
        cache.add_pod_group(
            build_pod_group(
                f"j{j}", queue=f"q{rng.randrange(3)}", min_member=rng.randint(1, running), phase=PodGroupPhase.RUNNING
            )
        )
        for t in range(running):
            cpu = str(rng.choice([1, 2, 4]))
            cache.add_task(
                build_task(f"j{j}-{t}", job=f"j{j}", cpu=cpu, priority=rng.randint(1, 3), node="n0", status=RUNNING)
            )
    ssn = open_session(cache, "actions: ''\ntiers:\n- plugins:\n  - name: priority\n  - name: gang\n  - name: drf\n")
    jobs = list(ssn.jobs.values())
    bundles = [b for job in jobs for b in job_bundles(job, list(job.tasks.values()))]
    rng.shuffle(bundles)
    need = Resource.from_list({"cpu": str(rng.randint(1, 8)), "memory": "2Gi"})
    cls = GangPreempt if action == "gangpreempt" else GangReclaim
    between, key = cls()._between(ssn, jobs[0], next(iter(jobs[0].tasks.values())))
    assert key is not None
    by_key = sort_bundles(bundles, need, between, key)
    by_comparison = sort_bundles(bundles, need, between)
    assert [(b.job.uid, b.whole) for b in by_key] == [(b.job.uid, b.whole) for b in by_comparison]


class _PlainPreempt(GangPreempt):
    remember_bundles = False


class _PlainReclaim(GangReclaim):
    remember_bundles = False


def _random_cluster(seed: int) -> FakeCache:
    """Jobs of three queues running on eight nodes, and starving jobs of every queue."""
    rng = random.Random(seed)
    cache = FakeCache()
    cache.add_priority_class("high", 10)
    cache.add_priority_class("top", 100)
    for n in range(8):
        cache.add_node(build_node(f"n{n}", "8", "32Gi"))
    for q in range(3):
        cache.add_queue(build_queue(f"q{q}", reclaimable=rng.random() < 0.8))
    free = {f"n{n}": 8 for n in range(8)}
    for j in range(14):
        size = rng.randint(1, 5)
        cache.add_pod_group(
            build_pod_group(
                f"r{j}",
                queue=f"q{rng.randrange(3)}",
                min_member=rng.randint(1, size),
                phase=PodGroupPhase.RUNNING,
                priority_class_name=rng.choice(["", "high"]),
            )
        )
        for t in range(size):
            cpu = rng.choice([1, 2])
            nodes = [n for n, left in free.items() if left >= cpu]
            if not nodes:
                break
            node = rng.choice(nodes)
            free[node] -= cpu
            cache.add_task(build_task(f"r{j}-{t}", job=f"r{j}", cpu=str(cpu), node=node, status=RUNNING))
    for j in range(6):
        size = rng.randint(1, 4)
        cache.add_pod_group(
            build_pod_group(f"s{j}", queue=f"q{rng.randrange(3)}", min_member=size, priority_class_name="top")
        )
        for t in range(size):
            cache.add_task(build_task(f"s{j}-{t}", job=f"s{j}", cpu=str(rng.choice([1, 2, 3]))))
    return cache


_RANDOM_CONF = (
    "actions: {action}\ntiers:\n- plugins:\n  - name: priority\n  - name: gang\n"
    "- plugins:\n  - name: drf\n  - name: proportion\n  - name: predicates\n  - name: binpack\n"
)


@pytest.mark.parametrize("action", ["gangpreempt", "gangreclaim"])
@pytest.mark.parametrize("seed", range(8))
def test_remembered_bundles_give_the_same_decisions(action: str, seed: int) -> None:
    conf = _RANDOM_CONF.format(action=action)
    plain = Registry(actions={"gangpreempt": _PlainPreempt, "gangreclaim": _PlainReclaim})
    outcomes = []
    for registry in (None, plain):
        cache = _random_cluster(seed)
        result = run_session(cache, conf, registry=registry, seed=seed)
        outcomes.append((sorted(cache.evicted), sorted((t.key, node) for t, node in result.pipelined)))
    assert outcomes[0] == outcomes[1]


@pytest.mark.parametrize("action", ["gangpreempt", "gangreclaim"])
def test_the_random_clusters_make_the_actions_evict(action: str) -> None:
    conf = (
        f"actions: {action}\ntiers:\n- plugins:\n  - name: priority\n  - name: gang\n- plugins:\n  - name: proportion\n"
    )
    evicted = 0
    for seed in range(8):
        cache = _random_cluster(seed)
        run_session(cache, conf, seed=seed)
        evicted += len(cache.evicted)
    assert evicted > 0
