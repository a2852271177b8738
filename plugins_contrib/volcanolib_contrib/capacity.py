"""capacity: queue quotas taken from ``spec.deserved``, flat or as a queue tree.

An alternative to proportion: a queue's *deserved* share is what its
``spec.deserved`` says (in flat mode raised to its guarantee), not a
water-filled fair share. A queue may grow beyond deserved up to its *real capability*, and
``reclaim`` gives the excess back to queues below their deserved.

Per queue the plugin keeps ``allocated`` (tasks in an allocated status),
``request`` (those plus Pending ones), ``inqueue`` (minimum resources
reserved by admitted jobs not yet placed), ``elastic`` (what jobs hold
beyond their minimum), ``capability``, ``guarantee``, ``real capability``,
``deserved`` and ``share`` (the largest ``allocated / deserved`` over the
resources deserved lists; 1 for a queue without deserved).

Flat mode (default)
    Queues with jobs get state. Real capability = (cluster total - every
    queue's guarantee, never below 0) + own guarantee, capped by the
    capability (a capability without cpu or memory leaves it unbounded).
    Deserved is capped by the real capability.

Hierarchical mode (``enableHierarchy: true``)
    Every queue gets state; its parent is ``spec.parent`` or ``root`` (which
    always exists, see :data:`~volcanolib.api.queue.ROOT_QUEUE`). A missing
    parent, or a job in a queue that has children, makes the tree invalid:
    then nothing may be allocated, enqueued or reclaimed. A job's usage
    counts for its queue and every ancestor. Root's capability and deserved
    are the cluster total unless set, and its real capability is the cluster
    total; a child without cpu, memory or a scalar in its capability inherits
    its parent's; a child's real capability is (parent's real capability -
    the guarantees of the parent's children) + own guarantee, capped by its
    capability. A child's deserved is its ``spec.deserved`` alone. Root's
    guarantee, when unset, is its children's sum. Only leaf queues take tasks.

Argument ``ancestorReclaimLevel`` (int, default 0, negative means 0): in
hierarchical mode, how many ancestor levels (1 = parent) reclaim also checks.
``capability.DynamicResourceAllocationEnable`` and
``capability.DRAConsumableCapacityEnable`` are accepted; DRA is not modelled.
"""

from __future__ import annotations

from collections.abc import Iterable, Sequence
from typing import TYPE_CHECKING, ClassVar, Final

import attrs

from volcanolib.api.job import JobInfo, PodGroupPhase
from volcanolib.api.queue import ROOT_QUEUE, QueueFigures
from volcanolib.api.resource import INFINITE, Mode, Resource, exceeded_part, res_max
from volcanolib.api.task import ALLOCATED_STATUSES, TaskStatus, in_statuses
from volcanolib.framework.arguments import argument
from volcanolib.framework.registry import hookimpl
from volcanolib.framework.shortfall import ALLOCATE, ENQUEUE, QueueShortfall, needed_request
from volcanolib.framework.status import Vote
from volcanolib.framework.sums import JobSums
from volcanolib.framework.traits import Traits
from volcanolib.framework.victims import EvictionContext, EvictionKind, VictimOrder
from volcanolib_contrib._resources import (
    greater_partly_with_relevant_dimensions,
    intersects,
    less_equal_partly_with_dimension_zero_filtered,
)

if TYPE_CHECKING:
    from volcanolib.api.cluster import SnapshotDelta
    from volcanolib.api.queue import QueueInfo
    from volcanolib.api.task import TaskInfo
    from volcanolib.framework.session import Session
    from volcanolib.framework.status import Event

__all__ = ["ANCESTOR_RECLAIM_LEVEL", "ROOT_QUEUE", "CapacityArguments", "CapacityPlugin", "QueueAttr"]

#: The argument bounding how far up reclaim checks ancestors.
ANCESTOR_RECLAIM_LEVEL: Final = "ancestorReclaimLevel"

_ZERO: Final = Mode.ZERO
_INF: Final = Mode.INFINITY
_PENDING: Final = TaskStatus.PENDING


