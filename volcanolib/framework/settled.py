"""Settled jobs: the jobs a session that follows another leaves alone, and the jobs its close need not write.

A session that follows the previous one of its scheduler (its snapshot has
a :attr:`~volcanolib.framework.session.Session.delta`) skips the jobs that
session left *settled* and the cache did not change since, and at close
writes only the jobs whose status may have changed. Both apply only when
every plugin declares ``Traits(status_through_session=True)``; see the
incremental contract (``docs/incremental.md``). :class:`SettledJobs` is the
part of :class:`~volcanolib.framework.session.Session` that keeps this
bookkeeping.
"""

from __future__ import annotations

from collections.abc import Iterable
from typing import TYPE_CHECKING, cast

from volcanolib.api.hypernode import JOB_ALLOCATED_HYPER_NODE
from volcanolib.api.job import JobInfo, PodGroup, PodGroupPhase

if TYPE_CHECKING:
    from volcanolib.api.cluster import SnapshotDelta
    from volcanolib.framework.carry import Carry

__all__ = ["SettledJobs"]


class SettledJobs:
    """The settled-job bookkeeping of a session (a base of :class:`~volcanolib.framework.session.Session`)."""

    # What the session holds, as this part reads it.
    jobs: dict[str, JobInfo]
    delta: SnapshotDelta | None
    _carry: Carry | None
    _touched_jobs: set[str]
    _baseline: dict[str, tuple[object, ...]]
    _marks: dict[str, tuple[object, ...]]
    _settled: set[str]
    _unsettled: list[JobInfo]
    _woken: set[str]

    def _load_settled(self, carry: Carry | None) -> None:
        """Note which jobs the previous session left settled, and each other job's status as loaded."""
        baseline, marks = self._baseline, self._marks
        delta = self.delta
        settled = self._settled = carry.settled - delta.jobs if carry is not None and delta is not None else set()
        jobs = self.jobs
        unsettled = self._unsettled = (
            [job for uid, job in jobs.items() if uid not in settled] if settled else list(jobs.values())
        )
        follows = delta is not None and self._quiet
        for job in unsettled:
            baseline[job.uid] = _status_signature(job.pod_group)
            if follows:
                marks[job.uid] = _job_mark(job)

    def _settled_after(self, candidates: list[JobInfo]) -> set[str]:
        """The jobs settled once this session closed (``candidates``: its :meth:`unsettled_jobs`), for the next."""
        if not self._quiet:
            return set()
        settled = self._settled
        settled -= self._woken
        settled.update(job.uid for job in candidates if _settles(job))
        return settled

    @property
    def _quiet(self) -> bool:
        """Whether settled and unchanged jobs may be left alone: every plugin declares ``status_through_session``."""
        carry = self._carry
        return _QUIET_JOBS and carry is not None and carry.quiet_jobs

    def unsettled_jobs(self) -> list[JobInfo]:
        """The jobs that may still need an action or a status write in this session, in :attr:`jobs` order.

        Every job, except those the previous session of the same scheduler
        left *settled* and that have not changed since: every task placed
        and none pending or pipelined, ready, its PodGroup past Pending, no
        fit error noted. For such a job ``enqueue``, ``allocate`` and
        ``backfill`` have nothing to do and its status stays as written, so
        they and ``gang``'s close walk only these jobs. A settled job whose
        task changes status in this session (an eviction, say), or whose
        condition a plugin sets with :meth:`update_pod_group_condition`, is
        in the list again from then on; a plugin changing a job in some other
        way calls :meth:`unsettle` first. Settled jobs are left out only when
        every plugin declares ``Traits(status_through_session=True)``; see
        the incremental contract (``docs/incremental.md``).

        .. versionadded:: 0.2
        """
        if not self._settled:
            return list(self.jobs.values())
        woken = self._woken
        if not woken:
            return list(self._unsettled)
        settled = self._settled
        return [job for uid, job in self.jobs.items() if uid not in settled or uid in woken]

    def settled_jobs(self) -> list[JobInfo]:
        """The jobs left out of :meth:`unsettled_jobs`: settled in the previous session, not changed since.

        .. versionadded:: 0.2
        """
        settled, woken = self._settled, self._woken
        if not settled:
            return []
        return [job for uid, job in self.jobs.items() if uid in settled and uid not in woken]

    def unsettle(self, job: JobInfo) -> None:
        """Count a job among :meth:`unsettled_jobs` from now on, so that close writes its status if it changed.

        For a plugin about to change a job in a way the session does not see
        (a note or a PodGroup field set directly): call it first. Task status
        changes and :meth:`update_pod_group_condition` do it themselves.

        .. versionadded:: 0.2
        """
        uid = job.uid
        if uid not in self._settled or uid in self._woken:
            return
        self._woken.add(uid)
        if uid not in self._baseline:
            self._baseline[uid] = _status_signature(job.pod_group)
            self._marks[uid] = _job_mark(job)

    def _jobs_to_write(self, candidates: list[JobInfo]) -> Iterable[JobInfo]:
        """The jobs among ``candidates`` (:meth:`unsettled_jobs`) whose status close must compute and hand to the cache.

        Every one, unless the snapshot followed the previous one
        (:attr:`delta`): then a job the cache did not change since, whose
        tasks this session did not change, and whose PodGroup and notes are
        as loaded is left out. Its status is a function of those tasks and
        that PodGroup, which the previous session's close computed and the
        cache holds, so computing it again would change nothing.
        """
        delta = self.delta
        if delta is None or not self._quiet:
            return candidates
        named, touched, marks = delta.jobs, self._touched_jobs, self._marks
        out = []
        for job in candidates:
            uid = job.uid
            if uid in named or uid in touched or job.nodes_fit_errors:
                out.append(job)
                continue
            loaded, now = marks.get(uid), _job_mark(job)
            if loaded is None or loaded[1:] != now[1:]:
                out.append(job)
            else:
                # The start time enqueue notes lasts one session: the copy goes back to the cache's, as
                # the cache would reset it for the next snapshot.
                job.schedule_start_timestamp = cast("float | None", loaded[0])
        return out


