"""Every hook a volcanolib plugin may implement.

A plugin is a class; it implements hooks as methods marked with
:data:`volcanolib.hookimpl`. Every hook receives the open
:class:`~volcanolib.framework.session.Session` as ``ssn``; an implementation
may leave out parameters it does not need (pluggy matches them by name).

Hooks are *tiered*: the session calls the implementations tier by tier, in
the order the configuration lists the plugins, and combines their answers by
the rule each hook declares. A hook's marker carries its rule and its switch
as data, ``@_hookspec(Phase.ORDERING, Rule.FIRST_NONZERO,
switch="enableJobOrder")``; everything else is derived from that one
declaration: the list of hooks (:data:`HOOK_NAMES`), the switch table
(:data:`volcanolib.framework.config.HOOK_SWITCHES`), the session's combined
answers, the last line of each docstring below and the hook reference page.
Each rule is one function of :mod:`volcanolib.framework.combine`.

A plugin whose switch for a hook is false in the configuration
(``enableJobOrder: false`` ...) does not take part in that hook.

pluggy drops ``None`` results, and the framework never relies on that: every
hook has an explicit "no opinion" value, named in its docstring.
Implementations must not do I/O or change the session's jobs, nodes or
queues, except through the session's operations where a docstring says so.
Tiered hooks may not be declared ``wrapper``, ``hookwrapper``, ``tryfirst``
or ``trylast``: order comes from the configuration only.
"""

from __future__ import annotations

import enum
import inspect
from collections.abc import Callable, Mapping, Sequence
from typing import TYPE_CHECKING, Any, Final, TypeVar

import attrs
import pluggy

from volcanolib.errors import PluginConfigError
from volcanolib.framework.combine import Rule

if TYPE_CHECKING:
    from volcanolib.api.cluster import SnapshotDelta
    from volcanolib.api.hypernode import HyperNodeInfo
    from volcanolib.api.job import JobInfo
    from volcanolib.api.node import NodeInfo
    from volcanolib.api.queue import QueueInfo
    from volcanolib.api.task import TaskInfo
    from volcanolib.framework.nodeclass import NodeClassKey
    from volcanolib.framework.session import Session
    from volcanolib.framework.status import Event, Status, Vote
    from volcanolib.framework.victims import EvictionContext

__all__ = ["HOOK_NAMES", "NAME", "SPECS", "HookSpec", "Phase", "Rule", "refuse_own_order"]

NAME: Final = "volcanolib"
_pluggy_hookspec = pluggy.HookspecMarker(NAME)
F = TypeVar("F", bound=Callable[..., Any])


class Phase(enum.Enum):
    """The part of a scheduling cycle a hook belongs to; the value is its heading in the reference."""

    LIFECYCLE = "Session lifecycle"
    ORDERING = "Ordering"
    FILTERING = "Filtering and scoring"
    EVICTION = "Eviction"
    QUOTA = "Queue quota"
    VALIDATION = "Validation and voting"


@attrs.frozen
class HookSpec:
    """What a hook's marker declares, as data."""

    #: The hook's name, the name of the method a plugin implements.
    name: str
    #: The part of the cycle the hook belongs to.
    phase: Phase
    #: How the answers of several plugins and tiers are combined.
    rule: Rule
    #: The configuration switch that takes a plugin out of the hook, or ``None`` when the hook is not gated.
    switch: str | None
    #: The hook this one is a faster form of (a sort key, or a batch over many nodes), or ``None``.
    form_of: str | None
    #: The hook's parameters, ``ssn`` first.
    argnames: tuple[str, ...]
    #: The session attribute holding the hook's combined answer (``None``: the session answers it
    #: with its faster form, or calls it itself, as ``on_session_resume``).
    attribute: str | None = None
    #: The type of that answer, as written in annotations (the session's declarations are generated from it).
    answer: str | None = None
    #: What orders two items every plugin leaves tied (orders only), in words.
    tie_break: str | None = None

    def summary(self) -> str:
        """The sentence that states the rule and the switch, appended to the hook's docstring."""
        rule = f"Rule: ``{self.rule.value}``"
        if self.form_of is not None:
            rule += f", together with :func:`{self.form_of}`, whose faster form this is"
        gate = f"Switch: ``{self.switch}``." if self.switch else "Not gated by a switch."
        return f"{rule}. {gate}"


