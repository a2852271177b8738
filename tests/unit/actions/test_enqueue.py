"""enqueue: queues take turns, admission votes, reservations, phases."""

from __future__ import annotations

from typing import ClassVar

from volcanolib import Registry, hookimpl
from volcanolib.api.job import JobInfo, PodGroupPhase
from volcanolib.api.queue import QueueInfo
from volcanolib.api.resource import Resource
from volcanolib.framework.config import Arguments
from volcanolib.framework.session import Session
from volcanolib.framework.status import Vote
from volcanolib.testing import FakeCache, build_pod_group, build_queue, build_task, run_session

ADMITTED: list[str] = []


class TBudget:
    """Each queue admits jobs while their ``minResources`` cpu fits its budget (``budget`` argument, cores).

    Queues with fewer admitted jobs go first.
    """

    def __init__(self, arguments: Arguments) -> None:
        self.budget: dict[str, float] = {}
        self.initial = {name: float(v) * 1000 for name, v in arguments.get("budget", {}).items()}

    @hookimpl
    def on_session_open(self, ssn: object) -> None:
        self.budget = dict(self.initial)

    @hookimpl
    def queue_order_key(self, ssn: Session, queue: QueueInfo) -> int:
        jobs = ssn.jobs.values()
        return sum(1 for j in jobs if j.queue == queue.name and j.pod_group.phase is PodGroupPhase.INQUEUE)

    @hookimpl
    def job_enqueueable(self, ssn: object, job: JobInfo) -> Vote:
        if job.queue not in self.budget:
            return Vote.ABSTAIN
        need = job.min_resources().milli_cpu
        return Vote.PERMIT if need <= self.budget[job.queue] else Vote.REJECT

    @hookimpl
    def job_enqueued(self, ssn: object, job: JobInfo) -> None:
        ADMITTED.append(job.name)
        if job.queue in self.budget:
            self.budget[job.queue] -= job.min_resources().milli_cpu


class TReject:
    """Rejects every job, and records that it was asked."""

    asked: ClassVar[list[str]] = []

    def __init__(self, arguments: Arguments) -> None:
        pass

    @hookimpl
    def job_enqueueable(self, ssn: object, job: JobInfo) -> Vote:
        TReject.asked.append(job.name)
        return Vote.REJECT


class TBoom:
    """Fails when asked about the job named by ``job``."""

    def __init__(self, arguments: Arguments) -> None:
        self.job = arguments.get("job")

    @hookimpl
    def job_enqueueable(self, ssn: object, job: JobInfo) -> Vote:
        if job.name == self.job:
            raise ValueError("no")
        return Vote.PERMIT


REGISTRY = Registry(plugins={"t-budget": TBudget, "t-reject": TReject, "t-boom": TBoom})


def conf(plugin: str) -> str:
    name, _, arguments = plugin.partition(" ")
    text = f'actions: "enqueue"\ntiers:\n- plugins:\n  - name: {name}\n'
    return text + (f"    arguments: {arguments}\n" if arguments else "")


def cpu(cores: int) -> Resource:
    return Resource(cores * 1000, 0)


def add(cache: FakeCache, name: str, queue: str, created: float, min_cpu: int | None = 1, **pg: object) -> None:
    resources = cpu(min_cpu) if min_cpu is not None else None
    cache.add_pod_group(
        build_pod_group(
            name,
            queue=queue,
            phase=pg.pop("phase", PodGroupPhase.PENDING),  # type: ignore[arg-type]
            min_resources=resources,
            creation_timestamp=created,
        )
    )
    cache.add_task(build_task(f"{name}-0", job=name))


def phases(result: object) -> dict[str, str]:
    ssn = result.session  # type: ignore[attr-defined]
    return {job.name: str(job.pod_group.phase) for job in ssn.jobs.values()}


def test_queues_take_turns_one_job_per_turn() -> None:
    cache = FakeCache()
    cache.add_queue(build_queue("q1"))
    cache.add_queue(build_queue("q2"))
    for i in range(3):
        add(cache, f"a{i}", "q1", created=float(i))
    add(cache, "b0", "q2", created=0.0)
    ADMITTED.clear()
    result = run_session(cache, conf("t-budget {budget: {q1: 10, q2: 10}}"), registry=REGISTRY)
    assert ADMITTED == ["a0", "b0", "a1", "a2"]
    assert set(phases(result).values()) == {"Inqueue"}


def test_a_rejected_job_stays_pending_and_the_queue_tries_its_next_job() -> None:
    cache = FakeCache()
    cache.add_queue(build_queue("q1"))
    add(cache, "big", "q1", created=0.0, min_cpu=3)
    add(cache, "small", "q1", created=1.0, min_cpu=1)
    add(cache, "tiny", "q1", created=2.0, min_cpu=1)
    ADMITTED.clear()
    result = run_session(cache, conf("t-budget {budget: {q1: 2}}"), registry=REGISTRY)
    # big does not fit; small and tiny do, and each admission takes its share of the budget.
    assert ADMITTED == ["small", "tiny"]
    assert phases(result) == {"big": "Pending", "small": "Inqueue", "tiny": "Inqueue"}


def test_the_reservation_of_an_admitted_job_counts_for_the_next_one() -> None:
    cache = FakeCache()
    cache.add_queue(build_queue("q1"))
    add(cache, "first", "q1", created=0.0, min_cpu=2)
    add(cache, "second", "q1", created=1.0, min_cpu=2)
    ADMITTED.clear()
    result = run_session(cache, conf("t-budget {budget: {q1: 3}}"), registry=REGISTRY)
    assert phases(result) == {"first": "Inqueue", "second": "Pending"}


def test_a_job_without_min_resources_is_admitted_without_a_vote() -> None:
    cache = FakeCache()
    add(cache, "free", "default", created=0.0, min_cpu=None)
    add(cache, "costly", "default", created=1.0)
    TReject.asked.clear()
    result = run_session(cache, conf("t-reject"), registry=REGISTRY)
    assert phases(result) == {"free": "Inqueue", "costly": "Pending"}
    assert TReject.asked == ["costly"]


def test_admitted_jobs_are_left_alone() -> None:
    cache = FakeCache()
    add(cache, "running", "default", created=0.0, phase=PodGroupPhase.INQUEUE)
    TReject.asked.clear()
    result = run_session(cache, conf("t-reject"), registry=REGISTRY)
    assert TReject.asked == []
    assert phases(result) == {"running": "Inqueue"}
    job = result.session.jobs["default/running"]  # type: ignore[union-attr]
    assert job.schedule_start_timestamp is not None


def test_a_failing_vote_skips_only_that_job() -> None:
    cache = FakeCache()
    add(cache, "bad", "default", created=0.0)
    add(cache, "good", "default", created=1.0)
    result = run_session(cache, conf("t-boom {job: bad}"), registry=REGISTRY)
    assert phases(result) == {"bad": "Pending", "good": "Inqueue"}
    assert [e.plugin for e in result.plugin_errors] == ["t-boom"]
