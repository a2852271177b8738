"""Builders shared by the volcanolib-contrib tests (pods with the fields ``build_task`` does not take)."""

from __future__ import annotations

import random
from collections.abc import Callable, Mapping, Sequence
from typing import Any

import attrs

from volcanolib.api.node import Node, NodeInfo, Taint
from volcanolib.api.task import TaskInfo, TaskStatus
from volcanolib.framework.session import Session
from volcanolib.framework.statement import Statement
from volcanolib.testing import FakeCache, build_node, build_pod_group, build_task, open_session

GI = 1024**3


def pod_task(
    name: str,
    *,
    job: str = "",
    node: str = "",
    namespace: str = "default",
    cpu: str | None = "1",
    memory: str | None = "1Gi",
    scalars: Mapping[str, str | int] | None = None,
    status: TaskStatus | None = None,
    role: str = "",
    labels: Mapping[str, str] | None = None,
    annotations: Mapping[str, str] | None = None,
    node_selector: Mapping[str, str] | None = None,
    tolerations: Sequence[Mapping[str, Any]] = (),
    affinity: Mapping[str, Any] | None = None,
    host_ports: Sequence[tuple[str, str, int]] = (),
    spread: Sequence[Mapping[str, Any]] = (),
    images: Sequence[str] = (),
) -> TaskInfo:
    """A task whose pod may carry affinity, host ports, spread constraints and images."""
    task = build_task(
        name,
        job=job,
        namespace=namespace,
        cpu=cpu,
        memory=memory,
        scalars=scalars,
        node=node,
        status=status,
        role=role,
        labels=labels,
        annotations=annotations,
        node_selector=node_selector,
        tolerations=tolerations,
    )
    assert task.pod is not None
    task.pod = attrs.evolve(
        task.pod,
        affinity=affinity,
        host_ports=tuple(host_ports),
        topology_spread_constraints=tuple(spread),
        images=tuple(images),
    )
    return task


def node(
    name: str,
    cpu: str = "4",
    memory: str = "8Gi",
    *,
    pods: int = 110,
    labels: Mapping[str, str] | None = None,
    taints: Sequence[Taint] = (),
    unschedulable: bool = False,
    images: Mapping[str, int] | None = None,
    scalars: Mapping[str, str | int] | None = None,
) -> NodeInfo:
    """A ready node; ``images`` maps image names to sizes."""
    info = build_node(
        name, cpu, memory, pods=pods, labels=labels, taints=taints, unschedulable=unschedulable, scalars=scalars
    )
    if images:
        info.node = Node(
            name, labels=dict(labels or {}), taints=tuple(taints), unschedulable=unschedulable, images=images
        )
    return info


def session(conf: str, nodes: Sequence[NodeInfo], tasks: Sequence[TaskInfo], *, groups: Sequence[str] = ()) -> Session:
    """Open a session over the nodes and tasks; every task's job gets an Inqueue PodGroup."""
    cache = FakeCache()
    for n in nodes:
        cache.add_node(n)
    names = set(groups)
    for t in tasks:
        if t.job:
            names.add(t.job)
    for job in sorted(names):
        namespace, _, pg = job.partition("/") if "/" in job else ("default", "", job)
        cache.add_pod_group(build_pod_group(pg, namespace=namespace))
    for t in tasks:
        cache.add_task(t)
    return open_session(cache, conf)


def find(ssn: Session, key: str) -> TaskInfo:
    """The session's task ``namespace/name``."""
    for job in ssn.jobs.values():
        for task in job.tasks.values():
            if task.key == key:
                return task
    for n in ssn.node_list:
        if key in n.tasks:
            return n.tasks[key]
    raise KeyError(key)


def random_moves(
    ssn: Session,
    rng: random.Random,
    tasks: Sequence[TaskInfo],
    moves: int,
    *,
    after_move: Callable[[], None] | None = None,
) -> Statement:
    """A statement of ``moves`` random moves, left open: a pending task allocated or pipelined to a random node, a
    running one evicted (others stay); ``after_move`` is called after each."""
    stmt = ssn.statement()
    for _ in range(moves):
        task = rng.choice(tasks)
        target = rng.choice(ssn.node_list)
        if task.status is TaskStatus.PENDING:
            if rng.random() < 0.5:
                stmt.allocate(task, target)
            else:
                stmt.pipeline(task, target.name)
        elif task.status is TaskStatus.RUNNING:
            stmt.evict(task, "test")
        if after_move is not None:
            after_move()
    return stmt
