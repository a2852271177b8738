"""PartSums: a sum kept part by part equals the parts added afresh, and says when it may not."""

from __future__ import annotations

import random

import pytest

from volcanolib import PartSums, Resource
from volcanolib.api.job import JobInfo
from volcanolib.api.resource import total
from volcanolib.framework.sums import JobSums
from volcanolib.testing import build_pod_group


def _amount(rng: random.Random, whole: bool) -> Resource:
    res = Resource(float(rng.randint(0, 8000)), float(rng.randint(0, 64) * 2**30))
    if rng.random() < 0.5:
        res.scalars[rng.choice(["pods", "nvidia.com/gpu", "example.com/fpga"])] = float(rng.randint(0, 8))
    if not whole:
        res.milli_cpu += 0.5
    return res


@pytest.mark.parametrize("seed", range(10))
def test_a_kept_sum_equals_the_parts_added_afresh(seed: int) -> None:
    rng = random.Random(seed)
    sums: PartSums[int] = PartSums()
    for _ in range(300):
        part = rng.randrange(20)
        sums.put(part, None if rng.random() < 0.3 else _amount(rng, whole=True))
        fresh = total(sums.parts.values())
        assert sums.exact
        assert sums.total.key() == (fresh.milli_cpu, fresh.memory, tuple(sums.total.scalars.items()))
        assert sums.total == fresh
        # A scalar no part names is not in the total, as in a fresh sum.
        assert set(sums.total.scalars) == {name for res in sums.parts.values() for name in res.scalars}


def test_an_amount_that_is_not_whole_makes_the_sum_inexact() -> None:
    sums: PartSums[str] = PartSums()
    sums.put("a", Resource(1000.0, 2.0))
    assert sums.exact
    sums.put("b", Resource(0.5, 0.0))
    assert not sums.exact
    sums.put("c", Resource(0.0, 0.0, {"pods": float("inf")}))
    assert not sums.exact


def test_a_total_beyond_exact_floats_makes_the_sum_inexact() -> None:
    sums: PartSums[str] = PartSums()
    sums.put("a", Resource(0.0, float(2**52)))
    sums.put("b", Resource(0.0, float(2**52)))
    assert not sums.exact


def _state(sums: PartSums[int]) -> tuple[object, ...]:
    t = sums.total
    return (t.milli_cpu, t.memory, list(t.scalars.items()), list(sums.parts.items()), sums.exact, dict(sums._keys))


@pytest.mark.parametrize("seed", range(10))
def test_putting_all_parts_at_once_equals_putting_them_one_by_one(seed: int) -> None:
    rng = random.Random(seed)
    for round_ in range(40):
        items: list[tuple[int, Resource | None]] = []
        for _ in range(rng.randrange(12)):
            amount = None if rng.random() < 0.2 else _amount(rng, whole=rng.random() < 0.9)
            if amount is not None and rng.random() < 0.05:
                amount.memory = float(2**53)
            items.append((rng.randrange(8), amount))  # some parts named twice
        one_by_one: PartSums[int] = PartSums()
        at_once: PartSums[int] = PartSums()
        if round_ % 4 == 0:  # sums already holding parts
            for sums in (one_by_one, at_once):
                sums.put(3, Resource(1000.0, 2.0, {"pods": 1.0}))
        for part, amount in items:
            one_by_one.put(part, amount)
        at_once.put_all(items)
        assert _state(at_once) == _state(one_by_one)


@pytest.mark.parametrize("seed", range(6))
def test_job_sums_follow_jobs_across_queues_and_equal_fresh_sums(seed: int) -> None:
    rng = random.Random(seed)
    queues = ["a", "b", "c"]
    sums = JobSums(2)
    # What each job was last given: its queue and its two amounts.
    given: dict[str, tuple[str, tuple[Resource, Resource | None]]] = {}
    for _ in range(200):
        uid = f"j{rng.randrange(15)}"
        if rng.random() < 0.2:
            sums.put(uid, None, None)
            given.pop(uid, None)
            continue
        queue = rng.choice(queues)
        amounts = (_amount(rng, whole=True), None if rng.random() < 0.3 else _amount(rng, whole=True))
        sums.put(uid, queue, amounts)
        given[uid] = (queue, amounts)
        assert sums.exact
        for name in queues:
            kept = sums.queues.get(name)
            for i in range(2):
                expected = total([r for q, a in given.values() if q == name for r in (a[i],) if r is not None])
                assert (kept[i].total if kept is not None else Resource()) == expected, (name, i)
    # Putting everything at once into empty sums gives the same totals, queues in first-job order.
    fresh = JobSums(2)
    fresh.put_all((uid, queue, amounts) for uid, (queue, amounts) in given.items())
    jobs = [JobInfo.from_pod_group(build_pod_group(uid, queue=queue)) for uid, (queue, _) in given.items()]
    assert fresh.totals(jobs) == sums.totals(jobs)
    assert [name for name, _ in sums.totals(jobs)] == list(dict.fromkeys(job.queue for job in jobs))
