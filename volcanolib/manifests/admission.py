"""Volcano's admission for Jobs, PodGroups and Queues: what it refuses, and the defaults it sets.

Volcano judges these objects in three places: the CRD schemas (types,
minimums, enums), the mutating webhooks (defaults, on create) and the
validating webhooks (refusals, on create and update). This module holds the
three as one set of rules, written from Volcano v1.14.1, and every part of
volcanolib that takes such an object in applies them from here: the
manifest loader (``simulate``, ``check``, ``explain``), replay, the job
controller, the live controllers and ``serve --webhooks``.

* :func:`default_job`, :func:`default_queue`, :func:`default_pod_group`
  return the object as the mutating webhook leaves it (a new mapping; the
  argument is not changed).
* :func:`validate_job`, :func:`validate_queue`, :func:`validate_pod_group`
  raise :class:`~volcanolib.errors.ManifestError` naming the object and the
  field, with the webhook's reason in volcanolib's words.
* :func:`admit_job` is both, in the webhooks' order (defaults first).
* :func:`read_policies` reads and checks one list of lifecycle policies: an
  event named twice within one policy counts once, an event in two
  policies of one list is refused.

The checks that compare a Job or a PodGroup with its queue (the queue
exists, is Open, is not ``root`` and has no child queues) need the queues:
pass them as ``queues``, a mapping of name to :class:`QueueFacts`; without
it they are skipped. They apply to a Job being created, that is one without
``status.state.phase``: a Job with a status was admitted when it was created.

Deliberate difference: Volcano's job webhook checks the action of a policy
only when the policy names events (its optional ValidatingAdmissionPolicy
checks every policy); here an exit-code policy with an unknown action is
refused too.
"""

from __future__ import annotations

import re
from collections.abc import Iterable, Mapping
from typing import Any, Final

import attrs

from volcanolib.api.resource import Resource
from volcanolib.manifests import fields as f
from volcanolib.manifests.fields import Ref
from volcanolib.manifests.keys import HIERARCHY_KEY, HIERARCHY_WEIGHTS_KEY, SCHEDULING_QUEUE_KEY

__all__ = [
    "DEFAULT_MAX_RETRY",
    "DEFAULT_QUEUE",
    "JOB_PLUGINS",
    "POLICY_ACTIONS",
    "POLICY_EVENTS",
    "Policy",
    "QueueFacts",
    "admit_job",
    "default_job",
    "default_pod_group",
    "default_queue",
    "job_ref",
    "plugin_flag",
    "queue_facts",
    "read_policies",
    "validate_job",
    "validate_pod_group",
    "validate_queue",
]

#: The queue of a Job or PodGroup that names none.
DEFAULT_QUEUE: Final = "default"
#: ``maxRetry`` of a Job, and of a task, that sets none (or 0).
DEFAULT_MAX_RETRY: Final = 3
#: Events a lifecycle policy may name; ``*`` is any event.
POLICY_EVENTS: Final = frozenset(
    {"*", "PodFailed", "PodEvicted", "PodPending", "Unknown", "TaskCompleted", "TaskFailed", "JobUpdated"}
)
#: Actions a lifecycle policy may take.
POLICY_ACTIONS: Final = frozenset(
    {
        "AbortJob",
        "RestartJob",
        "RestartTask",
        "RestartPod",
        "RestartPartition",
        "TerminateJob",
        "CompleteJob",
        "ResumeJob",
    }
)
#: The job plugins Volcano's controller has; a Job naming another is refused.
JOB_PLUGINS: Final = frozenset({"env", "svc", "ssh", "tensorflow", "pytorch", "mpi", "ray", "hcclrank"})
#: Plugins that need ``svc`` (the webhook adds it), and the one that also needs ``ssh``.
_NEEDS_SVC: Final = ("tensorflow", "mpi", "pytorch", "ray")
#: ``topologyPolicy`` values of a task.
TOPOLOGY_POLICIES: Final = ("none", "best-effort", "restricted", "single-numa-node")
#: Queue states a Queue may be created with (the queue controller moves it to the others).
_CREATE_STATES: Final = ("", "Open", "Closed")
_STORED_STATES: Final = ("", "Open", "Closed", "Closing", "Unknown")
_MAX_WEIGHT: Final = 65535

_DNS_LABEL = re.compile(r"^[a-z0-9]([-a-z0-9]*[a-z0-9])?$")
_DNS_SUBDOMAIN = re.compile(r"^[a-z0-9]([-a-z0-9]*[a-z0-9])?(\.[a-z0-9]([-a-z0-9]*[a-z0-9])?)*$")
_QUALIFIED_NAME = re.compile(r"^([A-Za-z0-9][-A-Za-z0-9_.]*)?[A-Za-z0-9]$")
_WEIGHT = re.compile(r"^[0-9]+(\.[0-9]+)?$")


