"""What sessions hand to the next one: kept node classes and resumed plugins equal a fresh build.

The random cycles of :mod:`test_incremental` run through one scheduler on an
incremental cache, so every session but a few follows the previous one
(:attr:`Session.delta`). After each cycle, the node classes the session
kept (carried over from earlier sessions and brought up to date) are
compared with classes grouped afresh from the session's nodes, and the
state of every plugin that resumed is compared with what
``on_session_open`` computes from scratch on the same snapshot.
"""

from __future__ import annotations

import zlib
from collections.abc import Callable, Hashable
from typing import Any, ClassVar

import attrs
import pytest
from test_incremental import CheckedCache, FirstTryFails, World, apply, decisions, gang_task, linger

from volcanolib import Event, InMemoryCache, Registry, Scheduler, Session, hookimpl
from volcanolib.api.cluster import ClusterInfo, SnapshotChanges, SnapshotDelta
from volcanolib.api.job import JobInfo
from volcanolib.api.node import Taint
from volcanolib.api.resource import total
from volcanolib.api.task import TaskStatus
from volcanolib.framework.carry import Carry
from volcanolib.framework.nodeclass import NodeClasses, NodeClassPlan
from volcanolib.framework.placement import NodeChanges
from volcanolib.testing import build_node, build_pod_group, build_queue, build_resource, build_task

#: test_incremental's configuration, with overcommit.
CONF = """
actions: "enqueue, allocate, preempt, reclaim, backfill"
tiers:
- plugins:
  - name: priority
  - name: gang
  - name: conformance
- plugins:
  - name: overcommit
  - name: drf
  - name: predicates
  - name: proportion
  - name: nodeorder
  - name: binpack
"""

_SPREAD: Any = {
    "podAntiAffinity": {
        "requiredDuringSchedulingIgnoredDuringExecution": [
            {"labelSelector": {"matchLabels": {"app": "apart"}}, "topologyKey": "kubernetes.io/hostname"}
        ],
        "preferredDuringSchedulingIgnoredDuringExecution": [
            {
                "weight": 10,
                "podAffinityTerm": {
                    "labelSelector": {"matchLabels": {"app": "apart"}},
                    "topologyKey": "kubernetes.io/hostname",
                },
            }
        ],
    }
}


def _hash(name: str) -> int:
    return zlib.crc32(name.encode())


def apply_varied(cache: InMemoryCache, event: tuple[Any, ...]) -> None:
    """:func:`apply`, with taints and images on some nodes and anti-affinity on some gangs' pods.

    The extras are chosen by name, so they are the same whenever an event is applied.
    """
    apply(cache, event)
    kind = event[0]
    if kind == "node" and _hash(event[1]) % 3:
        _, name, ((cpu, gi), pods), ready = event
        effect = "NoSchedule" if _hash(name) % 3 == 1 else "PreferNoSchedule"
        zone = {"zone": "a" if _hash(name) % 2 else "b"}
        taints = [Taint("dedicated", "x", effect)]
        node = build_node(name, cpu=f"{cpu}m", memory=f"{gi}Gi", pods=pods, labels=zone, taints=taints)
        node.node = attrs.evolve(node.node, images={f"img{_hash(name) % 2}:latest": 300 * 1024 * 1024})
        node.ready = ready
        if not ready:
            node.not_ready_reason = "NotReady"
        cache.add_node(node)
    elif kind == "gang" and _hash(event[1]) % 4 == 1:
        # Pods that must run in zone a: the stable checks fail every other node.
        for i in range(event[3]):
            cache.add_task(gang_task(event, i, node_selector={"zone": "a"}))
    elif kind == "gang" and _hash(event[1]) % 4 == 2:
        # Pods whose image scores: their node classes read how many nodes hold the image.
        for i in range(event[3]):
            task = gang_task(event, i)
            assert task.pod is not None
            task.pod = attrs.evolve(task.pod, images=("img1",))
            cache.add_task(task)
    elif kind == "gang" and _hash(event[1]) % 4 == 0:
        for i in range(event[3]):
            task = gang_task(event, i, labels={"app": "apart"})
            assert task.pod is not None
            task.pod = attrs.evolve(task.pod, affinity=_SPREAD, images=("img0",))
            cache.add_task(task)


