"""The well-known labels and annotations the scheduler, the job controller and the loaders read and write.

Each key is defined once: those a task's data model reads live in
:mod:`volcanolib.api.task` (which imports nothing from here) and are
re-exported, the others are defined here.

.. versionadded:: 0.2
"""

from __future__ import annotations

from typing import Final

from volcanolib.api.hypernode import JOB_ALLOCATED_HYPER_NODE
from volcanolib.api.task import (
    GROUP_NAME_ANNOTATION,
    PREEMPTABLE_KEY,
    TASK_PRIORITY_KEY,
    TASK_SPEC_KEY,
    TEMPLATE_UID_KEY,
)

__all__ = [
    "GROUP_MIN_MEMBER_KEY",
    "GROUP_NAME_ANNOTATION",
    "HIERARCHY_KEY",
    "HIERARCHY_WEIGHTS_KEY",
    "JOB_ALLOCATED_HYPER_NODE",
    "JOB_NAMESPACE_KEY",
    "JOB_NAME_KEY",
    "JOB_VERSION_KEY",
    "PREEMPTABLE_KEY",
    "QUEUE_NAME_KEY",
    "RETRY_COUNT_KEY",
    "SCHEDULING_QUEUE_KEY",
    "TASK_INDEX_KEY",
    "TASK_PRIORITY_KEY",
    "TASK_SPEC_KEY",
    "TEMPLATE_UID_KEY",
]

#: The annotation (and label) the job controller sets to a pod's index within its task.
TASK_INDEX_KEY: Final = "volcano.sh/task-index"
#: The annotation (and label) naming a pod's Volcano Job.
JOB_NAME_KEY: Final = "volcano.sh/job-name"
#: The annotation (and label) naming the namespace of a pod's Volcano Job.
JOB_NAMESPACE_KEY: Final = "volcano.sh/job-namespace"
#: The annotation (and label) naming the queue of a pod's Volcano Job.
QUEUE_NAME_KEY: Final = "volcano.sh/queue-name"
#: The annotation holding the version of the Volcano Job a pod was made for.
JOB_VERSION_KEY: Final = "volcano.sh/job-version"
#: The annotation counting how many times a Volcano Job was restarted.
RETRY_COUNT_KEY: Final = "volcano.sh/job-retry-count"
#: The annotation naming a queue: on a pod without a PodGroup, the queue of the group made for it;
#: on a namespace, the queue of its PodGroups that name ``default``.
SCHEDULING_QUEUE_KEY: Final = "scheduling.volcano.sh/queue-name"
#: The annotation of a pod's owner setting ``minMember`` of the group made for its pods.
GROUP_MIN_MEMBER_KEY: Final = "scheduling.volcano.sh/group-min-member"
#: The Queue annotation naming its place in a hierarchy (``root/a/b``).
HIERARCHY_KEY: Final = "volcano.sh/hierarchy"
#: The Queue annotation giving the weights along its hierarchy (``1/2/3``).
HIERARCHY_WEIGHTS_KEY: Final = "volcano.sh/hierarchy-weights"
