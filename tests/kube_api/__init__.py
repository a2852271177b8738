"""An in-process stand-in for the Kubernetes API server, for tests and benchmarks.

It speaks the real wire protocol (JSON over HTTP/1.1, chunked watch streams) for the
resources a scheduler uses; see README.md in this directory for what it implements and
what it does not.
"""

from .bulk import LoadedCluster, cluster_objects, load_cluster, make_node, make_pod, make_podgroup, make_queue
from .errors import ApiError
from .server import KubeApiServer
from .store import Store

__all__ = [
    "ApiError",
    "KubeApiServer",
    "LoadedCluster",
    "Store",
    "cluster_objects",
    "load_cluster",
    "make_node",
    "make_pod",
    "make_podgroup",
    "make_queue",
]
