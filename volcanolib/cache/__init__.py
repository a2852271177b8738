"""The cache that mirrors a cluster, and the protocols a session drives it through."""

from volcanolib.cache.memory import AcceptAll, CacheEvent, InMemoryCache
from volcanolib.cache.protocol import Binder, Cache, Evictor, StatusUpdater
from volcanolib.cache.snapshot import SnapshotCache

__all__ = ["AcceptAll", "Binder", "Cache", "CacheEvent", "Evictor", "InMemoryCache", "SnapshotCache", "StatusUpdater"]
