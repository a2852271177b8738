"""Incremental snapshots: what they reuse, and random cycles proving they equal full rebuilds.

Two caches are fed the same random events (gangs arriving, pods finishing,
evictions, failed binds, pods replaced under the same name on their node,
pods of no PodGroup, nodes added, removed and not ready, queues added,
changed and removed, priority classes changed); evicted pods sometimes
linger into the next cycle. One reuses unchanged
copies between snapshots, the other copies everything every time. After
every snapshot the incremental one is checked against a full rebuild of the
same cache (a canonical dump of nodes, jobs, PodGroup status and queues),
and every cycle's decisions must be those of the cache that rebuilds.
"""

from __future__ import annotations

import random
import zlib
from collections.abc import Sequence
from typing import Any

import pytest

from tests.unit.clusters import gang_cluster
from volcanolib import Scheduler, Session, TaskInfo, TaskStatus
from volcanolib.api.cluster import ClusterInfo
from volcanolib.api.node import NodeInfo
from volcanolib.api.resource import Resource
from volcanolib.cache.memory import InMemoryCache
from volcanolib.scheduler import CycleResult
from volcanolib.testing import build_node, build_pod_group, build_queue, build_resource, build_task

CONF = """
actions: "enqueue, allocate, preempt, reclaim, backfill"
tiers:
- plugins:
  - name: priority
  - name: gang
  - name: conformance
- plugins:
  - name: drf
  - name: predicates
  - name: proportion
  - name: nodeorder
  - name: binpack
"""


def _res(r: Resource | None) -> Any:
    return None if r is None else (r.milli_cpu, r.memory, tuple(sorted(r.scalars.items())))


def dump(c: ClusterInfo) -> Any:
    """Everything a session reads from a snapshot, in order, as plain data."""
    assert list(c.nodes) == [n.name for n in c.node_list]
    nodes = []
    for n in c.node_list:
        assert c.nodes[n.name] is n
        tasks = []
        for key, t in n.tasks.items():
            job = c.jobs.get(t.job)
            if job is not None and t.uid in job.tasks:
                assert job.tasks[t.uid] is t, f"{key}: the node's and the job's task are different objects"
            tasks.append((key, t.uid, t.status, t.node_name, n.accounted_status(t), t.last_transaction))
        nodes.append(
            (
                n.name,
                n.ready,
                _res(n.allocatable),
                _res(n.idle),
                _res(n.used),
                _res(n.releasing),
                _res(n.pipelined),
                tuple(tasks),
            )
        )
    jobs = []
    for uid, j in c.jobs.items():
        pg = j.pod_group
        conditions = tuple(
            (x.type, x.status, x.reason, x.message, x.transition_id, x.last_transition_time) for x in pg.conditions
        )
        index = tuple((status, tuple(bucket)) for status, bucket in j.task_status_index.items())
        tasks = tuple((t.uid, t.key, t.status, t.node_name, t.priority, t.last_transaction) for t in j.tasks.values())
        jobs.append(
            (
                uid,
                j.queue,
                j.priority,
                j.min_available,
                pg.phase,
                pg.running,
                pg.succeeded,
                pg.failed,
                conditions,
                j.job_fit_errors,
                len(j.nodes_fit_errors),
                j.schedule_start_timestamp,
                _res(j.allocated),
                _res(j.total_request),
                j.ready_task_num(),
                j.pending_best_effort_task_num(),
                j.valid_task_num(),
                tasks,
                index,
            )
        )
    queues = tuple(
        (q.name, q.weight, _res(q.capability), _res(q.allocated), q.state, q.parent) for q in c.queues.values()
    )
    return tuple(nodes), tuple(jobs), queues, tuple(sorted(c.skipped_jobs.items()))


