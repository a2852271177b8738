"""Random clusters for the property tests: a plain description drawn by Hypothesis, built into a cache.

The description is data (tuples of numbers and names), so the same draw
builds the same cache twice, which the determinism property relies on.
"""

from __future__ import annotations

from collections.abc import Sequence
from typing import Any, ClassVar

import attrs
from hypothesis import strategies as st

from volcanolib import InMemoryCache, Registry, Resource, TaskInfo, TaskStatus, hookimpl
from volcanolib.api.resource import PODS
from volcanolib.testing import build_node, build_pod_group, build_queue, build_resource, build_task

GPU = "nvidia.com/gpu"

CONF = """
actions: "enqueue, allocate, preempt, reclaim, backfill"
tiers:
- plugins:
  - name: priority
  - name: gang
  - name: conformance
  - name: capacity-guard
- plugins:
  - name: drf
  - name: predicates
  - name: proportion
  - name: nodeorder
  - name: binpack
"""


@attrs.frozen
class NodeSpec:
    cpu_milli: int
    mem_gi: int
    gpus: int
    pods: int


@attrs.frozen
class JobSpec:
    queue: str
    size: int
    min_member: int
    cpu_milli: int
    mem_mi: int
    gpus: int
    best_effort: bool
    high: bool
    phase: str
    running: int
    preemptable: bool


@attrs.frozen
class ClusterSpec:
    nodes: tuple[NodeSpec, ...]
    queues: tuple[tuple[str, int, int | None], ...]
    jobs: tuple[JobSpec, ...]


node_specs = st.builds(
    NodeSpec,
    cpu_milli=st.sampled_from([2000, 4000, 8000, 16000]),
    mem_gi=st.sampled_from([4, 8, 16, 32]),
    gpus=st.sampled_from([0, 0, 1, 2]),
    pods=st.integers(3, 16),
)

QUEUES = ("default", "q1", "q2")


