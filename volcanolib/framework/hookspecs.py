"""Every hook a volcanolib plugin may implement.

A plugin is a class; it implements hooks as methods marked with
:data:`volcanolib.hookimpl`. Every hook receives the open
:class:`~volcanolib.framework.session.Session` as ``ssn``; an implementation
may leave out parameters it does not need (pluggy matches them by name).

Hooks are *tiered*: the session calls the implementations tier by tier, in
the order the configuration lists the plugins, and combines their answers by
the rule each hook names below. The rules are written once, in
:mod:`volcanolib.framework.combine`:

``first_nonzero``
    Orders. The first non-zero comparison in tier order decides; when all
    abstain, a fixed tie-break applies (creation time, then uid).
``all_pass``
    Predicates and validators. Every plugin must succeed; the first failure
    (tier order) is the answer.
``weighted_sum``
    Scores. Each plugin weighs its own score (by its arguments); the session
    sums them.
``intersect_per_tier``
    Victim selection. Within a tier the victim lists are intersected; a
    plugin returning an empty list ends its tier with no victims; the first
    tier ending with victims decides; a tier where every plugin abstains
    falls through.
``vote_per_tier``
    Votes. Any reject decides "no" at once; at the end of a tier, a permit seen
    so far decides "yes"; when every tier abstains the answer is "yes".
``any_true`` / ``all_true``
    Queue checks: overused is the OR, allocatable and preemptive the AND.
``tier_decides``
    Starving: the first tier with an implementation decides by AND.
``call_all``
    Notifications. Every implementation is called, in tier order.

Hooks gated by a switch (``enableJobOrder`` ...) skip a plugin whose switch is
false in the configuration; see :data:`volcanolib.framework.config.HOOK_SWITCHES`.

pluggy drops ``None`` results, and the framework never relies on that: every
hook has an explicit "no opinion" value, named in its docstring.
Implementations must not do I/O or change the session's jobs, nodes or
queues, except through the session's operations where a docstring says so.
Tiered hooks may not be declared ``wrapper``, ``hookwrapper``, ``tryfirst``
or ``trylast``: order comes from the configuration only.
"""

from __future__ import annotations

from collections.abc import Mapping, Sequence
from typing import TYPE_CHECKING, Any, Final

import pluggy

if TYPE_CHECKING:
    from volcanolib.api.job import JobInfo
    from volcanolib.api.node import NodeInfo
    from volcanolib.api.queue import QueueInfo
    from volcanolib.api.task import TaskInfo
    from volcanolib.framework.nodeclass import NodeClassKey
    from volcanolib.framework.session import Session
    from volcanolib.framework.status import Event, Status, Vote

NAME: Final = "volcanolib"
_hookspec = pluggy.HookspecMarker(NAME)

# =============================================================================
# Session lifecycle
# =============================================================================


@_hookspec
def on_session_open(ssn: Session) -> None:
    """Called once when a session opens, before any action runs.

    Called in tier order. A plugin resets its per-session state here and
    computes what it needs from the snapshot (shares, deserved quotas).

    :param ssn: the session, with its snapshot of jobs, nodes and queues.
    :returns: nothing. Rule: ``call_all``. Not gated by a switch.

    A plugin that raises here makes the whole cycle skip: the session is
    closed without running any action.
    """


@_hookspec
def on_session_close(ssn: Session) -> None:
    """Called once when a session closes, after the last action.

    Called in tier order, before job statuses are written back. Gang writes
    its PodGroup conditions here.

    :param ssn: the session.
    :returns: nothing. Rule: ``call_all``. Not gated by a switch.
    """


@_hookspec
def on_allocate(ssn: Session, event: Event) -> None:
    """Called each time a task takes resources in the session.

    Fires on allocate, on pipeline and when an eviction is undone; not on
    commit. Plugins keep incremental accounting (drf shares, queue usage) in
    step here. Called O(placements) times per session.

    :param ssn: the session.
    :param event: carries ``task``, already in its new status and on its node.
    :returns: nothing. Rule: ``call_all``, in tier order. Not gated.
    """


@_hookspec
def on_deallocate(ssn: Session, event: Event) -> None:
    """Called each time a task gives resources back in the session.

    Fires on evict and when an allocation or pipeline is undone.

    :param ssn: the session.
    :param event: carries ``task``, already in its new status.
    :returns: nothing. Rule: ``call_all``, in tier order. Not gated.
    """


# =============================================================================
# Ordering
# =============================================================================


