"""drf: dominant shares, job order, preemption tie rule, event updates, hierarchical drf."""

from __future__ import annotations

import pytest

from volcanolib.api.task import TaskStatus
from volcanolib.testing import FakeCache, build_node, build_pod_group, build_queue, build_task, open_session

S = TaskStatus
CONF = """
actions: ""
tiers:
- plugins:
    - name: drf
"""
HDRF = """
actions: ""
tiers:
- plugins:
    - name: drf
      enableHierarchy: true
"""


def add_job(
    cache: FakeCache, name: str, tasks: list[tuple[str, str | None, str | None]], queue: str = "default"
) -> None:
    """``tasks``: (status letter R/P, cpu, memory) per task, named ``<name>-t-<i>``."""
    cache.add_pod_group(build_pod_group(name, min_member=1, queue=queue))
    for i, (status, cpu, memory) in enumerate(tasks):
        node = "n1" if status == "R" else ""
        cache.add_task(build_task(f"{name}-t-{i}", job=name, cpu=cpu, memory=memory, node=node))


def test_job_order_by_dominant_share_and_keys_agree() -> None:
    cache = FakeCache()
    cache.add_node(build_node("n1", cpu="10", memory="10Gi", pods=100))
    add_job(cache, "a", [("R", "1", "1Gi"), ("R", "1", "1Gi")])
    add_job(cache, "b", [("R", "3", "1Gi")])
    add_job(cache, "c", [("R", "1", "3Gi"), ("P", "1", "1Gi")])
    ssn = open_session(cache, CONF)
    drf = ssn.plugins["drf"]
    a, b, c = (ssn.jobs[f"default/{n}"] for n in "abc")
    assert drf.job_share(a.uid) == pytest.approx(0.2)
    assert drf.job_share(b.uid) == pytest.approx(0.3)
    assert drf.job_share(c.uid) == pytest.approx(0.3)
    assert ssn.compare_jobs(a, b) < 0 and ssn.compare_jobs(b, a) > 0
    assert drf.job_order(ssn, b, c) == 0
    assert [j.name for j in sorted([c, b, a], key=ssn.job_key)] == ["a", "b", "c"]
    # What the metrics report: each job's share, and each namespace's of its jobs added up.
    assert drf.job_shares() == pytest.approx({"default/a": 0.2, "default/b": 0.3, "default/c": 0.3})
    assert drf.namespace_shares() == pytest.approx({"default": 0.6})  # 6 cpu and 6Gi of 10 each


def test_namespace_shares_add_the_jobs_of_each_namespace_up() -> None:
    cache = FakeCache()
    cache.add_node(build_node("n1", cpu="10", memory="10Gi", pods=100))
    cache.add_pod_group(build_pod_group("x", namespace="team-a", min_member=1))
    cache.add_task(build_task("x-0", job="x", namespace="team-a", cpu="4", memory="1Gi", node="n1"))
    add_job(cache, "y", [("R", "1", "6Gi")])
    drf = open_session(cache, CONF).plugins["drf"]
    assert drf.namespace_shares() == pytest.approx({"team-a": 0.4, "default": 0.6})


@pytest.mark.parametrize("seed", range(20))
def test_calculate_share_is_the_largest_ratio_over_the_total_dimensions(seed: int) -> None:
    # The share reads cpu, memory and scalars by attribute; it must match the plain definition
    # (every dimension of the total in its order, the first largest ratio wins).
    import random

    from volcanolib.api.resource import Resource

    rng = random.Random(seed)
    cache = FakeCache()
    gpu = rng.choice([0, 2])
    scalars = {"nvidia.com/gpu": gpu} if gpu else None
    cache.add_node(build_node("n1", str(rng.randint(1, 64)), f"{rng.randint(1, 256)}Gi", scalars=scalars))
    ssn = open_session(cache, CONF)
    plugin = ssn.plugins["drf"]
    total = plugin.total
    for _ in range(50):
        allocated = Resource(rng.choice([0, 1000, rng.uniform(0, 64000)]), rng.choice([0, rng.uniform(0, 2**38)]))
        allocated.scalars["pods"] = rng.choice([0, 1, rng.randint(0, 110)])
        if rng.random() < 0.5:
            allocated.scalars["nvidia.com/gpu"] = rng.choice([0, 1000, 2000])
        best, dominant = 0.0, ""
        for name in total.names():
            value = allocated.get(name) / total.get(name)
            if value > best:
                best, dominant = value, name
        assert plugin.calculate_share(allocated) == (dominant, best)
    ssn.close()


def test_pods_count_is_a_dimension_of_the_share() -> None:
    cache = FakeCache()
    cache.add_node(build_node("n1", cpu="100", memory="100Gi", pods=4))
    add_job(cache, "a", [("R", "100m", "1Mi"), ("R", "100m", "1Mi")])
    ssn = open_session(cache, CONF)
    assert ssn.plugins["drf"].job_share("default/a") == pytest.approx(0.5)


