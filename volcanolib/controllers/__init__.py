"""Controllers: Volcano's controllers as pure logic (events in, changes out).

:mod:`volcanolib.controllers.job` holds the job controller and
:mod:`volcanolib.controllers.queue` the queue controller; replay drives the
job controller from its event loop, and ``volcanolib controllers`` drives
both against a live cluster.
"""

from volcanolib.controllers.job import (
    Change,
    CreateObject,
    CreatePod,
    CreatePodGroup,
    DeleteObject,
    DeletePod,
    DeletePodGroup,
    JobController,
    JobState,
    JobStatus,
    PodCounts,
    UpdatePodGroup,
)

__all__ = [
    "Change",
    "CreateObject",
    "CreatePod",
    "CreatePodGroup",
    "DeleteObject",
    "DeletePod",
    "DeletePodGroup",
    "JobController",
    "JobState",
    "JobStatus",
    "PodCounts",
    "UpdatePodGroup",
]
