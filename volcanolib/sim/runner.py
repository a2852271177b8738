"""Running scenarios: load the files, run the sessions, report what the scheduler decided.

A scenario (see ``docs/scenario-format.md``) is a cluster snapshot plus a
scheduler configuration. :func:`load_scenario` merges one or more files;
:func:`run_scenario` feeds the objects to an
:class:`~volcanolib.cache.memory.InMemoryCache` and runs ``sessions``
scheduling cycles back to back with a seeded :class:`~volcanolib.Scheduler`.

Between two sessions the simulated cluster does what a real one would before
the next cycle: bound pods start running (``InMemoryCache.start_bound_tasks``)
and evicted pods go away (``InMemoryCache.finish_evictions``).

**The end of a scenario.** A session writes each PodGroup's phase by the
current Volcano rule, in which a group whose pods were just bound stays
Inqueue until the pods are seen running. The result reports the cluster one
step later: after the last session, bound pods start and evicted pods go as
between sessions, and each PodGroup gets the phase the next status update
would give it with nothing more placed. That is the phase the last session
wrote, carried over the step: Unknown when the last session found the gang
unschedulable and a pod of the group runs; otherwise enough pods running,
bound or finished -> Running, or Completed when all of them finished;
otherwise Pending, except that an Inqueue group stays Inqueue. When the
last session bound and evicted nothing of a group, it is exactly the phase
that session wrote. ``scheduled`` counts those pods, and ``allocated`` is
what the group holds then. Binds, evictions and pipelined pods are those the
sessions decided; unschedulable reasons are those of the last session.

**Time.** The sessions' clock starts one second after the newest
``creationTimestamp`` of the objects (0 when none has one) and advances one
second (Volcano's schedule period) per session, so runs are reproducible.
"""

from __future__ import annotations

import difflib
import functools
import logging
import time
from collections.abc import Callable, Iterable, Sequence
from pathlib import Path
from typing import Any, Final

import attrs

from volcanolib._gc import gc_paused
from volcanolib.api.job import JobInfo, PodGroupPhase
from volcanolib.api.resource import Resource
from volcanolib.api.task import TaskStatus
from volcanolib.cache.memory import InMemoryCache
from volcanolib.errors import ConfigError, ManifestError, VolcanolibError
from volcanolib.framework.config import DEFAULT_CONFIG, SchedulerConfig, load_config, parse_config
from volcanolib.framework.registry import Registry
from volcanolib.framework.session import Session, compare_tasks_by_name
from volcanolib.kube import read_documents, source_name
from volcanolib.kube.loader import Cluster, ManifestLoader, require_objects
from volcanolib.scheduler import CycleResult, Scheduler
from volcanolib.sim.expect import Expectation, compare, parse_expect

__all__ = [
    "CheckOutcome",
    "PodGroupReport",
    "Scenario",
    "SimulationResult",
    "load_scenario",
    "check_scenario",
    "run_scenario",
    "simulate",
]

#: Keys a scenario file may have at its top level.
SCENARIO_KEYS: Final = (
    "name",
    "description",
    "notes",
    "source",
    "scheduler",
    "schedulerName",
    "sessions",
    "objects",
    "expect",
    "volcano",
)
DEFAULT_SCHEDULER_NAME: Final = "volcano"
#: Seconds between two sessions (Volcano's default schedule period).
PERIOD: Final = 1.0

SessionHook = Callable[[int, Session], Any]
log = logging.getLogger("volcanolib.sim")


@attrs.define(eq=False)
class Scenario:
    """A cluster and a scheduler configuration, loaded from one or more files."""

    #: The scenario's ``name`` (the file names when none is given).
    name: str
    #: The files it was loaded from, in order.
    sources: tuple[str, ...]
    config: SchedulerConfig
    cluster: Cluster
    scheduler_name: str = DEFAULT_SCHEDULER_NAME
    sessions: int = 1
    expect: Expectation | None = None
    #: The ``volcano`` block: what the Volcano release volcanolib follows gives where volcanolib
    #: deliberately differs (docs/differences.md); the differential tests check it against the oracle.
    volcano_expect: Expectation | None = None
    #: Warnings from the loader and the configuration parser.
    warnings: list[str] = attrs.field(factory=list)
    #: Seconds spent reading and converting the files.
    load_seconds: float = 0.0


