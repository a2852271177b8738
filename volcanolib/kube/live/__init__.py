"""Live scheduling of a Kubernetes cluster (extra ``kube``).

:class:`KubernetesCache` is an :class:`~volcanolib.cache.memory.InMemoryCache`
kept in step with a cluster by list and watch, that binds, evicts and writes
status through the API server; give it to a
:class:`~volcanolib.scheduler.Scheduler` as any other cache::

    from volcanolib import Scheduler
    from volcanolib.kube.live import KubernetesCache, load_api

    cache = KubernetesCache(load_api(), scheduler_names=["volcano"])
    cache.start()
    cache.wait_ready()
    Scheduler(cache).run(stop)

The ``kubernetes`` and ``prometheus-client`` packages are imported only when
used; without them, using this package raises a one-line error naming the extra.
"""

from __future__ import annotations

from typing import TYPE_CHECKING, Any

from volcanolib.kube.live._client import KUBE_EXTRA, ApiError, KubeApi, load_api

if TYPE_CHECKING:
    from volcanolib.kube.live.cache import KubernetesCache
    from volcanolib.kube.live.leader import LeaseElector

__all__ = ["KUBE_EXTRA", "ApiError", "KubeApi", "KubernetesCache", "LeaseElector", "load_api"]


def __getattr__(name: str) -> Any:
    if name == "KubernetesCache":
        from volcanolib.kube.live.cache import KubernetesCache

        return KubernetesCache
    if name == "LeaseElector":
        from volcanolib.kube.live.leader import LeaseElector

        return LeaseElector
    raise AttributeError(name)
