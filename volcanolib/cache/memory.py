"""InMemoryCache: the embedded cache for dispatchers and simulations."""

from __future__ import annotations

import functools
import logging
import threading
from collections.abc import Callable, Iterable, KeysView, Sequence
from typing import Concatenate, Final, ParamSpec, TypeVar

import attrs

from volcanolib.api.cluster import ClusterInfo, SnapshotChanges, SnapshotDelta
from volcanolib.api.hypernode import JOB_ALLOCATED_HYPER_NODE, HyperNode, HyperNodeTree
from volcanolib.api.job import JobInfo, PodGroup, PodGroupCondition
from volcanolib.api.node import NodeInfo
from volcanolib.api.queue import ROOT_QUEUE, QueueInfo
from volcanolib.api.resource import Resource
from volcanolib.api.task import COMPLETED_STATUSES, TaskInfo, TaskStatus, allocated_status, in_statuses
from volcanolib.cache.protocol import Binder, Evictor, StatusUpdater
from volcanolib.errors import CacheError

__all__ = ["AcceptAll", "CacheEvent", "InMemoryCache"]

log = logging.getLogger(__name__)
#: The statuses :meth:`InMemoryCache.start_bound_tasks` starts.
_BOUND = (TaskStatus.BINDING, TaskStatus.BOUND)
_RELEASING: Final = TaskStatus.RELEASING
# Statuses a task is never evicted from: Releasing, or finished (``COMPLETED_STATUSES``), as a set.
_NOT_EVICTABLE: Final = frozenset([_RELEASING, *(s for s in TaskStatus if in_statuses(s, COMPLETED_STATUSES))])
P = ParamSpec("P")
R = TypeVar("R")


@attrs.define(eq=False)
class _Handed:
    """The last snapshot handed out: its job and node copies, and where its session reports."""

    jobs: dict[str, JobInfo]
    nodes: dict[str, NodeInfo]
    changes: SnapshotChanges
    #: The jobs left out for a queue that does not exist, with the reason.
    no_queue: dict[str, str]


@attrs.frozen
class CacheEvent:
    """Something worth telling a person: a failed bind, an eviction, a status change."""

    kind: str
    #: ``PodGroup ns/name``, ``Pod ns/name``, ``Queue name``.
    object: str
    reason: str
    message: str


class AcceptAll:
    """A binder and evictor for which every call succeeds."""

    def bind(self, tasks: Sequence[TaskInfo]) -> Sequence[TaskInfo]:
        """Bind nothing anywhere; report no failure."""
        return ()

    def evict(self, task: TaskInfo, reason: str) -> None:
        """Accept the eviction."""


def _task_copy(task: TaskInfo, jobs: dict[str, JobInfo]) -> TaskInfo:
    """A snapshot's object for one of the cache's tasks: its job's copy, else a copy of its own."""
    job = jobs.get(task.job)
    if job is not None:
        copy = job.tasks.get(task.uid)
        if copy is not None:
            return copy
    return task.clone()


def _task_copies(node: NodeInfo, jobs: dict[str, JobInfo], reuse: dict[str, TaskInfo]) -> dict[str, TaskInfo]:
    """The snapshot's objects for a node's tasks, by key in the node's order: ``reuse``'s, else :func:`_task_copy`."""
    tasks = node.tasks
    if not reuse:  # a node copied afresh (every node of a full snapshot): one pass
        return {key: _task_copy(task, jobs) for key, task in tasks.items()}
    copies: dict[str, TaskInfo | None] = dict(zip(tasks, map(reuse.get, tasks), strict=True))
    if None in copies.values():
        for key, copy in copies.items():
            if copy is None:
                copies[key] = _task_copy(tasks[key], jobs)
    return copies  # type: ignore[return-value]  # no None is left


def _reset_session_notes(copy: JobInfo, job: JobInfo) -> None:
    """Give a reused job copy back what :meth:`JobInfo.clone` would: the notes of the last session go.

    Its conditions are the cache's but for their transition ids and times (the
    session that closed on it checked that, and neither side changed since).
    """
    if copy.nodes_fit_errors:
        copy.nodes_fit_errors = {}
    copy.job_fit_errors = job.job_fit_errors
    copy.shortfall = ""
    copy.schedule_start_timestamp = job.schedule_start_timestamp
    theirs, ours = copy.pod_group.conditions, job.pod_group.conditions
    if len(theirs) == len(ours):
        # A renewed condition: only its transition id and time differ (the copy's objects are its own).
        for a, b in zip(theirs, ours, strict=True):
            a.transition_id = b.transition_id
            a.last_transition_time = b.last_transition_time
    else:  # not expected; copied all the same
        copy.pod_group.conditions = [
            PodGroupCondition(c.type, c.status, c.reason, c.message, c.transition_id, c.last_transition_time)
            for c in ours
        ]


def _locked(
    method: Callable[Concatenate[InMemoryCache, P], R],
) -> Callable[Concatenate[InMemoryCache, P], R]:
    """Run ``method`` holding the cache's lock.

    The wrapper keeps the method's name, docstring, signature and type hints
    (``functools.wraps``), so ``help()``, editors and the API reference show
    the method as written.
    """

    @functools.wraps(method)
    def wrapper(self: InMemoryCache, /, *args: P.args, **kwargs: P.kwargs) -> R:
        with self._lock:
            return method(self, *args, **kwargs)

    return wrapper


