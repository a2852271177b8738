"""Replay inputs: files (or a converted trace) -> a :class:`Workload` of objects with times.

A replay reads the objects ``simulate`` reads (Nodes, Queues,
PriorityClasses, PodGroups, Pods, Volcano Jobs; scenario files with
``objects`` or plain manifests) and, in addition:

* ``metadata.creationTimestamp`` of a Volcano Job, a PodGroup or a Pod: the
  object arrives then; objects without one exist from the start;
* the annotations ``volcanolib.io/duration`` (how long a pod runs once
  started), ``volcanolib.io/exit-code`` (non-zero: it ends Failed) and
  ``volcanolib.io/cancel-after`` (the patience of a Job, PodGroup or Pod);
* a file-level ``replay:`` mapping with defaults (``period``,
  ``podStartup``, ``terminationGrace``, ``until``).

Durations are Go durations (``90s``, ``1h30m``, ``250ms``) or numbers of
seconds. Every field is checked when the files load, so bad input fails
before the replay starts, with one line naming the file, object and field.
"""

from __future__ import annotations

import math
from collections.abc import Mapping, Sequence
from pathlib import Path
from typing import Any, Final

import attrs

from volcanolib.api.outcomes import (
    ATTEMPTS_ANNOTATION,
    DURATION_ANNOTATION,
    EXIT_CODE_ANNOTATION,
    OutcomeError,
    PodOutcomes,
    parse_duration,
    read_outcomes,
)
from volcanolib.errors import ManifestError
from volcanolib.framework.config import SchedulerConfig, parse_config
from volcanolib.kube.jobs import expand_job
from volcanolib.kube.loader import Cluster, ManifestLoader, cluster_queue_facts, require_objects
from volcanolib.manifests import fields as f
from volcanolib.manifests.documents import parse_documents, read_text, source_name
from volcanolib.manifests.fields import Ref
from volcanolib.replay.timeline import Action, check_timeline, parse_timeline
from volcanolib.replay.traces import trace_format, trace_table

__all__ = [
    "ATTEMPTS_ANNOTATION",
    "CANCEL_AFTER_ANNOTATION",
    "DURATION_ANNOTATION",
    "EXIT_CODE_ANNOTATION",
    "PodTiming",
    "ReplaySettings",
    "TimedJob",
    "Workload",
    "load_objects",
    "compress_arrivals",
    "load_factor",
    "load_workload",
    "parse_duration",
    "parse_settings",
    "pod_timing",
]

CANCEL_AFTER_ANNOTATION: Final = "volcanolib.io/cancel-after"
#: Keys a replay file may have at its top level (a scenario's, plus ``replay``).
FILE_KEYS: Final = ("name", "description", "notes", "source", "scheduler", "schedulerName", "objects", "replay")
#: Keys of the ``replay:`` mapping.
SETTING_KEYS: Final = ("period", "podStartup", "terminationGrace", "until")
#: The key of the ``replay:`` mapping holding the outside actions (:mod:`volcanolib.replay.timeline`).
TIMELINE_KEY: Final = "timeline"
_JOB_GROUP: Final = "batch.volcano.sh"


@attrs.frozen
class ReplaySettings:
    """The ``replay:`` defaults of the files (``None``: not set there)."""

    period: float | None = None
    pod_startup: float | None = None
    termination_grace: float | None = None
    until: float | None = None


@attrs.frozen
class PodTiming:
    """What the annotations say about one pod: its outcome attempt by attempt, and its patience.

    .. versionchanged:: 0.2
       The outcomes of :mod:`volcanolib.api.outcomes` replace the fields ``duration`` and ``exit_code``,
       which remain as the first attempt's.
    """

    #: What each attempt does once placed (``volcanolib.io/attempts``, or ``duration`` and ``exit-code``).
    outcomes: PodOutcomes = attrs.field(factory=PodOutcomes)
    #: Seconds after arrival at which an unstarted job is given up; ``None``: never.
    cancel_after: float | None = None

    @property
    def duration(self) -> float | None:
        """Seconds the first attempt runs once started; ``None``: until it is deleted."""
        return self.outcomes.attempts[0].after

    @property
    def exit_code(self) -> int:
        """The exit code of the first attempt."""
        return self.outcomes.attempts[0].exit_code


