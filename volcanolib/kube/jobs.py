"""Volcano Jobs (``batch.volcano.sh/v1alpha1``) -> a PodGroup and Pods, as the job controller makes them.

What the controller and its admission webhook do, and this module repeats:

* Volcano's admission (:mod:`volcanolib.manifests.admission`): the mutating
  webhook's defaults (task names ``default<index>``, task and job
  ``minAvailable``, the queue, the scheduler name, ``maxRetry``), and a Job
  the validating webhook would refuse is a load error naming the field.
* the PodGroup is named ``<job>-<job uid>``; a Job without ``metadata.uid``
  (a hand-written manifest) gets the name ``<job>``, which the controller
  also accepts. Its ``minMember`` is the job's ``minAvailable``,
  ``minTaskMember`` the tasks' ``minAvailable``, ``queue`` and
  ``priorityClassName`` the job's, annotations and labels the job's, and
  ``minResources`` the requests (plus ``pods``) of the first ``minAvailable``
  pods: tasks sorted by their template's PriorityClass value, highest first,
  each task's ``minAvailable`` pods first, then the remaining replicas.
* one pod per task and index, named ``<job>-<task>-<index>``, the template
  with the scheduler name and priority class of the job where the template
  has none, and the annotations and labels of section 8.2 of Volcano's
  controller (``scheduling.k8s.io/group-name``, ``volcano.sh/task-spec``,
  ``volcano.sh/template-uid`` = ``<job>-<task>``, ``volcano.sh/task-index``,
  ``volcano.sh/job-name``, ``volcano.sh/queue-name``, ...), plus the Job's
  ``volcanolib.io/duration`` and ``volcanolib.io/exit-code`` where the
  template has none of that name.

A PodGroup or pod that already exists (a cluster dump holds the Job *and*
what the controller made for it) is not made again, as the controller
counts existing pods and creates only the missing ones. A Job in a finished
or finishing state (Completed, Failed, Aborted, Terminated and their -ing
forms, Restarting) gets no new pods.

Deliberate difference: the controller creates the pods only once the
scheduler has admitted the PodGroup (phase Inqueue); here they exist from
the start, so a simulation does not spend a cycle waiting for them.

``simulate`` does not follow a task's ``dependsOn`` (the controller creates
its pods once the tasks it names are running): its pods are made with the
others', and :attr:`JobExpansion.depends_on_ignored` names such tasks so that
the loader warns. :mod:`volcanolib.controllers.job`, which runs the Job's
lifecycle over time, builds its PodGroups and pods with
:func:`pod_group_manifest` and :func:`pod_manifest` from here.
"""

from __future__ import annotations

from collections.abc import Collection, Mapping
from typing import Any, Final

import attrs

from volcanolib.api.resource import Resource
from volcanolib.manifests import fields as f
from volcanolib.manifests.admission import DEFAULT_QUEUE, QueueFacts, admit_job, job_ref
from volcanolib.manifests.fields import Ref
from volcanolib.manifests.keys import (
    GROUP_NAME_ANNOTATION,
    JOB_NAME_KEY,
    JOB_NAMESPACE_KEY,
    JOB_VERSION_KEY,
    QUEUE_NAME_KEY,
    RETRY_COUNT_KEY,
    TASK_INDEX_KEY,
    TASK_SPEC_KEY,
    TEMPLATE_UID_KEY,
)
from volcanolib.manifests.pods import pod_request

__all__ = [
    "JobExpansion",
    "JobSpec",
    "TaskSpec",
    "expand_job",
    "job_ref",
    "parse_job",
    "pod_group_manifest",
    "pod_manifest",
]