class CheckedCache(InMemoryCache):
    """A cache that checks every snapshot it hands out against a full rebuild, and counts reuse."""

    def __init__(self, **kwargs: Any) -> None:
        super().__init__(**kwargs)
        self.dumps: list[Any] = []
        self.reused_jobs = 0
        self.reused_nodes = 0
        self.in_place = 0
        self._previous: ClusterInfo | None = None

    def snapshot(self) -> ClusterInfo:
        prev = self._previous
        # Each node of the previous snapshot as its session left it: its pods (by task key) and resources.
        before = {name: _pods_and_resources(node) for name, node in prev.nodes.items()} if prev is not None else {}
        snap = super().snapshot()
        got = dump(snap)
        assert got == dump(self.full_snapshot()), "the incremental snapshot differs from a full rebuild"
        if prev is not None:
            self.reused_jobs += sum(1 for uid, job in snap.jobs.items() if prev.jobs.get(uid) is job)
            self.reused_nodes += sum(1 for name, node in snap.nodes.items() if prev.nodes.get(name) is node)
        delta = snap.delta
        if delta is not None and delta.in_place:
            assert prev is not None and delta.in_place <= delta.nodes
            for name in delta.in_place:  # the same node object, with the same pods and resources
                assert snap.nodes[name] is prev.nodes[name], name
                assert _pods_and_resources(snap.nodes[name]) == before[name], name
            self.in_place += len(delta.in_place)
        self._previous = snap
        self.dumps.append(got)
        return snap

    def start_bound_tasks(self) -> list[TaskInfo]:
        # The tasks kept as bound, in the order of all tasks, are those a scan of every task finds.
        expected = [t for t in self.tasks() if t.status in (TaskStatus.BINDING, TaskStatus.BOUND)]
        started = super().start_bound_tasks()
        assert started == expected
        assert all(t.status is TaskStatus.RUNNING for t in started)
        return started


def _pods_and_resources(node: NodeInfo) -> tuple[Any, ...]:
    pods = tuple((key, id(task.pod)) for key, task in node.tasks.items())
    return pods, node.idle.key(), node.used.key(), node.releasing.key(), node.pipelined.key()


class FirstTryFails:
    """A binder that fails the first bind of about one task in six, the same in every cache."""

    def __init__(self) -> None:
        self.tried: set[str] = set()

    def bind(self, tasks: Sequence[TaskInfo]) -> Sequence[TaskInfo]:
        failed = [t for t in tasks if t.uid not in self.tried and zlib.crc32(t.uid.encode()) % 6 == 0]
        self.tried.update(t.uid for t in tasks)
        return failed


QUEUES = ("default", "q1", "q2", "q3")


class World:
    """Random events, drawn once and applied to every cache alike."""

    def __init__(self, seed: int, nodes: int) -> None:
        self.rng = random.Random(seed)
        self.next_node = nodes
        self.next_job = 0
        self.next_pod = 0
        self.nodes = {f"n{i}" for i in range(nodes)}
        self.events: list[tuple[Any, ...]] = [("node", f"n{i}", self._node_size(), True) for i in range(nodes)]
        self.events += [("queue", name, 1, None) for name in QUEUES[1:3]]
        self.events += [("prio", "low", 10), ("prio", "high", 1000)]

    def _node_size(self) -> tuple[int, int]:
        return self.rng.choice([(2000, 4), (4000, 8), (8000, 16)]), self.rng.choice([4, 8, 16])

    def draw(self, cache: InMemoryCache) -> list[tuple[Any, ...]]:
        """This cycle's events, chosen from the state of ``cache`` (all caches agree on it)."""
        rng = self.rng
        events: list[tuple[Any, ...]] = []
        tasks = sorted(cache.tasks(), key=lambda t: t.uid)
        running = [t.uid for t in tasks if t.status is TaskStatus.RUNNING]
        for _ in range(rng.randint(0, 3)):
            size = rng.randint(1, 5)
            name = f"g{self.next_job}"
            self.next_job += 1
            events.append(
                (
                    "gang",
                    name,
                    rng.choice(QUEUES),
                    size,
                    rng.randint(1, size),
                    rng.choice([250, 500, 1000, 2000]),
                    rng.choice(["low", "high"]),
                    rng.random() < 0.7,
                    rng.choice(["Pending", "Inqueue"]),
                )
            )
        finished = rng.sample(running, min(len(running), rng.randint(0, 3)))
        for uid in finished:
            events.append(("finish", uid, rng.choice(["succeeded", "failed", "deleted"])))
        left = [uid for uid in running if uid not in finished]
        if left and rng.random() < 0.3:
            events.append(("evict", rng.choice(left)))
        if left and rng.random() < 0.2:
            # The pod is deleted and created again under its name, with another uid and a smaller
            # request, on the same node (as a controller replacing it, bound by another scheduler).
            events.append(("replace", rng.choice(left), self.next_pod))
            self.next_pod += 1
        if self.nodes and rng.random() < 0.15:
            # A pod of no PodGroup running on a node (it counts there; no session schedules it).
            events.append(("bare", f"bare{self.next_pod}", rng.choice(sorted(self.nodes))))
            self.next_pod += 1
        if rng.random() < 0.1:
            jobs = sorted(j.uid for j in cache.jobs())
            if jobs:
                events.append(("delete_job", rng.choice(jobs), rng.random() < 0.5))
        if rng.random() < 0.1:
            jobs = sorted(j.uid for j in cache.jobs())
            if jobs:
                # A PodGroup moved to another queue (one that may have been deleted).
                events.append(("requeue", rng.choice(jobs), rng.choice(QUEUES)))
        roll = rng.random()
        names = sorted(self.nodes)
        if roll < 0.15:
            events.append(("node", f"n{self.next_node}", self._node_size(), True))
            self.nodes.add(f"n{self.next_node}")
            self.next_node += 1
        elif roll < 0.25 and names:
            events.append(("node", rng.choice(names), self._node_size(), rng.random() < 0.5))
        elif roll < 0.3 and names:
            name = rng.choice(names)
            events.append(("delete_node", name))
            self.nodes.discard(name)
        roll = rng.random()
        if roll < 0.1:
            events.append(("queue", rng.choice(QUEUES[1:]), rng.randint(1, 4), rng.choice([None, 3000, 8000])))
        elif roll < 0.13:
            events.append(("delete_queue", rng.choice(QUEUES[1:])))
        elif roll < 0.16:
            events.append(("prio", rng.choice(["low", "high"]), rng.choice([10, 100, 1000])))
        return events


