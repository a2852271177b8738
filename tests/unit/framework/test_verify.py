"""Verify mode (``Scheduler(verify=True)``): each shortcut of an incremental cycle against computing afresh.

Random cycles of the shipped plugins pass it, and resume; a plugin breaking
each obligation it checks (a resume that misses a change, a settled job's
status changed behind the session's back, a durable node class key that
changes between sessions) is named in a :class:`VerifyError`.
"""

from __future__ import annotations

import sys
from collections.abc import Hashable, Mapping, Sequence
from pathlib import Path
from typing import Any, ClassVar

import pytest

from tests.unit.clusters import gang_cluster
from volcanolib import InMemoryCache, NodeInfo, Registry, Scheduler, Session, TaskInfo, Traits, hookimpl
from volcanolib.api.cluster import SnapshotDelta
from volcanolib.api.job import ConditionType, PodGroupCondition
from volcanolib.errors import VerifyError
from volcanolib.framework.nodeclass import NodeClassKey
from volcanolib.testing import build_node, build_pod_group, build_task, check_node_classes, check_resume

sys.path.insert(0, str(Path(__file__).resolve().parents[1] / "cache"))
from test_carry import run

_DECLARED = Traits(clock_free=True, status_through_session=True)


@pytest.mark.parametrize("seed", range(3))
def test_random_cycles_of_the_shipped_plugins_pass_verify_mode(seed: int) -> None:
    resumed = run(seed, 30, lambda ssn, previous: None, verify=True)
    assert resumed > 10


def test_a_cycle_says_which_plugins_resumed() -> None:
    cache = _cluster()
    scheduler = Scheduler(cache, "actions: 'enqueue, allocate'\ntiers:\n- plugins:\n  - name: gang\n  - name: drf\n")
    first = scheduler.run_once()
    cache.start_bound_tasks()
    scheduler.run_once()
    third = scheduler.run_once()
    assert first.resumed == ()
    assert third.resumed == ("drf",)


class CountingPlugin:
    """Counts the nodes; resumes by keeping the count (wrong when nodes come or go)."""

    name: ClassVar[str] = "counting"
    traits: ClassVar[Traits] = _DECLARED

    def __init__(self, arguments: object) -> None:
        self.nodes = 0

    @hookimpl
    def on_session_open(self, ssn: Session) -> None:
        self.nodes = len(ssn.node_list)

    @hookimpl
    def on_session_resume(self, ssn: Session, delta: SnapshotDelta) -> None:
        pass  # forgets the nodes that came or went

    def kept_state(self) -> object:
        return self.nodes


class SettledMarker:
    """Declares it writes status through the session, then assigns a settled job's conditions directly."""

    name: ClassVar[str] = "marker"
    traits: ClassVar[Traits] = _DECLARED

    def __init__(self, arguments: object) -> None:
        self.closes = 0

    @hookimpl
    def on_session_close(self, ssn: Session) -> None:
        self.closes += 1
        if self.closes == 5:
            for job in ssn.jobs.values():
                job.pod_group.conditions = [PodGroupCondition(ConditionType.SCHEDULED, message="behind its back")]


class FlakyClasses:
    """A durable node class key that changes from session to session: not durable at all."""

    name: ClassVar[str] = "flaky"
    traits: ClassVar[Traits] = _DECLARED

    def __init__(self, arguments: object) -> None:
        self.sessions = 0

    @hookimpl
    def on_session_open(self, ssn: Session) -> None:
        self.sessions += 1

    @hookimpl
    def batch_node_order(self, ssn: Session, task: TaskInfo, nodes: Sequence[NodeInfo]) -> Mapping[str, float]:
        return {}

    @hookimpl
    def node_class_key(self, ssn: Session, task: TaskInfo) -> NodeClassKey:
        sessions = self.sessions

        def key(node: NodeInfo) -> Hashable:
            return node.name == f"n{sessions % 3}"

        return NodeClassKey("flaky", key, pointwise=True, durable=True)


REGISTRY = Registry(plugins={"counting": CountingPlugin, "marker": SettledMarker, "flaky": FlakyClasses})
CONF = """
actions: "enqueue, allocate, backfill"
tiers:
- plugins:
  - name: priority
  - name: gang
- plugins:
  - name: binpack
  - name: {name}
"""


def _cluster() -> InMemoryCache:
    cache = gang_cluster(4, 3)
    return cache


def _cycles(name: str, cycles: int, change: Any = None) -> Scheduler:
    cache = _cluster()
    scheduler = Scheduler(cache, CONF.format(name=name), registry=REGISTRY, verify=True)
    for cycle in range(cycles):
        scheduler.run_once()
        cache.start_bound_tasks()
        if change is not None:
            change(cache, cycle)
    return scheduler


def test_a_resume_that_misses_a_change_is_named() -> None:
    def add_node(cache: InMemoryCache, cycle: int) -> None:
        if cycle == 3:
            cache.add_node(build_node("late", cpu="4", memory="8Gi"))

    with pytest.raises(VerifyError, match="plugin 'counting': resumed state differs") as caught:
        _cycles("counting", 6, add_node)
    assert caught.value.plugin == "counting"


def test_a_resume_that_keeps_up_passes() -> None:
    _cycles("counting", 6)  # no node comes or goes: what it keeps stays right


