"""Nodes and their resource accounting."""

from __future__ import annotations

from collections.abc import Iterable, Mapping
from typing import Any, Final

import attrs

from volcanolib.api.resource import CPU, MEMORY, PODS, Resource, tolerant_le
from volcanolib.api.task import TaskInfo, TaskStatus
from volcanolib.errors import ResourceError

__all__ = ["DEFAULT_POD_CAPACITY", "Node", "NodeInfo", "Taint", "tolerated", "tolerates"]

#: Pods a node may hold when its allocatable does not say (the kubelet default).
DEFAULT_POD_CAPACITY = 110

_RELEASING = TaskStatus.RELEASING
_PIPELINED = TaskStatus.PIPELINED


#: Nothing released: the default of :meth:`NodeInfo.first_insufficient`'s ``released``.
_NOTHING: Final = Resource()

_ROW_PIPELINED: Final = 1
_ROW_RELEASING: Final = 2


def _equal(a: Resource, b: Resource) -> bool:
    """Whether two vectors hold the same amounts under the same scalar names (a scalar at 0 counts as named)."""
    return a.milli_cpu == b.milli_cpu and a.memory == b.memory and a.scalars == b.scalars


#: Which row of the accounting table a status falls in (0 for the statuses not named).
_ROWS: Final = {_PIPELINED: _ROW_PIPELINED, _RELEASING: _ROW_RELEASING}


@attrs.frozen
class Taint:
    """A node taint."""

    key: str
    value: str = ""
    effect: str = "NoSchedule"

    def __str__(self) -> str:
        return f"{{{self.key}: {self.value}}}" if self.value else f"{{{self.key}}}"


def tolerates(toleration: Mapping[str, Any], taint: Taint) -> bool:
    """Whether one toleration (as in a pod manifest) tolerates one taint (Kubernetes' ``ToleratesTaint``).

    .. versionadded:: 0.2
    """
    effect = toleration.get("effect") or ""
    if effect and effect != taint.effect:
        return False
    key = toleration.get("key") or ""
    if key and key != taint.key:
        return False
    op = toleration.get("operator") or "Equal"
    if op == "Exists":
        return True
    if op == "Equal":
        return str(toleration.get("value") or "") == taint.value
    return False


def tolerated(tolerations: Iterable[Mapping[str, Any]], taint: Taint) -> bool:
    """Whether any of the tolerations tolerates the taint.

    .. versionadded:: 0.2
    """
    return any(tolerates(t, taint) for t in tolerations)


@attrs.frozen
class Node:
    """The parts of a Node manifest that scheduling reads."""

    name: str
    labels: Mapping[str, str] = attrs.field(factory=dict)
    annotations: Mapping[str, str] = attrs.field(factory=dict)
    taints: tuple[Taint, ...] = ()
    unschedulable: bool = False
    #: Image name -> size in bytes, for image locality.
    images: Mapping[str, int] = attrs.field(factory=dict)
    manifest: Mapping[str, Any] | None = attrs.field(default=None, repr=False)


