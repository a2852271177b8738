"""gang: validity, readiness, pipelining, starving, order, victims and PodGroup conditions."""

from __future__ import annotations

import pytest

from volcanolib.api.job import ConditionType, PodGroupPhase
from volcanolib.api.task import TaskStatus
from volcanolib.framework.status import Code
from volcanolib.testing import FakeCache, build_node, build_pod_group, build_task, open_session

S = TaskStatus
CONF = """
actions: ""
tiers:
- plugins:
    - name: gang
"""


def cache_with(jobs: dict[str, tuple[int, list[TaskStatus]]], **pg: object) -> FakeCache:
    """One PodGroup per entry: name -> (min member, task statuses); tasks are ``<name>-t-<i>``."""
    cache = FakeCache()
    cache.add_node(build_node("n1", cpu="16", memory="32Gi"))
    for name, (minimum, statuses) in jobs.items():
        cache.add_pod_group(build_pod_group(name, min_member=minimum, **pg))  # type: ignore[arg-type]
        for i, status in enumerate(statuses):
            node = "" if status in (S.PENDING,) else "n1"
            cache.add_task(build_task(f"{name}-t-{i}", job=name, status=status, node=node))
    return cache


def test_job_valid_counts_valid_tasks() -> None:
    ssn = open_session(
        cache_with({"a": (3, [S.RUNNING, S.PENDING, S.FAILED]), "b": (2, [S.PIPELINED, S.SUCCEEDED])}), CONF
    )
    status = ssn.job_valid(ssn.jobs["default/a"])
    assert status.code is Code.UNSCHEDULABLE
    assert status.reasons == ("NotEnoughTasks", "Not enough valid tasks for gang-scheduling, valid: 2, min: 3")
    assert status.plugin == "gang"
    assert ssn.job_valid(ssn.jobs["default/b"]).ok


def test_job_valid_checks_role_minimums() -> None:
    cache = FakeCache()
    cache.add_node(build_node("n1"))
    cache.add_pod_group(build_pod_group("a", min_member=2, min_task_member={"ps": 1, "worker": 1}))
    cache.add_task(build_task("a-worker-0", job="a", role="worker"))
    cache.add_task(build_task("a-worker-1", job="a", role="worker"))
    cache.add_task(build_task("a-ps-0", job="a", role="ps", node="n1", status=S.FAILED))
    ssn = open_session(cache, CONF)
    status = ssn.job_valid(ssn.jobs["default/a"])
    assert status.reasons[0] == "NotEnoughPodsOfTask"


def test_job_ready_and_pipelined() -> None:
    ssn = open_session(
        cache_with(
            {
                "ready": (2, [S.RUNNING, S.ALLOCATED, S.PENDING]),
                "piped": (2, [S.RUNNING, S.PIPELINED]),
                "short": (3, [S.RUNNING, S.PIPELINED, S.PENDING]),
            }
        ),
        CONF,
    )
    jobs = ssn.jobs
    assert ssn.job_ready(jobs["default/ready"])
    assert not ssn.job_ready(jobs["default/piped"])
    assert ssn.job_pipelined(jobs["default/piped"])
    assert not ssn.job_pipelined(jobs["default/short"])
    assert ssn.plugins["gang"].job_pipelined(ssn, jobs["default/short"]) < 0


def test_pending_best_effort_counts_for_ready_but_not_for_starving() -> None:
    cache = FakeCache()
    cache.add_node(build_node("n1"))
    cache.add_pod_group(build_pod_group("a", min_member=2))
    cache.add_task(build_task("a-t-0", job="a", node="n1"))
    cache.add_task(build_task("a-t-1", job="a", cpu=None, memory=None))
    ssn = open_session(cache, CONF)
    job = ssn.jobs["default/a"]
    assert ssn.job_ready(job)
    assert ssn.job_pipelined(job)
    assert ssn.job_starving(job)


def test_job_order_puts_unready_jobs_first_and_keys_agree() -> None:
    cache = cache_with({"ready": (1, [S.RUNNING]), "wait": (2, [S.RUNNING, S.PENDING])})
    ssn = open_session(cache, CONF)
    ready, wait = ssn.jobs["default/ready"], ssn.jobs["default/wait"]
    assert ssn.compare_jobs(wait, ready) < 0
    assert ssn.compare_jobs(ready, wait) > 0
    assert [j.name for j in sorted([ready, wait], key=ssn.job_key)] == ["wait", "ready"]
    gang = ssn.plugins["gang"]
    assert gang.job_order(ssn, ready, ready) == 0