#: Whether close leaves out the jobs a following session left alone (tests switch it off to compare).
_QUIET_JOBS = True


def _settles(job: JobInfo) -> bool:
    """Whether a job is settled after close (see :meth:`Session.unsettled_jobs`)."""
    return bool(
        job.tasks
        and not job.nodes_fit_errors
        and job.pod_group.phase is not PodGroupPhase.PENDING
        and not job.pending_task_num()
        and not job.waiting_task_num()
        and job.is_ready()
    )


def _job_mark(job: JobInfo) -> tuple[object, ...]:
    """What a session may change of a job besides its tasks: the start time enqueue notes, then the
    PodGroup's phase, annotations and conditions (each object and its fields), the priority and the
    fit error message."""
    pg = job.pod_group
    mark: list[object] = [
        job.schedule_start_timestamp,  # first: a per-session note, not compared
        pg.phase,
        pg.annotations,
        job.priority,
        job.job_fit_errors,
    ]
    for c in pg.conditions:
        mark += (c, c.type, c.status, c.reason, c.message, c.transition_id, c.last_transition_time)
    return tuple(mark)


def _status_signature(pg: PodGroup) -> tuple[object, ...]:
    """A PodGroup's status as a session compares it: phase, counts, the HyperNode annotation and each condition.

    Conditions compare without their transition id and time (as
    :meth:`~volcanolib.api.job.PodGroupCondition.same_as` does). One flat
    tuple per job: a session takes one of every job when it loads.
    """
    signature: list[object] = [
        pg.phase,
        pg.running,
        pg.succeeded,
        pg.failed,
        pg.annotations.get(JOB_ALLOCATED_HYPER_NODE),
    ]
    for c in pg.conditions:
        signature += (c.type, c.status, c.reason, c.message)
    return tuple(signature)
