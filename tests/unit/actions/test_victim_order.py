"""Victim queues ordered by keys must pop in the order live comparisons give."""

from __future__ import annotations

import functools
import random

import pytest

from volcanolib.actions._util import PriorityQueue, _FrozenOrder, _victim_compare, build_victims_queue, first_victim
from volcanolib.api.job import PodGroupPhase
from volcanolib.api.task import TaskInfo, TaskStatus
from volcanolib.framework.session import Session
from volcanolib.testing import FakeCache, build_node, build_pod_group, build_queue, build_task, open_session

CONF = """
actions: "reclaim"
tiers:
- plugins:
  - name: priority
  - name: gang
  - name: conformance
- plugins:
  - name: drf
  - name: proportion
"""


def _random_session(seed: int, priorities: int = 3) -> tuple[Session, list[TaskInfo], TaskInfo]:
    rng = random.Random(seed)
    cache = FakeCache()
    for q in ("qa", "qb", "qc"):
        cache.add_queue(build_queue(q, weight=rng.randint(1, 3)))
    for n in range(4):
        cache.add_node(build_node(f"n{n}", "64", "256Gi"))
    victims = []
    for j in range(6):
        queue = rng.choice(["qa", "qb", "qc"])
        cache.add_pod_group(
            build_pod_group(f"j{j}", min_member=rng.randint(1, 3), queue=queue, phase=PodGroupPhase.RUNNING)
        )
        for k in range(rng.randint(1, 5)):
            task = build_task(
                f"j{j}-{k}",
                job=f"j{j}",
                cpu=str(rng.randint(1, 4)),
                node=f"n{rng.randrange(4)}",
                status=TaskStatus.RUNNING,
                priority=rng.randint(0, priorities),
            )
            cache.add_task(task)
            victims.append(task.key)
    cache.add_pod_group(build_pod_group("pre", queue=rng.choice(["qa", "qb"]), phase=PodGroupPhase.INQUEUE))
    cache.add_task(build_task("pre-0", job="pre", cpu="2"))
    ssn = open_session(cache, CONF, seed=seed)
    tasks = [t for job in ssn.jobs.values() for t in job.tasks.values() if t.key in victims]
    rng.shuffle(tasks)
    preemptor = next(t for job in ssn.jobs.values() for t in job.tasks.values() if t.key == "default/pre-0")
    return ssn, tasks, preemptor


def _compared(ssn: Session, preemptor: TaskInfo, tasks: list[TaskInfo]) -> PriorityQueue[TaskInfo]:
    return PriorityQueue(functools.cmp_to_key(_victim_compare(ssn, preemptor, _FrozenOrder(ssn, frozen=False))), tasks)


@pytest.mark.parametrize("seed", range(25))
def test_keyed_victim_queue_pops_like_comparisons(seed: int) -> None:
    ssn, tasks, preemptor = _random_session(seed)
    try:
        keyed = build_victims_queue(ssn, tasks, preemptor)
        compared = _compared(ssn, preemptor, tasks)
        assert [keyed.pop().key for _ in range(len(tasks))] == [compared.pop().key for _ in range(len(tasks))]
    finally:
        ssn.close()


@pytest.mark.parametrize("seed", range(40))
def test_first_victim_is_the_first_the_queue_gives(seed: int) -> None:
    # Few priorities, so that jobs and tasks often tie; some victims lose their job.
    ssn, tasks, preemptor = _random_session(seed, priorities=1)
    rng = random.Random(seed)
    try:
        if seed % 4 == 0:
            for gone in rng.sample(sorted({t.job for t in tasks}), 2):
                del ssn.jobs[gone]
        for size in range(1, len(tasks) + 1):
            subset = rng.sample(tasks, size)
            assert first_victim(ssn, subset, preemptor) is _compared(ssn, preemptor, subset).pop()
        assert first_victim(ssn, [], preemptor) is None
    finally:
        ssn.close()
