"""A kit for testing plugins and actions: builders, a recording cache, one-session helpers.

>>> from volcanolib.testing import build_node, build_pod_group, build_task, FakeCache, run_session
>>> cache = FakeCache()
>>> cache.add_node(build_node("n1", cpu="4", memory="8Gi"))
>>> cache.add_pod_group(build_pod_group("pg1", min_member=1, phase="Inqueue"))
>>> cache.add_task(build_task("pg1-t-0", job="pg1", cpu="1", memory="1Gi"))
"""

from __future__ import annotations

import itertools
from collections.abc import Mapping, Sequence
from typing import Any

from volcanolib.api.job import PodGroup, PodGroupPhase
from volcanolib.api.node import Node, NodeInfo, Taint
from volcanolib.api.queue import QueueInfo, QueueState
from volcanolib.api.resource import PODS, Resource
from volcanolib.api.task import Pod, TaskInfo, TaskStatus
from volcanolib.cache.memory import InMemoryCache
from volcanolib.framework.config import SchedulerConfig, parse_config
from volcanolib.framework.registry import Registry
from volcanolib.framework.session import Session
from volcanolib.scheduler import CycleResult, Scheduler

__all__ = [
    "FakeCache",
    "build_node",
    "build_pod_group",
    "build_queue",
    "build_resource",
    "build_task",
    "open_session",
    "run_session",
]

_uids = itertools.count()


def build_resource(
    cpu: str | int | None = None,
    memory: str | int | None = None,
    *,
    pods: int | None = None,
    **scalars: str | int,
) -> Resource:
    """A resource from quantities; scalar names with ``__`` stand for ``/`` and ``_`` for ``.``.

    >>> build_resource("1", "1Gi", nvidia_com__gpu="2").get("nvidia.com/gpu")
    2000
    """
    items: dict[str, object] = {}
    if cpu is not None:
        items["cpu"] = cpu
    if memory is not None:
        items["memory"] = memory
    if pods is not None:
        items[PODS] = pods
    for name, qty in scalars.items():
        items[name.replace("__", "/").replace("_", ".")] = qty
    return Resource.from_list(items)


def build_node(
    name: str,
    cpu: str | int = "4",
    memory: str | int = "8Gi",
    *,
    pods: int = 110,
    labels: Mapping[str, str] | None = None,
    taints: Sequence[Taint] = (),
    unschedulable: bool = False,
    scalars: Mapping[str, str | int] | None = None,
) -> NodeInfo:
    """A ready node with the given allocatable resources."""
    res = Resource.from_list({"cpu": cpu, "memory": memory, PODS: pods, **(scalars or {})})
    node = Node(name, labels=dict(labels or {}), taints=tuple(taints), unschedulable=unschedulable)
    return NodeInfo(name, res, node=node)


def build_task(
    name: str,
    *,
    job: str = "",
    namespace: str = "default",
    cpu: str | int | None = "1",
    memory: str | int | None = "1Gi",
    scalars: Mapping[str, str | int] | None = None,
    node: str = "",
    status: TaskStatus | None = None,
    priority: int = 1,
    role: str = "",
    preemptable: bool = True,
    uid: str | None = None,
    labels: Mapping[str, str] | None = None,
    annotations: Mapping[str, str] | None = None,
    node_selector: Mapping[str, str] | None = None,
    tolerations: Sequence[Mapping[str, Any]] = (),
    priority_class_name: str = "",
    creation_timestamp: float = 0.0,
) -> TaskInfo:
    """A task (pod); ``job`` is the PodGroup name in the same namespace.

    A task with a ``node`` is Running there unless ``status`` says otherwise.
    Requests get ``pods: 1`` like every pod's.
    """
    items: dict[str, object] = {}
    if cpu is not None:
        items["cpu"] = cpu
    if memory is not None:
        items["memory"] = memory
    items.update(scalars or {})
    req = Resource.from_list(items)
    req.scalars[PODS] = 1
    if status is None:
        status = TaskStatus.RUNNING if node else TaskStatus.PENDING
    pod = Pod(
        name,
        namespace,
        labels=dict(labels or {}),
        annotations=dict(annotations or {}),
        node_selector=dict(node_selector or {}),
        tolerations=tuple(tolerations),
        priority_class_name=priority_class_name,
    )
    return TaskInfo(
        uid=uid or f"{namespace}-{name}",
        name=name,
        namespace=namespace,
        job=f"{namespace}/{job}" if job else "",
        resreq=req,
        status=status,
        node_name=node,
        priority=priority,
        preemptable=preemptable,
        role=role,
        pod=pod,
        creation_timestamp=creation_timestamp,
    )