API_VERSION: Final = "batch.volcano.sh/v1alpha1"
DEFAULT_TASK_SPEC: Final = "default"
#: The group-name annotation (defined once, in :mod:`volcanolib.manifests.keys`), under its former name here.
GROUP_NAME_KEY: Final = GROUP_NAME_ANNOTATION
#: The most pods one Job may expand to (a larger ``replicas`` is refused rather than built).
MAX_JOB_PODS: Final = 100_000
NUMA_POLICY_KEY: Final = "volcano.sh/numa-topology-policy"
_COPIED_ANNOTATIONS: Final = ("volcano.sh/preemptable", "volcano.sh/cooldown-time", "volcano.sh/revocable-zone")
_JDB_KEYS: Final = ("volcano.sh/jdb-min-available", "volcano.sh/jdb-max-unavailable")
_COPIED_LABELS: Final = ("volcano.sh/preemptable", "volcano.sh/cooldown-time")
#: volcanolib's annotations that a Job's pods inherit from the Job (``cancel-after`` stays with the Job).
INHERITED_ANNOTATIONS: Final = ("volcanolib.io/duration", "volcanolib.io/exit-code")
_ACTIVE_PHASES: Final = frozenset({"", "Pending", "Running"})


@attrs.frozen
class JobExpansion:
    """What the job controller would create for one Job."""

    #: The name of the job's PodGroup (made here or already existing).
    pod_group_name: str
    #: The PodGroup manifest, or ``None`` when the PodGroup already exists.
    pod_group: dict[str, Any] | None
    #: Manifests of the pods that do not exist yet.
    pods: list[dict[str, Any]]
    #: Tasks with a ``dependsOn`` whose pods were made here all the same (the job
    #: controller would wait for the tasks they name; simulate does not).
    depends_on_ignored: tuple[str, ...] = ()


@attrs.frozen
class TaskSpec:
    """One task of a Job, after the admission webhook's defaults."""

    #: Position in ``spec.tasks``.
    index: int
    #: The task name (``default<index>`` when the manifest has none).
    name: str
    replicas: int
    #: ``minAvailable``, defaulting to ``replicas``.
    min_available: int
    template_meta: Mapping[str, Any]
    template_spec: Mapping[str, Any]
    topology_policy: str
    #: The requests of one pod of the task.
    request: Resource
    #: The value of the template's PriorityClass (0 when it has none).
    priority: int
    #: The tasks named by ``dependsOn.name``.
    depends_on: tuple[str, ...] = ()
    #: ``dependsOn.iteration`` (``any``, ``all`` or empty).
    iteration: str = ""
    #: The task as written, for what only the job controller reads (policies, maxRetry).
    raw: Mapping[str, Any] = attrs.field(factory=dict, eq=False, repr=False)

    def pod_name(self, job: str, index: int) -> str:
        """The name of the pod of this task at ``index``: ``<job>-<task>-<index>``."""
        return f"{job}-{self.name}-{index}"


@attrs.frozen
class JobSpec:
    """A Job manifest read and defaulted as Volcano's admission webhook does."""

    name: str
    namespace: str
    uid: str
    annotations: Mapping[str, str]
    labels: Mapping[str, str]
    queue: str
    #: The scheduler name given to pods whose template names none.
    scheduler_name: str
    priority_class_name: str
    #: ``spec.minAvailable``, defaulting to the sum of the tasks' ``minAvailable``.
    min_available: int
    tasks: tuple[TaskSpec, ...]
    #: ``status.state.phase`` as written (empty for a new Job).
    phase: str
    #: ``status.version`` and ``status.retryCount`` as written.
    version: int
    retry_count: int
    #: ``metadata.creationTimestamp`` as written (``None`` when absent).
    creation_timestamp: Any
    #: ``spec.networkTopology`` as written (``None`` when absent), copied to the PodGroup.
    network_topology: Any
    #: Where the manifest came from, for errors.
    ref: Ref = attrs.field(eq=False, repr=False)
    #: The manifest after the admission webhook's defaults.
    manifest: Mapping[str, Any] = attrs.field(factory=dict, eq=False, repr=False)

    @property
    def pod_group_name(self) -> str:
        """``<job>-<uid>``, or ``<job>`` for a Job without a uid (which the controller also accepts)."""
        return f"{self.name}-{self.uid}" if self.uid else self.name

    @property
    def replicas(self) -> int:
        """The replicas of all tasks."""
        return sum(t.replicas for t in self.tasks)