def setting_seconds(key: Any, value: Any, source: str) -> float:
    """One ``replay:`` setting in seconds.

    :raises ManifestError: naming ``source`` and ``replay.<key>`` for an unknown
        setting, a value that is not a duration, or a period of 0.
    """
    if key not in SETTING_KEYS:
        raise ManifestError(
            f"unknown setting (expected one of {', '.join((*SETTING_KEYS, TIMELINE_KEY))})",
            source=source,
            field=f"replay.{key}",
        )
    try:
        seconds = parse_duration(value)
    except ValueError as exc:
        raise ManifestError(str(exc), source=source, field=f"replay.{key}") from None
    if key == "period" and seconds <= 0:
        raise ManifestError("the period must be more than 0", source=source, field="replay.period")
    return seconds


def parse_settings(replay: Mapping[str, Any], *, source: str) -> ReplaySettings:
    """A ``replay:`` mapping (``period``, ``podStartup``, ``terminationGrace``, ``until``) as settings.

    :raises ManifestError: as :func:`setting_seconds`.
    """
    values = {key: setting_seconds(key, value, source) for key, value in replay.items()}
    return ReplaySettings(
        period=values.get("period"),
        pod_startup=values.get("podStartup"),
        termination_grace=values.get("terminationGrace"),
        until=values.get("until"),
    )


def _annotation_duration(annotations: Mapping[str, str], key: str, ref: Ref, field: str) -> float | None:
    raw = annotations.get(key)
    if raw is None:
        return None
    try:
        return parse_duration(raw)
    except ValueError as exc:
        ref.fail(str(exc), f"{field}.{key}")


def pod_timing(
    annotations: Mapping[str, str], ref: Ref, field: str = "metadata.annotations", *, inherited: PodTiming | None = None
) -> PodTiming:
    """Read the outcome and patience annotations; what they do not say comes from ``inherited``.

    The outcomes are read by :func:`volcanolib.api.outcomes.read_outcomes`.

    :raises ManifestError: naming the annotation when a value is invalid.
    """
    base = inherited or PodTiming()
    cancel = _annotation_duration(annotations, CANCEL_AFTER_ANNOTATION, ref, field)
    try:
        outcomes = read_outcomes(annotations, base.outcomes)
    except OutcomeError as exc:
        ref.fail(str(exc), f"{field}.{exc.key}")
    return PodTiming(outcomes, cancel if cancel is not None else base.cancel_after)


@attrs.define(eq=False)
class TimedJob:
    """A Volcano Job manifest and when it is submitted (``None``: from the start)."""

    manifest: dict[str, Any]
    namespace: str
    name: str
    arrival: float | None
    #: The Job-level annotations' timing, inherited by every task template that sets none.
    timing: PodTiming
    #: Each task's timing (by task name): the template's annotations over the Job's.
    task_timings: dict[str, PodTiming]
    #: ``minAvailable`` after the admission webhook's defaults.
    min_available: int
    queue: str
    #: Where it was read, for messages.
    label: str


@attrs.define(eq=False)
class Workload:
    """What a replay runs: the cluster, the objects with their arrival times, the settings of the files."""

    #: The files' names (or ``name`` keys).
    name: str
    sources: tuple[str, ...]
    #: Nodes, queues, priority classes, PodGroups and bare pods, as the manifest loader reads them.
    cluster: Cluster
    #: Volcano Jobs, for the job controller, in the order given.
    jobs: list[TimedJob]
    #: Arrival of each pod (by uid) and PodGroup (``namespace/name``); absent: from the start.
    arrivals: dict[str, float]
    #: The annotations' timing of each bare pod (by uid) and PodGroup (``namespace/name``).
    timings: dict[str, PodTiming]
    settings: ReplaySettings = ReplaySettings()
    #: The configuration of a file's ``scheduler`` block, if any.
    config: SchedulerConfig | None = None
    scheduler_name: str = "volcano"
    warnings: list[str] = attrs.field(factory=list)
    #: What happens from outside, at given times (``replay.timeline``).
    timeline: list[Action] = attrs.field(factory=list)