def _plans(ssn: Session) -> list[NodeClassPlan]:
    """The durable node class plans of every task in the session, each once."""
    plans: dict[Hashable, NodeClassPlan] = {}
    for job in ssn.jobs.values():
        for task in job.tasks.values():
            plan = ssn.node_class_plan(task)
            if plan is not None and plan.durable:
                plans.setdefault(plan.token, plan)
    return list(plans.values())


def run(
    seed: int,
    cycles: int,
    check: Callable[[Session, Session | None], None],
    opened: Callable[[Scheduler, Session], None] | None = None,
    feed: Callable[[InMemoryCache, tuple[Any, ...]], None] = apply,
    conf: str = CONF,
    verify: bool = False,
) -> int:
    """Random cycles through one scheduler; ``check(session, previous)`` after each; return how many resumed.

    :param opened: called with every session once its plugins are open, before the actions.
    """
    world = World(seed, 24)
    cache = CheckedCache(binder=FirstTryFails(), incremental_snapshots=True)
    now = [0.0]
    scheduler = Scheduler(cache, conf, seed=seed, clock=lambda: now[0], verify=verify)
    for event in world.events:
        feed(cache, event)
    previous: Session | None = None
    resumed = 0
    for cycle in range(cycles):
        now[0] = float(cycle)
        cache.start_bound_tasks()
        if not linger(cycle):
            cache.finish_evictions()
        for event in world.draw(cache):
            feed(cache, event)
        before = None if opened is None else (lambda ssn: opened(scheduler, ssn))
        ssn = scheduler.run_once(before_actions=before).session
        assert ssn is not None
        resumed += ssn.delta is not None
        check(ssn, previous)
        previous = ssn
    return resumed


@pytest.mark.parametrize("seed", range(6))
def test_kept_node_classes_equal_a_fresh_grouping(seed: int) -> None:
    carried = [0]

    def check(ssn: Session, previous: Session | None) -> None:
        kept = ssn.placement.node_classes()
        if kept is None:
            return
        if previous is not None and kept is previous.placement.node_classes():
            carried[0] += 1
        for plan in _plans(ssn):
            fresh = NodeClasses(NodeChanges(ssn.node_list, []))
            assert kept.classes(plan) == fresh.classes(plan), f"seed {seed}: kept classes differ for {plan.token}"
            # The same nodes, in the same order, as the session's.
            assert list(kept.nodes) == ssn.node_list

    resumed = run(seed, 40, check)
    assert resumed > 20
    # Classes were carried from session to session (the check is not between two fresh groupings).
    assert carried[0] > 10


#: The plugins of the configuration that resume, each with a ``kept_state()`` to compare.
RESUMING = ("overcommit", "drf", "predicates", "proportion", "nodeorder")


def opened_afresh(scheduler: Scheduler, ssn: Session, name: str, seed: int) -> Any:
    """Plugin ``name`` opened afresh on ``ssn``, once the scheduler's resumed instance was checked to equal it."""
    plugin: Any = scheduler.host.plugins[name]
    fresh: Any = type(plugin)(plugin.arguments)
    fresh.on_session_open(ssn)
    assert plugin.kept_state() == fresh.kept_state(), f"seed {seed}: {name} resumed differs from a fresh open"
    return fresh


