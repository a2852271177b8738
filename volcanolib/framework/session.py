"""Session: one scheduling cycle over a snapshot of the cache.

A session opens on a snapshot, lets every plugin prepare (``on_session_open``,
in tier order), exposes the combined plugin answers to the actions, records
what the actions decide, and on close writes job and queue status back to
the cache.

The combined answers are attributes holding compiled closures (see
:mod:`volcanolib.framework.combine`), so a hot-path call such as
``ssn.job_ready(job)`` costs one Python call per implementing plugin.
"""

from __future__ import annotations

import functools
import logging
import random
import time
import uuid
from collections.abc import Callable, Hashable, Iterable, Iterator, Mapping, Sequence
from contextlib import contextmanager, suppress
from typing import TYPE_CHECKING, Any, Final, cast

from volcanolib.api.cluster import ClusterInfo, SnapshotChanges, SnapshotDelta
from volcanolib.api.fiterrors import FitError, FitErrors
from volcanolib.api.hypernode import (
    JOB_ALLOCATED_HYPER_NODE,
    HyperNodeInfo,
    HyperNodeTree,
    set_allocated_hyper_node,
)
from volcanolib.api.job import JobInfo, PodGroup, PodGroupCondition, PodGroupPhase
from volcanolib.api.node import NodeInfo
from volcanolib.api.queue import QueueInfo
from volcanolib.api.resource import Resource
from volcanolib.api.task import (
    ALLOCATED_STATUSES,
    TaskInfo,
    TaskStatus,
)
from volcanolib.errors import PluginError
from volcanolib.framework import combine
from volcanolib.framework.carry import Carry, JobSums, PartSums
from volcanolib.framework.carry import whole as _whole
from volcanolib.framework.config import Arguments, PluginOption, SchedulerConfig
from volcanolib.framework.dispatch import Tables, bind, trace_enabled
from volcanolib.framework.hookspecs import SPECS
from volcanolib.framework.nodeclass import NodeClasses, NodeClassKey, NodeClassPlan
from volcanolib.framework.placement import Placement
from volcanolib.framework.statement import Statement
from volcanolib.framework.status import Code, Event, Status

if TYPE_CHECKING:
    from volcanolib.cache.protocol import Cache
    from volcanolib.framework.victims import EvictionContext

__all__ = ["Session", "compare_tasks_by_name"]

log = logging.getLogger(__name__)
_NEG_INF: Final = float("-inf")
#: The keys of :attr:`Session.plugin_seconds` (Volcano's names for the two moments).
OPENING: Final = "OnSessionOpen"
CLOSING: Final = "OnSessionClose"
#: Hooks called once a session, each plugin's time taken (see :attr:`Session.plugin_seconds`).
_LIFECYCLE: Final = frozenset({"on_session_open", "on_session_resume", "on_session_close"})


#: Hooks the session calls itself, behind its own methods (open, close, fire_allocate, fire_deallocate,
#: best_node): their combined answers are kept under these names. Every other one is named after its hook.
_PRIVATE: Final = {
    "on_allocate": "_on_allocate",
    "on_deallocate": "_on_deallocate",
    "best_node": "_best_node",
}


def _faster_form(hook: str) -> str:
    """The hook declared as the faster form of ``hook`` (its sort key or its batch)."""
    return next(spec.name for spec in SPECS.values() if spec.form_of == hook)


# ------------------------------------------------------------------------ fallback orders


def _cmp(a: Any, b: Any) -> int:
    return -1 if a < b else (1 if a > b else 0)


def _job_fallback(left: JobInfo, right: JobInfo) -> int:
    return _cmp(left.creation_timestamp, right.creation_timestamp) or _cmp(left.uid, right.uid)


def _job_fallback_key(job: JobInfo) -> tuple[Any, ...]:
    return (job.creation_timestamp, job.uid)


def _no_opinion(left: Any, right: Any) -> int:
    return 0


_MISSING: Final = object()


def _no_key(item: Any) -> tuple[Any, ...]:
    return ()


def _queue_fallback(left: QueueInfo, right: QueueInfo) -> int:
    return _cmp(left.creation_timestamp, right.creation_timestamp) or _cmp(left.name, right.name)


def _queue_fallback_key(queue: QueueInfo) -> tuple[Any, ...]:
    return (queue.creation_timestamp, queue.name)


@functools.lru_cache(maxsize=1 << 16)
def _name_index(name: str) -> int | None:
    """The index a pod name ends with (``job-task-3``: 3), ``None`` without one.

    Remembered by name: the default task order asks on every comparison.
    """
    parts = name.split("-")
    if len(parts) <= 2:
        return None
    try:
        return int(parts[-1])
    except ValueError:
        return None


def compare_tasks_by_name(left: TaskInfo, right: TaskInfo) -> int:
    """The default task order: the pod-name index (``job-task-3``), then creation time, then uid."""
    li = _name_index(left.name)
    ri = _name_index(right.name)
    if li is None or ri is None or li == ri:
        return _cmp(left.creation_timestamp, right.creation_timestamp) or _cmp(left.uid, right.uid)
    return -1 if li < ri else 1


def _task_fallback_key(task: TaskInfo) -> tuple[Any, ...]:
    index = _name_index(task.name)
    return (-1 if index is None else index, task.creation_timestamp, task.uid)


def _key_compare(key: Callable[[Any], Any]) -> Callable[[Any, Any], int]:
    def compare(left: Any, right: Any) -> int:
        return _cmp(key(left), key(right))

    return compare