#: The marks by which a pluggy implementation asks for its own place in the call order.
_OWN_ORDER: Final = ("wrapper", "hookwrapper", "tryfirst", "trylast")


def refuse_own_order(impl: object, plugin: str, hook: str) -> None:
    """Refuse an implementation of a tiered hook that asks for its own order (``tryfirst`` ...).

    Order comes from the configuration's tiers only.

    :raises PluginConfigError: naming the plugin, the hook and the mark.
    """
    for flag in _OWN_ORDER:
        if getattr(impl, flag, False):
            raise PluginConfigError(
                f"tiered hooks take their order from the configuration; {flag}=True is not allowed",
                plugin=plugin,
                hook=hook,
            )


#: Every hook's declaration, by name, in the order of this module.
SPECS: Final[dict[str, HookSpec]] = {}


def _hookspec(
    phase: Phase,
    rule: Rule,
    *,
    switch: str | None = None,
    form_of: str | None = None,
    answer: tuple[str, str] | None = None,
    tie_break: str | None = None,
) -> Callable[[F], F]:
    """Declare a hook: pluggy's specification marker, plus the hook's phase, rule, switch, faster form,
    the session attribute answering it with that answer's type, and its tie-break."""

    def mark(fn: F) -> F:
        attribute, answer_type = answer if answer is not None else (None, None)
        spec = HookSpec(
            fn.__name__,
            phase,
            rule,
            switch,
            form_of,
            tuple(inspect.signature(fn).parameters),
            attribute,
            answer_type,
            tie_break,
        )
        SPECS[spec.name] = spec
        fn.__doc__ = f"{(fn.__doc__ or '').rstrip()}\n\n    {spec.summary()}\n    "
        return _pluggy_hookspec(fn)

    return mark


# =============================================================================
# Session lifecycle
# =============================================================================


@_hookspec(Phase.LIFECYCLE, Rule.CALL_ALL)
def on_session_open(ssn: Session) -> None:
    """Called once when a session opens, before any action runs.

    Called in tier order. A plugin resets its per-session state here and
    computes what it needs from the snapshot (shares, deserved quotas).

    :param ssn: the session, with its snapshot of jobs, nodes and queues.
    :returns: nothing.

    A plugin that raises here makes the whole cycle skip: the session is
    closed without running any action.
    """


@_hookspec(Phase.LIFECYCLE, Rule.CALL_ALL)
def on_session_resume(ssn: Session, delta: SnapshotDelta) -> None:
    """Called once when a session opens, in place of ``on_session_open``, for a plugin that keeps its state.

    Implementing this hook is how a plugin declares that it keeps what it
    computes from the whole cluster (sums per node, shares per job or
    queue) from one session to the next, and brings it up to date from what
    changed. The session calls it, in tier order together with the other
    plugins' ``on_session_open``, only when all of these hold: the plugin
    also implements ``on_session_open``; the previous session of the same
    scheduler and configuration closed; the cache built this snapshot from
    that session's (``delta.since``), without changing both more than half
    its nodes and more than half its jobs; and the plugin recorded no
    failure in that session. In every other case its ``on_session_open`` is
    called, so a plugin must give the same state either way; a plugin that
    does not implement this hook is always opened afresh. What binds a
    resuming plugin, and what checks it, is in the incremental contract
    (``docs/incremental.md``); a plugin may offer ``kept_state()`` for
    verify mode to compare.

    What the plugin kept is as the previous session left it, after its last
    ``on_allocate`` and ``on_deallocate``. Every node and job of ``ssn``
    that ``delta`` does not name is the very object the plugin saw then,
    unchanged but for a job's per-session notes (fit errors, start time,
    condition transition times), which are reset; the named ones are new
    objects (or gone) and must be read again. Queue objects are new in every session: read them from
    ``ssn.queues`` (``delta.queues`` names those whose specification changed).
    References to the previous session's dictionaries must be replaced by
    the new session's.

    :param ssn: the session, with its snapshot of jobs, nodes and queues.
    :param delta: what differs from the previous session's snapshot.
    :returns: nothing.

    A plugin that raises here makes the whole cycle skip, as in
    ``on_session_open``; the next session opens it afresh.

    .. versionadded:: 0.2
    """