@attrs.frozen
class Policy:
    """One lifecycle policy, read and checked: on these events (or this exit code), take this action."""

    #: Events it matches (``*`` for any); empty for an exit-code policy.
    events: frozenset[str]
    #: The exit code it matches (a PodFailed with this code), or ``None``.
    exit_code: int | None
    action: str
    #: Seconds to wait before acting (0: act at once).
    timeout: float = 0.0


@attrs.frozen
class QueueFacts:
    """What admission needs to know of an existing queue."""

    name: str
    #: ``status.state`` (empty counts as Open, as the queue controller opens a new queue).
    state: str = "Open"
    #: ``spec.parent`` (empty: under ``root``).
    parent: str = ""


def queue_facts(queues: Iterable[Mapping[str, Any]]) -> dict[str, QueueFacts]:
    """The facts of Queue manifests, by name (malformed fields read as absent)."""
    out: dict[str, QueueFacts] = {}
    for queue in queues:
        meta = _dict(queue.get("metadata")) or {}
        spec = _dict(queue.get("spec")) or {}
        status = _dict(queue.get("status")) or {}
        name = str(meta.get("name") or "")
        if name:
            out[name] = QueueFacts(name, str(status.get("state") or "Open"), str(spec.get("parent") or ""))
    return out


# ---------------------------------------------------------------------- small readers


def _int(value: Any) -> int | None:
    """An integer field as the defaults read it: ``None`` when absent or not an integer."""
    if isinstance(value, bool):
        return None
    if isinstance(value, int):
        return value
    if isinstance(value, str):
        try:
            return int(value.strip())
        except ValueError:
            return None
    return None


def _dict(value: Any) -> dict[str, Any] | None:
    return value if isinstance(value, dict) else None


def _qualified_name_problem(name: str) -> str:
    """Why ``name`` is not a Kubernetes qualified name (empty when it is one)."""
    _, sep, last = name.rpartition("/")
    if sep and not _DNS_SUBDOMAIN.match(name.rpartition("/")[0]):
        return "its prefix must be a DNS subdomain"
    if not last:
        return "it is empty"
    if len(last) > 63:
        return f"it has {len(last)} characters, at most 63 are allowed"
    if not _QUALIFIED_NAME.match(last):
        return "it must be letters, digits, '-', '_' or '.', starting and ending with a letter or digit"
    return ""


# ---------------------------------------------------------------------- Jobs: defaults


def default_job(
    job: Mapping[str, Any], *, scheduler_name: str = "volcano", default_queue: str = DEFAULT_QUEUE
) -> dict[str, Any]:
    """The Job as Volcano's mutating webhook leaves it on create.

    Sets the queue, the scheduler name, ``maxRetry`` 3 (when 0 or unset), each
    task's name (``default<index>``), ``minAvailable`` (its replicas, or
    ``minPartitions x partitionSize``), ``maxRetry`` 3 and, for a host-network
    template without one, ``dnsPolicy: ClusterFirstWithHostNet``; then the
    Job's ``minAvailable`` (when 0 or unset: the sum of the tasks'), and the
    ``svc`` plugin for ``tensorflow``, ``mpi``, ``pytorch`` and ``ray``, ``ssh``
    for ``mpi``. Fields of the wrong type are left for :func:`validate_job`.

    :param job: a ``batch.volcano.sh/v1alpha1`` Job manifest (not changed).
    :param scheduler_name: the scheduler name given to a Job that names none.
    :param default_queue: the queue of a Job that names none.
    :returns: a new mapping sharing the parts it does not change.
    """
    out = dict(job)
    spec = _dict(job.get("spec"))
    if spec is None:
        return out
    spec = dict(spec)
    out["spec"] = spec
    if not spec.get("queue"):
        spec["queue"] = default_queue
    if not spec.get("schedulerName"):
        spec["schedulerName"] = scheduler_name
    if spec.get("maxRetry") in (None, 0, "0"):
        spec["maxRetry"] = DEFAULT_MAX_RETRY
    tasks = spec.get("tasks")
    if isinstance(tasks, list):
        spec["tasks"] = [_default_task(task, i) for i, task in enumerate(tasks)]
    if spec.get("minAvailable") in (None, 0, "0") and isinstance(spec.get("tasks"), list):
        total = 0
        for task in spec["tasks"]:
            if isinstance(task, dict):
                total += _int(task.get("minAvailable")) or 0
        spec["minAvailable"] = total
    plugins = _dict(spec.get("plugins"))
    if plugins is not None:
        plugins = dict(plugins)
        if any(name in plugins for name in _NEEDS_SVC):
            plugins.setdefault("svc", [])
        if "mpi" in plugins:
            plugins.setdefault("ssh", [])
        spec["plugins"] = plugins
    return out


