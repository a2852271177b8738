"""proportion: share the cluster between queues by weight, within capability and guarantee.

At session open, every queue that has at least one job in the session gets:

``capability``
    ``spec.capability`` (a cpu or memory value of 0 means unbounded; a
    resource it does not list is unbounded).
``guarantee``
    ``spec.guarantee.resource`` (empty when unset).
``real capability``
    What the queue could ever get: the cluster total minus every queue's
    guarantee (never below zero), plus its own guarantee, then capped by its
    capability on the dimensions the capability lists.
``allocated`` / ``request``
    The requests of its tasks in an allocated status; those plus its Pending
    tasks' requests.
``inqueue`` / ``elastic``
    The minimum resources reserved by admitted jobs not yet running them, and
    what running jobs hold beyond their minimum resources (used by enqueue).
``deserved``
    The queue's fair share, computed by weighted water-filling: every round
    hands each unsatisfied queue ``remaining * weight / total weight`` more,
    caps it by its real capability and its request (resources it does not
    request get 0) and raises it to its guarantee; a queue whose request is
    covered, or whose deserved did not change, leaves the loop; the loop ends
    when nothing remains or a round changes nothing.
``share``
    The largest ``allocated[r] / deserved[r]`` over the resources deserved
    lists; it follows the session's allocations and evictions.

Hooks: ``queue_order`` (higher ``spec.priority`` first, then the lower share),
``overused`` (deserved reached in every resource it lists, ``pods``
included), ``allocatable`` and ``preemptive`` (the queue is Open and
``allocated + request <= deserved`` on every resource the tasks request, strictly),
``reclaimable`` (tasks of queues above their deserved), ``job_enqueueable``
(the queue is Open and ``minResources + allocated + inqueue - elastic`` stays
within the real capability on the resources ``minResources`` lists; a
permitting vote reserves the job's minimum resources).
Queues without jobs have no state: the plugin abstains for them.

The plugin takes no arguments.
"""

from __future__ import annotations

from collections.abc import Sequence
from typing import TYPE_CHECKING, ClassVar, Final

from volcanolib.api.job import JobInfo, PodGroupPhase
from volcanolib.api.queue import QueueFigures
from volcanolib.api.resource import INFINITE, MIN_RESOURCE, Mode, Resource, exceeded_part, res_max
from volcanolib.api.task import ALLOCATED_STATUSES, TaskStatus
from volcanolib.framework.arguments import NoArguments
from volcanolib.framework.registry import hookimpl
from volcanolib.framework.shortfall import ALLOCATE, ENQUEUE, QueueShortfall, needed_request
from volcanolib.framework.status import Vote
from volcanolib.framework.sums import JobSums
from volcanolib.framework.traits import Traits

if TYPE_CHECKING:
    from volcanolib.api.cluster import SnapshotDelta
    from volcanolib.api.queue import QueueInfo
    from volcanolib.api.task import TaskInfo
    from volcanolib.framework.session import Session
    from volcanolib.framework.status import Event

__all__ = ["QueueAttr", "ProportionPlugin"]

_ZERO: Final = Mode.ZERO
_INF: Final = Mode.INFINITY
_PENDING: Final = TaskStatus.PENDING
_MAX_ROUNDS: Final = 100_000


class QueueAttr:
    """The proportion plugin's view of one queue during a session."""

    __slots__ = (
        "allocated",
        "capability",
        "deserved",
        "elastic",
        "guarantee",
        "inqueue",
        "name",
        "real_capability",
        "request",
        "share",
        "weight",
    )

    def __init__(self, queue: QueueInfo, real_capability: Resource, capability: Resource | None) -> None:
        self.name = queue.name
        self.weight = queue.weight
        self.capability = capability
        self.guarantee = queue.guarantee.clone()
        self.real_capability = real_capability
        self.allocated = Resource()
        self.request = Resource()
        self.inqueue = Resource()
        self.elastic = Resource()
        self.deserved = Resource()
        self.share = 0.0

    def update_share(self) -> None:
        """Recompute :attr:`share` from :attr:`allocated` and :attr:`deserved`."""
        # Over the dimensions deserved lists with at least MIN_RESOURCE (so never a zero divisor).
        allocated = self.allocated
        deserved = self.deserved
        best = 0.0
        cap = deserved.milli_cpu
        if cap >= MIN_RESOURCE:
            value = allocated.milli_cpu / cap
            if value > best:
                best = value
        cap = deserved.memory
        if cap >= MIN_RESOURCE:
            value = allocated.memory / cap
            if value > best:
                best = value
        if deserved.scalars:
            used = allocated.scalars
            for name, cap in deserved.scalars.items():
                if cap >= MIN_RESOURCE:
                    value = used.get(name, 0) / cap
                    if value > best:
                        best = value
        self.share = best


