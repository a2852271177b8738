"""What a waiting gang is short of: room in its queue, or room on the nodes, with the numbers.

One answer for three readers: the ``gang`` plugin writes it after Volcano's
own text in a waiting PodGroup's ``Unschedulable`` condition, and so in its
pods' ``PodScheduled`` condition and ``FailedScheduling`` events;
``volcanolib explain`` prints it; ``volcanolib serve`` returns it from
``/explain``.

* **The queue.** A plugin that shares the cluster between queues
  (``proportion``, ``capacity``) may offer a method
  ``queue_shortfall(ssn, job) -> QueueShortfall | None``: by its own rule,
  whether the job's queue has room for what the job needs, and if not, by
  how much it is short. :meth:`QueueShortfall.check` does the arithmetic
  for it. It is not a hook: it is asked only to explain.
* **The nodes.** What ``allocate`` found this session: the pods the gang
  still needs, how many of them found a node before one found none, and
  that one's request (:class:`GangShortfall`). Cheap enough to compute for
  every waiting gang at every close. On demand (:func:`count_room`, for
  ``explain``), the nodes with enough idle resources for each distinct
  pending pod, and how many such pods they hold together.

.. versionadded:: 0.2
"""

from __future__ import annotations

import itertools
import math
from collections.abc import Callable, Iterable, Sequence
from typing import TYPE_CHECKING, Final

import attrs

from volcanolib.api.resource import MIN_RESOURCE, PODS, Resource
from volcanolib.api.task import ALLOCATED_STATUSES, TaskInfo, TaskStatus, in_statuses

if TYPE_CHECKING:
    from volcanolib.api.job import JobInfo
    from volcanolib.api.node import NodeInfo
    from volcanolib.framework.session import Session

__all__ = [
    "ALLOCATE",
    "ENQUEUE",
    "GangShortfall",
    "PodRoom",
    "QueueShortfall",
    "count_room",
    "discarded_allocations",
    "gang_shortfall",
    "needed_request",
]

#: :attr:`QueueShortfall.step` of a PodGroup its queue cannot admit (it stays Pending).
ENQUEUE: Final = "enqueue"
#: :attr:`QueueShortfall.step` of an admitted gang whose queue cannot take its pods.
ALLOCATE: Final = "allocate"
_PENDING: Final = TaskStatus.PENDING


@attrs.frozen
class QueueShortfall:
    """A queue that has no room for what a job needs, as one plugin counts it.

    .. versionadded:: 0.2
    """

    #: The plugin that says so.
    plugin: str
    queue: str
    #: :data:`ENQUEUE` (the PodGroup cannot be admitted) or :data:`ALLOCATE` (its pods cannot be placed).
    step: str
    #: What the plugin measures against, under Volcano's name: ``deserved``, ``capability``, ``realCapability``.
    limit_name: str
    limit: Resource
    #: What the queue already holds, as the plugin counts it: for ``enqueue``, the minimum resources of the
    #: jobs it admitted (allocated and reserved, less what running jobs hold beyond their minimum).
    held: Resource
    #: What the job needs: its ``minResources`` (enqueue), or the requests of the pods the gang still needs.
    need: Resource
    #: ``held + need - limit`` on the resources ``need`` asks for, where positive.
    short: Resource

    @classmethod
    def check(
        cls,
        plugin: str,
        queue: str,
        step: str,
        limit_name: str,
        limit: Resource,
        held: Resource,
        need: Resource,
    ) -> QueueShortfall | None:
        """The shortfall when ``held + need`` exceeds ``limit`` on a resource ``need`` asks for, else ``None``.

        The comparison is the quota plugins' (strict, ``pods`` left out);
        the arguments are copied.
        """
        wanted = held.clone().add(need)
        over = wanted.exceeding_dimensions(limit, need)
        if not over:
            return None
        short = Resource()
        for name in over:
            short.set(name, wanted.get(name) - limit.get(name))
        return cls(plugin, queue, step, limit_name, limit.clone(), held.clone(), need.clone(), short)

    def text(self) -> str:
        """One clause: ``queue q is short of cpu 3 for this gang (proportion): it holds cpu 6, ...``."""
        if self.step == ENQUEUE:
            held = f"the jobs it admitted keep {_on(self.held, self.need)} as their minimum"
            what = "the gang's minResources ask"
        else:
            held = f"it holds {_on(self.held, self.need)}"
            what = "the pods the gang still needs ask"
        limit = {"deserved": "deserved share"}.get(self.limit_name, self.limit_name)
        return (
            f"queue {self.queue} is short of {self.short.describe()} for this gang ({self.plugin}): "
            f"{held}, {what} {_on(self.need, self.need)} more, its {limit} is {_on(self.limit, self.need)}"
        )

    def to_dict(self) -> dict[str, object]:
        """The shortfall as JSON values (resources as Kubernetes quantities)."""
        return {
            "plugin": self.plugin,
            "queue": self.queue,
            "step": self.step,
            "limit": self.limit_name,
            "limitResources": _quantities(self.limit, self.need),
            "held": _quantities(self.held, self.need),
            "need": _quantities(self.need, self.need),
            "short": _quantities(self.short, self.short),
        }