def _default_task(task: Any, index: int) -> Any:
    if not isinstance(task, dict):
        return task
    task = dict(task)
    if not task.get("name"):
        task["name"] = f"default{index}"
    template = _dict(task.get("template"))
    pod_spec = _dict(template.get("spec")) if template is not None else None
    if (
        template is not None
        and pod_spec is not None
        and pod_spec.get("hostNetwork") is True
        and not pod_spec.get("dnsPolicy")
    ):
        task["template"] = {**template, "spec": {**pod_spec, "dnsPolicy": "ClusterFirstWithHostNet"}}
    if task.get("minAvailable") is None:
        partition = _dict(task.get("partitionPolicy"))
        if partition is not None:
            task["minAvailable"] = (_int(partition.get("minPartitions")) or 0) * (
                _int(partition.get("partitionSize")) or 0
            )
        else:
            task["minAvailable"] = _int(task.get("replicas")) or 0
    if task.get("maxRetry") in (None, 0, "0"):
        task["maxRetry"] = DEFAULT_MAX_RETRY
    return task


# ---------------------------------------------------------------------- Jobs: refusals


def read_policies(raw: Any, ref: Ref, field: str) -> tuple[Policy, ...]:
    """Read one list of lifecycle policies (a Job's, or one task's) and check it as Volcano's webhook does.

    A policy has events (``event`` and ``events``, merged, an event named
    twice counting once) or an ``exitCode``, not both and not neither; an
    event appears in one policy of the list at most, and ``*`` only alone;
    an exit code is not 0 and appears once; events and actions are those
    Volcano accepts from users; ``timeout`` is a duration.

    :param raw: the list as written (``None`` is an empty list).
    :param field: the list's path, for errors (``spec.policies``).
    :raises ManifestError: naming the policy and field at fault.
    """
    out: list[Policy] = []
    seen_events: dict[str, int] = {}
    seen_codes: dict[int, int] = {}
    for i, item in enumerate(f.seq(raw, ref, field)):
        where = f"{field}[{i}]"
        policy = f.mapping(item, ref, where)
        events: list[str] = []
        if policy.get("event") is not None:
            events.append(f.string(policy.get("event"), ref, f"{where}.event"))
        for k, event in enumerate(f.seq(policy.get("events"), ref, f"{where}.events")):
            events.append(f.string(event, ref, f"{where}.events[{k}]"))
        events = list(dict.fromkeys(e for e in events if e))  # a repeat within one policy counts once
        has_code = policy.get("exitCode") is not None
        if events and has_code:
            ref.fail("a policy names events or an exitCode, not both (Volcano's admission refuses it)", where)
        if not events and not has_code:
            ref.fail("a policy needs events or an exitCode (Volcano's admission refuses it)", where)
        exit_code: int | None = None
        if has_code:
            exit_code = f.integer(policy.get("exitCode"), ref, f"{where}.exitCode", 0)
            if exit_code == 0:
                ref.fail("0 is a success, not an error code (Volcano's admission refuses it)", f"{where}.exitCode")
            if exit_code in seen_codes:
                ref.fail(
                    f"exit code {exit_code} is already handled by policy {seen_codes[exit_code]} of this list "
                    "(Volcano's admission refuses it)",
                    f"{where}.exitCode",
                )
            seen_codes[exit_code] = i
        for event in events:
            if event not in POLICY_EVENTS:
                ref.fail(
                    f"unknown event {event!r} (expected one of {', '.join(sorted(POLICY_EVENTS))})",
                    f"{where}.event" if policy.get("event") == event else f"{where}.events",
                )
            if event in seen_events:
                ref.fail(
                    f"event {event!r} is already handled by policy {seen_events[event]} of this list "
                    "(Volcano's admission refuses the same event in two policies)",
                    where,
                )
            seen_events[event] = i
        action = f.string(policy.get("action"), ref, f"{where}.action")
        if action not in POLICY_ACTIONS:
            ref.fail(
                f"unknown action {action!r} (expected one of {', '.join(sorted(POLICY_ACTIONS))})", f"{where}.action"
            )
        timeout = f.duration(policy.get("timeout"), ref, f"{where}.timeout") or 0.0
        out.append(Policy(frozenset(events), exit_code, action, timeout))
    if "*" in seen_events and len(seen_events) > 1:
        ref.fail("'*' stands for every event: no other event may be named in the same list", field)
    return tuple(out)