def gang_task(event: tuple[Any, ...], i: int, **extra: Any) -> TaskInfo:
    """Pod ``i`` of a ``gang`` event (``extra``: more of :func:`build_task`'s arguments)."""
    _, name, _, _, _, cpu, prio, preemptable, _ = event
    return build_task(
        f"{name}-{i}",
        job=name,
        cpu=f"{cpu}m",
        memory="512Mi",
        priority=1000 if prio == "high" else 10,
        preemptable=preemptable,
        **extra,
    )


def apply(cache: InMemoryCache, event: tuple[Any, ...]) -> None:
    kind = event[0]
    if kind == "node":
        _, name, ((cpu, gi), pods), ready = event
        node = build_node(name, cpu=f"{cpu}m", memory=f"{gi}Gi", pods=pods)
        node.ready = ready
        if not ready:
            node.not_ready_reason = "NotReady"
        cache.add_node(node)
    elif kind == "delete_node":
        cache.delete_node(event[1])
    elif kind == "queue":
        _, name, weight, cap = event
        capability = build_resource(f"{cap}m", "1Ti") if cap is not None else None
        cache.add_queue(build_queue(name, weight=weight, capability=capability))
    elif kind == "delete_queue":
        cache.delete_queue(event[1])
    elif kind == "prio":
        cache.add_priority_class(event[1], event[2])
    elif kind == "gang":
        _, name, queue, size, min_member, cpu, prio, _, phase = event
        # Half the gangs (by name) state their minimum resources, which admission reserves.
        minimum = (
            build_resource(f"{cpu * min_member}m", f"{512 * min_member}Mi") if zlib.crc32(name.encode()) % 2 else None
        )
        cache.add_pod_group(
            build_pod_group(
                name, queue=queue, min_member=min_member, priority_class_name=prio, phase=phase, min_resources=minimum
            )
        )
        for i in range(size):
            cache.add_task(gang_task(event, i))
    elif kind == "finish":
        _, uid, how = event
        if how == "deleted":
            cache.delete_task(uid)
        else:
            cache.set_task_phase(uid, TaskStatus.SUCCEEDED if how == "succeeded" else TaskStatus.FAILED)
    elif kind == "evict":
        task = cache.get_task(event[1])
        assert task is not None
        cache.evict(task, "drained")
    elif kind == "replace":
        _, uid, serial = event
        old = cache.get_task(uid)
        if old is not None and old.node_name:
            cache.delete_task(uid)
            cache.add_task(
                build_task(
                    old.name,
                    job=old.job.split("/")[-1],
                    namespace=old.namespace,
                    cpu=f"{max(int(old.resreq.milli_cpu) // 2, 1)}m",
                    memory="256Mi",
                    node=old.node_name,
                    priority=old.priority,
                    preemptable=old.preemptable,
                    uid=f"{uid}-r{serial}",
                )
            )
    elif kind == "bare":
        _, name, node = event
        cache.add_task(build_task(name, cpu="100m", memory="128Mi", node=node, priority=10))
    elif kind == "delete_job":
        namespace, name = event[1].split("/")
        again = event[2]
        old = next((j for j in cache.jobs() if j.uid == event[1]), None) if again else None
        for task in [t for t in cache.tasks() if t.job == event[1]]:
            cache.delete_task(task.uid)
        cache.delete_pod_group(namespace, name)
        if old is not None:  # created again under its name: it moves to the end of the cache's order
            cache.add_pod_group(build_pod_group(name, queue=old.queue, min_member=1))
    elif kind == "requeue":
        job = next((j for j in cache.jobs() if j.uid == event[1]), None)
        if job is not None:
            pg = job.pod_group
            cache.update_pod_group(
                build_pod_group(pg.name, queue=event[2], min_member=job.min_available, phase=pg.phase)
            )
    else:  # pragma: no cover - a typo in the generator
        raise AssertionError(kind)