@attrs.define(eq=False)
class PodGroupReport:
    """A PodGroup at the end of a scenario."""

    phase: PodGroupPhase
    #: Pods running, bound or finished.
    scheduled: int
    min_member: int
    queue: str
    #: What the group's pods hold.
    allocated: Resource


@attrs.define(eq=False)
class SimulationResult:
    """What the scheduler decided over a scenario's sessions.

    Pods and PodGroups are named ``namespace/name``.
    """

    scenario: Scenario
    sessions: int
    seed: int
    #: Pod -> node, every bind of every session.
    binds: dict[str, str]
    #: Evicted pods, sorted.
    evictions: list[str]
    #: Pod -> node, the pods left pipelined by the last session.
    pipelined: dict[str, str]
    pod_groups: dict[str, PodGroupReport]
    #: PodGroup -> why some of its pods are still pending after the last session.
    unschedulable: dict[str, str]
    #: Seconds spent, by phase, in the order they happen: ``load`` (reading and converting the
    #: files), ``cache`` (feeding the objects to the cache), ``scheduler`` (loading the plugins
    #: and actions), then the parts of the sessions (``snapshot``, ``open``, one entry per action,
    #: ``close``, summed over sessions), ``session`` (the sessions as a whole), ``bookkeeping``
    #: (what the cluster does between sessions and after the last one, and the result's tables),
    #: and ``total``. Leaving out the parts of the sessions, the phases add up to ``total``.
    #: ``volcanolib simulate --timings`` adds ``startup`` and ``output``, and its ``total`` is the
    #: whole command.
    timings: dict[str, float]
    #: Pod -> node -> total node-order score, taken when the first session opened.
    node_scores: dict[str, dict[str, float]]
    #: Plugin failures, as text.
    plugin_errors: list[str]
    #: Every cycle's result (its closed session included).
    cycles: list[CycleResult]
    #: The simulated cluster at the end.
    cache: InMemoryCache
    #: Each session's binds, evictions and pipelined pods, and the status every PodGroup had once the
    #: session closed (``run_scenario(per_session=True)``; empty otherwise).
    per_session: list[dict[str, Any]] = attrs.field(factory=list)

    def to_dict(self, *, timings: bool = False) -> dict[str, Any]:
        """The JSON form of the result (``volcanolib simulate --json``), keys sorted by the encoder."""
        out: dict[str, Any] = {
            "sessions": self.sessions,
            "binds": dict(self.binds),
            "evictions": list(self.evictions),
            "pipelined": dict(self.pipelined),
            "podGroups": {
                uid: {"phase": r.phase.value, "scheduled": r.scheduled, "minMember": r.min_member}
                for uid, r in self.pod_groups.items()
            },
            "unschedulable": dict(self.unschedulable),
        }
        if self.plugin_errors:
            out["pluginErrors"] = list(self.plugin_errors)
        if self.per_session:
            out["perSession"] = list(self.per_session)
        if timings:
            out["timings"] = {k: round(v, 6) for k, v in self.timings.items()}
        return out


class SimClock:
    """The sessions' clock: a time that the runner sets and advances, so runs are reproducible."""

    def __init__(self, now: float) -> None:
        self.now = now

    def __call__(self) -> float:
        return self.now


# ---------------------------------------------------------------------- loading


def _closest(key: str) -> str:
    match = difflib.get_close_matches(key, SCENARIO_KEYS, n=1, cutoff=0.6)
    return f" (did you mean {match[0]!r}?)" if match else ""


