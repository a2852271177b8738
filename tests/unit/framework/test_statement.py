"""Statement: operations apply at once; discard restores node, job and plugin state exactly."""

from __future__ import annotations

from typing import Any, ClassVar

import pytest
from hypothesis import strategies as st
from hypothesis.stateful import RuleBasedStateMachine, invariant, precondition, rule

from volcanolib import Registry, TaskStatus, hookimpl
from volcanolib.api.resource import Resource
from volcanolib.api.task import ALLOCATED_STATUSES
from volcanolib.errors import CacheError, PluginError
from volcanolib.framework.session import Session
from volcanolib.framework.statement import Operation, Savepoint, Statement
from volcanolib.testing import FakeCache, build_node, build_pod_group, build_task, open_session


class Ledger:
    """Keeps per-job usage from allocate/deallocate events, like drf or proportion do."""

    name: ClassVar[str] = "ledger"

    def __init__(self, arguments: Any) -> None:
        self.usage: dict[str, Resource] = {}

    @hookimpl
    def on_session_open(self, ssn: Session) -> None:
        self.usage = {uid: Resource() for uid in ssn.jobs}

    @hookimpl
    def on_allocate(self, event: Any) -> None:
        self.usage[event.task.job].add(event.task.resreq)

    @hookimpl
    def on_deallocate(self, event: Any) -> None:
        self.usage[event.task.job].sub_unchecked(event.task.resreq)

    @hookimpl
    def job_ready(self, job: Any) -> bool:
        return bool(job.ready_task_num() >= job.min_available)


CONF = "actions: ''\ntiers:\n- plugins:\n  - name: ledger\n"


class Evictor:
    """Accepts evictions unless told to refuse them."""

    def __init__(self) -> None:
        self.refuse = False

    def evict(self, task: Any, reason: str) -> None:
        if self.refuse:
            raise RuntimeError("eviction refused")


def make_session(evictor: Evictor | None = None) -> tuple[Session, Ledger]:
    cache = FakeCache(evictor=evictor or Evictor())
    for i in range(3):
        cache.add_node(build_node(f"n{i}", cpu="4", memory="8Gi", pods=6))
    for j in range(2):
        cache.add_pod_group(build_pod_group(f"pend{j}", min_member=2))
        for t in range(4):
            cache.add_task(build_task(f"pend{j}-t-{t}", job=f"pend{j}", cpu=str(1 + t % 2), memory="1Gi"))
    cache.add_pod_group(build_pod_group("run"))
    for t in range(3):
        cache.add_task(build_task(f"run-t-{t}", job="run", node=f"n{t}", cpu="2", memory="2Gi"))
    # Tasks bound but not yet running: an undone eviction must give them back exactly.
    for t in range(3, 5):
        cache.add_task(
            build_task(f"run-t-{t}", job="run", node=f"n{t - 3}", cpu="1", memory="1Gi", status=TaskStatus.BOUND)
        )
    ssn = open_session(cache, CONF, registry=Registry(plugins={"ledger": Ledger}))
    return ssn, ssn.plugins["ledger"]


def canon(res: Resource) -> Any:
    return (res.milli_cpu, res.memory, tuple(sorted((k, v) for k, v in res.scalars.items() if v)))


def capture(ssn: Session, ledger: Ledger) -> Any:
    nodes = tuple(
        (n.name, canon(n.idle), canon(n.used), canon(n.releasing), canon(n.pipelined), tuple(sorted(n.tasks)))
        for n in ssn.node_list
    )
    tasks = tuple(sorted((t.key, t.status, t.node_name) for job in ssn.jobs.values() for t in job.tasks.values()))
    jobs = tuple(
        sorted((uid, canon(j.allocated), j.ready_task_num(), j.waiting_task_num()) for uid, j in ssn.jobs.items())
    )
    usage = tuple(sorted((uid, canon(r)) for uid, r in ledger.usage.items()))
    return nodes, tasks, jobs, usage