def validate_job(
    job: Mapping[str, Any], ref: Ref | None = None, *, queues: Mapping[str, QueueFacts] | None = None
) -> None:
    """Refuse a Job as Volcano's admission would (apply :func:`default_job` first, as Volcano does).

    Checked: a qualified name; at least one task; task names (a DNS label,
    unique), replicas and ``minAvailable`` (at least 0, the task's at most
    its replicas, the Job's at most all replicas); each pod name
    ``<job>-<task>-<position>`` a qualified name; containers named, once
    each; ``topologyPolicy`` (integer cpu requests when set);
    ``partitionPolicy``; the policies (:func:`read_policies`); the plugins
    (known names; ``mpi``'s master and worker tasks exist); ``maxRetry``,
    ``minSuccess``, ``ttlSecondsAfterFinished`` bounds; volumes;
    ``networkTopology``; ``dependsOn`` naming tasks of the Job without a
    cycle; and, for a new Job with ``queues`` given, its queue.

    :param job: the Job manifest, after :func:`default_job`.
    :param ref: where it came from, for errors (by default, its name).
    :param queues: the queues that exist, for the queue checks.
    :raises ManifestError: naming the field at fault.
    """
    if ref is None:
        ref = job_ref(job)
    meta = f.mapping(job.get("metadata"), ref, "metadata")
    spec = f.mapping(job.get("spec"), ref, "spec")
    status = f.mapping(job.get("status"), ref, "status")
    name = f.string(meta.get("name"), ref, "metadata.name") or ref.name
    problem = _qualified_name_problem(name)
    if problem:
        ref.fail(f"the Job's name {name!r} is not a qualified name: {problem}", "metadata.name")
    tasks = f.seq(spec.get("tasks"), ref, "spec.tasks")
    if not tasks:
        ref.fail("missing required field: a Job needs at least one task", "spec.tasks")
    names: dict[str, int] = {}
    total = 0
    for i, raw in enumerate(tasks):
        total += _validate_task(raw, i, name, names, ref)
    for key, low in (("minAvailable", 0), ("maxRetry", 0), ("minSuccess", 1), ("ttlSecondsAfterFinished", 0)):
        f.integer(spec.get(key), ref, f"spec.{key}", low, minimum=low)
    min_available = f.integer(spec.get("minAvailable"), ref, "spec.minAvailable", 0)
    if min_available > total:
        ref.fail(
            f"{min_available} is more than the {total} replicas of the job's tasks (Volcano's admission refuses it)",
            "spec.minAvailable",
        )
    read_policies(spec.get("policies"), ref, "spec.policies")
    plugins = f.mapping(spec.get("plugins"), ref, "spec.plugins")
    for plugin, args in plugins.items():
        if plugin not in JOB_PLUGINS:
            ref.fail(
                f"unknown job plugin {plugin!r} (expected one of {', '.join(sorted(JOB_PLUGINS))})",
                f"spec.plugins.{plugin}",
            )
        for k, arg in enumerate(f.seq(args, ref, f"spec.plugins.{plugin}")):
            f.string(arg, ref, f"spec.plugins.{plugin}[{k}]")
    if "mpi" in plugins:
        args = [str(a) for a in f.seq(plugins["mpi"], ref, "spec.plugins.mpi")]
        for role, default in (("master", "master"), ("worker", "worker")):
            wanted = plugin_flag(args, role, default)
            if wanted not in names:
                ref.fail(f"the mpi plugin's {role} task {wanted!r} is not a task of this Job", "spec.plugins.mpi")
    _validate_volumes(spec.get("volumes"), ref)
    _validate_topology(spec.get("networkTopology"), ref, "spec.networkTopology")
    queue = f.string(spec.get("queue"), ref, "spec.queue")
    state = f.mapping(status.get("state"), ref, "status.state")
    if queues is not None and not f.string(state.get("phase"), ref, "status.state.phase"):
        _check_queue(queue or DEFAULT_QUEUE, queues, ref, "Job", "spec.queue")
    _check_depends_on(tasks, names, ref)


