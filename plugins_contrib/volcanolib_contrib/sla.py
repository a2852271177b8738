"""sla: jobs that have waited longer than their service level are admitted and kept first.

A job's *waiting time* is the PodGroup annotation
``volcano.sh/sla-waiting-time``, else the annotation ``sla-waiting-time``,
else the plugin's ``sla-waiting-time`` argument; each is a Go duration
(``30m``, ``1h2m3s``). An annotation that is not a positive duration is
ignored (with a warning), as Volcano ignores it; a job without any waiting
time has no service level.

* **Job order**: a job with a waiting time goes before a job without one;
  between two jobs with one, the earlier *deadline* (PodGroup creation time
  plus waiting time) goes first; two jobs without one are left to the next
  plugin.
* **Enqueue and pipelining**: once a job has waited its waiting time since
  its PodGroup was created (by the session's clock), the plugin permits it
  to be enqueued (``job_enqueueable``) and its partial placement to be kept
  (``job_pipelined``); before that, and for a job without a waiting time, it
  abstains. A permit in an earlier tier than a rejecting plugin admits the
  job: put ``sla`` in the first tier for it to override quota checks.

.. versionadded:: 0.2
"""

from __future__ import annotations

import logging
from typing import TYPE_CHECKING, Any, ClassVar, Final

import attrs

from volcanolib.api.duration import parse_duration
from volcanolib.framework.arguments import argument, parse_str
from volcanolib.framework.registry import hookimpl
from volcanolib.framework.status import Vote
from volcanolib.framework.traits import Traits

if TYPE_CHECKING:
    from volcanolib.api.job import JobInfo
    from volcanolib.framework.session import Session

__all__ = ["JOB_WAITING_TIME", "JOB_WAITING_TIME_ANNOTATIONS", "SlaArguments", "SlaPlugin"]

log = logging.getLogger(__name__)

#: The argument, and the older annotation, holding the waiting time.
JOB_WAITING_TIME: Final = "sla-waiting-time"
#: The PodGroup annotations read for a job's own waiting time, the first present wins.
JOB_WAITING_TIME_ANNOTATIONS: Final = ("volcano.sh/sla-waiting-time", JOB_WAITING_TIME)


def _positive_duration(value: object) -> str:
    """A Go duration string above zero, returned as written."""
    text = parse_str(value)
    if parse_duration(text) <= 0:
        raise ValueError(f"expected a positive duration, got {text!r}")
    return text


@attrs.frozen
class SlaArguments:
    """The arguments of ``sla``."""

    waiting_time: str = argument(
        key=JOB_WAITING_TIME,
        default="",
        doc="The waiting time of jobs whose PodGroup sets none, as a Go duration (`1h2m3s`); empty: none.",
        parse=_positive_duration,
    )


class SlaPlugin:
    """Job order by service-level deadline; admission of jobs that waited too long.

    :ivar waiting_time: the global waiting time in seconds, ``None`` when not set.
    """

    name: ClassVar[str] = "sla"
    Arguments: ClassVar[type[SlaArguments]] = SlaArguments
    #: A job's key depends on its PodGroup only; admission reads the clock; no job status written.
    traits: ClassVar[Traits] = Traits(local_job_keys=True, status_through_session=True)

    def __init__(self, arguments: SlaArguments) -> None:
        self.arguments = arguments
        self.waiting_time: float | None = parse_duration(arguments.waiting_time) if arguments.waiting_time else None
        # Per session: each job's waiting time in seconds (None: no service level), by uid.
        self._waits: dict[str, float | None] = {}

    @hookimpl
    def on_session_open(self, ssn: Session) -> None:
        """Forget the waiting times read in the previous session."""
        self._waits = {}

    def job_waiting_time(self, job: JobInfo) -> float | None:
        """The job's waiting time in seconds: its PodGroup's, else the global one; ``None`` when neither is set."""
        if job.uid in self._waits:
            return self._waits[job.uid]
        wait = self._annotated(job)
        if wait is None:
            wait = self.waiting_time
        self._waits[job.uid] = wait
        return wait

    @staticmethod
    def _annotated(job: JobInfo) -> float | None:
        annotations = job.pod_group.annotations
        for key in JOB_WAITING_TIME_ANNOTATIONS:
            raw = annotations.get(key)
            if raw is None:
                continue
            try:
                seconds = parse_duration(raw)
            except ValueError as exc:
                log.warning("job %s: annotation %s ignored: %s", job.uid, key, exc)
                continue
            if seconds <= 0:
                log.warning("job %s: annotation %s=%r ignored: not a positive duration", job.uid, key, raw)
                continue
            return seconds
        return None

    @hookimpl
    def job_order(self, ssn: Session, left: JobInfo, right: JobInfo) -> int:
        """Jobs with a waiting time first, the earlier deadline first; 0 when neither has one."""
        lk = self.job_order_key(ssn, left)
        rk = self.job_order_key(ssn, right)
        return -1 if lk < rk else (1 if lk > rk else 0)

    @hookimpl
    def job_order_key(self, ssn: Session, job: JobInfo) -> tuple[Any, ...]:
        """``(0, deadline)`` for a job with a waiting time, ``(1,)`` for one without."""
        wait = self.job_waiting_time(job)
        if wait is None:
            return (1,)
        return (0, job.creation_timestamp + wait)

    def _waited(self, ssn: Session, job: JobInfo) -> Vote:
        wait = self.job_waiting_time(job)
        if wait is None or ssn.clock() - job.creation_timestamp < wait:
            return Vote.ABSTAIN
        return Vote.PERMIT

    @hookimpl
    def job_enqueueable(self, ssn: Session, job: JobInfo) -> Vote:
        """Permit a job that has waited its waiting time; otherwise abstain."""
        return self._waited(ssn, job)

    @hookimpl
    def job_pipelined(self, ssn: Session, job: JobInfo) -> Vote:
        """Permit keeping the placement of a job that has waited its waiting time; otherwise abstain."""
        return self._waited(ssn, job)