def load_workload(
    paths: Sequence[str | Path], *, format: str | None = None, nodes: str | Path | None = None
) -> Workload:
    """Read replay files, or a trace in ``format`` (with its ``nodes`` file), into a :class:`Workload`.

    :param paths: YAML or JSON files (scenario files or plain manifests), or
        the trace files when ``format`` is given.
    :param format: a trace format of :data:`volcanolib.replay.traces.TRACE_FORMATS`;
        its objects are then read exactly as objects of YAML files.
    :param nodes: the node list a trace format needs.
    :raises ManifestError: naming the file, object (or row) and field at fault.
    :raises ConfigError: when a file's ``scheduler`` block is invalid.
    """
    if not paths:
        raise ManifestError("no replay file given")
    reader = _Reader()
    if format is not None:
        trace = trace_format(format)
        if trace.needs_nodes and nodes is None:
            raise ManifestError(f"the {format} format needs the node list: give it with --nodes FILE")
        files = [Path(p) for p in paths]
        objects = trace.read(files, Path(nodes) if nodes is not None else None)
        return load_objects(objects, source=", ".join(str(p) for p in paths))
    else:
        if nodes is not None:
            reader.add_file(nodes)
        for path in paths:
            reader.add_file(path)
    return reader.build([str(p) for p in paths])


def load_objects(objects: Sequence[Any], *, source: str | None = None) -> Workload:
    """A :class:`Workload` of Kubernetes objects (a converted trace, say), read as objects of a file.

    :param source: names the objects' origin in errors and as the workload's name.
    :raises ManifestError: naming the object and field at fault.
    """
    reader = _Reader()
    reader.add_objects(objects, source=source, field="objects")
    return reader.build([source or "objects"])