@pytest.mark.parametrize("seed", range(6))
def test_resumed_plugins_equal_plugins_opened_afresh(seed: int) -> None:
    compared: dict[str, int] = dict.fromkeys(RESUMING, 0)
    verdicts_compared = [0]

    def opened(scheduler: Scheduler, ssn: Session) -> None:
        if ssn.delta is None:
            return
        # The session's own sum, kept node by node, too.
        assert ssn.total_resource == total(node.allocatable for node in ssn.node_list)
        for name, plugin in scheduler.host.plugins.items():
            if not hasattr(plugin, "on_session_resume"):
                continue
            fresh = opened_afresh(scheduler, ssn, name, seed)
            compared[name] += 1
            if name == "predicates":
                # The stable checks' verdicts kept from earlier sessions equal those computed afresh.
                for token, verdicts in plugin._verdicts.items():
                    assert verdicts.static == fresh._verdicts_of(verdicts.spec).static, f"seed {seed}: {token}"
                    verdicts_compared[0] += 1

    resumed = run(seed, 40, lambda ssn, previous: None, opened, apply_varied)
    assert resumed > 20
    assert all(count == resumed for count in compared.values()), compared
    assert verdicts_compared[0] > 10


#: CONF with capacity in place of proportion; ``{hierarchy}`` switches its queue tree on.
CAPACITY_CONF = CONF.replace("  - name: proportion\n", "  - name: capacity\n    enableHierarchy: {hierarchy}\n")


def apply_quotas(cache: InMemoryCache, event: tuple[Any, ...]) -> None:
    """:func:`apply`, every queue given deserved and guaranteed resources by its weight, in a tree.

    ``q3`` sits under ``mid`` (a queue without jobs), the others under ``root``.
    """
    if not any(queue.name == "mid" for queue in cache.queues()):
        cache.add_queue(build_queue("root"))
        cache.add_queue(build_queue("mid", deserved=build_resource("6", "12Gi")))
    apply(cache, event)
    if event[0] == "queue":
        _, name, weight, cap = event
        cache.add_queue(
            build_queue(
                name,
                weight=weight,
                capability=build_resource(f"{cap}m", "1Ti") if cap is not None else None,
                deserved=build_resource(f"{2 * weight}", f"{4 * weight}Gi"),
                guarantee=build_resource(f"{500 * weight}m", "1Gi") if weight > 2 else None,
                parent="mid" if name == "q3" else None,
            )
        )


@pytest.mark.parametrize("hierarchy", [False, True])
@pytest.mark.parametrize("seed", range(4))
def test_resumed_capacity_equals_capacity_opened_afresh(seed: int, hierarchy: bool) -> None:
    compared = [0]
    ready = set()

    def opened(scheduler: Scheduler, ssn: Session) -> None:
        if ssn.delta is None:
            return
        plugin: Any = scheduler.host.plugins["capacity"]
        fresh = opened_afresh(scheduler, ssn, "capacity", seed)
        assert [a.share for a in plugin.queue_attrs.values()] == [a.share for a in fresh.queue_attrs.values()]
        ready.add(plugin.ready)
        compared[0] += 1

    conf = CAPACITY_CONF.format(hierarchy=str(hierarchy).lower())
    resumed = run(seed, 40, lambda ssn, previous: None, opened, apply_quotas, conf)
    assert resumed > 20 and compared[0] == resumed
    assert True in ready  # the tree was valid in some sessions (in flat mode, always)