def _capability(queue: QueueInfo) -> Resource | None:
    cap = queue.capability
    if cap is None:
        return None
    cap = cap.clone()
    if cap.milli_cpu <= 0:
        cap.milli_cpu = INFINITE
    if cap.memory <= 0:
        cap.memory = INFINITE
    return cap


def _allocated_task_num(job: JobInfo) -> int:
    return job.count(ALLOCATED_STATUSES)


class ProportionPlugin:
    """Weighted fair share between queues, with capability limits and guarantees.

    After :meth:`on_session_open`, :attr:`queue_attrs` holds the state of
    every queue that has jobs; :meth:`queue_view` describes one for people.
    """

    name: ClassVar[str] = "proportion"
    Arguments: ClassVar[type[NoArguments]] = NoArguments
    #: See docs/incremental.md: no clock; job status, if any, only through the session.
    traits: ClassVar[Traits] = Traits(clock_free=True, status_through_session=True)

    def __init__(self, arguments: NoArguments) -> None:
        self.arguments = arguments
        self.total = Resource()
        self.total_guarantee = Resource()
        #: Per-queue state, by queue name (only queues with jobs in the session).
        self.queue_attrs: dict[str, QueueAttr] = {}
        # What the last session opened on, kept for the next: per queue, the sums of its jobs'
        # allocated, request, inqueue and elastic resources, each job a part.
        self._sums = JobSums(4)
        # Each job's queue state, by job uid, as the events of this session found it (a job keeps its queue).
        self._job_attrs: dict[str, QueueAttr | None] = {}

    # ------------------------------------------------------------------ session open

    @hookimpl
    def on_session_open(self, ssn: Session) -> None:
        """Build every queue's state from the snapshot and compute the deserved shares."""
        self._sums = JobSums.kept_or_afresh(None, None, ssn.jobs, ssn.queues, _job_parts, width=4)
        self._settle(ssn)

    @hookimpl
    def on_session_resume(self, ssn: Session, delta: SnapshotDelta) -> None:
        """Open as :meth:`on_session_open` would, summing again only the jobs the delta names.

        Opens afresh when a queue changed.
        """
        kept = None if delta.queues else self._sums
        self._sums = JobSums.kept_or_afresh(kept, delta.jobs, ssn.jobs, ssn.queues, _job_parts, width=4)
        self._settle(ssn)

    def _settle(self, ssn: Session) -> None:
        """Every queue's state from the kept sums (or, when a sum could depend on the order, job by job)."""
        self.total = ssn.total_resource.clone()
        self.total_guarantee = Resource()
        for queue in ssn.queues.values():
            self.total_guarantee.add(queue.guarantee)
        self.queue_attrs = {}
        self._job_attrs = {}
        sums = self._sums
        if sums.exact:
            # Exact sums: the same as adding job by job. Queues in the order their first job comes.
            for name, (allocated, request, inqueue, elastic) in sums.totals(ssn.jobs.values()):
                attr = self.queue_attrs[name] = self._new_attr(ssn.queues[name])
                attr.allocated = allocated.clone()
                attr.request = request.clone()
                attr.inqueue = inqueue.clone()
                attr.elastic = elastic.clone()
        else:
            for job in ssn.jobs.values():
                found = self.queue_attrs.get(job.queue)
                if found is None:
                    job_queue = ssn.queues.get(job.queue)
                    if job_queue is None:
                        continue
                    found = self.queue_attrs[job.queue] = self._new_attr(job_queue)
                self._add_job(found, job)
        self._water_fill()

    def kept_state(self) -> list[tuple[str, Resource, Resource, Resource, Resource, Resource, Resource]]:
        """What the plugin keeps between sessions, as it stands: each queue's sums and deserved resources, in order."""
        return [
            (name, attr.allocated, attr.request, attr.inqueue, attr.elastic, attr.deserved, attr.real_capability)
            for name, attr in self.queue_attrs.items()
        ]

    def _new_attr(self, queue: QueueInfo) -> QueueAttr:
        capability = _capability(queue)
        real = exceeded_part(self.total, self.total_guarantee).add(queue.guarantee)
        if capability is not None:
            real.min_dimension(capability, _INF)
        return QueueAttr(queue, real, capability)

    @staticmethod
    def _add_job(attr: QueueAttr, job: JobInfo) -> None:
        # The job keeps the sum of its allocated tasks' requests.
        attr.allocated.add(job.allocated)
        attr.request.add(job.allocated)
        pending = job.task_status_index.get(_PENDING)
        if pending:
            for task in pending.values():
                attr.request.add(task.resreq)
        reserved = _reserved(job)
        if reserved is not None:
            attr.inqueue.add(reserved)
        attr.elastic.add(job.elastic_resources())

    def _water_fill(self) -> None:
        attrs = list(self.queue_attrs.values())
        remaining = self.total.clone()
        meet: set[str] = set()
        # Every round either settles a queue or hands out part of what remains,
        # so the loop ends; the bound only guards against pathological inputs.
        for _ in range(_MAX_ROUNDS):
            total_weight = sum(a.weight for a in attrs if a.name not in meet)
            if total_weight == 0:
                break
            before = remaining.clone()
            increased = Resource()
            decreased = Resource()
            for attr in attrs:
                if attr.name in meet:
                    continue
                old = attr.deserved.clone()
                attr.deserved.add(remaining.clone().multi(attr.weight / total_weight))
                attr.deserved.min_dimension(attr.real_capability, _INF)
                attr.deserved.min_dimension(attr.request, _ZERO)
                attr.deserved = res_max(attr.deserved, attr.guarantee)
                attr.update_share()
                if attr.request.less_equal(attr.deserved, _ZERO) or attr.deserved == old:
                    meet.add(attr.name)
                inc, dec = attr.deserved.diff(old, _ZERO)
                increased.add(inc)
                decreased.add(dec)
            remaining.sub_unchecked(increased).add(decreased)
            _clamp_at_zero(remaining)
            if remaining.is_empty() or remaining == before:
                break

    # ------------------------------------------------------------------ inspection

    def queue_view(self, queue_name: str) -> dict[str, object] | None:
        """What this plugin thinks of a queue, for explanations; ``None`` when the queue has no jobs.

        Keys: ``deserved``, ``allocated``, ``request``, ``inqueue``,
        ``elastic``, ``capability`` (``None`` when unset), ``real_capability``,
        ``guarantee`` (each as Kubernetes quantities), ``share`` and
        ``overused``.
        """
        attr = self.queue_attrs.get(queue_name)
        if attr is None:
            return None
        return {
            "deserved": attr.deserved.to_quantities(),
            "allocated": attr.allocated.to_quantities(),
            "request": attr.request.to_quantities(),
            "inqueue": attr.inqueue.to_quantities(),
            "elastic": attr.elastic.to_quantities(),
            "capability": attr.capability.to_quantities() if attr.capability is not None else None,
            "real_capability": attr.real_capability.to_quantities(),
            "guarantee": attr.guarantee.to_quantities(),
            "share": attr.share,
            "overused": attr.deserved.less_equal(attr.allocated, _ZERO),
        }

    def queue_shortfall(self, ssn: Session, job: JobInfo) -> QueueShortfall | None:
        """By how much the job's queue is short of room for it, by this plugin's rules, or ``None``.

        A PodGroup still Pending with ``minResources``: as :meth:`job_enqueueable`
        checks it, ``minResources + allocated + inqueue - elastic`` against the
        real capability (named ``capability`` where the two agree). An
        admitted job with pending pods: as :meth:`allocatable` checks each
        pod, ``allocated`` plus the pods the gang still needs against
        ``deserved``. See :mod:`volcanolib.framework.shortfall`.

        .. versionadded:: 0.2
        """
        attr = self.queue_attrs.get(job.queue)
        queue = ssn.queues.get(job.queue)
        if attr is None or queue is None or not queue.is_open():
            return None
        min_resources = job.pod_group.min_resources
        if job.pod_group.phase is PodGroupPhase.PENDING:
            if min_resources is None:
                return None
            held = attr.allocated.clone().add(attr.inqueue).sub_unchecked(attr.elastic)
            real = attr.real_capability
            capability = attr.capability
            same = capability is not None and all(real.get(n) == capability.get(n) for n in min_resources.names())
            limit = "capability" if same else "realCapability"
            return QueueShortfall.check(self.name, job.queue, ENQUEUE, limit, real, held, min_resources)
        if not job.task_status_index.get(_PENDING):
            return None
        need = needed_request(job)
        return QueueShortfall.check(self.name, job.queue, ALLOCATE, "deserved", attr.deserved, attr.allocated, need)

    def queue_figures(self) -> list[QueueFigures]:
        """Every queue with jobs, as Volcano's proportion plugin reports it in its metrics (:class:`QueueFigures`)."""
        return [
            QueueFigures.of(attr, weight=attr.weight, capability=attr.capability) for attr in self.queue_attrs.values()
        ]

    # ------------------------------------------------------------------ order

    def _share(self, queue: QueueInfo) -> float:
        attr = self.queue_attrs.get(queue.name)
        return attr.share if attr is not None else 0.0

    @hookimpl
    def queue_order(self, ssn: Session, left: QueueInfo, right: QueueInfo) -> int:
        """The queue with the higher ``spec.priority`` goes first, then the one with the lower share."""
        if left.priority != right.priority:
            return -1 if left.priority > right.priority else 1
        ls = self._share(left)
        rs = self._share(right)
        if ls == rs:
            return 0
        return -1 if ls < rs else 1

    @hookimpl
    def queue_order_key(self, ssn: Session, queue: QueueInfo) -> tuple[int, float]:
        """Key form of :meth:`queue_order`: ``(-priority, share)``."""
        return (-queue.priority, self._share(queue))

    # ------------------------------------------------------------------ quota checks

    @hookimpl
    def overused(self, ssn: Session, queue: QueueInfo) -> bool:
        """Whether the queue's allocation has reached its deserved share in every resource deserved lists."""
        attr = self.queue_attrs.get(queue.name)
        if attr is None:
            return False
        return attr.deserved.less_equal(attr.allocated, _ZERO)

    def _fits(self, queue: QueueInfo, request: Resource) -> bool:
        if not queue.is_open():
            return False
        attr = self.queue_attrs.get(queue.name)
        if attr is None:
            return True
        return attr.allocated.fits_with(request, attr.deserved)

    @hookimpl
    def allocatable(self, ssn: Session, queue: QueueInfo, task: TaskInfo) -> bool:
        """Whether the queue is Open and ``allocated + request`` stays within deserved.

        Only the resources the task requests are compared (``pods`` never),
        strictly: reaching deserved exactly is allowed, exceeding it is not.
        """
        return self._fits(queue, task.resreq)

    @hookimpl
    def preemptive(self, ssn: Session, queue: QueueInfo, tasks: Sequence[TaskInfo]) -> bool:
        """The :meth:`allocatable` check for ``tasks`` together: a reclaimer may only take up to its deserved.

        The queue must be Open and ``allocated + sum of the requests`` must
        stay within deserved on every resource the tasks request, strictly.
        """
        if len(tasks) == 1:
            return self._fits(queue, tasks[0].resreq)
        request = Resource()
        for task in tasks:
            request.add(task.resreq)
        return self._fits(queue, request)

    @hookimpl
    def reclaimable(self, ssn: Session, reclaimer: TaskInfo, reclaimees: Sequence[TaskInfo]) -> list[TaskInfo]:
        """Candidates from queues whose allocation exceeds their deserved share.

        Candidates are taken in order; a victim's request is taken off a
        running copy of its queue's allocation, so a queue gives up tasks
        only until it is back within its deserved share.
        """
        jobs = ssn.jobs
        running: dict[str, Resource] = {}
        victims = []
        for task in reclaimees:
            job = jobs.get(task.job)
            if job is None:
                continue
            attr = self.queue_attrs.get(job.queue)
            if attr is None:
                continue
            allocated = running.get(job.queue)
            if allocated is None:
                allocated = running[job.queue] = attr.allocated.clone()
            if not allocated.less_equal(attr.deserved, _ZERO):
                allocated.sub_unchecked(task.resreq)
                victims.append(task)
        return victims

    # ------------------------------------------------------------------ admission

    @hookimpl
    def job_enqueueable(self, ssn: Session, job: JobInfo) -> Vote:
        """Admit a job when its queue is Open and its minimum resources fit the queue's real capability.

        A job without ``minResources`` is always admitted (to an Open queue).
        The check is ``minResources + allocated + inqueue - elastic <= real
        capability`` on the resources ``minResources`` requests, strictly.
        Like Volcano's, a permitting vote reserves ``minResources`` in the
        queue's ``inqueue`` at once: a job another plugin rejects later in the
        tier keeps it reserved, and a job an earlier tier admitted (so this
        vote is not asked) reserves nothing here.
        """
        queue = ssn.queues.get(job.queue)
        if queue is None:
            return Vote.ABSTAIN
        if not queue.is_open():
            return Vote.REJECT
        attr = self.queue_attrs.get(job.queue)
        min_resources = job.pod_group.min_resources
        if attr is None or min_resources is None:
            return Vote.PERMIT
        future = min_resources.clone().add(attr.allocated).add(attr.inqueue).sub_unchecked(attr.elastic)
        if future.less_equal_with_dimension(attr.real_capability, min_resources):
            attr.inqueue.add(min_resources)
            return Vote.PERMIT
        return Vote.REJECT

    # ------------------------------------------------------------------ events

    def _queue_attr(self, ssn: Session, job_uid: str) -> QueueAttr | None:
        """The state of a job's queue (``None``: the job or its queue has none), remembered for the session."""
        job = ssn.jobs.get(job_uid)
        attr = self.queue_attrs.get(job.queue) if job is not None else None
        self._job_attrs[job_uid] = attr
        return attr

    @hookimpl
    def on_allocate(self, ssn: Session, event: Event) -> None:
        """Add the task's request to its queue's allocation and update the share."""
        task = event.task
        job_attrs = self._job_attrs
        attr = job_attrs[task.job] if task.job in job_attrs else self._queue_attr(ssn, task.job)
        if attr is not None:
            attr.allocated.add(task.resreq)
            attr.update_share()

    @hookimpl
    def on_deallocate(self, ssn: Session, event: Event) -> None:
        """Take the task's request off its queue's allocation and update the share."""
        task = event.task
        job_attrs = self._job_attrs
        attr = job_attrs[task.job] if task.job in job_attrs else self._queue_attr(ssn, task.job)
        if attr is not None:
            attr.allocated.sub_unchecked(task.resreq)
            attr.update_share()


