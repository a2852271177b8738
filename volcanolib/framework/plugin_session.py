"""What a plugin may read and call on the session it is handed: a narrow view of :class:`Session`.

Type a plugin's ``ssn`` parameters as :class:`PluginSession` to have mypy
keep it to this view: the snapshot (read it; change tasks only through a
statement), the combined answers of other hooks a plugin may ask, the
statement and the few operations that tell the session what a plugin
changed (``update_pod_group_condition``, ``unsettle``). The session's state
primitives, its compilation and its close are not part of it. Every shipped
plugin keeps to it (a test reads their sources).

.. versionadded:: 0.2
"""

from __future__ import annotations

import random
from collections.abc import Callable, Iterator, Mapping, Sequence
from contextlib import AbstractContextManager
from typing import TYPE_CHECKING, Any, Protocol, runtime_checkable

if TYPE_CHECKING:
    from volcanolib.api.cluster import SnapshotDelta
    from volcanolib.api.hypernode import HyperNodeTree
    from volcanolib.api.job import JobInfo, PodGroupCondition
    from volcanolib.api.node import NodeInfo
    from volcanolib.api.queue import QueueInfo
    from volcanolib.api.resource import Resource
    from volcanolib.api.task import TaskInfo
    from volcanolib.errors import PluginError
    from volcanolib.framework.config import PluginOption
    from volcanolib.framework.placement import Placement
    from volcanolib.framework.statement import Statement
    from volcanolib.framework.status import Status
    from volcanolib.framework.victims import EvictionContext

__all__ = ["PluginSession"]


@runtime_checkable
class PluginSession(Protocol):
    """The session as a plugin sees it (see the module's docstring)."""

    # ---------------------------------------------------------------- the snapshot (read only)
    uid: str
    jobs: dict[str, JobInfo]
    nodes: dict[str, NodeInfo]
    node_list: list[NodeInfo]
    queues: dict[str, QueueInfo]
    total_resource: Resource
    hyper_nodes: HyperNodeTree
    hyper_node_hints: dict[str, str]
    node_log: list[str]
    delta: SnapshotDelta | None
    clock: Callable[[], float]
    rng: random.Random

    # ---------------------------------------------------------------- the configuration
    def plugin_option(self, name: str) -> PluginOption | None: ...
    def hierarchy_enabled(self, plugin: str) -> bool: ...
    def implemented(self, hook: str) -> bool: ...

    # ---------------------------------------------------------------- other hooks' combined answers
    compare_jobs: Callable[[JobInfo, JobInfo], int]
    job_key: Callable[[JobInfo], Any]
    queue_key: Callable[[QueueInfo], Any]
    compare_victim_queues: Callable[[QueueInfo, QueueInfo, TaskInfo], int]
    has_victim_queue_order: bool
    pre_predicate: Callable[[TaskInfo], Status]
    unified_evictable: Callable[[EvictionContext, Sequence[TaskInfo]], list[TaskInfo] | None]
    victim_tasks: Callable[[Sequence[TaskInfo]], list[TaskInfo]]
    preemptive: Callable[[QueueInfo, Sequence[TaskInfo]], bool]
    allocatable: Callable[[QueueInfo, TaskInfo], bool]
    job_pipelined: Callable[[JobInfo], bool]
    job_starving: Callable[[JobInfo], bool]

    def job_schedulable(self, job: JobInfo) -> bool: ...
    def queue_overused(self, queue: QueueInfo) -> bool: ...

    @property
    def placement(self) -> Placement: ...

    # ---------------------------------------------------------------- what a plugin may change, and how
    def statement(self) -> Statement: ...
    def evict(self, task: TaskInfo, reason: str) -> None: ...
    def guard(self, job: JobInfo | None = None, stmt: Statement | None = None) -> AbstractContextManager[None]: ...
    def record_plugin_error(self, err: PluginError, job: JobInfo | None = None) -> None: ...
    def update_pod_group_condition(self, job: JobInfo, condition: PodGroupCondition) -> None: ...
    def unsettle(self, job: JobInfo) -> None: ...
    def unsettled_jobs(self) -> list[JobInfo]: ...
    def settled_jobs(self) -> list[JobInfo]: ...


def _members() -> Iterator[str]:
    """The names :class:`PluginSession` declares (for the test that reads the plugins' sources)."""
    seen: set[str] = set()
    for klass in PluginSession.__mro__:
        if klass is object or klass is Protocol:
            continue
        for name in (*getattr(klass, "__annotations__", {}), *vars(klass)):
            if not name.startswith("_") and name not in seen:
                seen.add(name)
                yield name


#: Mapping kept for the docs: each member of :class:`PluginSession`.
MEMBERS: Mapping[str, None] = dict.fromkeys(_members())
