"""PodDisruptionBudgets as the eviction subresource and the disruption controller apply
them, for pods without a workload controller."""

from __future__ import annotations

import math
from collections.abc import Iterable
from typing import Any

from .records import Obj
from .selectors import match_expressions_selector


def healthy(pod: Obj) -> bool:
    """Running, not terminating, and not Ready=False."""
    status = pod.get("status") or {}
    if status.get("phase") != "Running" or pod["metadata"].get("deletionTimestamp"):
        return False
    return all(c.get("status") == "True" for c in status.get("conditions") or [] if c.get("type") == "Ready")


def _scaled(value: Any, total: int) -> int:
    """An integer, or a percentage of ``total`` rounded up."""
    if isinstance(value, str) and value.endswith("%"):
        return math.ceil(int(value[:-1]) * total / 100)
    return int(value)


def budget_status(pdb: Obj, namespace_pods: Iterable[Obj]) -> dict[str, int]:
    """The status the disruption controller would write: expected, desired and currently
    healthy pods, and how many disruptions are allowed.

    :param namespace_pods: the pods of the budget's namespace.
    """
    spec = pdb.get("spec") or {}
    select = match_expressions_selector(spec.get("selector") or {})
    pods = [
        p
        for p in namespace_pods
        if select(p["metadata"].get("labels") or {}) and not p["metadata"].get("deletionTimestamp")
    ]
    # The disruption controller takes the expected count from the pods' controller
    # (replicas); the stand-in has no controllers, so status.expectedPods stands for it.
    expected = (pdb.get("status") or {}).get("expectedPods")
    if expected is None:
        expected = len(pods)
    if spec.get("minAvailable") is not None:
        desired = _scaled(spec["minAvailable"], expected)
    elif spec.get("maxUnavailable") is not None:
        desired = max(0, expected - _scaled(spec["maxUnavailable"], expected))
    else:
        desired = 0
    current = sum(1 for p in pods if healthy(p))
    return {
        "currentHealthy": current,
        "desiredHealthy": desired,
        "expectedPods": expected,
        "disruptionsAllowed": max(0, current - desired),
    }


def budget_message(pdb: Obj, status: dict[str, int]) -> str:
    """The API server's explanation of a refused eviction."""
    name = pdb["metadata"]["name"]
    return (
        f"The disruption budget {name} needs {status['desiredHealthy']} healthy pods "
        f"and has {status['currentHealthy']} currently"
    )
