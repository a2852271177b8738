"""A Job's lifecycle fields (policies, maxRetry, minSuccess), as the job controller reads them.

:func:`volcanolib.kube.jobs.parse_job` reads what both ``simulate`` and the
job controller need, after Volcano's admission
(:mod:`volcanolib.manifests.admission`, which also reads and checks the
policies); what only the controller reads is read here.
"""

from __future__ import annotations

from collections.abc import Mapping
from typing import Final

import attrs

from volcanolib.kube.jobs import JobSpec
from volcanolib.manifests import fields as f
from volcanolib.manifests.admission import DEFAULT_MAX_RETRY, POLICY_ACTIONS, POLICY_EVENTS, Policy, read_policies

__all__ = ["ACTIONS", "EVENTS", "Lifecycle", "Policy", "read_lifecycle"]

#: Events a policy may name (the webhook refuses others); ``*`` is any event.
EVENTS: Final = POLICY_EVENTS
#: Actions a policy may take.
ACTIONS: Final = POLICY_ACTIONS


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
    #: ``ttlSecondsAfterFinished``, or ``None`` when unset (the Job is never deleted).
    ttl_after_finished: int | None = None
    #: The job plugins and their arguments, in the Job's order.
    plugins: Mapping[str, tuple[str, ...]] = attrs.field(factory=dict)
    #: Per task: its ``maxRetry``, the container restarts of its running and pending pods that raise
    #: ``TaskFailed`` (3 when unset or 0).
    task_max_retry: Mapping[str, int] = attrs.field(factory=dict)


def read_lifecycle(js: JobSpec) -> Lifecycle:
    """Read the lifecycle fields of a Job parsed as ``js``.

    :param js: the Job, parsed (and admitted) by :func:`~volcanolib.kube.jobs.parse_job`.
    :returns: its policies, ``maxRetry``, ``minSuccess``, TTL and plugins.
    :raises ManifestError: naming the field, when Volcano's admission would refuse the Job.
    """
    ref = js.ref
    spec = f.mapping(js.manifest.get("spec"), ref, "spec")
    max_retry = f.integer(spec.get("maxRetry"), ref, "spec.maxRetry", 0, minimum=0) or DEFAULT_MAX_RETRY
    min_success: int | None = None
    if spec.get("minSuccess") is not None:
        min_success = f.integer(spec.get("minSuccess"), ref, "spec.minSuccess", 1, minimum=1)
    ttl: int | None = None
    if spec.get("ttlSecondsAfterFinished") is not None:
        ttl = f.integer(spec.get("ttlSecondsAfterFinished"), ref, "spec.ttlSecondsAfterFinished", 0, minimum=0)
    plugins = {
        str(name): tuple(str(a) for a in f.seq(args, ref, f"spec.plugins.{name}"))
        for name, args in f.mapping(spec.get("plugins"), ref, "spec.plugins").items()
    }
    return Lifecycle(
        policies=read_policies(spec.get("policies"), ref, "spec.policies"),
        task_policies={
            t.name: read_policies(t.raw.get("policies"), ref, f"spec.tasks[{t.index}].policies") for t in js.tasks
        },
        max_retry=max_retry,
        min_success=min_success,
        ttl_after_finished=ttl,
        plugins=plugins,
        task_max_retry={
            t.name: f.integer(t.raw.get("maxRetry"), ref, f"spec.tasks[{t.index}].maxRetry", 0, minimum=0)
            or DEFAULT_MAX_RETRY
            for t in js.tasks
        },
    )