def test_preemptable_keeps_each_job_at_its_minimum() -> None:
    cache = cache_with({"a": (2, [S.RUNNING] * 4), "b": (1, [S.RUNNING] * 2), "p": (1, [S.PENDING])})
    ssn = open_session(cache, CONF)
    node = ssn.nodes["n1"].tasks
    candidates = [
        node[k] for k in ("default/a-t-0", "default/b-t-0", "default/a-t-1", "default/b-t-1", "default/a-t-2")
    ]
    preemptor = ssn.jobs["default/p"].tasks["default-p-t-0"]
    # a: 4 ready, min 2 -> two victims; b: 2 ready, min 1 -> one victim.
    assert [t.name for t in ssn.preemptable(preemptor, candidates) or []] == ["a-t-0", "b-t-0", "a-t-1"]
    assert [t.name for t in ssn.reclaimable(preemptor, candidates) or []] == ["a-t-0", "b-t-0", "a-t-1"]


def test_preemptable_counter_ignores_pending_best_effort() -> None:
    cache = FakeCache()
    cache.add_node(build_node("n1"))
    cache.add_pod_group(build_pod_group("a", min_member=1))
    cache.add_task(build_task("a-t-0", job="a", node="n1"))
    cache.add_task(build_task("a-t-1", job="a", cpu=None, memory=None))
    cache.add_task(build_task("b-t-0"))
    ssn = open_session(cache, CONF)
    victim = ssn.nodes["n1"].tasks["default/a-t-0"]
    assert ssn.plugins["gang"].preemptable(ssn, victim, [victim]) == []


def conditions(job: object) -> dict[ConditionType, tuple[str, str]]:
    return {c.type: (c.reason, c.message) for c in job.pod_group.conditions}  # type: ignore[attr-defined]


def test_session_close_writes_gang_conditions() -> None:
    cache = cache_with(
        {
            "ready": (1, [S.RUNNING, S.PENDING]),
            "wait": (3, [S.RUNNING, S.PENDING, S.PENDING]),
            "empty": (1, []),
            "leaving": (2, [S.RUNNING, S.RELEASING]),
        }
    )
    ssn = open_session(cache, CONF)
    wait = ssn.jobs["default/wait"]
    ssn.close()
    assert conditions(ssn.jobs["default/ready"]) == {
        ConditionType.SCHEDULED: ("tasks in gang are ready to be scheduled", "")
    }
    reason, message = conditions(wait)[ConditionType.UNSCHEDULABLE]
    assert reason == "NotEnoughResources"
    assert message == (
        "2/3 tasks in gang unschedulable: pod group is not ready, 1 Running, 2 Pending, 3 minAvailable; "
        "Pending: 2 Unschedulable"
    )
    assert wait.job_fit_errors == message
    assert all(c.transition_id == ssn.uid for c in wait.pod_group.conditions)
    assert conditions(ssn.jobs["default/empty"]) == {}
    # A member being released is not ready: the gang is short (Volcano v1.14.1 makes no exception).
    assert ConditionType.UNSCHEDULABLE in conditions(ssn.jobs["default/leaving"])
    assert ssn.jobs["default/leaving"].pod_group.phase is PodGroupPhase.UNKNOWN


@pytest.mark.parametrize(
    ("minimum", "statuses", "phase"),
    [
        # A failed pod is not ready: one running of two needed, so Unschedulable, and with a task
        # running the session writes Unknown (which the job controller turns into JobUnknown).
        (2, [S.RUNNING, S.FAILED], PodGroupPhase.UNKNOWN),
        (3, [S.RUNNING, S.SUCCEEDED, S.FAILED], PodGroupPhase.UNKNOWN),
        # Nothing running: Unschedulable, and the phase follows the scheduled (finished) pods.
        (2, [S.FAILED, S.SUCCEEDED], PodGroupPhase.COMPLETED),
    ],
)
def test_a_failed_pod_is_not_ready(minimum: int, statuses: list[S], phase: PodGroupPhase) -> None:
    cache = cache_with({"broken": (minimum, statuses)})
    ssn = open_session(cache, CONF)
    ssn.close()
    job = ssn.jobs["default/broken"]
    assert ConditionType.UNSCHEDULABLE in conditions(job)
    assert job.pod_group.phase is phase


def test_discarded_allocation_counts_as_schedulable() -> None:
    cache = cache_with({"a": (3, [S.RUNNING, S.PENDING, S.PENDING])})
    ssn = open_session(cache, CONF)
    job = ssn.jobs["default/a"]
    stmt = ssn.statement()
    stmt.allocate(job.tasks["default-a-t-1"], ssn.nodes["n1"])
    stmt.discard()
    ssn.close()
    _, message = conditions(job)[ConditionType.UNSCHEDULABLE]
    assert message.startswith("1/3 tasks in gang unschedulable")