def _with_status(state: Any, changed: dict[str, TaskStatus]) -> Any:
    """``state`` (a :func:`capture`) with the given tasks' statuses replaced."""
    nodes, tasks, jobs, usage = state
    tasks = tuple((key, changed.get(key, status), node) for key, status, node in tasks)
    return nodes, tasks, jobs, usage


_HELD = ALLOCATED_STATUSES | TaskStatus.PIPELINED


def _held(ssn: Session) -> dict[str, Resource]:
    """Per job, what its tasks hold on nodes (allocated or pipelined), as the plugins' events count it."""
    out: dict[str, Resource] = {}
    for uid, job in ssn.jobs.items():
        total = Resource()
        for task in job.tasks.values():
            if task.status & _HELD:
                total.add(task.resreq)
        out[uid] = total
    return out


class StatementMachine(RuleBasedStateMachine):
    """Random statement operations on a small session, with the conservation invariants after each step.

    ``stmt`` is the statement under test; ``side`` another one of the same
    session that gets merged into it. ``baseline`` is the state when both were
    last empty; savepoints keep the state they were taken in.
    """

    def __init__(self) -> None:
        super().__init__()
        self.evictor = Evictor()
        self.ssn, self.ledger = make_session(self.evictor)
        self.stmt = self.ssn.statement()
        self.side = self.ssn.statement()
        self.baseline = capture(self.ssn, self.ledger)
        self.savepoints: list[tuple[Savepoint, Any]] = []
        self.held_at_open = _held(self.ssn)

    def _tasks(self, status: TaskStatus) -> list[Any]:
        return sorted(
            (t for j in self.ssn.jobs.values() for t in j.tasks.values() if t.status & status), key=lambda t: t.key
        )

    def _target(self, side: bool) -> Statement:
        # Statements nest: while ``side`` holds operations, it is the one that changes (an
        # action's node statement); ``stmt`` takes operations again once ``side`` merged.
        return self.side if side or self.side else self.stmt

    def _settled(self) -> bool:
        return not self.stmt and not self.side

    def _baseline_status(self, key: str) -> TaskStatus:
        return next(status for k, status, _ in self.baseline[1] if k == key)

    # ------------------------------------------------------------------ statement operations

    @precondition(lambda self: bool(self._tasks(TaskStatus.PENDING)))
    @rule(ti=st.integers(0, 100), ni=st.integers(0, 2), side=st.booleans())
    def allocate(self, ti: int, ni: int, side: bool) -> None:
        pending = self._tasks(TaskStatus.PENDING)
        task = pending[ti % len(pending)]
        node = self.ssn.node_list[ni]
        if task.resreq.less_equal(node.idle):
            self._target(side).allocate(task, node)
            assert task.status is TaskStatus.ALLOCATED and task.node_name == node.name

    @precondition(lambda self: bool(self._tasks(TaskStatus.PENDING)))
    @rule(ti=st.integers(0, 100), ni=st.integers(0, 2), side=st.booleans())
    def pipeline(self, ti: int, ni: int, side: bool) -> None:
        pending = self._tasks(TaskStatus.PENDING)
        task = pending[ti % len(pending)]
        node = self.ssn.node_list[ni]
        if task.resreq.less_equal(node.future_idle()):
            self._target(side).pipeline(task, node.name)
            assert task.status is TaskStatus.PIPELINED

    @precondition(lambda self: bool(self._tasks(TaskStatus.PIPELINED)))
    @rule(ti=st.integers(0, 100), side=st.booleans())
    def unpipeline(self, ti: int, side: bool) -> None:
        pipelined = self._tasks(TaskStatus.PIPELINED)
        task = pipelined[ti % len(pipelined)]
        self._target(side).unpipeline(task)
        assert task.status is TaskStatus.PENDING and task.node_name == ""

    @precondition(lambda self: bool(self._tasks(TaskStatus.RUNNING | TaskStatus.BOUND)))
    @rule(ti=st.integers(0, 100), side=st.booleans())
    def evict(self, ti: int, side: bool) -> None:
        running = self._tasks(TaskStatus.RUNNING | TaskStatus.BOUND)
        task = running[ti % len(running)]
        self._target(side).evict(task, "test")
        assert task.status is TaskStatus.RELEASING

    @rule()
    def merge(self) -> None:
        ops = self.stmt.operations + self.side.operations
        self.stmt.merge(self.side)
        assert self.stmt.operations == ops and not self.side

    # ------------------------------------------------------------------ savepoints

    @precondition(lambda self: not self.side)
    @rule()
    def savepoint(self) -> None:
        self.savepoints.append((self.stmt.savepoint(), capture(self.ssn, self.ledger)))

    @precondition(lambda self: not self.side and bool(self.savepoints))
    @rule(i=st.integers(0, 100))
    def rollback(self, i: int) -> None:
        i %= len(self.savepoints)
        point, state = self.savepoints[i]
        self.stmt.rollback(point)
        assert capture(self.ssn, self.ledger) == state
        del self.savepoints[i + 1 :]  # later savepoints are gone; this one stays valid

    # ------------------------------------------------------------------ outcome

    @precondition(lambda self: not self.side)
    @rule()
    def discard(self) -> None:
        # As in Volcano, an undone eviction leaves the task Running, even one that was Bound.
        evicted = {r.task.key for r in self.stmt.operations if r.operation is Operation.EVICT}
        bound = {k: TaskStatus.RUNNING for k in evicted if self._baseline_status(k) is TaskStatus.BOUND}
        self.stmt.discard()
        assert capture(self.ssn, self.ledger) == _with_status(self.baseline, bound)
        self._settle()

    @precondition(lambda self: not self.side)
    @rule(refuse=st.booleans())
    def commit(self, refuse: bool) -> None:
        ops = self.stmt.operations
        evicted = [r.task for r in ops if r.operation is Operation.EVICT]
        self.evictor.refuse = refuse
        refused = self.stmt.commit()
        self.evictor.refuse = False
        assert [t for t, _ in refused] == (evicted if refuse else [])
        assert all(t.status is TaskStatus.BINDING for r in ops if r.operation is Operation.ALLOCATE for t in [r.task])
        for task in evicted:
            # A refused eviction gives the task back its status before (Bound stays Bound).
            assert task.status is (self._baseline_status(task.key) if refuse else TaskStatus.RELEASING)
        self._settle()

    def _settle(self) -> None:
        self.stmt = self.ssn.statement()
        self.savepoints = []
        self.baseline = capture(self.ssn, self.ledger)

    # ------------------------------------------------------------------ operations outside statements

    @precondition(lambda self: self._settled() and bool(self._tasks(TaskStatus.PENDING)))
    @rule(ti=st.integers(0, 100), ni=st.integers(0, 2))
    def session_allocate(self, ti: int, ni: int) -> None:
        pending = self._tasks(TaskStatus.PENDING)
        task = pending[ti % len(pending)]
        node = self.ssn.node_list[ni]
        if task.resreq.less_equal(node.idle):
            self.ssn.allocate(task, node)
            job = self.ssn.jobs[task.job]
            if job.ready_task_num() >= job.min_available:
                # The job is ready: its allocated tasks, this one included, are bound together.
                assert task.status is TaskStatus.BINDING and not list(job.tasks_in(TaskStatus.ALLOCATED))
            else:
                assert task.status is TaskStatus.ALLOCATED
        self._settle()

    @precondition(lambda self: self._settled() and bool(self._tasks(TaskStatus.PIPELINED)))
    @rule(ti=st.integers(0, 100))
    def session_unpipeline(self, ti: int) -> None:
        pipelined = self._tasks(TaskStatus.PIPELINED)
        task = pipelined[ti % len(pipelined)]
        self.ssn.unpipeline(task)
        assert task.status is TaskStatus.PENDING and task.node_name == ""
        self._settle()

    @precondition(lambda self: self._settled() and bool(self._tasks(TaskStatus.RUNNING | TaskStatus.BOUND)))
    @rule(ti=st.integers(0, 100), refuse=st.booleans())
    def session_evict(self, ti: int, refuse: bool) -> None:
        running = self._tasks(TaskStatus.RUNNING | TaskStatus.BOUND)
        task = running[ti % len(running)]
        before = capture(self.ssn, self.ledger)
        evictions = len(self.ssn.evictions)
        self.evictor.refuse = refuse
        try:
            if refuse:
                with pytest.raises(CacheError):
                    self.ssn.evict(task, "test")
                assert capture(self.ssn, self.ledger) == before and len(self.ssn.evictions) == evictions
            else:
                self.ssn.evict(task, "test")
                assert task.status is TaskStatus.RELEASING and self.ssn.evictions[-1] == (task, "test")
        finally:
            self.evictor.refuse = False
        self._settle()

    # ------------------------------------------------------------------ invariants

    @invariant()
    def accounting_is_exact(self) -> None:
        for node in self.ssn.node_list:
            assert node.idle.clone().add(node.used) == node.allocatable
            held = Resource()
            releasing = Resource()
            pipelined = Resource()
            for task in node.tasks.values():
                if task.status is TaskStatus.PIPELINED:
                    pipelined.add(task.resreq)
                else:
                    held.add(task.resreq)
                    if task.status is TaskStatus.RELEASING:
                        releasing.add(task.resreq)
            assert node.used == held and node.releasing == releasing and node.pipelined == pipelined
            assert all(t.node_name == node.name for t in node.tasks.values())
        for job in self.ssn.jobs.values():
            total = Resource()
            for task in job.tasks.values():
                if task.status & ALLOCATED_STATUSES:
                    total.add(task.resreq)
                if task.status & (_HELD | TaskStatus.RELEASING):
                    assert task.key in self.ssn.nodes[task.node_name].tasks
                else:
                    assert task.node_name == ""
            assert job.allocated == total

    @invariant()
    def plugins_saw_every_change(self) -> None:
        # The ledger counts allocate/deallocate events from zero at session open.
        now = _held(self.ssn)
        for uid, usage in self.ledger.usage.items():
            assert canon(usage) == canon(now[uid].clone().sub_unchecked(self.held_at_open[uid]))

    @invariant()
    def every_task_is_in_exactly_one_state(self) -> None:
        for job in self.ssn.jobs.values():
            indexed = [uid for bucket in job.task_status_index.values() for uid in bucket]
            assert sorted(indexed) == sorted(job.tasks)
            for status, bucket in job.task_status_index.items():
                assert all(t.status is status for t in bucket.values())


