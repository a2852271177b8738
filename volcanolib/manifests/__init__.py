"""Kubernetes and Volcano objects as volcanolib reads, checks and makes them.

Shared by the manifest loader, replay, the job controller and the live
controllers: :mod:`volcanolib.manifests.admission` holds Volcano's admission
(defaults and refusals of Jobs, PodGroups and Queues).
"""

from volcanolib.manifests.admission import (
    Policy,
    QueueFacts,
    admit_job,
    default_job,
    default_pod_group,
    default_queue,
    read_policies,
    validate_job,
    validate_pod_group,
    validate_queue,
)

__all__ = [
    "Policy",
    "QueueFacts",
    "admit_job",
    "default_job",
    "default_pod_group",
    "default_queue",
    "read_policies",
    "validate_job",
    "validate_pod_group",
    "validate_queue",
]
