"""Controllers: Volcano's controllers as pure logic (events in, changes out).

:mod:`volcanolib.controllers.job` holds the job controller; replay drives it
from its event loop, and a live controller could drive the same code.
"""

from volcanolib.controllers.job import (
    Change,
    CreatePod,
    CreatePodGroup,
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
    "CreatePod",
    "CreatePodGroup",
    "DeletePod",
    "DeletePodGroup",
    "JobController",
    "JobState",
    "JobStatus",
    "PodCounts",
    "UpdatePodGroup",
]