TestStatementMachine = StatementMachine.TestCase


def test_discard_restores_last_transaction_for_explanations() -> None:
    ssn, _ = make_session()
    stmt = ssn.statement()
    task = ssn.jobs["default/pend0"].tasks["default-pend0-t-0"]
    stmt.allocate(task, ssn.nodes["n1"])
    stmt.discard()
    assert task.status is TaskStatus.PENDING and task.node_name == ""
    assert task.last_transaction == ("n1", TaskStatus.ALLOCATED)


def test_commit_binds_and_evicts_in_the_cache() -> None:
    ssn, _ = make_session()
    stmt = ssn.statement()
    victim = ssn.jobs["default/run"].tasks["default-run-t-0"]
    task = ssn.jobs["default/pend0"].tasks["default-pend0-t-0"]
    stmt.evict(victim, "preempt")
    stmt.allocate(task, ssn.nodes["n1"])
    stmt.commit()
    cache = ssn.cache
    assert isinstance(cache, FakeCache)
    assert cache.bound == {"default/pend0-t-0": "n1"} and cache.evicted == ["default/run-t-0"]
    assert [t.key for t, _ in ssn.evictions] == ["default/run-t-0"]
    assert cache.get_task("default-run-t-0").status is TaskStatus.RELEASING  # type: ignore[union-attr]