@_hookspec
def job_order(ssn: Session, left: JobInfo, right: JobInfo) -> int:
    """Compare two jobs: which one is scheduled first.

    Called O(n log n) times per priority-queue operation when some ordering
    plugin has no :func:`job_order_key`.

    :param left: a job.
    :param right: another job.
    :returns: negative if ``left`` goes first, positive if ``right`` does,
        ``0`` for no opinion.

    Rule: ``first_nonzero`` in tier order; when every plugin answers 0, the
    job whose PodGroup was created earlier goes first, then the smaller uid.
    Gate: ``enableJobOrder``.
    """
    raise NotImplementedError


@_hookspec
def job_order_key(ssn: Session, job: JobInfo) -> Any:
    """A sort key for a job, the fast form of :func:`job_order`.

    A plugin that can express its order as a key implements this (and may
    implement :func:`job_order` too). When every enabled ordering plugin
    gives a key, jobs are sorted by the tuple of keys in tier order, with
    creation time and uid last, and no comparator is called. Keys are taken
    when a job enters a priority queue; a job's key must not change while it
    is queued (it is popped, changed and pushed back).

    A plugin whose key for a job depends only on that job (its fields, its
    tasks' statuses, and the plugin's own state changed by ``on_allocate`` /
    ``on_deallocate`` of that job's tasks) may say so with the class
    attribute ``job_order_key_is_local = True``. When every plugin giving a
    job key says so, the session reuses a job's key until one of its tasks
    changes status or fires an event (victim ordering asks for many keys of
    unchanged jobs).

    :param job: the job.
    :returns: a value comparable with other jobs' keys; smaller goes first.
        No opinion is a constant (``0``).

    Rule: ``first_nonzero`` (lexicographic). Gate: ``enableJobOrder``.
    """
    raise NotImplementedError


@_hookspec
def queue_order(ssn: Session, left: QueueInfo, right: QueueInfo) -> int:
    """Compare two queues: which one gets the next turn.

    :returns: negative if ``left`` goes first, positive if ``right`` does,
        ``0`` for no opinion.

    Rule: ``first_nonzero``; then earlier creation time, then smaller name.
    Gate: ``enableQueueOrder``.
    """
    raise NotImplementedError


@_hookspec
def queue_order_key(ssn: Session, queue: QueueInfo) -> Any:
    """A sort key for a queue, the fast form of :func:`queue_order`.

    :returns: a comparable value, smaller first; no opinion is a constant.

    Rule: ``first_nonzero`` (lexicographic). Gate: ``enableQueueOrder``.
    """
    raise NotImplementedError


@_hookspec
def task_order(ssn: Session, left: TaskInfo, right: TaskInfo) -> int:
    """Compare two tasks of one job: which one is placed first.

    :returns: negative if ``left`` goes first, positive if ``right`` does,
        ``0`` for no opinion.

    Rule: ``first_nonzero``; then the trailing index of the pod name
    (``job-task-3``), then earlier creation time, then smaller uid.
    Gate: ``enableTaskOrder``.
    """
    raise NotImplementedError


@_hookspec
def task_order_key(ssn: Session, task: TaskInfo) -> Any:
    """A sort key for a task, the fast form of :func:`task_order`.

    :returns: a comparable value, smaller first; no opinion is a constant.

    Rule: ``first_nonzero`` (lexicographic). Gate: ``enableTaskOrder``.
    """
    raise NotImplementedError


@_hookspec
def namespace_order(ssn: Session, left: str, right: str) -> int:
    """Compare two namespaces (Volcano v1.7 ordered namespaces before queues).

    The current actions do not order namespaces; the hook is kept for
    plugins and actions that do.

    :returns: negative if ``left`` goes first, positive if ``right`` does, ``0``.

    Rule: ``first_nonzero``; then the name. Gate: ``enableNamespaceOrder``.
    """
    raise NotImplementedError


@_hookspec
def victim_queue_order(ssn: Session, left: QueueInfo, right: QueueInfo, preemptor: TaskInfo) -> int:
    """Compare two queues whose tasks are eviction candidates for ``preemptor``.

    :returns: negative if tasks of ``left`` are evicted first, positive if
        those of ``right`` are, ``0`` for no opinion.

    Rule: ``first_nonzero``; then the reverse of the queue order. Not gated.
    """
    raise NotImplementedError


# =============================================================================
# Filtering and scoring
# =============================================================================


@_hookspec
def pre_predicate(ssn: Session, task: TaskInfo) -> Status:
    """Check a task once before any node is tried.

    A failure makes the task unschedulable on every node this time.

    :returns: a :class:`Status`; no opinion is ``Status.success()``.

    Rule: ``all_pass`` (the first failure in tier order is the answer).
    Gate: ``enablePredicate``.
    """
    raise NotImplementedError