def _validate_task(raw: Any, i: int, job_name: str, names: dict[str, int], ref: Ref) -> int:
    """Check one task; return its replicas."""
    field = f"spec.tasks[{i}]"
    task = f.mapping(raw, ref, field)
    task_name = f.string(task.get("name"), ref, f"{field}.name") or f"default{i}"
    if task_name in names:
        ref.fail(
            f"duplicate task name {task_name!r}: task {names[task_name]} has it too (Volcano's admission refuses it)",
            f"{field}.name",
        )
    names[task_name] = i
    if len(task_name) > 63 or not _DNS_LABEL.match(task_name):
        ref.fail(
            f"the task name {task_name!r} is not a DNS label (lower-case letters, digits and '-', at most 63)",
            f"{field}.name",
        )
    pod_name = f"{job_name}-{task_name}-{i}"
    problem = _qualified_name_problem(pod_name)
    if problem:
        ref.fail(f"its pods' names such as {pod_name!r} would not be valid: {problem}", f"{field}.name")
    replicas = f.integer(task.get("replicas"), ref, f"{field}.replicas", 0, minimum=0)
    min_available = f.integer(task.get("minAvailable"), ref, f"{field}.minAvailable", replicas, minimum=0)
    if min_available > replicas:
        ref.fail(
            f"{min_available} is more than the task's {replicas} replicas (Volcano's admission refuses it)",
            f"{field}.minAvailable",
        )
    f.integer(task.get("maxRetry"), ref, f"{field}.maxRetry", 0, minimum=0)
    if task.get("template") is None:
        ref.fail("missing required field: template", f"{field}.template")
    template = f.mapping(task.get("template"), ref, f"{field}.template")
    pod_spec = f.mapping(template.get("spec"), ref, f"{field}.template.spec")
    containers = f.seq(pod_spec.get("containers"), ref, f"{field}.template.spec.containers")
    if not containers:
        ref.fail("missing required field: a pod needs at least one container", f"{field}.template.spec.containers")
    seen: set[str] = set()
    for kind in ("containers", "initContainers"):
        for k, c in enumerate(f.seq(pod_spec.get(kind), ref, f"{field}.template.spec.{kind}")):
            where = f"{field}.template.spec.{kind}[{k}]"
            container = f.mapping(c, ref, where)
            cname = f.string(container.get("name"), ref, f"{where}.name")
            if not cname:
                ref.fail("missing required field: name", f"{where}.name")
            if cname in seen:
                ref.fail(f"duplicate container name {cname!r}", f"{where}.name")
            seen.add(cname)
    read_policies(task.get("policies"), ref, f"{field}.policies")
    policy = f.string(task.get("topologyPolicy"), ref, f"{field}.topologyPolicy")
    if policy and policy not in TOPOLOGY_POLICIES:
        ref.fail(
            f"unknown topology policy {policy!r} (expected one of {', '.join(TOPOLOGY_POLICIES)})",
            f"{field}.topologyPolicy",
        )
    if policy and policy != "none":
        _check_integer_cpus(pod_spec, ref, f"{field}.template.spec")
    partition = f.mapping(task.get("partitionPolicy"), ref, f"{field}.partitionPolicy")
    if partition:
        pfield = f"{field}.partitionPolicy"
        total = f.integer(partition.get("totalPartitions"), ref, f"{pfield}.totalPartitions", 0)
        size = f.integer(partition.get("partitionSize"), ref, f"{pfield}.partitionSize", 0)
        least = f.integer(partition.get("minPartitions"), ref, f"{pfield}.minPartitions", 0, minimum=0)
        if total <= 0:
            ref.fail("must be more than 0", f"{pfield}.totalPartitions")
        if size <= 0:
            ref.fail("must be more than 0", f"{pfield}.partitionSize")
        if replicas != total * size:
            ref.fail(f"replicas {replicas} differ from totalPartitions x partitionSize ({total * size})", pfield)
        if task.get("minAvailable") is not None and least * size != min_available:
            ref.fail(
                f"minAvailable {min_available} differs from minPartitions x partitionSize ({least * size})", pfield
            )
        _validate_topology(partition.get("networkTopology"), ref, f"{pfield}.networkTopology")
    return replicas


def plugin_flag(args: Iterable[str], flag: str, default: str) -> str:
    """The value of ``--flag=value`` (or ``--flag value``) among a job plugin's arguments."""
    items = list(args)
    value = default
    for k, arg in enumerate(items):
        for prefix in (f"--{flag}=", f"-{flag}="):
            if arg.startswith(prefix):
                value = arg[len(prefix) :]
        if arg in (f"--{flag}", f"-{flag}") and k + 1 < len(items):
            value = items[k + 1]
    return value


def _check_integer_cpus(pod_spec: Mapping[str, Any], ref: Ref, field: str) -> None:
    """With a NUMA topology policy every container asks for whole cpus (a request, or else its limit)."""
    for kind in ("containers", "initContainers"):
        for k, container in enumerate(f.seq(pod_spec.get(kind), ref, f"{field}.{kind}")):
            where = f"{field}.{kind}[{k}].resources"
            resources = f.mapping(f.mapping(container, ref, f"{field}.{kind}[{k}]").get("resources"), ref, where)
            requests = f.mapping(resources.get("requests"), ref, f"{where}.requests") or f.mapping(
                resources.get("limits"), ref, f"{where}.limits"
            )
            cpu = f.resources(requests, ref, f"{where}.requests").milli_cpu
            if cpu <= 0 or cpu % 1000:
                ref.fail("with a topologyPolicy, each container must request a whole number of cpus", where)


def _validate_volumes(raw: Any, ref: Ref) -> None:
    paths: set[str] = set()
    for i, item in enumerate(f.seq(raw, ref, "spec.volumes")):
        where = f"spec.volumes[{i}]"
        volume = f.mapping(item, ref, where)
        path = f.string(volume.get("mountPath"), ref, f"{where}.mountPath")
        if not path:
            ref.fail("missing required field: mountPath", f"{where}.mountPath")
        if path in paths:
            ref.fail(f"mount path {path!r} is used twice", f"{where}.mountPath")
        paths.add(path)
        claim_name = f.string(volume.get("volumeClaimName"), ref, f"{where}.volumeClaimName")
        claim = volume.get("volumeClaim")
        if claim is None and not claim_name:
            ref.fail("a volume needs volumeClaim (a new claim) or volumeClaimName (an existing one)", where)
        if claim is not None and claim_name:
            ref.fail("a volume names an existing claim or describes a new one, not both", where)
        if claim_name and (len(claim_name) > 253 or not _DNS_SUBDOMAIN.match(claim_name)):
            ref.fail(f"{claim_name!r} is not a valid claim name", f"{where}.volumeClaimName")