def _task(ssn: Session, name: str) -> Any:
    job = name.rsplit("-t-", 1)[0]
    return ssn.jobs[f"default/{job}"].tasks[f"default-{name}"]


def test_rollback_gives_an_evicted_bound_task_back_as_bound_and_discard_as_running() -> None:
    ssn, ledger = make_session()
    bound = _task(ssn, "run-t-3")
    before = capture(ssn, ledger)
    stmt = ssn.statement()
    start = stmt.savepoint()
    stmt.evict(bound, "test")
    stmt.rollback(start)
    assert bound.status is TaskStatus.BOUND and capture(ssn, ledger) == before
    assert bound.last_transaction is None  # a rollback is a dry run: no undone decision to explain
    stmt.evict(bound, "test")
    stmt.discard()
    assert bound.status is TaskStatus.RUNNING  # Volcano's unevict
    assert bound.last_transaction == ("n0", TaskStatus.RELEASING)
    assert capture(ssn, ledger) == _with_status(before, {bound.key: TaskStatus.RUNNING})


def test_rollback_undoes_only_what_came_after_the_savepoint() -> None:
    ssn, ledger = make_session()
    stmt = ssn.statement()
    first = _task(ssn, "pend0-t-0")
    stmt.allocate(first, ssn.nodes["n1"])
    middle = stmt.savepoint()
    state = capture(ssn, ledger)
    stmt.evict(_task(ssn, "run-t-1"), "test")
    inner = stmt.savepoint()
    stmt.pipeline(_task(ssn, "pend1-t-0"), "n1")
    stmt.rollback(inner)
    stmt.rollback(middle)
    assert capture(ssn, ledger) == state
    assert [(r.operation, r.task.key) for r in stmt.operations] == [(Operation.ALLOCATE, first.key)]
    stmt.rollback(middle)  # a savepoint stays valid after rolling back to it
    with pytest.raises(ValueError):
        stmt.rollback(inner)  # rolled back past it
    stmt.evict(_task(ssn, "run-t-2"), "test")
    with pytest.raises(ValueError):
        stmt.rollback(inner)  # still gone, even with as many operations again