def test_resumed_capacity_with_a_job_in_a_parent_queue_equals_a_fresh_open() -> None:
    """A job in a queue that has children breaks the tree; resuming leaves the state a fresh open leaves."""
    cache = InMemoryCache()
    for i in range(4):  # the change below touches one of them: the session can resume
        cache.add_node(build_node(f"n{i}", cpu="8", memory="16Gi"))
    cache.add_queue(build_queue("root"))
    cache.add_queue(build_queue("team", deserved=build_resource("4", "8Gi")))
    cache.add_queue(build_queue("leaf", parent="team", deserved=build_resource("2", "4Gi")))
    for name, queue in (("a", "leaf"), ("b", "leaf")):
        cache.add_pod_group(build_pod_group(name, queue=queue, min_member=1))
        cache.add_task(build_task(f"{name}-0", job=name, cpu="1", node="n0", status=TaskStatus.RUNNING))
    scheduler = Scheduler(cache, CAPACITY_CONF.format(hierarchy="true"))
    states: list[Any] = []

    def opened(ssn: Session) -> None:
        opened_afresh(scheduler, ssn, "capacity", 0)
        states.append((ssn.delta is not None, scheduler.host.plugins["capacity"].ready))  # type: ignore[attr-defined]

    scheduler.run_once(before_actions=opened)
    scheduler.run_once(before_actions=opened)
    # A job in the parent queue, and "b" made again after it: the session's jobs are a, c, b.
    cache.add_pod_group(build_pod_group("c", queue="team", min_member=1))
    cache.add_task(build_task("c-0", job="c", cpu="1", node="n0", status=TaskStatus.RUNNING))
    cache.delete_task("default-b-0")
    cache.delete_pod_group("default", "b")
    cache.add_pod_group(build_pod_group("b", queue="leaf", min_member=1))
    cache.add_task(build_task("b-0", job="b", cpu="1", node="n0", status=TaskStatus.RUNNING))
    scheduler.run_once(before_actions=opened)
    assert states == [(False, True), (True, True), (True, False)]
    capacity: Any = scheduler.host.plugins["capacity"]
    # Built job by job, as a fresh open builds it: the tree stopped at "c", before "b" was counted.
    assert capacity.queue_attrs["leaf"].allocated.milli_cpu == 1000


#: CONF with deviceshare; ``{switch}`` is the argument that turns its per-card checks on.
GPU_CONF = CONF + "  - name: deviceshare\n    arguments: {{{switch}: true}}\n"
GPU_SWITCHES = {"sharing": "deviceshare.GPUSharingEnable", "number": "deviceshare.GPUNumberEnable"}


def apply_gpus(cache: InMemoryCache, event: tuple[Any, ...]) -> None:
    """:func:`apply`, with GPU cards on two nodes in three and GPUs asked by half the gangs (by name).

    Some pods name their cards (``volcano.sh/gpu-index``), the others are given cards at open.
    """
    kind = event[0]
    if kind == "node" and _hash(event[1]) % 3:
        _, name, ((cpu, gi), pods), ready = event
        cards = 2 + _hash(name) % 3
        scalars = {"volcano.sh/gpu-memory": str(4000 * cards), "volcano.sh/gpu-number": str(cards)}
        node = build_node(name, cpu=f"{cpu}m", memory=f"{gi}Gi", pods=pods, scalars=scalars)
        node.ready = ready
        if not ready:
            node.not_ready_reason = "NotReady"
        cache.add_node(node)
    elif kind == "gang" and _hash(event[1]) % 2:
        apply(cache, event)
        asked = ("volcano.sh/gpu-memory", "1000") if _hash(event[1]) % 4 == 1 else ("volcano.sh/gpu-number", "1")
        for i in range(event[3]):
            task = gang_task(event, i, scalars=dict([asked]))
            if i == 0 and _hash(event[1]) % 8 == 1:
                task = gang_task(event, i, scalars=dict([asked]), annotations={"volcano.sh/gpu-index": "0"})
            cache.add_task(task)
    else:
        apply(cache, event)


@pytest.mark.parametrize("switch", GPU_SWITCHES)
@pytest.mark.parametrize("seed", range(4))
def test_resumed_deviceshare_equals_deviceshare_opened_afresh(seed: int, switch: str) -> None:
    compared = [0]
    held = [0]

    def opened(scheduler: Scheduler, ssn: Session) -> None:
        if ssn.delta is None:
            return
        opened_afresh(scheduler, ssn, "deviceshare", seed)
        compared[0] += 1
        held[0] += len(scheduler.host.plugins["deviceshare"].held)  # type: ignore[attr-defined]

    conf = GPU_CONF.format(switch=GPU_SWITCHES[switch])
    resumed = run(seed, 40, lambda ssn, previous: None, opened, apply_gpus, conf)
    assert resumed > 20 and compared[0] == resumed
    assert held[0] > 0  # pods held cards when the states were compared