@attrs.frozen
class PodRoom:
    """How much room the nodes have for one distinct pending pod (counted by :func:`count_room`).

    .. versionadded:: 0.2
    """

    #: The first pending pod of its template, ``namespace/name``.
    pod: str
    request: Resource
    #: Pending pods of the job with that template.
    pending: int
    #: Nodes with enough idle resources for one such pod now (among those no predicate refuses, in explanations).
    nodes: int
    #: How many such pods those nodes could hold together (each node filled alone).
    room: int
    #: Nodes in the session.
    total_nodes: int

    def text(self) -> str:
        """``2 of 10 nodes have cpu 8 idle, room for 3 of the 4 pending pods like ns/p-1``."""
        request = self.request.describe()
        return (
            f"{self.nodes} of {self.total_nodes} nodes have {request} idle, room for {self.room} of the "
            f"{self.pending} pending pod(s) like {self.pod}"
        )

    def to_dict(self) -> dict[str, object]:
        """As JSON values."""
        return {
            "pod": self.pod,
            "request": _quantities(self.request, self.request),
            "pending": self.pending,
            "nodesWithRoom": self.nodes,
            "room": self.room,
            "totalNodes": self.total_nodes,
        }


@attrs.frozen
class GangShortfall:
    """What a gang that is not ready is short of, at the end of a session.

    .. versionadded:: 0.2
    """

    job: str
    min_member: int
    #: Pods of the job placed or done (``minMember`` counts them).
    ready: int
    #: Pods the gang still needs: ``minMember - ready`` (0 when only pods beyond the minimum wait).
    needed: int
    #: Pods ``allocate`` found a node for this session before one found none (their placements were
    #: given back); ``None`` when no pod of the job was checked against the nodes.
    found: int | None
    #: The first pod (by name) that found no node, with its request and Volcano's summary of why.
    unplaced: str
    unplaced_request: Resource | None
    fit_error: str
    queue: tuple[QueueShortfall, ...]

    @property
    def empty(self) -> bool:
        """Whether neither the queue nor the nodes are known to be short."""
        return not self.queue and self.found is None

    def text(self) -> str:
        """The shortfall in words, ``""`` when nothing is known to be short.

        ``Short of queue room: ...`` and/or ``Short of nodes: the gang needs
        2 more pod(s), room was found for 1; the next, ns/p-2, asks cpu 8``.
        """
        parts = []
        if self.queue:
            parts.append("Short of queue room: " + "; ".join(q.text() for q in self.queue) + ".")
        if self.found is not None:
            needs = (
                f"the gang needs {self.needed} more pod(s), room was found for {min(self.found, self.needed)}"
                if self.needed
                else f"the gang has its {self.min_member} pod(s); pods beyond them wait"
            )
            request = self.unplaced_request.describe() if self.unplaced_request is not None else "nothing"
            parts.append(f"Short of nodes: {needs}; the next, {self.unplaced}, asks {request} and fits no node.")
        return " ".join(parts)

    def to_dict(self) -> dict[str, object]:
        """As JSON values."""
        return {
            "minMember": self.min_member,
            "ready": self.ready,
            "needed": self.needed,
            "found": self.found,
            "unplaced": self.unplaced or None,
            "unplacedRequest": (
                _quantities(self.unplaced_request, self.unplaced_request) if self.unplaced_request else None
            ),
            "fitError": self.fit_error or None,
            "queue": [q.to_dict() for q in self.queue],
            "text": self.text(),
        }