def _validate_topology(raw: Any, ref: Ref, field: str) -> None:
    topology = f.mapping(raw, ref, field)
    if topology.get("highestTierAllowed") is not None and topology.get("highestTierName"):
        ref.fail("highestTierAllowed and highestTierName exclude each other", field)
    mode = f.string(topology.get("mode"), ref, f"{field}.mode")
    if mode and mode not in ("hard", "soft"):
        ref.fail(f"unknown network topology mode {mode!r} (expected hard or soft)", f"{field}.mode")


def _check_queue(queue: str, queues: Mapping[str, QueueFacts], ref: Ref, kind: str, field: str) -> None:
    facts = queues.get(queue)
    if facts is None:
        ref.fail(f"queue {queue!r} does not exist (Volcano's admission refuses the {kind})", field)
    if facts.state not in ("", "Open"):
        ref.fail(f"queue {queue!r} is {facts.state}: only an Open queue takes a new {kind}", field)
    if kind == "Job":
        if queue == "root":
            ref.fail("the root queue takes no jobs: name a leaf queue", field)
        children = sorted(q.name for q in queues.values() if q.parent == queue)
        if children:
            ref.fail(f"queue {queue!r} has child queues ({', '.join(children)}): only a leaf queue takes jobs", field)


def _check_depends_on(tasks: list[Any], names: Mapping[str, int], ref: Ref) -> None:
    """``dependsOn`` names tasks of the Job, and the tasks form no cycle (the webhook wants a DAG)."""
    edges: dict[str, tuple[str, ...]] = {}
    for i, raw in enumerate(tasks):
        task = f.mapping(raw, ref, f"spec.tasks[{i}]")
        task_name = f.string(task.get("name"), ref, f"spec.tasks[{i}].name") or f"default{i}"
        depends = f.mapping(task.get("dependsOn"), ref, f"spec.tasks[{i}].dependsOn")
        f.string(depends.get("iteration"), ref, f"spec.tasks[{i}].dependsOn.iteration")
        deps: list[str] = []
        for k, other in enumerate(f.seq(depends.get("name"), ref, f"spec.tasks[{i}].dependsOn.name")):
            other = f.string(other, ref, f"spec.tasks[{i}].dependsOn.name[{k}]")
            if other not in names:
                ref.fail(
                    f"no task named {other!r} in this Job (Volcano's admission refuses dependencies that "
                    "do not form a directed acyclic graph)",
                    f"spec.tasks[{i}].dependsOn.name[{k}]",
                )
            deps.append(other)
        edges[task_name] = tuple(deps)
    done: set[str] = set()
    for start in edges:
        path: list[str] = []
        on_path: set[str] = set()
        stack: list[tuple[str, int]] = [(start, 0)]
        while stack:
            node, k = stack.pop()
            if k == 0:
                if node in done:
                    continue
                path.append(node)
                on_path.add(node)
            following = edges[node]
            if k < len(following):
                stack.append((node, k + 1))
                nxt = following[k]
                if nxt in on_path:
                    cycle = " -> ".join([*path[path.index(nxt) :], nxt])
                    ref.fail(f"the tasks' dependsOn form a cycle: {cycle}", "spec.tasks")
                stack.append((nxt, 0))
            else:
                path.pop()
                on_path.discard(node)
                done.add(node)


def admit_job(
    job: Mapping[str, Any],
    ref: Ref | None = None,
    *,
    queues: Mapping[str, QueueFacts] | None = None,
    scheduler_name: str = "volcano",
    default_queue: str = DEFAULT_QUEUE,
) -> dict[str, Any]:
    """Admit a Job as Volcano does on create: the mutating webhook's defaults, then the validating webhook.

    :returns: the Job with its defaults (a new mapping).
    :raises ManifestError: naming the field, when Volcano would refuse the Job.
    """
    if ref is None:
        ref = job_ref(job)
    defaulted = default_job(job, scheduler_name=scheduler_name, default_queue=default_queue)
    validate_job(defaulted, ref, queues=queues)
    return defaulted


def job_ref(job: Mapping[str, Any]) -> Ref:
    """A :class:`~volcanolib.manifests.fields.Ref` naming a Job manifest that came from no file."""
    meta = _dict(job.get("metadata")) or {}
    return Ref(None, "", "Job", str(meta.get("name") or ""), str(meta.get("namespace") or "default"))


# ---------------------------------------------------------------------- Queues