def test_shares_follow_allocations_and_discards() -> None:
    cache = FakeCache()
    cache.add_node(build_node("n1", cpu="10", memory="10Gi", pods=100))
    add_job(cache, "a", [("R", "1", "1Gi"), ("P", "4", "1Gi")])
    add_job(cache, "b", [("R", "3", "1Gi")])
    ssn = open_session(cache, CONF)
    drf = ssn.plugins["drf"]
    a, b = ssn.jobs["default/a"], ssn.jobs["default/b"]
    assert ssn.compare_jobs(a, b) < 0
    stmt = ssn.statement()
    stmt.allocate(a.tasks["default-a-t-1"], ssn.nodes["n1"])
    assert drf.job_share(a.uid) == pytest.approx(0.5)
    assert ssn.compare_jobs(a, b) > 0
    stmt.evict(ssn.nodes["n1"].tasks["default/b-t-0"], "test")
    assert drf.job_share(b.uid) == 0
    stmt.discard()
    assert drf.job_share(a.uid) == pytest.approx(0.1)
    assert drf.job_share(b.uid) == pytest.approx(0.3)


def test_preemptable_tie_within_delta_and_cumulative_removal() -> None:
    cache = FakeCache()
    cache.add_node(build_node("n1", cpu="3", memory="3000000003", pods=1000))
    add_job(cache, "p", [("P", "1", None)])
    # v: removing one task leaves memory 1e9 / (3e9 + 3), 1.1e-10 below the preemptor's 1/3.
    add_job(cache, "v", [("R", None, "1000000000"), ("R", None, "1000000000")])
    # w: removing one task leaves cpu 999/3000, 3.3e-4 below 1/3.
    add_job(cache, "w", [("R", "999m", None), ("R", "999m", None)])
    # x: removing one task leaves exactly the preemptor's share.
    add_job(cache, "x", [("R", "1", None), ("R", "1", None)])
    ssn = open_session(cache, CONF)
    node = ssn.nodes["n1"].tasks
    preemptor = ssn.jobs["default/p"].tasks["default-p-t-0"]
    candidates = [
        node[k] for k in ("default/v-t-0", "default/w-t-0", "default/x-t-0", "default/v-t-1", "default/x-t-1")
    ]
    victims = ssn.preemptable(preemptor, candidates)
    # v-t-1 and x-t-1 come second in their job: their job would then drop to 0.
    assert [t.name for t in victims or []] == ["v-t-0", "x-t-0"]


def test_no_hierarchy_means_no_queue_opinion() -> None:
    cache = FakeCache()
    cache.add_node(build_node("n1"))
    cache.add_queue(build_queue("q1"))
    add_job(cache, "a", [("R", "1", "1Gi"), ("P", "1", "1Gi")], queue="q1")
    add_job(cache, "b", [("R", "2", "1Gi")])
    ssn = open_session(cache, CONF)
    drf = ssn.plugins["drf"]
    assert drf.queue_order(ssn, ssn.queues["q1"], ssn.queues["default"]) == 0
    reclaimer = ssn.jobs["default/a"].tasks["default-a-t-1"]
    assert ssn.reclaimable(reclaimer, [ssn.nodes["n1"].tasks["default/b-t-0"]]) is None


def hier_cluster(
    a_tasks: list[tuple[str, str | None, str | None]],
    b_tasks: list[tuple[str, str | None, str | None]],
    weights: tuple[str, str] = ("1/1", "1/1"),
) -> FakeCache:
    cache = FakeCache()
    cache.add_node(build_node("n1", cpu="10", memory="10Gi", pods=100))
    for name, path, weight in (("qa", "root/a", weights[0]), ("qb", "root/b", weights[1])):
        queue = build_queue(name)
        queue.hierarchy = path
        queue.hierarchy_weights = weight
        cache.add_queue(queue)
    add_job(cache, "ja", a_tasks, queue="qa")
    add_job(cache, "jb", b_tasks, queue="qb")
    return cache


def test_hierarchical_queue_order_uses_weighted_share() -> None:
    two_running_two_pending = [("R", "1", "1Gi"), ("R", "1", "1Gi"), ("P", "1", "1Gi"), ("P", "1", "1Gi")]
    ssn = open_session(hier_cluster(two_running_two_pending, two_running_two_pending, ("1/1", "1/4")), HDRF)
    qa, qb = ssn.queues["qa"], ssn.queues["qb"]
    # Same share 0.2, but qb weighs 4: 0.05 against 0.2.
    assert ssn.compare_queues(qb, qa) < 0
    assert ssn.compare_queues(qa, qb) > 0
    assert [q.name for q in sorted([qa, qb], key=ssn.queue_key)] == ["qb", "qa"]


def test_hierarchical_saturated_queue_goes_last() -> None:
    # qa's only job holds everything it asks for: saturated, so it goes after qb despite a lower share.
    ssn = open_session(hier_cluster([("R", "1", "1Gi")], [("R", "1", "1Gi")] * 3 + [("P", "1", "1Gi")]), HDRF)
    qa, qb = ssn.queues["qa"], ssn.queues["qb"]
    assert ssn.compare_queues(qb, qa) < 0
    tree = {path: (share, sat) for path, share, sat in ssn.plugins["drf"].queue_tree()}
    assert tree["root/a"][1] and not tree["root/b"][1]