class QueueAttr:
    """The capacity plugin's state of one queue during a session."""

    __slots__ = (
        "allocated",
        "ancestors",
        "capability",
        "children",
        "deserved",
        "elastic",
        "guarantee",
        "inqueue",
        "name",
        "real_capability",
        "request",
        "share",
    )

    def __init__(self, queue: QueueInfo) -> None:
        self.name = queue.name
        self.share = 0.0
        #: Ancestor names, root first, parent last (hierarchical mode).
        self.ancestors: list[str] = []
        self.children: dict[str, QueueAttr] = {}
        self.deserved = queue.deserved.clone() if queue.deserved is not None else Resource()
        self.allocated = Resource()
        self.request = Resource()
        self.elastic = Resource()
        self.inqueue = Resource()
        self.guarantee = queue.guarantee.clone()
        self.capability = queue.capability.clone() if queue.capability is not None else Resource()
        self.real_capability = Resource()

    def update_share(self) -> None:
        """Recompute :attr:`share`: 1 without deserved, else the largest ``allocated / deserved``."""
        deserved = self.deserved
        if deserved.is_empty():
            self.share = 1.0
            return
        best = 0.0
        for name in deserved.names():
            cap = deserved.get(name)
            used = self.allocated.get(name)
            value = (0.0 if used == 0 else 1.0) if cap == 0 else used / cap
            best = max(best, value)
        self.share = best

    def add_usage(self, allocated: Resource, request: Resource, inqueue: Resource, elastic: Resource) -> None:
        """Add a job's contribution."""
        self.allocated.add(allocated)
        self.request.add(request)
        self.inqueue.add(inqueue)
        self.elastic.add(elastic)


def _inqueue_of(job: JobInfo) -> Resource:
    """What an admitted job reserves (:meth:`~volcanolib.api.job.JobInfo.reserved_resources`), empty for none."""
    reserved = job.reserved_resources()
    return reserved if reserved is not None else Resource()


def _job_usage(job: JobInfo) -> tuple[Resource, Resource, Resource, Resource]:
    """A job's (allocated, request, inqueue, elastic)."""
    allocated = Resource()
    request = Resource()
    for status, bucket in job.task_status_index.items():
        if in_statuses(status, ALLOCATED_STATUSES):
            for task in bucket.values():
                allocated.add(task.resreq)
                request.add(task.resreq)
        elif status is _PENDING:
            for task in bucket.values():
                request.add(task.resreq)
    return allocated, request, _inqueue_of(job), job.elastic_resources()


def _compare_share(left: QueueAttr, right: QueueAttr) -> int:
    """Lower share first; equal shares: a queue with deserved before one without."""
    if left.share == right.share:
        lhas = not left.deserved.is_empty()
        rhas = not right.deserved.is_empty()
        if lhas == rhas:
            return 0
        return -1 if lhas else 1
    return -1 if left.share < right.share else 1


def _queue_level(left: QueueAttr, right: QueueAttr) -> int:
    """The index of the deepest ancestor two queues share (0 when only the first one matches or none)."""
    level = 0
    for i in range(min(len(left.ancestors), len(right.ancestors))):
        if left.ancestors[i] != right.ancestors[i]:
            return level
        level = i
    return level


def _ancestor_at_depth(attr: QueueAttr, depth: int) -> str | None:
    """The ancestor ``depth`` levels up (1 = parent), or ``None``."""
    if depth <= 0 or len(attr.ancestors) < depth:
        return None
    return attr.ancestors[len(attr.ancestors) - depth]


def _has_relevant_deserved(task: TaskInfo, deserved: Resource) -> bool:
    return intersects(task.resreq, deserved)


