"""Queues."""

from __future__ import annotations

import enum
from collections.abc import Mapping
from typing import Final, Protocol

import attrs

from volcanolib.api.resource import Mode, Resource

__all__ = ["ROOT_QUEUE", "QueueFigures", "QueueInfo", "QueueState", "QueueSums"]

#: The queue at the top of every queue tree, which a Volcano cluster always has (its scheduler makes it
#: at start, not reclaimable); a queue without ``spec.parent`` is its child.
ROOT_QUEUE: Final = "root"


class QueueState(str, enum.Enum):
    """The state of a queue."""

    OPEN = "Open"
    CLOSED = "Closed"
    CLOSING = "Closing"
    UNKNOWN = "Unknown"

    def __str__(self) -> str:
        return self.value


@attrs.define(eq=False)
class QueueInfo:
    """One queue: its weight, quotas and place in a hierarchy.

    ``capability`` and ``deserved`` are ``None`` when the Queue does not set
    them; ``guarantee`` is empty then.
    """

    name: str
    weight: int = 1
    capability: Resource | None = None
    guarantee: Resource = attrs.field(factory=Resource)
    deserved: Resource | None = None
    #: ``spec.reclaimable``; ``None`` when unset (which means reclaimable).
    reclaimable: bool | None = None
    state: QueueState = QueueState.OPEN
    priority: int = 0
    #: ``spec.parent``; ``None`` when unset.
    parent: str | None = None
    #: The ``volcano.sh/hierarchy`` annotation (hierarchical drf), e.g. ``root/eng/prod``.
    hierarchy: str = ""
    #: The ``volcano.sh/hierarchy-weights`` annotation, e.g. ``1/2/8``.
    hierarchy_weights: str = ""
    creation_timestamp: float = 0.0
    annotations: Mapping[str, str] = attrs.field(factory=dict)
    #: ``status.allocated``, written back at session close.
    allocated: Resource = attrs.field(factory=Resource)

    @property
    def uid(self) -> str:
        """The queue's identity: its name."""
        return self.name

    def is_reclaimable(self) -> bool:
        """Whether other queues may reclaim resources from this one (default true)."""
        return True if self.reclaimable is None else self.reclaimable

    def is_open(self) -> bool:
        """Whether the queue accepts new work."""
        return self.state is QueueState.OPEN

    def clone(self) -> QueueInfo:
        """Return a copy whose status can change independently."""
        return attrs.evolve(self, allocated=self.allocated.clone())


@attrs.frozen
class QueueFigures:
    """What a queue-sharing plugin reports about one queue at the end of a session (Volcano's queue metrics).

    Plugins that share the cluster between queues (``proportion``,
    ``capacity``) offer them from a method ``queue_figures()``; ``volcanolib
    serve`` exports them as Volcano's ``volcano_queue_*`` gauges.

    .. versionadded:: 0.2
    """

    name: str
    #: The resources of the queue's allocated (and, for capacity, running) tasks.
    allocated: Resource
    #: Those plus the requests of its pending tasks.
    request: Resource
    #: Its fair share of the cluster.
    deserved: Resource
    #: The largest ``allocated / deserved`` over the resources deserved lists.
    share: float
    #: Whether it holds its deserved share or more (it may then be reclaimed from).
    overused: bool
    #: ``spec.weight``, for plugins that share by weight (``None`` otherwise).
    weight: int | None = None
    #: ``spec.capability``, as the plugin reads it (``None`` when the queue sets none).
    capability: Resource | None = None
    #: What the queue may hold at most, its ancestors' and the cluster's limits applied (``None``: unknown).
    real_capability: Resource | None = None

    @classmethod
    def of(cls, sums: QueueSums, *, weight: int | None = None, capability: Resource | None = None) -> QueueFigures:
        """The figures of a plugin's state of one queue (copied: the plugin may change it afterwards).

        ``overused`` is whether ``deserved <= allocated`` in every dimension.
        """
        return cls(
            name=sums.name,
            allocated=sums.allocated.clone(),
            request=sums.request.clone(),
            deserved=sums.deserved.clone(),
            share=sums.share,
            overused=sums.deserved.less_equal(sums.allocated, Mode.ZERO),
            weight=weight,
            capability=capability.clone() if capability is not None else None,
            real_capability=sums.real_capability.clone(),
        )


class QueueSums(Protocol):
    """What a queue-sharing plugin keeps of a queue, as :meth:`QueueFigures.of` reads it.

    .. versionadded:: 0.2
    """

    name: str
    allocated: Resource
    request: Resource
    deserved: Resource
    share: float
    real_capability: Resource
