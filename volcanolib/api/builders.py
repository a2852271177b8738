"""Builders: nodes, tasks (pods), PodGroups, queues and resources from a few keywords.

The data model's own constructors take everything a manifest can say; these
functions take what a dispatcher or a test usually knows (a name, CPU and
memory as Kubernetes quantities, a PodGroup name) and fill in the rest the
way the manifest loader does. They are re-exported by :mod:`volcanolib`:

>>> from volcanolib import InMemoryCache, build_node, build_pod_group, build_queue, build_task
>>> cache = InMemoryCache()
>>> cache.add_queue(build_queue("research", weight=2))
>>> cache.add_node(build_node("n1", cpu="8", memory="32Gi"))
>>> cache.add_pod_group(build_pod_group("train", min_member=2, queue="research"))
>>> cache.add_task(build_task("train-0", job="train", cpu="2", memory="4Gi"))
"""

from __future__ import annotations

from collections.abc import Mapping, Sequence
from typing import Any

from volcanolib.api.job import PodGroup, PodGroupPhase
from volcanolib.api.node import Node, NodeInfo, Taint
from volcanolib.api.queue import QueueInfo, QueueState
from volcanolib.api.resource import PODS, Resource
from volcanolib.api.task import Pod, TaskInfo, TaskStatus

__all__ = ["build_node", "build_pod_group", "build_queue", "build_resource", "build_task"]


def build_resource(
    cpu: str | int | None = None,
    memory: str | int | None = None,
    *,
    pods: int | None = None,
    **scalars: str | int,
) -> Resource:
    """A :class:`~volcanolib.api.resource.Resource` from Kubernetes quantities.

    :param cpu: CPU as a quantity (``"500m"``, ``"2"``, ``2``); absent when ``None``.
    :param memory: memory as a quantity (``"4Gi"``, ``"512Mi"``); absent when ``None``.
    :param pods: the ``pods`` dimension (a node's pod capacity); absent when ``None``.
    :param scalars: other resources, one keyword each; in the keyword, ``__``
        stands for ``/`` and ``_`` for ``.`` (``nvidia_com__gpu`` is ``nvidia.com/gpu``).
        :meth:`Resource.from_list <volcanolib.api.resource.Resource.from_list>`
        takes any name as written.
    :raises QuantityError: when a quantity is invalid or negative.

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
    """A ready :class:`~volcanolib.api.node.NodeInfo` with no task on it.

    :param name: the node's name, which tasks name in their ``node``.
    :param cpu: allocatable CPU, a Kubernetes quantity.
    :param memory: allocatable memory, a Kubernetes quantity.
    :param pods: how many pods the node may hold.
    :param labels: the node's labels (what ``nodeSelector`` and plugins read).
    :param taints: the node's taints.
    :param unschedulable: a cordoned node (``spec.unschedulable``).
    :param scalars: other allocatable resources by their Kubernetes name
        (``{"nvidia.com/gpu": 4}``).
    :raises QuantityError: when a quantity is invalid or negative.
    """
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
    """A :class:`~volcanolib.api.task.TaskInfo`: one pod, as the scheduler sees it.

    Its request gets ``pods: 1``, as every pod's does. A task with a
    ``node`` is Running there unless ``status`` says otherwise; one without
    is Pending.

    :param name: the pod's name; its key is ``namespace/name``.
    :param job: the name of its PodGroup, in the same namespace (``""``: no group).
    :param namespace: the pod's namespace.
    :param cpu: requested CPU, a Kubernetes quantity (``None``: none).
    :param memory: requested memory, a Kubernetes quantity (``None``: none).
    :param scalars: other requested resources by their Kubernetes name.
    :param node: the node it is placed on (``""``: not placed).
    :param status: its status, when not the one ``node`` implies.
    :param priority: its priority (the value of its PriorityClass).
    :param role: its task role in a Volcano Job (tasks of one role are alike). Without
        a role, the pods of one group built alike (but name, node, status, uid,
        priority and creation time) share a template, as loaded manifests do
        (see :attr:`~volcanolib.api.task.TaskInfo.template`).
    :param preemptable: whether it may be preempted or reclaimed.
    :param uid: its uid (default ``namespace-name``); the cache knows tasks by uid.
    :param labels: the pod's labels.
    :param annotations: the pod's annotations.
    :param node_selector: the pod's ``nodeSelector``.
    :param tolerations: the pod's tolerations, as in a manifest.
    :param priority_class_name: the pod's ``priorityClassName``.
    :param creation_timestamp: seconds since the epoch (ties in order go to the older).
    :raises QuantityError: when a quantity is invalid or negative.
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
    """A :class:`~volcanolib.api.job.PodGroup`: the gang a job's tasks belong to.

    The group is ``Inqueue`` unless ``phase`` says otherwise: already
    admitted, so ``allocate`` places it without the ``enqueue`` action's
    check of its queue's quota. Give ``phase="Pending"`` to have it admitted
    by ``enqueue``, as a new PodGroup in a cluster would be.

    :param name: the PodGroup's name; tasks name it in their ``job``.
    :param namespace: its namespace (its tasks' namespace).
    :param min_member: how many tasks must be placed together (the gang).
    :param queue: the queue it is submitted to; the cache skips a group
        whose queue it does not know.
    :param phase: its phase, ``Inqueue`` by default.
    :param priority_class_name: its PriorityClass (see
        :meth:`InMemoryCache.add_priority_class <volcanolib.cache.memory.InMemoryCache.add_priority_class>`).
    :param min_resources: the resources the gang needs to start, checked by ``enqueue``.
    :param min_task_member: the least number of tasks per role.
    :param creation_timestamp: seconds since the epoch (ties in order go to the older).
    :param annotations: the PodGroup's annotations.
    """
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
    """A :class:`~volcanolib.api.queue.QueueInfo`, open unless ``state`` says otherwise.

    Add it with
    :meth:`InMemoryCache.add_queue <volcanolib.cache.memory.InMemoryCache.add_queue>`
    before the PodGroups that name it: the cache leaves out of every
    snapshot a PodGroup whose queue it does not know. The ``default``
    queue always exists.

    :param name: the queue's name, which PodGroups give as their ``queue``.
    :param weight: its share of the cluster relative to other queues (``proportion``).
    :param capability: the most it may use (``None``: no limit).
    :param guarantee: what it is guaranteed (``None``: nothing).
    :param deserved: what it deserves (the ``capacity`` plugin; ``None``: unset).
    :param reclaimable: whether other queues may reclaim from it (``None``: yes).
    :param state: its state; only an open queue accepts new work.
    :param priority: its priority among queues.
    :param parent: its parent queue in a hierarchy (``None``: unset).
    """
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
