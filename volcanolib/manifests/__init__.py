"""Kubernetes and Volcano objects as volcanolib reads, checks and makes them.

Shared by the manifest loader, replay, the job controller and the live
controllers: :mod:`volcanolib.manifests.admission` holds Volcano's admission
(defaults and refusals of Jobs, PodGroups and Queues),
:mod:`volcanolib.manifests.owners` the PodGroup made for the pods of one
owner, and :mod:`volcanolib.manifests.workloads` the pods of Deployments,
ReplicaSets and StatefulSets.
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
from volcanolib.manifests.owners import OwnerGroup, owner_group
from volcanolib.manifests.workloads import Workloads

__all__ = [
    "OwnerGroup",
    "Policy",
    "QueueFacts",
    "Workloads",
    "admit_job",
    "default_job",
    "default_pod_group",
    "default_queue",
    "owner_group",
    "read_policies",
    "validate_job",
    "validate_pod_group",
    "validate_queue",
]
