"""conformance: never evict the pods Kubernetes itself depends on.

Preempt and reclaim consult this plugin for every candidate list and it
keeps out:

* pods whose priority class is ``system-cluster-critical`` or
  ``system-node-critical``;
* pods in the ``kube-system`` namespace.

Every other candidate is acceptable. The answer is never an abstention: when
every candidate is critical the plugin returns an empty list, which ends its
tier with no victims.
"""

from __future__ import annotations

from collections.abc import Sequence
from typing import TYPE_CHECKING, ClassVar, Final

from volcanolib.framework.arguments import NoArguments
from volcanolib.framework.registry import hookimpl
from volcanolib.framework.traits import Traits

if TYPE_CHECKING:
    from volcanolib.api.task import TaskInfo
    from volcanolib.framework.session import Session

__all__ = ["CRITICAL_PRIORITY_CLASSES", "SYSTEM_NAMESPACE", "ConformancePlugin"]

#: Priority classes whose pods are never evicted.
CRITICAL_PRIORITY_CLASSES: Final = frozenset({"system-cluster-critical", "system-node-critical"})
#: The namespace whose pods are never evicted.
SYSTEM_NAMESPACE: Final = "kube-system"


def _evictables(tasks: Sequence[TaskInfo]) -> list[TaskInfo]:
    """The tasks neither in ``kube-system`` nor of a critical priority class, in the given order."""
    # One comprehension, no call per task: asked for every candidate of every node tried.
    return [
        t
        for t in tasks
        if t.namespace != SYSTEM_NAMESPACE
        and (t.pod is None or t.pod.priority_class_name not in CRITICAL_PRIORITY_CLASSES)
    ]


class ConformancePlugin:
    """Protects system-critical pods from preemption and reclaim. Takes no arguments."""

    name: ClassVar[str] = "conformance"
    Arguments: ClassVar[type[NoArguments]] = NoArguments
    #: See docs/incremental.md: no clock; job status, if any, only through the session.
    traits: ClassVar[Traits] = Traits(clock_free=True, status_through_session=True)

    def __init__(self, arguments: NoArguments) -> None:
        self.arguments = arguments

    @hookimpl
    def preemptable(self, ssn: Session, preemptor: TaskInfo, preemptees: Sequence[TaskInfo]) -> list[TaskInfo]:
        """The candidates that are neither system-critical nor in ``kube-system``, in the given order."""
        return _evictables(preemptees)

    @hookimpl
    def reclaimable(self, ssn: Session, reclaimer: TaskInfo, reclaimees: Sequence[TaskInfo]) -> list[TaskInfo]:
        """The same filter as :meth:`preemptable`, for reclaim across queues."""
        return _evictables(reclaimees)
