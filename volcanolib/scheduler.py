"""Scheduler: runs sessions over a cache, one cycle at a time or every period."""

from __future__ import annotations

import logging
import os
import threading
import time
from collections.abc import Callable, Mapping, Sequence
from pathlib import Path
from typing import Any

import attrs

from volcanolib._gc import gc_paused
from volcanolib.api.cluster import ClusterInfo
from volcanolib.api.job import JobInfo
from volcanolib.api.queue import QueueInfo
from volcanolib.api.task import TaskInfo, TaskStatus
from volcanolib.cache.protocol import Cache
from volcanolib.errors import ConfigError, PluginConfigError, PluginError
from volcanolib.framework.carry import Carry
from volcanolib.framework.config import DEFAULT_CONFIG, SchedulerConfig, is_file_name, load_config, parse_config
from volcanolib.framework.dispatch import compile_tables
from volcanolib.framework.registry import PluginHost, Registry, located, one_line
from volcanolib.framework.session import Session
from volcanolib.framework.traits import SETTLED_JOBS, log_fast_paths_off

__all__ = ["CycleResult", "Scheduler"]

log = logging.getLogger(__name__)


@attrs.frozen
class CycleResult:
    """What one scheduling cycle decided."""

    session_uid: str
    #: Tasks bound, with their node: only binds that took effect (see :attr:`failed_binds`).
    binds: tuple[tuple[TaskInfo, str], ...]
    #: Tasks sent to the evictor, with the reason.
    evictions: tuple[tuple[TaskInfo, str], ...]
    #: Tasks left pipelined at the end of the session, with their node.
    pipelined: tuple[tuple[TaskInfo, str], ...]
    #: Seconds spent: ``snapshot``, ``open``, one entry per action, ``close``, ``session``.
    timings: Mapping[str, float]
    #: Plugin failures recorded during the cycle.
    plugin_errors: tuple[PluginError, ...] = ()
    #: Tasks the cycle decided to bind that did not bind, with their node and the reason
    #: (the binder's, or why the cache refused); the cache has them Pending again.
    failed_binds: tuple[tuple[TaskInfo, str, str], ...] = ()
    #: Whether the actions ran (false when a plugin failed at session open).
    ran: bool = True
    #: The plugins that resumed (``on_session_resume``) rather than opened afresh, in tier order.
    resumed: tuple[str, ...] = ()
    #: The closed session, for inspection (jobs, nodes, fit errors); read it before the next cycle,
    #: whose snapshot may reuse, and whose session may change, the objects it left unchanged.
    session: Session | None = attrs.field(default=None, repr=False)


class _BindLedger:
    """The cache as one session sees it: every call goes to the cache; failed binds are kept.

    A cache reports the tasks that did not bind from :meth:`Cache.bind`;
    the cycle's result lists them apart from the binds that took effect.
    """

    def __init__(self, cache: Cache) -> None:
        self._cache = cache
        #: Why each task that did not bind failed, by task uid.
        self.failed: dict[str, str] = {}

    def snapshot(self) -> ClusterInfo:
        return self._cache.snapshot()

    def bind(self, tasks: Sequence[TaskInfo]) -> Sequence[tuple[TaskInfo, str]] | None:
        failed = self._cache.bind(tasks)
        for task, reason in failed or ():
            self.failed[task.uid] = reason
        return failed

    def evict(self, task: TaskInfo, reason: str) -> None:
        self._cache.evict(task, reason)

    def update_job_status(self, job: JobInfo, update_pod_group: bool) -> None:
        self._cache.update_job_status(job, update_pod_group)

    def update_queue_status(self, queue: QueueInfo) -> None:
        self._cache.update_queue_status(queue)

    def __getattr__(self, name: str) -> Any:  # anything else a cache offers (events, get_task, ...)
        return getattr(self._cache, name)