def _job_parts(job: JobInfo) -> tuple[Resource, Resource, Resource | None, Resource | None]:
    """A job's parts of its queue's kept sums: allocated, request, inqueue and elastic (``None``: nothing to add)."""
    allocated = job.allocated.clone()
    request = allocated
    pending = job.task_status_index.get(_PENDING)
    if pending:
        request = allocated.clone()
        for task in pending.values():
            request.add(task.resreq)
    # What job.elastic_resources() gives, without copying the minimum first.
    minimum = job.pod_group.min_resources
    elastic = exceeded_part(job.allocated, minimum if minimum is not None else Resource())
    return allocated, request, _something(_reserved(job)), _something(elastic)


def _reserved(job: JobInfo) -> Resource | None:
    """What an admitted job still reserves in its queue (``None``: nothing)."""
    phase = job.pod_group.phase
    min_resources = job.pod_group.min_resources
    if min_resources is None:
        return None
    if phase is PodGroupPhase.INQUEUE or (
        phase is PodGroupPhase.RUNNING and _allocated_task_num(job) >= job.min_available
    ):
        # Only what the admitted job has not placed yet is still reserved.
        return exceeded_part(min_resources, job.allocated)
    return None


def _something(res: Resource | None) -> Resource | None:
    """``res``, or ``None`` when adding it would change nothing (no amount and no resource named)."""
    if res is None or not (res.milli_cpu or res.memory or res.scalars):
        return None
    return res


def _clamp_at_zero(res: Resource) -> None:
    res.milli_cpu = max(res.milli_cpu, 0.0)
    res.memory = max(res.memory, 0.0)
    for name, value in res.scalars.items():
        if value < 0:
            res.scalars[name] = 0.0
