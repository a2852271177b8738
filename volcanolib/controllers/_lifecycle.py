"""A Job's lifecycle fields (policies, maxRetry, minSuccess, dependsOn, plugins), checked as Volcano's webhook does.

:func:`volcanolib.kube.jobs.parse_job` reads what both ``simulate`` and the
job controller need; what only the controller reads is read here, with the
admission webhook's defaults and refusals (``validatePolicies`` and
``validateJobCreate``).
"""

from __future__ import annotations

from collections.abc import Mapping
from typing import Any, Final

import attrs

from volcanolib.kube import _fields as f
from volcanolib.kube._fields import Ref
from volcanolib.kube.jobs import JobSpec

__all__ = ["ACTIONS", "EVENTS", "Lifecycle", "Policy", "read_lifecycle"]

#: Events a policy may name (the webhook refuses others); ``*`` is any event.
EVENTS: Final = frozenset(
    {"*", "PodFailed", "PodEvicted", "PodPending", "Unknown", "TaskCompleted", "TaskFailed", "JobUpdated"}
)
#: Actions a policy may take.
ACTIONS: Final = frozenset(
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
#: The job plugins Volcano knows; an unknown name is refused.
PLUGINS: Final = frozenset({"env", "svc", "ssh", "tensorflow", "pytorch", "mpi", "ray", "hcclrank"})
#: ``maxRetry`` when the Job sets none (or 0).
DEFAULT_MAX_RETRY: Final = 3


@attrs.frozen
class Policy:
    """One lifecycle policy: on these events (or this exit code), take this action, maybe after a delay."""

    #: Events it matches (``*`` for any); empty for an exit-code policy.
    events: frozenset[str]
    #: The exit code it matches (a PodFailed with this code), or ``None``.
    exit_code: int | None
    action: str
    #: Seconds to wait before acting (0: act at once).
    timeout: float = 0.0


@attrs.frozen
class Lifecycle:
    """What drives a Job's lifecycle, after the webhook's defaults."""

    #: Job-level policies, in order.
    policies: tuple[Policy, ...]
    #: Task-level policies by task name, in order; they win over the job's.
    task_policies: Mapping[str, tuple[Policy, ...]]
    max_retry: int
    #: ``minSuccess``, or ``None`` when unset.
    min_success: int | None
    #: Per task: its ``maxRetry``, the container restarts of its running and pending pods that raise
    #: ``TaskFailed`` (3 when unset or 0; -1: never).
    task_max_retry: Mapping[str, int] = attrs.field(factory=dict)


def read_lifecycle(job: Mapping[str, Any], js: JobSpec) -> Lifecycle:
    """Read and check the lifecycle fields of a Job parsed as ``js``.

    :param job: the Job manifest.
    :param js: the same Job, parsed by :func:`~volcanolib.kube.jobs.parse_job`.
    :returns: its policies, ``maxRetry`` and ``minSuccess``.
    :raises ManifestError: naming the field, when Volcano's admission would refuse the Job.
    """
    ref = js.ref
    spec = f.mapping(job.get("spec"), ref, "spec")
    max_retry = f.integer(spec.get("maxRetry"), ref, "spec.maxRetry", 0, minimum=0) or DEFAULT_MAX_RETRY
    min_success: int | None = None
    if spec.get("minSuccess") is not None:
        min_success = f.integer(spec.get("minSuccess"), ref, "spec.minSuccess", 1, minimum=1)
        if min_success > js.replicas:
            ref.fail(
                f"{min_success} is more than the {js.replicas} replicas of the job's tasks "
                "(Volcano's admission refuses this Job)",
                "spec.minSuccess",
            )
    for name in f.mapping(spec.get("plugins"), ref, "spec.plugins"):
        if name not in PLUGINS:
            ref.fail(f"unknown job plugin {name!r} (expected one of {', '.join(sorted(PLUGINS))})", "spec.plugins")
    names = {t.name for t in js.tasks}
    for task in js.tasks:
        field = f"spec.tasks[{task.index}]"
        if task.min_available > task.replicas:
            ref.fail(
                f"{task.min_available} is more than the task's {task.replicas} replicas "
                "(Volcano's admission refuses this Job)",
                f"{field}.minAvailable",
            )
        for k, other in enumerate(task.depends_on):
            if other not in names:
                ref.fail(f"no task named {other!r} in this Job", f"{field}.dependsOn.name[{k}]")
        if task.iteration not in ("", "any", "all"):
            ref.fail(f"expected 'any' or 'all', got {task.iteration!r}", f"{field}.dependsOn.iteration")
    _check_acyclic(js)
    return Lifecycle(
        policies=_policies(spec.get("policies"), js, "spec.policies"),
        task_policies={
            t.name: _policies(t.raw.get("policies"), js, f"spec.tasks[{t.index}].policies") for t in js.tasks
        },
        max_retry=max_retry,
        min_success=min_success,
        task_max_retry={
            t.name: f.integer(t.raw.get("maxRetry"), ref, f"spec.tasks[{t.index}].maxRetry", 0, minimum=-1)
            or DEFAULT_MAX_RETRY
            for t in js.tasks
        },
    )


def _policies(raw: Any, js: JobSpec, field: str) -> tuple[Policy, ...]:
    """One list of policies (the Job's or a task's), checked as the admission webhook checks it.

    A policy's ``event`` and ``events`` are merged and repeats dropped, as
    Volcano does; an event named by two policies of the list, or ``*``
    beside any other event, is refused.
    """
    ref = js.ref
    out: list[Policy] = []
    #: Each event of the list, with the policy that first named it.
    seen_events: dict[str, str] = {}
    seen_codes: set[int] = set()
    for i, item in enumerate(f.seq(raw, ref, field)):
        where = f"{field}[{i}]"
        policy = f.mapping(item, ref, where)
        events = _policy_events(policy, ref, where)
        has_code = policy.get("exitCode") is not None
        if events and has_code:
            ref.fail("a policy has either events or an exitCode, not both", where)
        if not events and not has_code:
            ref.fail("a policy needs events or an exitCode", where)
        exit_code: int | None = None
        if has_code:
            exit_code = f.integer(policy.get("exitCode"), ref, f"{where}.exitCode", 0)
            if exit_code == 0:
                ref.fail("0 is not an error code", f"{where}.exitCode")
            if exit_code in seen_codes:
                ref.fail(f"exit code {exit_code} appears twice in one policy list", f"{where}.exitCode")
            seen_codes.add(exit_code)
        for event in events:
            if event not in EVENTS:
                ref.fail(f"unknown event {event!r} (expected one of {', '.join(sorted(EVENTS))})", where)
            first = seen_events.get(event)
            if first is not None:
                ref.fail(
                    f"event {event!r} is also in {first}: Volcano's admission refuses an event in two policies",
                    where,
                )
            seen_events[event] = where
        action = f.string(policy.get("action"), ref, f"{where}.action")
        if action not in ACTIONS:
            ref.fail(f"unknown action {action!r} (expected one of {', '.join(sorted(ACTIONS))})", f"{where}.action")
        timeout = f.duration(policy.get("timeout"), ref, f"{where}.timeout") or 0.0
        out.append(Policy(frozenset(events), exit_code, action, timeout))
    if "*" in seen_events and len(seen_events) > 1:
        ref.fail("'*' must be the only event of its policy list", field)
    return tuple(out)


def _policy_events(policy: Mapping[str, Any], ref: Ref, where: str) -> list[str]:
    """A policy's ``events`` then its ``event``, each once, in that order (empty names left out)."""
    named: list[str] = [
        f.string(event, ref, f"{where}.events[{k}]")
        for k, event in enumerate(f.seq(policy.get("events"), ref, f"{where}.events"))
    ]
    if policy.get("event") is not None:
        named.append(f.string(policy.get("event"), ref, f"{where}.event"))
    return list(dict.fromkeys(event for event in named if event))


def _check_acyclic(js: JobSpec) -> None:
    """Refuse ``dependsOn`` edges that form a cycle (the webhook wants a DAG)."""
    edges = {t.name: t.depends_on for t in js.tasks}
    done: set[str] = set()
    for start in js.tasks:
        path: list[str] = []
        on_path: set[str] = set()
        stack: list[tuple[str, int]] = [(start.name, 0)]
        while stack:
            node, i = stack.pop()
            if i == 0:
                if node in done:
                    continue
                path.append(node)
                on_path.add(node)
            deps = edges[node]
            if i < len(deps):
                stack.append((node, i + 1))
                nxt = deps[i]
                if nxt in on_path:
                    cycle = " -> ".join([*path[path.index(nxt) :], nxt])
                    js.ref.fail(f"the tasks' dependsOn form a cycle: {cycle}", "spec.tasks")
                stack.append((nxt, 0))
            else:
                path.pop()
                on_path.discard(node)
                done.add(node)