#: Configurations and feeds whose resumed sessions are checked against fresh ones.
SETUPS: dict[str, tuple[str, Callable[[InMemoryCache, tuple[Any, ...]], None]]] = {
    "proportion": (CONF, apply_varied),
    "capacity": (CAPACITY_CONF.format(hierarchy="false"), apply_quotas),
    "capacity-tree": (CAPACITY_CONF.format(hierarchy="true"), apply_quotas),
    "deviceshare": (GPU_CONF.format(switch=GPU_SWITCHES["sharing"]), apply_gpus),
    "network-topology-aware": (CONF + "  - name: network-topology-aware\n", apply_varied),
}


@pytest.mark.parametrize("setup", SETUPS)
@pytest.mark.parametrize("seed", range(4))
def test_resumed_sessions_decide_as_fresh_ones_with_taints_images_and_anti_affinity(seed: int, setup: str) -> None:
    conf, feed = SETUPS[setup]
    world = World(seed, 24)
    caches = [
        CheckedCache(binder=FirstTryFails(), incremental_snapshots=True),
        CheckedCache(binder=FirstTryFails(), incremental_snapshots=False),
    ]
    now = [0.0]
    schedulers = [Scheduler(cache, conf, seed=seed, clock=lambda: now[0]) for cache in caches]
    for event in world.events:
        for cache in caches:
            feed(cache, event)
    resumed = 0
    for cycle in range(40):
        now[0] = float(cycle)
        for cache in caches:
            cache.start_bound_tasks()
            if not linger(cycle):
                cache.finish_evictions()
        events = world.draw(caches[0])
        for cache in caches:
            for event in events:
                feed(cache, event)
        results = [scheduler.run_once() for scheduler in schedulers]
        assert results[1].session is not None and results[1].session.delta is None
        assert results[0].session is not None
        resumed += results[0].session.delta is not None
        assert decisions(results[0]) == decisions(results[1]), f"seed {seed} cycle {cycle}: the decisions differ"
    assert resumed > 20


class Probe:
    """Records how it was opened; fails in ``on_allocate`` while :attr:`fail` is set."""

    name = "probe"
    calls: ClassVar[list[str]] = []
    fail: ClassVar[bool] = False

    def __init__(self, arguments: Any) -> None:
        self.arguments = arguments

    @hookimpl
    def on_session_open(self, ssn: Session) -> None:
        Probe.calls.append("open")

    @hookimpl
    def on_session_resume(self, ssn: Session, delta: SnapshotDelta) -> None:
        Probe.calls.append("resume")

    @hookimpl
    def on_allocate(self, ssn: Session, event: Event) -> None:
        if Probe.fail:
            raise RuntimeError("probe fails")


class Plain:
    """A plugin that knows nothing of resuming."""

    name = "plain"
    calls: ClassVar[list[str]] = []

    def __init__(self, arguments: Any) -> None:
        self.arguments = arguments

    @hookimpl
    def on_session_open(self, ssn: Session) -> None:
        Plain.calls.append("open")


PROBE_CONF = """
actions: "enqueue, allocate"
tiers:
- plugins:
  - name: gang
  - name: probe
  - name: plain
"""


def _probe_cycle(cache: InMemoryCache, scheduler: Scheduler, cycle: int) -> Any:
    cache.start_bound_tasks()
    cache.add_pod_group(build_pod_group(f"g{cycle}", min_member=1))
    cache.add_task(build_task(f"g{cycle}-0", job=f"g{cycle}", cpu="100m"))
    return scheduler.run_once()