@_hookspec(Phase.LIFECYCLE, Rule.CALL_ALL)
def on_session_close(ssn: Session) -> None:
    """Called once when a session closes, after the last action.

    Called in tier order, before job statuses are written back. Gang writes
    its PodGroup conditions here. A session that follows another writes
    back only the jobs of ``ssn.unsettled_jobs()``, and only when every
    plugin declares ``Traits(status_through_session=True)``: such a plugin
    sets conditions with ``ssn.update_pod_group_condition``, or calls
    ``ssn.unsettle(job)`` before changing a job another way (see the
    incremental contract, ``docs/incremental.md``).

    :param ssn: the session.
    :returns: nothing.
    """


@_hookspec(Phase.LIFECYCLE, Rule.CALL_ALL, answer=("_on_allocate", "Callable[[Event], None]"))
def on_allocate(ssn: Session, event: Event) -> None:
    """Called each time a task takes resources in the session.

    Fires on allocate, on pipeline and when an eviction is undone; not on
    commit. Plugins keep incremental accounting (drf shares, queue usage) in
    step here. Called O(placements) times per session, in tier order.

    :param ssn: the session.
    :param event: carries ``task``, already in its new status and on its node.
    :returns: nothing.
    """


@_hookspec(Phase.LIFECYCLE, Rule.CALL_ALL, answer=("_on_deallocate", "Callable[[Event], None]"))
def on_deallocate(ssn: Session, event: Event) -> None:
    """Called each time a task gives resources back in the session.

    Fires on evict and when an allocation or pipeline is undone. Called in
    tier order.

    :param ssn: the session.
    :param event: carries ``task``, already in its new status.
    :returns: nothing.
    """


# =============================================================================
# Ordering
# =============================================================================


@_hookspec(
    Phase.ORDERING,
    Rule.FIRST_NONZERO,
    switch="enableJobOrder",
    answer=("compare_jobs", "Callable[[JobInfo, JobInfo], int]"),
    tie_break="creation time, then uid",
)
def job_order(ssn: Session, left: JobInfo, right: JobInfo) -> int:
    """Compare two jobs: which one is scheduled first.

    Called O(n log n) times per priority-queue operation when some ordering
    plugin has no :func:`job_order_key`.

    :param left: a job.
    :param right: another job.
    :returns: negative if ``left`` goes first, positive if ``right`` does,
        ``0`` for no opinion.

    When every plugin answers 0, the job whose PodGroup was created earlier
    goes first, then the smaller uid.
    """
    raise NotImplementedError


