"""The incremental contract (docs/incremental.md) as it binds every plugin: job status written at close.

A session that follows another leaves settled jobs alone and does not write
jobs it did not change, but only when every plugin declares that it changes
job status through the session (``Traits(status_through_session=True)``).
These tests write status at close in the three ways a plugin can: directly
without the declaration, through ``update_pod_group_condition`` on a settled
job, and by replacing the annotations of a job the session left alone.
"""

from __future__ import annotations

import logging
from typing import ClassVar

import pytest

from tests.unit.clusters import gang_cluster
from volcanolib import InMemoryCache, Registry, Scheduler, Session, hookimpl
from volcanolib.api.hypernode import JOB_ALLOCATED_HYPER_NODE
from volcanolib.api.job import ConditionType, PodGroupCondition
from volcanolib.framework.traits import SETTLED_JOBS, Traits
from volcanolib.testing import build_pod_group

CONF = """
actions: "enqueue, allocate, backfill"
tiers:
- plugins:
  - name: priority
  - name: gang
- plugins:
  - name: {name}
"""


def _marked(message: str) -> PodGroupCondition:
    return PodGroupCondition(ConditionType.SCHEDULED, reason="Marked", message=message)


def _replace(conditions: list[PodGroupCondition], condition: PodGroupCondition) -> list[PodGroupCondition]:
    return [c for c in conditions if c.type is not condition.type] + [condition]


class _FifthClose:
    """A plugin that changes jobs in its fifth ``on_session_close`` only (once every job has settled)."""

    def __init__(self, arguments: object) -> None:
        self.cycle = 0

    @hookimpl
    def on_session_close(self, ssn: Session) -> None:
        self.cycle += 1
        if self.cycle == 5:
            self.mark(ssn)

    def mark(self, ssn: Session) -> None:
        raise NotImplementedError


class DirectMarker(_FifthClose):
    """Sets a condition on every job by assigning the PodGroup's conditions; declares nothing."""

    name: ClassVar[str] = "direct"

    def mark(self, ssn: Session) -> None:
        for job in ssn.jobs.values():
            job.pod_group.conditions = _replace(job.pod_group.conditions, _marked("cycle 5"))


class SessionMarker(_FifthClose):
    """Sets a condition on every job through the session, and declares it."""

    name: ClassVar[str] = "through-session"
    traits: ClassVar[Traits] = Traits(status_through_session=True)

    def mark(self, ssn: Session) -> None:
        for job in ssn.jobs.values():
            ssn.update_pod_group_condition(job, _marked("cycle 5"))


class AnnotationMarker(_FifthClose):
    """Replaces the annotations of the jobs left to write; declares it."""

    name: ClassVar[str] = "annotator"
    traits: ClassVar[Traits] = Traits(status_through_session=True)

    def mark(self, ssn: Session) -> None:
        for job in ssn.unsettled_jobs():
            job.pod_group.annotations = {**job.pod_group.annotations, JOB_ALLOCATED_HYPER_NODE: "marked"}


REGISTRY = Registry(plugins={"direct": DirectMarker, "through-session": SessionMarker, "annotator": AnnotationMarker})


def _cluster() -> InMemoryCache:
    cache = gang_cluster(3, 2)
    # No pods yet: never settles, and nothing changes it from session to session.
    cache.add_pod_group(build_pod_group("empty", min_member=1))
    return cache


def _cycles(name: str, cycles: int) -> tuple[InMemoryCache, Scheduler, int]:
    cache = _cluster()
    scheduler = Scheduler(cache, CONF.format(name=name), registry=REGISTRY)
    followed = 0
    for _ in range(cycles):
        result = scheduler.run_once()
        cache.start_bound_tasks()
        assert result.session is not None
        followed += result.session.delta is not None
    return cache, scheduler, followed


def _messages(cache: InMemoryCache) -> dict[str, str]:
    """The message of each running job's Scheduled condition."""
    return {
        uid: next(c.message for c in job.pod_group.conditions if c.type is ConditionType.SCHEDULED)
        for uid, job in cache.full_snapshot().jobs.items()
        if uid != "default/empty"
    }


def test_a_plugin_that_does_not_declare_it_switches_settled_jobs_off_and_its_status_is_written(
    caplog: pytest.LogCaptureFixture,
) -> None:
    with caplog.at_level(logging.INFO, logger="volcanolib.framework.traits"):
        cache, scheduler, followed = _cycles("direct", 5)
    assert followed >= 3  # the sessions followed each other: the shortcut would have applied
    assert scheduler.fast_paths_off == {SETTLED_JOBS: ["direct"]}
    assert sum("fast path off" in r.message and "direct" in r.message for r in caplog.records) == 1
    assert set(_messages(cache).values()) == {"cycle 5"}


def test_a_condition_set_through_the_session_on_a_settled_job_is_written() -> None:
    cache, scheduler, followed = _cycles("through-session", 5)
    assert followed >= 3
    assert scheduler.fast_paths_off == {}  # settled jobs are left alone: the condition wakes them up
    assert set(_messages(cache).values()) == {"cycle 5"}


def test_annotations_replaced_at_close_on_a_job_left_alone_are_written() -> None:
    cache, _, followed = _cycles("annotator", 5)
    assert followed >= 3
    jobs = cache.full_snapshot().jobs
    assert jobs["default/empty"].pod_group.annotations.get(JOB_ALLOCATED_HYPER_NODE) == "marked"