def test_hierarchical_reclaimable() -> None:
    a_tasks = [("R", "1", "1Gi")] * 4 + [("P", "1", "1Gi")]
    b_tasks = [("R", "1", "1Gi"), ("P", "1", "1Gi"), ("P", "1", "1Gi")]
    ssn = open_session(hier_cluster(a_tasks, b_tasks), HDRF)
    reclaimer = ssn.jobs["default/jb"].tasks["default-jb-t-1"]
    candidates = [ssn.nodes["n1"].tasks[f"default/ja-t-{i}"] for i in range(2)]
    # With the reclaimer qb holds 0.2; qa without one task still holds 0.3: both candidates qualify
    # (each is tried on its own).
    assert [t.name for t in ssn.reclaimable(reclaimer, candidates) or []] == ["ja-t-0", "ja-t-1"]

    fewer = open_session(hier_cluster([("R", "1", "1Gi")] * 2 + [("P", "1", "1Gi")], b_tasks), HDRF)
    reclaimer = fewer.jobs["default/jb"].tasks["default-jb-t-1"]
    victim = fewer.nodes["n1"].tasks["default/ja-t-0"]
    # qb would hold 0.2 against qa's 0.1: no victim.
    assert fewer.plugins["drf"].reclaimable(fewer, reclaimer, [victim]) == []


def fill_one_task_at_a_time(ssn: object) -> None:
    """A minimal allocate loop: best queue, its best job, its best task, one task per turn, one node."""
    import functools

    node = ssn.node_list[0]  # type: ignore[attr-defined]
    jobs = list(ssn.jobs.values())  # type: ignore[attr-defined]
    stuck: set[str] = set()
    while True:
        open_jobs = [j for j in jobs if j.uid not in stuck and j.pending_task_num()]
        if not open_jobs:
            return
        queues = {j.queue: ssn.queues[j.queue] for j in open_jobs}  # type: ignore[attr-defined]
        queue = min(queues.values(), key=functools.cmp_to_key(ssn.compare_queues))  # type: ignore[attr-defined]
        job = min((j for j in open_jobs if j.queue == queue.name), key=functools.cmp_to_key(ssn.compare_jobs))  # type: ignore[attr-defined]
        task = min(job.tasks_in(S.PENDING), key=functools.cmp_to_key(ssn.compare_tasks))  # type: ignore[attr-defined]
        if task.resreq.less_equal(node.idle):
            ssn.statement().allocate(task, node)  # type: ignore[attr-defined]
        else:
            stuck.add(job.uid)


@pytest.mark.parametrize(
    ("node", "specs", "expected"),
    [
        (
            ("10", "10G"),
            [
                ("root/sci", "100/50", "pg1", "1", "1G", 10),
                ("root/eng/dev", "100/50/50", "pg21", "1", None, 10),
                ("root/eng/prod", "100/50/50", "pg22", None, "1G", 10),
            ],
            {"pg1": (5000, 5e9), "pg21": (5000, 0), "pg22": (0, 5e9)},
        ),
        (
            ("30", "30G"),
            [
                ("root/pg1", "100/25", "pg1", "1", None, 30),
                ("root/pg2", "100/25", "pg2", "1", None, 30),
                ("root/pg3/pg31", "100/25/50", "pg31", "1", None, 30),
                ("root/pg3/pg32", "100/25/50", "pg32", None, "1G", 30),
                ("root/pg4", "100/25", "pg4", None, "1G", 30),
            ],
            {"pg1": (10000, 0), "pg2": (10000, 0), "pg31": (10000, 0), "pg32": (0, 15e9), "pg4": (0, 15e9)},
        ),
    ],
    ids=["rescaling", "blocking"],
)
def test_hierarchical_drf_reproduces_volcano_allocations(
    node: tuple[str, str], specs: list[tuple[str, str, str, str | None, str | None, int]], expected: dict[str, tuple]
) -> None:
    # Volcano's TestHDRF cases: queues order by hierarchical share, jobs fill one task per turn.
    cache = FakeCache()
    cache.add_node(build_node("n", cpu=node[0], memory=node[1]))
    for path, weights, pg, cpu, memory, count in specs:
        queue = build_queue(path.replace("/", "-"))
        queue.hierarchy, queue.hierarchy_weights = path, weights
        cache.add_queue(queue)
        cache.add_pod_group(build_pod_group(pg, queue=queue.name, min_member=0))
        for i in range(count):
            cache.add_task(build_task(f"{pg}-p{i}", job=pg, cpu=cpu, memory=memory))
    ssn = open_session(cache, HDRF)
    fill_one_task_at_a_time(ssn)
    got = {j.name: (j.allocated.milli_cpu, j.allocated.memory) for j in ssn.jobs.values()}
    assert got == expected