@_hookspec(
    Phase.ORDERING,
    Rule.FIRST_NONZERO,
    switch="enableJobOrder",
    form_of="job_order",
    answer=("job_key", "Callable[[JobInfo], Any]"),
)
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
        No opinion is a constant (``0``). Keys compare lexicographically.
    """
    raise NotImplementedError


@_hookspec(
    Phase.ORDERING,
    Rule.FIRST_NONZERO,
    switch="enableQueueOrder",
    answer=("compare_queues", "Callable[[QueueInfo, QueueInfo], int]"),
    tie_break="creation time, then name",
)
def queue_order(ssn: Session, left: QueueInfo, right: QueueInfo) -> int:
    """Compare two queues: which one gets the next turn.

    :returns: negative if ``left`` goes first, positive if ``right`` does,
        ``0`` for no opinion.

    When every plugin answers 0: earlier creation time, then smaller name.
    """
    raise NotImplementedError


@_hookspec(
    Phase.ORDERING,
    Rule.FIRST_NONZERO,
    switch="enableQueueOrder",
    form_of="queue_order",
    answer=("queue_key", "Callable[[QueueInfo], Any]"),
)
def queue_order_key(ssn: Session, queue: QueueInfo) -> Any:
    """A sort key for a queue, the fast form of :func:`queue_order`.

    :returns: a comparable value, smaller first; no opinion is a constant.
    """
    raise NotImplementedError


@_hookspec(
    Phase.ORDERING,
    Rule.FIRST_NONZERO,
    switch="enableTaskOrder",
    answer=("compare_tasks", "Callable[[TaskInfo, TaskInfo], int]"),
    tie_break="pod-name index, creation time, then uid",
)
def task_order(ssn: Session, left: TaskInfo, right: TaskInfo) -> int:
    """Compare two tasks of one job: which one is placed first.

    :returns: negative if ``left`` goes first, positive if ``right`` does,
        ``0`` for no opinion.

    When every plugin answers 0: the trailing index of the pod name
    (``job-task-3``), then earlier creation time, then smaller uid.
    """
    raise NotImplementedError


@_hookspec(
    Phase.ORDERING,
    Rule.FIRST_NONZERO,
    switch="enableTaskOrder",
    form_of="task_order",
    answer=("task_key", "Callable[[TaskInfo], Any]"),
)
def task_order_key(ssn: Session, task: TaskInfo) -> Any:
    """A sort key for a task, the fast form of :func:`task_order`.

    A plugin whose key for a task depends only on that task (its fields and
    its status) may say so with the class attribute
    ``task_order_key_is_local = True``. When every plugin giving a task key
    says so, the session reuses a task's key until the task changes status
    or fires an event (victim ordering asks for the keys of the same running
    tasks for many preemptors).

    :returns: a comparable value, smaller first; no opinion is a constant.
    """
    raise NotImplementedError


@_hookspec(
    Phase.ORDERING,
    Rule.FIRST_NONZERO,
    answer=("compare_victim_queues", "Callable[[QueueInfo, QueueInfo, TaskInfo], int]"),
    tie_break="the reverse of the queue order",
)
def victim_queue_order(ssn: Session, left: QueueInfo, right: QueueInfo, preemptor: TaskInfo) -> int:
    """Compare two queues whose tasks are eviction candidates for ``preemptor``.

    :returns: negative if tasks of ``left`` are evicted first, positive if
        those of ``right`` are, ``0`` for no opinion.

    When every plugin answers 0: the reverse of the queue order.
    """
    raise NotImplementedError


# =============================================================================
# Filtering and scoring
# =============================================================================


@_hookspec(
    Phase.FILTERING, Rule.ALL_PASS, switch="enablePredicate", answer=("pre_predicate", "Callable[[TaskInfo], Status]")
)
def pre_predicate(ssn: Session, task: TaskInfo) -> Status:
    """Check a task once before any node is tried.

    A failure makes the task unschedulable on every node this time.

    :returns: a :class:`Status`; no opinion is ``Status.success()``. The
        first failure in tier order is the answer.
    """
    raise NotImplementedError


@_hookspec(
    Phase.FILTERING,
    Rule.ALL_PASS,
    switch="enablePredicate",
    answer=("predicate", "Callable[[TaskInfo, NodeInfo], Status]"),
)
def predicate(ssn: Session, task: TaskInfo, node: NodeInfo) -> Status:
    """Whether a task may run on a node (constraints, not free resources).

    Called O(tasks x nodes) times per session unless the plugin implements
    :func:`batch_predicate`, which then replaces this hook for that plugin
    wherever the framework checks many nodes at once.

    :returns: a :class:`Status`; no opinion is ``Status.success()``. Use
        ``UNSCHEDULABLE_AND_UNRESOLVABLE`` when evicting tasks from the node
        could not help (a taint, a selector), ``UNSCHEDULABLE`` otherwise.
    """
    raise NotImplementedError


@_hookspec(Phase.FILTERING, Rule.ALL_PASS, switch="enablePredicate", form_of="predicate")
def batch_predicate(ssn: Session, task: TaskInfo, nodes: Sequence[NodeInfo]) -> Mapping[str, Status]:
    """Check a task against many nodes in one call.

    :param nodes: the candidate nodes, in node-list order.
    :returns: the failing nodes only, by name, each with its failure; no
        opinion is an empty mapping (every node passes). A node's answer is
        its first failure in tier order, this plugin's batch taking the
        plugin's place among the per-node :func:`predicate` implementations.
    """
    raise NotImplementedError


@_hookspec(
    Phase.FILTERING,
    Rule.WEIGHTED_SUM,
    switch="enableNodeOrder",
    answer=("node_scores", "Callable[[TaskInfo, Sequence[NodeInfo]], dict[str, float]]"),
)
def node_order(ssn: Session, task: TaskInfo, node: NodeInfo) -> float:
    """Score a node for a task; higher is better.

    Called O(tasks x feasible nodes) times unless the plugin implements
    :func:`batch_node_order`, which then replaces this hook for that plugin.

    :returns: the plugin's weighted score; no opinion is ``0``. The session
        adds every plugin's score.
    """
    raise NotImplementedError


@_hookspec(Phase.FILTERING, Rule.WEIGHTED_SUM, switch="enableNodeOrder", form_of="node_order")
def batch_node_order(ssn: Session, task: TaskInfo, nodes: Sequence[NodeInfo]) -> Mapping[str, float]:
    """Score many nodes for a task in one call.

    :returns: scores by node name; a node left out scores 0, and no opinion
        is an empty mapping.
    """
    raise NotImplementedError


@_hookspec(
    Phase.FILTERING,
    Rule.SUM_BY_NAME,
    switch="enabledHyperNodeOrder",
    answer=("hyper_node_order", "Callable[[JobInfo, Mapping[str, Sequence[NodeInfo]]], dict[str, float]]"),
)
def hyper_node_order(ssn: Session, job: JobInfo, hyper_nodes: Mapping[str, Sequence[NodeInfo]]) -> Mapping[str, float]:
    """Score the HyperNodes a job with a hard network-topology constraint could be placed in.

    Called by ``allocate`` once for each HyperNode of a group of
    :func:`hyper_node_gradient` where a placement of the job (then undone)
    made it ready or pipelined, with that HyperNode alone; the job goes to
    the HyperNode with the highest score (ties drawn by the session's
    seeded generator).

    :param job: the job being placed.
    :param hyper_nodes: the candidate HyperNodes by name, each with the
        ready nodes under it.
    :returns: scores by HyperNode name, already weighted; a HyperNode left
        out scores 0, and no opinion is an empty mapping.
    """
    raise NotImplementedError


@_hookspec(
    Phase.FILTERING,
    Rule.FIRST_NOT_NONE,
    switch="enabledHyperNodeGradient",
    answer=("hyper_node_gradient", "Callable[[JobInfo, HyperNodeInfo], Sequence[Sequence[str]] | None]"),
)
def hyper_node_gradient(ssn: Session, job: JobInfo, hyper_node: HyperNodeInfo) -> Sequence[Sequence[str]] | None:
    """Group the HyperNodes under ``hyper_node`` that a job with a hard network-topology constraint may go to.

    Called by ``allocate`` once per visit of such a job. The groups are
    tried in order (the first group with a HyperNode that can take the job
    decides); within a group each HyperNode is tried and the best one
    (``hyper_node_order``) wins. Volcano's HyperNode gradient: usually one
    group per tier, the lowest first, each HyperNode within the job's
    highest allowed tier.

    :param job: the job being placed.
    :param hyper_node: the HyperNode to search under (the virtual cluster top,
        :data:`~volcanolib.api.hypernode.CLUSTER_TOP`, for a whole job).
    :returns: lists of HyperNode names; no opinion is ``None`` (then the
        job is tried in ``hyper_node`` alone).
    """
    raise NotImplementedError


@_hookspec(
    Phase.FILTERING,
    Rule.FIRST_NOT_NONE,
    switch="enableBestNode",
    answer=("_best_node", "Callable[[TaskInfo, Mapping[float, Sequence[NodeInfo]]], NodeInfo | None]"),
)
def best_node(ssn: Session, task: TaskInfo, scores: Mapping[float, Sequence[NodeInfo]]) -> NodeInfo | None:
    """Pick the node for a task among scored candidates.

    :param scores: candidate nodes grouped by total score.
    :returns: the chosen node; no opinion is ``None`` (then the highest
        score wins, ties broken by the session's seeded tie-breaker).
    """
    raise NotImplementedError


@_hookspec(Phase.FILTERING, Rule.ALL_OR_NONE)
def node_class_key(ssn: Session, task: TaskInfo) -> NodeClassKey | None:
    """Say what this plugin's predicates and scores read of a node for a task, so alike nodes are checked once.

    Called before a task is placed, for every plugin that checks or scores
    nodes. When every such plugin answers, the session checks and scores
    one node per class (nodes with the same resources and the same value of
    every plugin's key) and gives the answer to the whole class; the chosen
    node is the one the per-node path would choose, tie-break included.
    :class:`~volcanolib.framework.nodeclass.NodeClassKey` states what a
    plugin promises by answering (and ``docs/incremental.md`` what checks it).

    :returns: the plugin's key for this task; no opinion is ``None``, and
        then (as when a plugin that checks or scores nodes does not
        implement this hook, or any plugin implements ``best_node``) every
        node is checked and scored on its own. Every plugin with
        ``predicate``, ``batch_predicate``, ``node_order`` or
        ``batch_node_order`` must answer.
    """
    raise NotImplementedError


# =============================================================================
# Eviction
# =============================================================================


@_hookspec(
    Phase.EVICTION,
    Rule.INTERSECT_PER_TIER,
    switch="enablePreemptable",
    answer=("preemptable", "Callable[[TaskInfo, Sequence[TaskInfo]], list[TaskInfo] | None]"),
)
def preemptable(ssn: Session, preemptor: TaskInfo, preemptees: Sequence[TaskInfo]) -> Sequence[TaskInfo] | None:
    """Which of ``preemptees`` ``preemptor`` may evict (preempt, same queue).

    Every plugin sees the full candidate list, not what earlier plugins kept.
    The answers of a tier are intersected; when an intersection comes out
    empty, the next plugin of the tier that answers starts over with its own
    list, as in Volcano.

    :param preemptor: the pending task that needs room.
    :param preemptees: the candidates on one node.
    :returns: the acceptable victims, in the given order; ``[]`` means none
        may be evicted (and ends this tier with no victims); no opinion is ``None``.
    """
    raise NotImplementedError


@_hookspec(
    Phase.EVICTION,
    Rule.INTERSECT_PER_TIER,
    switch="enableReclaimable",
    answer=("reclaimable", "Callable[[TaskInfo, Sequence[TaskInfo]], list[TaskInfo] | None]"),
)
def reclaimable(ssn: Session, reclaimer: TaskInfo, reclaimees: Sequence[TaskInfo]) -> Sequence[TaskInfo] | None:
    """Which of ``reclaimees`` (tasks of other queues) ``reclaimer`` may evict.

    :returns: the acceptable victims; ``[]`` for none; no opinion is ``None``.
    """
    raise NotImplementedError


@_hookspec(
    Phase.EVICTION,
    Rule.INTERSECT_PER_TIER,
    answer=("unified_evictable", "Callable[[EvictionContext, Sequence[TaskInfo]], list[TaskInfo] | None]"),
)
def unified_evictable(
    ssn: Session, context: EvictionContext, candidates: Sequence[TaskInfo]
) -> Sequence[TaskInfo] | None:
    """Which of ``candidates`` a gang-aware action may evict (Volcano's UnifiedEvictable).

    Called by ``gangpreempt`` and ``gangreclaim`` once per preemptor job and
    candidate domain, with every candidate victim in the action's bundle
    order (cheapest bundles first): a plugin that keeps running totals while
    it walks the list (queue usage, say) sees the preferred victims first.
    Only plugins that implement this hook filter victims for those actions;
    ``preemptable`` and ``reclaimable`` are not consulted there. Every
    plugin sees the full candidate list.

    :param context: what is being decided: ``kind`` (gang preempt or gang
        reclaim), the preemptor ``job``, and the ``domain`` searched.
    :param candidates: the candidate victims, in the action's order.
    :returns: the acceptable victims; ``[]`` means none (and ends the tier
        with no victims); no opinion is ``None``. The action keeps a bundle
        that must go whole only when every task of it is returned.
    """
    raise NotImplementedError


@_hookspec(
    Phase.EVICTION,
    Rule.UNION_PER_TIER,
    switch="enabledVictim",
    answer=("victim_tasks", "Callable[[Sequence[TaskInfo]], list[TaskInfo]]"),
)
def victim_tasks(ssn: Session, tasks: Sequence[TaskInfo]) -> Sequence[TaskInfo] | None:
    """Which running tasks should be evicted to be scheduled again (rescheduling).

    Called once per session by the ``shuffle`` action, with every Running
    task of the session's jobs.

    :param tasks: the Running tasks, in job then task order of the snapshot.
    :returns: the tasks to evict; no opinion is ``None`` (or ``[]``). Within
        a tier the answers are joined; the first tier that names any task
        decides, and the action evicts them all.
    """
    raise NotImplementedError


@_hookspec(
    Phase.EVICTION,
    Rule.ALL_TRUE,
    switch="enablePreemptive",
    answer=("preemptive", "Callable[[QueueInfo, Sequence[TaskInfo]], bool]"),
)
def preemptive(ssn: Session, queue: QueueInfo, tasks: Sequence[TaskInfo]) -> bool:
    """Whether ``tasks`` of ``queue`` may reclaim resources from other queues.

    :returns: ``False`` to forbid; no opinion is ``True``.
    """
    raise NotImplementedError


# =============================================================================
# Queue quota
# =============================================================================


@_hookspec(Phase.QUOTA, Rule.ANY_TRUE, switch="enabledOverused", answer=("overused", "Callable[[QueueInfo], bool]"))
def overused(ssn: Session, queue: QueueInfo) -> bool:
    """Whether a queue has used up its share and must stop receiving resources.

    :returns: ``True`` if overused; no opinion is ``False``.
    """
    raise NotImplementedError


@_hookspec(
    Phase.QUOTA,
    Rule.ALL_TRUE,
    switch="enabledAllocatable",
    answer=("allocatable", "Callable[[QueueInfo, TaskInfo], bool]"),
)
def allocatable(ssn: Session, queue: QueueInfo, task: TaskInfo) -> bool:
    """Whether a task of ``queue`` may take resources now.

    :returns: ``False`` to refuse; no opinion is ``True``.
    """
    raise NotImplementedError


# =============================================================================
# Validation and voting
# =============================================================================


@_hookspec(Phase.VALIDATION, Rule.ALL_PASS, answer=("job_valid", "Callable[[JobInfo], Status]"))
def job_valid(ssn: Session, job: JobInfo) -> Status:
    """Whether a job may be scheduled at all (gang: enough valid tasks).

    :returns: a :class:`Status` whose reasons are ``(reason, message)``;
        no opinion is ``Status.success()``. The first failure is the answer.
    """
    raise NotImplementedError


@_hookspec(Phase.VALIDATION, Rule.ALL_TRUE, switch="enableJobReady", answer=("job_ready", "Callable[[JobInfo], bool]"))
def job_ready(ssn: Session, job: JobInfo) -> bool:
    """Whether a job has enough tasks placed to be bound (gang readiness).

    :returns: ``True`` when ready; no opinion is ``True``, and so is the
        answer when no plugin implements the hook.
    """
    raise NotImplementedError


@_hookspec(
    Phase.VALIDATION,
    Rule.VOTE_PER_TIER,
    switch="enableJobPipelined",
    answer=("job_pipelined", "Callable[[JobInfo], bool]"),
)
def job_pipelined(ssn: Session, job: JobInfo) -> Vote:
    """Whether a job's placements, counting pipelined tasks, are worth keeping.

    :returns: a :class:`Vote`; no opinion is ``Vote.ABSTAIN``.
    """
    raise NotImplementedError


@_hookspec(
    Phase.VALIDATION,
    Rule.TIER_DECIDES,
    switch="enableJobStarving",
    answer=("job_starving", "Callable[[JobInfo], bool]"),
)
def job_starving(ssn: Session, job: JobInfo) -> bool:
    """Whether a job still needs resources (a preemptor or reclaimer candidate).

    :returns: ``True`` when starving. There is no abstention: a plugin that
        implements the hook takes part in its tier's decision. The answer is
        false when no plugin implements the hook.
    """
    raise NotImplementedError


@_hookspec(
    Phase.VALIDATION,
    Rule.VOTE_PER_TIER,
    switch="enableJobEnqueued",
    answer=("job_enqueueable", "Callable[[JobInfo], bool]"),
)
def job_enqueueable(ssn: Session, job: JobInfo) -> Vote:
    """Whether a Pending job may be admitted (moved to Inqueue) now.

    :returns: a :class:`Vote`; no opinion is ``Vote.ABSTAIN``.
    """
    raise NotImplementedError


@_hookspec(
    Phase.VALIDATION, Rule.CALL_ALL, switch="enableJobEnqueued", answer=("job_enqueued", "Callable[[JobInfo], None]")
)
def job_enqueued(ssn: Session, job: JobInfo) -> None:
    """Called when enqueue admits a job, so plugins reserve its minimum resources.

    :returns: nothing.
    """


#: Names of every hook, in the order of this module.
HOOK_NAMES: Final = tuple(SPECS)
