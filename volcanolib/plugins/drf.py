"""drf: dominant resource fairness between jobs (and, optionally, queue hierarchies).

A job's *share* is its dominant share: the largest, over the cluster's
resources, of ``allocated[r] / total[r]``, where ``allocated`` sums the
requests of the job's tasks in an allocated status (and follows the session's
allocations, pipelines and evictions through the event hooks) and ``total``
is the session's total allocatable. Every resource with a total of at least
0.1 takes part, the ``pods`` count included.

* ``job_order``: the job with the lower share goes first.
* ``preemptable``: a candidate may be evicted when the preemptor's job, with
  the preemptor added, would still have a share lower than (or within 1e-6 of)
  the candidate's job after losing the candidate (and the candidates before it
  from the same job).

With ``enableHierarchy: true`` (hierarchical DRF), queues form a tree given by
their ``volcano.sh/hierarchy`` annotation (``root/eng/prod``) and weighted by
``volcano.sh/hierarchy-weights`` (``1/2/8``; weights below 1 count as 1).
Jobs are the leaves. An inner node's allocation is the sum of its children's,
where every child that is not saturated is scaled to the smallest such
child's share; a node is saturated when all its children are, a job when it
holds all it requests of some resource or requests a resource nobody can get
any more. Then:

* ``queue_order``: walking both queues' paths from the root, the first level
  that differs decides: an unsaturated node before a saturated one, else the
  lower ``share / weight``.
* ``reclaimable``: a candidate may be evicted when, with the reclaimer added
  and that candidate removed, the reclaimer's queue would still order first.

Namespace ordering (Volcano v1.7) is not provided: the current Volcano
removed it.
"""

from __future__ import annotations

from collections.abc import Iterable, Sequence
from typing import TYPE_CHECKING, ClassVar, Final

from volcanolib.api.resource import CPU, MEMORY, Resource
from volcanolib.framework.arguments import NoArguments
from volcanolib.framework.registry import hookimpl
from volcanolib.framework.traits import Traits

if TYPE_CHECKING:
    from volcanolib.api.cluster import SnapshotDelta
    from volcanolib.api.job import JobInfo
    from volcanolib.api.queue import QueueInfo
    from volcanolib.api.task import TaskInfo
    from volcanolib.framework.session import Session
    from volcanolib.framework.status import Event

__all__ = ["SHARE_DELTA", "DrfPlugin"]

#: Two shares closer than this are equal for preemption.
SHARE_DELTA: Final = 1e-6
_ROOT: Final = "root"


class _Attr:
    """A job's (or hierarchy node's) allocation and dominant share."""

    __slots__ = ("allocated", "dominant", "share")

    def __init__(self, allocated: Resource, share: float = 0.0, dominant: str = "") -> None:
        self.allocated = allocated
        self.share = share
        self.dominant = dominant


class _Node:
    """A node of the hierarchical-DRF tree; ``children`` is ``None`` for a job leaf."""

    __slots__ = ("attr", "children", "name", "request", "saturated", "weight")

    def __init__(
        self,
        name: str,
        attr: _Attr,
        request: Resource,
        weight: float,
        children: dict[str, _Node] | None,
    ) -> None:
        self.name = name
        self.attr = attr
        self.request = request
        self.weight = weight
        self.children = children
        self.saturated = False

    def clone(self) -> _Node:
        """A deep copy of this subtree (allocations copied, requests shared: they are read only)."""
        attr = _Attr(self.attr.allocated.clone(), self.attr.share, self.attr.dominant)
        children = None if self.children is None else {k: c.clone() for k, c in self.children.items()}
        node = _Node(self.name, attr, self.request, self.weight, children)
        node.saturated = self.saturated
        return node


def _new_root() -> _Node:
    return _Node(_ROOT, _Attr(Resource()), Resource(), 1.0, {})


def _level_weight(weights: list[str], level: int) -> float:
    try:
        value = float(weights[level])
    except (IndexError, ValueError):
        value = 0.0
    return value if value >= 1 else 1.0