def _discard_after_an_allocation(to_savepoint: bool) -> tuple[Any, list[Any], list[Any]]:
    """Allocate, then evict two tasks and pipeline one; discard those three, by savepoint or as a side statement."""
    ssn, ledger = make_session()
    stmt = ssn.statement()
    stmt.allocate(_task(ssn, "pend0-t-0"), ssn.nodes["n1"])
    later = stmt.savepoint() if to_savepoint else None
    target = stmt if to_savepoint else ssn.statement()
    for name in ("run-t-1", "run-t-4"):
        target.evict(_task(ssn, name), "test")
    target.pipeline(_task(ssn, "pend1-t-0"), "n1")
    target.discard(later)
    touched = [_task(ssn, name) for name in ("run-t-1", "run-t-4", "pend1-t-0")]
    return (
        capture(ssn, ledger),
        [(r.operation, r.task.key) for r in stmt.operations],
        [(t.key, t.last_transaction) for t in touched],
    )


def test_discarding_to_a_savepoint_is_discarding_a_statement_of_its_own() -> None:
    # make_room evicts into the job's statement and discards back to a savepoint when the task
    # does not fit: the same as evicting into a node statement of its own and discarding that.
    by_savepoint = _discard_after_an_allocation(True)
    assert by_savepoint == _discard_after_an_allocation(False)
    state, operations, undone = by_savepoint
    assert operations == [(Operation.ALLOCATE, "default/pend0-t-0")]
    assert undone[1] == ("default/run-t-4", ("n1", TaskStatus.RELEASING))  # Bound, back as Running (a discard)
    assert ("default/run-t-4", TaskStatus.RUNNING, "n1") in state[1]


