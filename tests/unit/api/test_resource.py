import pytest

from volcanolib.api.resource import (
    INFINITE,
    PODS,
    Mode,
    Resource,
    exceeded_part,
    res_max,
    res_min,
    share,
)
from volcanolib.errors import QuantityError, ResourceError

GPU = "nvidia.com/gpu"


def r(cpu: float = 0, mem: float = 0, **scalars: float) -> Resource:
    return Resource(cpu, mem, {k.replace("_", "/").replace("nvidia/com", "nvidia.com"): v for k, v in scalars.items()})


def test_from_list_units() -> None:
    res = Resource.from_list({"cpu": "250m", "memory": "1Gi", GPU: "2", PODS: "110", "ephemeral-storage": "1Ki"})
    assert res.milli_cpu == 250
    assert res.memory == 2**30
    assert res.get(GPU) == 2000
    assert res.get(PODS) == 110
    assert res.get("ephemeral-storage") == 1024 * 1000


def test_from_list_ignores_non_schedulable_names_and_keeps_zero() -> None:
    res = Resource.from_list({"count/pods": "3", "requests.cpu": "1", "storage": "1", "hugepages-1Gi": "0"})
    assert res.milli_cpu == 0
    assert res.scalars == {"hugepages-1Gi": 0}


@pytest.mark.parametrize("bad", [{"cpu": "x"}, {"memory": "-1Gi"}, {GPU: "two"}])
def test_from_list_errors_name_the_field(bad: dict[str, str]) -> None:
    with pytest.raises(QuantityError) as info:
        Resource.from_list(bad, field="spec.containers[0].resources.requests")
    name = next(iter(bad))
    assert f"spec.containers[0].resources.requests.{name}" in str(info.value)


def test_add_and_sub_are_exact_inverses() -> None:
    a = r(1500, 2**30, nvidia_com_gpu=1000)
    b = r(500, 2**20, nvidia_com_gpu=1000)
    before = a.clone()
    a.add(b).sub(b)
    assert a == before


def test_sub_below_zero_is_an_error_and_changes_nothing() -> None:
    a = r(1000, 100)
    with pytest.raises(ResourceError):
        a.sub(r(2000, 0))
    assert a == r(1000, 100)


def test_sub_of_missing_scalar_is_an_error() -> None:
    with pytest.raises(ResourceError):
        r(1000, 100).sub(r(0, 0, nvidia_com_gpu=1000))


def test_less_equal_tolerance_and_modes() -> None:
    assert r(1000.05, 0).less_equal(r(1000, 0))
    assert not r(1000.2, 0).less_equal(r(1000, 0))
    # a scalar the right side lacks: zero in ZERO mode, unbounded in INFINITY mode
    assert not r(0, 0, nvidia_com_gpu=1000).less_equal(r(1000, 1000), Mode.ZERO)
    assert r(0, 0, nvidia_com_gpu=1000).less_equal(r(1000, 1000), Mode.INFINITY)
    # current-release rule: in INFINITY mode a scalar only the right side has makes it false
    assert not r(0, 0).less_equal(r(1000, 1000, nvidia_com_gpu=1000), Mode.INFINITY)
    assert r(0, 0).less_equal(r(1000, 1000, nvidia_com_gpu=1000), Mode.ZERO)


def test_less_equal_with_dimension_skips_pods_and_unrequested() -> None:
    used = Resource(3000, 10, {PODS: 200})
    cap = Resource(2000, 100, {PODS: 100})
    assert not used.less_equal_with_dimension(cap, Resource(1000, 0))
    assert used.less_equal_with_dimension(cap, Resource(0, 1, {PODS: 1}))
    assert used.exceeding_dimensions(cap, Resource(1000, 1, {PODS: 1})) == ["cpu"]


def test_less_and_partly() -> None:
    assert r(1, 1).less(r(2, 2))
    assert not r(0, 0).less(r(0, 0))
    assert r(1, 5).less_partly(r(2, 2))
    assert not r(3, 3).less_partly(r(2, 2))
    assert r(3, 2.05).less_equal_partly(r(2, 2))
    assert not r(3, 3).less_equal_partly(r(2, 2))