def test_only_plugins_that_resume_resume_and_a_failure_opens_the_plugin_afresh() -> None:
    Probe.calls.clear()
    Plain.calls.clear()
    Probe.fail = False
    cache = InMemoryCache()
    for i in range(6):  # a cycle changes at most two of them: the snapshot can be followed
        cache.add_node(build_node(f"n{i}", cpu="8"))
    scheduler = Scheduler(cache, PROBE_CONF, registry=Registry(plugins={"probe": Probe, "plain": Plain}))
    for cycle in range(3):
        _probe_cycle(cache, scheduler, cycle)
    Probe.fail = True
    assert _probe_cycle(cache, scheduler, 3).plugin_errors
    Probe.fail = False
    for cycle in range(4, 6):
        _probe_cycle(cache, scheduler, cycle)
    assert Probe.calls == ["open", "resume", "resume", "resume", "open", "resume"]
    assert Plain.calls == ["open"] * 6


def test_a_session_that_did_not_prepare_lets_no_plugin_resume() -> None:
    Probe.calls.clear()
    Probe.fail = False
    cache = InMemoryCache()
    for i in range(6):  # a cycle changes at most two of them: the snapshot can be followed
        cache.add_node(build_node(f"n{i}", cpu="8"))
    scheduler = Scheduler(cache, PROBE_CONF, registry=Registry(plugins={"probe": Probe, "plain": Plain}))
    _probe_cycle(cache, scheduler, 0)
    ssn = scheduler.new_session()
    ssn.load(cache.snapshot())
    ssn.close()  # closed without preparing: what plugins kept is not this snapshot's
    _probe_cycle(cache, scheduler, 1)
    _probe_cycle(cache, scheduler, 2)
    assert Probe.calls == ["open", "open", "resume"]


def test_a_delta_is_followed_only_from_the_last_closed_session_and_unless_most_nodes_and_jobs_changed() -> None:
    carry = Carry()
    changes = SnapshotChanges(closed=True)
    nodes = [build_node(f"n{i}") for i in range(4)]
    jobs = {f"ns/j{i}": JobInfo(f"ns/j{i}", build_pod_group(f"j{i}", namespace="ns")) for i in range(4)}
    cluster = ClusterInfo(jobs=jobs, nodes={n.name: n for n in nodes}, node_list=nodes)
    cluster.delta = SnapshotDelta(changes, frozenset({"n0", "n1"}), frozenset(jobs), frozenset(), True)
    assert carry.delta(cluster) is None  # no session closed yet
    carry.hand_over(changes, frozenset(), None)
    assert carry.delta(cluster) is cluster.delta  # half the nodes
    most_nodes = frozenset({"n0", "n1", "n2"})
    cluster.delta = SnapshotDelta(changes, most_nodes, frozenset({"ns/j0", "ns/j1"}), frozenset(), True)
    assert carry.delta(cluster) is cluster.delta  # most nodes but half the jobs
    cluster.delta = SnapshotDelta(changes, most_nodes, frozenset({"ns/j0", "ns/j1", "ns/j2"}), frozenset(), True)
    assert carry.delta(cluster) is None  # most nodes and most jobs changed: cheaper afresh
    cluster.delta = SnapshotDelta(SnapshotChanges(closed=True), frozenset(), frozenset(), frozenset(), True)
    assert carry.delta(cluster) is None  # follows another snapshot
    carry.opened()
    cluster.delta = SnapshotDelta(changes, frozenset(), frozenset(), frozenset(), True)
    assert carry.delta(cluster) is None  # a session opened since


