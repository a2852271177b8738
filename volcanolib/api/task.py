"""Tasks (pods) and their scheduling status."""

from __future__ import annotations

import enum
import hashlib
from collections.abc import Mapping
from typing import Any, Final

import attrs

from volcanolib.api.resource import Resource

__all__ = [
    "ALLOCATED_STATUSES",
    "Pod",
    "TaskInfo",
    "TaskStatus",
    "allocated_status",
    "content_template",
    "in_statuses",
]

#: The annotation naming a pod's PodGroup.
GROUP_NAME_ANNOTATION: Final = "scheduling.k8s.io/group-name"
#: The annotation (or label) naming a pod's task of its Volcano Job.
TASK_SPEC_KEY: Final = "volcano.sh/task-spec"
#: The annotation the Volcano job controller sets to ``<job>-<task>``.
TEMPLATE_UID_KEY: Final = "volcano.sh/template-uid"
TASK_PRIORITY_KEY: Final = "volcano.sh/task-priority"
PREEMPTABLE_KEY: Final = "volcano.sh/preemptable"


class TaskStatus(enum.IntFlag):
    """Where a task stands, as the scheduler sees it (Volcano's ``TaskStatus``)."""

    PENDING = 1 << 0
    ALLOCATED = 1 << 1
    PIPELINED = 1 << 2
    BINDING = 1 << 3
    BOUND = 1 << 4
    RUNNING = 1 << 5
    RELEASING = 1 << 6
    SUCCEEDED = 1 << 7
    FAILED = 1 << 8
    UNKNOWN = 1 << 9

    def __str__(self) -> str:
        return (self.name or "Unknown").capitalize()


_S = TaskStatus
#: Statuses whose tasks hold resources on a node: Bound, Binding, Running, Allocated.
ALLOCATED_STATUSES: Final = _S.BOUND | _S.BINDING | _S.RUNNING | _S.ALLOCATED
#: Statuses counted as ready for a gang: the allocated ones plus Succeeded.
READY_STATUSES: Final = ALLOCATED_STATUSES | _S.SUCCEEDED
#: Statuses counted as valid members of a job.
VALID_STATUSES: Final = READY_STATUSES | _S.PIPELINED | _S.PENDING
#: Statuses whose tasks may be preempted (Bound or Running).
PREEMPTABLE_STATUSES: Final = _S.BOUND | _S.RUNNING
#: Statuses of tasks that are done.
COMPLETED_STATUSES: Final = _S.SUCCEEDED | _S.FAILED
#: Statuses counted as scheduled for the PodGroup phase.
SCHEDULED_STATUSES: Final = _S.RUNNING | _S.BOUND | _S.FAILED | _S.SUCCEEDED


_int_and: Final = int.__and__


def content_template(job: str, content: object) -> str:
    """The template of a pod of ``job`` without a role: pods with an equal ``content`` share it.

    ``content`` is everything about the pod that scheduling reads (its
    labels, annotations and spec, but not its name or node), as values whose
    ``repr`` is stable; the template names the job and a digest of it.
    """
    digest = hashlib.blake2b(repr(content).encode(), digest_size=8).hexdigest()
    return f"{job}/~{digest}"


def in_statuses(status: TaskStatus, statuses: TaskStatus) -> bool:
    """Whether ``status`` is one of ``statuses``: ``bool(status & statuses)``, without building a flag."""
    return _int_and(status, statuses) != 0


def allocated_status(status: TaskStatus) -> bool:
    """Whether a task in this status holds resources (Bound, Binding, Running, Allocated)."""
    return _int_and(status, ALLOCATED_STATUSES) != 0


@attrs.frozen
class Pod:
    """The parts of a pod manifest that scheduling reads.

    ``manifest`` keeps the whole object for plugins that need more.
    """

    name: str
    namespace: str = "default"
    uid: str = ""
    labels: Mapping[str, str] = attrs.field(factory=dict)
    annotations: Mapping[str, str] = attrs.field(factory=dict)
    node_selector: Mapping[str, str] = attrs.field(factory=dict)
    affinity: Mapping[str, Any] | None = None
    tolerations: tuple[Mapping[str, Any], ...] = ()
    #: ``(protocol, host IP, host port)`` of every container port with a host port.
    host_ports: tuple[tuple[str, str, int], ...] = ()
    topology_spread_constraints: tuple[Mapping[str, Any], ...] = ()
    images: tuple[str, ...] = ()
    priority_class_name: str = ""
    preemption_policy: str = "PreemptLowerPriority"
    scheduler_name: str = "volcano"
    nominated_node_name: str = ""
    manifest: Mapping[str, Any] | None = attrs.field(default=None, repr=False)