def parse_job(
    job: Mapping[str, Any],
    ref: Ref | None = None,
    *,
    priority_classes: Mapping[str, int] | None = None,
    scheduler_name: str = "volcano",
    default_queue: str = DEFAULT_QUEUE,
    queues: Mapping[str, QueueFacts] | None = None,
) -> JobSpec:
    """Read a Job manifest after Volcano's admission (:func:`~volcanolib.manifests.admission.admit_job`).

    :param job: the Job manifest.
    :param ref: where the manifest came from, for errors.
    :param priority_classes: PriorityClass values by name (orders tasks for ``minResources``).
    :param scheduler_name: the scheduler name given to pods when neither the
        template nor the Job names one (the admission webhook's default).
    :param default_queue: the queue of a Job that names none.
    :param queues: the queues that exist, for admission's queue checks (skipped when ``None``).
    :raises ManifestError: naming the field, when the Job is malformed or
        Volcano's admission would refuse it.
    """
    if ref is None:
        ref = job_ref(job)
    job = admit_job(job, ref, queues=queues, scheduler_name=scheduler_name, default_queue=default_queue)
    meta = f.mapping(job.get("metadata"), ref, "metadata")
    spec = f.mapping(job.get("spec"), ref, "spec")
    status = f.mapping(job.get("status"), ref, "status")
    tasks = _tasks(spec, ref, priority_classes or {})
    total_replicas = sum(t.replicas for t in tasks)
    if total_replicas > MAX_JOB_PODS:
        ref.fail(f"{total_replicas} replicas: volcanolib expands at most {MAX_JOB_PODS} pods per Job", "spec.tasks")
    min_available = f.integer(spec.get("minAvailable"), ref, "spec.minAvailable", 0)
    state = f.mapping(status.get("state"), ref, "status.state")
    return JobSpec(
        name=ref.name,
        namespace=ref.namespace,
        uid=f.string(meta.get("uid"), ref, "metadata.uid"),
        annotations=f.string_map(meta.get("annotations"), ref, "metadata.annotations"),
        labels=f.string_map(meta.get("labels"), ref, "metadata.labels"),
        queue=f.string(spec.get("queue"), ref, "spec.queue"),
        scheduler_name=f.string(spec.get("schedulerName"), ref, "spec.schedulerName"),
        priority_class_name=f.string(spec.get("priorityClassName"), ref, "spec.priorityClassName"),
        min_available=min_available,
        tasks=tuple(tasks),
        phase=f.string(state.get("phase"), ref, "status.state.phase"),
        version=f.integer(status.get("version"), ref, "status.version", 0),
        retry_count=f.integer(status.get("retryCount"), ref, "status.retryCount", 0),
        creation_timestamp=meta.get("creationTimestamp"),
        network_topology=spec.get("networkTopology"),
        ref=ref,
        manifest=job,
    )


def expand_job(
    job: Mapping[str, Any],
    ref: Ref | None = None,
    *,
    priority_classes: Mapping[str, int] | None = None,
    scheduler_name: str = "volcano",
    existing_groups: Collection[str] = (),
    existing_pods: Collection[tuple[str, str]] = (),
    queues: Mapping[str, QueueFacts] | None = None,
) -> JobExpansion:
    """Return the PodGroup and Pods Volcano's job controller would create for a Job.

    :param job: the Job manifest.
    :param ref: where the manifest came from, for errors.
    :param priority_classes: PriorityClass values by name (orders tasks for ``minResources``).
    :param scheduler_name: the scheduler name given to pods when neither the
        template nor the Job names one (the admission webhook's default).
    :param existing_groups: PodGroups that exist, as ``namespace/name``.
    :param existing_pods: pods that exist, as ``(namespace, name)``.
    :param queues: the queues that exist, for admission's queue checks (skipped when ``None``).
    :raises ManifestError: naming the field, when the Job is malformed or
        Volcano's admission would refuse it, its lifecycle fields
        (policies, ``maxRetry``, ``minSuccess``, job plugins, ``dependsOn``)
        included, exactly as the job controller refuses them.
    """
    js = parse_job(job, ref, priority_classes=priority_classes, scheduler_name=scheduler_name, queues=queues)
    name, namespace = js.name, js.namespace
    active = js.phase in _ACTIVE_PHASES
    pg_name = js.pod_group_name
    existing = next((n for n in (pg_name, name) if f"{namespace}/{n}" in existing_groups), None)
    pod_group: dict[str, Any] | None = None
    if existing is not None:
        pg_name = existing
    elif active:
        pod_group = pod_group_manifest(js, js.creation_timestamp)

    pods: list[dict[str, Any]] = []
    depends_on_ignored: list[str] = []
    if active:
        for task in js.tasks:
            made = len(pods)
            for index in range(task.replicas):
                pod_name = task.pod_name(name, index)
                if (namespace, pod_name) in existing_pods:
                    continue
                pods.append(
                    pod_manifest(js, task, index, js.creation_timestamp, version=js.version, retry_count=js.retry_count)
                )
                pods[-1]["metadata"]["annotations"][GROUP_NAME_KEY] = pg_name
            if task.depends_on and len(pods) > made:
                depends_on_ignored.append(task.name)
    return JobExpansion(pg_name, pod_group, pods, tuple(depends_on_ignored))


