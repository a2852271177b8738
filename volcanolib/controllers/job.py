"""Volcano's job controller as pure logic: events in, changes out (first version: interface only)."""

from __future__ import annotations

from collections.abc import Mapping
from typing import Any, Union

import attrs

from volcanolib.kube.jobs import expand_job

__all__ = ["Change", "CreatePod", "CreatePodGroup", "DeletePod", "DeletePodGroup", "JobController", "JobState", "JobStatus"]


@attrs.frozen
class CreatePodGroup:
    """Create this PodGroup (a manifest in API form)."""

    manifest: dict[str, Any]


@attrs.frozen
class CreatePod:
    """Create this pod (a manifest in API form)."""

    manifest: dict[str, Any]


@attrs.frozen
class DeletePod:
    """Delete this pod; the caller reports it gone with :meth:`JobController.pod_deleted`."""

    namespace: str
    name: str
    reason: str


@attrs.frozen
class DeletePodGroup:
    """Delete this PodGroup."""

    namespace: str
    name: str


@attrs.frozen
class JobStatus:
    """The job's phase or retry count changed."""

    namespace: str
    name: str
    phase: str
    retry_count: int


Change = Union[CreatePodGroup, CreatePod, DeletePod, DeletePodGroup, JobStatus]


@attrs.frozen
class JobState:
    """What the controller knows of one job."""

    namespace: str
    name: str
    phase: str
    retry_count: int
    version: int
    min_available: int
    pending: int = 0
    running: int = 0
    succeeded: int = 0
    failed: int = 0
    terminating: int = 0
    deleted: bool = False


class JobController:
    """Volcano's job controller (work in progress: the interface is final)."""

    def __init__(self, *, scheduler_name: str = "volcano", default_queue: str = "default") -> None:
        self.scheduler_name = scheduler_name
        self.default_queue = default_queue
        self._jobs: dict[tuple[str, str], JobState] = {}
        self._owners: dict[tuple[str, str], tuple[str, str]] = {}

    def submit(self, job: Mapping[str, Any], *, now: float) -> list[Change]:
        """Accept a Job; returns its PodGroup (pods follow the PodGroup's admission)."""
        exp = expand_job(job, scheduler_name=self.scheduler_name)
        meta = job.get("metadata") or {}
        key = (str(meta.get("namespace") or "default"), str(meta["name"]))
        self._jobs[key] = JobState(key[0], key[1], "Pending", 0, 0, 0)
        for pod in exp.pods:
            self._owners[(key[0], pod["metadata"]["name"])] = key
        return [CreatePodGroup(exp.pod_group)] if exp.pod_group else []

    def delete(self, namespace: str, name: str, *, now: float) -> list[Change]:
        """The user deleted the Job."""
        return []

    def pod_group_phase(self, namespace: str, name: str, phase: str, *, now: float) -> list[Change]:
        """The scheduler moved the PodGroup to ``phase``."""
        return []

    def pod_phase(
        self, namespace: str, pod: str, phase: str, *, now: float, exit_code: int | None = None, reason: str = ""
    ) -> list[Change]:
        """A pod of a job moved to ``phase``."""
        return []

    def pod_deleted(self, namespace: str, pod: str, *, now: float, evicted: bool = False) -> list[Change]:
        """A pod of a job is gone."""
        return []

    def tick(self, *, now: float) -> list[Change]:
        """Run the timed reactions due at ``now``."""
        return []

    def next_deadline(self) -> float | None:
        """When :meth:`tick` has something to do next."""
        return None

    def job(self, namespace: str, name: str) -> JobState:
        """The state of one job."""
        return self._jobs[(namespace, name)]

    def owner_of(self, namespace: str, pod: str) -> tuple[str, str] | None:
        """``(namespace, job name)`` of a pod this controller made."""
        return self._owners.get((namespace, pod))