class Session:
    """One scheduling cycle.

    Created by the :class:`~volcanolib.scheduler.Scheduler` (or
    :func:`volcanolib.testing.open_session`); actions receive it open.

    State, from the snapshot: :attr:`jobs`, :attr:`nodes`, :attr:`node_list`
    (ready nodes in cache order), :attr:`queues`, :attr:`total_resource`.
    Combined plugin answers, each applying its hook's declared rule: the
    attributes below, named after their hooks, the order comparators and
    keys, and the helpers :meth:`predicate_nodes`, :meth:`node_order`,
    :meth:`prioritize_nodes`, :meth:`best_node`.
    """

    # Combined answers named after their hooks, filled from the hooks' declarations by _compile. A new hook
    # whose rule is in combine.BUILDERS needs only its declaration in hookspecs and its type here.
    #: ``pre_predicate``: the first failure in tier order, else success.
    pre_predicate: Callable[[TaskInfo], Status]
    #: ``predicate`` (or ``batch_predicate`` about one node): the first failure in tier order, naming its plugin.
    predicate: Callable[[TaskInfo, NodeInfo], Status]
    #: ``node_order`` and ``batch_node_order``: each node's score summed over the plugins, by node name.
    node_scores: Callable[[TaskInfo, Sequence[NodeInfo]], dict[str, float]]
    #: ``hyper_node_order``: each candidate HyperNode's score for a job, summed over the plugins, by name.
    hyper_node_order: Callable[[JobInfo, Mapping[str, Sequence[NodeInfo]]], dict[str, float]]
    #: ``hyper_node_gradient``: the first plugin's groups of HyperNodes to try for a job, or ``None``.
    hyper_node_gradient: Callable[[JobInfo, HyperNodeInfo], Sequence[Sequence[str]] | None]
    #: ``preemptable``: the victims the first deciding tier agrees on, or ``None``.
    preemptable: Callable[[TaskInfo, Sequence[TaskInfo]], list[TaskInfo] | None]
    #: ``reclaimable``: the victims the first deciding tier agrees on, or ``None``.
    reclaimable: Callable[[TaskInfo, Sequence[TaskInfo]], list[TaskInfo] | None]
    #: ``unified_evictable``: the victims a gang-aware action may evict, from the first deciding tier, or ``None``.
    unified_evictable: Callable[[EvictionContext, Sequence[TaskInfo]], list[TaskInfo] | None]
    #: ``victim_tasks``: the running tasks the first naming tier wants rescheduled (empty when none).
    victim_tasks: Callable[[Sequence[TaskInfo]], list[TaskInfo]]
    #: ``preemptive``: whether tasks of a queue may reclaim from other queues.
    preemptive: Callable[[QueueInfo, Sequence[TaskInfo]], bool]
    #: ``overused``: whether a queue must stop receiving resources.
    overused: Callable[[QueueInfo], bool]
    #: ``allocatable``: whether a task of a queue may take resources now.
    allocatable: Callable[[QueueInfo, TaskInfo], bool]
    #: ``job_valid``: the first failure in tier order, else success.
    job_valid: Callable[[JobInfo], Status]
    #: ``job_ready``: whether a job has enough tasks placed to be bound.
    job_ready: Callable[[JobInfo], bool]
    #: ``job_pipelined``: the tiers' vote on keeping a job's placements.
    job_pipelined: Callable[[JobInfo], bool]
    #: ``job_starving``: whether a job still needs resources.
    job_starving: Callable[[JobInfo], bool]
    #: ``job_enqueueable``: the tiers' vote on admitting a job.
    job_enqueueable: Callable[[JobInfo], bool]
    #: ``job_enqueued``: tell every plugin that enqueue admitted a job.
    job_enqueued: Callable[[JobInfo], None]
    _on_allocate: Callable[[Event], None]
    _on_deallocate: Callable[[Event], None]
    _best_node: Callable[[TaskInfo, Mapping[float, Sequence[NodeInfo]]], NodeInfo | None]
    # Orders: rule ``first_nonzero``, then the hook's tie-break.
    #: Compare two jobs (<0: left first); then creation time and uid.
    compare_jobs: Callable[[JobInfo, JobInfo], int]
    #: The sort key matching :attr:`compare_jobs`.
    job_key: Callable[[JobInfo], Any]
    #: Compare two jobs by the plugins only (0 when every plugin abstains), for victim order.
    compare_jobs_by_plugins: Callable[[JobInfo, JobInfo], int]
    #: The key behind :attr:`compare_jobs_by_plugins` when every plugin orders jobs by a key, else ``None``.
    job_key_by_plugins: Callable[[JobInfo], Any] | None
    #: Compare two queues; then creation time and name.
    compare_queues: Callable[[QueueInfo, QueueInfo], int]
    #: The sort key matching :attr:`compare_queues`.
    queue_key: Callable[[QueueInfo], Any]
    #: Compare two tasks of a job; then the pod-name index, creation time and uid.
    compare_tasks: Callable[[TaskInfo, TaskInfo], int]
    #: The sort key matching :attr:`compare_tasks`.
    task_key: Callable[[TaskInfo], Any]
    #: Compare two queues whose tasks are victims for a preemptor; then the reverse of the queue order.
    compare_victim_queues: Callable[[QueueInfo, QueueInfo, TaskInfo], int]
    #: Whether some plugin orders victim queues (``victim_queue_order``).
    has_victim_queue_order: bool

    def __init__(
        self,
        cache: Cache,
        config: SchedulerConfig,
        tables: Tables,
        plugins: Mapping[str, Any],
        *,
        seed: int = 0,
        uid: str | None = None,
        clock: Callable[[], float] = time.time,
        carry: Carry | None = None,
    ) -> None:
        self.uid = uid or str(uuid.uuid4())
        self.cache = cache
        self.config = config
        self.plugins = plugins
        self.rng = random.Random(seed)
        self.clock = clock
        self._tables = tables
        #: Jobs by uid (``namespace/name``).
        self.jobs: dict[str, JobInfo] = {}
        #: Ready nodes by name.
        self.nodes: dict[str, NodeInfo] = {}
        #: Ready nodes, in the order the cache received them.
        self.node_list: list[NodeInfo] = []
        #: Queues by name.
        self.queues: dict[str, QueueInfo] = {}
        #: The HyperNode tree over the ready nodes, under the virtual cluster top.
        self.hyper_nodes = HyperNodeTree((), ())
        #: Per job uid: the HyperNode the job's placed tasks share, while ``allocate`` places a job with a
        #: network topology (what a scoring plugin compares nodes with).
        self.hyper_node_hints: dict[str, str] = {}
        #: Jobs left out of the snapshot, with the reason.
        self.skipped_jobs: dict[str, str] = {}
        #: The sum of every ready node's allocatable resources.
        self.total_resource = Resource()
        #: Tasks sent to the binder in this session, with their node.
        self.binds: list[tuple[TaskInfo, str]] = []
        #: Tasks sent to the evictor in this session, with the reason.
        self.evictions: list[tuple[TaskInfo, str]] = []
        #: Plugin failures recorded during the session.
        self.plugin_errors: list[PluginError] = []
        #: Seconds each plugin spent opening the session (``on_session_open``, or resuming) and closing it.
        self.plugin_seconds: dict[str, dict[str, float]] = {OPENING: {}, CLOSING: {}}
        #: Preemption attempts in this session: a preemptor tried on a node with victims the plugins allow.
        self.preemption_attempts = 0
        #: How many victims the last of those attempts had (``None`` before any).
        self.preemption_victims: int | None = None
        #: Names of the nodes whose tasks changed since the snapshot, one entry per allocate or
        #: deallocate event, oldest first; indexes over nodes read it to stay current.
        self.node_log: list[str] = []
        # Jobs whose tasks changed status here, and where to report them (and node_log) at close.
        self._touched_jobs: set[str] = set()
        self._changes: SnapshotChanges | None = None
        # Each job's PodGroup status as loaded (:func:`_status_signature`), to tell at close whether it changed.
        self._baseline: dict[str, tuple[object, ...]] = {}
        # With a delta, each job's PodGroup and notes as loaded (:func:`_job_mark`), to skip at close
        # the jobs this session left alone.
        self._marks: dict[str, tuple[object, ...]] = {}
        # Jobs the previous session left settled and the cache did not change since (see unsettled_jobs),
        # the other jobs in session order, and the settled ones this session changed all the same.
        self._settled: set[str] = set()
        self._unsettled: list[JobInfo] = []
        self._woken: set[str] = set()
        self._placement: Placement | None = None
        #: What differs from the previous session's snapshot, when this session follows it (see
        #: :class:`~volcanolib.framework.carry.Carry`); ``None`` when everything is computed afresh.
        self.delta: SnapshotDelta | None = None
        self._carry = carry
        self._kept_classes: NodeClasses | None = None
        # Whether every plugin prepared (only then may the next session trust what they keep).
        self._prepared = False
        self._compile()

    # ------------------------------------------------------------------ configuration

    @property
    def tiers(self) -> Sequence[Any]:
        """The configuration's tiers."""
        return self.config.tiers

    @property
    def enabled_actions(self) -> frozenset[str]:
        """The names of the configured actions."""
        return frozenset(self.config.actions)

    def action_arguments(self, action: str) -> Arguments:
        """The ``configurations`` arguments of one action."""
        return self.config.action_arguments(action)

    def plugin_option(self, name: str) -> PluginOption | None:
        """The configuration entry of a plugin (its first listing)."""
        for option in self.config.plugin_options():
            if option.name == name:
                return option
        return None

    def hierarchy_enabled(self, plugin: str) -> bool:
        """Whether ``enableHierarchy`` is set for a plugin."""
        option = self.plugin_option(plugin)
        return bool(option and option.enable_hierarchy)

    # ------------------------------------------------------------------ compilation

    def _table(self, hook: str) -> combine.Table:
        return bind(self, hook, self._tables.get(hook, ()), trace=self._trace)

    def implemented(self, hook: str) -> bool:
        """Whether some plugin of the configuration takes part in ``hook`` (implements it, its switch on).

        .. versionadded:: 0.2
        """
        return any(self._tables.get(hook, ()))

    def order_by_key(self, hook: str) -> bool:
        """Whether every plugin taking part in an order hook (``job_order``, ``task_order`` ...) gives keys."""
        return self._key_based.get(hook, False)

    def _order(
        self,
        hook: str,
        fallback: Callable[[Any, Any], int],
        fallback_key: Callable[[Any], tuple[Any, ...]],
    ) -> tuple[Callable[[Any, Any], int], Callable[[Any], Any]]:
        """Rule ``first_nonzero`` for an order hook and its key form, merged in configuration order."""
        keys = {plugin: fn for tier in self._table(_faster_form(hook)) for plugin, fn in tier}
        cmps = {plugin: fn for tier in self._table(hook) for plugin, fn in tier}
        merged: list[tuple[str, Callable[..., Any], bool]] = []
        for tier in self.config.tiers:
            for option in tier.plugins:
                if option.name in keys:
                    merged.append((option.name, keys[option.name], True))
                elif option.name in cmps:
                    merged.append((option.name, cmps[option.name], False))
        self._key_based[hook] = all(is_key for _, _, is_key in merged)
        if self._key_based[hook]:
            key = combine.key_tuple((tuple((p, f) for p, f, _ in merged),), fallback_key, self._order_failed)
            return _key_compare(key), key
        entries = tuple((p, _key_compare(f) if is_key else f) for p, f, is_key in merged)
        compare = combine.first_nonzero((entries,), fallback, self._order_failed)
        return compare, functools.cmp_to_key(compare)

    def _keys_are_local(self, hook: str) -> bool:
        """Whether every plugin giving ``hook`` (``job_order_key``, ``task_order_key``) says its key is local."""
        names = {entry.plugin for tier in self._tables.get(hook, ()) for entry in tier}
        return all(getattr(self.plugins.get(name), f"{hook}_is_local", False) is True for name in names)

    @staticmethod
    def _remembered(key: Callable[[Any], Any], memo: dict[str, Any]) -> Callable[[Any], Any]:
        def remembered(item: Any) -> Any:
            value = memo.get(item.uid, _MISSING)
            if value is _MISSING:
                value = memo[item.uid] = key(item)
            return value

        return remembered

    @property
    def task_keys_are_local(self) -> bool:
        """Whether every plugin giving a task key says it reads only its task (``task_order_key_is_local``).

        Then a task's :attr:`task_key` changes only when the task does.
        """
        return self._task_keys is not None

    def _forget_job_key(self, task: TaskInfo) -> None:
        """A task changed: its key and its job's plugins' key must be taken again."""
        memo = self._job_keys
        if memo:
            memo.pop(task.job, None)
        memo = self._task_keys
        if memo:
            memo.pop(task.uid, None)

    def _order_failed(self, err: PluginError) -> None:
        """An order plugin failed: it abstains from that comparison; recorded once per plugin and hook."""
        if (err.plugin, err.hook) not in self._order_faults:
            self._order_faults.add((err.plugin, err.hook))
            self.record_plugin_error(err)

    def _compile(self) -> None:
        """Build the combined answers every session uses from the hooks' declarations.

        Hooks whose rule needs nothing but their table (:data:`_BUILT`) are
        built when first read, as few sessions read them all.
        """
        self._key_based: dict[str, bool] = {}
        self._order_faults: set[tuple[str | None, str | None]] = set()
        self._trace = trace_enabled()

        # Orders (``first_nonzero``), each with its key form and its tie-break.
        self.compare_jobs, self.job_key = self._order("job_order", _job_fallback, _job_fallback_key)
        by_plugins, plugins_key = self._order("job_order", _no_opinion, _no_key)
        self.compare_jobs_by_plugins = by_plugins
        self.job_key_by_plugins = plugins_key if self._key_based.get("job_order") else None
        # Jobs' keys by uid while none of their tasks changed, when every plugin's key depends on
        # its job alone (``job_order_key_is_local``).
        self._job_keys: dict[str, Any] | None = None
        if self.job_key_by_plugins is not None and self._keys_are_local("job_order_key"):
            self._job_keys = {}
            self.job_key_by_plugins = self._remembered(plugins_key, self._job_keys)
        self.compare_queues, self.queue_key = self._order("queue_order", _queue_fallback, _queue_fallback_key)
        self.compare_tasks, self.task_key = self._order("task_order", compare_tasks_by_name, _task_fallback_key)
        # Tasks' keys by uid while they do not change, when every plugin's key depends on its task
        # alone (``task_order_key_is_local``): victim ordering asks for the same running tasks' keys.
        self._task_keys: dict[str, Any] | None = None
        if self.order_by_key("task_order") and self._keys_are_local("task_order_key"):
            self._task_keys = {}
            self.task_key = self._remembered(self.task_key, self._task_keys)
        victim_queues = self._table("victim_queue_order")
        self.has_victim_queue_order = any(tier for tier in victim_queues)
        compare_queues = self.compare_queues
        self.compare_victim_queues = combine.first_nonzero(
            victim_queues, lambda left, right, preemptor: -compare_queues(left, right), self._order_failed
        )

        # Node checks (``all_pass``) and scores (``weighted_sum``): per node, and over many nodes at once.
        self._predicate_entries = self._per_node_and_batch("predicate")
        self._score_entries = self._per_node_and_batch("node_order")
        self.predicate = combine.all_pass(combine.one_node(self._predicate_entries))
        self._predicate_nodes = combine.all_pass_nodes(self._predicate_entries)
        self.node_scores = combine.weighted_sum(self._score_entries)
        self._class_entries = self._node_class_entries()
        self._class_keys = None if self._class_entries is None else combine.all_or_none((self._class_entries,))
        self._plans: dict[tuple[Hashable, ...], NodeClassPlan] = {}

    def _per_node_and_batch(self, per_node: str) -> tuple[combine.NodeEntry, ...]:
        """Every plugin implementing a node hook or its batch form: name, per-node function, batch function."""
        singles = {p: f for tier in self._table(per_node) for p, f in tier}
        batches = {p: f for tier in self._table(_faster_form(per_node)) for p, f in tier}
        out = []
        for tier in self.config.tiers:
            for option in tier.plugins:
                single = singles.get(option.name)
                many = batches.get(option.name)
                if single is not None or many is not None:
                    out.append((option.name, single, many))
        return tuple(out)

    def _node_class_entries(self) -> tuple[tuple[str, Callable[[TaskInfo], NodeClassKey | None]], ...] | None:
        """The ``node_class_key`` implementations of every plugin that checks or scores nodes, or ``None``."""
        if any(tier for tier in self._table("best_node")):
            return None
        keys = {p: f for tier in self._table("node_class_key") for p, f in tier}
        needed = dict.fromkeys(p for p, _, _ in self._predicate_entries + self._score_entries)
        if any(p not in keys for p in needed):
            return None
        return tuple((p, keys[p]) for p in needed)

    # ------------------------------------------------------------------ lifecycle

    def open(self) -> None:
        """Take the cache's snapshot and let every plugin prepare, in tier order.

        The same as :meth:`load` of ``cache.snapshot()`` followed by :meth:`prepare`.

        :raises PluginError: when a plugin fails in ``on_session_open``.
        """
        self.load(self.cache.snapshot())
        self.prepare()

    def prepare(self) -> None:
        """Let every plugin prepare for the loaded snapshot (``on_session_open``), in tier order.

        Call it once, after :meth:`load` and before the first action;
        :meth:`open` does both. Job order keys taken while plugins prepared
        are dropped afterwards, since a plugin may still have been changing
        the state they read.

        When the session follows the previous one of its scheduler
        (:attr:`delta`), plugins implementing ``on_session_resume`` update
        what they kept instead of opening afresh.

        :raises PluginError: when a plugin fails in ``on_session_open`` or
            ``on_session_resume`` (the scheduler then records it and runs no
            action in that cycle).
        """
        carry = self._carry
        if carry is not None:
            carry.opened()
        try:
            table = self._table("on_session_open")
            if self.delta is not None:
                table = self._resuming(table, self.delta)
            combine.call_all(combine.timed(table, self.plugin_seconds[OPENING]))()
            self._prepared = True
        finally:
            # A key taken while plugins were still preparing may be out of date.
            if self._job_keys:
                self._job_keys.clear()
            if self._task_keys:
                self._task_keys.clear()

    def _resuming(self, table: combine.Table, delta: SnapshotDelta) -> combine.Table:
        """The ``on_session_open`` table with ``on_session_resume`` in place for the plugins that may resume."""
        assert self._carry is not None
        failed = self._carry.failed
        resume = {p: fn for tier in self._table("on_session_resume") for p, fn in tier if p not in failed}
        if not resume:
            return table
        return tuple(
            tuple((plugin, functools.partial(resume[plugin], delta) if plugin in resume else fn) for plugin, fn in tier)
            for tier in table
        )

    def load(self, snapshot: ClusterInfo) -> None:
        """Adopt a snapshot as this session's state (without calling plugins)."""
        self.jobs = snapshot.jobs
        self._changes = snapshot.changes
        carry = self._carry
        self.delta = carry.delta(snapshot) if carry is not None else None
        if carry is not None:
            carry.opened()
        kept = carry.node_classes if carry is not None and self.delta is not None else None
        self._kept_classes = kept if kept is not None and self.delta is not None and self.delta.same_nodes else None
        if self._job_keys:
            self._job_keys.clear()
        if self._task_keys:
            self._task_keys.clear()
        self.nodes = snapshot.nodes
        self.node_list = snapshot.node_list
        self.queues = snapshot.queues
        self.hyper_nodes = snapshot.hyper_nodes
        self.skipped_jobs = dict(snapshot.skipped_jobs)
        self.total_resource = self._total_allocatable()
        baseline, marks = self._baseline, self._marks
        delta = self.delta
        settled = self._settled = carry.settled - delta.jobs if carry is not None and delta is not None else set()
        jobs = self.jobs
        unsettled = self._unsettled = (
            [job for uid, job in jobs.items() if uid not in settled] if settled else list(jobs.values())
        )
        follows = delta is not None
        for job in unsettled:
            baseline[job.uid] = _status_signature(job.pod_group)
            if follows:
                marks[job.uid] = _job_mark(job)
        tree = self.hyper_nodes
        for job in unsettled:
            pg = job.pod_group
            if pg.network_topology is not None or pg.annotations.get(JOB_ALLOCATED_HYPER_NODE):
                # As Volcano's session opens: drop a stale allocated HyperNode, recover a missing one.
                set_allocated_hyper_node(job, tree.allocated_hyper_node(job))

    def _total_allocatable(self) -> Resource:
        """The sum of the ready nodes' allocatable; with a carry, kept node by node from the previous session."""
        carry = self._carry
        if carry is None:
            total = Resource()
            for node in self.node_list:
                total.add(node.allocatable)
            return total
        delta = self.delta
        sums = carry.allocatable if delta is not None else None
        if sums is not None and delta is not None:
            nodes = self.nodes
            for name in delta.replaced_nodes():  # the others kept their allocatable
                changed = nodes.get(name)
                sums.put(name, changed.allocatable.clone() if changed is not None else None)
        if sums is None or not sums.exact:
            sums = PartSums()
            sums.put_all((node.name, node.allocatable.clone()) for node in self.node_list)
        carry.allocatable = sums
        return sums.total.clone()

    def close(self) -> None:
        """Let plugins finish, then write job and queue status back to the cache.

        A plugin failing in ``on_session_close`` is recorded; status is
        written all the same. When the snapshot came with
        :attr:`~volcanolib.api.cluster.ClusterInfo.changes`, the session then
        reports there the nodes (:attr:`node_log`) and jobs whose state it
        changed, so that the cache's next snapshot can reuse the rest.
        """
        try:
            combine.call_all(combine.timed(self._table("on_session_close"), self.plugin_seconds[CLOSING]))()
        except PluginError as err:
            self.record_plugin_error(err)
        candidates = self.unsettled_jobs()
        for job in self._jobs_to_write(candidates):
            changed = self._update_job_status(job)
            self.cache.update_job_status(job, changed)
        for queue in self._queue_status():
            self.cache.update_queue_status(queue)
        changes = self._changes
        if changes is not None:
            # Tell the cache what this session changed, so its next snapshot re-copies only that.
            changes.report(self.node_log, self._touched_jobs)
        carry = self._carry
        if carry is not None and self._prepared:
            failed = frozenset(err.plugin or "" for err in self.plugin_errors)
            placement = self._placement
            if changes is not None and _QUIET_JOBS:
                settled = self._settled
                settled -= self._woken
                settled.update(job.uid for job in candidates if _settles(job))
                carry.settled = settled
            else:
                carry.settled = set()
            carry.hand_over(changes, failed, placement.node_classes() if placement is not None else None)

    def release(self) -> None:
        """Drop what ties the session to itself (its combined answers and placement), once it is closed.

        The session's state (jobs, nodes, queues, what it decided) stays
        readable, but no plugin hook may be called through it afterwards.
        Nothing then keeps it alive but references from outside, so it is
        freed as soon as those go, without the cyclic garbage collector: a
        long replay releases each session it is done with.

        .. versionadded:: 0.2
        """
        attributes = self.__dict__
        for name in _COMPILED:
            attributes.pop(name, None)
        for name in _BUILT:
            attributes.pop(name, None)
        self._placement = None

    def unsettled_jobs(self) -> list[JobInfo]:
        """The jobs that may still need an action or a status write in this session, in :attr:`jobs` order.

        Every job, except those the previous session of the same scheduler
        left *settled* and that have not changed since: every task placed
        and none pending or pipelined, ready, its PodGroup past Pending, no
        fit error noted. For such a job ``enqueue``, ``allocate`` and
        ``backfill`` have nothing to do and its status stays as written, so
        they and ``gang``'s close walk only these jobs. A settled job whose
        task changes status in this session (an eviction, say), or whose
        condition a plugin sets with :meth:`update_pod_group_condition`, is
        in the list again from then on; a plugin changing a job in some other
        way calls :meth:`unsettle` first.

        .. versionadded:: 0.2
        """
        if not self._settled:
            return list(self.jobs.values())
        woken = self._woken
        if not woken:
            return list(self._unsettled)
        settled = self._settled
        return [job for uid, job in self.jobs.items() if uid not in settled or uid in woken]

    def unsettle(self, job: JobInfo) -> None:
        """Count a job among :meth:`unsettled_jobs` from now on, so that close writes its status if it changed.

        For a plugin about to change a job in a way the session does not see
        (a note or a PodGroup field set directly): call it first. Task status
        changes and :meth:`update_pod_group_condition` do it themselves.

        .. versionadded:: 0.2
        """
        uid = job.uid
        if uid not in self._settled or uid in self._woken:
            return
        self._woken.add(uid)
        if uid not in self._baseline:
            self._baseline[uid] = _status_signature(job.pod_group)
            self._marks[uid] = _job_mark(job)

    def _jobs_to_write(self, candidates: list[JobInfo]) -> Iterable[JobInfo]:
        """The jobs among ``candidates`` (:meth:`unsettled_jobs`) whose status close must compute and hand to the cache.

        Every one, unless the snapshot followed the previous one
        (:attr:`delta`): then a job the cache did not change since, whose
        tasks this session did not change, and whose PodGroup and notes are
        as loaded is left out. Its status is a function of those tasks and
        that PodGroup, which the previous session's close computed and the
        cache holds, so computing it again would change nothing.
        """
        delta = self.delta
        if delta is None or not _QUIET_JOBS:
            return candidates
        named, touched, marks = delta.jobs, self._touched_jobs, self._marks
        out = []
        for job in candidates:
            uid = job.uid
            if uid in named or uid in touched or job.nodes_fit_errors:
                out.append(job)
                continue
            loaded, now = marks.get(uid), _job_mark(job)
            if loaded is None or loaded[1:] != now[1:]:
                out.append(job)
            else:
                # The start time enqueue notes lasts one session: the copy goes back to the cache's, as
                # the cache would reset it for the next snapshot.
                job.schedule_start_timestamp = cast("float | None", loaded[0])
        return out

    def _update_job_status(self, job: JobInfo) -> bool:
        pg = job.pod_group
        # Each index key is one status, so a bucket's size is that status's count (job.count, without the scan).
        index = job.task_status_index
        pg.phase = job.status_phase(pg.unschedulable_in(self.uid))
        pg.running = len(index.get(TaskStatus.RUNNING, ()))
        pg.succeeded = len(index.get(TaskStatus.SUCCEEDED, ()))
        pg.failed = len(index.get(TaskStatus.FAILED, ()))
        return self._baseline.get(job.uid) != _status_signature(pg)

    def _queue_status(self) -> list[QueueInfo]:
        """Set every queue's ``allocated`` to the requests of the allocated tasks in it and its children.

        The result is the per-task sum, key for key and in the same scalar
        order, but taken from the jobs' kept totals (:attr:`JobInfo.allocated`):
        a job's total stands for its tasks when its scalars are all non-zero
        (a total can keep a key at zero after a task left, which the per-task
        sum would not have) and at most one (several may have been added in
        another order). Other jobs add their tasks one by one. Should a total
        hold a value that is not a whole number, where the order of additions
        could change the result, every task is added one by one as before.
        """
        allocated = self._kept_queue_totals()
        if allocated is None:
            allocated = self._queue_totals(by_job=True)
        if allocated is None:
            allocated = self._queue_totals(by_job=False)
            assert allocated is not None
        out = []
        for name, queue in self.queues.items():
            total = allocated[name]
            if len(total.scalars) > 1:  # in name order, however the sum was taken
                total.scalars = dict(sorted(total.scalars.items()))
            queue.allocated = total
            out.append(queue)
        return out

    def _kept_queue_totals(self) -> dict[str, Resource] | None:
        """What :meth:`_queue_totals` gives, from each queue's job sums kept since the previous session.

        Only the jobs the cache or this session changed are added up again
        (with a carry; the first session adds up every job). ``None`` without
        a carry, or when a sum is not exact (see
        :class:`~volcanolib.framework.carry.PartSums`).
        """
        carry = self._carry
        if carry is None:
            return None
        jobs, queues = self.jobs, self.queues
        delta = self.delta
        sums = carry.job_sums if delta is not None and not delta.queues else None
        carry.job_sums = None  # until this close is done: a failure half-way leaves nothing to trust
        if sums is None or delta is None:
            # Every job, into new sums: what putting them one by one gives, each queue's parts put at once.
            sums = JobSums()
            sums.put_jobs(jobs.values(), queues, _allocated_parts)
        else:
            sums.update_jobs(delta.jobs | self._touched_jobs, jobs, queues, _allocated_parts)
        carry.job_sums = sums
        if not sums.exact:
            return None
        allocated: dict[str, Resource] = {name: Resource() for name in queues}
        for leaf, (part,) in sums.queues.items():
            total = part.total
            if not part.parts:
                continue
            for res in _chain(queues, allocated, leaf):
                res.add(total)
        for res in allocated.values():
            if not (_whole(res.milli_cpu) and _whole(res.memory) and all(_whole(v) for v in res.scalars.values())):
                return None
        return allocated

    def _queue_totals(self, *, by_job: bool) -> dict[str, Resource] | None:
        """Per queue, the allocated requests of its jobs and its children's; ``None`` when a job total is not whole."""
        queues = self.queues
        allocated: dict[str, Resource] = {name: Resource() for name in queues}
        chains: dict[str, tuple[Resource, ...]] = {}
        for job in self.jobs.values():
            leaf = job.queue
            chain = chains.get(leaf)
            if chain is None:
                if leaf not in allocated:
                    continue
                chain = chains[leaf] = _chain(queues, allocated, leaf)
            if by_job:
                total = job.allocated
                if _stands_for_tasks(total):
                    for res in chain:
                        res.add(total)
                    continue
                scalars = total.scalars
                if not (_whole(total.milli_cpu) and _whole(total.memory)) or (
                    len(scalars) == 1 and not all(_whole(v) for v in scalars.values())
                ):
                    return None  # the tasks' own sum could depend on the order of additions
            for task in job.tasks_in(ALLOCATED_STATUSES):
                req = task.resreq
                for res in chain:
                    res.add(req)
        if by_job:
            for res in allocated.values():
                if not (_whole(res.milli_cpu) and _whole(res.memory) and all(_whole(v) for v in res.scalars.values())):
                    return None
        return allocated

    # ------------------------------------------------------------------ events and status

    def fire_allocate(self, task: TaskInfo) -> None:
        """Tell every plugin that a task took resources (``on_allocate``); log its node as changed."""
        self.node_log.append(task.node_name)
        try:
            self._on_allocate(Event(task))
        finally:
            self._forget_job_key(task)

    def fire_deallocate(self, task: TaskInfo) -> None:
        """Tell every plugin that a task gave resources back (``on_deallocate``); log its node as changed."""
        self.node_log.append(task.node_name)
        try:
            self._on_deallocate(Event(task))
        finally:
            self._forget_job_key(task)

    def set_task_status(self, task: TaskInfo, status: TaskStatus) -> None:
        """Change a task's status through its job, keeping the job's counts exact."""
        self._forget_job_key(task)
        self._touched_jobs.add(task.job)
        job = self.jobs.get(task.job)
        if job is not None:
            if task.job in self._settled:
                self.unsettle(job)
            job.update_task_status(task, status)
        else:
            task.status = status

    def note_preemption_attempt(self, victims: int) -> None:
        """Count one preemption attempt, with the number of victims the plugins allow (metrics).

        .. versionadded:: 0.2
        """
        self.preemption_attempts += 1
        self.preemption_victims = victims

    def record_plugin_error(self, err: PluginError, job: JobInfo | None = None) -> None:
        """Record a plugin failure; the scheduler reports it and carries on.

        It is logged as a warning: the cycle goes on, the job being scheduled
        keeps the state it had, and the failure is listed in the cycle's result.
        """
        self.plugin_errors.append(err)
        log.warning("%s%s", f"job {job.uid}: " if job is not None else "", err)

    @contextmanager
    def guard(self, job: JobInfo | None = None, stmt: Statement | None = None) -> Iterator[None]:
        """Run one job's scheduling; a plugin failure discards ``stmt`` and is recorded.

        Other jobs proceed; the failed job keeps the state it had.
        """
        try:
            yield
        except PluginError as err:
            if stmt is not None:
                stmt.discard_quietly(job)
            self.record_plugin_error(err, job)

    def update_pod_group_condition(self, job: JobInfo, condition: PodGroupCondition) -> None:
        """Set a PodGroup condition, replacing one of the same type."""
        if job.uid in self._settled:
            self.unsettle(job)
        condition.transition_id = self.uid
        condition.last_transition_time = self.clock()
        conditions = job.pod_group.conditions
        for i, existing in enumerate(conditions):
            if existing.type is condition.type:
                conditions[i] = condition
                return
        conditions.append(condition)

    # ------------------------------------------------------------------ operations

    def statement(self) -> Statement:
        """A new, empty statement on this session."""
        return Statement(self)

    def allocate(self, task: TaskInfo, node: NodeInfo) -> None:
        """Place a task outside any statement; bind the job's allocations once it is ready.

        The placement is an operation of a statement of its own, undone when a
        plugin fails on it (the failure is raised). Once the job is ready
        (``job_ready``), every allocated task of the job is dispatched.

        :raises ResourceError: when the node refuses the task (nothing changes).
        """
        stmt = Statement(self)
        try:
            stmt.allocate(task, node)
            job = self.jobs.get(task.job)
            ready = job is not None and self.job_ready(job)
        except PluginError:
            with suppress(PluginError):  # the first failure is the one reported
                stmt.discard()
            raise
        if ready:
            assert job is not None
            self.dispatch(list(job.tasks_in(TaskStatus.ALLOCATED)))

    def pipeline(self, task: TaskInfo, node_name: str) -> None:
        """Reserve releasing resources for a task outside any statement (a statement of its own)."""
        Statement(self).pipeline(task, node_name)

    def unpipeline(self, task: TaskInfo) -> None:
        """Return a pipelined task to Pending outside any statement, releasing its reservation."""
        Statement(self).unpipeline(task)

    def evict(self, task: TaskInfo, reason: str) -> None:
        """Evict a task at once: a statement of its own with the eviction, committed.

        :raises CacheError: when the cache refuses; the task is then as it was.
        """
        stmt = Statement(self)
        try:
            stmt.evict(task, reason)
        finally:
            refused = stmt.commit()  # sent even when a plugin failed on the event
        if refused:
            raise refused[0][1]

    def dispatch(self, tasks: Sequence[TaskInfo]) -> None:
        """Send allocated tasks to the binder; they become Binding."""
        for task in tasks:
            self.set_task_status(task, TaskStatus.BINDING)
            self.binds.append((task, task.node_name))
        self.cache.bind(tasks)

    # ------------------------------------------------------------------ predicates and scores

    def predicate_nodes(
        self,
        task: TaskInfo,
        nodes: Sequence[NodeInfo],
        *,
        for_preempt: bool = False,
        fit_errors: FitErrors | None = None,
    ) -> list[NodeInfo]:
        """The nodes, in order, on which a task passes every predicate (rule ``all_pass``).

        Plugins with :func:`batch_predicate` check all remaining nodes in one
        call. With ``for_preempt``, a plain ``UNSCHEDULABLE`` failure keeps
        the node (evicting may fix it) and ends its checks.

        :param fit_errors: receives the reason of every node that fails.
        """
        if not for_preempt and fit_errors is None:
            return self._predicate_nodes(task, nodes, None)

        def failed(node: NodeInfo, status: Status, plugin: str) -> bool:
            if for_preempt and status.code is Code.UNSCHEDULABLE:
                return True
            if fit_errors is not None:
                fit_errors.set_node_error(FitError(task.key, node.name, status.reasons or (plugin,)))
            return False

        return self._predicate_nodes(task, nodes, failed)

    def node_order(self, task: TaskInfo, node: NodeInfo) -> float:
        """The total score of a node for a task (every plugin's score, summed)."""
        return self.node_scores(task, [node]).get(node.name, 0.0)

    def prioritize_nodes(self, task: TaskInfo, nodes: Sequence[NodeInfo]) -> dict[float, list[NodeInfo]]:
        """Group candidate nodes by their total score."""
        scores = self.node_scores(task, nodes)
        grouped: dict[float, list[NodeInfo]] = {}
        for node in nodes:
            grouped.setdefault(scores[node.name], []).append(node)
        return grouped

    def node_class_plan(self, task: TaskInfo) -> NodeClassPlan | None:
        """How to group nodes for a task so that one node per class is checked and scored.

        ``None`` when some plugin that checks or scores nodes cannot say
        (see the ``node_class_key`` hook); then every node counts on its own.
        """
        keys = self._class_keys
        if keys is None:
            return None
        answers: tuple[NodeClassKey, ...] | None = keys(task)
        if answers is None:
            return None
        # Plugins usually hand out the same keys for alike tasks: make each plan once. Equal tokens mean equal
        # key functions (NodeClassKey), so keys that are new objects with the tokens of a known plan reuse it.
        # Plans are found by the keys themselves first (the same key objects, mostly: cheap to hash and compare).
        found = self._plans.get(answers)
        if found is not None:
            return found
        signature = tuple([(answer.token, answer.pointwise, answer.durable) for answer in answers])
        found = self._plans.get(signature)
        if found is not None:
            if len(self._plans) >= _MAX_PLANS:
                self._plans.clear()
            self._plans[answers] = found
            return found
        assert self._class_entries is not None
        plugins = [plugin for plugin, _ in self._class_entries]
        plan = NodeClassPlan(
            tuple((plugin, answer.token) for plugin, answer in zip(plugins, answers, strict=True)),
            tuple(
                combine.guard(plugin, "node_class_key", answer.key, arity=1)
                for plugin, answer in zip(plugins, answers, strict=True)
            ),
            all(answer.pointwise for answer in answers),
            all(answer.durable for answer in answers),
        )
        if len(self._plans) >= _MAX_PLANS - 1:
            self._plans.clear()
        self._plans[signature] = self._plans[answers] = plan
        return plan

    def select_best_node(self, scores: Mapping[float, Sequence[NodeInfo]]) -> NodeInfo | None:
        """The highest-scoring node; ties are broken by the session's seeded generator."""
        best: Sequence[NodeInfo] = ()
        best_score = _NEG_INF
        for score, nodes in scores.items():
            if score > best_score and nodes:
                best_score, best = score, nodes
        if not best:
            return None
        if len(best) == 1:
            return best[0]
        return best[self.rng.randrange(len(best))]

    def best_node(self, task: TaskInfo, nodes: Sequence[NodeInfo]) -> NodeInfo | None:
        """Choose a node for a task among feasible ones: score, ask ``best_node``, else the top score."""
        return self.best_node_and_score(task, nodes)[0]

    def best_node_and_score(self, task: TaskInfo, nodes: Sequence[NodeInfo]) -> tuple[NodeInfo | None, float]:
        """:meth:`best_node`, with the chosen node's total score.

        The score is 0 when there is one node or a ``best_node`` plugin chose.

        .. versionadded:: 0.2
        """
        if not nodes:
            return None, 0.0
        if len(nodes) == 1:
            return nodes[0], 0.0
        scores = self.prioritize_nodes(task, nodes)
        chosen = self._best_node(task, scores)
        if chosen is not None:
            return chosen, 0.0
        best = self.select_best_node(scores)
        if best is None:
            return None, 0.0
        return best, next(score for score, group in scores.items() if best in group)

    def sorted_by_score(self, task: TaskInfo, nodes: Sequence[NodeInfo]) -> list[NodeInfo]:
        """Nodes by descending score, ties in the given order."""
        scores = self.node_scores(task, nodes)
        return sorted(nodes, key=lambda n: -scores[n.name])

    # ------------------------------------------------------------------ helpers for actions

    @property
    def placement(self) -> Placement:
        """Where tasks may go in this session: feasible nodes, the best node, and why not."""
        placement = self._placement
        if placement is None or placement.nodes is not self.node_list:
            # The previous session's node classes serve the first placement only (it sees the snapshot's nodes).
            kept, self._kept_classes = self._kept_classes, None
            delta = self.delta
            # A node brought up to date in place holds the same pods and resources: it keeps its class.
            changed = delta.nodes_with_changed_pods() if delta is not None else frozenset()
            placement = self._placement = Placement(self, kept if placement is None else None, changed)
        return placement

    def job_schedulable(self, job: JobInfo) -> bool:
        """Volcano's common job filter for actions: admitted (not Pending), valid, and its queue exists."""
        if job.is_pending():
            return False
        if not self.job_valid(job).ok:
            return False
        return job.queue in self.queues

    def queue_overused(self, queue: QueueInfo) -> bool:
        """Whether the plugins say a queue is overused; a plugin failure is recorded and counts as yes."""
        overused = True
        with self.guard():
            overused = self.overused(queue)
        if overused:
            log.debug("queue %s is overused", queue.name)
        return overused

    def ready_nodes(self, names: Iterable[str]) -> list[NodeInfo]:
        """The named nodes that are in the session, in the given order."""
        return [self.nodes[n] for n in names if n in self.nodes]