def pod_group_manifest(js: JobSpec, created: Any = None) -> dict[str, Any]:
    """The PodGroup the job controller makes for a Job, in API form.

    :param js: the Job.
    :param created: its ``metadata.creationTimestamp`` (none when ``None``).
    :returns: the manifest, with ``status.phase`` Pending (not yet admitted).
    """
    owner = {"apiVersion": API_VERSION, "kind": "Job", "name": js.name, "uid": js.uid, "controller": True}
    pg_meta: dict[str, Any] = {
        "name": js.pod_group_name,
        "namespace": js.namespace,
        "annotations": dict(js.annotations),
        "labels": dict(js.labels),
        "ownerReferences": [owner],
    }
    if created is not None:
        pg_meta["creationTimestamp"] = created
    pg_spec: dict[str, Any] = {
        "minMember": js.min_available,
        "minTaskMember": {t.name: t.min_available for t in js.tasks},
        "queue": js.queue,
        "minResources": _min_resources(list(js.tasks), js.min_available).to_quantities(),
    }
    if js.priority_class_name:
        pg_spec["priorityClassName"] = js.priority_class_name
    if js.network_topology is not None:
        pg_spec["networkTopology"] = js.network_topology
    return {
        "apiVersion": "scheduling.volcano.sh/v1beta1",
        "kind": "PodGroup",
        "metadata": pg_meta,
        "spec": pg_spec,
        "status": {"phase": "Pending"},
    }


def _tasks(spec: Mapping[str, Any], ref: Ref, classes: Mapping[str, int]) -> list[TaskSpec]:
    tasks: list[TaskSpec] = []
    for i, raw in enumerate(f.seq(spec.get("tasks"), ref, "spec.tasks")):
        field = f"spec.tasks[{i}]"
        task = f.mapping(raw, ref, field)
        task_name = f.string(task.get("name"), ref, f"{field}.name")
        replicas = f.integer(task.get("replicas"), ref, f"{field}.replicas", 0)
        min_available = f.integer(task.get("minAvailable"), ref, f"{field}.minAvailable", replicas)
        template = f.mapping(task.get("template"), ref, f"{field}.template")
        template_meta = f.mapping(template.get("metadata"), ref, f"{field}.template.metadata")
        template_spec = f.mapping(template.get("spec"), ref, f"{field}.template.spec")
        class_name = f.string(template_spec.get("priorityClassName"), ref, f"{field}.template.spec.priorityClassName")
        depends_on = f.mapping(task.get("dependsOn"), ref, f"{field}.dependsOn")
        depends_names = f.seq(depends_on.get("name"), ref, f"{field}.dependsOn.name")
        tasks.append(
            TaskSpec(
                index=i,
                name=task_name,
                replicas=replicas,
                min_available=min_available,
                template_meta=template_meta,
                template_spec=template_spec,
                topology_policy=f.string(task.get("topologyPolicy"), ref, f"{field}.topologyPolicy"),
                request=pod_request(template_spec, ref, f"{field}.template.spec"),
                priority=classes.get(class_name, 0) if class_name else 0,
                depends_on=tuple(f.string(n, ref, f"{field}.dependsOn.name[{k}]") for k, n in enumerate(depends_names)),
                iteration=f.string(depends_on.get("iteration"), ref, f"{field}.dependsOn.iteration"),
                raw=task,
            )
        )
    return tasks