@st.composite
def job_specs(draw: st.DrawFn) -> JobSpec:
    size = draw(st.integers(1, 5))
    return JobSpec(
        queue=draw(st.sampled_from(QUEUES)),
        size=size,
        min_member=draw(st.integers(1, size)),
        cpu_milli=draw(st.sampled_from([100, 500, 1000, 1500, 3000])),
        mem_mi=draw(st.sampled_from([128, 512, 1024, 4096])),
        gpus=draw(st.sampled_from([0, 0, 0, 1])),
        best_effort=draw(st.sampled_from([False, False, False, True])),
        high=draw(st.booleans()),
        phase=draw(st.sampled_from(["Pending", "Inqueue", "Running"])),
        running=draw(st.sampled_from([0, size, size // 2, draw(st.integers(0, size))])),
        preemptable=draw(st.booleans()),
    )


clusters = st.builds(
    ClusterSpec,
    nodes=st.lists(node_specs, min_size=1, max_size=6).map(tuple),
    queues=st.tuples(
        *(st.tuples(st.just(name), st.integers(1, 3), st.sampled_from([None, 2000, 6000])) for name in QUEUES)
    ),
    jobs=st.lists(job_specs(), min_size=1, max_size=10).map(tuple),
)


def request(job: JobSpec) -> dict[str, Any]:
    if job.best_effort:
        return {"cpu": None, "memory": None}
    return {
        "cpu": f"{job.cpu_milli}m",
        "memory": f"{job.mem_mi}Mi",
        "scalars": {GPU: str(job.gpus)} if job.gpus else None,
    }


def build(spec: ClusterSpec, **cache_kwargs: Any) -> InMemoryCache:
    """The cache a description stands for; running pods are placed first-fit and only where they fit."""
    cache = InMemoryCache(**cache_kwargs)
    cache.add_priority_class("low", 10)
    cache.add_priority_class("high", 1000)
    for name, weight, cap in spec.queues:
        capability = build_resource(f"{cap}m", "1Ti", nvidia_com__gpu="64") if cap is not None else None
        cache.add_queue(build_queue(name, weight=weight, capability=capability))
    free: list[Resource] = []
    for i, n in enumerate(spec.nodes):
        scalars = {GPU: str(n.gpus)} if n.gpus else None
        node = build_node(f"n{i}", cpu=f"{n.cpu_milli}m", memory=f"{n.mem_gi}Gi", pods=n.pods, scalars=scalars)
        cache.add_node(node)
        free.append(node.allocatable.clone())
    for j, job in enumerate(spec.jobs):
        name = f"j{j}"
        cache.add_pod_group(
            build_pod_group(
                name,
                queue=job.queue,
                min_member=job.min_member,
                phase=job.phase,
                priority_class_name="high" if job.high else "low",
                creation_timestamp=float(j),
            )
        )
        for t in range(job.size):
            task = build_task(
                f"{name}-t-{t}",
                job=name,
                priority=1000 if job.high else 10,
                preemptable=job.preemptable,
                creation_timestamp=float(j),
                **request(job),
            )
            if t < job.running:
                _place(task, free)
            cache.add_task(task)
    return cache


def _place(task: TaskInfo, free: list[Resource]) -> None:
    req = task.resreq
    for i, room in enumerate(free):
        if req.less_equal(room) and room.scalars.get(PODS, 0) >= 1:
            room.sub(req)
            task.node_name = f"n{i}"
            task.status = TaskStatus.RUNNING
            return


class CapacityGuard:
    """Checks, at every allocate and deallocate event, that the task's node holds no more than it has.

    One allowance, Volcano's: backfill places a best-effort pod (which
    requests only a pod slot) without a resource check, and the pod-count
    predicate does not count pods being evicted, so in the session a node's
    ``pods`` may exceed its allocatable while evicted pods are still
    releasing. The cache refuses such a bind until they are gone (checked
    strictly by ``InMemoryCache.consistency_problems``).
    """

    name = "capacity-guard"
    violations: ClassVar[list[str]] = []

    def __init__(self, arguments: Any) -> None:
        pass

    @hookimpl
    def on_allocate(self, ssn: Any, event: Any) -> None:
        self._check(ssn, event.task)

    @hookimpl
    def on_deallocate(self, ssn: Any, event: Any) -> None:
        self._check(ssn, event.task)

    @staticmethod
    def _check(ssn: Any, task: TaskInfo) -> None:
        node = ssn.nodes.get(task.node_name)
        if node is None:
            return
        for dim in {*node.used.all_names(), *node.allocatable.all_names()}:
            used = node.used.get(dim)
            if dim == PODS:
                used -= node.releasing.get(dim)
            if used > node.allocatable.get(dim):
                CapacityGuard.violations.append(f"{node.name} {dim}: used {node.used} > {node.allocatable}")


REGISTRY = Registry(plugins={"capacity-guard": CapacityGuard})


def summary(binds: Sequence[tuple[TaskInfo, str]]) -> list[tuple[str, str]]:
    return [(t.key, node) for t, node in binds]


def random_operations(ssn: Any, stmt: Any, data: st.DataObject, evictable: frozenset[TaskStatus]) -> None:
    """Draw 1 to 8 operations into ``stmt``: allocate or pipeline a Pending task, evict one in ``evictable``."""
    for _ in range(data.draw(st.integers(1, 8))):
        tasks = sorted((t for j in ssn.jobs.values() for t in j.tasks.values()), key=lambda t: t.key)
        if not tasks or not ssn.node_list:  # every task may have finished in an earlier session
            return
        task = data.draw(st.sampled_from(tasks))
        node = data.draw(st.sampled_from(ssn.node_list))
        if task.status is TaskStatus.PENDING and task.resreq.less_equal(node.idle):
            stmt.allocate(task, node)
        elif task.status is TaskStatus.PENDING and task.resreq.less_equal(node.future_idle()):
            stmt.pipeline(task, node.name)
        elif task.status in evictable:
            stmt.evict(task, "test")
