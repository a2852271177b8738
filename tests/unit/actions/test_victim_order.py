"""Victim queues ordered by keys must pop in the order live comparisons give."""

from __future__ import annotations

import functools
import random

import pytest

from volcanolib.actions._util import PriorityQueue, _FrozenOrder, _victim_compare, build_victims_queue
from volcanolib.api.job import PodGroupPhase
from volcanolib.api.task import TaskStatus
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


@pytest.mark.parametrize("seed", range(25))
def test_keyed_victim_queue_pops_like_comparisons(seed: int) -> None:
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
                priority=rng.randint(0, 3),
            )
            cache.add_task(task)
            victims.append(task.key)
    cache.add_pod_group(build_pod_group("pre", queue=rng.choice(["qa", "qb"]), phase=PodGroupPhase.INQUEUE))
    cache.add_task(build_task("pre-0", job="pre", cpu="2"))
    ssn = open_session(cache, CONF, seed=seed)
    try:
        tasks = [t for job in ssn.jobs.values() for t in job.tasks.values() if t.key in victims]
        rng.shuffle(tasks)
        preemptor = next(t for job in ssn.jobs.values() for t in job.tasks.values() if t.key == "default/pre-0")
        keyed = build_victims_queue(ssn, tasks, preemptor)
        compared = PriorityQueue(
            functools.cmp_to_key(_victim_compare(ssn, preemptor, _FrozenOrder(ssn, frozen=False))), tasks
        )
        assert [keyed.pop().key for _ in range(len(tasks))] == [compared.pop().key for _ in range(len(tasks))]
    finally:
        ssn.close()