def _min_resources(tasks: list[TaskSpec], min_available: int) -> Resource:
    """The requests of the first ``min_available`` pods, as the controller counts them."""
    ordered = sorted(tasks, key=lambda t: -t.priority)
    total = Resource()
    counted = 0
    for task in ordered:
        take = min(task.min_available, min_available - counted)
        if take > 0:
            total.add(task.request.clone().multi(take))
            counted += take
        if counted >= min_available:
            return total
    left = min_available - counted
    for task in ordered:
        spare = task.replicas - task.min_available
        if spare <= 0:
            continue
        take = min(spare, left)
        total.add(task.request.clone().multi(take))
        left -= take
        if left <= 0:
            break
    return total


def pod_manifest(
    js: JobSpec,
    task: TaskSpec,
    index: int,
    created: Any = None,
    *,
    version: int,
    retry_count: int,
) -> dict[str, Any]:
    """The pod the job controller makes for one task index, in API form.

    :param js: the Job.
    :param task: the task.
    :param index: the pod's index in the task.
    :param created: the pod's ``metadata.creationTimestamp`` (none when ``None``).
    :param version: the job version stamped on the pod (``volcano.sh/job-version``).
    :param retry_count: the retry count stamped on the pod (``volcano.sh/job-retry-count``).
    :returns: the manifest, Pending, without a uid.
    """
    name, namespace = js.name, js.namespace
    # volcanolib's runtime and exit code on the Job apply to every pod whose template does not
    # set them; Volcano copies no other Job annotation but those below.
    annotations = {k: js.annotations[k] for k in INHERITED_ANNOTATIONS if k in js.annotations}
    annotations.update({str(k): str(v) for k, v in (task.template_meta.get("annotations") or {}).items()})
    labels = {str(k): str(v) for k, v in (task.template_meta.get("labels") or {}).items()}
    annotations.update(
        {
            TASK_INDEX_KEY: str(index),
            TASK_SPEC_KEY: task.name,
            GROUP_NAME_KEY: js.pod_group_name,
            JOB_NAME_KEY: name,
            QUEUE_NAME_KEY: js.queue,
            JOB_VERSION_KEY: str(version),
            TEMPLATE_UID_KEY: f"{name}-{task.name}",
            RETRY_COUNT_KEY: str(retry_count),
        }
    )
    if task.topology_policy:
        annotations[NUMA_POLICY_KEY] = task.topology_policy
    for key in _COPIED_ANNOTATIONS:
        if key in js.annotations:
            annotations[key] = js.annotations[key]
    for key in _JDB_KEYS:
        if key in js.annotations:
            annotations[key] = js.annotations[key]
            break
    labels.update(
        {
            TASK_INDEX_KEY: str(index),
            JOB_NAME_KEY: name,
            TASK_SPEC_KEY: task.name,
            JOB_NAMESPACE_KEY: namespace,
            QUEUE_NAME_KEY: js.queue,
        }
    )
    for key in _COPIED_LABELS:
        if key in js.labels:
            labels[key] = js.labels[key]
    spec = dict(task.template_spec)
    if not spec.get("schedulerName"):
        spec["schedulerName"] = js.scheduler_name
    if not spec.get("priorityClassName") and js.priority_class_name:
        spec["priorityClassName"] = js.priority_class_name
    pod_meta: dict[str, Any] = {
        "name": task.pod_name(name, index),
        "namespace": namespace,
        "annotations": annotations,
        "labels": labels,
        "ownerReferences": [
            {"apiVersion": API_VERSION, "kind": "Job", "name": name, "uid": js.uid, "controller": True}
        ],
    }
    if created is not None:
        pod_meta["creationTimestamp"] = created
    return {"apiVersion": "v1", "kind": "Pod", "metadata": pod_meta, "spec": spec, "status": {"phase": "Pending"}}