class InMemoryCache:
    """A thread-safe mirror of a cluster kept in memory.

    Feed it nodes, pods (tasks), pod groups, queues and priority classes;
    a :class:`~volcanolib.scheduler.Scheduler` snapshots it every cycle and
    binds and evicts through the injected :class:`Binder` and
    :class:`Evictor`. The ``default`` queue and the ``root`` queue (the top of
    every queue tree, not reclaimable) always exist, as Volcano's scheduler
    makes both at start.

    :param binder: binds tasks; by default every bind succeeds.
    :param evictor: evicts tasks; by default every eviction succeeds.
    :param status_updater: receives PodGroup and Queue status, if given.
    :param max_events: how many of the latest events :attr:`events` keeps
        (``None``: all of them; a long-running scheduler would grow without bound).
    :param incremental_snapshots: let :meth:`snapshot` reuse the copies of
        the previous snapshot that changed neither in the cache nor in the
        session that worked on it (see :meth:`snapshot`); ``False`` copies
        everything every time. The attribute of the same name can be changed
        at any time.
    """

    def __init__(
        self,
        *,
        binder: Binder | None = None,
        evictor: Evictor | None = None,
        status_updater: StatusUpdater | None = None,
        default_queue: str = "default",
        max_events: int | None = 10_000,
        incremental_snapshots: bool = True,
    ) -> None:
        self._lock = threading.RLock()
        self.binder: Binder = binder or AcceptAll()
        self.evictor: Evictor = evictor or AcceptAll()
        self.status_updater = status_updater
        self.default_queue = default_queue
        self._nodes: dict[str, NodeInfo] = {}
        self._tasks: dict[str, TaskInfo] = {}
        # Each task's place in ``_tasks`` (a counter, growing with each insertion), and the Binding or
        # Bound tasks, so that starting them costs what is bound, in the order of ``_tasks``.
        self._position: dict[str, int] = {}
        self._inserted = 0
        self._bound: set[str] = set()
        self._jobs: dict[str, JobInfo] = {}
        self._orphans: dict[str, dict[str, TaskInfo]] = {}
        self._queues: dict[str, QueueInfo] = {
            ROOT_QUEUE: QueueInfo(ROOT_QUEUE, reclaimable=False),
            default_queue: QueueInfo(default_queue),
        }
        self._priority_classes: dict[str, int] = {}
        self._global_default: str | None = None
        #: Events recorded so far, oldest first (the latest ``max_events`` of them).
        self.events: list[CacheEvent] = []
        self.max_events = max_events
        #: Whether :meth:`snapshot` may reuse the previous snapshot's unchanged copies.
        self.incremental_snapshots = incremental_snapshots
        # What changed in the cache since the last snapshot: nodes by name, jobs by uid (a job's
        # tasks, their status or placement, its PodGroup), everything (priority classes).
        self._changed_nodes: set[str] = set()
        self._changed_jobs: set[str] = set()
        # Of those, nodes added, replaced or removed (not only their tasks), and tasks (by uid) added,
        # placed or moved to another status.
        self._changed_specs: set[str] = set()
        self._changed_tasks: set[str] = set()
        # Jobs whose PodGroup status the cache took from a session (only their PodGroup changed).
        self._changed_groups: set[str] = set()
        self._changed_all = False
        self._changed_queues: set[str] = set()
        # Jobs whose session copy differs only in what a fresh copy resets (see _check_unchanged).
        self._scrub: set[str] = set()
        # Jobs added since the last snapshot (at the end of _jobs), oldest first.
        self._new_jobs: list[str] = []
        self._handed: _Handed | None = None
        self._hyper_nodes: dict[str, HyperNode] = {}

    # ------------------------------------------------------------------ hyper nodes

    @_locked
    def add_hyper_node(self, hyper_node: HyperNode) -> None:
        """Add or replace a HyperNode; the next snapshot's tree includes it.

        .. versionadded:: 0.2
        """
        self._hyper_nodes[hyper_node.name] = hyper_node

    @_locked
    def delete_hyper_node(self, name: str) -> None:
        """Remove a HyperNode (nothing happens when it is unknown).

        .. versionadded:: 0.2
        """
        self._hyper_nodes.pop(name, None)

    @_locked
    def hyper_nodes(self) -> list[HyperNode]:
        """The HyperNodes, in the order they were added.

        .. versionadded:: 0.2
        """
        return list(self._hyper_nodes.values())

    # ------------------------------------------------------------------ nodes

    @_locked
    def add_node(self, node: NodeInfo) -> None:
        """Add or replace a node; tasks already placed on it keep their place."""
        old = self._nodes.get(node.name)
        fresh = NodeInfo(node.name, node.allocatable.clone(), node=node.node, capability=node.capability.clone())
        fresh.ready = node.ready
        fresh.not_ready_reason = node.not_ready_reason
        if old is not None:
            for task in list(old.tasks.values()):
                fresh.add_task(task)
        self._nodes[node.name] = fresh
        self._changed_nodes.add(node.name)
        self._changed_specs.add(node.name)

    update_node = add_node

    @_locked
    def delete_node(self, name: str) -> None:
        """Remove a node; its tasks stay known and are counted again if the node returns."""
        node = self._nodes.get(name)
        if node is None:
            return
        self._changed_nodes.add(name)
        self._changed_specs.add(name)
        if node.tasks:
            placeholder = NodeInfo(name, Resource())
            placeholder.ready = False
            placeholder.not_ready_reason = "NodeDeleted"
            for task in node.tasks.values():
                placeholder.add_task(task)
            self._nodes[name] = placeholder
        else:
            del self._nodes[name]

    # ------------------------------------------------------------------ tasks

    @_locked
    def add_task(self, task: TaskInfo) -> None:
        """Add a pod; a placed one consumes its node (unless it has finished)."""
        if task.uid in self._tasks:
            self._remove_task(self._tasks[task.uid])
        self._tasks[task.uid] = task
        self._position[task.uid] = self._inserted
        self._inserted += 1
        if task.status in _BOUND:
            self._bound.add(task.uid)
        self._changed_jobs.add(task.job)
        self._changed_tasks.add(task.uid)
        if task.node_name and not in_statuses(task.status, COMPLETED_STATUSES):
            self._changed_nodes.add(task.node_name)
            node = self._nodes.get(task.node_name)
            if node is None:
                node = NodeInfo(task.node_name, Resource())
                node.ready = False
                node.not_ready_reason = "UnInitialized"
                self._nodes[task.node_name] = node
                self._changed_specs.add(task.node_name)
            node.add_task(task)
        if task.job:
            job = self._jobs.get(task.job)
            if job is not None:
                job.add_task_info(task)
            else:
                self._orphans.setdefault(task.job, {})[task.uid] = task

    update_task = add_task

    @_locked
    def delete_task(self, uid: str) -> None:
        """Remove a pod."""
        task = self._tasks.get(uid)
        if task is not None:
            self._remove_task(task)

    def _remove_task(self, task: TaskInfo) -> None:
        self._tasks.pop(task.uid, None)
        self._position.pop(task.uid, None)
        self._bound.discard(task.uid)
        self._changed_jobs.add(task.job)
        self._changed_nodes.add(task.node_name)
        node = self._nodes.get(task.node_name)
        if node is not None and node.accounted_status(task) is not None and node.tasks.get(task.key) is task:
            node.remove_task(task)
        job = self._jobs.get(task.job)
        if job is not None:
            job.delete_task_info(task)
        self._orphans.get(task.job, {}).pop(task.uid, None)

    @_locked
    def get_task(self, uid: str) -> TaskInfo | None:
        """The cache's own copy of a task.

        Read it, do not change it: change tasks through the cache's methods,
        which note what changed for the next :meth:`snapshot`.
        """
        return self._tasks.get(uid)

    def get_job(self, uid: str) -> JobInfo | None:
        """The cache's own job of that uid (``namespace/name`` of its PodGroup; read it, do not change it), or ``None``.

        .. versionadded:: 0.2
        """
        return self._jobs.get(uid)

    def job_uids(self) -> KeysView[str]:
        """The uid of every job the cache holds (a live, read-only view).

        .. versionadded:: 0.2
        """
        return self._jobs.keys()

    def counts(self) -> tuple[int, int, int]:
        """How many nodes, jobs and tasks the cache holds.

        .. versionadded:: 0.2
        """
        return len(self._nodes), len(self._jobs), len(self._tasks)

    def get_node(self, name: str) -> NodeInfo | None:
        """The cache's own node of that name (read it, do not change it), or ``None``.

        .. versionadded:: 0.2
        """
        return self._nodes.get(name)

    @_locked
    def nodes(self) -> list[NodeInfo]:
        """Every known node, ready or not (the cache's own objects: read, do not change).

        .. versionadded:: 0.2
        """
        return list(self._nodes.values())

    @_locked
    def tasks(self) -> list[TaskInfo]:
        """Every known task (the cache's own objects: read, do not change)."""
        return list(self._tasks.values())

    # ------------------------------------------------------------------ pod groups

    @_locked
    def add_pod_group(self, pg: PodGroup) -> None:
        """Add or replace a PodGroup; its pods join the job."""
        uid = f"{pg.namespace}/{pg.name}"
        old = self._jobs.get(uid)
        job = JobInfo.from_pod_group(pg)
        if not pg.queue:
            job.queue = self.default_queue
        tasks = list(old.tasks.values()) if old is not None else []
        tasks += list(self._orphans.pop(uid, {}).values())
        for task in tasks:
            job.add_task_info(task)
        if old is None:
            self._new_jobs.append(uid)
        self._jobs[uid] = job
        self._changed_jobs.add(uid)

    update_pod_group = add_pod_group

    @_locked
    def delete_pod_group(self, namespace: str, name: str) -> None:
        """Remove a PodGroup; its pods wait for a group of that name again."""
        uid = f"{namespace}/{name}"
        self._changed_jobs.add(uid)
        job = self._jobs.pop(uid, None)
        if job is not None and job.tasks:
            self._orphans[job.uid] = dict(job.tasks)

    @_locked
    def jobs(self) -> list[JobInfo]:
        """Every known job (the cache's own objects: read, do not change)."""
        return list(self._jobs.values())

    # ------------------------------------------------------------------ queues and priorities

    @_locked
    def add_queue(self, queue: QueueInfo) -> None:
        """Add or replace a queue (build one with :func:`~volcanolib.api.builders.build_queue`).

        A PodGroup names its queue in its ``queue``; the cache keeps a group
        whose queue it does not know out of every snapshot (it is listed in
        the snapshot's ``skipped_jobs``) until the queue is added. The
        ``default`` queue always exists; adding one of that name replaces
        its weight and quotas. A replaced queue keeps nothing of the old
        one, not even its ``allocated`` status, which the next session writes back when it closes.
        """
        self._queues[queue.name] = queue
        self._changed_queues.add(queue.name)

    update_queue = add_queue

    @_locked
    def delete_queue(self, name: str) -> None:
        """Remove a queue (the default and root queues stay)."""
        if name not in (self.default_queue, ROOT_QUEUE) and self._queues.pop(name, None) is not None:
            self._changed_queues.add(name)

    @_locked
    def queues(self) -> list[QueueInfo]:
        """Every queue (the cache's own objects)."""
        return list(self._queues.values())

    @_locked
    def add_priority_class(self, name: str, value: int, *, global_default: bool = False) -> None:
        """Add a PriorityClass; a global default applies to jobs that name none."""
        self._priority_classes[name] = value
        if global_default:
            self._global_default = name
        self._changed_all = True

    @_locked
    def delete_priority_class(self, name: str) -> None:
        """Remove a PriorityClass."""
        self._priority_classes.pop(name, None)
        if self._global_default == name:
            self._global_default = None
        self._changed_all = True

    @_locked
    def job_priority(self, pg: PodGroup) -> int:
        """The priority a job of this PodGroup would get here: its PriorityClass's value, else the global default's.

        .. versionadded:: 0.2
        """
        return self._job_priority(pg)

    def _job_priority(self, pg: PodGroup) -> int:
        if pg.priority_class_name in self._priority_classes:
            return self._priority_classes[pg.priority_class_name]
        if self._global_default is not None:
            return self._priority_classes.get(self._global_default, 0)
        return 0

    # ------------------------------------------------------------------ snapshot

    @_locked
    def snapshot(self) -> ClusterInfo:
        """A deep copy of ready nodes, queues and jobs whose queue exists.

        Within the copy, a job's task and the node's task are the same object.
        A node's allocatable and capability, which nothing changes once the
        node is added, are the cache's own objects.

        With :attr:`incremental_snapshots` (the default), the copy reuses the
        node and job copies of the previous snapshot that did not change
        since: neither in the cache (every method that changes a node, task,
        PodGroup or priority class notes it) nor in the session that worked on
        that snapshot, which reports what it touched when it closes (see
        :class:`~volcanolib.api.cluster.SnapshotChanges`). Every other node
        and job is copied again, and queues are always copied. When the
        previous snapshot was not given back by a closed session (taken
        outside a scheduler, or its cycle failed), everything is copied. The
        result equals a full copy (:meth:`full_snapshot`) either way; the
        objects of a closed session may thus be reused, and changed, by later
        sessions: read what a :class:`~volcanolib.scheduler.CycleResult`'s
        session holds before the next cycle, or copy it.
        """
        prev = self._handed
        if prev is None or not self.incremental_snapshots or not prev.changes.closed or self._changed_all:
            prev = None
        no_queue: dict[str, str] = {}
        cluster = self._build(prev, no_queue)
        changes = SnapshotChanges()
        cluster.changes = changes
        self._handed = _Handed(cluster.jobs.copy(), cluster.nodes.copy(), changes, no_queue)
        self._new_jobs = []
        self._changed_nodes = set()
        self._changed_jobs = set()
        self._changed_specs = set()
        self._changed_tasks = set()
        self._changed_groups = set()
        self._changed_all = False
        self._changed_queues = set()
        self._scrub = set()
        return cluster

    @_locked
    def full_snapshot(self) -> ClusterInfo:
        """A deep copy of everything :meth:`snapshot` would give, built afresh.

        It reuses nothing and leaves the incremental state as it is (the next
        :meth:`snapshot` can still reuse the previous one): for checks,
        debugging and tools that want a private copy.
        """
        return self._build(None, {})

    def _build(self, prev: _Handed | None, no_queue: dict[str, str]) -> ClusterInfo:
        """The snapshot, reusing ``prev``'s copies of nodes and jobs that changed on neither side.

        ``no_queue`` receives the jobs left out for a missing queue, with the reason.
        """
        cluster = ClusterInfo()
        queues = self._queues
        job_priority = self._job_priority
        jobs = cluster.jobs
        skipped = cluster.skipped_jobs
        if prev is not None:
            old_jobs, old_nodes = prev.jobs, prev.nodes
            dirty_jobs = self._changed_jobs | prev.changes.jobs
            dirty_nodes = self._changed_nodes | prev.changes.nodes
        else:
            old_jobs, old_nodes = {}, {}
            dirty_jobs = dirty_nodes = set()
        scrub = self._scrub if prev is not None else set()
        groups = self._changed_groups
        # Jobs reused with a new copy of their PodGroup (their tasks did not change on either side).
        restated: list[str] = []
        # Jobs copied afresh: their tasks are new objects, which nodes kept from ``prev`` must hold.
        recopied: list[str] = []

        def take(uid: str, job: JobInfo) -> None:
            if job.queue not in queues:
                no_queue[uid] = f"queue {job.queue!r} of PodGroup {uid} does not exist"
                return
            copy = old_jobs.get(uid)
            if copy is None or uid in dirty_jobs:
                copy = job.clone()
                copy.priority = job_priority(job.pod_group)
                if prev is not None:
                    recopied.append(uid)
            elif uid in groups:
                copy.restate(job)
                copy.priority = job_priority(job.pod_group)
                restated.append(uid)
            elif uid in scrub:
                _reset_session_notes(copy, job)
            jobs[uid] = copy

        if not self._take_changed_jobs(prev, take, jobs, no_queue, dirty_jobs | groups | scrub):
            for uid, job in self._jobs.items():
                take(uid, job)
        skipped.update(no_queue)
        for uid, orphans in self._orphans.items():
            if orphans:
                skipped[uid] = f"PodGroup {uid} does not exist"
        nodes = cluster.nodes
        node_list = cluster.node_list
        # Nodes copied afresh (every task looked up), and changed nodes: their new copy took the old
        # one's task objects, or the old copy, holding the same tasks with the same accounting, took
        # the cache's task statuses (a session placed tasks there that the cache then bound, say).
        copied: set[str] = set()
        renewed: list[str] = []
        # Renewed nodes brought up to date in place with the same pods (SnapshotDelta.in_place), and
        # the nodes that cannot be (read before the old copies of the nodes take new task objects).
        in_place: list[str] = []
        other_pods, placed = self._changed_placed(prev.nodes) if prev is not None else (set(), [])
        specs = self._changed_specs
        own_nodes = self._nodes
        if prev is not None and not specs:
            # No node was added, replaced or removed: the ready nodes are the previous snapshot's,
            # in the same order; only those whose tasks changed get a new copy.
            nodes.update(old_nodes)
            for name in dirty_nodes:
                node_copy = nodes.get(name)
                if node_copy is not None:
                    node = own_nodes[name]
                    if not node_copy.catch_up(node):
                        nodes[name] = self._renew(node, node_copy, jobs, node_copy)
                    elif name not in other_pods:
                        in_place.append(name)
                    renewed.append(name)
            node_list.extend(nodes.values())
        else:
            for name, node in own_nodes.items():
                if not node.ready:
                    continue
                node_copy = old_nodes.get(name)
                if node_copy is None:
                    # Allocatable and capability never change once a node is built: the copy shares the cache's.
                    node_copy = self._renew(node, None, jobs, node)
                    copied.add(name)
                elif name in dirty_nodes:
                    if name in specs or not node_copy.catch_up(node):
                        node_copy = self._renew(node, node_copy, jobs, None if name in specs else node_copy)
                    elif name not in other_pods:
                        in_place.append(name)
                    renewed.append(name)
                nodes[name] = node_copy
                node_list.append(node_copy)
        if prev is not None:
            # A node not copied afresh may still hold the previous copies of the tasks of jobs copied
            # again or touched: give it the new ones.
            for uid in dirty_jobs.union(recopied):
                own = self._jobs.get(uid)
                if own is not None:
                    tasks: Iterable[TaskInfo] = own.tasks.values()
                elif uid:
                    tasks = self._orphans.get(uid, {}).values()
                else:  # tasks of no job: those that changed
                    tasks = [t for t in map(self._tasks.get, self._changed_tasks) if t is not None and not t.job]
                for task in tasks:
                    name = task.node_name
                    if name and name not in copied:
                        node_copy = nodes.get(name)
                        if node_copy is not None:
                            key = task.key
                            if key in node_copy.tasks:
                                node_copy.tasks[key] = _task_copy(task, jobs)
            gone_nodes = old_nodes.keys() - nodes.keys()
            cluster.delta = SnapshotDelta(
                since=prev.changes,
                nodes=frozenset(copied.union(renewed, gone_nodes)),
                jobs=frozenset((old_jobs.keys() - jobs.keys()).union(recopied, restated)),
                queues=frozenset(self._changed_queues),
                # Names are compared in order: a node removed and added again between two snapshots moves to the end.
                same_nodes=not gone_nodes and list(nodes) == list(old_nodes),
                node_specs=frozenset(copied.union(gone_nodes, specs.intersection(renewed))),
                tasks={key: name for key, name in placed if (on := nodes.get(name)) is not None and key in on.tasks},
                in_place=frozenset(in_place),
            )
        cluster.queues = {name: q.clone() for name, q in queues.items()}
        # Built without HyperNodes too: the virtual cluster top spans the ready nodes.
        cluster.hyper_nodes = HyperNodeTree(self._hyper_nodes.values(), node_list)
        return cluster

    def _take_changed_jobs(
        self,
        prev: _Handed | None,
        take: Callable[[str, JobInfo], None],
        jobs: dict[str, JobInfo],
        no_queue: dict[str, str],
        changed: set[str],
    ) -> bool:
        """Fill ``jobs`` from ``prev`` and ``take`` only the ``changed`` jobs and those added since.

        The result is what taking every job in the cache's order would give
        (``False`` is returned, with nothing done, where this cannot be done
        cheaply: without ``prev``, after a queue changed, or when a changed job
        would take a place in the middle of the order).
        """
        if prev is None or self._changed_queues:
            return False
        own, old_jobs = self._jobs, prev.jobs
        added = list(dict.fromkeys(reversed(self._new_jobs)))[::-1]  # the order of their last addition
        fresh = set(added)
        for uid in changed:
            if uid not in fresh and uid in own and uid not in old_jobs and uid not in prev.no_queue:
                return False  # not expected: a job neither added nor known before
        jobs.update(old_jobs)
        no_queue.update(prev.no_queue)
        for uid in added:
            jobs.pop(uid, None)
            no_queue.pop(uid, None)
        for uid in changed:
            if uid in fresh:
                continue
            job = own.get(uid)
            if job is None or (uid not in old_jobs and uid in prev.no_queue):
                jobs.pop(uid, None)
                no_queue.pop(uid, None)
                if job is None or job.queue not in self._queues:
                    if job is not None:
                        take(uid, job)
                    continue
                return self._start_over(jobs, no_queue)  # its queue exists now: its place is in the middle
            if job.queue not in self._queues:
                jobs.pop(uid, None)
            no_queue.pop(uid, None)
            take(uid, job)
        for uid in added:
            job = own.get(uid)
            if job is not None:
                take(uid, job)
        return True

    @staticmethod
    def _start_over(jobs: dict[str, JobInfo], no_queue: dict[str, str]) -> bool:
        jobs.clear()
        no_queue.clear()
        return False

    @staticmethod
    def _renew(node: NodeInfo, old: NodeInfo | None, jobs: dict[str, JobInfo], like: NodeInfo | None) -> NodeInfo:
        """A snapshot's copy of ``node``, taking the task objects of ``old`` (its previous copy) for tasks it still has.

        Objects ``old`` held for tasks of jobs copied again must be replaced afterwards.
        ``like`` is passed on to :meth:`NodeInfo.clone`.
        """
        copy = node.clone(like=like)
        copy.tasks = _task_copies(node, jobs, old.tasks if old is not None else {})
        return copy

    def _changed_placed(self, old_nodes: dict[str, NodeInfo]) -> tuple[set[str], list[tuple[str, str]]]:
        """The changed tasks' nodes, in one pass over the tasks the cache changed since the last snapshot.

        First, the nodes holding such a task that is not as ``old_nodes`` had it: a task another pod
        now, or new there, or evicted since (Releasing: the session that evicted it no longer counted
        it as a pod of the node; the next one does until it ends). Then every such task on a node, as
        ``(key, node name)``: those on a node of the new snapshot are its ``delta.tasks``.
        """
        out: set[str] = set()
        placed: list[tuple[str, str]] = []
        known = self._tasks
        for uid in self._changed_tasks:
            task = known.get(uid)
            if task is None:
                continue
            name = task.node_name
            if not name:
                continue
            key = task.key
            placed.append((key, name))
            if task.status is _RELEASING:
                out.add(name)
                continue
            old = old_nodes.get(name)
            was = old.tasks.get(key) if old is not None else None
            if was is None or was.pod is not task.pod:
                out.add(name)
        return out, placed

    # ------------------------------------------------------------------ effectors

    def _record(self, kind: str, obj: str, reason: str, message: str) -> None:
        events = self.events
        events.append(CacheEvent(kind, obj, reason, message))
        limit = self.max_events
        if limit is not None and len(events) > 2 * limit:
            del events[: len(events) - limit]

    def _set_status(self, task: TaskInfo, status: TaskStatus) -> None:
        self._changed_jobs.add(task.job)
        self._changed_nodes.add(task.node_name)
        self._changed_tasks.add(task.uid)
        if status in _BOUND:
            self._bound.add(task.uid)
        else:
            self._bound.discard(task.uid)
        job = self._jobs.get(task.job)
        if job is not None and task.uid in job.tasks:
            job.update_task_status(task, status)
        else:
            task.status = status

    @_locked
    def bind(self, tasks: Sequence[TaskInfo]) -> list[tuple[TaskInfo, str]]:
        """Bind tasks through the binder; a failed bind returns the task to Pending.

        A task is refused (a ``FailedScheduling`` event, the task stays as
        the cache has it) when it or its node no longer exists, the node is
        not ready, the task is no longer Pending (already placed or finished:
        it is never bound twice), or the node's idle resources no longer fit
        it. A task the binder reports as failed, or every task of a batch
        when the binder raises, goes back to Pending with a ``FailedBinding``
        event that gives the binder's reason (the exception, or the reason
        the binder returned with the task) and is scheduled again in a later
        cycle.

        :returns: the tasks that did not bind (the cache's own objects), each
            with the reason given in its event.
        """
        refused: list[tuple[TaskInfo, str]] = []
        placed: list[TaskInfo] = []
        for task in tasks:
            own = self._tasks.get(task.uid)
            node = self._nodes.get(task.node_name)
            if own is None or node is None:
                reason = "task or node no longer exists"
            elif own.node_name:
                reason = f"already on node {own.node_name}"
            elif own.status is not TaskStatus.PENDING:
                reason = f"task is {own.status}, not Pending"
            elif not node.ready:
                reason = f"node {node.name} is not ready"
            elif not own.resreq.less_equal(node.idle):
                reason = f"node {node.name} no longer has room for it"
            else:
                own.node_name = task.node_name
                self._set_status(own, TaskStatus.BINDING)
                node.add_task(own)
                placed.append(own)
                continue
            self._record("Warning", f"Pod {task.key}", "FailedScheduling", reason)
            refused.append((own or task, reason))
        if not placed:
            return refused
        reasons: dict[str, str] = {}
        try:
            for item in self.binder.bind(placed):
                if isinstance(item, tuple):
                    failed_task, given = item
                    reasons[failed_task.uid] = str(given) or "the binder reported a failure"
                else:
                    reasons[item.uid] = "the binder reported a failure"
        except Exception as exc:  # a binder that raises fails the whole batch
            log.warning("binder failed: %s", exc)
            raised = f"binder raised {type(exc).__name__}: {exc}"
            reasons = {own.uid: raised for own in placed}
        for own in placed:
            node = self._nodes[own.node_name]
            why = reasons.get(own.uid)
            if why is not None:
                self._unbind(own, why)
                refused.append((own, why))
            else:
                self._set_status(own, TaskStatus.BOUND)
                node.update_task(own)
                self._record(
                    "Normal", f"Pod {own.key}", "Scheduled", f"Successfully assigned {own.key} to {own.node_name}"
                )
        return refused

    def _unbind(self, own: TaskInfo, why: str) -> None:
        """Take back a bind that did not take effect: the task leaves its node and is Pending again."""
        node = self._nodes.get(own.node_name)
        self._changed_nodes.add(own.node_name)
        if node is not None and node.tasks.get(own.key) is own:
            node.remove_task(own)
        self._record("Warning", f"Pod {own.key}", "FailedBinding", f"binding to {own.node_name} failed: {why}")
        own.node_name = ""
        self._set_status(own, TaskStatus.PENDING)

    @_locked
    def forget_bind(self, uid: str, node_name: str, reason: str) -> bool:
        """Take back a bind that the binder reported as failed after :meth:`bind` returned.

        For binders that bind in the background: the task, if it is still
        Binding or Bound on ``node_name`` as :meth:`bind` left it, goes back to
        Pending with a ``FailedBinding`` event giving ``reason``, and is
        scheduled again in a later cycle. A task that has since moved on (the
        bind was observed, the pod was deleted or replaced) is left alone.

        :returns: whether the task was taken back.
        """
        own = self._tasks.get(uid)
        if own is None or own.node_name != node_name or own.status not in (TaskStatus.BINDING, TaskStatus.BOUND):
            return False
        self._unbind(own, reason)
        return True

    def evict(self, task: TaskInfo, reason: str) -> None:
        """Evict a task through the evictor; it is Releasing until :meth:`finish_evictions`.

        :raises CacheError: when the task is unknown, not placed, already
            being evicted or finished (a task is never evicted twice), or the
            evictor fails; the cache then keeps the task as it was.
        """
        # The lock taken here rather than by _locked: a statement's commit calls this once per eviction.
        with self._lock:
            own = self._tasks.get(task.uid)
            if own is None or not own.node_name:
                raise CacheError(f"cannot evict {task.key}: not placed")
            if own.status in _NOT_EVICTABLE:
                self._record("Warning", f"Pod {own.key}", "FailedEviction", f"already {own.status}")
                raise CacheError(f"cannot evict {task.key}: it is {own.status}")
            try:
                self.evictor.evict(own, reason)
            except Exception as exc:
                self._record("Warning", f"Pod {own.key}", "FailedEviction", str(exc))
                raise CacheError(f"evicting {own.key} failed: {exc}") from exc
            self._set_status(own, _RELEASING)
            node = self._nodes.get(own.node_name)
            if node is not None:
                node.update_task(own)
            self._record("Normal", f"Pod {own.key}", "Evict", f"Pod is evicted, because of {reason}")

    @_locked
    def update_job_status(self, job: JobInfo, update_pod_group: bool) -> None:
        """Take the session's PodGroup status as the cache's."""
        own = self._jobs.get(job.uid)
        if own is None:
            return
        if not update_pod_group:
            if self.incremental_snapshots:
                self._check_unchanged(job, own)
            else:  # not checked: should incremental snapshots be switched on, the next one copies all
                self._changed_all = True
            return
        self._changed_groups.add(own.uid)
        pg = own.pod_group
        new = job.pod_group
        pg.phase = new.phase
        pg.conditions = [c.copy() for c in new.conditions]
        pg.running, pg.succeeded, pg.failed = new.running, new.succeeded, new.failed
        placed = new.annotations.get(JOB_ALLOCATED_HYPER_NODE)
        if placed is not None and pg.annotations.get(JOB_ALLOCATED_HYPER_NODE) != placed:
            pg.annotations = {**pg.annotations, JOB_ALLOCATED_HYPER_NODE: placed}
        if self.status_updater is not None:
            self.status_updater.update_pod_group(job)

    def _check_unchanged(self, job: JobInfo, own: JobInfo) -> None:
        """Note a session's copy of a job that differs from the cache's where a session may change it.

        A session writes back only a changed PodGroup status; what else it
        set on the copy must not outlive it. The per-session notes that a
        fresh copy resets (fit errors, the start time enqueue sets,
        conditions renewed with only a new transition id and time) are reset
        on the copy when the next snapshot reuses it; any other difference
        (the PodGroup status, a condition, the priority) has the job copied again.
        """
        pg, mine = job.pod_group, own.pod_group
        # Field by field (status_key's fields, then same_as's): every job is checked at every close.
        if (
            pg.phase != mine.phase
            or pg.running != mine.running
            or pg.succeeded != mine.succeeded
            or pg.failed != mine.failed
            or job.priority != self._job_priority(mine)
            or pg.annotations.get(JOB_ALLOCATED_HYPER_NODE) != mine.annotations.get(JOB_ALLOCATED_HYPER_NODE)
        ):
            self._changed_jobs.add(own.uid)
            return
        theirs, ours = pg.conditions, mine.conditions
        if len(theirs) != len(ours):
            self._changed_jobs.add(own.uid)
            return
        renewed = False
        for a, b in zip(theirs, ours, strict=True):
            if a.type != b.type or a.status != b.status or a.reason != b.reason or a.message != b.message:
                self._changed_jobs.add(own.uid)
                return
            if a.transition_id != b.transition_id or a.last_transition_time != b.last_transition_time:
                renewed = True
        if renewed or (
            job.nodes_fit_errors
            or job.shortfall
            or job.job_fit_errors != own.job_fit_errors
            or job.schedule_start_timestamp != own.schedule_start_timestamp
        ):
            self._scrub.add(own.uid)

    @_locked
    def update_queue_status(self, queue: QueueInfo) -> None:
        """Take the session's queue status as the cache's."""
        own = self._queues.get(queue.name)
        if own is not None:
            own.allocated = queue.allocated.clone()
        if self.status_updater is not None:
            self.status_updater.update_queue(queue)

    # ------------------------------------------------------------------ what a cluster does between cycles

    @_locked
    def start_bound_tasks(self) -> list[TaskInfo]:
        """Mark bound tasks Running, as kubelets would; return them (in the order of :meth:`tasks`)."""
        position = self._position
        started = [self._tasks[uid] for uid in sorted(self._bound, key=position.__getitem__)]
        for task in started:
            self._set_status(task, TaskStatus.RUNNING)
            self._nodes[task.node_name].update_task(task)
        return started

    @_locked
    def finish_evictions(self) -> list[TaskInfo]:
        """Remove Releasing tasks from the cluster, as their deletion completes; return them."""
        gone = [t for t in self._tasks.values() if t.status is TaskStatus.RELEASING]
        for task in gone:
            self._remove_task(task)
        return gone

    @_locked
    def set_task_phase(self, uid: str, status: TaskStatus) -> None:
        """Move a task to a new status (a pod that succeeded or failed, say)."""
        task = self._tasks.get(uid)
        if task is None:
            return
        node = self._nodes.get(task.node_name)
        if node is not None and node.tasks.get(task.key) is task:
            node.remove_task(task)
        self._set_status(task, status)
        if node is not None and task.node_name and not in_statuses(status, COMPLETED_STATUSES):
            node.add_task(task)

    # ------------------------------------------------------------------ self-check

    @_locked
    def consistency_problems(self, *, capacity: bool = True) -> list[str]:
        """What is inconsistent in the cache's bookkeeping; empty when all is well.

        Checked: every node's ``idle + used == allocatable`` on every
        dimension, its ``used`` is the sum of its tasks' requests and its
        ``releasing`` that of its Releasing tasks; every task is on at most
        one node, on exactly the one it names when it holds resources, and
        in exactly one status bucket of its job. With ``capacity``, also
        that no ready node holds more than its allocatable on any dimension.
        """
        problems: list[str] = []
        where: dict[str, str] = {}
        for name, node in self._nodes.items():
            total = node.idle.clone().add(node.used)
            if total != node.allocatable:
                problems.append(f"node {name}: idle + used {total} != allocatable {node.allocatable}")
            used, releasing = Resource(), Resource()
            for key, task in node.tasks.items():
                used.add(task.resreq)
                if node.accounted_status(task) is TaskStatus.RELEASING:
                    releasing.add(task.resreq)
                own = self._tasks.get(task.uid)
                if own is not task:
                    problems.append(f"node {name}: holds {key}, which the cache does not know")
                if task.node_name != name:
                    problems.append(f"node {name}: holds {key}, which names node {task.node_name!r}")
                if not allocated_status(task.status) and task.status is not TaskStatus.RELEASING:
                    problems.append(f"node {name}: holds {key}, which is {task.status}")
                if node.accounted_status(task) is not task.status:
                    problems.append(f"node {name}: {key} accounted as {node.accounted_status(task)}, is {task.status}")
                other = where.setdefault(key, name)
                if other != name:
                    problems.append(f"task {key} is on nodes {other} and {name}")
            if used != node.used:
                problems.append(f"node {name}: used {node.used} != the sum of its tasks' requests {used}")
            if releasing != node.releasing:
                problems.append(f"node {name}: releasing {node.releasing} != its releasing tasks' {releasing}")
            if capacity and node.ready:
                for dim in node.used.all_names():
                    if node.used.get(dim) > node.allocatable.get(dim):
                        problems.append(f"node {name}: holds more {dim} than allocatable: {node.used}")
        for task in self._tasks.values():
            holds = allocated_status(task.status) or task.status is TaskStatus.RELEASING
            if holds and task.key not in where:
                problems.append(f"task {task.key} is {task.status} on {task.node_name!r} but on no node")
            if task.status is TaskStatus.PENDING and task.node_name:
                problems.append(f"task {task.key} is Pending but names node {task.node_name}")
        for job in self._jobs.values():
            buckets = [uid for bucket in job.task_status_index.values() for uid in bucket]
            if sorted(buckets) != sorted(job.tasks):
                problems.append(f"job {job.uid}: status buckets do not hold each task exactly once")
            for status, bucket in job.task_status_index.items():
                for uid, task in bucket.items():
                    if task.status is not status or job.tasks.get(uid) is not task:
                        problems.append(f"job {job.uid}: {task.key} in the {status} bucket is {task.status}")
        return problems
