"""Kubernetes and Volcano objects as volcanolib reads, checks and makes them.

Shared by the loader, live, controllers and replay:


- :mod:`~volcanolib.manifests.fields`: typed access to a manifest's fields,
  each error one line naming the file, object and field (``Ref``);
- :mod:`~volcanolib.manifests.documents`: reading YAML and JSON files of
  manifests, fast;
- :mod:`~volcanolib.manifests.pods`: pods as tasks (requests, status,
  priority) and PodGroups from their manifests;
- :mod:`~volcanolib.manifests.keys`: the well-known labels and annotations;
- :mod:`~volcanolib.manifests.admission`: Volcano's admission (defaults and
  refusals of Jobs, PodGroups and Queues);
- :mod:`~volcanolib.manifests.owners`: the PodGroup made for the pods of one
  owner;
- :mod:`~volcanolib.manifests.workloads`: the pods of Deployments,
  ReplicaSets and StatefulSets.

.. versionadded:: 0.2
"""

from volcanolib.manifests import admission, documents, fields, keys, owners, pods, workloads
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
    "admission",
    "admit_job",
    "default_job",
    "default_pod_group",
    "default_queue",
    "documents",
    "fields",
    "keys",
    "owner_group",
    "owners",
    "pods",
    "read_policies",
    "validate_job",
    "validate_pod_group",
    "validate_queue",
    "workloads",
]
