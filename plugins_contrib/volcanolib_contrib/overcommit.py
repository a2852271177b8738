"""overcommit: admit jobs while the cluster, inflated by a factor, still has room for their minimum.

At session open the plugin computes

``idle``
    the cluster's total allocatable resources times ``overcommit-factor``,
    minus what the nodes' tasks use (releasing tasks included); it may be
    negative;
``inqueue``
    the ``minResources`` of every Inqueue job, plus, for every Running job
    with ``minResources`` whose tasks in an allocated status reach
    ``minMember``, the part of ``minResources`` it has not been allocated yet.

A job without ``minResources`` may always be enqueued. Any other job may be
enqueued when ``inqueue + minResources`` does not exceed ``idle`` on any
resource ``minResources`` asks for (strictly, ``pods`` ignored); an admitted
job's ``minResources`` is then added to ``inqueue``, so the jobs admitted
later in the same session see it.
"""

from __future__ import annotations

import logging
from typing import TYPE_CHECKING, ClassVar, Final

import attrs

from volcanolib.api.job import JobInfo, PodGroupPhase
from volcanolib.api.resource import PODS, Resource, exceeded_part
from volcanolib.api.task import ALLOCATED_STATUSES
from volcanolib.framework.arguments import argument
from volcanolib.framework.registry import hookimpl
from volcanolib.framework.status import Vote
from volcanolib.framework.sums import PartSums
from volcanolib.framework.traits import Traits

if TYPE_CHECKING:
    from volcanolib.api.cluster import SnapshotDelta
    from volcanolib.framework.session import Session

__all__ = ["DEFAULT_OVERCOMMIT_FACTOR", "OVERCOMMIT_FACTOR", "OvercommitArguments", "OvercommitPlugin"]

log = logging.getLogger(__name__)

#: The argument naming the factor.
OVERCOMMIT_FACTOR: Final = "overcommit-factor"
#: The factor used when none is given, or when the given one is below 1.
DEFAULT_OVERCOMMIT_FACTOR: Final = 1.2


@attrs.frozen
class OvercommitArguments:
    """The arguments of ``overcommit``."""

    factor: float = argument(
        key=OVERCOMMIT_FACTOR,
        default=DEFAULT_OVERCOMMIT_FACTOR,
        doc="How far admitted minimums may exceed the cluster's allocatable resources; a value below 1.0 is "
        "replaced by 1.2, with a warning.",
    )


class OvercommitPlugin:
    """Enqueue admission against the cluster's capacity times ``overcommit-factor``.

    :ivar factor: the factor in use.
    :ivar idle: the inflated free resources, computed at session open.
    :ivar inqueue: the resources reserved by admitted jobs.
    """

    name: ClassVar[str] = "overcommit"
    Arguments: ClassVar[type[OvercommitArguments]] = OvercommitArguments
    #: See docs/incremental.md: no clock; job status, if any, only through the session.
    traits: ClassVar[Traits] = Traits(clock_free=True, status_through_session=True)

    def __init__(self, arguments: OvercommitArguments) -> None:
        self.arguments = arguments
        factor = arguments.factor
        if factor < 1.0:
            log.warning(
                "overcommit-factor %s is below 1; using the default %s instead", factor, DEFAULT_OVERCOMMIT_FACTOR
            )
            factor = DEFAULT_OVERCOMMIT_FACTOR
        self.factor = factor
        self.idle = Resource()
        self.inqueue = Resource()
        # What the last session opened on, kept for the next: each node's used resources, each job's reservation.
        self._used: PartSums[str] | None = None
        self._reserved: PartSums[str] | None = None

    @hookimpl
    def on_session_open(self, ssn: Session) -> None:
        """Compute the inflated idle resources and what admitted jobs already reserve."""
        self._used = used = PartSums[str]()
        used.put_all((node.name, node.used.clone()) for node in ssn.node_list)
        self._reserved = reserved = PartSums[str]()
        reserved.put_all((job.uid, _reservation(job)) for job in ssn.jobs.values())
        self._settle(ssn)

    @hookimpl
    def on_session_resume(self, ssn: Session, delta: SnapshotDelta) -> None:
        """Open as :meth:`on_session_open` would, counting again only the nodes and jobs the delta names."""
        used, reserved = self._used, self._reserved
        if used is None or reserved is None:
            self.on_session_open(ssn)
            return
        for name in delta.nodes:
            node = ssn.nodes.get(name)
            used.put(name, node.used.clone() if node is not None else None)
        for uid in delta.jobs:
            job = ssn.jobs.get(uid)
            reserved.put(uid, _reservation(job) if job is not None else None)
        if not (used.exact and reserved.exact):  # a sum that could depend on the order: count afresh
            self.on_session_open(ssn)
            return
        self._settle(ssn)

    def _settle(self, ssn: Session) -> None:
        assert self._used is not None and self._reserved is not None
        self.idle = ssn.total_resource.clone().multi(self.factor).sub_unchecked(self._used.total)
        self.inqueue = self._reserved.total.clone()

    def kept_state(self) -> tuple[Resource, Resource]:
        """What the plugin keeps between sessions, as it stands: the inflated idle and the reserved resources."""
        return self.idle, self.inqueue

    @hookimpl
    def job_enqueueable(self, ssn: Session, job: JobInfo) -> Vote:
        """Permit a job without ``minResources``, or one whose minimum still fits ``idle`` after the reserved."""
        min_resources = job.pod_group.min_resources
        if min_resources is None:
            return Vote.PERMIT
        wanted = self.inqueue.clone().add(min_resources)
        over = wanted.exceeding_dimensions(self.idle, min_resources)
        if not over:
            return Vote.PERMIT
        log.debug("job %s: resource in cluster is overused: %s", job.uid, ", ".join(over))
        return Vote.REJECT

    @hookimpl
    def job_enqueued(self, ssn: Session, job: JobInfo) -> None:
        """Reserve an admitted job's ``minResources``."""
        min_resources = job.pod_group.min_resources
        if min_resources is not None:
            self.inqueue.add(min_resources)


def _reservation(job: JobInfo) -> Resource | None:
    """What an admitted job reserves: an Inqueue job its minimum, a Running one what it has not placed of it."""
    min_resources = job.pod_group.min_resources
    if min_resources is None:
        return None
    phase = job.pod_group.phase
    if phase is PodGroupPhase.INQUEUE:
        return min_resources.clone()
    if phase is PodGroupPhase.RUNNING and job.count(ALLOCATED_STATUSES) >= job.min_available:
        missing = exceeded_part(min_resources, job.allocated)
        missing.scalars.pop(PODS, None)
        return missing
    return None