@pytest.mark.parametrize("seed", range(4))
def test_resumed_pods_read_by_task_equal_resumed_pods_read_by_node(seed: int) -> None:
    """``resumed_pods`` with the delta's changed tasks gives what reading every changed node in full gives."""
    from volcanolib_contrib._nodepods import pods_where, resumed_pods

    kept: dict[str, dict[str, Any]] = {}
    compared = [0]

    def closed(ssn: Session, previous: Session | None) -> None:
        # What each plugin's index holds as the session closes, and its test.
        for name, attr, test in (
            ("nodeorder", "_affinity_pods", "_has_affinity"),
            ("predicates", "_anti_pods", "_has_required_anti"),
        ):
            plugin = ssn.plugins[name]
            kept[name] = {"pods": dict(getattr(plugin, attr)), "test": getattr(plugin, test)}

    def opened(scheduler: Scheduler, ssn: Session) -> None:
        delta = ssn.delta
        if delta is None or not kept:
            return
        assert delta.tasks is not None and delta.node_specs is not None
        plain = attrs.evolve(delta, tasks=None, node_specs=None)
        for name, state in kept.items():
            by_task = resumed_pods(state["pods"], ssn.nodes, delta, state["test"])
            by_node = resumed_pods(state["pods"], ssn.nodes, plain, state["test"])
            fresh = pods_where(ssn.node_list, state["test"])
            assert by_task.keys() == by_node.keys() == fresh.keys(), f"seed {seed}: {name}"
            assert all(by_task[key] is fresh[key] and by_node[key] is fresh[key] for key in fresh)
            compared[0] += bool(fresh)

    run(seed, 40, closed, opened, apply_varied)
    assert compared[0] > 5  # some sessions had pods with (anti-)affinity to compare


def test_a_node_ready_again_brings_its_pods_back_into_resumed_indexes() -> None:
    """Pods on a node that leaves the snapshot and comes back are read again, though the cache did not change them."""
    cache = InMemoryCache()
    for i in range(8):  # a cycle changes at most two of them: every session can resume
        cache.add_node(build_node(f"n{i}", cpu="8"))
    cache.add_pod_group(build_pod_group("apart", min_member=1))
    task = build_task("apart-0", job="apart", cpu="100m", node="n1", labels={"app": "apart"})
    assert task.pod is not None
    task.pod = attrs.evolve(task.pod, affinity=_SPREAD)
    cache.add_task(task)
    scheduler = Scheduler(cache, CONF)
    resumed = []

    def opened(ssn: Session) -> None:
        resumed.append(ssn.delta is not None)
        for name in ("nodeorder", "predicates"):
            plugin: Any = scheduler.host.plugins[name]
            fresh: Any = type(plugin)(plugin.arguments)
            fresh.on_session_open(ssn)
            assert plugin.kept_state() == fresh.kept_state(), f"{name} resumed differs from a fresh open"

    scheduler.run_once(before_actions=opened)
    scheduler.run_once(before_actions=opened)
    for ready in (False, True):
        node = build_node("n1", cpu="8")
        node.ready = ready
        cache.add_node(node)
        scheduler.run_once(before_actions=opened)
    assert resumed == [False, True, True, True]
    assert "default/apart-0" in scheduler.host.plugins["predicates"].kept_state()[2]


def test_a_kept_grouping_follows_image_counts_when_a_node_gets_an_image_in_place() -> None:
    cache = InMemoryCache()
    image = {"img:latest": 300 * 1024 * 1024}

    def node(i: int, *, with_image: bool) -> Any:
        made = build_node(f"n{i}", cpu="4", memory="8Gi")
        if with_image:
            made.node = attrs.evolve(made.node, images=image)
        return made

    for i in range(6):
        cache.add_node(node(i, with_image=i < 2))
    cache.add_pod_group(build_pod_group("big", min_member=1))
    task = build_task("big-0", job="big", cpu="100")  # fits no node: every session groups nodes for it
    assert task.pod is not None
    task.pod = attrs.evolve(task.pod, images=("img",))
    cache.add_task(task)
    scheduler = Scheduler(cache, CONF)
    scheduler.run_once()
    # n5 gets the image (same name, same place): the image scores of n0 and n1 change too.
    cache.add_node(node(5, with_image=True))
    ssn = scheduler.run_once().session
    assert ssn is not None and ssn.delta is not None and ssn.delta.same_nodes
    kept = ssn.placement.node_classes()
    assert kept is not None
    plans = _plans(ssn)
    assert plans
    for plan in plans:
        fresh = NodeClasses(NodeChanges(ssn.node_list, []))
        assert kept.classes(plan) == fresh.classes(plan)