class _QueueKey:
    """A queue's hierarchical-DRF sort key; compares through the live tree, like the comparator."""

    __slots__ = ("plugin", "queue")

    def __init__(self, plugin: DrfPlugin, queue: QueueInfo) -> None:
        self.plugin = plugin
        self.queue = queue

    def _cmp(self, other: object) -> float:
        if not isinstance(other, _QueueKey):
            raise TypeError(f"cannot compare a hierarchical drf key with {other!r}")
        return self.plugin.compare_queue_shares(self.plugin.root, self.queue, other.queue)

    def __eq__(self, other: object) -> bool:
        return self._cmp(other) == 0

    def __lt__(self, other: object) -> bool:
        return self._cmp(other) < 0

    def __gt__(self, other: object) -> bool:
        return self._cmp(other) > 0

    def __le__(self, other: object) -> bool:
        return self._cmp(other) <= 0

    def __ge__(self, other: object) -> bool:
        return self._cmp(other) >= 0

    __hash__ = None  # type: ignore[assignment]


class DrfPlugin:
    """Dominant resource fairness: jobs with less of the cluster go first and may preempt.

    Takes no arguments; ``enableHierarchy: true`` in the plugin's
    configuration entry switches on hierarchical DRF across queues.
    """

    name: ClassVar[str] = "drf"
    Arguments: ClassVar[type[NoArguments]] = NoArguments
    #: No clock; the job order key reads only the job's own dominant share; no job status written.
    traits: ClassVar[Traits] = Traits(clock_free=True, local_job_keys=True, status_through_session=True)

    def __init__(self, arguments: NoArguments) -> None:
        self.arguments = arguments
        self.total = Resource()
        self._total_names: list[str] = []
        self._total_dims: list[tuple[str, float]] = []
        # The same, split: cpu's and memory's caps (0.0 when not listed), then the scalars.
        self._cpu_cap = 0.0
        self._memory_cap = 0.0
        self._scalar_dims: list[tuple[str, float]] = []
        self.jobs: dict[str, _Attr] = {}
        self.hierarchy = False
        self.total_allocated = Resource()
        self.root = _new_root()

    # ------------------------------------------------------------------ shares

    def calculate_share(self, allocated: Resource) -> tuple[str, float]:
        """The dominant resource and the dominant share of an allocation against the cluster total."""
        # The cluster total lists only dimensions of at least MIN_RESOURCE: no cap is 0. Dimensions in
        # the total's order (cpu, memory, scalars), read as attributes: this runs on every event.
        best = 0.0
        dominant = ""
        cap = self._cpu_cap
        if cap:
            value = allocated.milli_cpu / cap
            if value > best:
                best = value
                dominant = CPU
        cap = self._memory_cap
        if cap:
            value = allocated.memory / cap
            if value > best:
                best = value
                dominant = MEMORY
        if self._scalar_dims:
            scalars = allocated.scalars
            for name, cap in self._scalar_dims:
                value = scalars.get(name, 0) / cap
                if value > best:
                    best = value
                    dominant = name
        return dominant, best

    def _update_share(self, attr: _Attr) -> None:
        attr.dominant, attr.share = self.calculate_share(attr.allocated)

    def job_share(self, job_uid: str) -> float:
        """A job's current dominant share (0 for a job this session does not know)."""
        attr = self.jobs.get(job_uid)
        return attr.share if attr is not None else 0.0

    def job_shares(self) -> dict[str, float]:
        """Each job's dominant share, by job uid (Volcano's ``job_share`` metric)."""
        return {uid: attr.share for uid, attr in self.jobs.items()}

    def namespace_shares(self) -> dict[str, float]:
        """Each namespace's dominant share: of its jobs' allocations added up (``namespace_share``)."""
        sums: dict[str, Resource] = {}
        for uid, attr in self.jobs.items():
            namespace = uid.partition("/")[0]
            total = sums.get(namespace)
            if total is None:
                sums[namespace] = attr.allocated.clone()
            else:
                total.add(attr.allocated)
        return {namespace: self.calculate_share(total)[1] for namespace, total in sums.items()}

    # ------------------------------------------------------------------ lifecycle

    @hookimpl
    def on_session_open(self, ssn: Session) -> None:
        """Compute every job's allocation and share (and the queue tree with hierarchy on)."""
        self.total = ssn.total_resource.clone()
        self._total_names = self.total.names()
        self._total_dims = [(name, self.total.get(name)) for name in self._total_names]
        dims = dict(self._total_dims)
        self._cpu_cap = dims.pop(CPU, 0.0)
        self._memory_cap = dims.pop(MEMORY, 0.0)
        self._scalar_dims = list(dims.items())
        self.jobs = {}
        self.hierarchy = ssn.hierarchy_enabled(self.name)
        self.total_allocated = Resource()
        self.root = _new_root()
        for job in ssn.jobs.values():
            attr = _Attr(job.allocated.clone())
            self._update_share(attr)
            self.jobs[job.uid] = attr
            if self.hierarchy:
                self.total_allocated.add(attr.allocated)
                self._insert_job(self.root, job, attr, ssn.queues.get(job.queue))
        if self.hierarchy:
            self._refresh_tree(self.root, self.total_allocated)

    @hookimpl
    def on_session_resume(self, ssn: Session, delta: SnapshotDelta) -> None:
        """Open as :meth:`on_session_open` would, computing again only the shares of the jobs the delta names.

        Opens afresh with ``enableHierarchy`` or when the cluster's total changed (every share would change).
        """
        total = ssn.total_resource
        if (
            self.hierarchy
            or ssn.hierarchy_enabled(self.name)
            or [(n, total.get(n)) for n in total.names()] != [(name, value) for name, value in self._total_dims]
        ):
            self.on_session_open(ssn)
            return
        kept = self.jobs
        jobs = ssn.jobs
        for uid in delta.jobs:
            job = jobs.get(uid)
            if job is None:
                kept.pop(uid, None)
            else:
                attr = _Attr(job.allocated.clone())
                self._update_share(attr)
                kept[uid] = attr

    def kept_state(self) -> dict[str, tuple[Resource, str, float]]:
        """What the plugin keeps between sessions, as it stands: each job's allocation, dominant resource and share."""
        return {uid: (attr.allocated, attr.dominant, attr.share) for uid, attr in self.jobs.items()}

    @hookimpl
    def on_allocate(self, ssn: Session, event: Event) -> None:
        """Add the task's request to its job's allocation and update the share."""
        task = event.task
        attr = self.jobs.get(task.job)
        if attr is not None:
            # Called twice per placement or eviction: the share is updated here, the tree in _move.
            attr.dominant, attr.share = self.calculate_share(attr.allocated.add(task.resreq))
            if self.hierarchy:
                self._move(ssn, task, attr, 1)

    @hookimpl
    def on_deallocate(self, ssn: Session, event: Event) -> None:
        """Take the task's request off its job's allocation and update the share."""
        task = event.task
        attr = self.jobs.get(task.job)
        if attr is not None:
            attr.dominant, attr.share = self.calculate_share(attr.allocated.sub_unchecked(task.resreq))
            if self.hierarchy:
                self._move(ssn, task, attr, -1)

    def _move(self, ssn: Session, task: TaskInfo, attr: _Attr, sign: int) -> None:
        """The hierarchy's part of an event, once the job's own allocation and share are updated."""
        job = ssn.jobs.get(task.job)
        if job is None:
            return
        if sign > 0:
            self.total_allocated.add(task.resreq)
        else:
            self.total_allocated.sub_unchecked(task.resreq)
        self._insert_job(self.root, job, attr, ssn.queues.get(job.queue))
        self._refresh_tree(self.root, self.total_allocated)

    # ------------------------------------------------------------------ job order and preemption

    @hookimpl
    def job_order(self, ssn: Session, left: JobInfo, right: JobInfo) -> int:
        """The job with the lower dominant share goes first; equal shares abstain."""
        ls = self.job_share(left.uid)
        rs = self.job_share(right.uid)
        if ls == rs:
            return 0
        return -1 if ls < rs else 1

    @hookimpl
    def job_order_key(self, ssn: Session, job: JobInfo) -> float:
        """Key form of :meth:`job_order`: the job's dominant share when it is queued."""
        return self.job_share(job.uid)

    @hookimpl
    def preemptable(self, ssn: Session, preemptor: TaskInfo, preemptees: Sequence[TaskInfo]) -> list[TaskInfo]:
        """Candidates whose job, without them, would keep a share at least the preemptor job's.

        The preemptor's job share is taken with the preemptor's request
        added. Candidates of one job are removed cumulatively, in order.
        """
        own = self.jobs.get(preemptor.job)
        mine = own.allocated.clone() if own is not None else Resource()
        _, ls = self.calculate_share(mine.add(preemptor.resreq))
        remaining: dict[str, Resource] = {}
        victims = []
        for task in preemptees:
            alloc = remaining.get(task.job)
            if alloc is None:
                attr = self.jobs.get(task.job)
                alloc = remaining[task.job] = attr.allocated.clone() if attr is not None else Resource()
            alloc.sub_unchecked(task.resreq)
            _, rs = self.calculate_share(alloc)
            if ls < rs or abs(ls - rs) <= SHARE_DELTA:
                victims.append(task)
        return victims

    # ------------------------------------------------------------------ hierarchical drf

    def _insert_job(self, root: _Node, job: JobInfo, attr: _Attr, queue: QueueInfo | None) -> None:
        """Place (or replace) a job's leaf under its queue's path, creating missing levels."""
        paths = (queue.hierarchy if queue is not None else "").split("/")
        weights = (queue.hierarchy_weights if queue is not None else "").split("/")
        node = root
        for level in range(1, len(paths)):
            children = node.children
            assert children is not None
            child = children.get(paths[level])
            if child is None:
                child = _Node(paths[level], _Attr(Resource()), Resource(), _level_weight(weights, level), {})
                children[paths[level]] = child
            node = child
        assert node.children is not None
        node.children[job.uid] = _Node(job.uid, attr, job.total_request.clone(), 1.0, None)

    def _refresh_tree(self, root: _Node, total_allocated: Resource) -> None:
        """Recompute saturation and allocations bottom-up, given the cluster-wide allocation."""
        total = self.total
        demanding = {n for n in self._total_names if total_allocated.get(n) < total.get(n)}
        self._refresh(root, demanding)

    def _refresh(self, node: _Node, demanding: set[str]) -> None:
        children = node.children
        if children is None:
            node.saturated = _saturated(node.attr.allocated, node.request, demanding)
            return
        smallest = 1.0
        for child in children.values():
            self._refresh(child, demanding)
            if child.attr.share != 0 and not child.saturated:
                _, child_share = self.calculate_share(child.attr.allocated)
                smallest = min(smallest, child_share)
        allocated = Resource()
        saturated = True
        for child in children.values():
            if not child.saturated:
                saturated = False
            if child.attr.share != 0:
                if child.saturated:
                    allocated.add(child.attr.allocated)
                else:
                    allocated.add(child.attr.allocated.clone().multi(smallest / child.attr.share))
        node.attr.allocated = allocated
        self._update_share(node.attr)
        node.saturated = saturated

    def compare_queue_shares(self, root: _Node, left: QueueInfo, right: QueueInfo) -> float:
        """Compare two queues level by level down their paths; negative when ``left`` goes first."""
        lpaths = left.hierarchy.split("/")
        rpaths = right.hierarchy.split("/")
        depth = min(len(lpaths), len(rpaths))
        lnode: _Node | None = root
        rnode: _Node | None = root
        for level in range(depth):
            if lnode is None or rnode is None:
                return 0.0
            if not lnode.saturated and rnode.saturated:
                return -1.0
            if lnode.saturated and not rnode.saturated:
                return 1.0
            lvalue = lnode.attr.share / lnode.weight
            rvalue = rnode.attr.share / rnode.weight
            if lvalue != rvalue:
                return lvalue - rvalue
            if level < depth - 1:
                lnode = (lnode.children or {}).get(lpaths[level + 1])
                rnode = (rnode.children or {}).get(rpaths[level + 1])
        return 0.0

    @hookimpl
    def queue_order(self, ssn: Session, left: QueueInfo, right: QueueInfo) -> int:
        """With hierarchy on, the queue whose path is less served goes first; otherwise abstain."""
        if not self.hierarchy:
            return 0
        diff = self.compare_queue_shares(self.root, left, right)
        return -1 if diff < 0 else (1 if diff > 0 else 0)

    @hookimpl
    def queue_order_key(self, ssn: Session, queue: QueueInfo) -> object:
        """Key form of :meth:`queue_order`: a constant without hierarchy, else a key comparing through the tree."""
        if not self.hierarchy:
            return 0
        return _QueueKey(self, queue)

    @hookimpl
    def reclaimable(self, ssn: Session, reclaimer: TaskInfo, reclaimees: Sequence[TaskInfo]) -> list[TaskInfo] | None:
        """With hierarchy on, candidates whose removal keeps the reclaimer's queue ahead; otherwise abstain.

        Each candidate is tried on its own against a copy of the tree in
        which the reclaimer's request has been added to its job.
        """
        if not self.hierarchy:
            return None
        ljob = ssn.jobs.get(reclaimer.job)
        lqueue = ssn.queues.get(ljob.queue) if ljob is not None else None
        if ljob is None or lqueue is None:
            return []
        root = self.root.clone()
        total_allocated = self.total_allocated.clone().add(reclaimer.resreq)
        lattr = _Attr(self._allocated_of(ljob.uid).add(reclaimer.resreq))
        self._update_share(lattr)
        self._insert_job(root, ljob, lattr, lqueue)
        self._refresh_tree(root, total_allocated)
        victims = []
        for task in reclaimees:
            rjob = ssn.jobs.get(task.job)
            rqueue = ssn.queues.get(rjob.queue) if rjob is not None else None
            if rjob is None or rqueue is None:
                continue
            total_allocated.sub_unchecked(task.resreq)
            rattr = _Attr(self._allocated_of(rjob.uid).sub_unchecked(task.resreq))
            self._update_share(rattr)
            self._insert_job(root, rjob, rattr, rqueue)
            self._refresh_tree(root, total_allocated)
            order = self.compare_queue_shares(root, lqueue, rqueue)
            # Put the candidate back before trying the next one.
            total_allocated.add(task.resreq)
            rattr.allocated.add(task.resreq)
            self._update_share(rattr)
            self._refresh_tree(root, total_allocated)
            if order < 0:
                victims.append(task)
        return victims

    def _allocated_of(self, job_uid: str) -> Resource:
        attr = self.jobs.get(job_uid)
        return attr.allocated.clone() if attr is not None else Resource()

    # ------------------------------------------------------------------ inspection

    def queue_tree(self) -> Iterable[tuple[str, float, bool]]:
        """``(path, share, saturated)`` of every node of the hierarchy tree (hierarchy on only)."""

        def walk(node: _Node, path: str) -> Iterable[tuple[str, float, bool]]:
            yield path, node.attr.share, node.saturated
            for key, child in (node.children or {}).items():
                yield from walk(child, f"{path}/{key}")

        if self.hierarchy:
            yield from walk(self.root, _ROOT)


def _saturated(allocated: Resource, request: Resource, demanding: set[str]) -> bool:
    """Whether a job holds all it asks for of some resource, or asks for one nobody can get."""
    for name in allocated.names():
        want = request.get(name)
        if want == 0:
            continue
        have = allocated.get(name)
        if have != 0 and have >= want:
            return True
        if name not in demanding:
            return True
    return False