def test_is_empty_ignores_pods() -> None:
    assert Resource(0, 0, {PODS: 1}).is_empty()
    assert not Resource(0, 0, {GPU: 1}).is_empty()
    assert Resource(0.05, 0.05).is_empty()


def test_names_lists_dimensions_with_value() -> None:
    assert Resource(1000, 0, {GPU: 0, PODS: 1}).names() == ["cpu", PODS]


def test_min_dimension_modes() -> None:
    base = r(3000, 100, nvidia_com_gpu=4000)
    assert base.clone().min_dimension(r(2000, 200), Mode.INFINITY) == r(2000, 100, nvidia_com_gpu=4000)
    assert base.clone().min_dimension(r(2000, 200), Mode.ZERO) == r(2000, 100, nvidia_com_gpu=0)


def test_diff_zero_mode() -> None:
    inc, dec = r(3000, 100, nvidia_com_gpu=1000).diff(r(1000, 300), Mode.ZERO)
    assert inc == r(2000, 0, nvidia_com_gpu=1000)
    assert dec == r(0, 200)


def test_set_max_and_helpers() -> None:
    a = r(1000, 500)
    a.set_max(r(500, 800, nvidia_com_gpu=1000))
    assert a == r(1000, 800, nvidia_com_gpu=1000)
    assert res_max(r(1, 5), r(3, 2)) == r(3, 5)
    assert res_min(r(1, 5, nvidia_com_gpu=3), r(3, 2)) == r(1, 2, nvidia_com_gpu=0)
    assert exceeded_part(r(5, 1), r(2, 3)) == r(3, 0)
    assert share(0, 0) == 0 and share(1, 0) == 1 and share(1, 4) == 0.25


def test_fit_delta_and_multi() -> None:
    left = r(2000, 100).fit_delta(r(1000, 0))
    assert left.milli_cpu == pytest.approx(999.9) and left.memory == 100
    assert r(1000, 10).multi(0.5) == r(500, 5)


def test_infinite_compares_equal_to_itself() -> None:
    assert r(INFINITE, INFINITE).less_equal(r(INFINITE, INFINITE))


def test_to_quantities_round_trip() -> None:
    res = Resource.from_list({"cpu": "1500m", "memory": "2Gi", GPU: "1", PODS: "3"})
    assert Resource.from_list(res.to_quantities()) == res


def test_fits_with_is_the_sum_compared_on_the_requested_dimensions() -> None:
    import random

    rng = random.Random(4)

    def resource() -> Resource:
        scalars = {name: rng.choice([0, 0.05, 1000, 2000]) for name in ("nvidia.com/gpu", PODS) if rng.random() < 0.6}
        return Resource(rng.choice([0, 0.05, 500, 1000, 4000]), rng.choice([0, 1 << 30, 4 << 30]), scalars)

    for _ in range(2000):
        allocated, request, deserved = resource(), resource(), resource()
        expected = allocated.clone().add(request).less_equal_with_dimension(deserved, request)
        assert allocated.fits_with(request, deserved) is expected


def test_readable_quantities_use_the_units_people_read() -> None:
    res = Resource.from_list(
        {
            "cpu": "3290m",
            "memory": "24069276Ki",
            "ephemeral-storage": "214748364800",
            "nvidia.com/gpu": "5331200m",
            "pods": "110",
        }
    )
    assert res.to_readable() == {
        "cpu": "3.29",
        "memory": "23 GiB",
        "ephemeral-storage": "200 GiB",
        "nvidia.com/gpu": "5331.2",
        "pods": "110",
    }
    assert Resource.from_list({"memory": "1536Mi"}).to_readable()["memory"] == "1.5 GiB"
    assert Resource.from_list({"memory": "100"}).to_readable()["memory"] == "100 B"
    assert Resource.from_list({"cpu": "4"}).describe(readable=True) == "cpu 4"
    assert Resource().describe() == "nothing"