@pytest.mark.parametrize("seed", range(4))
def test_remembered_refusals_explain_as_a_fresh_check_of_every_class(seed: int) -> None:
    """Why no node takes a task, from class answers kept across tasks and sessions, equals checking every class."""
    from volcanolib.api.fiterrors import FitErrors
    from volcanolib.api.task import TaskStatus

    compared = [0]
    given: list[tuple[FitErrors, str]] = []

    def compare(scheduler: Scheduler, ssn: Session) -> None:
        placement = ssn.placement
        for job in list(ssn.jobs.values()):
            for task in list(job.tasks_in(TaskStatus.PENDING)):
                plan = ssn.node_class_plan(task)
                if plan is None or not plan.pointwise:
                    continue
                fresh = placement._choose_by_class(task, plan, explain=True)
                if not isinstance(fresh, FitErrors):
                    continue
                kept = placement._choose_remembered(task, plan, explain=True)
                assert isinstance(kept, FitErrors), f"seed {seed}: {task.key} fits by kept answers only"
                assert kept.error() == fresh.error()
                given.append((kept, kept.error()))
                assert {n: e.reasons for n, e in kept.nodes.items()} == {n: e.reasons for n, e in fresh.nodes.items()}
                compared[0] += 1

    def feed(cache: InMemoryCache, event: tuple[Any, ...]) -> None:
        apply(cache, event)
        kind = event[0]
        if kind == "node":  # zones, so that a selector fails some nodes
            _, name, ((cpu, gi), pods), ready = event
            node = build_node(name, cpu=f"{cpu}m", memory=f"{gi}Gi", pods=pods, labels={"zone": "ab"[_hash(name) % 2]})
            node.ready = ready
            if not ready:
                node.not_ready_reason = "NotReady"
            cache.add_node(node)
        elif kind == "gang" and _hash(event[1]) % 3 == 0:
            # One more member that no node takes: too much memory, and for some gangs zone a only.
            selector = {"zone": "a"} if _hash(event[1]) % 2 else None
            name = event[1]
            cache.add_task(build_task(f"{name}-99", job=name, cpu="100m", memory="512Gi", node_selector=selector))

    run(seed, 30, lambda ssn, previous: None, opened=compare, feed=feed)
    assert compared[0] > 20
    # What was given out does not change as the classes change afterwards.
    assert all(errors.error() == message for errors, message in given)


def test_a_template_whose_pod_changed_is_parsed_again() -> None:
    """predicates keeps a template's parsed constraints only while its task keeps the same pod."""
    cache = InMemoryCache()
    for zone in "ab":
        cache.add_node(build_node(zone, cpu="4", memory="8Gi", labels={"zone": zone}))
    cache.add_pod_group(build_pod_group("j", min_member=1))
    cache.add_task(build_task("j-0", job="j", role="worker", cpu="100m", node_selector={"zone": "c"}))
    scheduler = Scheduler(cache, CONF)
    assert not scheduler.run_once().binds  # zone c: no node
    # The pod is made again under its name and role (the same template), asking for zone b.
    old = cache.get_task("default-j-0")
    assert old is not None
    cache.delete_task(old.uid)
    cache.add_task(build_task("j-0", job="j", role="worker", cpu="100m", node_selector={"zone": "b"}, uid="again"))
    binds = scheduler.run_once().binds
    assert [(task.name, node) for task, node in binds] == [("j-0", "b")]
