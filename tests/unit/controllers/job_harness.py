"""A tiny stand-in for the API server and kubelet around a JobController, for tests.

It applies the controller's writes (pods, PodGroups, statuses), reports
deletions back (at once, or when told, for a termination grace), and lets a
test move pods and PodGroups as the scheduler and kubelet would.
"""

from __future__ import annotations

import copy
from collections import deque
from typing import Any

from volcanolib.controllers import (
    Change,
    CreatePod,
    CreatePodGroup,
    DeletePod,
    DeletePodGroup,
    JobController,
    JobStatus,
)

NS = "ns1"


def container(cpu: str = "1") -> dict[str, Any]:
    return {"name": "c", "image": "busybox", "resources": {"requests": {"cpu": cpu}}}


def task(name: str, replicas: int, **extra: Any) -> dict[str, Any]:
    out: dict[str, Any] = {"name": name, "replicas": replicas, "template": {"spec": {"containers": [container()]}}}
    out.update(extra)
    return out


def job(name: str, *tasks: dict[str, Any], **spec: Any) -> dict[str, Any]:
    return {
        "apiVersion": "batch.volcano.sh/v1alpha1",
        "kind": "Job",
        "metadata": {"name": name, "namespace": NS, "uid": f"{name}-uid"},
        "spec": {"schedulerName": "volcano", "queue": "default", "tasks": list(tasks), **spec},
    }


def tf_job(**spec: Any) -> dict[str, Any]:
    """The worked example of §10: ps x1, worker x2; PodEvicted -> RestartJob; worker TaskCompleted -> CompleteJob."""
    return job(
        "tf",
        task("ps", 1),
        task("worker", 2, policies=[{"event": "TaskCompleted", "action": "CompleteJob"}]),
        minAvailable=3,
        policies=[{"event": "PodEvicted", "action": "RestartJob"}],
        **spec,
    )


class Harness:
    """Applies a controller's changes to an in-memory cluster.

    :param grace: when false, a deleted pod is gone at once; when true it
        stays (terminating) until :meth:`gone` is called.
    """

    def __init__(self, ctrl: JobController | None = None, *, grace: bool = False) -> None:
        self.ctrl = ctrl or JobController()
        self.grace = grace
        self.now = 0.0
        self.pods: dict[str, dict[str, Any]] = {}
        self.groups: dict[str, dict[str, Any]] = {}
        self.deleting: set[str] = set()
        self.log: list[Change] = []
        self.created: list[tuple[str, str, str]] = []  # (name, job-version, uid) of every pod created
        self.statuses: list[JobStatus] = []

    # -- applying changes
    def apply(self, changes: list[Change]) -> list[Change]:
        queue: deque[Change] = deque(changes)
        applied: list[Change] = []
        while queue:
            change = queue.popleft()
            applied.append(change)
            self.log.append(change)
            if isinstance(change, CreatePod):
                meta = change.manifest["metadata"]
                name = meta["name"]
                assert name not in self.pods, f"pod {name} created while it exists"
                group = self.groups.get(meta["annotations"]["scheduling.k8s.io/group-name"])
                assert group is not None and group["status"]["phase"] not in ("", "Pending"), (
                    f"pod {name} created before its PodGroup was admitted"
                )
                self.pods[name] = copy.deepcopy(change.manifest)
                self.created.append((name, meta["annotations"]["volcano.sh/job-version"], meta["uid"]))
            elif isinstance(change, CreatePodGroup):
                name = change.manifest["metadata"]["name"]
                assert name not in self.groups, f"PodGroup {name} created while it exists"
                self.groups[name] = copy.deepcopy(change.manifest)
            elif isinstance(change, DeletePodGroup):
                assert change.name in self.groups, f"PodGroup {change.name} deleted while absent"
                del self.groups[change.name]
            elif isinstance(change, DeletePod):
                assert change.name in self.pods, f"pod {change.name} deleted while absent"
                assert change.name not in self.deleting, f"pod {change.name} deleted twice"
                self.deleting.add(change.name)
                if not self.grace:
                    del self.pods[change.name]
                    self.deleting.discard(change.name)
                    queue.extend(self.ctrl.pod_deleted(NS, change.name, now=self.now))
            elif isinstance(change, JobStatus):
                self.statuses.append(change)
        return applied

    # -- events
    def submit(self, manifest: dict[str, Any]) -> list[Change]:
        return self.apply(self.ctrl.submit(manifest, now=self.now))

    def admit(self, pod_group: str | None = None, phase: str = "Inqueue") -> list[Change]:
        names = [pod_group] if pod_group else list(self.groups)
        out: list[Change] = []
        for name in names:
            self.groups[name]["status"]["phase"] = phase
            out += self.apply(self.ctrl.pod_group_phase(NS, name, phase, now=self.now))
        return out

    def phase(self, pod: str, phase: str, exit_code: int | None = None) -> list[Change]:
        self.pods[pod]["status"]["phase"] = phase
        return self.apply(self.ctrl.pod_phase(NS, pod, phase, now=self.now, exit_code=exit_code))

    def run_all(self) -> list[Change]:
        out: list[Change] = []
        for name in sorted(self.pods):
            if self.pods[name]["status"]["phase"] == "Pending" and name not in self.deleting:
                out += self.phase(name, "Running")
        return out

    def evict(self, pod: str) -> list[Change]:
        """The scheduler evicts a pod: it is gone (now, or at :meth:`gone` with a grace)."""
        assert pod in self.pods
        if self.grace:
            self.deleting.add(pod)
            return self.apply(self.ctrl.pod_terminating(NS, pod, now=self.now))
        del self.pods[pod]
        return self.apply(self.ctrl.pod_deleted(NS, pod, now=self.now, evicted=True))

    def gone(self, pod: str) -> list[Change]:
        """A terminating pod is removed."""
        assert pod in self.deleting
        self.deleting.discard(pod)
        del self.pods[pod]
        return self.apply(self.ctrl.pod_deleted(NS, pod, now=self.now))

    def tick(self, now: float) -> list[Change]:
        self.now = now
        return self.apply(self.ctrl.tick(now=now))

    def state(self, name: str = "tf") -> Any:
        return self.ctrl.job(NS, name)

    def alive(self) -> list[str]:
        return sorted(n for n in self.pods if n not in self.deleting)

    def versions(self) -> dict[str, str]:
        return {n: p["metadata"]["annotations"]["volcano.sh/job-version"] for n, p in sorted(self.pods.items())}
