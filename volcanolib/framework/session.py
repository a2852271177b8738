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
from collections.abc import Callable, Iterable, Iterator, Mapping, Sequence
from contextlib import contextmanager, suppress
from typing import TYPE_CHECKING, Any, Final

from volcanolib.api.cluster import ClusterInfo, SnapshotChanges, SnapshotDelta
from volcanolib.api.fiterrors import FitError, FitErrors
from volcanolib.api.hypernode import JOB_ALLOCATED_HYPER_NODE, HyperNodeTree, set_allocated_hyper_node
from volcanolib.api.job import JobInfo, PodGroupCondition
from volcanolib.api.node import NodeInfo
from volcanolib.api.queue import QueueInfo
from volcanolib.api.resource import Resource
from volcanolib.api.task import (
    TaskInfo,
    TaskStatus,
)
from volcanolib.errors import PluginError
from volcanolib.framework import combine, fastpath, verify
from volcanolib.framework.carry import Carry
from volcanolib.framework.closing import Closing
from volcanolib.framework.compiled import (
    _BUILT,
    _COMPILED,
    _COMPILED_DATA,
    _MISSING,
    CompiledAnswers,
    _detached,
    compare_tasks_by_name,
)
from volcanolib.framework.config import Arguments, PluginOption, SchedulerConfig
from volcanolib.framework.dispatch import Tables
from volcanolib.framework.nodeclass import NodeClasses
from volcanolib.framework.placement import Placement
from volcanolib.framework.statement import Statement
from volcanolib.framework.status import Code, Event, Status
from volcanolib.framework.sums import PartSums

if TYPE_CHECKING:
    from volcanolib.cache.protocol import Cache
    from volcanolib.framework.plugin_session import PluginSession

__all__ = ["Session", "compare_tasks_by_name"]

log = logging.getLogger(__name__)
_NEG_INF: Final = float("-inf")
#: The keys of :attr:`Session.plugin_seconds` (Volcano's names for the two moments).
OPENING: Final = "OnSessionOpen"
CLOSING: Final = "OnSessionClose"