class _Built:
    """A combined answer of one hook, built on a session's first read and kept in its ``__dict__``."""

    __slots__ = ("build", "hook", "name")

    def __init__(self, hook: str, name: str, build: Callable[[combine.Table], Any]) -> None:
        self.hook, self.name, self.build = hook, name, build

    def __get__(self, ssn: Session | None, owner: type[Session]) -> Any:
        if ssn is None:
            return self
        value = self.build(ssn._table(self.hook))
        ssn.__dict__[self.name] = value
        return value


def _built_hooks() -> dict[str, str]:
    """Hooks whose rule needs nothing but their table, by the attribute of the session answering them."""
    faster = {spec.form_of for spec in SPECS.values()}
    out = {}
    for spec in SPECS.values():
        if spec.rule not in combine.BUILDERS or spec.form_of is not None or spec.name in faster:
            continue  # orders, node checks and scores, node class keys: built by _compile
        if spec.name not in _LIFECYCLE:  # opening (or resuming) and closing: timed, in prepare and close
            out[_PRIVATE.get(spec.name, spec.name)] = spec.name
    return out


#: The session attributes answering a hook whose rule needs nothing but its table, with their hooks.
_BUILT: Final = _built_hooks()
#: The attributes _compile sets that hold functions bound to the session (see :meth:`Session.release`).
_COMPILED: Final = (
    "compare_jobs",
    "job_key",
    "compare_jobs_by_plugins",
    "job_key_by_plugins",
    "_job_keys",
    "compare_queues",
    "queue_key",
    "compare_tasks",
    "task_key",
    "_task_keys",
    "compare_victim_queues",
    "_predicate_entries",
    "_score_entries",
    "predicate",
    "_predicate_nodes",
    "node_scores",
    "_class_entries",
    "_class_keys",
    "_plans",
)
for _name, _hook in _BUILT.items():
    setattr(Session, _name, _Built(_hook, _name, combine.BUILDERS[SPECS[_hook].rule]))