def linger(cycle: int) -> bool:
    """Whether the pods evicted so far stay (Releasing) into this cycle, as during a grace period."""
    return cycle % 3 == 1


def decisions(result: CycleResult) -> Any:
    ssn = result.session
    assert ssn is not None
    phases = tuple(
        (uid, job.pod_group.phase, tuple((c.type, c.status, c.reason, c.message) for c in job.pod_group.conditions))
        for uid, job in ssn.jobs.items()
    )
    return (
        tuple((t.key, node) for t, node in result.binds),
        tuple((t.key, node, why) for t, node, why in result.failed_binds),
        tuple((t.key, why) for t, why in result.evictions),
        tuple((t.key, node) for t, node in result.pipelined),
        phases,
        tuple(str(e) for e in result.plugin_errors),
    )


def cache_state(cache: InMemoryCache) -> Any:
    tasks = tuple(sorted((t.uid, t.status, t.node_name) for t in cache.tasks()))
    jobs = tuple(sorted((j.uid, j.pod_group.phase, j.pod_group.running) for j in cache.jobs()))
    return tasks, jobs


def run_cycles(seed: int, cycles: int, nodes: int) -> CheckedCache:
    """Run ``cycles`` random cycles on an incremental and a rebuilding cache; check them; return the first."""
    world = World(seed, nodes)
    caches = [
        CheckedCache(binder=FirstTryFails(), incremental_snapshots=True),
        CheckedCache(binder=FirstTryFails(), incremental_snapshots=False),
    ]
    now = [0.0]
    schedulers = [Scheduler(cache, CONF, seed=seed, clock=lambda: now[0]) for cache in caches]
    for event in world.events:
        for cache in caches:
            apply(cache, event)
    for cycle in range(cycles):
        now[0] = float(cycle)
        for cache in caches:
            cache.start_bound_tasks()
            if linger(cycle):
                continue
            cache.finish_evictions()
        events = world.draw(caches[0])
        for cache in caches:
            for event in events:
                apply(cache, event)
        results = [scheduler.run_once() for scheduler in schedulers]
        incremental, full = caches
        assert incremental.dumps[-1] == full.dumps[-1], f"seed {seed} cycle {cycle}: the snapshots differ"
        assert decisions(results[0]) == decisions(results[1]), f"seed {seed} cycle {cycle}: the decisions differ"
        assert cache_state(incremental) == cache_state(full), f"seed {seed} cycle {cycle}: the caches differ"
        assert incremental.consistency_problems(capacity=False) == []
    assert caches[1].reused_jobs == 0 and caches[1].reused_nodes == 0
    return caches[0]


@pytest.mark.parametrize("seed", range(6))
def test_random_cycles_give_full_rebuild_snapshots_and_decisions(seed: int) -> None:
    cache = run_cycles(seed, cycles=40, nodes=12)
    # The run did reuse copies (the check above is not between two full copies), and nodes brought
    # up to date in place were named so.
    assert cache.reused_jobs > 100 and cache.reused_nodes > 100 and cache.in_place > 0


@pytest.mark.slow
@pytest.mark.parametrize("seed", range(100, 120))
def test_random_cycles_soak(seed: int) -> None:
    cache = run_cycles(seed, cycles=150, nodes=30)
    assert cache.reused_jobs > 0


# ---------------------------------------------------------------------------- what is reused


def small() -> tuple[InMemoryCache, Scheduler]:
    cache = gang_cluster(4, 3)
    return cache, Scheduler(cache, CONF)


