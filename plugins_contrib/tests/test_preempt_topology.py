"""Topology-aware preemption with the Kubernetes filters: it evicts only victim sets that really make room.

Random small clusters (pods with app labels, host ports, required anti-affinity
of the preemptor and of the placed pods, pods that may not be preempted) are
run through ``preempt`` with ``enableTopologyAwarePreemption``; a fresh
session over the same cluster then replays the outcome by hand.
"""

from __future__ import annotations

from collections.abc import Sequence
from typing import Any

from contrib_testkit import node, pod_task
from hypothesis import given, settings
from hypothesis import strategies as st

from volcanolib.api.task import TaskInfo, TaskStatus
from volcanolib.framework.session import Session
from volcanolib.testing import FakeCache, build_pod_group, open_session, run_session

HOST = "kubernetes.io/hostname"
ZONE = "topology.kubernetes.io/zone"

TIERS = """
tiers:
- plugins:
  - name: priority
  - name: gang
  - name: conformance
- plugins:
  - name: predicates
"""
CONF = (
    'actions: "preempt"\n'
    + TIERS
    + "configurations:\n- name: preempt\n"
    + "  arguments: {enableTopologyAwarePreemption: true, minCandidateNodesAbsolute: 3}\n"
)
CHECK = 'actions: ""\n' + TIERS


def _anti(app: str, key: str) -> dict[str, Any]:
    term = {"labelSelector": {"matchLabels": {"app": app}}, "topologyKey": key}
    return {"podAntiAffinity": {"requiredDuringSchedulingIgnoredDuringExecution": [term]}}


_pod = st.fixed_dictionaries(
    {
        "app": st.sampled_from(["web", "api", "db"]),
        "cpu": st.sampled_from(["1", "2"]),
        "prio": st.sampled_from(["low", "mid"]),
        "preemptable": st.booleans(),
        "port": st.booleans(),
        "guard": st.booleans(),
    }
)
_node = st.fixed_dictionaries(
    {
        "cpu": st.sampled_from(["2", "3"]),
        "zone": st.sampled_from(["a", "b"]),
        "pods": st.lists(_pod, min_size=1, max_size=3),
    }
)
_case = st.fixed_dictionaries(
    {
        "nodes": st.lists(_node, min_size=1, max_size=3),
        "cpu": st.sampled_from(["1", "2"]),
        "anti": st.sampled_from([None, HOST, ZONE]),
        "port": st.booleans(),
        "seed": st.integers(0, 3),
    }
)


def _cluster(case: dict[str, Any]) -> FakeCache:
    cache = FakeCache()
    cache.add_priority_class("low", 1)
    cache.add_priority_class("mid", 5)
    cache.add_priority_class("high", 10)
    for i, spec in enumerate(case["nodes"]):
        name = f"n{i}"
        cache.add_node(node(name, cpu=spec["cpu"], labels={HOST: name, ZONE: spec["zone"]}))
        for j, p in enumerate(spec["pods"]):
            job = f"{name}-{j}"
            cache.add_pod_group(build_pod_group(job, min_member=0, priority_class_name=p["prio"]))
            task = pod_task(
                job,
                job=job,
                node=name,
                cpu=p["cpu"],
                labels={"app": p["app"]},
                host_ports=[("TCP", "0.0.0.0", 80)] if p["port"] else (),
                affinity=_anti("api", HOST) if p["guard"] else None,
            )
            task.preemptable = p["preemptable"]
            cache.add_task(task)
    cache.add_pod_group(build_pod_group("hi", priority_class_name="high"))
    cache.add_task(
        pod_task(
            "hi",
            job="hi",
            cpu=case["cpu"],
            labels={"app": "api"},
            host_ports=[("TCP", "0.0.0.0", 80)] if case["port"] else (),
            affinity=_anti("web", case["anti"]) if case["anti"] else None,
        )
    )
    return cache


def _task(ssn: Session, key: str) -> TaskInfo:
    for job in ssn.jobs.values():
        for task in job.tasks.values():
            if task.key == key:
                return task
    raise KeyError(key)


def _fits_after(ssn: Session, preemptor: TaskInfo, node_name: str, victims: Sequence[TaskInfo]) -> bool:
    """Whether the preemptor passes on the node with ``victims`` tentatively evicted (undone afterwards)."""
    target = ssn.nodes[node_name]
    queue = ssn.queues[ssn.jobs[preemptor.job].queue]
    stmt = ssn.statement()
    try:
        for victim in victims:
            stmt.evict(victim, "check")
        return (
            ssn.allocatable(queue, preemptor)
            and preemptor.init_resreq.less_equal(target.future_idle())
            and ssn.predicate(preemptor, target).ok
        )
    finally:
        stmt.discard()


def _allowed(ssn: Session, preemptor: TaskInfo, node_name: str) -> list[TaskInfo]:
    candidates = [
        t
        for t in ssn.nodes[node_name].tasks.values()
        if t.status is TaskStatus.RUNNING and t.preemptable and t.job != preemptor.job
    ]
    return list(ssn.preemptable(preemptor, candidates) or [])


@settings(max_examples=80, deadline=None)
@given(_case)
def test_topology_aware_preemption_evicts_only_a_minimal_set_that_makes_room(case: dict[str, Any]) -> None:
    cache = _cluster(case)
    result = run_session(cache, CONF, seed=case["seed"])
    evicted = sorted(cache.evicted)
    pipelined = {t.key: name for t, name in result.pipelined}

    ssn = open_session(_cluster(case), CHECK)
    preemptor = _task(ssn, "default/hi")
    if evicted:
        victims = [_task(ssn, key) for key in evicted]
        places = {v.node_name for v in victims}
        assert len(places) == 1, "the evictions of one preemptor are on one node"
        (place,) = places
        assert pipelined == {"default/hi": place}
        assert _fits_after(ssn, preemptor, place, victims), "the evictions make room on that node"
        for spared in victims:
            rest = [v for v in victims if v is not spared]
            assert not _fits_after(ssn, preemptor, place, rest), f"{spared.key} was evicted without need"
    else:
        assert pipelined == {}
        for target in ssn.node_list:
            allowed = _allowed(ssn, preemptor, target.name)
            if not allowed or _fits_after(ssn, preemptor, target.name, []):
                continue
            assert not _fits_after(ssn, preemptor, target.name, allowed), (
                f"evicting every allowed victim on {target.name} would have made room"
            )
    ssn.close()
