"""Test actions and plugins for the simulator, registered directly (no packaging)."""

from __future__ import annotations

from collections.abc import Callable
from pathlib import Path
from typing import Any, ClassVar

import pytest
import yaml

from volcanolib import Arguments, PodGroupPhase, Registry, Resource, Status, TaskStatus, hookimpl
from volcanolib.api.fiterrors import FitError, FitErrors


class FirstFit:
    """Admits every job and places pending tasks on the first node with room, in name order."""

    name: ClassVar[str] = "firstfit"

    def execute(self, ssn: Any) -> None:
        for job in sorted(ssn.jobs.values(), key=lambda j: j.uid):
            job.pod_group.phase = PodGroupPhase.INQUEUE if job.is_pending() else job.pod_group.phase
            for task in sorted(job.tasks_in(TaskStatus.PENDING), key=lambda t: t.name):
                candidates = ssn.predicate_nodes(task, ssn.node_list)
                fits = [n for n in candidates if task.resreq.less_equal(n.idle)]
                if fits:
                    ssn.allocate(task, fits[0])
                    continue
                errors = FitErrors(total_nodes=len(ssn.node_list))
                for node in ssn.node_list:
                    errors.set_node_error(FitError(task.key, node.name, ["Insufficient cpu"]))
                job.nodes_fit_errors[task.uid] = errors


class EvictMarked:
    """Evicts running tasks whose pod has the label ``evict: "yes"``."""

    name: ClassVar[str] = "evictmarked"

    def execute(self, ssn: Any) -> None:
        for job in ssn.jobs.values():
            for task in list(job.tasks_in(TaskStatus.RUNNING)):
                if task.pod is not None and task.pod.labels.get("evict") == "yes":
                    ssn.evict(task, "marked")


class PipelineLast:
    """Pipelines every pending task onto the last node."""

    name: ClassVar[str] = "pipelinelast"

    def execute(self, ssn: Any) -> None:
        for job in ssn.jobs.values():
            for task in list(job.tasks_in(TaskStatus.PENDING)):
                ssn.pipeline(task, ssn.node_list[-1].name)


class Scorer:
    """Scores nodes as its ``scores`` argument says; refuses the nodes in ``refuse``."""

    name: ClassVar[str] = "scorer"

    def __init__(self, arguments: Arguments) -> None:
        self.scores = dict(arguments.get("scores") or {})
        self.refuse = list(arguments.get("refuse") or [])

    @hookimpl
    def node_order(self, ssn: Any, task: Any, node: Any) -> float:
        return float(self.scores.get(node.name, 0))

    @hookimpl
    def predicate(self, ssn: Any, task: Any, node: Any) -> Status:
        if node.name in self.refuse:
            return Status.unschedulable(f"node(s) refused by the scorer: {node.name}")
        return Status.success()

    def queue_view(self, name: str) -> dict[str, object]:
        return {"deserved": Resource.from_list({"cpu": "2"}), "note": f"queue {name}"}


class Broken:
    """Fails in its predicate."""

    name: ClassVar[str] = "broken"

    def __init__(self, arguments: Arguments) -> None:
        pass

    @hookimpl
    def predicate(self, ssn: Any, task: Any, node: Any) -> Status:
        raise RuntimeError("boom")


@pytest.fixture
def registry() -> Registry:
    """A registry with the test actions and plugins added to the installed ones."""
    return Registry(
        plugins={"scorer": Scorer, "broken": Broken},
        actions={"firstfit": FirstFit, "evictmarked": EvictMarked, "pipelinelast": PipelineLast},
    )


def _node(name: str, cpu: str = "4") -> dict[str, Any]:
    return {
        "apiVersion": "v1",
        "kind": "Node",
        "metadata": {"name": name},
        "status": {"allocatable": {"cpu": cpu, "memory": "8Gi", "pods": "10"}},
    }


def _pod(name: str, group: str, cpu: str = "1", **spec: Any) -> dict[str, Any]:
    labels = spec.pop("labels", {})
    status = spec.pop("status", {"phase": "Pending"})
    return {
        "apiVersion": "v1",
        "kind": "Pod",
        "metadata": {
            "name": name,
            "namespace": "ns1",
            "labels": labels,
            "annotations": {"scheduling.k8s.io/group-name": group},
        },
        "spec": {
            "schedulerName": "volcano",
            "containers": [{"name": "c", "resources": {"requests": {"cpu": cpu}}}],
            **spec,
        },
        "status": status,
    }


def _group(name: str, min_member: int = 1, phase: str = "Inqueue", queue: str = "default") -> dict[str, Any]:
    return {
        "apiVersion": "scheduling.volcano.sh/v1beta1",
        "kind": "PodGroup",
        "metadata": {"name": name, "namespace": "ns1"},
        "spec": {"minMember": min_member, "queue": queue},
        "status": {"phase": phase},
    }


@pytest.fixture
def objects() -> dict[str, Callable[..., dict[str, Any]]]:
    """Builders for nodes, pods and pod groups."""
    return {"node": _node, "pod": _pod, "group": _group}


@pytest.fixture
def write(tmp_path: Path) -> Callable[..., Path]:
    """Write a scenario mapping (or any YAML value) to a file and return its path."""
    counter = iter(range(1000))

    def _write(data: Any, name: str | None = None) -> Path:
        path = tmp_path / (name or f"scenario-{next(counter)}.yaml")
        path.write_text(data if isinstance(data, str) else yaml.safe_dump(data, sort_keys=False))
        return path

    return _write