def test_a_closed_session_lets_the_next_snapshot_reuse_what_did_not_change() -> None:
    cache, scheduler = small()
    scheduler.run_once()
    cache.start_bound_tasks()
    scheduler.run_once()  # every job changed (bound, then started): all copied again
    first = scheduler.run_once().session
    assert first is not None
    cache.set_task_phase("default-j1-0", TaskStatus.SUCCEEDED)
    second = scheduler.run_once().session
    assert second is not None
    assert second.jobs["default/j0"] is first.jobs["default/j0"]
    assert second.jobs["default/j1"] is not first.jobs["default/j1"]
    changed_node = cache.get_task("default-j1-0")
    assert changed_node is not None
    for name, node in second.nodes.items():
        assert (node is first.nodes[name]) == (name != changed_node.node_name)
    assert second.queues["default"] is not first.queues["default"]  # queues are always copied


def test_a_following_session_hands_the_cache_only_the_jobs_it_may_have_changed(monkeypatch: Any) -> None:
    handed: list[str] = []
    original = InMemoryCache.update_job_status

    def update_job_status(self: InMemoryCache, job: Any, changed: bool) -> None:
        handed.append(job.uid)
        original(self, job, changed)

    monkeypatch.setattr(InMemoryCache, "update_job_status", update_job_status)
    # The same cycles with and without the shortcut, on a clock that ticks alike.
    runs = []
    for quiet in (True, False):
        monkeypatch.setattr("volcanolib.framework.settled._QUIET_JOBS", quiet)
        cache, _ = small()
        now = [0.0]
        scheduler = Scheduler(cache, CONF, clock=lambda now=now: now[0])  # type: ignore[misc]
        handed_per_cycle: list[list[str]] = []
        dumps = []
        for cycle in range(6):
            now[0] = float(cycle)
            if cycle == 4:
                cache.set_task_phase("default-j1-0", TaskStatus.SUCCEEDED)
                cache.add_pod_group(build_pod_group("late", min_member=1))
                cache.add_task(build_task("late-0", job="late", cpu="1"))
            handed.clear()
            scheduler.run_once()
            cache.start_bound_tasks()
            handed_per_cycle.append(sorted(handed))
            dumps.append(dump(cache.full_snapshot()))
        runs.append((handed_per_cycle, dumps))
    (quiet_handed, quiet_dumps), (all_handed, all_dumps) = runs
    assert quiet_dumps == all_dumps
    assert all(h == ["default/j0", "default/j1", "default/j2"] for h in all_handed[:4])
    # Settled (every job Running, its Scheduled condition kept), a cycle hands over only what changed.
    assert quiet_handed[3] == []
    assert quiet_handed[4] == ["default/j1", "default/late"]


def test_a_snapshot_not_given_back_by_a_session_is_not_reused() -> None:
    cache, scheduler = small()
    scheduler.run_once()
    one = cache.snapshot()
    two = cache.snapshot()  # no session closed on ``one``
    assert all(two.jobs[uid] is not job for uid, job in one.jobs.items())
    assert all(two.nodes[name] is not node for name, node in one.nodes.items())


def test_incremental_snapshots_can_be_switched_off() -> None:
    cache, scheduler = small()
    cache.incremental_snapshots = False
    first = scheduler.run_once().session
    second = scheduler.run_once().session
    assert first is not None and second is not None
    assert all(second.jobs[uid] is not job for uid, job in first.jobs.items())


def test_what_a_session_changes_is_copied_again() -> None:
    cache, scheduler = small()
    scheduler.run_once()
    cache.start_bound_tasks()
    scheduler.run_once()
    base = scheduler.run_once().session
    assert base is not None
    ssn = scheduler.new_session()
    ssn.open()
    job = ssn.jobs["default/j2"]
    task = next(iter(job.tasks.values()))
    stmt = ssn.statement()
    stmt.evict(task, "test")
    stmt.discard()  # undone: Running again, but the task remembers the undone decision
    assert task.last_transaction is not None
    assert ssn.jobs["default/j0"] not in ssn.unsettled_jobs()  # settled: left alone unless a plugin says
    ssn.unsettle(ssn.jobs["default/j0"])
    ssn.jobs["default/j0"].job_fit_errors = "a note of this session"
    ssn.close()
    after = cache.snapshot()
    assert after.jobs["default/j2"] is not job
    assert after.jobs["default/j2"].tasks[task.uid].last_transaction is None
    assert after.nodes[task.node_name] is not ssn.nodes[task.node_name]
    assert after.jobs["default/j0"] is ssn.jobs["default/j0"]  # reused, its note reset
    assert after.jobs["default/j0"].job_fit_errors == ""
    assert after.jobs["default/j1"] is ssn.jobs["default/j1"]
    assert dump(after) == dump(cache.full_snapshot())