class _Reader:
    """Collects the files' objects: Jobs aside (for the controller), the rest through the manifest loader."""

    def __init__(self) -> None:
        self.names: list[str] = []
        self.scheduler_block: tuple[str, Any] | None = None
        self.settings: dict[str, tuple[str, Any]] = {}
        self.scheduler_name: tuple[str, str] | None = None
        self.warnings: list[str] = []
        self.objects: list[tuple[Any, str | None, str]] = []
        #: The timeline's actions, with the file each came from.
        self.timeline: list[tuple[str, Action]] = []

    def add_file(self, path: str | Path) -> None:
        source = source_name(path)
        text = read_text(path)
        table = trace_table(text, source=source)
        if table is not None:
            raise ManifestError(table, source=source)
        docs = parse_documents(text, source=source)
        require_objects(docs, source=source)
        if len(docs) == 1 and isinstance(docs[0], dict) and "kind" not in docs[0]:
            self._add_scenario(docs[0], source)
            return
        for i, doc in enumerate(docs):
            self.objects.append((doc, source, f"document {i + 1}" if len(docs) > 1 else ""))

    def add_objects(self, objects: Sequence[Any], *, source: str | None, field: str) -> None:
        for i, obj in enumerate(objects):
            self.objects.append((obj, source, f"{field}[{i}]"))

    def _add_scenario(self, data: Mapping[str, Any], source: str) -> None:
        if "objects" not in data:
            raise ManifestError(
                "not a replay file (no 'objects' key) nor a Kubernetes object (no 'kind')", source=source
            )
        for key in data:
            if key not in FILE_KEYS:
                raise ManifestError(f"unknown key {key!r} (expected one of {', '.join(FILE_KEYS)})", source=source)
        if data.get("name"):
            self.names.append(str(data["name"]))
        if data.get("scheduler") is not None:
            if self.scheduler_block is not None:
                raise ManifestError(
                    f"a second 'scheduler' block (the first is in {self.scheduler_block[0]})",
                    source=source,
                    field="scheduler",
                )
            self.scheduler_block = (source, data["scheduler"])
        name = data.get("schedulerName")
        if name is not None:
            if not isinstance(name, str) or not name:
                raise ManifestError(f"expected a scheduler name, got {name!r}", source=source, field="schedulerName")
            if self.scheduler_name is not None and self.scheduler_name[1] != name:
                raise ManifestError(
                    f"{name!r} differs from {self.scheduler_name[1]!r} set in {self.scheduler_name[0]}",
                    source=source,
                    field="schedulerName",
                )
            self.scheduler_name = (source, name)
        replay = data.get("replay")
        if replay is not None:
            if not isinstance(replay, dict):
                raise ManifestError(f"expected a mapping, got {replay!r}", source=source, field="replay")
            for key, value in replay.items():
                if key == TIMELINE_KEY:
                    self.timeline.extend((source, action) for action in parse_timeline(value, source=source))
                    continue
                seconds = setting_seconds(key, value, source)
                if key in self.settings and self.settings[key][1] != seconds:
                    raise ManifestError(
                        f"{value!r} differs from the value set in {self.settings[key][0]}",
                        source=source,
                        field=f"replay.{key}",
                    )
                self.settings[key] = (source, seconds)
        objects = data.get("objects")
        if objects is None:
            objects = []
        if not isinstance(objects, list):
            raise ManifestError("expected a list of Kubernetes objects", source=source, field="objects")
        self.add_objects(objects, source=source, field="objects")

    def build(self, paths: list[str]) -> Workload:
        scheduler_name = self.scheduler_name[1] if self.scheduler_name else "volcano"
        loader = ManifestLoader(scheduler_name=scheduler_name)
        raw_jobs: list[tuple[dict[str, Any], Ref]] = []
        seen_jobs: dict[tuple[str, str], Ref] = {}
        timed: dict[tuple[str, str, str], float] = {}
        declared: set[tuple[str, str]] = set()
        object_timings: dict[tuple[str, str, str], PodTiming] = {}
        for obj, source, where in self.objects:
            if isinstance(obj, dict) and obj.get("kind") == "Job" and _group(obj.get("apiVersion")) == _JOB_GROUP:
                ref = Ref(source, where, "Job")
                meta = f.mapping(obj.get("metadata"), ref, "metadata")
                name = f.string(meta.get("name"), ref, "metadata.name")
                if not name:
                    ref.fail("missing required field: metadata.name", "metadata.name")
                ref.name = name
                ref.namespace = f.string(meta.get("namespace"), ref, "metadata.namespace") or "default"
                job_key = (ref.namespace, name)
                if job_key in seen_jobs:
                    first = seen_jobs[job_key].location or "an earlier object"
                    ref.fail(f"duplicate object: already defined at {first}")
                seen_jobs[job_key] = ref
                raw_jobs.append((obj, ref))
                continue
            loader.add(obj, source=source, where=where)
            if isinstance(obj, dict) and obj.get("kind") in ("Pod", "PodGroup"):
                pmeta = obj.get("metadata")
                if not isinstance(pmeta, dict):
                    continue
                kind = str(obj["kind"])
                pref = Ref(source, where, kind, str(pmeta.get("name") or ""), str(pmeta.get("namespace") or "default"))
                if kind == "PodGroup":
                    declared.add((pref.namespace, pref.name))
                object_annotations = f.string_map(pmeta.get("annotations"), pref, "metadata.annotations")
                object_timings[(kind, pref.namespace, pref.name)] = pod_timing(object_annotations, pref)
                if pmeta.get("creationTimestamp") not in (None, ""):
                    created = f.timestamp(pmeta["creationTimestamp"], pref, "metadata.creationTimestamp")
                    timed[(kind, pref.namespace, pref.name)] = created
        cluster = loader.load()
        for (namespace, name), (pod, gref) in cluster.generated.items():
            # pods made for Deployments, ReplicaSets and StatefulSets arrive with their workload
            pmeta = pod["metadata"]
            object_timings[("Pod", namespace, name)] = pod_timing(
                f.string_map(pmeta.get("annotations"), gref, "metadata.annotations"), gref
            )
            if pmeta.get("creationTimestamp") not in (None, ""):
                created = f.timestamp(pmeta["creationTimestamp"], gref, "metadata.creationTimestamp")
                timed[("Pod", namespace, name)] = created
        warnings = list(self.warnings) + cluster.warnings
        classes = {pc.name: pc.value for pc in cluster.priority_classes}

        arrivals: dict[str, float] = {}
        timings: dict[str, PodTiming] = {}
        group_members: dict[str, list[str]] = {}
        for task in cluster.tasks:
            stamp = timed.get(("Pod", task.namespace, task.name))
            if stamp is not None:
                arrivals[task.uid] = stamp
            timings[task.uid] = object_timings.get(("Pod", task.namespace, task.name), PodTiming())
            if task.job:
                group_members.setdefault(task.job, []).append(task.uid)
        for pg in cluster.pod_groups:
            key = f"{pg.namespace}/{pg.name}"
            timings[key] = object_timings.get(("PodGroup", pg.namespace, pg.name), PodTiming())
            stamp = timed.get(("PodGroup", pg.namespace, pg.name))
            if stamp is not None:
                arrivals[key] = stamp
                continue
            members = group_members.get(key, [])
            if members and all(uid in arrivals for uid in members) and (pg.namespace, pg.name) not in declared:
                # A group the PodGroup controller makes for bare pods is created with its first pod.
                arrivals[key] = min(arrivals[uid] for uid in members)

        jobs: list[TimedJob] = []
        queue_facts = cluster_queue_facts(cluster.queues)
        for obj, ref in raw_jobs:
            expansion = expand_job(
                obj, ref, priority_classes=classes, scheduler_name=scheduler_name, queues=queue_facts
            )
            job_meta = obj["metadata"]
            stamp_raw = job_meta.get("creationTimestamp")
            arrival = None
            if stamp_raw not in (None, ""):
                arrival = f.timestamp(stamp_raw, ref, "metadata.creationTimestamp")
            job_annotations = f.string_map(job_meta.get("annotations"), ref, "metadata.annotations")
            job_timing = pod_timing(job_annotations, ref)
            task_timings: dict[str, PodTiming] = {}
            spec = f.mapping(obj.get("spec"), ref, "spec")
            for i, raw in enumerate(f.seq(spec.get("tasks"), ref, "spec.tasks")):
                task_spec = f.mapping(raw, ref, f"spec.tasks[{i}]")
                task_name = f.string(task_spec.get("name"), ref, f"spec.tasks[{i}].name") or f"default{i}"
                template = f.mapping(task_spec.get("template"), ref, f"spec.tasks[{i}].template")
                tmeta = f.mapping(template.get("metadata"), ref, f"spec.tasks[{i}].template.metadata")
                field = f"spec.tasks[{i}].template.metadata.annotations"
                tann = f.string_map(tmeta.get("annotations"), ref, field)
                task_timings[task_name] = pod_timing(tann, ref, field, inherited=job_timing)
            manifest = expansion.pod_group
            min_available = int(manifest["spec"]["minMember"]) if manifest is not None else len(expansion.pods)
            jobs.append(
                TimedJob(
                    manifest=obj,
                    namespace=ref.namespace,
                    name=ref.name,
                    arrival=arrival,
                    timing=job_timing,
                    task_timings=task_timings,
                    min_available=min_available,
                    queue=f.string(spec.get("queue"), ref, "spec.queue") or "default",
                    label=ref.label,
                )
            )
        queue_names = {"default"} | {q.name for q in cluster.queues}
        for job in jobs:
            if job.queue not in queue_names:
                message = (
                    f"Job {job.namespace}/{job.name}: queue {job.queue!r} does not exist: the job is not scheduled"
                )
                warnings.append(message)

        tasks_of = {f"{job.namespace}/{job.name}": list(job.task_timings) for job in jobs}
        bare = {task.key for task in cluster.tasks}
        node_names = {node.name for node in cluster.nodes}
        check_timeline([action for _, action in self.timeline], nodes=node_names, jobs=tasks_of, pods=bare)

        config = None
        if self.scheduler_block is not None:
            source, block = self.scheduler_block
            if not isinstance(block, (str, dict)):
                raise ManifestError(
                    f"expected volcano-scheduler.conf text or a mapping, got {block!r}",
                    source=source,
                    field="scheduler",
                )
            config = parse_config(block, source=f"{source}: scheduler")
            warnings.extend(config.warnings)
        values = {key: value for key, (_, value) in self.settings.items()}
        settings = ReplaySettings(
            period=values.get("period"),
            pod_startup=values.get("podStartup"),
            termination_grace=values.get("terminationGrace"),
            until=values.get("until"),
        )
        return Workload(
            name=" + ".join(self.names) if self.names else ", ".join(Path(p).name for p in paths),
            sources=tuple(paths),
            cluster=cluster,
            jobs=jobs,
            arrivals=arrivals,
            timings=timings,
            settings=settings,
            config=config,
            scheduler_name=scheduler_name,
            warnings=warnings,
            timeline=[action for _, action in self.timeline],
        )


