"""Statement: operations apply at once; discard restores node, job and plugin state exactly."""

from __future__ import annotations

from typing import Any, ClassVar

from hypothesis import strategies as st
from hypothesis.stateful import RuleBasedStateMachine, invariant, precondition, rule

from volcanolib import Registry, TaskStatus, hookimpl
from volcanolib.api.resource import Resource
from volcanolib.api.task import ALLOCATED_STATUSES
from volcanolib.framework.session import Session
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


CONF = "actions: ''\ntiers:\n- plugins:\n  - name: ledger\n"


def make_session() -> tuple[Session, Ledger]:
    cache = FakeCache()
    for i in range(3):
        cache.add_node(build_node(f"n{i}", cpu="4", memory="8Gi", pods=6))
    for j in range(2):
        cache.add_pod_group(build_pod_group(f"pend{j}", min_member=2))
        for t in range(4):
            cache.add_task(build_task(f"pend{j}-t-{t}", job=f"pend{j}", cpu=str(1 + t % 2), memory="1Gi"))
    cache.add_pod_group(build_pod_group("run"))
    for t in range(3):
        cache.add_task(build_task(f"run-t-{t}", job="run", node=f"n{t}", cpu="2", memory="2Gi"))
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


class StatementMachine(RuleBasedStateMachine):
    def __init__(self) -> None:
        super().__init__()
        self.ssn, self.ledger = make_session()
        self.stmt = self.ssn.statement()
        self.baseline = capture(self.ssn, self.ledger)

    def _tasks(self, status: TaskStatus) -> list[Any]:
        return sorted(
            (t for j in self.ssn.jobs.values() for t in j.tasks.values() if t.status is status), key=lambda t: t.key
        )

    @precondition(lambda self: bool(self._tasks(TaskStatus.PENDING)))
    @rule(ti=st.integers(0, 100), ni=st.integers(0, 2))
    def allocate(self, ti: int, ni: int) -> None:
        pending = self._tasks(TaskStatus.PENDING)
        task = pending[ti % len(pending)]
        node = self.ssn.node_list[ni]
        if task.resreq.less_equal(node.idle):
            self.stmt.allocate(task, node)
            assert task.status is TaskStatus.ALLOCATED and task.node_name == node.name

    @precondition(lambda self: bool(self._tasks(TaskStatus.PENDING)))
    @rule(ti=st.integers(0, 100), ni=st.integers(0, 2))
    def pipeline(self, ti: int, ni: int) -> None:
        pending = self._tasks(TaskStatus.PENDING)
        task = pending[ti % len(pending)]
        node = self.ssn.node_list[ni]
        if task.resreq.less_equal(node.future_idle()):
            self.stmt.pipeline(task, node.name)
            assert task.status is TaskStatus.PIPELINED

    @precondition(lambda self: bool(self._tasks(TaskStatus.RUNNING)))
    @rule(ti=st.integers(0, 100))
    def evict(self, ti: int) -> None:
        running = self._tasks(TaskStatus.RUNNING)
        task = running[ti % len(running)]
        self.stmt.evict(task, "test")
        assert task.status is TaskStatus.RELEASING

    @rule()
    def discard(self) -> None:
        self.stmt.discard()
        assert capture(self.ssn, self.ledger) == self.baseline
        self.stmt = self.ssn.statement()

    @rule()
    def commit(self) -> None:
        allocated = [t for op, t, _ in self.stmt.operations if op.value == "allocate"]
        self.stmt.commit()
        assert all(t.status is TaskStatus.BINDING for t in allocated)
        self.baseline = capture(self.ssn, self.ledger)
        self.stmt = self.ssn.statement()

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
        for job in self.ssn.jobs.values():
            total = Resource()
            for task in job.tasks.values():
                if task.status & ALLOCATED_STATUSES:
                    total.add(task.resreq)
            assert job.allocated == total

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