def default_queue(queue: Mapping[str, Any]) -> dict[str, Any]:
    """The Queue as Volcano's mutating webhook leaves it on create.

    ``weight`` 0 (or unset) becomes 1, an unset ``reclaimable`` becomes true,
    and a hierarchy that does not start at ``root`` is put under it (the
    annotations ``volcano.sh/hierarchy`` and ``volcano.sh/hierarchy-weights``
    get ``root/`` and ``1/`` in front).

    :returns: a new mapping sharing the parts it does not change.
    """
    out = dict(queue)
    spec = _dict(queue.get("spec"))
    spec = dict(spec) if spec is not None else {}
    out["spec"] = spec
    if spec.get("weight") in (None, 0, "0"):
        spec["weight"] = 1
    if spec.get("reclaimable") is None:
        spec["reclaimable"] = True
    meta = _dict(queue.get("metadata"))
    annotations = _dict(meta.get("annotations")) if meta is not None else None
    if meta is not None and annotations is not None:
        hierarchy = str(annotations.get(HIERARCHY_KEY) or "")
        weights = str(annotations.get(HIERARCHY_WEIGHTS_KEY) or "")
        if hierarchy and weights and not hierarchy.startswith("root"):
            out["metadata"] = {
                **meta,
                "annotations": {
                    **annotations,
                    HIERARCHY_KEY: f"root/{hierarchy}",
                    HIERARCHY_WEIGHTS_KEY: f"1/{weights}",
                },
            }
    return out


def validate_queue(
    queue: Mapping[str, Any],
    ref: Ref | None = None,
    *,
    queues: Iterable[Mapping[str, Any]] | None = None,
    created: bool = True,
) -> None:
    """Refuse a Queue as Volcano's admission would (apply :func:`default_queue` first).

    Always checked (the CRD schema; a stored Queue satisfies it): a state
    Volcano knows, a weight from 1 to 65535, quantities, and the hierarchy
    annotations (as many weights as levels, each above 0). When ``created``
    (a Queue being created or changed, as the webhook sees it): the state is
    Open, Closed or empty; ``deserved`` and ``guarantee`` do not exceed
    ``capability``, nor ``guarantee`` ``deserved``; and, with the other
    ``queues`` given, the parent exists and is not the queue itself, the
    queue's capability does not exceed its parent's, the children's
    ``guarantee`` and ``deserved`` fit the parent's, and no other queue's
    hierarchy lies under this one's.

    :param queues: the other Queue manifests, for the checks against them.
    :param created: apply the create-time checks.
    :raises ManifestError: naming the field at fault.
    """
    if ref is None:
        meta0 = _dict(queue.get("metadata")) or {}
        ref = Ref(None, "", "Queue", str(meta0.get("name") or ""))
    name = ref.name
    meta = f.mapping(queue.get("metadata"), ref, "metadata")
    spec = f.mapping(queue.get("spec"), ref, "spec")
    status = f.mapping(queue.get("status"), ref, "status")
    state = f.string(status.get("state"), ref, "status.state")
    allowed = _CREATE_STATES if created else _STORED_STATES
    if state not in allowed:
        known = ", ".join(s for s in allowed if s)
        ref.fail(f"unknown queue state {state!r} (expected one of {known})", "status.state")
    weight = f.integer(spec.get("weight"), ref, "spec.weight", 1)
    # The schema's minimum is 1, but a stored weight of 0 (a server without Volcano's CRD and
    # webhooks) reaches the scheduler, which gives such a queue nothing: it is read, and warned of.
    lowest = 1 if created else 0
    if not lowest <= weight <= _MAX_WEIGHT:
        ref.fail(f"must be from {lowest} to {_MAX_WEIGHT}, got {weight}", "spec.weight")
    capability = f.optional_resources(spec.get("capability"), ref, "spec.capability")
    deserved = f.optional_resources(spec.get("deserved"), ref, "spec.deserved")
    guarantee_spec = f.mapping(spec.get("guarantee"), ref, "spec.guarantee")
    guarantee = f.optional_resources(guarantee_spec.get("resource"), ref, "spec.guarantee.resource")
    annotations = f.string_map(meta.get("annotations"), ref, "metadata.annotations")
    hierarchy = annotations.get(HIERARCHY_KEY, "")
    weights = annotations.get(HIERARCHY_WEIGHTS_KEY, "")
    where = f"metadata.annotations.{HIERARCHY_KEY}"
    if hierarchy or weights:
        if len(hierarchy.split("/")) != len(weights.split("/")):
            ref.fail(f"{HIERARCHY_KEY} and {HIERARCHY_WEIGHTS_KEY} must have as many levels", where)
        for w in weights.split("/"):
            if not _WEIGHT.match(w) or float(w) <= 0:
                ref.fail(f"weight {w!r} of {HIERARCHY_WEIGHTS_KEY} is not a number above 0", where)
    if not created:
        return
    if capability is not None and not capability.is_empty():
        if deserved is not None and capability.less_partly(deserved):
            ref.fail("deserved must not exceed capability", "spec.deserved")
        if guarantee is not None and capability.less_partly(guarantee):
            ref.fail("guarantee must not exceed capability", "spec.guarantee.resource")
    if guarantee is not None and not guarantee.is_empty() and (deserved or Resource()).less_partly(guarantee):
        ref.fail("guarantee must not exceed deserved (a guarantee needs a deserved share)", "spec.guarantee.resource")
    if queues is None:
        return
    others = {str((q.get("metadata") or {}).get("name") or ""): q for q in queues}
    others.pop(name, None)
    if hierarchy:
        for other_name, other in sorted(others.items()):
            other_hierarchy = str(((other.get("metadata") or {}).get("annotations") or {}).get(HIERARCHY_KEY) or "")
            if other_hierarchy.startswith(hierarchy + "/"):
                ref.fail(f"hierarchy {hierarchy!r} lies above queue {other_name}'s ({other_hierarchy})", where)
    parent = f.string(spec.get("parent"), ref, "spec.parent")
    if parent and parent != "root" and name != "root":
        if parent == name:
            ref.fail("a queue cannot be its own parent", "spec.parent")
        parent_queue = others.get(parent)
        if parent_queue is None:
            ref.fail(f"parent queue {parent!r} does not exist", "spec.parent")
        pref = Ref(ref.source, ref.where, "Queue", parent)
        pspec = f.mapping(parent_queue.get("spec"), pref, "spec")
        pcap = f.optional_resources(pspec.get("capability"), pref, "spec.capability")
        if pcap is not None and capability is not None and pcap.less_partly(capability):
            ref.fail(f"capability exceeds parent queue {parent}'s capability", "spec.capability")
        _check_children_sums(pspec, pref, [spec, *(_spec_of(q) for n, q in others.items() if _parent(q) == parent)])
    children = [_spec_of(q) for q in others.values() if _parent(q) == name]
    if children:
        _check_children_sums(spec, ref, children)


