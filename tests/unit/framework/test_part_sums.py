"""PartSums: a sum kept part by part equals the parts added afresh, and says when it may not."""

from __future__ import annotations

import random

import pytest

from volcanolib import PartSums, Resource
from volcanolib.api.resource import total


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