def load_scenario(
    paths: Sequence[str | Path],
    *,
    conf: str | Path | SchedulerConfig | None = None,
    sessions: int | None = None,
) -> Scenario:
    """Load a scenario from files, merged in order.

    Each file is a scenario mapping (with ``objects``) or plain manifests (one
    object, a ``kind: List``, several documents). At most one file may carry
    a ``scheduler`` block or an ``expect`` block, and files that set
    ``schedulerName`` or ``sessions`` must agree.

    :param conf: a configuration file (or a parsed one) that overrides the
        scenario's ``scheduler`` block; the default configuration is used when
        neither is given.
    :param sessions: overrides the scenario's ``sessions``.
    :raises ManifestError: naming the file, object and field at fault.
    :raises ConfigError: when the scheduler configuration is invalid.
    """
    if not paths:
        raise ManifestError("no scenario file given")
    with gc_paused():
        return _load_scenario(paths, conf, sessions)


def _load_scenario(
    paths: Sequence[str | Path], conf: str | Path | SchedulerConfig | None, sessions: int | None
) -> Scenario:
    start = time.perf_counter()
    names: list[str] = []
    scheduler_block: tuple[str, Any] | None = None
    expect_block: tuple[str, Any] | None = None
    volcano_block: tuple[str, Any] | None = None
    settings: dict[str, tuple[str, Any]] = {}
    warnings: list[str] = []
    pending: list[tuple[str, list[Any], bool]] = []
    for path in paths:
        source = source_name(path)
        docs = read_documents(path)
        require_objects(docs, source=source)
        if len(docs) == 1 and isinstance(docs[0], dict) and "kind" not in docs[0]:
            data = docs[0]
            if "objects" not in data:
                raise ManifestError(
                    "not a scenario (no 'objects' key) nor a Kubernetes object (no 'kind')", source=source
                )
            for key in data:
                if key not in SCENARIO_KEYS:
                    msg = f"{source}: unknown scenario key {key!r}{_closest(str(key))}; ignored"
                    warnings.append(msg)
                    log.warning("%s", msg)
            if data.get("name"):
                names.append(str(data["name"]))
            if data.get("scheduler") is not None:
                if scheduler_block is not None:
                    raise ManifestError(
                        f"a second 'scheduler' block (the first is in {scheduler_block[0]})",
                        source=source,
                        field="scheduler",
                    )
                scheduler_block = (source, data["scheduler"])
            if data.get("expect") is not None:
                if expect_block is not None:
                    raise ManifestError(
                        f"a second 'expect' block (the first is in {expect_block[0]})", source=source, field="expect"
                    )
                expect_block = (source, data["expect"])
            if data.get("volcano") is not None:
                if volcano_block is not None:
                    raise ManifestError(
                        f"a second 'volcano' block (the first is in {volcano_block[0]})", source=source, field="volcano"
                    )
                volcano_block = (source, data["volcano"])
            for key in ("schedulerName", "sessions"):
                if data.get(key) is not None:
                    if key in settings and settings[key][1] != data[key]:
                        raise ManifestError(
                            f"{data[key]!r} differs from {settings[key][1]!r} set in {settings[key][0]}",
                            source=source,
                            field=key,
                        )
                    settings[key] = (source, data[key])
            objects = data.get("objects")
            if objects is None:
                objects = []
            if not isinstance(objects, list):
                raise ManifestError("expected a list of Kubernetes objects", source=source, field="objects")
            pending.append((source, objects, True))
        else:
            pending.append((source, docs, False))

    scheduler_name = DEFAULT_SCHEDULER_NAME
    if "schedulerName" in settings:
        source, value = settings["schedulerName"]
        if not isinstance(value, str) or not value:
            raise ManifestError(f"expected a scheduler name, got {value!r}", source=source, field="schedulerName")
        scheduler_name = value
    count = 1
    if "sessions" in settings:
        source, value = settings["sessions"]
        if isinstance(value, bool) or not isinstance(value, int) or value < 1:
            raise ManifestError(f"expected a positive integer, got {value!r}", source=source, field="sessions")
        count = value
    if sessions is not None:
        if sessions < 1:
            raise ManifestError(f"sessions must be at least 1, got {sessions}")
        count = sessions

    loader = ManifestLoader(scheduler_name=scheduler_name)
    for source, objects, in_scenario in pending:
        if in_scenario:
            loader.add_objects(objects, source=source, field="objects")
        else:
            for i, doc in enumerate(objects):
                loader.add(doc, source=source, where=f"document {i + 1}" if len(objects) > 1 else "")
    cluster = loader.load()
    warnings.extend(cluster.warnings)

    if isinstance(conf, SchedulerConfig):
        config = conf
    elif conf is not None:
        config = load_config(conf)
    elif scheduler_block is not None:
        source, block = scheduler_block
        if not isinstance(block, (str, dict)):
            raise ConfigError(
                f"expected volcano-scheduler.conf text or a mapping, got {block!r}", source=f"{source}: scheduler"
            )
        config = parse_config(block, source=f"{source}: scheduler")
    else:
        config = DEFAULT_CONFIG
    warnings.extend(config.warnings)

    expect = None
    if expect_block is not None:
        expect = parse_expect(expect_block[1], source=expect_block[0])
    volcano_expect = None
    if volcano_block is not None:
        volcano_expect = parse_expect(volcano_block[1], source=volcano_block[0], block_name="volcano")
    return Scenario(
        name=" + ".join(names) if names else ", ".join(Path(p).name for p in paths),
        sources=tuple(str(p) for p in paths),
        config=config,
        cluster=cluster,
        scheduler_name=scheduler_name,
        sessions=count,
        expect=expect,
        volcano_expect=volcano_expect,
        warnings=warnings,
        load_seconds=time.perf_counter() - start,
    )