def gang_shortfall(ssn: Session, job: JobInfo) -> GangShortfall:
    """What ``job`` is short of at this point of the session (at close: what the session found).

    Costs a few lookups per plugin offering ``queue_shortfall`` and one
    pass over the job's pending pods: ``gang`` asks it for every waiting
    gang at every close.
    """
    ready = job.ready_task_num()
    needed = max(0, job.min_available - ready)
    found: int | None = None
    unplaced = ""
    unplaced_request: Resource | None = None
    fit_error = ""
    errors = job.nodes_fit_errors
    if errors:
        first: TaskInfo | None = None
        for uid in errors:
            task = job.tasks.get(uid)
            if task is not None and task.status is _PENDING and (first is None or task.name < first.name):
                first = task
        if first is not None:
            found = discarded_allocations(job)
            unplaced = first.key
            unplaced_request = first.init_resreq
            fit_error = errors[first.uid].error()
    queue = tuple(_queue_shortfalls(ssn, job))
    return GangShortfall(job.uid, job.min_available, ready, needed, found, unplaced, unplaced_request, fit_error, queue)


def discarded_allocations(job: JobInfo) -> int:
    """The pending tasks whose placement this session, given back, was an allocation.

    What ``allocate`` found a node for before the gang failed as a whole;
    ``gang`` counts them as schedulable in its message.
    """
    placed = 0
    for task in (job.task_status_index.get(_PENDING) or {}).values():
        status = task.last_transaction[1] if task.last_transaction is not None else task.status
        if in_statuses(status, ALLOCATED_STATUSES):
            placed += 1
    return placed


def _queue_shortfalls(ssn: Session, job: JobInfo) -> Iterable[QueueShortfall]:
    for plugin in ssn.plugins.values():
        ask: Callable[[Session, JobInfo], QueueShortfall | None] | None = getattr(plugin, "queue_shortfall", None)
        if ask is None or not callable(ask):
            continue
        try:
            answer = ask(ssn, job)
        except Exception:  # an explanation must not fail because a plugin does
            continue
        if isinstance(answer, QueueShortfall):
            yield answer


def needed_request(job: JobInfo) -> Resource:
    """The requests of the pending pods the gang still needs, or of one pending pod when it has its minimum.

    What a queue must find room for so that the gang can run: ``minMember``
    less the pods placed (taken in the job's order of pending pods), or one
    pod when the gang has its minimum and pods beyond it wait.
    """
    pending = job.task_status_index.get(_PENDING) or {}
    count = max(1, job.min_available - job.ready_task_num())
    total = Resource()
    for task in itertools.islice(pending.values(), count):
        total.add(task.init_resreq)
    return total


def count_room(nodes: Sequence[NodeInfo], tasks: Sequence[TaskInfo], *, total_nodes: int | None = None) -> PodRoom:
    """How many ``nodes`` have idle resources for one pod like ``tasks[0]``, and for how many such pods in all.

    ``tasks`` are the pending pods of one template. A node's idle resources
    are what its pods leave now (pods being evicted there still count, and
    its free pod slots count as a resource); predicates are not asked here:
    :func:`volcanolib.sim.explain.explain_with` gives only the nodes no
    predicate refuses. One pass over the nodes.

    :param total_nodes: the nodes of the session (``len(nodes)`` by default).
    """
    task = tasks[0]
    request = task.init_resreq
    wanted = [(name, request.get(name)) for name in request.names()]
    nodes_with_room = 0
    room = 0
    for node in nodes:
        idle = node.idle
        fits = len(tasks)
        for name, want in wanted:
            fits = min(fits, math.floor((idle.get(name) + MIN_RESOURCE / 2) / want))
            if fits < 1:
                break
        if fits >= 1:
            nodes_with_room += 1
            room += fits
    total = len(nodes) if total_nodes is None else total_nodes
    return PodRoom(task.key, request.clone(), len(tasks), nodes_with_room, min(room, len(tasks)), total)


def _on(resource: Resource, dims: Resource) -> str:
    """``resource`` on the resources ``dims`` asks for, as Kubernetes quantities (``cpu 24, memory 0``)."""
    parts = []
    for name in dims.names():
        if name == PODS:
            continue
        shown = Resource().set(name, resource.get(name)).to_quantities()[name]
        parts.append(f"{name} {shown}")
    return ", ".join(parts) or "nothing"


def _quantities(resource: Resource, dims: Resource) -> dict[str, str]:
    """``resource`` as Kubernetes quantities, on the resources ``dims`` has (``pods`` left out)."""
    out = {}
    for name in dims.names():
        if name != PODS:
            out[name] = Resource().set(name, resource.get(name)).to_quantities()[name]
    return out
