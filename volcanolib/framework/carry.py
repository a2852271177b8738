"""What one session of a scheduler hands to the next, so that a cycle costs what changed.

A :class:`~volcanolib.scheduler.Scheduler` keeps one :class:`Carry` per
installed configuration and gives it to each session. When a session closes,
it leaves there the report it gave the cache (which names its snapshot), the
plugins that failed in it, and its node classes. The next session trusts
what was kept only when the cache built its snapshot from that one
(:attr:`~volcanolib.api.cluster.ClusterInfo.delta` names the report it
follows): then plugins implementing ``on_session_resume`` update their kept
state from the delta, and durable node classes are regrouped for the changed
nodes only. In every other case (the first session, a session that failed
to open, a snapshot copied in full, another session in between) everything
is computed afresh, as without a carry. The incremental contract
(``docs/incremental.md``) states what this asks of plugins.
"""

from __future__ import annotations

from typing import TYPE_CHECKING, final

from volcanolib.framework.sums import JobSums, PartSums, whole

if TYPE_CHECKING:
    from volcanolib.api.cluster import ClusterInfo, SnapshotChanges, SnapshotDelta
    from volcanolib.framework.nodeclass import NodeClasses

__all__ = ["Carry", "JobSums", "PartSums", "whole"]  # the sums: from volcanolib.framework.sums, for one release


@final
class Carry:
    """The hand-over between the sessions of one scheduler and configuration.

    .. versionadded:: 0.2
    """

    __slots__ = ("allocatable", "closed", "failed", "job_sums", "node_classes", "quiet_jobs", "settled")

    def __init__(self, *, quiet_jobs: bool = True) -> None:
        #: Whether sessions may leave settled and unchanged jobs alone: every plugin of the configuration
        #: declares that it writes job status only through the session (see docs/incremental.md).
        self.quiet_jobs = quiet_jobs
        #: The report of the last session that closed, while no session has opened since; else ``None``.
        self.closed: SnapshotChanges | None = None
        #: The plugins that recorded a failure in that session (they open afresh in the next one).
        self.failed: frozenset[str] = frozenset()
        #: That session's node classes, when it grouped nodes and no plugin failed in it.
        self.node_classes: NodeClasses | None = None
        #: The ready nodes' allocatable resources in the last snapshot loaded, summed.
        self.allocatable: PartSums[str] | None = None
        #: The jobs that session left settled (see :meth:`Session.unsettled_jobs
        #: <volcanolib.framework.session.Session.unsettled_jobs>`), by uid.
        self.settled: set[str] = set()
        #: Per queue, the allocated requests of its jobs at that session's close.
        self.job_sums: JobSums | None = None

    def delta(self, snapshot: ClusterInfo) -> SnapshotDelta | None:
        """The snapshot's delta when it follows the last closed session's snapshot, else ``None``.

        Also ``None`` when the delta names more than half the snapshot's
        nodes and more than half its jobs: updating what was kept would then
        cost more than computing it afresh (the session after a first
        placement, say). Most nodes changing with few jobs (a few hundred
        pods arriving and leaving on a small cluster) still resumes: the
        work of a resume follows the jobs and tasks that changed.
        """
        delta = snapshot.delta
        if delta is None or self.closed is None or delta.since is not self.closed:
            return None
        if 2 * len(delta.nodes) > len(snapshot.node_list) and 2 * len(delta.jobs) > len(snapshot.jobs):
            return None
        return delta

    def opened(self) -> None:
        """A session opens: until it closes, nothing kept may be trusted by another."""
        self.closed = None

    def hand_over(self, changes: SnapshotChanges | None, failed: frozenset[str], classes: NodeClasses | None) -> None:
        """A session closed after reporting ``changes`` to the cache: keep what the next one may reuse."""
        self.closed = changes
        self.failed = failed
        self.node_classes = classes if changes is not None and not failed else None
        if changes is None or failed:
            self.settled = set()
