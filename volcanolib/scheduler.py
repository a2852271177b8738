"""Scheduler: runs sessions over a cache, one cycle at a time or every period."""

from __future__ import annotations

import logging
import os
import threading
import time
from collections.abc import Callable, Mapping
from pathlib import Path
from typing import Any

import attrs

from volcanolib._gc import gc_paused
from volcanolib.api.task import TaskInfo, TaskStatus
from volcanolib.cache.protocol import Cache
from volcanolib.errors import ConfigError, PluginError
from volcanolib.framework.config import DEFAULT_CONFIG, SchedulerConfig, load_config, parse_config
from volcanolib.framework.dispatch import compile_tables
from volcanolib.framework.registry import PluginHost, Registry, one_line
from volcanolib.framework.session import Session

__all__ = ["CycleResult", "Scheduler"]

log = logging.getLogger(__name__)


@attrs.frozen
class CycleResult:
    """What one scheduling cycle decided."""

    session_uid: str
    #: Tasks sent to the binder, with their node.
    binds: tuple[tuple[TaskInfo, str], ...]
    #: Tasks sent to the evictor, with the reason.
    evictions: tuple[tuple[TaskInfo, str], ...]
    #: Tasks left pipelined at the end of the session, with their node.
    pipelined: tuple[tuple[TaskInfo, str], ...]
    #: Seconds spent: ``snapshot``, ``open``, one entry per action, ``close``, ``session``.
    timings: Mapping[str, float]
    #: Plugin failures recorded during the cycle.
    plugin_errors: tuple[PluginError, ...] = ()
    #: Whether the actions ran (false when a plugin failed at session open).
    ran: bool = True
    #: The closed session, for inspection (jobs, nodes, fit errors).
    session: Session | None = attrs.field(default=None, repr=False)


