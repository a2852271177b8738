"""Jobs (PodGroups) and their gang accounting."""

from __future__ import annotations

import enum
from collections.abc import Iterator, Mapping
from typing import Final

import attrs

from volcanolib.api.fiterrors import FitErrors, _histogram, reason_histogram
from volcanolib.api.hypernode import NetworkTopology
from volcanolib.api.resource import PODS, Resource, exceeded_part
from volcanolib.api.task import (
    ALLOCATED_STATUSES,
    COMPLETED_STATUSES,
    READY_STATUSES,
    SCHEDULED_STATUSES,
    VALID_STATUSES,
    TaskInfo,
    TaskStatus,
    in_statuses,
)

__all__ = [
    "ConditionType",
    "JobInfo",
    "PodGroup",
    "PodGroupCondition",
    "PodGroupPhase",
]

POD_GROUP_NOT_READY: Final = "pod group is not ready"
_PENDING = TaskStatus.PENDING
_PIPELINED = TaskStatus.PIPELINED
# The same tests as ``in_statuses`` as set lookups, for the status moves of every placement.
_READY_SET: Final = frozenset(s for s in TaskStatus if in_statuses(s, READY_STATUSES))
_ALLOCATED_SET: Final = frozenset(s for s in TaskStatus if in_statuses(s, ALLOCATED_STATUSES))


class PodGroupPhase(str, enum.Enum):
    """The phase of a PodGroup."""

    PENDING = "Pending"
    INQUEUE = "Inqueue"
    RUNNING = "Running"
    UNKNOWN = "Unknown"
    COMPLETED = "Completed"

    def __str__(self) -> str:
        return self.value


class ConditionType(str, enum.Enum):
    """PodGroup condition types."""

    UNSCHEDULABLE = "Unschedulable"
    SCHEDULED = "Scheduled"

    def __str__(self) -> str:
        return self.value


@attrs.define
class PodGroupCondition:
    """One condition of a PodGroup's status."""

    type: ConditionType
    status: str = "True"
    reason: str = ""
    message: str = ""
    transition_id: str = ""
    last_transition_time: float = 0.0

    def copy(self) -> PodGroupCondition:
        """Return an equal condition that can change independently.

        .. versionadded:: 0.2
        """
        return PodGroupCondition(
            self.type, self.status, self.reason, self.message, self.transition_id, self.last_transition_time
        )

    def same_as(self, other: PodGroupCondition) -> bool:
        """Equality ignoring the transition id and time."""
        return (self.type, self.status, self.reason, self.message) == (
            other.type,
            other.status,
            other.reason,
            other.message,
        )


@attrs.define(eq=False)
class PodGroup:
    """A PodGroup: the gang a job's pods belong to, with its spec and status."""

    name: str
    namespace: str = "default"
    min_member: int = 1
    queue: str = "default"
    priority_class_name: str = ""
    min_resources: Resource | None = None
    min_task_member: Mapping[str, int] = attrs.field(factory=dict)
    phase: PodGroupPhase = PodGroupPhase.PENDING
    conditions: list[PodGroupCondition] = attrs.field(factory=list)
    running: int = 0
    succeeded: int = 0
    failed: int = 0
    annotations: Mapping[str, str] = attrs.field(factory=dict)
    labels: Mapping[str, str] = attrs.field(factory=dict)
    creation_timestamp: float = 0.0
    uid: str = ""
    #: ``spec.networkTopology``: how closely the job's tasks must sit in the HyperNode tree (``None``: no constraint).
    network_topology: NetworkTopology | None = None

    def clone(self) -> PodGroup:
        """Return a copy whose status (phase, conditions, counts) can change independently."""
        pg = _new_object(PodGroup)
        pg.name = self.name
        pg.namespace = self.namespace
        pg.min_member = self.min_member
        pg.queue = self.queue
        pg.priority_class_name = self.priority_class_name
        pg.min_resources = self.min_resources
        pg.min_task_member = self.min_task_member
        pg.phase = self.phase
        pg.conditions = [c.copy() for c in self.conditions] if self.conditions else []
        pg.running = self.running
        pg.succeeded = self.succeeded
        pg.failed = self.failed
        pg.annotations = self.annotations
        pg.labels = self.labels
        pg.creation_timestamp = self.creation_timestamp
        pg.uid = self.uid
        pg.network_topology = self.network_topology
        return pg

    def status_key(self) -> tuple[object, ...]:
        """The status without its conditions, for change detection."""
        return (self.phase, self.running, self.succeeded, self.failed)

    def unschedulable_in(self, session_uid: str) -> bool:
        """Whether the session ``session_uid`` found the gang unschedulable (its ``Unschedulable`` condition).

        .. versionadded:: 0.2
        """
        unschedulable = ConditionType.UNSCHEDULABLE
        return any(c.type is unschedulable and c.transition_id == session_uid for c in self.conditions)