def test_discarding_to_a_savepoint_of_another_statement_is_refused() -> None:
    ssn, _ = make_session()
    other = ssn.statement().savepoint()
    with pytest.raises(ValueError):
        ssn.statement().discard(other)


@pytest.mark.parametrize("end", ["commit", "discard", "merged"])
def test_a_savepoint_ends_with_its_statement(end: str) -> None:
    ssn, _ = make_session()
    stmt = ssn.statement()
    point = stmt.savepoint()
    stmt.allocate(_task(ssn, "pend0-t-0"), ssn.nodes["n1"])
    if end == "merged":
        ssn.statement().merge(stmt)
    else:
        getattr(stmt, end)()
    with pytest.raises(ValueError):
        stmt.rollback(point)
    with pytest.raises(ValueError):
        ssn.statement().rollback(point)


def test_merge_moves_the_operations_and_keeps_their_effects() -> None:
    ssn, ledger = make_session()
    outer = ssn.statement()
    outer.allocate(_task(ssn, "pend0-t-0"), ssn.nodes["n1"])
    inner = ssn.statement()
    inner.evict(_task(ssn, "run-t-2"), "preempt")
    inner.pipeline(_task(ssn, "pend1-t-1"), "n2")
    state = capture(ssn, ledger)
    outer.merge(inner)
    assert capture(ssn, ledger) == state and len(inner) == 0
    assert [r.operation for r in outer.operations] == [Operation.ALLOCATE, Operation.EVICT, Operation.PIPELINE]
    assert outer.operations[1].reason == "preempt" and outer.has_evictions() and not inner.has_evictions()
    with pytest.raises(ValueError):
        outer.merge(outer)
    with pytest.raises(ValueError):
        outer.merge(make_session()[0].statement())


def test_the_operations_view_changes_nothing() -> None:
    ssn, _ = make_session()
    stmt = ssn.statement()
    stmt.allocate(_task(ssn, "pend0-t-0"), ssn.nodes["n1"])
    view = stmt.operations
    assert isinstance(view, tuple)
    assert not hasattr(stmt, "__dict__")  # no way to attach another log
    stmt.discard()
    assert len(view) == 1 and len(stmt) == 0


def test_unpipeline_is_undone_by_pipelining_again() -> None:
    ssn, ledger = make_session()
    task = _task(ssn, "pend0-t-1")
    ssn.pipeline(task, "n2")
    state = capture(ssn, ledger)
    stmt = ssn.statement()
    stmt.unpipeline(task)
    assert task.status is TaskStatus.PENDING and task.key not in ssn.nodes["n2"].tasks
    stmt.discard()
    assert capture(ssn, ledger) == state and task.node_name == "n2"


def test_a_refused_eviction_at_commit_is_undone_and_reported() -> None:
    evictor = Evictor()
    ssn, ledger = make_session(evictor)
    bound, running = _task(ssn, "run-t-3"), _task(ssn, "run-t-0")
    before = capture(ssn, ledger)
    stmt = ssn.statement()
    stmt.evict(bound, "test")
    stmt.evict(running, "test")
    evictor.refuse = True
    refused = stmt.commit()
    assert [(t.key, type(e)) for t, e in refused] == [(bound.key, CacheError), (running.key, CacheError)]
    assert capture(ssn, ledger) == before and not ssn.evictions


def test_session_evict_refused_raises_and_changes_nothing() -> None:
    evictor = Evictor()
    ssn, ledger = make_session(evictor)
    bound = _task(ssn, "run-t-3")
    before = capture(ssn, ledger)
    evictor.refuse = True
    with pytest.raises(CacheError):
        ssn.evict(bound, "test")
    assert capture(ssn, ledger) == before and bound.status is TaskStatus.BOUND and not ssn.evictions
    evictor.refuse = False
    ssn.evict(bound, "test")
    assert bound.status is TaskStatus.RELEASING and ssn.evictions == [(bound, "test")]