@_hookspec
def predicate(ssn: Session, task: TaskInfo, node: NodeInfo) -> Status:
    """Whether a task may run on a node (constraints, not free resources).

    Called O(tasks x nodes) times per session unless the plugin implements
    :func:`batch_predicate`, which then replaces this hook for that plugin
    wherever the framework checks many nodes at once.

    :returns: a :class:`Status`; no opinion is ``Status.success()``. Use
        ``UNSCHEDULABLE_AND_UNRESOLVABLE`` when evicting tasks from the node
        could not help (a taint, a selector), ``UNSCHEDULABLE`` otherwise.

    Rule: ``all_pass``. Gate: ``enablePredicate``.
    """
    raise NotImplementedError


@_hookspec
def batch_predicate(ssn: Session, task: TaskInfo, nodes: Sequence[NodeInfo]) -> Mapping[str, Status]:
    """Check a task against many nodes in one call.

    :param nodes: the candidate nodes, in node-list order.
    :returns: the failing nodes only, by name, each with its failure; no
        opinion is an empty mapping (every node passes).

    Rule: ``all_pass`` per node, in tier order together with
    :func:`predicate`. Gate: ``enablePredicate``.
    """
    raise NotImplementedError


@_hookspec
def node_order(ssn: Session, task: TaskInfo, node: NodeInfo) -> float:
    """Score a node for a task; higher is better.

    Called O(tasks x feasible nodes) times unless the plugin implements
    :func:`batch_node_order`, which then replaces this hook for that plugin.

    :returns: the plugin's weighted score; no opinion is ``0``.

    Rule: ``weighted_sum`` (the session adds every plugin's score).
    Gate: ``enableNodeOrder``.
    """
    raise NotImplementedError


@_hookspec
def batch_node_order(ssn: Session, task: TaskInfo, nodes: Sequence[NodeInfo]) -> Mapping[str, float]:
    """Score many nodes for a task in one call.

    :returns: scores by node name; a node left out scores 0, and no opinion
        is an empty mapping.

    Rule: ``weighted_sum`` per node. Gate: ``enableNodeOrder``.
    """
    raise NotImplementedError


@_hookspec
def best_node(ssn: Session, task: TaskInfo, scores: Mapping[float, Sequence[NodeInfo]]) -> NodeInfo | None:
    """Pick the node for a task among scored candidates.

    :param scores: candidate nodes grouped by total score.
    :returns: the chosen node; no opinion is ``None`` (then the highest
        score wins, ties broken by the session's seeded tie-breaker).

    Rule: the first non-``None`` answer in tier order. Gate: ``enableBestNode``.
    """
    raise NotImplementedError


@_hookspec
def node_class_key(ssn: Session, task: TaskInfo) -> NodeClassKey | None:
    """Say what this plugin's predicates and scores read of a node for a task, so alike nodes are checked once.

    Called before a task is placed, for every plugin that checks or scores
    nodes. When every such plugin answers, the session checks and scores
    one node per class (nodes with the same resources and the same value of
    every plugin's key) and gives the answer to the whole class; the chosen
    node is the one the per-node path would choose, tie-break included.
    :class:`~volcanolib.framework.nodeclass.NodeClassKey` states what a
    plugin promises by answering.

    :returns: the plugin's key for this task; no opinion is ``None``, and
        then (as when a plugin that checks or scores nodes does not
        implement this hook, or any plugin implements ``best_node``) every
        node is checked and scored on its own.

    Rule: every plugin with ``predicate``, ``batch_predicate``,
    ``node_order`` or ``batch_node_order`` must answer. Not gated.
    """
    raise NotImplementedError


# =============================================================================
# Eviction
# =============================================================================


@_hookspec
def preemptable(ssn: Session, preemptor: TaskInfo, preemptees: Sequence[TaskInfo]) -> Sequence[TaskInfo] | None:
    """Which of ``preemptees`` ``preemptor`` may evict (preempt, same queue).

    Every plugin sees the full candidate list, not what earlier plugins kept.

    :param preemptor: the pending task that needs room.
    :param preemptees: the candidates on one node.
    :returns: the acceptable victims, in the given order; ``[]`` means none
        may be evicted (and ends this tier with no victims); no opinion is ``None``.

    Rule: ``intersect_per_tier``. Gate: ``enablePreemptable``.
    """
    raise NotImplementedError


@_hookspec
def reclaimable(ssn: Session, reclaimer: TaskInfo, reclaimees: Sequence[TaskInfo]) -> Sequence[TaskInfo] | None:
    """Which of ``reclaimees`` (tasks of other queues) ``reclaimer`` may evict.

    :returns: the acceptable victims; ``[]`` for none; no opinion is ``None``.

    Rule: ``intersect_per_tier``. Gate: ``enableReclaimable``.
    """
    raise NotImplementedError