def test_a_priority_class_change_copies_every_job_again() -> None:
    cache, scheduler = small()
    first = scheduler.run_once().session
    assert first is not None
    cache.add_priority_class("urgent", 5, global_default=True)
    after = cache.snapshot()
    assert all(after.jobs[uid] is not job for uid, job in first.jobs.items())
    assert {job.priority for job in after.jobs.values()} == {5}


def test_switching_incremental_snapshots_on_starts_with_a_full_copy() -> None:
    cache, scheduler = small()
    cache.add_pod_group(build_pod_group("huge"))
    cache.add_task(build_task("huge-0", job="huge", cpu="100"))  # fits no node: fit errors every cycle
    scheduler.run_once()
    cache.start_bound_tasks()
    scheduler.run_once()
    cache.incremental_snapshots = False
    first = scheduler.run_once().session  # its notes were not checked when it closed
    assert first is not None and first.jobs["default/huge"].job_fit_errors
    cache.incremental_snapshots = True
    second = cache.snapshot()
    assert all(second.jobs[uid] is not job for uid, job in first.jobs.items())
    assert dump(second) == dump(cache.full_snapshot())


def test_settled_jobs_are_left_out_until_something_changes_them() -> None:
    cache, scheduler = small()
    cache.add_pod_group(build_pod_group("big", min_member=1))
    cache.add_task(build_task("big-0", job="big", cpu="100"))  # fits no node: never settles
    scheduler.run_once()
    cache.start_bound_tasks()
    scheduler.run_once()
    scheduler.run_once()
    ssn = scheduler.new_session()
    ssn.open()
    assert [job.uid for job in ssn.unsettled_jobs()] == ["default/big"]
    job = ssn.jobs["default/j1"]
    task = next(iter(job.tasks.values()))
    stmt = ssn.statement()
    stmt.evict(task, "test")
    stmt.commit()
    # The evicted job is back, in session order, and close writes its status: one task running.
    assert [j.uid for j in ssn.unsettled_jobs()] == ["default/j1", "default/big"]
    ssn.close()
    assert cache.snapshot().jobs["default/j1"].pod_group.running == 1
    assert dump(cache.snapshot()) == dump(cache.full_snapshot())


def _three_nodes_one_running_pod() -> InMemoryCache:
    """Three nodes; the pod ``run-0`` of the Running group ``run`` on ``n0``."""
    cache = InMemoryCache()
    for i in range(3):
        cache.add_node(build_node(f"n{i}", cpu="8", memory="16Gi"))
    cache.add_pod_group(build_pod_group("run", phase="Running"))
    cache.add_task(build_task("run-0", job="run", node="n0"))
    return cache


def test_a_node_brought_up_to_date_in_place_is_named_so_only_while_it_holds_the_same_pods() -> None:
    cache = _three_nodes_one_running_pod()
    cache.add_pod_group(build_pod_group("new"))
    cache.add_task(build_task("new-0", job="new"))
    scheduler = Scheduler(cache)
    ((_, landed),) = scheduler.run_once().binds
    # The session had the task Allocated there, the cache has it Binding: same pods, same accounting.
    second = scheduler.run_once().session
    assert second is not None and second.delta is not None
    assert second.delta.in_place == {landed} and landed in second.delta.nodes
    assert landed not in second.delta.nodes_with_changed_pods()
    # A pod made again under the same key, with the same request, on the same node: not the same pods.
    cache.add_task(build_task("run-0", job="run", node="n0", labels={"made": "again"}))
    third = scheduler.run_once().session
    assert third is not None and third.delta is not None
    assert "n0" in third.delta.nodes and "n0" in third.delta.nodes_with_changed_pods()
    assert not third.delta.in_place


def test_a_node_where_the_last_session_evicted_a_task_is_not_in_place() -> None:
    """The evicting session no longer counted the task as a pod of its node; the next one does."""
    scheduler = Scheduler(_three_nodes_one_running_pod())
    scheduler.run_once()

    def evict(ssn: Session) -> None:
        stmt = ssn.statement()
        stmt.evict(ssn.jobs["default/run"].tasks["default-run-0"], "test")
        stmt.commit()

    assert [task.key for task, _ in scheduler.run_once(before_actions=evict).evictions] == ["default/run-0"]
    after = scheduler.run_once().session
    assert after is not None and after.delta is not None
    # Releasing in the session's copy and in the cache alike: the node was brought up to date in place.
    assert after.delta.nodes == {"n0"} and after.nodes["n0"].tasks["default/run-0"].status is TaskStatus.RELEASING
    assert not after.delta.in_place