class Session(CompiledAnswers, Closing):
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

    # The combined answer of each hook is an attribute named by the hook's declaration (``answer=`` in
    # hookspecs), typed in the generated base class HookAnswers; CompiledAnswers._compile fills them. A new hook
    # whose rule is in combine.BUILDERS needs only its declaration (and ``python tools/gen_hook_docs.py``).

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
        verify: Callable[[str], Any] | None = None,
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
        #: The plugins that resumed (``on_session_resume``) rather than opened afresh, in tier order.
        self.resumed: tuple[str, ...] = ()
        # Verify mode (docs/incremental.md): builds a plugin afresh by name; every job's status as loaded.
        self._verify = verify
        self._loaded_status: dict[str, tuple[object, ...]] = {}
        self._detached = False
        #: Whether each fast path is checked against its reference (``VOLCANOLIB_CHECK_FAST_PATHS``, see
        #: :mod:`~volcanolib.framework.fastpath`).
        self.check_fast_paths = fastpath.checking()
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
            if self._verify is not None and self.resumed:
                verify.check_resumed(self, dict(self.plugins), self._verify, self.resumed)
        finally:
            # A key taken while plugins were still preparing may be out of date.
            if self._job_keys:
                self._job_keys.clear()
            if self._task_keys:
                self._task_keys.clear()

    def _resuming(self, table: combine.Table, delta: SnapshotDelta) -> combine.Table:
        """The ``on_session_open`` table with ``on_session_resume`` in place for the plugins that may resume
        (named in :attr:`resumed`)."""
        assert self._carry is not None
        failed = self._carry.failed
        resume = {p: fn for tier in self._table("on_session_resume") for p, fn in tier if p not in failed}
        if not resume:
            return table
        resuming = tuple(
            tuple((plugin, functools.partial(resume[plugin], delta) if plugin in resume else fn) for plugin, fn in tier)
            for tier in table
        )
        self.resumed = tuple(plugin for tier in resuming for plugin, _ in tier if plugin in resume)
        return resuming

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
        self._load_settled(carry)
        tree = self.hyper_nodes
        for job in self.unsettled_jobs():
            pg = job.pod_group
            if pg.network_topology is not None or pg.annotations.get(JOB_ALLOCATED_HYPER_NODE):
                # As Volcano's session opens: drop a stale allocated HyperNode, recover a missing one.
                set_allocated_hyper_node(job, tree.allocated_hyper_node(job))
        jobs = self.jobs
        if self._verify is not None:
            self._loaded_status = {uid: verify.status_of(job) for uid, job in jobs.items()}

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
        checking = self._verify is not None
        closing = combine.timed(self._table("on_session_close"), self.plugin_seconds[CLOSING])
        if checking:
            verify.close_plugins(self, closing)
        else:
            try:
                combine.call_all(closing)()
            except PluginError as err:
                self.record_plugin_error(err)
        candidates = self.unsettled_jobs()
        written = set()
        for job in self._jobs_to_write(candidates):
            changed = self._update_job_status(job)
            self.cache.update_job_status(job, changed)
            if checking:
                written.add(job.uid)
        for queue in self._queue_status():
            self.cache.update_queue_status(queue)
        if checking:
            verify.check_close(self, self._loaded_status, written)
            verify.check_node_classes(self)
        changes = self._changes
        if changes is not None:
            # Tell the cache what this session changed, so its next snapshot re-copies only that.
            changes.report(self.node_log, self._touched_jobs)
        carry = self._carry
        if carry is not None and self._prepared:
            failed = frozenset(err.plugin or "" for err in self.plugin_errors)
            placement = self._placement
            carry.settled = self._settled_after(candidates) if changes is not None else set()
            carry.hand_over(changes, failed, placement.node_classes() if placement is not None else None)

    def detach_plugins(self) -> None:
        """Detach a closed session from its plugins: no hook can be called through it any more.

        The session's state (jobs, nodes, queues, what it decided) stays
        readable; every combined hook answer (``ssn.predicate``,
        ``ssn.compare_jobs``, ``ssn.job_ready`` ...) raises ``RuntimeError``
        from now on, and so does anything that would call a plugin.
        Nothing then keeps the session alive but references from outside, so
        it is freed as soon as those go, without the cyclic garbage
        collector: a long replay detaches each session it is done with.

        .. versionadded:: 0.2
        """
        attributes = self.__dict__
        for name in (*_COMPILED, *_BUILT):
            value = attributes.get(name, _MISSING)
            if name in _COMPILED_DATA:
                attributes[name] = _COMPILED_DATA[name]()
            elif value is not None or name not in _COMPILED:
                attributes[name] = functools.partial(_detached, self.uid, name)
        self._tables = {}
        self._placement = None
        self._detached = True

    #: The former name of :meth:`detach_plugins`, kept for one release.
    release = detach_plugins

    # ------------------------------------------------------------------ events and status

    def _fire_allocate(self, task: TaskInfo) -> None:
        """Tell every plugin that a task took resources (``on_allocate``); log its node as changed."""
        self.node_log.append(task.node_name)
        try:
            self._on_allocate(Event(task))
        finally:
            self._forget_job_key(task)

    def _fire_deallocate(self, task: TaskInfo) -> None:
        """Tell every plugin that a task gave resources back (``on_deallocate``); log its node as changed."""
        self.node_log.append(task.node_name)
        try:
            self._on_deallocate(Event(task))
        finally:
            self._forget_job_key(task)

    def _set_task_status(self, task: TaskInfo, status: TaskStatus) -> None:
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
        """Set a PodGroup condition, replacing one of the same type; a settled job is unsettled first.

        The way a plugin declaring ``status_through_session`` sets conditions
        (see the incremental contract, ``docs/incremental.md``).
        """
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
            self._set_task_status(task, TaskStatus.BINDING)
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
            if self._detached:
                _detached(self.uid, "placement")
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


if TYPE_CHECKING:

    def _a_session_is_a_plugin_session(ssn: Session) -> PluginSession:
        """mypy checks here that :class:`Session` offers everything :class:`PluginSession` declares."""
        return ssn