#: Node class plans remembered per session before starting over.
_MAX_PLANS: Final = 1024


#: Whether close leaves out the jobs a following session left alone (tests switch it off to compare).
_QUIET_JOBS = True


def _stands_for_tasks(total: Resource) -> bool:
    """Whether a job's kept total (:attr:`JobInfo.allocated`) is its allocated tasks' requests added up, key for key.

    It is when its amounts are whole and it names no scalar, or one that is
    not zero (a total keeps a key at zero after its last task of that
    resource left, and orders several keys as they came).
    """
    scalars = total.scalars
    return (
        _whole(total.milli_cpu)
        and _whole(total.memory)
        and (not scalars or (len(scalars) == 1 and all(v and _whole(v) for v in scalars.values())))
    )


def _allocated_parts(job: JobInfo) -> tuple[Resource]:
    """A job's part of its queue's :class:`JobSums`: the requests of its allocated tasks, added up.

    The amount is a copy of the job's kept total where that is the same sum.
    """
    total = job.allocated
    if _stands_for_tasks(total):
        return (total.clone(),)
    amount = Resource()
    for task in job.tasks_in(ALLOCATED_STATUSES):
        amount.add(task.resreq)
    return (amount,)


def _chain(queues: Mapping[str, QueueInfo], totals: Mapping[str, Resource], leaf: str) -> tuple[Resource, ...]:
    """The totals of a queue and of its ancestors up to root (root itself is every queue's parent)."""
    chain = []
    name: str | None = leaf
    seen = set()
    while name is not None and name in totals and name not in seen:
        seen.add(name)
        chain.append(totals[name])
        parent = queues[name].parent
        name = parent if parent is not None else ("root" if name != "root" else None)
    return tuple(chain)