@attrs.frozen
class CapacityArguments:
    """The arguments of ``capacity``; see also the `enableHierarchy` option above."""

    ancestor_reclaim_level: int = argument(
        key=ANCESTOR_RECLAIM_LEVEL,
        default=0,
        doc="Hierarchical mode: how many ancestor levels (1 = the parent) reclaim also checks; negative means 0.",
    )
    dynamic_resource_allocation_enable: bool = argument(
        key="capacity.DynamicResourceAllocationEnable", default=False, doc="Accepted; DRA quotas are not modelled."
    )
    dra_consumable_capacity_enable: bool = argument(
        key="capacity.DRAConsumableCapacityEnable", default=False, doc="Accepted; DRA quotas are not modelled."
    )


class CapacityPlugin:
    """Queue quotas from ``spec.deserved`` and ``spec.capability``, optionally as a queue hierarchy.

    Hooks: ``queue_order``, ``victim_queue_order`` (hierarchical),
    ``allocatable``, ``job_enqueueable`` (which also reserves the admitted
    job's minimum), ``preemptive``, ``reclaimable``, ``unified_evictable`` and the allocate /
    deallocate events. After :meth:`on_session_open` (or
    :meth:`on_session_resume`, which sums again only the jobs that
    changed), :attr:`queue_attrs` holds the queues' state and
    :meth:`queue_view` describes one.
    """

    name: ClassVar[str] = "capacity"
    Arguments: ClassVar[type[CapacityArguments]] = CapacityArguments
    #: See docs/incremental.md: no clock; job status, if any, only through the session.
    traits: ClassVar[Traits] = Traits(clock_free=True, status_through_session=True)

    def __init__(self, arguments: CapacityArguments) -> None:
        self.arguments = arguments
        self.ancestor_reclaim_level = max(arguments.ancestor_reclaim_level, 0)
        self.total = Resource()
        self.hierarchical = False
        #: Whether the queue tree is valid (always true in flat mode).
        self.ready = True
        #: Per-queue state by name (flat mode: only queues with jobs).
        self.queue_attrs: dict[str, QueueAttr] = {}
        # Kept for the next session: per queue, the sums of its jobs' allocated, request, inqueue and
        # elastic resources, each job a part.
        self._sums = JobSums(4)

    # ------------------------------------------------------------------ session open

    @hookimpl
    def on_session_open(self, ssn: Session) -> None:
        """Build every queue's state from the snapshot (flat or hierarchical) and compute shares."""
        self._sums = JobSums.kept_or_afresh(None, None, ssn.jobs, ssn.queues, _job_usage, width=4)
        self._settle(ssn)

    @hookimpl
    def on_session_resume(self, ssn: Session, delta: SnapshotDelta) -> None:
        """Open as :meth:`on_session_open` would, summing again only the jobs the delta names.

        Opens afresh when a queue changed.
        """
        kept = None if delta.queues else self._sums
        self._sums = JobSums.kept_or_afresh(kept, delta.jobs, ssn.jobs, ssn.queues, _job_usage, width=4)
        self._settle(ssn)

    def _settle(self, ssn: Session) -> None:
        """Every queue's state, from the kept sums when they are exact, else job by job."""
        self.total = ssn.total_resource.clone()
        self.queue_attrs = {}
        self.hierarchical = ssn.hierarchy_enabled(self.name)
        usage = self._sums.totals(ssn.jobs.values()) if self._sums.exact else None
        if self.hierarchical:
            self.ready = self._build_hierarchy(ssn, usage)
            if not self.ready and usage is not None:
                # A broken tree stops the build at the first job it cannot take: job by job, as without sums.
                self.queue_attrs = {}
                self._build_hierarchy(ssn, None)
        else:
            self.ready = True
            self._build_flat(ssn, usage)

    def _usage_by_queue(
        self, ssn: Session, usage: list[tuple[str, tuple[Resource, ...]]] | None
    ) -> Iterable[tuple[str, tuple[Resource, ...]]]:
        """What the builds add, queue by queue: the kept sums' ``usage``, or (``None``) every job's, in job order."""
        if usage is not None:
            return usage
        return ((job.queue, _job_usage(job)) for job in ssn.jobs.values())

    def kept_state(self) -> tuple[bool, list[tuple[str, Resource, Resource, Resource, Resource, Resource, Resource]]]:
        """What a session's open leaves: whether the tree is valid; per queue, sums, deserved, real capability."""
        return self.ready, [
            (name, attr.allocated, attr.request, attr.inqueue, attr.elastic, attr.deserved, attr.real_capability)
            for name, attr in self.queue_attrs.items()
        ]

    def _build_flat(self, ssn: Session, usage: list[tuple[str, tuple[Resource, ...]]] | None) -> None:
        total_guarantee = Resource()
        for info in ssn.queues.values():
            total_guarantee.add(info.guarantee)
        attrs = self.queue_attrs
        for name, amounts in self._usage_by_queue(ssn, usage):
            attr = attrs.get(name)
            if attr is None:
                queue = ssn.queues.get(name)
                if queue is None:
                    continue
                attr = attrs[name] = QueueAttr(queue)
                real = exceeded_part(self.total, total_guarantee).add(attr.guarantee)
                if queue.capability is not None:
                    if attr.capability.milli_cpu <= 0:
                        attr.capability.milli_cpu = INFINITE
                    if attr.capability.memory <= 0:
                        attr.capability.memory = INFINITE
                    real.min_dimension(attr.capability, _INF)
                attr.real_capability = real
            attr.add_usage(*amounts)
        for attr in attrs.values():
            attr.deserved.min_dimension(attr.real_capability, _INF)
            attr.deserved = res_max(attr.deserved, attr.guarantee)
            attr.update_share()

    def _build_hierarchy(self, ssn: Session, usage: list[tuple[str, tuple[Resource, ...]]] | None) -> bool:
        attrs = self.queue_attrs
        for info in ssn.queues.values():
            if info.name in attrs:
                continue
            attrs[info.name] = QueueAttr(info)
            if not self._link_ancestors(ssn, info, set()):
                return False
        for name, amounts in self._usage_by_queue(ssn, usage):
            attr = attrs.get(name)
            if attr is None:
                continue
            if attr.children:
                return False
            attr.add_usage(*amounts)
            for ancestor in attr.ancestors:
                attrs[ancestor].add_usage(*amounts)
        root = attrs.get(ROOT_QUEUE)
        if root is None:
            return False
        # Root stands for the cluster: what it does not set is the cluster total, and its hard limit is that total.
        if root.capability.is_empty():
            root.capability = self.total.clone()
        if root.deserved.is_empty():
            root.deserved = self.total.clone()
        root.real_capability = self.total.clone()
        self._check_children(root)
        for attr in attrs.values():
            attr.update_share()
        return True

    def _link_ancestors(self, ssn: Session, queue: QueueInfo, visiting: set[str]) -> bool:
        """Attach a queue to its parent (creating the parent's state), root first; false on a broken tree."""
        if queue.name == ROOT_QUEUE:
            return True
        if queue.name in visiting:
            return False
        visiting.add(queue.name)
        try:
            attrs = self.queue_attrs
            parent_name = queue.parent or ROOT_QUEUE
            parent = ssn.queues.get(parent_name)
            if parent is None:
                return False
            if parent_name not in attrs:
                attrs[parent_name] = QueueAttr(parent)
                if not self._link_ancestors(ssn, parent, visiting):
                    return False
            parent_attr = attrs[parent_name]
            parent_attr.children[queue.name] = attrs[queue.name]
            attrs[queue.name].ancestors = [*parent_attr.ancestors, parent_name]
            return True
        finally:
            visiting.discard(queue.name)

    def _check_children(self, attr: QueueAttr) -> None:
        """Derive the children's deserved, capability and real capability from their parent, recursively."""
        total_guarantee = Resource()
        total_deserved = Resource()
        cap = attr.capability
        for child in attr.children.values():
            total_deserved.add(child.deserved)
            total_guarantee.add(child.guarantee)
            if child.capability.milli_cpu <= 0:
                child.capability.milli_cpu = cap.milli_cpu
            if child.capability.memory <= 0:
                child.capability.memory = cap.memory
            for name, value in cap.scalars.items():
                child.capability.scalars.setdefault(name, value)
        if attr.name == ROOT_QUEUE:
            if attr.guarantee.is_empty():
                attr.guarantee = total_guarantee
            if attr.deserved.is_empty():
                attr.deserved = total_deserved
        for child in attr.children.values():
            real = exceeded_part(attr.real_capability, total_guarantee).add(child.guarantee)
            child.real_capability = real.min_dimension(child.capability, _INF)
        for child in attr.children.values():
            self._check_children(child)

    # ------------------------------------------------------------------ explanations

    def queue_figures(self) -> list[QueueFigures]:
        """Every queue this plugin keeps, as Volcano's capacity plugin reports it in its metrics.

        ``overused`` is ``deserved <= allocated`` in every dimension (Volcano's
        plugin sets it only while reclaiming); see :class:`~volcanolib.api.queue.QueueFigures`.
        """
        return [QueueFigures.of(attr, capability=attr.capability) for attr in self.queue_attrs.values()]

    def queue_shortfall(self, ssn: Session, job: JobInfo) -> QueueShortfall | None:
        """By how much the job's queue (or an ancestor) is short of room for it, by this plugin's rules, or ``None``.

        A PodGroup still Pending with ``minResources``: as :meth:`job_enqueueable`
        checks it, ``minResources + allocated + inqueue - elastic`` against
        each level's real capability. An admitted job with pending pods: as
        :meth:`allocatable` checks each pod, ``allocated`` plus the pods the
        gang still needs against each level's real capability. The first
        level short is named (see :mod:`volcanolib.framework.shortfall`).

        .. versionadded:: 0.2
        """
        attr = self.queue_attrs.get(job.queue)
        queue = ssn.queues.get(job.queue)
        if not self.ready or attr is None or queue is None or not queue.is_open():
            return None
        min_resources = job.pod_group.min_resources
        enqueue = job.pod_group.phase is PodGroupPhase.PENDING
        if enqueue and min_resources is None:
            return None
        if not enqueue and not job.task_status_index.get(_PENDING):
            return None
        need = min_resources if enqueue and min_resources is not None else needed_request(job)
        for level in self._chain(attr):
            held = level.allocated.clone()
            if enqueue:
                held.add(level.inqueue).sub_unchecked(level.elastic)
            real = level.real_capability
            same = all(real.get(n) == level.capability.get(n) for n in need.names())
            short = QueueShortfall.check(
                self.name,
                level.name,
                ENQUEUE if enqueue else ALLOCATE,
                "capability" if same else "realCapability",
                real,
                held,
                need,
            )
            if short is not None:
                return short
        return None

    def queue_view(self, queue_name: str) -> dict[str, object] | None:
        """What this plugin thinks of a queue, for explanations; ``None`` when it has no state.

        Keys: ``deserved``, ``allocated``, ``request``, ``inqueue``, ``elastic``,
        ``capability``, ``real_capability`` (also as ``realCapability``),
        ``guarantee`` (Kubernetes quantities), ``share``, ``parent`` (the
        nearest ancestor in hierarchical mode, else ``None``) and ``leaf``.
        """
        attr = self.queue_attrs.get(queue_name)
        if attr is None:
            return None
        real = attr.real_capability.to_quantities()
        return {
            "deserved": attr.deserved.to_quantities(),
            "allocated": attr.allocated.to_quantities(),
            "request": attr.request.to_quantities(),
            "inqueue": attr.inqueue.to_quantities(),
            "elastic": attr.elastic.to_quantities(),
            "capability": attr.capability.to_quantities(),
            "real_capability": real,
            "realCapability": real,
            "guarantee": attr.guarantee.to_quantities(),
            "share": attr.share,
            "parent": attr.ancestors[-1] if attr.ancestors else None,
            "leaf": not attr.children,
        }

    # ------------------------------------------------------------------ orders

    @hookimpl
    def queue_order(self, ssn: Session, left: QueueInfo, right: QueueInfo) -> int:
        """Higher ``spec.priority`` first, then the lower share (hierarchically: leaves first, then by subtree)."""
        if left.priority != right.priority:
            return right.priority - left.priority
        if not self.ready:
            return 0
        la = self.queue_attrs.get(left.name)
        ra = self.queue_attrs.get(right.name)
        if la is None or ra is None:
            return 0
        if not self.hierarchical:
            return _compare_share(la, ra)
        lleaf, rleaf = not la.children, not ra.children
        if lleaf != rleaf:
            return -1 if lleaf else 1
        if not lleaf:
            return _compare_share(la, ra)
        level = _queue_level(la, ra)
        lname = la.ancestors[level + 1] if level + 1 < len(la.ancestors) else la.name
        rname = ra.ancestors[level + 1] if level + 1 < len(ra.ancestors) else ra.name
        return _compare_share(self.queue_attrs[lname], self.queue_attrs[rname])

    @hookimpl
    def victim_queue_order(self, ssn: Session, left: QueueInfo, right: QueueInfo, preemptor: TaskInfo) -> int:
        """Hierarchical mode: evict first from the queue that shares a deeper ancestor with the preemptor's."""
        if not self.hierarchical or not self.ready:
            return 0
        job = ssn.jobs.get(preemptor.job)
        attrs = self.queue_attrs
        mine = attrs.get(job.queue) if job is not None else None
        la, ra = attrs.get(left.name), attrs.get(right.name)
        if mine is None or la is None or ra is None:
            return 0
        llevel, rlevel = _queue_level(la, mine), _queue_level(ra, mine)
        if llevel == rlevel:
            return 0
        return -1 if llevel > rlevel else 1

    # ------------------------------------------------------------------ quota checks

    def _chain(self, attr: QueueAttr) -> list[QueueAttr]:
        """The queue and its ancestors, the queue first."""
        return [attr, *(self.queue_attrs[name] for name in reversed(attr.ancestors))]

    @hookimpl
    def allocatable(self, ssn: Session, queue: QueueInfo, task: TaskInfo) -> bool:
        """Whether the queue (a leaf, Open) and each ancestor stay within real capability with the task."""
        if not queue.is_open() or not self.ready:
            return False
        attr = self.queue_attrs.get(queue.name)
        if attr is None:
            return True
        if self.hierarchical and attr.children:
            return False
        req = task.resreq
        for level in self._chain(attr):
            future = level.allocated.clone().add(req)
            if future.exceeding_dimensions(level.real_capability, req):
                return False
        return True

    @hookimpl
    def job_enqueueable(self, ssn: Session, job: JobInfo) -> Vote:
        """Admit a job whose minimum fits its queue's (and ancestors') real capability; reserve it when admitted.

        Like Volcano's, the reservation is made when the vote permits, so a
        later plugin rejecting the job does not undo it.
        """
        if not self.ready:
            return Vote.REJECT
        attr = self.queue_attrs.get(job.queue)
        if attr is None:
            return Vote.ABSTAIN
        if self.hierarchical and attr.children:
            return Vote.REJECT
        queue = ssn.queues.get(job.queue)
        if queue is None or not queue.is_open():
            return Vote.REJECT
        min_resources = job.pod_group.min_resources
        if min_resources is None:
            return Vote.PERMIT
        chain = self._chain(attr)
        for level in chain:
            wanted = min_resources.clone().add(level.allocated).add(level.inqueue).sub_unchecked(level.elastic)
            if wanted.exceeding_dimensions(level.real_capability, min_resources):
                return Vote.REJECT
        for level in chain if self.hierarchical else (attr,):
            level.inqueue.add(min_resources)
        return Vote.PERMIT

    @hookimpl
    def preemptive(self, ssn: Session, queue: QueueInfo, tasks: Sequence[TaskInfo]) -> bool:
        """Whether ``tasks`` may reclaim for the queue: within real capability, below deserved on some dimension."""
        if not self.ready or not queue.is_open():
            return False
        attr = self.queue_attrs.get(queue.name)
        if attr is None:
            return True
        total = Resource()
        for task in tasks:
            total.add(task.resreq)
        future = attr.allocated.clone().add(total)
        if future.exceeding_dimensions(attr.real_capability, total):
            return False
        if less_equal_partly_with_dimension_zero_filtered(future, attr.deserved, total):
            return True
        if self.hierarchical and self.ancestor_reclaim_level > 0:
            for depth in range(1, self.ancestor_reclaim_level + 1):
                name = _ancestor_at_depth(attr, depth)
                if name is None or name == ROOT_QUEUE:
                    continue
                ancestor = self.queue_attrs.get(name)
                if ancestor is None:
                    continue
                ancestor_future = ancestor.allocated.clone().add(total)
                if less_equal_partly_with_dimension_zero_filtered(ancestor_future, ancestor.deserved, total):
                    return True
        return False

    # ------------------------------------------------------------------ reclaim

    def _shares_ancestor(self, left: QueueAttr, right: QueueAttr) -> bool:
        """Whether two queues share a non-root ancestor within ``ancestorReclaimLevel`` levels."""
        level = self.ancestor_reclaim_level
        mine = {_ancestor_at_depth(left, d) for d in range(1, level + 1)}
        theirs = {_ancestor_at_depth(right, d) for d in range(1, level + 1)}
        return any(name is not None and name != ROOT_QUEUE and name in theirs for name in mine)

    def _ancestor_to_check(self, reclaimer: QueueAttr, victim: QueueAttr, depth: int) -> tuple[QueueAttr | None, bool]:
        """The victim queue's ancestor at ``depth`` when it differs from the reclaimer's, and whether to check it."""
        name = _ancestor_at_depth(victim, depth)
        if name is None or name == ROOT_QUEUE:
            return None, False
        if _ancestor_at_depth(reclaimer, depth) == name:
            return None, False
        return self.queue_attrs.get(name), True

    @hookimpl
    def reclaimable(self, ssn: Session, reclaimer: TaskInfo, reclaimees: Sequence[TaskInfo]) -> Sequence[TaskInfo]:
        """The candidates that may be taken from queues above their deserved, in eviction order.

        Candidates are ordered as the reclaim action evicts them. A candidate
        is skipped when it shares no requested resource with the reclaimer,
        or when its queue would fall below its guarantee. It is a victim when
        its queue's deserved does not cover any of its resources, or when the
        queue (running total, victims already chosen subtracted) is above
        deserved on one of its resources; in hierarchical mode with
        ``ancestorReclaimLevel`` the victim's ancestors up to that level must
        pass the same test.
        """
        if not self.ready:
            return []
        job = ssn.jobs.get(reclaimer.job)
        mine = self.queue_attrs.get(job.queue) if job is not None else None
        if mine is None:
            return []
        hierarchy_levels = self.ancestor_reclaim_level if self.hierarchical else 0
        victims: list[TaskInfo] = []
        allocations: dict[str, Resource] = {}
        for candidate in VictimOrder(ssn, reclaimer).sorted(reclaimees):
            found = self._running_total(ssn, candidate, allocations)
            if found is None:
                continue
            attr, allocated = found
            if not intersects(candidate.resreq, reclaimer.init_resreq, ignore_pods=True):
                continue
            if not attr.guarantee.less_equal(allocated.clone().sub_unchecked(candidate.resreq), _ZERO):
                continue
            if not _has_relevant_deserved(candidate, attr.deserved):
                if (
                    hierarchy_levels > 0
                    and self._shares_ancestor(mine, attr)
                    and not _has_relevant_deserved(reclaimer, mine.deserved)
                ):
                    continue
            elif not greater_partly_with_relevant_dimensions(allocated, attr.deserved, candidate.resreq):
                continue
            touched: list[Resource] = []
            eligible = True
            for depth in range(1, hierarchy_levels + 1):
                ancestor, check = self._ancestor_to_check(mine, attr, depth)
                if not check:
                    continue
                if ancestor is None:
                    eligible = False
                    break
                ancestor_allocated = allocations.get(ancestor.name)
                if ancestor_allocated is None:
                    ancestor_allocated = allocations[ancestor.name] = ancestor.allocated.clone()
                touched.append(ancestor_allocated)
                if not _has_relevant_deserved(candidate, ancestor.deserved):
                    continue
                if not greater_partly_with_relevant_dimensions(ancestor_allocated, ancestor.deserved, candidate.resreq):
                    eligible = False
                    break
            if not eligible:
                continue
            allocated.sub_unchecked(candidate.resreq)
            for ancestor_allocated in touched:
                ancestor_allocated.sub_unchecked(candidate.resreq)
            victims.append(candidate)
        return victims

    def _running_total(
        self, ssn: Session, candidate: TaskInfo, allocations: dict[str, Resource]
    ) -> tuple[QueueAttr, Resource] | None:
        """The candidate's queue and its allocated total less the victims chosen so far; ``None`` when unknown."""
        victim_job = ssn.jobs.get(candidate.job)
        attr = self.queue_attrs.get(victim_job.queue) if victim_job is not None else None
        if attr is None:
            return None
        allocated = allocations.get(attr.name)
        if allocated is None:
            allocated = allocations[attr.name] = attr.allocated.clone()
        return attr, allocated

    @hookimpl
    def unified_evictable(
        self, ssn: Session, context: EvictionContext, candidates: Sequence[TaskInfo]
    ) -> Sequence[TaskInfo]:
        """For ``gangreclaim``: the candidates their queues may give up, in the given order.

        ``gangpreempt`` gets every candidate (capacity does not filter
        preemption). For ``gangreclaim``, walking the candidates with a
        running total per victim queue (victims already chosen subtracted):
        a candidate is skipped when its queue would fall below its
        guarantee; it is a victim when its queue's deserved does not cover
        any of its resources, or when the queue is above deserved on one of
        its resources. Unlike ``reclaimable``, neither the reclaimer's
        resources nor the ancestors are checked, as in Volcano.

        .. versionadded:: 0.2
        """
        if context.kind is EvictionKind.GANG_PREEMPT:
            return candidates
        if not self.ready:
            return []
        victims: list[TaskInfo] = []
        allocations: dict[str, Resource] = {}
        for candidate in candidates:
            found = self._running_total(ssn, candidate, allocations)
            if found is None:
                continue
            attr, allocated = found
            if not attr.guarantee.less_equal(allocated.clone().sub_unchecked(candidate.resreq), _ZERO):
                continue
            if _has_relevant_deserved(candidate, attr.deserved) and not greater_partly_with_relevant_dimensions(
                allocated, attr.deserved, candidate.resreq
            ):
                continue
            allocated.sub_unchecked(candidate.resreq)
            victims.append(candidate)
        return victims

    # ------------------------------------------------------------------ events

    @hookimpl
    def on_allocate(self, ssn: Session, event: Event) -> None:
        """Add the task's request to its queue (updating the queue's share) and to its ancestors."""
        self._apply(ssn, event.task, 1)

    @hookimpl
    def on_deallocate(self, ssn: Session, event: Event) -> None:
        """Remove the task's request from its queue (updating the queue's share) and from its ancestors."""
        self._apply(ssn, event.task, -1)

    def _apply(self, ssn: Session, task: TaskInfo, sign: int) -> None:
        job = ssn.jobs.get(task.job)
        attr = self.queue_attrs.get(job.queue) if job is not None else None
        if attr is None:
            return
        levels = [attr]
        if self.hierarchical:
            levels.extend(self.queue_attrs[name] for name in attr.ancestors)
        for level in levels:
            if sign > 0:
                level.allocated.add(task.resreq)
            else:
                level.allocated.sub_unchecked(task.resreq)
        attr.update_share()
