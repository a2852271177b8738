"""Kubernetes manifests -> the volcanolib model.

Read Nodes, Pods, PodGroups, Queues, PriorityClasses and Volcano Jobs as
``kubectl get -o yaml`` / ``-o json`` prints them and build the objects an
:class:`~volcanolib.cache.memory.InMemoryCache` holds::

    from volcanolib.kube import load_manifests

    cluster = load_manifests(["cluster-dump.yaml"], scheduler_name="volcano")
    cache = cluster.to_cache()
"""

from volcanolib.kube.jobs import JobExpansion, expand_job
from volcanolib.kube.loader import Cluster, ManifestLoader, load_manifests
from volcanolib.manifests.documents import parse_documents, read_documents, source_name
from volcanolib.manifests.pods import PriorityClassInfo, pod_request

__all__ = [
    "Cluster",
    "JobExpansion",
    "ManifestLoader",
    "PriorityClassInfo",
    "expand_job",
    "load_manifests",
    "parse_documents",
    "pod_request",
    "read_documents",
    "source_name",
]