# ---------------------------------------------------------------------- running


class _Laps:
    """Seconds per phase, each lap ending where the next begins, so the phases add up to the whole."""

    def __init__(self) -> None:
        self.seconds: dict[str, float] = {}
        self._last = time.perf_counter()

    def lap(self, phase: str) -> None:
        """Count the time since the previous lap (or the start) to ``phase``."""
        now = time.perf_counter()
        self.seconds[phase] = self.seconds.get(phase, 0.0) + now - self._last
        self._last = now


def _pending_reason(ssn: Session, job: JobInfo) -> str | None:
    pending = job.task_status_index.get(TaskStatus.PENDING)
    if not pending:
        return None
    for task in sorted(pending.values(), key=functools.cmp_to_key(compare_tasks_by_name)):
        fit = job.nodes_fit_errors.get(task.uid)
        if fit is not None:
            return fit.error()
    if job.pod_group.phase is PodGroupPhase.PENDING and "enqueue" in ssn.enabled_actions:
        return "the PodGroup is still Pending: enqueue did not admit it"
    if job.job_fit_errors:
        return job.job_fit_errors
    if job.ready_task_num() >= job.min_available:
        return (
            f"{len(pending)} pending pod(s) beyond minMember were not placed and no node was checked for them "
            "(the queue may have no room left)"
        )
    return job.fit_error()


def run_scenario(
    scenario: Scenario,
    *,
    sessions: int | None = None,
    seed: int = 0,
    registry: Registry | None = None,
    score_pods: Iterable[str] | None = None,
    on_session_open: SessionHook | None = None,
    per_session: bool = False,
) -> SimulationResult:
    """Run a scenario's sessions and return what the scheduler decided.

    :param sessions: overrides the scenario's number of sessions.
    :param seed: seeds the scheduler's tie-breaks (the same seed gives the same result).
    :param registry: where plugins and actions are found (the installed ones by default).
    :param score_pods: pods (``namespace/name``) whose node scores to record
        when the first session opens, before any action (a placed pod is
        scored too, its own request still counted on its node); by default
        those of ``expect.nodeScores``.
    :param on_session_open: called with the session index (from 0) and the
        open session, before the first action of every session.
    :param per_session: also record what each session decided and the status
        each PodGroup had once it closed (:attr:`SimulationResult.per_session`).
    :raises ConfigError: when the configuration names an unknown plugin or action.
    """
    # Results build hundreds of thousands of small objects; the collector would rescan them all.
    with gc_paused():
        return _run_scenario(
            scenario,
            sessions=sessions,
            seed=seed,
            registry=registry,
            score_pods=score_pods,
            on_session_open=on_session_open,
            per_session=per_session,
        )


