"""overcommit: enqueue admission against the cluster times the overcommit factor."""

from __future__ import annotations

import pytest

from volcanolib.api.job import PodGroupPhase
from volcanolib.testing import (
    FakeCache,
    build_node,
    build_pod_group,
    build_resource,
    build_task,
    open_session,
    run_session,
)


def conf(factor: object = None) -> str:
    args = f"\n    arguments: {{overcommit-factor: {factor}}}" if factor is not None else ""
    return f"""
actions: ""
tiers:
- plugins:
  - name: overcommit{args}
"""


def cluster() -> FakeCache:
    """2 + 4 cpu, 4Gi + 16Gi: with the default factor idle is 7.2 cpu / 24Gi."""
    cache = FakeCache()
    cache.add_node(build_node("n1", cpu="2", memory="4Gi"))
    cache.add_node(build_node("n2", cpu="4", memory="16Gi"))
    return cache


def pending(cache: FakeCache, name: str, cpu: str | None, memory: str | None = "1Gi", **kw: object) -> None:
    minimum = build_resource(cpu, memory) if cpu is not None else None
    cache.add_pod_group(build_pod_group(name, phase=PodGroupPhase.PENDING, min_resources=minimum, **kw))  # type: ignore[arg-type]


def test_factor_default_and_values_below_one() -> None:
    cache = cluster()
    assert open_session(cache, conf()).plugins["overcommit"].factor == 1.2
    assert open_session(cache, conf(0.5)).plugins["overcommit"].factor == 1.2
    assert open_session(cache, conf(2)).plugins["overcommit"].factor == 2.0


def test_min_resources_within_inflated_idle_are_admitted_and_reserved() -> None:
    cache = cluster()
    pending(cache, "a", "4")
    pending(cache, "b", "3")
    pending(cache, "c", "1")
    pending(cache, "be", None)
    ssn = open_session(cache, conf())
    jobs = ssn.jobs
    assert ssn.job_enqueueable(jobs["default/a"])
    ssn.job_enqueued(jobs["default/a"])
    # 4 reserved: 4 + 3 = 7 <= 7.2 still fits, then 7 + 1 = 8 does not.
    assert ssn.job_enqueueable(jobs["default/b"])
    ssn.job_enqueued(jobs["default/b"])
    assert not ssn.job_enqueueable(jobs["default/c"])
    assert ssn.job_enqueueable(jobs["default/be"]), "no minResources: always admitted"


def test_only_requested_dimensions_are_compared() -> None:
    cache = cluster()
    cache.add_pod_group(
        build_pod_group(
            "gpu", phase=PodGroupPhase.PENDING, min_resources=build_resource("1", "1Gi", nvidia_com__gpu="1")
        )
    )
    cache.add_pod_group(build_pod_group("mem", phase=PodGroupPhase.PENDING, min_resources=build_resource(None, "20Gi")))
    cache.add_pod_group(build_pod_group("big", phase=PodGroupPhase.PENDING, min_resources=build_resource(None, "25Gi")))
    ssn = open_session(cache, conf())
    assert not ssn.job_enqueueable(ssn.jobs["default/gpu"]), "the cluster has no GPU"
    assert ssn.job_enqueueable(ssn.jobs["default/mem"]), "20Gi <= 24Gi; cpu not asked for"
    assert not ssn.job_enqueueable(ssn.jobs["default/big"])


def test_used_and_inqueue_jobs_reduce_the_room() -> None:
    cache = cluster()
    cache.add_pod_group(
        build_pod_group("running", phase=PodGroupPhase.RUNNING, min_member=2, min_resources=build_resource("3", "2Gi"))
    )
    cache.add_task(build_task("running-0", job="running", cpu="1", memory="1Gi", node="n2"))
    cache.add_task(build_task("running-1", job="running", cpu="1", memory="1Gi", node="n2"))
    cache.add_pod_group(build_pod_group("admitted", phase=PodGroupPhase.INQUEUE, min_resources=build_resource("2")))
    pending(cache, "fits", "2")
    pending(cache, "too-big", "2.3")
    ssn = open_session(cache, conf())
    plugin = ssn.plugins["overcommit"]
    # idle = 7.2 - 2 used = 5.2 cpu; inqueue = 2 (admitted) + 1 (running job's missing minimum) = 3.
    assert plugin.idle.milli_cpu == pytest.approx(5200)
    assert plugin.inqueue.milli_cpu == 3000
    assert ssn.job_enqueueable(ssn.jobs["default/fits"])
    assert not ssn.job_enqueueable(ssn.jobs["default/too-big"])


def test_running_job_below_min_member_reserves_nothing() -> None:
    cache = cluster()
    cache.add_pod_group(
        build_pod_group("running", phase=PodGroupPhase.RUNNING, min_member=3, min_resources=build_resource("6"))
    )
    cache.add_task(build_task("running-0", job="running", cpu="1", memory="1Gi", node="n2"))
    ssn = open_session(cache, conf())
    assert ssn.plugins["overcommit"].inqueue.milli_cpu == 0


def test_enqueue_action_uses_the_vote() -> None:
    cache = cluster()
    pending(cache, "small", "2", creation_timestamp=1.0)
    pending(cache, "large", "20", creation_timestamp=2.0)
    run_session(cache, conf().replace('actions: ""', 'actions: "enqueue"'))
    phases = {job.name: job.pod_group.phase for job in cache.jobs()}
    assert phases == {"small": PodGroupPhase.INQUEUE, "large": PodGroupPhase.PENDING}