@attrs.define(eq=False)
class TaskInfo:
    """One pod as a unit of scheduling.

    Within one session snapshot the same object is shared by its job and its
    node, so a status change is seen by both. ``resreq`` and ``init_resreq``
    are the same request: the pod's effective request, init containers
    included. The manifest loader and :func:`~volcanolib.api.builders.build_task`
    add ``pods: 1``, as Volcano does; a task built by hand counts against a
    node's pod capacity only if its request says so.
    """

    uid: str
    name: str
    namespace: str
    #: The job id ``"<namespace>/<podgroup>"``, or ``""`` for a pod without a group.
    job: str
    resreq: Resource
    status: TaskStatus = TaskStatus.PENDING
    node_name: str = ""
    priority: int = 1
    preemptable: bool = True
    #: The task's role: the task-spec name of its Volcano Job, else ``""``.
    role: str = ""
    #: The template given (see :attr:`template`), else ``""``.
    _template: str = attrs.field(default="", alias="template", repr=False)
    creation_timestamp: float = 0.0
    pod: Pod | None = attrs.field(default=None, repr=False)
    #: ``(node_name, status)`` saved when a statement discarded this task's placement.
    last_transaction: tuple[str, TaskStatus] | None = attrs.field(default=None, repr=False)
    best_effort: bool = attrs.field(default=False, repr=False)
    key: str = attrs.field(default="", repr=False)
    # The template worked out from the pod and request it was worked out for (see ``template``).
    _content: tuple[Pod | None, Resource, str] | None = attrs.field(default=None, init=False, repr=False)

    def __attrs_post_init__(self) -> None:
        self.best_effort = self.resreq.is_empty()
        if not self.key:
            self.key = f"{self.namespace}/{self.name}"
        if not self._template and self.role:
            self._template = f"{self.job}/{self.role}"
        if not self._template:
            self._content = (self.pod, self.resreq, _pod_template(self))

    @property
    def template(self) -> str:
        """Tasks with equal templates have identical scheduling constraints (plugins parse them once per template).

        The template given when the task was made, else ``"<job>/<role>"``
        for a task with a role. A task of a job without a role, whose pod
        has no manifest, gets a template that names its job and everything
        about its pod and request that scheduling reads (not its name, uid
        or node): alike pods of one group share it, and it follows when the
        pod or the request is replaced. Any other task's template is its uid.
        """
        given = self._template
        if given:
            return given
        memo = self._content
        if memo is None or memo[0] is not self.pod or memo[1] is not self.resreq:
            memo = self._content = (self.pod, self.resreq, _pod_template(self))
        return memo[2]

    @template.setter
    def template(self, value: str) -> None:
        self._template = value

    @property
    def init_resreq(self) -> Resource:
        """The request checked against a node's free resources (the same as :attr:`resreq`)."""
        return self.resreq

    @property
    def pod_priority(self) -> int:
        """The pod's own priority (``spec.priority`` of its manifest), else :attr:`priority`."""
        pod = self.pod
        if pod is not None and pod.manifest is not None:
            spec = pod.manifest.get("spec")
            if isinstance(spec, dict):
                value = spec.get("priority")
                if isinstance(value, int) and not isinstance(value, bool):
                    return value
        return self.priority

    def clone(self) -> TaskInfo:
        """Return a copy with its own status and placement (the request is shared, it never changes)."""
        # Field by field: snapshots clone every task each session, and this is several times faster
        # than attrs.evolve. A test checks that every field is copied.
        new = _new_task(TaskInfo)
        new.uid = self.uid
        new.name = self.name
        new.namespace = self.namespace
        new.job = self.job
        new.resreq = self.resreq
        new.status = self.status
        new.node_name = self.node_name
        new.priority = self.priority
        new.preemptable = self.preemptable
        new.role = self.role
        new._template = self._template
        new._content = self._content
        new.creation_timestamp = self.creation_timestamp
        new.pod = self.pod
        new.last_transaction = self.last_transaction
        new.best_effort = self.best_effort
        new.key = self.key
        return new

    def __repr__(self) -> str:
        return f"Task({self.key}, {self.status}, node={self.node_name or '-'})"


_new_task: Final = object.__new__


def _pod_template(task: TaskInfo) -> str:
    """The template of a task given none (see :attr:`TaskInfo.template`)."""
    pod = task.pod
    if not task.job or pod is None or pod.manifest is not None:
        return task.uid
    content = (
        pod.namespace,
        pod.labels,
        pod.annotations,
        pod.node_selector,
        pod.affinity,
        pod.tolerations,
        pod.host_ports,
        pod.topology_spread_constraints,
        pod.images,
        pod.priority_class_name,
        pod.preemption_policy,
        pod.scheduler_name,
        pod.nominated_node_name,
        task.resreq.key(),
    )
    return content_template(task.job, content)


def task_priority(pod: Pod, spec_priority: int | None) -> int:
    """Return a pod's task priority: the ``volcano.sh/task-priority`` annotation, else its priority, else 1."""
    raw = pod.annotations.get(TASK_PRIORITY_KEY)
    if raw is not None:
        try:
            return int(raw)
        except ValueError:
            pass
    return spec_priority if spec_priority is not None else 1


def parse_bool(raw: str | None) -> bool | None:
    """Parse a Kubernetes-style boolean string; ``None`` when it is not one."""
    if raw is None:
        return None
    low = raw.strip().lower()
    if low in ("1", "t", "true"):
        return True
    if low in ("0", "f", "false"):
        return False
    return None