def _session_detail(result: CycleResult, cache: InMemoryCache) -> dict[str, Any]:
    """What one session decided, and every PodGroup's status once it closed (the ``perSession`` entries)."""
    groups: dict[str, Any] = {}
    for job in sorted(cache.jobs(), key=lambda j: j.uid):
        pg = job.pod_group
        groups[job.uid] = {
            "phase": pg.phase.value,
            "conditions": [
                {"type": c.type.value, "status": c.status, "reason": c.reason, "message": c.message}
                for c in pg.conditions
            ],
        }
    return {
        "binds": {task.key: node for task, node in sorted(result.binds, key=lambda b: b[0].key)},
        "evictions": sorted({task.key for task, _ in result.evictions}),
        "pipelined": {task.key: node for task, node in sorted(result.pipelined, key=lambda p: p[0].key)},
        "podGroups": groups,
    }


def _run_scenario(
    scenario: Scenario,
    *,
    sessions: int | None,
    seed: int,
    registry: Registry | None,
    score_pods: Iterable[str] | None,
    on_session_open: SessionHook | None,
    per_session: bool,
) -> SimulationResult:
    laps = _Laps()
    count = sessions if sessions is not None else scenario.sessions
    if count < 1:
        raise ManifestError(f"sessions must be at least 1, got {count}")
    if score_pods is None:
        expect = scenario.expect
        score_pods = list(expect.node_scores) if expect is not None and expect.node_scores else []
    wanted = set(score_pods)
    node_scores: dict[str, dict[str, float]] = {}

    cache = scenario.cluster.to_cache()
    laps.lap("cache")
    clock = SimClock(scenario.cluster.newest_timestamp + PERIOD)
    scheduler = Scheduler(cache, scenario.config, seed=seed, registry=registry, clock=clock)
    laps.lap("scheduler")

    def before_actions(index: int, ssn: Session) -> None:
        if index == 0 and wanted:
            for job in ssn.jobs.values():
                for task in job.tasks.values():
                    if task.key in wanted:
                        node_scores[task.key] = ssn.node_scores(task, ssn.node_list)
        if on_session_open is not None:
            on_session_open(index, ssn)

    cycles: list[CycleResult] = []
    details: list[dict[str, Any]] = []
    binds: dict[str, str] = {}
    evicted: set[str] = set()
    parts: dict[str, float] = {}
    for index in range(count):
        if index:
            cache.start_bound_tasks()
            cache.finish_evictions()
        clock.now = scenario.cluster.newest_timestamp + PERIOD * (index + 1)
        laps.lap("bookkeeping")
        result = scheduler.run_once(before_actions=functools.partial(before_actions, index))
        laps.lap("session")
        cycles.append(result)
        if per_session:
            details.append(_session_detail(result, cache))
        for task, node in result.binds:
            binds[task.key] = node
        if result.failed_binds:
            task, node, why = result.failed_binds[0]
            more = len(result.failed_binds) - 1
            log.warning(
                "session %d: %s to %s did not take effect (%s)%s",
                index + 1,
                f"binding {task.key}",
                node,
                why,
                f", nor {more} more bind{'s' if more != 1 else ''}" if more else "",
            )
        evicted.update(task.key for task, _ in result.evictions)
        for key, seconds in result.timings.items():
            if key != "session":
                parts[key] = parts.get(key, 0.0) + seconds

    last = cycles[-1]
    pipelined = {task.key: node for task, node in last.pipelined}
    unschedulable: dict[str, str] = {}
    ssn = last.session
    if ssn is not None:
        unschedulable.update(ssn.skipped_jobs)
        for job in ssn.jobs.values():
            reason = _pending_reason(ssn, job)
            if reason is not None:
                unschedulable[job.uid] = reason
    for uid, reason in scenario.cluster.unschedulable.items():
        unschedulable.setdefault(uid, reason)

    cache.start_bound_tasks()
    cache.finish_evictions()
    pod_groups: dict[str, PodGroupReport] = {}
    for job in sorted(cache.jobs(), key=lambda j: j.uid):
        seen = ssn.jobs.get(job.uid) if ssn is not None else None
        unschedulable_last = seen is not None and ssn is not None and seen.pod_group.unschedulable_in(ssn.uid)
        pod_groups[job.uid] = PodGroupReport(
            job.status_phase(unschedulable_last),
            job.scheduled_task_num(),
            job.min_available,
            job.queue,
            job.allocated.clone(),
        )

    errors = [str(err) for cycle in cycles for err in cycle.plugin_errors]
    laps.lap("bookkeeping")
    lapped = laps.seconds
    timings = {"load": scenario.load_seconds, "cache": lapped["cache"], "scheduler": lapped["scheduler"]}
    timings.update(parts)
    timings["session"] = lapped["session"]
    timings["bookkeeping"] = lapped["bookkeeping"]
    timings["total"] = scenario.load_seconds + sum(lapped.values())
    return SimulationResult(
        scenario=scenario,
        sessions=count,
        seed=seed,
        binds=dict(sorted(binds.items())),
        evictions=sorted(evicted),
        pipelined=dict(sorted(pipelined.items())),
        pod_groups=pod_groups,
        unschedulable=dict(sorted(unschedulable.items())),
        timings=timings,
        node_scores=node_scores,
        plugin_errors=errors,
        cycles=cycles,
        cache=cache,
        per_session=details,
    )