def _settles(job: JobInfo) -> bool:
    """Whether a job is settled after close (see :meth:`Session.unsettled_jobs`)."""
    return bool(
        job.tasks
        and not job.nodes_fit_errors
        and job.pod_group.phase is not PodGroupPhase.PENDING
        and not job.pending_task_num()
        and not job.waiting_task_num()
        and job.is_ready()
    )


def _job_mark(job: JobInfo) -> tuple[object, ...]:
    """What a session may change of a job besides its tasks: the start time enqueue notes, then the
    PodGroup's phase, annotations and conditions (each object and its fields), the priority and the
    fit error message."""
    pg = job.pod_group
    mark: list[object] = [
        job.schedule_start_timestamp,  # first: a per-session note, not compared
        pg.phase,
        pg.annotations,
        job.priority,
        job.job_fit_errors,
    ]
    for c in pg.conditions:
        mark += (c, c.type, c.status, c.reason, c.message, c.transition_id, c.last_transition_time)
    return tuple(mark)


def _status_signature(pg: PodGroup) -> tuple[object, ...]:
    """A PodGroup's status as a session compares it: phase, counts, the HyperNode annotation and each condition.

    Conditions compare without their transition id and time (as
    :meth:`~volcanolib.api.job.PodGroupCondition.same_as` does). One flat
    tuple per job: a session takes one of every job when it loads.
    """
    signature: list[object] = [
        pg.phase,
        pg.running,
        pg.succeeded,
        pg.failed,
        pg.annotations.get(JOB_ALLOCATED_HYPER_NODE),
    ]
    for c in pg.conditions:
        signature += (c.type, c.status, c.reason, c.message)
    return tuple(signature)