class Scheduler:
    """Runs scheduling cycles over a cache.

    :param cache: the cluster mirror, e.g. an
        :class:`~volcanolib.cache.memory.InMemoryCache`.
    :param config: a parsed configuration, YAML text, or a path to a
        volcano-scheduler.conf file (which is then reloaded when it changes);
        the default configuration when omitted. A string is configuration
        text when it is YAML for a mapping (every configuration is: it has
        ``actions``); a one-line string that is not (``"sched.conf"``) is a
        file name, and must name an existing file. Without
        ``volcanolib-contrib`` installed, the default configuration runs
        without its plugins, with one warning.
    :param seed: seeds the tie-break between equally scored nodes, so the
        same input gives the same decisions.
    :param registry: where plugins and actions are found.
    :param pause_gc: pause Python's cyclic garbage collector during each
        cycle (a cycle runs about a third faster on a large cluster; the
        collector resumes between cycles).
    :param verify: verify mode: every shortcut of an incremental cycle is
        checked against computing afresh (resumed plugins, node classes kept,
        jobs left alone at close), and a difference raises
        :class:`~volcanolib.errors.VerifyError` naming the plugin; see
        ``docs/incremental.md``. Slower; the decisions are the same.
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
        verify: bool = False,
    ) -> None:
        self.cache = cache
        self.verify = verify
        self.pause_gc = pause_gc
        self.seed = seed
        self.period = period
        self.clock = clock
        self.registry = registry or Registry()
        self._config_path: Path | None = None
        self._config_mtime: float | None = None
        self._config_error: str | None = None
        self._cycle = 0
        if isinstance(config, str) and is_file_name(config):
            if not Path(config).is_file():
                raise ConfigError(
                    "no such file (a string is configuration text when it is a YAML mapping, "
                    "otherwise the name of a file; pass a pathlib.Path to name a file)",
                    source=config,
                )
            config = Path(config)
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
        if parsed is DEFAULT_CONFIG:
            parsed = self.registry.default_config()
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
        try:
            tables = compile_tables(host)
        except PluginConfigError as exc:
            raise located(exc, config) from exc
        self.config = config
        self.host = host
        self.tables = tables
        #: The fast paths the configuration's plugins switch off, each with the plugins that do (logged once).
        self.fast_paths_off = log_fast_paths_off(config.source, host.plugins, tables)
        # New plugins start with nothing kept.
        self._carry = Carry(quiet_jobs=SETTLED_JOBS not in self.fast_paths_off)

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
        return self._new_session(self.cache)

    def _new_session(self, cache: Cache, seed: int | None = None) -> Session:
        self._cycle += 1
        return Session(
            cache,
            self.config,
            self.tables,
            self.host.plugins,
            seed=self.seed + self._cycle - 1 if seed is None else seed,
            uid=f"cycle-{self._cycle}",
            clock=self.clock,
            carry=self._carry,
            verify=self.host.build if self.verify else None,
        )

    def run_once(
        self, *, before_actions: Callable[[Session], Any] | None = None, seed: int | None = None
    ) -> CycleResult:
        """Run one cycle: open a session, run the actions in order, close it.

        A scheduler given a configuration file first checks the file and
        reloads it if it changed (:meth:`reload_config`: an invalid new file
        is reported and the last good configuration runs). A plugin failing
        at session open skips the actions (the cycle is reported, not
        half-run); a plugin failing during an action is recorded and the
        rest of the cycle goes on.

        :param before_actions: called with the open session before the first action.
        :param seed: seeds this cycle's tie-breaks (by default the scheduler's
            seed plus the number of cycles run before); a cycle given the
            same cache state and seed decides the same.
        """
        self.reload_config()
        with gc_paused(self.pause_gc):
            return self._cycle_once(before_actions, seed)

    def _cycle_once(self, before_actions: Callable[[Session], Any] | None, seed: int | None = None) -> CycleResult:
        timings: dict[str, float] = {}
        ledger = _BindLedger(self.cache)
        ssn = self._new_session(ledger, seed)
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
            (task, task.node_name) for job in ssn.unsettled_jobs() for task in job.tasks_in(TaskStatus.PIPELINED)
        )
        if ran:
            ssn.close()
        timings["close"] = time.perf_counter() - t3
        timings["session"] = time.perf_counter() - start
        binds: tuple[tuple[TaskInfo, str], ...] = tuple(ssn.binds)
        failed_binds: tuple[tuple[TaskInfo, str, str], ...] = ()
        if ledger.failed:
            failed = ledger.failed
            failed_binds = tuple((task, node, failed[task.uid]) for task, node in binds if task.uid in failed)
            binds = tuple((task, node) for task, node in binds if task.uid not in failed)
        return CycleResult(
            session_uid=ssn.uid,
            binds=binds,
            failed_binds=failed_binds,
            evictions=tuple(ssn.evictions),
            pipelined=pipelined,
            timings=timings,
            plugin_errors=tuple(ssn.plugin_errors),
            ran=ran,
            resumed=ssn.resumed,
            session=ssn,
        )

    def run(self, stop: threading.Event, *, on_cycle: Callable[[CycleResult], Any] | None = None) -> None:
        """Run a cycle every period until ``stop`` is set.

        The next cycle starts one period after the previous one finished; like
        :meth:`run_once`, each cycle first checks the configuration file for
        changes. A cycle
        that fails outright (a cache or an action raising, not a plugin) is
        logged and the next cycle runs on a fresh snapshot.
        """
        while not stop.is_set():
            try:
                result = self.run_once()
            except Exception:  # a failing cache or action: report it, the next cycle starts afresh
                log.exception("scheduling cycle failed")
            else:
                if on_cycle is not None:
                    on_cycle(result)
            stop.wait(self.period)