def _group(api_version: Any) -> str:
    text = str(api_version or "")
    return text.rpartition("/")[0] if "/" in text else ""


def load_factor(value: Any) -> float:
    """A load factor (``replay --load``, a sweep's ``load``): a finite number above 0.

    :raises ValueError: naming the value otherwise.
    """
    number = value
    if isinstance(value, str):
        try:
            number = float(value)
        except ValueError:
            number = None
    if isinstance(number, bool) or not isinstance(number, (int, float)) or not number > 0 or not math.isfinite(number):
        raise ValueError(f"a load factor is a number above 0, got {value!r}")
    return float(number)


def compress_arrivals(workload: Workload, factor: float) -> Workload:
    """The same workload under more (``factor`` > 1) or less load: arrivals brought closer together.

    An object that arrives ``t`` seconds after the workload's first arrival
    arrives ``t / factor`` seconds after it instead, and its
    ``creationTimestamp`` moves with it; runtimes, exit codes, patience and
    the cluster stay as they are. ``factor`` 1 returns the workload itself.

    :raises ValueError: when ``factor`` is not a load factor (:func:`load_factor`).
    """
    factor = load_factor(factor)
    if factor == 1:
        return workload
    times = [*workload.arrivals.values(), *(job.arrival for job in workload.jobs if job.arrival is not None)]
    if not times:
        return workload
    first = min(times)

    def moved(t: float) -> float:
        return first + (t - first) / factor

    arrivals = {key: moved(t) for key, t in workload.arrivals.items()}
    tasks = []
    for task in workload.cluster.tasks:
        if task.uid in workload.arrivals:
            task = task.clone()
            task.creation_timestamp = moved(task.creation_timestamp)
        tasks.append(task)
    groups = []
    for pg in workload.cluster.pod_groups:
        if f"{pg.namespace}/{pg.name}" in workload.arrivals:
            pg = pg.clone()
            pg.creation_timestamp = moved(pg.creation_timestamp)
        groups.append(pg)
    jobs = []
    for job in workload.jobs:
        if job.arrival is not None:
            manifest = dict(job.manifest)
            manifest["metadata"] = {
                **manifest.get("metadata", {}),
                "creationTimestamp": f.format_timestamp(moved(job.arrival)),
            }
            job = attrs.evolve(job, manifest=manifest, arrival=moved(job.arrival))
        jobs.append(job)
    cluster = attrs.evolve(workload.cluster, tasks=tasks, pod_groups=groups)
    return attrs.evolve(workload, cluster=cluster, jobs=jobs, arrivals=arrivals)
