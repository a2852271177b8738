"""What the job controller writes (the changes) and what it tells of a job (its state).

Defined here, documented and imported as :mod:`volcanolib.controllers.job`'s.
"""

from __future__ import annotations

from collections.abc import Mapping
from typing import Any

import attrs

from volcanolib.controllers._states import PodCounts

__all__ = [
    "Change",
    "CreateObject",
    "CreatePod",
    "CreatePodGroup",
    "DeleteObject",
    "DeletePod",
    "DeletePodGroup",
    "JobState",
    "JobStatus",
    "UpdatePodGroup",
]


@attrs.frozen
class CreatePodGroup:
    """Create this PodGroup (a ``scheduling.volcano.sh/v1beta1`` manifest in API form)."""

    manifest: dict[str, Any]


@attrs.frozen
class CreatePod:
    """Create this pod (a ``v1`` Pod manifest in API form, with a fresh ``metadata.uid``)."""

    manifest: dict[str, Any]


@attrs.frozen
class UpdatePodGroup:
    """Update this PodGroup's spec (``minMember``, ``minTaskMember``, ``minResources``); its status stays.

    .. versionadded:: 0.2
    """

    manifest: dict[str, Any]


@attrs.frozen
class DeletePod:
    """Delete this pod; once it is gone the caller reports it with :meth:`JobController.pod_deleted`."""

    namespace: str
    name: str
    #: Why: the action that killed it (``RestartJob``, ``CompleteJob``, ...) or ``JobDeleted``.
    reason: str


@attrs.frozen
class DeletePodGroup:
    """Delete this PodGroup."""

    namespace: str
    name: str


@attrs.frozen
class JobStatus:
    """The job's phase or retry count changed (the status write Volcano makes)."""

    namespace: str
    name: str
    phase: str
    retry_count: int
    #: ``status.version``: +1 on every kill of the whole job.
    version: int = 0


@attrs.frozen
class CreateObject:
    """Create this object a job plugin makes (a Service, ConfigMap, NetworkPolicy or Secret, in API form).

    The ``svc`` plugin makes a headless Service, a ConfigMap of host lists and
    a NetworkPolicy; ``ssh`` a Secret. When ``ssh_key`` is true the writer adds
    a fresh RSA key pair to the Secret (``id_rsa``, ``id_rsa.pub``,
    ``authorized_keys``), as Volcano makes one per job incarnation. Replay
    ignores these objects: none of them changes what the scheduler sees.
    """

    manifest: dict[str, Any]
    ssh_key: bool = False


@attrs.frozen
class DeleteObject:
    """Delete an object a job plugin made (on every kill of the job, as Volcano does)."""

    api_version: str
    kind: str
    namespace: str
    name: str


#: One write of the job controller.
Change = (
    CreatePodGroup | UpdatePodGroup | CreatePod | DeletePod | DeletePodGroup | JobStatus | CreateObject | DeleteObject
)


@attrs.frozen
class JobState:
    """What the controller knows of one job.

    The counts (``pending`` ... ``terminating``) are the job's pods that
    exist now; :attr:`status` holds the counters Volcano writes in the Job's
    status, which lag behind in places (they are zero after a kill pass and
    not recounted while the PodGroup is not admitted), and which the phase
    transitions read.
    """

    namespace: str
    name: str
    #: The job phase (``Pending``, ``Running``, ``Restarting``, ``Completed``, ...).
    phase: str
    retry_count: int
    #: ``status.version``: +1 on every kill of the whole job; stamped on new pods.
    version: int
    min_available: int
    pending: int
    running: int
    succeeded: int
    failed: int
    terminating: int
    #: The counters of the Job's status, as Volcano writes them.
    status: PodCounts
    #: The Job was deleted (:meth:`JobController.delete`).
    deleted: bool = False
    #: ``status.taskStatusCount``: per task, its pods by phase (as Volcano writes it).
    task_status: Mapping[str, Mapping[str, int]] = attrs.field(factory=dict)
    #: ``status.controlledResources``: ``plugin-<name>`` for the plugins whose objects exist.
    controlled_resources: Mapping[str, str] = attrs.field(factory=dict)
    #: ``spec.ttlSecondsAfterFinished``, or ``None``.
    ttl_after_finished: int | None = None
    #: The job's uid (``metadata.uid``).
    uid: str = ""
