"""The session's combined hook answers, with their types: generated from the hook declarations.

Do not edit: run ``python tools/gen_hook_docs.py`` after changing a hook (a test
checks that this module and the declarations agree).
"""

from __future__ import annotations

from collections.abc import Callable, Mapping, Sequence
from typing import TYPE_CHECKING, Any

if TYPE_CHECKING:
    from volcanolib.api.hypernode import HyperNodeInfo
    from volcanolib.api.job import JobInfo
    from volcanolib.api.node import NodeInfo
    from volcanolib.api.queue import QueueInfo
    from volcanolib.api.task import TaskInfo
    from volcanolib.framework.status import Event, Status
    from volcanolib.framework.victims import EvictionContext

__all__ = ["HookAnswers"]


class HookAnswers:
    """The combined answer of every hook, as the session's attributes (see :class:`Session`)."""

    #: ``on_allocate``, rule ``call_all``.
    _on_allocate: Callable[[Event], None]
    #: ``on_deallocate``, rule ``call_all``.
    _on_deallocate: Callable[[Event], None]
    #: ``job_order``, rule ``first_nonzero``, then creation time, then uid.
    compare_jobs: Callable[[JobInfo, JobInfo], int]
    #: The key form of ``job_order``, rule ``first_nonzero``.
    job_key: Callable[[JobInfo], Any]
    #: ``queue_order``, rule ``first_nonzero``, then creation time, then name.
    compare_queues: Callable[[QueueInfo, QueueInfo], int]
    #: The key form of ``queue_order``, rule ``first_nonzero``.
    queue_key: Callable[[QueueInfo], Any]
    #: ``task_order``, rule ``first_nonzero``, then pod-name index, creation time, then uid.
    compare_tasks: Callable[[TaskInfo, TaskInfo], int]
    #: The key form of ``task_order``, rule ``first_nonzero``.
    task_key: Callable[[TaskInfo], Any]
    #: ``victim_queue_order``, rule ``first_nonzero``, then the reverse of the queue order.
    compare_victim_queues: Callable[[QueueInfo, QueueInfo, TaskInfo], int]
    #: ``pre_predicate``, rule ``all_pass``.
    pre_predicate: Callable[[TaskInfo], Status]
    #: ``predicate``, rule ``all_pass``.
    predicate: Callable[[TaskInfo, NodeInfo], Status]
    #: ``node_order``, rule ``weighted_sum``.
    node_scores: Callable[[TaskInfo, Sequence[NodeInfo]], dict[str, float]]
    #: ``hyper_node_order``, rule ``sum_by_name``.
    hyper_node_order: Callable[[JobInfo, Mapping[str, Sequence[NodeInfo]]], dict[str, float]]
    #: ``hyper_node_gradient``, rule ``first_not_none``.
    hyper_node_gradient: Callable[[JobInfo, HyperNodeInfo], Sequence[Sequence[str]] | None]
    #: ``best_node``, rule ``first_not_none``.
    _best_node: Callable[[TaskInfo, Mapping[float, Sequence[NodeInfo]]], NodeInfo | None]
    #: ``preemptable``, rule ``intersect_per_tier``.
    preemptable: Callable[[TaskInfo, Sequence[TaskInfo]], list[TaskInfo] | None]
    #: ``reclaimable``, rule ``intersect_per_tier``.
    reclaimable: Callable[[TaskInfo, Sequence[TaskInfo]], list[TaskInfo] | None]
    #: ``unified_evictable``, rule ``intersect_per_tier``.
    unified_evictable: Callable[[EvictionContext, Sequence[TaskInfo]], list[TaskInfo] | None]
    #: ``victim_tasks``, rule ``union_per_tier``.
    victim_tasks: Callable[[Sequence[TaskInfo]], list[TaskInfo]]
    #: ``preemptive``, rule ``all_true``.
    preemptive: Callable[[QueueInfo, Sequence[TaskInfo]], bool]
    #: ``overused``, rule ``any_true``.
    overused: Callable[[QueueInfo], bool]
    #: ``allocatable``, rule ``all_true``.
    allocatable: Callable[[QueueInfo, TaskInfo], bool]
    #: ``job_valid``, rule ``all_pass``.
    job_valid: Callable[[JobInfo], Status]
    #: ``job_ready``, rule ``all_true``.
    job_ready: Callable[[JobInfo], bool]
    #: ``job_pipelined``, rule ``vote_per_tier``.
    job_pipelined: Callable[[JobInfo], bool]
    #: ``job_starving``, rule ``tier_decides``.
    job_starving: Callable[[JobInfo], bool]
    #: ``job_enqueueable``, rule ``vote_per_tier``.
    job_enqueueable: Callable[[JobInfo], bool]
    #: ``job_enqueued``, rule ``call_all``.
    job_enqueued: Callable[[JobInfo], None]