def _spec_of(queue: Mapping[str, Any]) -> Mapping[str, Any]:
    spec = queue.get("spec")
    return spec if isinstance(spec, dict) else {}


def _parent(queue: Mapping[str, Any]) -> str:
    return str(_spec_of(queue).get("parent") or "")


def _check_children_sums(parent_spec: Mapping[str, Any], ref: Ref, children: list[Mapping[str, Any]]) -> None:
    """The children's guarantee and deserved, summed, fit the parent's (or its capability)."""
    cap = f.optional_resources(parent_spec.get("capability"), ref, "spec.capability")
    for key in ("guarantee", "deserved"):
        total = Resource()
        for child in children:
            value = child.get("guarantee", {}).get("resource") if key == "guarantee" else child.get(key)
            if isinstance(value, dict):
                total.add(f.resources(value, ref, f"spec.{key}"))
        raw = parent_spec.get("guarantee", {}).get("resource") if key == "guarantee" else parent_spec.get(key)
        limit = f.resources(raw, ref, f"spec.{key}") if isinstance(raw, dict) and raw else cap
        if limit is not None and not limit.is_empty() and limit.less_partly(total):
            ref.fail(f"the children's {key} together exceed queue {ref.name}'s limit", f"spec.{key}")


# ---------------------------------------------------------------------- PodGroups


def default_pod_group(
    pod_group: Mapping[str, Any], *, namespace_annotations: Mapping[str, str] | None = None
) -> dict[str, Any]:
    """The PodGroup as Volcano's mutating webhook leaves it on create.

    A PodGroup without a queue gets ``default`` (the CRD's default); one in
    the ``default`` queue gets its namespace's queue, when the namespace has
    the annotation ``scheduling.volcano.sh/queue-name``.

    :param namespace_annotations: the annotations of the PodGroup's namespace.
    :returns: a new mapping sharing the parts it does not change.
    """
    out = dict(pod_group)
    spec = _dict(pod_group.get("spec"))
    spec = dict(spec) if spec is not None else {}
    out["spec"] = spec
    if not spec.get("queue"):
        spec["queue"] = DEFAULT_QUEUE
    if spec["queue"] == DEFAULT_QUEUE and namespace_annotations and namespace_annotations.get(SCHEDULING_QUEUE_KEY):
        spec["queue"] = namespace_annotations[SCHEDULING_QUEUE_KEY]
    return out


def validate_pod_group(
    pod_group: Mapping[str, Any], ref: Ref | None = None, *, queues: Mapping[str, QueueFacts] | None = None
) -> None:
    """Refuse a new PodGroup as Volcano's admission would: a queue that is missing or not Open, a bad network topology.

    :param queues: the queues that exist; without them the queue is not checked.
    :raises ManifestError: naming the field at fault.
    """
    if ref is None:
        meta0 = _dict(pod_group.get("metadata")) or {}
        ref = Ref(None, "", "PodGroup", str(meta0.get("name") or ""), str(meta0.get("namespace") or "default"))
    spec = f.mapping(pod_group.get("spec"), ref, "spec")
    f.integer(spec.get("minMember"), ref, "spec.minMember", 0, minimum=0)
    _validate_topology(spec.get("networkTopology"), ref, "spec.networkTopology")
    for i, raw in enumerate(f.seq(spec.get("subGroupPolicy"), ref, "spec.subGroupPolicy")):
        sub = f.mapping(raw, ref, f"spec.subGroupPolicy[{i}]")
        _validate_topology(sub.get("networkTopology"), ref, f"spec.subGroupPolicy[{i}].networkTopology")
    queue = f.string(spec.get("queue"), ref, "spec.queue")
    if queues is not None and queue:
        _check_queue(queue, queues, ref, "PodGroup", "spec.queue")