@attrs.define(eq=False)
class NodeInfo:
    """One node with the tasks placed on it.

    Accounting, by the status a task had when it was added:

    ============  ==========  ========  ===========  ==========
    status        idle        used      releasing    pipelined
    ============  ==========  ========  ===========  ==========
    Releasing     - request   + request + request
    Pipelined                                        + request
    any other     - request   + request
    ============  ==========  ========  ===========  ==========

    Removing a task reverses the same row, so accounting stays exact.
    """

    name: str
    allocatable: Resource
    node: Node = attrs.field(default=attrs.Factory(lambda self: Node(self.name), takes_self=True))
    capability: Resource = attrs.field(default=attrs.Factory(lambda self: self.allocatable.clone(), takes_self=True))
    idle: Resource = attrs.field(default=attrs.Factory(lambda self: self.allocatable.clone(), takes_self=True))
    used: Resource = attrs.field(factory=Resource)
    releasing: Resource = attrs.field(factory=Resource)
    pipelined: Resource = attrs.field(factory=Resource)
    #: Tasks on the node, keyed by ``namespace/name``.
    tasks: dict[str, TaskInfo] = attrs.field(factory=dict)
    ready: bool = True
    not_ready_reason: str = ""
    _accounted: dict[str, TaskStatus] = attrs.field(factory=dict, repr=False)

    def __attrs_post_init__(self) -> None:
        if PODS not in self.allocatable.scalars:
            self.allocatable.scalars[PODS] = DEFAULT_POD_CAPACITY
            self.idle.scalars[PODS] = self.idle.scalars.get(PODS, 0) + DEFAULT_POD_CAPACITY

    @property
    def pod_capacity(self) -> int:
        """How many pods the node may hold."""
        return int(self.allocatable.scalars.get(PODS, DEFAULT_POD_CAPACITY))

    def future_idle(self) -> Resource:
        """What will be free once releasing tasks leave: ``idle + releasing - pipelined``."""
        return self.idle.clone().add(self.releasing).sub_unchecked(self.pipelined)

    # ------------------------------------------------------------------ fit checks

    def first_insufficient(self, req: Resource, released: Resource | None = None) -> str | None:
        """The first dimension (cpu, memory, then scalars) in which ``req`` exceeds the future idle.

        Future idle is ``idle + releasing - pipelined``; each dimension
        compares with Volcano's tolerant less-or-equal, a scalar missing on
        the node read as zero. ``None`` when the request fits.

        :param released: a placed task's request counted as releasing too (the
            answer after evicting that task, without changing the node).
        """
        idle, rel, pip = self.idle, self.releasing, self.pipelined
        e = released if released is not None else _NOTHING
        if not tolerant_le(req.milli_cpu, idle.milli_cpu + (rel.milli_cpu + e.milli_cpu) - pip.milli_cpu):
            return CPU
        if not tolerant_le(req.memory, idle.memory + (rel.memory + e.memory) - pip.memory):
            return MEMORY
        if req.scalars:
            i, r, p, x = idle.scalars, rel.scalars, pip.scalars, e.scalars
            for name, v in req.scalars.items():
                freed = r.get(name, 0) + x[name] if name in x else r.get(name, 0)
                if not tolerant_le(v, i.get(name, 0) + freed - p.get(name, 0)):
                    return name
        return None

    def fits_future_idle(self, req: Resource) -> bool:
        """Whether ``req`` fits what the node will have once its releasing tasks leave."""
        return self.first_insufficient(req) is None

    def fits_idle(self, req: Resource) -> bool:
        """Whether ``req`` fits the node's idle resources now."""
        return req.less_equal(self.idle)

    def fits_future_idle_without(self, req: Resource, released: Iterable[Resource]) -> bool:
        """Whether ``req`` would fit the future idle once every request in ``released`` is given back too.

        The answer of ``req.less_equal(future)`` where ``future`` is
        :meth:`future_idle` with each of ``released`` added, in that order
        (so the same sums), without building it: preempt and reclaim ask
        this for every node they try.
        """
        idle, rel, pip = self.idle, self.releasing, self.pipelined
        cpu = idle.milli_cpu + rel.milli_cpu - pip.milli_cpu
        memory = idle.memory + rel.memory - pip.memory
        wanted = req.scalars
        if not wanted:
            for r in released:
                cpu += r.milli_cpu
                memory += r.memory
            return tolerant_le(req.milli_cpu, cpu) and tolerant_le(req.memory, memory)
        # Only the scalars ``req`` names are compared; each is summed in the order future_idle().add() would.
        sums: dict[str, float] = {}
        i, r_, p = idle.scalars, rel.scalars, pip.scalars
        for name in wanted:
            if name in i or name in r_ or name in p:
                value = i.get(name, 0)
                if name in r_:
                    value = value + r_[name]
                if name in p:
                    value = value - p[name]
                sums[name] = value
        for r in released:
            cpu += r.milli_cpu
            memory += r.memory
            extra = r.scalars
            if extra:
                for name in wanted:
                    if name in extra:
                        sums[name] = sums.get(name, 0) + extra[name]
        if not (tolerant_le(req.milli_cpu, cpu) and tolerant_le(req.memory, memory)):
            return False
        return all(tolerant_le(v, sums.get(name, 0)) for name, v in wanted.items())

    # ------------------------------------------------------------------ accounting

    def add_task(self, task: TaskInfo) -> None:
        """Place a task on this node and account for it by its status.

        :raises ResourceError: if the task names another node or is already here.
        """
        key = task.key
        if task.node_name != self.name:
            raise ResourceError(f"task {key} is assigned to node {task.node_name!r}, not {self.name!r}")
        if key in self.tasks:
            raise ResourceError(f"task {key} is already on node {self.name}")
        self._account(task.resreq, task.status, 1)
        self.tasks[key] = task
        self._accounted[key] = task.status

    def remove_task(self, task: TaskInfo) -> None:
        """Take a task off this node, reversing the accounting it was added with."""
        key = task.key
        status = self._accounted.pop(key, None)
        if status is None:
            raise ResourceError(f"task {key} is not on node {self.name}")
        stored = self.tasks.pop(key)
        self._account(stored.resreq, status, -1)

    def update_task(self, task: TaskInfo) -> None:
        """Re-account a task whose status changed (remove, then add)."""
        key = task.key
        old = self._accounted.get(key)
        if old is not None and self.tasks.get(key) is task and task.node_name == self.name:
            status = task.status
            before = _ROWS.get(old, 0)
            after = _ROWS.get(status, 0)
            if before == after:
                # Same accounting row (Binding -> Bound, Allocated -> Binding ...): only the status changes.
                self._accounted[key] = status
                return
            if before != _ROW_PIPELINED and after != _ROW_PIPELINED:
                # Into or out of Releasing: idle and used stay, only the releasing column moves.
                if after == _ROW_RELEASING:
                    self.releasing.add(task.resreq)
                else:
                    self.releasing.sub_unchecked(task.resreq)
                self._accounted[key] = status
                return
        self.remove_task(task)
        self.add_task(task)

    def _account(self, req: Resource, status: TaskStatus, sign: int) -> None:
        if status is _PIPELINED:
            if sign > 0:
                self.pipelined.add(req)
            else:
                self.pipelined.sub_unchecked(req)
            return
        if sign > 0:
            self.idle.sub_unchecked(req)
            self.used.add(req)
            if status is _RELEASING:
                self.releasing.add(req)
        else:
            self.idle.add(req)
            self.used.sub_unchecked(req)
            if status is _RELEASING:
                self.releasing.sub_unchecked(req)

    def accounted_status(self, task: TaskInfo) -> TaskStatus | None:
        """The status a task was accounted under on this node, or ``None`` if it is not here."""
        return self._accounted.get(task.key)

    def clone(self, tasks: Mapping[str, TaskInfo] | None = None, *, like: NodeInfo | None = None) -> NodeInfo:
        """Return a copy with its own resource vectors.

        :param tasks: the tasks to place on the copy, by key; the copy shares them.
            Without it the copy shares this node's task objects.
        :param like: an earlier copy of this node, made while it had the same
            allocatable and capability: the copy shares those two vectors with
            it instead of copying them (nothing changes them once a node is
            built; the cache replaces a node whose allocatable changes).

        .. versionchanged:: 0.2
           ``like``.
        """
        node = NodeInfo.__new__(NodeInfo)
        node.name = self.name
        node.node = self.node
        if like is None:
            node.allocatable = self.allocatable.clone()
            node.capability = self.capability.clone()
        else:
            node.allocatable = like.allocatable
            node.capability = like.capability
        node.idle = self.idle.clone()
        node.used = self.used.clone()
        node.releasing = self.releasing.clone()
        node.pipelined = self.pipelined.clone()
        node.ready = self.ready
        node.not_ready_reason = self.not_ready_reason
        node._accounted = self._accounted.copy()
        if tasks is None:
            node.tasks = self.tasks.copy()
        else:
            node.tasks = {key: tasks.get(key, t) for key, t in self.tasks.items()}
        return node

    def catch_up(self, source: NodeInfo) -> bool:
        """Take ``source``'s task statuses when this node accounts for the same tasks as it; say whether it did.

        This node (a copy of ``source`` made earlier) qualifies when it holds
        tasks under the same keys, in the same order, and its idle, used,
        releasing and pipelined resources equal ``source``'s: then only the
        statuses its tasks were accounted under may differ within an
        accounting row (a task Allocated here is Running there, say), and
        those are taken from ``source``. Otherwise nothing changes. The task
        objects stay this node's own; allocatable and capability are not
        compared.

        Runtime complexity: O(tasks on the node).

        .. versionadded:: 0.2
        """
        # Cheapest tests first: most nodes that do not qualify gained or lost a task.
        if len(self.tasks) != len(source.tasks):
            return False
        if not (
            _equal(self.used, source.used)
            and _equal(self.idle, source.idle)
            and _equal(self.releasing, source.releasing)
            and _equal(self.pipelined, source.pipelined)
        ):
            return False
        if list(self.tasks) != list(source.tasks):
            return False
        if self._accounted != source._accounted:
            self._accounted = source._accounted.copy()
        return True

    def __repr__(self) -> str:
        return f"Node({self.name}, idle={self.idle}, used={self.used}, tasks={len(self.tasks)})"
