"""Invariants of full scheduling cycles on random clusters, with every action and the default plugins.

Random nodes (cpu, memory, GPUs, pod limits), three queues (weights,
capabilities), gang jobs of two priorities (pending, admitted or partly
running, some best-effort) go through cycles of enqueue, allocate,
preempt, reclaim and backfill with the default plugins, predicates and
nodeorder included. Between cycles bound tasks start and evicted ones go.
"""

from __future__ import annotations

from typing import Any

import pytest
from hypothesis import HealthCheck, given, settings
from hypothesis import strategies as st
from prop_clusters import CONF, REGISTRY, CapacityGuard, ClusterSpec, build, clusters, random_operations, summary

from volcanolib import CycleResult, InMemoryCache, Resource, Scheduler, Session, TaskStatus
from volcanolib.api.resource import PODS
from volcanolib.api.task import ALLOCATED_STATUSES
from volcanolib.testing import open_session

CYCLES = 3
SETTINGS = settings(max_examples=25, deadline=None, suppress_health_check=[HealthCheck.too_slow])
#: Statuses in which a task has a place on a node in a session.
PLACED = ALLOCATED_STATUSES | TaskStatus.RELEASING | TaskStatus.PIPELINED
#: Statuses that count as bound for a gang.
BOUND = TaskStatus.BINDING | TaskStatus.BOUND | TaskStatus.RUNNING | TaskStatus.SUCCEEDED


def _check_session(ssn: Session) -> None:
    """Node accounting, capacity and the one-state rule, in the session's own view."""
    on_nodes: dict[str, list[str]] = {}
    for node in ssn.node_list:
        assert node.idle.clone().add(node.used) == node.allocatable, node
        future = node.used.clone().add(node.pipelined).sub_unchecked(node.releasing)
        for dim in {*node.allocatable.all_names(), *node.used.all_names(), *node.pipelined.all_names()}:
            # pods: see CapacityGuard for the one allowance (best-effort pods beside releasing ones)
            used = node.used.get(dim) - (node.releasing.get(dim) if dim == PODS else 0)
            assert used <= node.allocatable.get(dim), (node.name, dim, node.used)
            assert future.get(dim) <= node.allocatable.get(dim), (node.name, dim, "pipelined beyond room")
        held, releasing, pipelined = Resource(), Resource(), Resource()
        for key, task in node.tasks.items():
            on_nodes.setdefault(key, []).append(node.name)
            assert task.node_name == node.name
            if task.status is TaskStatus.PIPELINED:
                pipelined.add(task.resreq)
            else:
                held.add(task.resreq)
                if task.status is TaskStatus.RELEASING:
                    releasing.add(task.resreq)
        assert (held, releasing, pipelined) == (node.used, node.releasing, node.pipelined), node.name
    for job in ssn.jobs.values():
        indexed = sorted(uid for bucket in job.task_status_index.values() for uid in bucket)
        assert indexed == sorted(job.tasks), job.uid
        for status, bucket in job.task_status_index.items():
            assert all(task.status is status for task in bucket.values())
        for task in job.tasks.values():
            assert bin(int(task.status)).count("1") == 1, task
            nodes = on_nodes.get(task.key, [])
            if task.status & PLACED:
                assert nodes == [task.node_name], (task, nodes)
            else:
                assert nodes == [], (task, nodes)


def _check_gangs(cache: InMemoryCache, result: CycleResult) -> None:
    """A job with a task bound in the cycle ends it with at least its minimum bound.

    Two things count besides bound and running tasks. Tasks evicted in the
    same cycle: preempt and reclaim decide evictions on their own, and in
    Volcano a gang plugin's empty victim list only ends its tier, so a later
    tier may evict below a gang's minimum. Pending best-effort tasks, as in
    Volcano's gang readiness (``JobInfo.is_ready``): a gang of best-effort
    pods is released once the rest is placed.
    """
    bound_jobs = {task.job for task, _ in result.binds}
    evicted = {task.uid for task, _ in result.evictions}
    for job in cache.jobs():
        if job.uid in bound_jobs:
            placed = sum(1 for task in job.tasks.values() if task.status & BOUND or task.uid in evicted)
            waiting = sum(1 for task in job.tasks.values() if task.status is TaskStatus.PENDING and task.best_effort)
            count = placed + waiting
            assert count >= job.min_available, (job.uid, count, job.min_available)


