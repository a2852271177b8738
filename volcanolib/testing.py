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

from collections.abc import Callable, Iterable, Sequence
from typing import Any

import attrs

from volcanolib.api.builders import build_node, build_pod_group, build_queue, build_resource, build_task
from volcanolib.api.task import TaskInfo
from volcanolib.cache.memory import InMemoryCache
from volcanolib.framework.config import Arguments, SchedulerConfig, parse_config
from volcanolib.framework.registry import Registry
from volcanolib.framework.session import Session
from volcanolib.framework.verify import check_resumed
from volcanolib.scheduler import CycleResult, Scheduler

__all__ = [
    "FakeCache",
    "build_node",
    "build_pod_group",
    "build_queue",
    "build_resource",
    "build_task",
    "check_node_classes",
    "check_resume",
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


def check_resume(scheduler: Scheduler, ssn: Session, name: str | None = None) -> tuple[str, ...]:
    """Check that the plugins that resumed in ``ssn`` equal the same plugins opened afresh on it.

    Call it with an open session of ``scheduler`` (``run_once(before_actions=...)``
    hands one over). Each plugin that resumed (or only ``name``) is built
    again with its configuration's arguments and opened afresh on ``ssn``;
    its ``kept_state()`` must equal the resumed one's (see
    ``docs/incremental.md``). A test should also check that the plugin did
    resume in enough sessions, or the comparison proves nothing.

    :returns: the names of the plugins compared (empty when none resumed).
    :raises VerifyError: naming the first plugin whose state differs.

    .. versionadded:: 0.2
    """
    names = tuple(plugin for plugin in ssn.resumed if name is None or plugin == name)
    check_resumed(ssn, dict(scheduler.host.plugins), scheduler.host.build, names)
    return names


def _without_node_classes(config: SchedulerConfig) -> SchedulerConfig:
    configurations = dict(config.configurations)
    for action in ("allocate", "preempt"):
        arguments = config.action_arguments(action)
        configurations[action] = Arguments({**arguments, "nodeClassesEnable": False}, owner=arguments.owner)
    return attrs.evolve(config, configurations=configurations)


def check_node_classes(
    clusters: Iterable[Callable[[], InMemoryCache]],
    conf: str | SchedulerConfig,
    *,
    registry: Registry | None = None,
    seed: int = 0,
) -> int:
    """Check that a configuration's node class keys keep their promises: node classes decide as every node does.

    Each cluster (a function building a fresh cache, so that both runs start
    alike) is scheduled for one cycle with node classes on and with
    ``nodeClassesEnable: false``; the binds, the pipelined tasks and every
    task's fit errors must be the same. Use clusters whose nodes start unlike
    (tasks already running) and tasks that tie, so that the tie-break is
    exercised too.

    :returns: how many tasks got a node class plan over all clusters (check it
        is not zero, or the comparison proves nothing).
    :raises AssertionError: naming the first cluster (by its index) that decided otherwise.

    .. versionadded:: 0.2
    """
    config = _config(conf)
    without = _without_node_classes(config)
    planned = 0
    for index, build in enumerate(clusters):
        runs = []
        for variant in (config, without):
            result = Scheduler(build(), variant, seed=seed, registry=registry).run_once()
            ssn = result.session
            assert ssn is not None
            if variant is config:
                planned += sum(
                    ssn.node_class_plan(task) is not None for job in ssn.jobs.values() for task in job.tasks.values()
                )
            errors = {
                uid: sorted((node, error.reasons) for node, error in fit.nodes.items())
                for job in ssn.jobs.values()
                for uid, fit in job.nodes_fit_errors.items()
            }
            runs.append(
                (
                    [(task.key, node) for task, node in result.binds],
                    sorted((task.key, node) for task, node in result.pipelined),
                    errors,
                )
            )
        assert runs[0] == runs[1], f"cluster {index}: node classes decide otherwise than checking every node"
    return planned
