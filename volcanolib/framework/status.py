"""Values plugins return: predicate and validation statuses, votes, events."""

from __future__ import annotations

import enum
from typing import TYPE_CHECKING, ClassVar

import attrs

if TYPE_CHECKING:
    from volcanolib.api.task import TaskInfo

__all__ = ["Code", "Event", "Status", "Vote"]


class Code(enum.IntEnum):
    """The outcome carried by a :class:`Status`."""

    #: The task fits / the job is valid.
    SUCCESS = 0
    #: Does not fit now; evicting other tasks might make it fit (preempt and reclaim try).
    UNSCHEDULABLE = 1
    #: Does not fit, and evicting would not help (preempt and reclaim skip the node).
    UNSCHEDULABLE_AND_UNRESOLVABLE = 2
    #: The plugin failed; treated as a failure that eviction cannot fix.
    ERROR = 3
    #: The plugin does not apply; treated like a failure by the predicate combination.
    SKIP = 4
    #: Not yet decidable; treated like a failure.
    WAIT = 5


@attrs.frozen
class Status:
    """The answer of a predicate or a validator.

    ``plugin`` is filled in by the framework with the configured name of the
    plugin that answered. ``Status.success()`` is a shared singleton, so the
    common path allocates nothing.
    """

    code: Code = Code.SUCCESS
    reasons: tuple[str, ...] = ()
    plugin: str = ""

    _SUCCESS: ClassVar[Status]

    @staticmethod
    def success() -> Status:
        """The shared success status."""
        return _SUCCESS

    @classmethod
    def unschedulable(cls, *reasons: str, plugin: str = "") -> Status:
        """A failure that evicting other tasks might resolve."""
        return cls(Code.UNSCHEDULABLE, reasons, plugin)

    @classmethod
    def unresolvable(cls, *reasons: str, plugin: str = "") -> Status:
        """A failure that evicting other tasks cannot resolve."""
        return cls(Code.UNSCHEDULABLE_AND_UNRESOLVABLE, reasons, plugin)

    @classmethod
    def error(cls, *reasons: str, plugin: str = "") -> Status:
        """The plugin itself failed."""
        return cls(Code.ERROR, reasons, plugin)

    @property
    def ok(self) -> bool:
        """Whether this is a success."""
        return self.code is Code.SUCCESS

    def resolvable_by_eviction(self) -> bool:
        """Whether preempt or reclaim may still use the node (plain Unschedulable)."""
        return self.code in (Code.SUCCESS, Code.UNSCHEDULABLE)

    def message(self) -> str:
        """The reasons as one string."""
        return ", ".join(self.reasons)

    def with_plugin(self, plugin: str) -> Status:
        """This status attributed to ``plugin`` (unchanged if already attributed)."""
        if self.plugin or self.code is Code.SUCCESS:
            return self
        return attrs.evolve(self, plugin=plugin)


_SUCCESS = Status()
Status._SUCCESS = _SUCCESS


class Vote(enum.IntEnum):
    """A plugin's vote on a job (enqueueable, pipelined)."""

    REJECT = -1
    ABSTAIN = 0
    PERMIT = 1


@attrs.define
class Event:
    """What an allocate or deallocate handler receives: the task that moved."""

    task: TaskInfo