class Scheduler:
    """Runs scheduling cycles over a cache.

    :param cache: the cluster mirror, e.g. an
        :class:`~volcanolib.cache.memory.InMemoryCache`.
    :param config: a parsed configuration, YAML text, or a path to a
        volcano-scheduler.conf file (which is then reloaded when it changes);
        the default configuration when omitted.
    :param seed: seeds the tie-break between equally scored nodes, so the
        same input gives the same decisions.
    :param registry: where plugins and actions are found.
    :param pause_gc: pause Python's cyclic garbage collector during each
        cycle (a cycle runs about a third faster on a large cluster; the
        collector resumes between cycles).
    :raises ConfigError: when the configuration is invalid at start.
    """

    def __init__(
        self,
        cache: Cache,
        config: SchedulerConfig | str | os.PathLike[str] | None = None,
        *,
        seed: int = 0,
        period: float = 1.0,
        registry: Registry | None = None,
        clock: Callable[[], float] = time.time,
        pause_gc: bool = True,
    ) -> None:
        self.cache = cache
        self.pause_gc = pause_gc
        self.seed = seed
        self.period = period
        self.clock = clock
        self.registry = registry or Registry()
        self._config_path: Path | None = None
        self._config_mtime: float | None = None
        self._config_error: str | None = None
        self._cycle = 0
        source = str(config) if isinstance(config, os.PathLike) else None
        try:
            if isinstance(config, os.PathLike):
                self._config_path = Path(config)
                self._config_mtime = self._mtime()
                parsed = load_config(self._config_path)
            elif isinstance(config, str):
                parsed = parse_config(config)
            else:
                parsed = config or DEFAULT_CONFIG
        except ConfigError:
            raise
        except Exception as exc:  # e.g. a file that is not UTF-8 text
            raise ConfigError(f"cannot load: {one_line(exc)}", source=source) from None
        self._install(parsed)

    def _install(self, config: SchedulerConfig) -> None:
        """Build the plugins and actions of a configuration; install it only if all is well.

        Building parses every plugin's and action's declared arguments, so a
        value of the wrong type is refused here rather than in a cycle.

        :raises ConfigError: for an invalid configuration, including an
            argument of the wrong type (naming the plugin or action and the key).
        :raises PluginError: when a plugin or action cannot be loaded.
        """
        host = PluginHost(config, self.registry)
        tables = compile_tables(host)
        self.config = config
        self.host = host
        self.tables = tables

    def _mtime(self) -> float | None:
        try:
            return self._config_path.stat().st_mtime_ns if self._config_path else None
        except OSError:
            return None

    def reload_config(self) -> bool:
        """Reload the configuration file if it changed.

        An invalid new file (whatever the failure: unreadable, bad YAML, an
        unknown or broken plugin, bad arguments) keeps the last good
        configuration running. The error is logged once: an unchanged file is
        not read again, and a change that fails the same way is not logged
        again. :attr:`config_error` says why the file was refused.

        :returns: whether a new configuration was installed.
        """
        if self._config_path is None:
            return False
        mtime = self._mtime()
        if mtime == self._config_mtime:
            return False
        self._config_mtime = mtime
        try:
            config = load_config(self._config_path)
            self._install(config)
        except Exception as exc:
            if isinstance(exc, (ConfigError, PluginError)):
                message = str(exc)
            else:
                message = str(ConfigError(f"cannot load: {one_line(exc)}", source=str(self._config_path)))
            message = " ".join(message.split("\n"))
            if message != self._config_error:
                log.error("keeping the last good configuration: %s", message)
            self._config_error = message
            return False
        self._config_error = None
        log.info("configuration reloaded from %s", self._config_path)
        return True

    @property
    def config_error(self) -> str | None:
        """Why the last reload was refused, or ``None``."""
        return self._config_error

    def new_session(self) -> Session:
        """A session on the current configuration, not yet open."""
        self._cycle += 1
        return Session(
            self.cache,
            self.config,
            self.tables,
            self.host.plugins,
            seed=self.seed + self._cycle - 1,
            uid=f"cycle-{self._cycle}",
            clock=self.clock,
        )

    def run_once(self, *, before_actions: Callable[[Session], Any] | None = None) -> CycleResult:
        """Run one cycle: open a session, run the actions in order, close it.

        A plugin failing at session open skips the actions (the cycle is
        reported, not half-run); a plugin failing during an action is
        recorded and the rest of the cycle goes on.

        :param before_actions: called with the open session before the first action.
        """
        with gc_paused(self.pause_gc):
            return self._cycle_once(before_actions)

    def _cycle_once(self, before_actions: Callable[[Session], Any] | None) -> CycleResult:
        timings: dict[str, float] = {}
        ssn = self.new_session()
        start = time.perf_counter()
        ssn.load(self.cache.snapshot())
        t1 = time.perf_counter()
        timings["snapshot"] = t1 - start
        ran = True
        try:
            ssn.prepare()
        except PluginError as err:
            ssn.record_plugin_error(err)
            ran = False
        t2 = time.perf_counter()
        timings["open"] = t2 - t1
        if ran:
            if before_actions is not None:
                before_actions(ssn)
            for action in self.host.actions:
                a0 = time.perf_counter()
                try:
                    action.execute(ssn)
                except PluginError as err:
                    ssn.record_plugin_error(err)
                timings[action.name] = timings.get(action.name, 0.0) + time.perf_counter() - a0
        t3 = time.perf_counter()
        pipelined = tuple(
            (task, task.node_name) for job in ssn.jobs.values() for task in job.tasks_in(TaskStatus.PIPELINED)
        )
        if ran:
            ssn.close()
        timings["close"] = time.perf_counter() - t3
        timings["session"] = time.perf_counter() - start
        return CycleResult(
            session_uid=ssn.uid,
            binds=tuple(ssn.binds),
            evictions=tuple(ssn.evictions),
            pipelined=pipelined,
            timings=timings,
            plugin_errors=tuple(ssn.plugin_errors),
            ran=ran,
            session=ssn,
        )

    def run(self, stop: threading.Event, *, on_cycle: Callable[[CycleResult], Any] | None = None) -> None:
        """Run a cycle every period until ``stop`` is set.

        The next cycle starts one period after the previous one finished; the
        configuration file is checked for changes before each cycle. A cycle
        that fails outright (a cache or an action raising, not a plugin) is
        logged and the next cycle runs on a fresh snapshot.
        """
        while not stop.is_set():
            self.reload_config()
            try:
                result = self.run_once()
            except Exception:  # a failing cache or action: report it, the next cycle starts afresh
                log.exception("scheduling cycle failed")
            else:
                if on_cycle is not None:
                    on_cycle(result)
            stop.wait(self.period)