class Failing:
    """Fails on every allocate event."""

    name: ClassVar[str] = "failing"

    def __init__(self, arguments: Any) -> None:
        pass

    @hookimpl
    def on_allocate(self, event: Any) -> None:
        raise RuntimeError("boom")


def test_session_allocate_undoes_the_placement_when_a_plugin_fails() -> None:
    cache = FakeCache()
    cache.add_node(build_node("n0", cpu="4", memory="8Gi"))
    cache.add_pod_group(build_pod_group("job"))
    cache.add_task(build_task("job-0", job="job", cpu="1"))
    conf = "actions: ''\ntiers:\n- plugins:\n  - name: failing\n"
    ssn = open_session(cache, conf, registry=Registry(plugins={"failing": Failing}))
    task, node = ssn.jobs["default/job"].tasks["default-job-0"], ssn.nodes["n0"]
    with pytest.raises(PluginError):
        ssn.allocate(task, node)
    assert task.status is TaskStatus.PENDING and task.node_name == "" and not node.tasks
    assert node.idle == node.allocatable and not ssn.binds


def test_the_docstring_example_runs() -> None:
    import doctest

    from volcanolib.framework import statement

    result = doctest.testmod(statement)
    assert result.attempted and not result.failed


class FailingOnAllocate(Ledger):
    """A ledger that fails on allocate events (an undone eviction sends one) once told to."""

    fail = False

    @hookimpl
    def on_allocate(self, event: Any) -> None:
        super().on_allocate(event)
        if FailingOnAllocate.fail:
            raise RuntimeError("boom")


class RefusingOne:
    """Refuses the eviction of one task, accepts the others and records them."""

    def __init__(self, refused: str) -> None:
        self.refused = refused
        self.sent: list[str] = []

    def evict(self, task: Any, reason: str) -> None:
        if task.key == self.refused:
            raise RuntimeError("eviction refused")
        self.sent.append(task.key)


def test_a_plugin_failing_on_the_undo_of_a_refused_eviction_stops_no_other_eviction() -> None:
    evictor = RefusingOne("default/run-t-0")
    cache = FakeCache(evictor=evictor)
    for i in range(3):
        cache.add_node(build_node(f"n{i}", cpu="4", memory="8Gi", pods=6))
    cache.add_pod_group(build_pod_group("run"))
    for t in range(3):
        cache.add_task(build_task(f"run-t-{t}", job="run", node=f"n{t}", cpu="2", memory="2Gi"))
    cache.add_pod_group(build_pod_group("pend0"))
    cache.add_task(build_task("pend0-t-0", job="pend0", cpu="1", memory="1Gi"))
    ssn = open_session(cache, CONF, registry=Registry(plugins={"ledger": FailingOnAllocate}))
    ledger = ssn.plugins["ledger"]
    stmt = ssn.statement()
    for t in range(3):
        stmt.evict(_task(ssn, f"run-t-{t}"), "test")
    stmt.allocate(_task(ssn, "pend0-t-0"), ssn.nodes["n0"])
    FailingOnAllocate.fail = True
    try:
        with pytest.raises(PluginError, match="boom"):
            stmt.commit()
    finally:
        FailingOnAllocate.fail = False
    # The evictions after the refused one were sent; the refused one was undone, its event included.
    assert evictor.sent == ["default/run-t-1", "default/run-t-2"]
    assert [(t.key, reason) for t, reason in ssn.evictions] == [
        ("default/run-t-1", "test"),
        ("default/run-t-2", "test"),
    ]
    statuses = {key: status for key, status, _ in capture(ssn, ledger)[1]}
    assert statuses["default/run-t-0"] is TaskStatus.RUNNING
    assert statuses["default/run-t-1"] is statuses["default/run-t-2"] is TaskStatus.RELEASING
    # The ledger counts from zero: three evictions took 2 cpu each, the undo gave one back.
    assert ledger.usage["default/run"].milli_cpu == -4000
    # The failure is raised before the allocation is bound.
    assert not ssn.binds and len(stmt) == 0