@settings(SETTINGS, max_examples=50)
@given(spec=clusters, seed=st.integers(0, 2**16))
def test_cycles_of_every_action_keep_the_invariants(spec: ClusterSpec, seed: int) -> None:
    CapacityGuard.violations.clear()
    cache = build(spec)
    assert cache.consistency_problems() == []
    scheduler = Scheduler(cache, CONF, seed=seed, registry=REGISTRY)
    for _ in range(CYCLES):
        result = scheduler.run_once()
        assert result.ran and result.plugin_errors == ()
        assert CapacityGuard.violations == []  # never over capacity, at any allocate or deallocate
        assert result.session is not None
        _check_session(result.session)
        assert cache.consistency_problems() == []
        _check_gangs(cache, result)
        cache.finish_evictions()
        cache.start_bound_tasks()
        assert cache.consistency_problems() == []


def _run(spec: ClusterSpec, seed: int) -> list[Any]:
    cache = build(spec)
    scheduler = Scheduler(cache, CONF, seed=seed, registry=REGISTRY)
    out: list[Any] = []
    for _ in range(CYCLES):
        result = scheduler.run_once()
        out.append(
            (
                summary(result.binds),
                [(task.key, reason) for task, reason in result.evictions],
                summary(result.pipelined),
            )
        )
        cache.finish_evictions()
        cache.start_bound_tasks()
    out.append(sorted((t.key, t.status, t.node_name) for t in cache.tasks()))
    out.append(sorted((j.uid, j.pod_group.phase, len(j.pod_group.conditions)) for j in cache.jobs()))
    return out


@SETTINGS
@given(spec=clusters, seed=st.integers(0, 2**16))
def test_the_same_input_and_seed_give_the_same_decisions(spec: ClusterSpec, seed: int) -> None:
    assert _run(spec, seed) == _run(spec, seed)


def _capture(ssn: Session) -> Any:
    """The session's state and what the plugins answer about it."""

    def res(r: Resource) -> Any:
        return (r.milli_cpu, r.memory, tuple(sorted((k, v) for k, v in r.scalars.items() if v)))

    nodes = tuple(
        (n.name, res(n.idle), res(n.used), res(n.releasing), res(n.pipelined), tuple(sorted(n.tasks)))
        for n in ssn.node_list
    )
    tasks = tuple(sorted((t.key, t.status, t.node_name) for j in ssn.jobs.values() for t in j.tasks.values()))
    jobs = tuple(
        sorted(
            (uid, res(j.allocated), ssn.job_ready(j), ssn.job_pipelined(j), ssn.job_starving(j))
            for uid, j in ssn.jobs.items()
        )
    )
    order = tuple(j.uid for j in sorted(ssn.jobs.values(), key=ssn.job_key))
    queues = tuple(
        (
            name,
            ssn.overused(q),
            tuple(
                ssn.allocatable(q, t)
                for j in ssn.jobs.values()
                if j.queue == name
                for t in sorted(j.tasks_in(TaskStatus.PENDING), key=lambda t: t.key)
            ),
        )
        for name, q in sorted(ssn.queues.items())
    )
    return nodes, tasks, jobs, order, queues


@SETTINGS
@given(spec=clusters, data=st.data())
def test_discarding_a_statement_restores_the_session_and_the_plugins_exactly(
    spec: ClusterSpec, data: st.DataObject
) -> None:
    ssn = open_session(build(spec), CONF, registry=REGISTRY)
    before = _capture(ssn)
    stmt = ssn.statement()
    random_operations(ssn, stmt, data, frozenset({TaskStatus.RUNNING}))
    stmt.discard()
    assert _capture(ssn) == before


@pytest.mark.slow
@settings(max_examples=400, deadline=None, suppress_health_check=[HealthCheck.too_slow])
@given(spec=clusters, seed=st.integers(0, 2**16))
def test_many_more_cycles_keep_the_invariants(spec: ClusterSpec, seed: int) -> None:
    """The first property with many more examples (``--runslow``, ``nox -s soak``)."""
    test_cycles_of_every_action_keep_the_invariants.hypothesis.inner_test(spec, seed)  # type: ignore[attr-defined]
