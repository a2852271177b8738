"""shuffle: evict the running tasks the plugins want rescheduled.

.. versionadded:: 0.2
"""

from __future__ import annotations

import logging
from typing import TYPE_CHECKING, ClassVar, Final

from volcanolib.api.task import TaskStatus
from volcanolib.errors import CacheError, ResourceError
from volcanolib.framework.action import BaseAction
from volcanolib.framework.arguments import NoArguments

if TYPE_CHECKING:
    from volcanolib.framework.session import Session

__all__ = ["REASON", "Shuffle"]

log = logging.getLogger(__name__)

#: The reason recorded with every eviction of the action.
REASON: Final = "shuffle"


class Shuffle(BaseAction[NoArguments]):
    """Evict the Running tasks the plugins choose (``victim_tasks``), to be scheduled again.

    Every Running task of the session's jobs is offered, jobs in snapshot
    order and each job's tasks in its order; the plugins' answer is joined
    within a tier and the first tier that names any task decides
    (``victim_tasks``). Each chosen task is evicted at once, with the reason
    ``shuffle``; an eviction the cache refuses is logged and the others go
    on. No plugin implementing the hook means nothing is evicted. Takes no
    arguments.
    """

    name: ClassVar[str] = "shuffle"
    Arguments = NoArguments

    def execute(self, ssn: Session) -> None:
        """Offer every Running task to ``victim_tasks`` and evict the chosen ones."""
        running = [t for job in ssn.jobs.values() for t in job.tasks.values() if t.status is TaskStatus.RUNNING]
        if not running:
            return
        for victim in ssn.victim_tasks(running):
            if victim.status is not TaskStatus.RUNNING:
                continue  # named twice, or already evicted
            try:
                ssn.evict(victim, REASON)
            except (CacheError, ResourceError) as exc:
                log.error("shuffle: evicting task %s failed: %s", victim.key, exc)