@_hookspec
def victim_tasks(ssn: Session, tasks: Sequence[TaskInfo]) -> Sequence[TaskInfo] | None:
    """Tasks a plugin wants evicted regardless of any preemptor (rescheduling).

    :returns: the victims; no opinion is ``None`` or ``[]``.

    Rule: the union within a tier; the first tier with a non-empty union
    wins. Gate: ``enabledVictim``.
    """
    raise NotImplementedError


@_hookspec
def preemptive(ssn: Session, queue: QueueInfo, tasks: Sequence[TaskInfo]) -> bool:
    """Whether ``tasks`` of ``queue`` may reclaim resources from other queues.

    :returns: ``False`` to forbid; no opinion is ``True``.

    Rule: ``all_true``. Gate: ``enablePreemptive``.
    """
    raise NotImplementedError


# =============================================================================
# Queue quota
# =============================================================================


@_hookspec
def overused(ssn: Session, queue: QueueInfo) -> bool:
    """Whether a queue has used up its share and must stop receiving resources.

    :returns: ``True`` if overused; no opinion is ``False``.

    Rule: ``any_true``. Gate: ``enabledOverused``.
    """
    raise NotImplementedError


@_hookspec
def allocatable(ssn: Session, queue: QueueInfo, task: TaskInfo) -> bool:
    """Whether a task of ``queue`` may take resources now.

    :returns: ``False`` to refuse; no opinion is ``True``.

    Rule: ``all_true``. Gate: ``enabledAllocatable``.
    """
    raise NotImplementedError


# =============================================================================
# Validation and voting
# =============================================================================


@_hookspec
def job_valid(ssn: Session, job: JobInfo) -> Status:
    """Whether a job may be scheduled at all (gang: enough valid tasks).

    :returns: a :class:`Status` whose reasons are ``(reason, message)``;
        no opinion is ``Status.success()``.

    Rule: ``all_pass`` (first failure). Not gated.
    """
    raise NotImplementedError


@_hookspec
def job_ready(ssn: Session, job: JobInfo) -> bool:
    """Whether a job has enough tasks placed to be bound (gang readiness).

    :returns: ``True`` when ready; no opinion is ``True``.

    Rule: ``all_true``; true when no plugin implements it. Gate: ``enableJobReady``.
    """
    raise NotImplementedError


@_hookspec
def job_pipelined(ssn: Session, job: JobInfo) -> Vote:
    """Whether a job's placements, counting pipelined tasks, are worth keeping.

    :returns: a :class:`Vote`; no opinion is ``Vote.ABSTAIN``.

    Rule: ``vote_per_tier``. Gate: ``enableJobPipelined``.
    """
    raise NotImplementedError


@_hookspec
def job_starving(ssn: Session, job: JobInfo) -> bool:
    """Whether a job still needs resources (a preemptor or reclaimer candidate).

    :returns: ``True`` when starving. There is no abstention: a plugin that
        implements the hook takes part in its tier's decision.

    Rule: ``tier_decides`` (the first tier with an implementation decides,
    by AND); false when no plugin implements it. Gate: ``enableJobStarving``.
    """
    raise NotImplementedError


@_hookspec
def job_enqueueable(ssn: Session, job: JobInfo) -> Vote:
    """Whether a Pending job may be admitted (moved to Inqueue) now.

    :returns: a :class:`Vote`; no opinion is ``Vote.ABSTAIN``.

    Rule: ``vote_per_tier``. Gate: ``enableJobEnqueued``.
    """
    raise NotImplementedError


@_hookspec
def job_enqueued(ssn: Session, job: JobInfo) -> None:
    """Called when enqueue admits a job, so plugins reserve its minimum resources.

    :returns: nothing. Rule: ``call_all``. Gate: ``enableJobEnqueued``.
    """


#: Names of every hook, in the order of this module.
HOOK_NAMES: Final = (
    "on_session_open",
    "on_session_close",
    "on_allocate",
    "on_deallocate",
    "job_order",
    "job_order_key",
    "queue_order",
    "queue_order_key",
    "task_order",
    "task_order_key",
    "namespace_order",
    "victim_queue_order",
    "pre_predicate",
    "predicate",
    "batch_predicate",
    "node_order",
    "batch_node_order",
    "best_node",
    "node_class_key",
    "preemptable",
    "reclaimable",
    "victim_tasks",
    "preemptive",
    "overused",
    "allocatable",
    "job_valid",
    "job_ready",
    "job_pipelined",
    "job_starving",
    "job_enqueueable",
    "job_enqueued",
)