def build_pod_group(
    name: str,
    *,
    namespace: str = "default",
    min_member: int = 1,
    queue: str = "default",
    phase: str | PodGroupPhase = PodGroupPhase.INQUEUE,
    priority_class_name: str = "",
    min_resources: Resource | None = None,
    min_task_member: Mapping[str, int] | None = None,
    creation_timestamp: float = 0.0,
    annotations: Mapping[str, str] | None = None,
) -> PodGroup:
    """A PodGroup, Inqueue by default."""
    return PodGroup(
        name,
        namespace,
        min_member=min_member,
        queue=queue,
        priority_class_name=priority_class_name,
        min_resources=min_resources,
        min_task_member=dict(min_task_member or {}),
        phase=PodGroupPhase(phase),
        creation_timestamp=creation_timestamp,
        annotations=dict(annotations or {}),
    )


def build_queue(
    name: str,
    *,
    weight: int = 1,
    capability: Resource | None = None,
    guarantee: Resource | None = None,
    deserved: Resource | None = None,
    reclaimable: bool | None = None,
    state: QueueState = QueueState.OPEN,
    priority: int = 0,
    parent: str | None = None,
) -> QueueInfo:
    """A queue."""
    return QueueInfo(
        name,
        weight=weight,
        capability=capability,
        guarantee=guarantee or Resource(),
        deserved=deserved,
        reclaimable=reclaimable,
        state=state,
        priority=priority,
        parent=parent,
    )


class FakeCache(InMemoryCache):
    """An :class:`InMemoryCache` that records what the scheduler asked of it.

    ``bound`` maps task keys (``namespace/name``) to node names, in bind
    order; ``evicted`` lists evicted task keys in order.
    """

    def __init__(self, **kwargs: Any) -> None:
        super().__init__(**kwargs)
        self.bound: dict[str, str] = {}
        self.evicted: list[str] = []

    def bind(self, tasks: Sequence[TaskInfo]) -> None:
        """Bind and record."""
        for task in tasks:
            self.bound[task.key] = task.node_name
        super().bind(tasks)

    def evict(self, task: TaskInfo, reason: str) -> None:
        """Evict and record."""
        super().evict(task, reason)
        self.evicted.append(task.key)


def _config(conf: str | SchedulerConfig) -> SchedulerConfig:
    return conf if isinstance(conf, SchedulerConfig) else parse_config(conf)


def run_session(
    cache: InMemoryCache,
    conf: str | SchedulerConfig,
    *,
    seed: int = 0,
    registry: Registry | None = None,
) -> CycleResult:
    """Run one full cycle (open, actions, close) of ``conf`` over ``cache``."""
    return Scheduler(cache, _config(conf), seed=seed, registry=registry).run_once()


def open_session(
    cache: InMemoryCache,
    conf: str | SchedulerConfig,
    *,
    seed: int = 0,
    registry: Registry | None = None,
) -> Session:
    """Open a session of ``conf`` over ``cache`` without running any action.

    Call the session's combinators or actions directly, then ``close()`` it.
    """
    scheduler = Scheduler(cache, _config(conf), seed=seed, registry=registry)
    ssn = scheduler.new_session()
    ssn.open()
    return ssn