def simulate(
    paths: Sequence[str | Path],
    *,
    conf: str | Path | SchedulerConfig | None = None,
    sessions: int | None = None,
    seed: int = 0,
    registry: Registry | None = None,
) -> SimulationResult:
    """Load a scenario from files and run it (:func:`load_scenario` then :func:`run_scenario`)."""
    scenario = load_scenario(paths, conf=conf, sessions=sessions)
    return run_scenario(scenario, seed=seed, registry=registry)


@attrs.frozen
class CheckOutcome:
    """How one scenario file compared with its ``expect`` block."""

    source: str
    #: The scenario's name (the file name when it has none or could not be read).
    name: str
    #: The differences, as readable lines; empty when the scenario matches.
    differences: tuple[str, ...] = ()
    #: Why the file could not be checked (bad input, no ``expect`` block), or ``None``.
    error: str | None = None
    #: Whether the error is bad input (exit status 2) rather than a failed check.
    bad_input: bool = False
    result: SimulationResult | None = attrs.field(default=None, repr=False)

    @property
    def ok(self) -> bool:
        """Whether the scenario ran and matched its expectation."""
        return self.error is None and not self.differences


def check_scenario(path: str | Path, *, seed: int = 0, registry: Registry | None = None) -> CheckOutcome:
    """Run one scenario file and compare it with its ``expect`` block (``volcanolib check``).

    Bad input (a file that does not load, an invalid configuration) is
    reported in the outcome, not raised.
    """
    source = str(path)
    try:
        scenario = load_scenario([path])
    except VolcanolibError as exc:
        return CheckOutcome(source, Path(path).name, error=_without_source(exc, source), bad_input=True)
    if scenario.expect is None or scenario.expect.is_empty():
        return CheckOutcome(source, scenario.name, error="nothing to check: the file has no 'expect' block")
    try:
        result = run_scenario(scenario, seed=seed, registry=registry)
    except VolcanolibError as exc:
        return CheckOutcome(source, scenario.name, error=_without_source(exc, source), bad_input=True)
    return CheckOutcome(source, scenario.name, tuple(compare(scenario.expect, result)), result=result)


def _without_source(exc: VolcanolibError, source: str) -> str:
    """An error's message without the file name it starts with (the check line names the file already)."""
    text = str(exc)
    prefix = f"{source}: "
    return text[len(prefix) :] if text.startswith(prefix) else text
