"""A kit for testing plugins and actions: builders, a recording cache, one-session helpers.

The builders are those of :mod:`volcanolib.api.builders` (also exported by
:mod:`volcanolib`), re-exported here for tests written against this module.

>>> from volcanolib.testing import build_node, build_pod_group, build_task, FakeCache, run_session
>>> cache = FakeCache()
>>> cache.add_node(build_node("n1", cpu="4", memory="8Gi"))
>>> cache.add_pod_group(build_pod_group("pg1", min_member=1, phase="Inqueue"))
>>> cache.add_task(build_task("pg1-t-0", job="pg1", cpu="1", memory="1Gi"))
"""

from __future__ import annotations

from collections.abc import Sequence
from typing import Any

from volcanolib.api.builders import build_node, build_pod_group, build_queue, build_resource, build_task
from volcanolib.api.task import TaskInfo
from volcanolib.cache.memory import InMemoryCache
from volcanolib.framework.config import SchedulerConfig, parse_config
from volcanolib.framework.registry import Registry
from volcanolib.framework.session import Session
from volcanolib.scheduler import CycleResult, Scheduler

__all__ = [
    "FakeCache",
    "build_node",
    "build_pod_group",
    "build_queue",
    "build_resource",
    "build_task",
    "open_session",
    "run_session",
]


class FakeCache(InMemoryCache):
    """An :class:`InMemoryCache` that records what the scheduler asked of it.

    ``bound`` maps task keys (``namespace/name``) to node names, in bind
    order; ``evicted`` lists evicted task keys in order.
    """

    def __init__(self, **kwargs: Any) -> None:
        super().__init__(**kwargs)
        self.bound: dict[str, str] = {}
        self.evicted: list[str] = []

    def bind(self, tasks: Sequence[TaskInfo]) -> list[tuple[TaskInfo, str]]:
        """Bind and record (every task sent, bound or not); return the failures."""
        for task in tasks:
            self.bound[task.key] = task.node_name
        return super().bind(tasks)

    def evict(self, task: TaskInfo, reason: str) -> None:
        """Evict and record."""
        super().evict(task, reason)
        self.evicted.append(task.key)


def _config(conf: str | SchedulerConfig) -> SchedulerConfig:
    return conf if isinstance(conf, SchedulerConfig) else parse_config(conf)


def run_session(
    cache: InMemoryCache,
    conf: str | SchedulerConfig,
    *,
    seed: int = 0,
    registry: Registry | None = None,
) -> CycleResult:
    """Run one full cycle (open, actions, close) of ``conf`` over ``cache``."""
    return Scheduler(cache, _config(conf), seed=seed, registry=registry).run_once()


def open_session(
    cache: InMemoryCache,
    conf: str | SchedulerConfig,
    *,
    seed: int = 0,
    registry: Registry | None = None,
) -> Session:
    """Open a session of ``conf`` over ``cache`` without running any action.

    Call the session's combinators or actions directly, then ``close()`` it.
    """
    scheduler = Scheduler(cache, _config(conf), seed=seed, registry=registry)
    ssn = scheduler.new_session()
    ssn.open()
    return ssn