@attrs.define(eq=False)
class JobInfo:
    """One job: a PodGroup and its tasks.

    Task counts by status and role are kept up to date as tasks are added,
    removed and change status, so the gang checks cost O(roles).
    """

    uid: str
    pod_group: PodGroup
    name: str = ""
    namespace: str = ""
    queue: str = "default"
    min_available: int = 1
    task_min_available: dict[str, int] = attrs.field(factory=dict)
    task_min_available_total: int = 0
    priority: int = 0
    preemptable: bool = False
    creation_timestamp: float = 0.0
    tasks: dict[str, TaskInfo] = attrs.field(factory=dict)
    task_status_index: dict[TaskStatus, dict[str, TaskInfo]] = attrs.field(factory=dict)
    allocated: Resource = attrs.field(factory=Resource)
    total_request: Resource = attrs.field(factory=Resource)
    #: Per pending task uid, why it fits no node (filled by the actions).
    nodes_fit_errors: dict[str, FitErrors] = attrs.field(factory=dict)
    job_fit_errors: str = ""
    #: What the job is short of (queue or nodes, with the numbers), in volcanolib's words: set by
    #: ``gang`` at session close for a job that is not ready, added to its pending pods' reasons.
    #: A per-session note, as :attr:`nodes_fit_errors`. See :mod:`volcanolib.framework.shortfall`.
    shortfall: str = ""
    #: Why this job cannot be scheduled at all (a missing queue, say), set by the loader.
    unschedulable_reason: str = ""
    schedule_start_timestamp: float | None = None
    _pending_best_effort: int = attrs.field(default=0, repr=False)
    #: Tasks in :data:`READY_STATUSES`, kept as tasks move.
    _ready: int = attrs.field(default=0, repr=False)
    # role -> status -> count; role -> count of pending best-effort tasks
    _role_counts: dict[str, dict[TaskStatus, int]] = attrs.field(factory=dict, repr=False)
    _role_pending_be: dict[str, int] = attrs.field(factory=dict, repr=False)

    @classmethod
    def from_pod_group(cls, pg: PodGroup, *, priority: int = 0) -> JobInfo:
        """Build an empty job for a PodGroup."""
        from volcanolib.api.task import PREEMPTABLE_KEY, parse_bool

        tma = {k: int(v) for k, v in pg.min_task_member.items()}
        pre = parse_bool(pg.annotations.get(PREEMPTABLE_KEY))
        if pre is None:
            pre = parse_bool(pg.labels.get(PREEMPTABLE_KEY))
        return cls(
            uid=f"{pg.namespace}/{pg.name}",
            pod_group=pg,
            name=pg.name,
            namespace=pg.namespace,
            queue=pg.queue or "default",
            min_available=pg.min_member,
            task_min_available=tma,
            task_min_available_total=sum(tma.values()),
            priority=priority,
            preemptable=bool(pre),
            creation_timestamp=pg.creation_timestamp,
        )

    # ------------------------------------------------------------------ task bookkeeping

    def add_task_info(self, task: TaskInfo) -> None:
        """Add a task: index it by status and role, and add its request to the totals."""
        self.tasks[task.uid] = task
        self._index(task)
        self.total_request.add(task.resreq)

    def delete_task_info(self, task: TaskInfo) -> None:
        """Remove a task, reversing :meth:`add_task_info`."""
        current = self.tasks.pop(task.uid, None)
        if current is None:
            return
        self._unindex(current)
        self.total_request.sub_unchecked(current.resreq)

    def update_task_status(self, task: TaskInfo, status: TaskStatus) -> None:
        """Move a task to another status, keeping counts and the allocated total exact."""
        old = task.status
        uid = task.uid
        if uid not in self.tasks or old is status:
            task.status = status
            return
        index = self.task_status_index
        bucket = index.get(old)
        if bucket is not None:
            bucket.pop(uid, None)
            if not bucket:
                del index[old]
        task.status = status
        bucket = index.get(status)
        if bucket is None:
            bucket = index[status] = {}
        bucket[uid] = task
        self._ready += (status in _READY_SET) - (old in _READY_SET)
        now = status in _ALLOCATED_SET
        if (old in _ALLOCATED_SET) != now:
            if now:
                self.allocated.add(task.resreq)
            else:
                self.allocated.sub_unchecked(task.resreq)
        counts = self._role_counts[task.role]
        counts[old] -= 1
        counts[status] = counts.get(status, 0) + 1
        if task.best_effort and (old is _PENDING or status is _PENDING):
            delta = 1 if status is _PENDING else -1
            self._pending_best_effort += delta
            self._role_pending_be[task.role] = self._role_pending_be.get(task.role, 0) + delta

    def _index(self, task: TaskInfo) -> None:
        status = task.status
        bucket = self.task_status_index.get(status)
        if bucket is None:
            bucket = self.task_status_index[status] = {}
        bucket[task.uid] = task
        if in_statuses(status, ALLOCATED_STATUSES):
            self.allocated.add(task.resreq)
        if in_statuses(status, READY_STATUSES):
            self._ready += 1
        counts = self._role_counts.get(task.role)
        if counts is None:
            counts = self._role_counts[task.role] = {}
        counts[status] = counts.get(status, 0) + 1
        if status is _PENDING and task.best_effort:
            self._pending_best_effort += 1
            self._role_pending_be[task.role] = self._role_pending_be.get(task.role, 0) + 1

    def _unindex(self, task: TaskInfo) -> None:
        status = task.status
        bucket = self.task_status_index.get(status)
        if bucket is not None:
            bucket.pop(task.uid, None)
            if not bucket:
                del self.task_status_index[status]
        if in_statuses(status, ALLOCATED_STATUSES):
            self.allocated.sub_unchecked(task.resreq)
        if in_statuses(status, READY_STATUSES):
            self._ready -= 1
        counts = self._role_counts[task.role]
        counts[status] -= 1
        if status is _PENDING and task.best_effort:
            self._pending_best_effort -= 1
            self._role_pending_be[task.role] -= 1

    def clone(self) -> JobInfo:
        """Return a copy with cloned tasks and PodGroup status (used by snapshots)."""
        # Field by field, the counts copied rather than counted again: snapshots clone every job
        # each session. The status index is rebuilt in task order, as adding the tasks one by one
        # would build it. A test checks that every field is copied.
        job = _new_object(JobInfo)
        job.uid = self.uid
        job.restate(self)
        job.priority = self.priority
        tasks = {uid: task.clone() for uid, task in self.tasks.items()}
        job.tasks = tasks
        index: dict[TaskStatus, dict[str, TaskInfo]] = {}
        for uid, task in tasks.items():
            bucket = index.get(task.status)
            if bucket is None:
                bucket = index[task.status] = {}
            bucket[uid] = task
        job.task_status_index = index
        job.allocated = self.allocated.clone()
        job.total_request = self.total_request.clone()
        job._pending_best_effort = self._pending_best_effort
        job._ready = self._ready
        job._role_counts = {role: counts.copy() for role, counts in self._role_counts.items()}
        job._role_pending_be = self._role_pending_be.copy()
        return job

    def restate(self, job: JobInfo) -> None:
        """Take ``job``'s PodGroup (a copy, as :meth:`clone` makes) and every field not counted from tasks.

        What stays: the uid, the priority, the tasks and what is counted from
        them. The per-session notes are reset as in a clone (no fit errors per
        task). The cache uses it for a reused copy of a job whose PodGroup
        status alone changed.

        .. versionadded:: 0.2
        """
        self.pod_group = job.pod_group.clone()
        self.name = job.name
        self.namespace = job.namespace
        self.queue = job.queue
        self.min_available = job.min_available
        self.task_min_available = job.task_min_available
        self.task_min_available_total = job.task_min_available_total
        self.preemptable = job.preemptable
        self.creation_timestamp = job.creation_timestamp
        self.nodes_fit_errors = {}
        self.job_fit_errors = job.job_fit_errors
        self.shortfall = ""
        self.unschedulable_reason = job.unschedulable_reason
        self.schedule_start_timestamp = job.schedule_start_timestamp

    # ------------------------------------------------------------------ counts

    def count(self, statuses: TaskStatus) -> int:
        """How many tasks are in any of ``statuses``."""
        total = 0
        for status, bucket in self.task_status_index.items():
            if _int_and(status, statuses):
                total += len(bucket)
        return total

    def tasks_in(self, statuses: TaskStatus) -> Iterator[TaskInfo]:
        """The tasks in any of ``statuses``."""
        for status, bucket in list(self.task_status_index.items()):
            if in_statuses(status, statuses):
                yield from list(bucket.values())

    def ready_task_num(self) -> int:
        """Tasks in an allocated status or Succeeded."""
        return self._ready

    def pending_best_effort_task_num(self) -> int:
        """Pending tasks with an empty request."""
        return self._pending_best_effort

    def waiting_task_num(self) -> int:
        """Pipelined tasks."""
        return len(self.task_status_index.get(_PIPELINED, ()))

    def valid_task_num(self) -> int:
        """Tasks that count toward the gang: allocated, Succeeded, Pipelined or Pending."""
        return self.count(VALID_STATUSES)

    def pending_task_num(self) -> int:
        """Pending tasks."""
        return len(self.task_status_index.get(_PENDING, ()))

    def is_ready(self) -> bool:
        """Whether enough tasks are placed (pending best-effort ones count) to run the gang."""
        return self.ready_task_num() + self._pending_best_effort >= self.min_available

    def is_pipelined(self) -> bool:
        """Whether placed plus pipelined tasks (and pending best-effort ones) reach the minimum."""
        return self.waiting_task_num() + self.ready_task_num() + self._pending_best_effort >= self.min_available

    def is_starving(self) -> bool:
        """Whether placed plus pipelined tasks are below the minimum."""
        return self.waiting_task_num() + self.ready_task_num() < self.min_available

    def is_pending(self) -> bool:
        """Whether the PodGroup is still Pending (not admitted by enqueue)."""
        return self.pod_group.phase is PodGroupPhase.PENDING

    def _role_count(self, role: str, statuses: TaskStatus) -> int:
        counts = self._role_counts.get(role)
        if not counts:
            return 0
        return sum(n for status, n in counts.items() if in_statuses(status, statuses))

    def _roles_meet(self, statuses: TaskStatus, *, pending_best_effort: bool) -> bool:
        if self.min_available < self.task_min_available_total:
            return True
        for role, minimum in self.task_min_available.items():
            if minimum <= 0:
                continue
            have = self._role_count(role, statuses)
            if pending_best_effort:
                have += self._role_pending_be.get(role, 0)
            if have < minimum:
                return False
        return True

    def check_task_valid(self) -> bool:
        """Whether every role can still reach its minimum with its valid tasks."""
        return self._roles_meet(VALID_STATUSES, pending_best_effort=False)

    def check_task_ready(self) -> bool:
        """Whether every role has reached its minimum with placed tasks."""
        return self._roles_meet(READY_STATUSES, pending_best_effort=True)

    def check_task_pipelined(self) -> bool:
        """Whether every role has reached its minimum with placed or pipelined tasks."""
        return self._roles_meet(READY_STATUSES | _PIPELINED, pending_best_effort=True)

    def check_task_starving(self) -> bool:
        """Whether some role is below its minimum with placed or pipelined tasks."""
        if self.min_available < self.task_min_available_total:
            return False
        for role, minimum in self.task_min_available.items():
            if minimum > 0 and self._role_count(role, READY_STATUSES | _PIPELINED) < minimum:
                return True
        return False

    def need_continue_allocating(self, failed_roles: set[str]) -> bool:
        """After a task of ``failed_roles`` fit no node, whether other tasks can still help."""
        if self.min_available == len(self.tasks):
            return False
        if self.min_available >= self.task_min_available_total:
            for role in failed_roles:
                minimum = self.task_min_available.get(role, 0)
                if minimum > 0 and self._role_count(role, READY_STATUSES) < minimum:
                    return False
            return True
        pending_ok = sum(self._role_count(role, _PENDING) for role in self._role_counts if role not in failed_roles)
        return self.ready_task_num() + pending_ok >= self.min_available

    # ------------------------------------------------------------------ phase

    def scheduled_task_num(self) -> int:
        """Tasks a status update counts as scheduled: Running, Bound, Succeeded or Failed.

        A task Releasing from its node is not counted (nor one Binding or
        Allocated), as in Volcano v1.14.1's PodGroup status.
        """
        return self.count(SCHEDULED_STATUSES)

    def status_phase(self, unschedulable: bool) -> PodGroupPhase:
        """The PodGroup phase a session's status update writes.

        ``Unknown`` when a task is running and the session found the gang
        unschedulable (see :meth:`PodGroup.unschedulable_in`); otherwise
        :meth:`phase_from_tasks`.

        :param unschedulable: whether the session wrote the ``Unschedulable`` condition.

        .. versionadded:: 0.2
        """
        if unschedulable and self.task_status_index.get(TaskStatus.RUNNING):
            return PodGroupPhase.UNKNOWN
        return self.phase_from_tasks()

    def phase_from_tasks(self) -> PodGroupPhase:
        """The PodGroup phase a status update derives from the tasks.

        With at least ``min_available`` scheduled tasks (see
        :meth:`scheduled_task_num`) the group is Completed when every one of
        them has finished, Running otherwise. Below that it is Pending,
        except that an Inqueue group stays Inqueue: admission is not taken
        back. (The session first checks whether the group is Unknown:
        running tasks while this session found it unschedulable.)
        """
        scheduled = self.scheduled_task_num()
        if scheduled >= self.min_available:
            return PodGroupPhase.COMPLETED if self.count(COMPLETED_STATUSES) == scheduled else PodGroupPhase.RUNNING
        phase = self.pod_group.phase
        return phase if phase is PodGroupPhase.INQUEUE else PodGroupPhase.PENDING

    # ------------------------------------------------------------------ resources

    def min_resources(self) -> Resource:
        """The PodGroup's ``minResources`` (empty when unset)."""
        mr = self.pod_group.min_resources
        return mr.clone() if mr is not None else Resource()

    def elastic_resources(self) -> Resource:
        """What the job holds beyond its ``minResources``, per dimension."""
        return exceeded_part(self.allocated, self.min_resources())

    def reserved_resources(self) -> Resource | None:
        """What the admitted job reserves in its queue and the cluster (``None``: nothing).

        As Volcano v1.14.1 counts it when a session opens: a job whose PodGroup
        is Inqueue reserves its whole ``minResources``, whatever it already
        holds; a Running one with at least ``minMember`` tasks allocated
        reserves the part of its ``minResources`` it does not hold yet (``pods``
        aside); any other job, or one without ``minResources``, nothing.

        .. versionadded:: 0.2
        """
        min_resources = self.pod_group.min_resources
        if min_resources is None:
            return None
        phase = self.pod_group.phase
        if phase is PodGroupPhase.INQUEUE:
            return min_resources.clone()
        if phase is PodGroupPhase.RUNNING and self.count(ALLOCATED_STATUSES) >= self.min_available:
            missing = exceeded_part(min_resources, self.allocated)
            missing.scalars.pop(PODS, None)
            return missing
        return None

    # ------------------------------------------------------------------ explanations

    def task_scheduling_reason(self, task: TaskInfo) -> tuple[str, str]:
        """``(reason, message)`` describing where a task stands, for pod conditions.

        A pending task that fits no node gets Volcano's summary of why
        (``0/3 nodes are available: 3 Insufficient cpu.``) followed by
        :attr:`shortfall`; one never checked gets the gang's message
        (:attr:`job_fit_errors`).
        """
        node, status = task.last_transaction or (task.node_name, task.status)
        if in_statuses(status, _SCHEDULABLE_STATUSES):
            if status is _PIPELINED:
                return "Schedulable", f"Pod {task.key} can possibly be assigned to {node} once resource is released"
            return "Schedulable", f"Pod {task.key} can possibly be assigned to {node}"
        if status is _PENDING:
            fit = self.nodes_fit_errors.get(task.uid)
            if fit is not None:
                return "Unschedulable", f"{fit.error()} {self.shortfall}" if self.shortfall else fit.error()
            if self.job_fit_errors:
                return "Unschedulable", self.job_fit_errors
            return "Unschedulable", "all nodes are unavailable."
        return str(status), ""

    def fit_error(self) -> str:
        """A one-line summary of why the gang is not ready, as Volcano's ``FitError`` words it.

        The counts of tasks by status and ``minAvailable``, the pending
        tasks' reasons, then ``Origin reason is <task>: <why it fits no node>``
        for the first task (by name) that fits no node.
        """
        # Counted by status bucket, and the pending tasks' reasons without their messages: gang's
        # close writes this for every unready job.
        counts = {_status_text(status): len(bucket) for status, bucket in self.task_status_index.items() if bucket}
        if self.min_available > 0:
            counts["minAvailable"] = self.min_available
        msg = f"{POD_GROUP_NOT_READY}, {', '.join(_histogram(counts))}"
        pending = self.task_status_index.get(_PENDING)
        if pending:
            msg += f"; Pending: {', '.join(reason_histogram(map(_reason_word, pending.values())))}"
        errors = self.nodes_fit_errors
        if errors:
            # Volcano names the first task of its (unordered) map that has one; here, the first by name.
            tasks = self.tasks
            named = [(tasks[uid].name, uid) for uid in errors if uid in tasks]
            if named:
                name, uid = min(named)
                msg += f". Origin reason is {name}: {errors[uid].error()}"
        return msg

    def __repr__(self) -> str:
        return f"Job({self.uid}, min={self.min_available}, tasks={len(self.tasks)}, phase={self.pod_group.phase})"


#: Allocates an instance without running ``__init__`` (clones set every field themselves).
_new_object: Final = object.__new__
#: ``in_statuses`` without a call: ``_int_and(status, statuses) != 0``.
_int_and: Final = int.__and__
#: Statuses for which :meth:`JobInfo.task_scheduling_reason` says ``Schedulable``.
_SCHEDULABLE_STATUSES: Final = ALLOCATED_STATUSES | _PIPELINED
#: ``str(status)`` of every single status.
_STATUS_TEXT: Final = {status: str(status) for status in TaskStatus}


def _status_text(status: TaskStatus) -> str:
    """``str(status)``, looked up for a single status."""
    text = _STATUS_TEXT.get(status)
    return text if text is not None else str(status)


def _reason_word(task: TaskInfo) -> str:
    """The reason :meth:`JobInfo.task_scheduling_reason` gives for ``task``, without its message."""
    status = task.last_transaction[1] if task.last_transaction else task.status
    if in_statuses(status, _SCHEDULABLE_STATUSES):
        return "Schedulable"
    if status is _PENDING:
        return "Unschedulable"
    return _status_text(status)