def test_a_settled_job_changed_behind_the_sessions_back_is_named() -> None:
    with pytest.raises(VerifyError, match="plugin 'marker': changed the status of the settled job default/j0"):
        _cycles("marker", 6)


def test_a_durable_node_class_key_that_changes_is_named() -> None:
    def arrive(cache: InMemoryCache, cycle: int) -> None:
        cache.add_pod_group(build_pod_group(f"late{cycle}", min_member=1))
        cache.add_task(build_task(f"late{cycle}-0", job=f"late{cycle}", cpu="1"))

    with pytest.raises(VerifyError, match="node classes kept up to date differ") as caught:
        _cycles("flaky", 8, arrive)
    assert caught.value.plugin is None or caught.value.plugin in ("flaky", "binpack")


# ---------------------------------------------------------------------------- the plugin author's checks


def test_check_resume_compares_the_plugins_that_resumed() -> None:
    cache = _cluster()
    scheduler = Scheduler(cache, CONF.format(name="counting"), registry=REGISTRY)
    compared: list[tuple[str, ...]] = []
    for cycle in range(5):
        if cycle == 3:
            cache.add_node(build_node("late", cpu="4", memory="8Gi"))
        try:
            scheduler.run_once(before_actions=lambda ssn: compared.append(check_resume(scheduler, ssn)))
        except VerifyError as err:
            assert err.plugin == "counting" and cycle == 3
            break
        cache.start_bound_tasks()
    else:
        pytest.fail("the missed node was not found")
    assert ("counting",) in compared  # it did resume, and matched, before the node came


POOL = "example.com/pool"


class PoolPlugin:
    """Keeps tasks labelled with a pool on that pool's nodes; its class key reads the label (or, broken, not)."""

    name: ClassVar[str] = "pool"
    traits: ClassVar[Traits] = _DECLARED
    reads_label: ClassVar[bool] = True

    def __init__(self, arguments: object) -> None:
        pass

    @hookimpl
    def batch_predicate(self, ssn: Session, task: TaskInfo, nodes: Sequence[NodeInfo]) -> Mapping[str, Any]:
        from volcanolib import Status

        wanted = task.pod.labels.get(POOL) if task.pod is not None else None
        if wanted is None:
            return {}
        return {n.name: Status.unresolvable("other pool") for n in nodes if n.node.labels.get(POOL) != wanted}

    @hookimpl
    def node_class_key(self, ssn: Session, task: TaskInfo) -> NodeClassKey:
        # Pointwise: the token says what the task contributes (the pool it wants), as equal tokens promise
        # equal answers for equal requests.
        wanted = task.pod.labels.get(POOL) if task.pod is not None else None
        if self.reads_label:
            return NodeClassKey(("pool", wanted), lambda node: node.node.labels.get(POOL), pointwise=True)
        return NodeClassKey(("pool-blind", wanted), lambda node: None, pointwise=True)


class BlindPoolPlugin(PoolPlugin):
    reads_label: ClassVar[bool] = False


def _pools(seed: int) -> Any:
    def build() -> InMemoryCache:
        import random

        rng = random.Random(seed)
        cache = InMemoryCache()
        for i in range(rng.randint(4, 10)):
            cache.add_node(build_node(f"n{i}", cpu="4", memory="8Gi", labels={POOL: rng.choice("ab")}))
        for j in range(rng.randint(2, 5)):
            cache.add_pod_group(build_pod_group(f"j{j}", min_member=1))
            labels = {POOL: rng.choice("ab")}
            for k in range(rng.randint(1, 3)):
                cache.add_task(build_task(f"j{j}-{k}", job=f"j{j}", cpu=rng.choice(["1", "2"]), labels=labels))
        return cache

    return build


def test_check_node_classes_passes_a_key_that_keeps_its_promises_and_fails_one_that_does_not() -> None:
    registry = Registry(plugins={"pool": PoolPlugin, "blind": BlindPoolPlugin})
    clusters = [_pools(seed) for seed in range(10)]
    assert check_node_classes(clusters, CONF.format(name="pool"), registry=registry) > 0
    with pytest.raises(AssertionError, match=r"node classes decide otherwise|fast path .allocate by"):
        check_node_classes(clusters, CONF.format(name="blind"), registry=registry)


# ---------------------------------------------------------------------------- a detached session


def test_a_detached_session_calls_no_hook_at_all() -> None:
    from volcanolib.framework import session as module

    cache = _cluster()
    scheduler = Scheduler(cache, CONF.format(name="flaky"), registry=REGISTRY)
    ssn = scheduler.run_once().session
    assert ssn is not None
    job = next(iter(ssn.jobs.values()))
    task = next(iter(job.tasks.values()))
    ssn.detach_plugins()
    blocked = [name for name in (*module._COMPILED, *module._BUILT) if callable(getattr(ssn, name))]
    assert len(blocked) >= 30
    for name in blocked:
        with pytest.raises(RuntimeError, match="detached from its plugins"):
            getattr(ssn, name)(task, task)
    with pytest.raises(RuntimeError, match="detached"):
        ssn.node_class_plan(task)
    with pytest.raises(RuntimeError, match="detached"):
        _ = ssn.placement
    assert not ssn.implemented("node_class_key")
    assert ssn.jobs[job.uid] is job  # the state stays readable
    assert ssn.release == ssn.detach_plugins  # the former name
