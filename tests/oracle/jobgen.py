"""Random job event sequences (docs/job-sequences.md), for the job controller differential.

:func:`generate` makes one sequence document from a seed, always the same
for the same seed: a Volcano Job with 1 to 3 tasks (replicas, task and job
``minAvailable``, ``maxRetry``, ``minSuccess``, ``dependsOn``, job and task
policies on events or exit codes, some with a small ``timeout``), then 4 to
18 steps: the PodGroup admitted (or Running, Unknown, back to Pending), pods
starting, succeeding, failing with an exit code, evicted, time passing, and
Commands. Steps name pods by name or by prefix (``*``), so a step whose pods
are gone does nothing, on both sides alike.

The Jobs are valid by construction: Volcano's admission accepts them.
"""

from __future__ import annotations

import random
from typing import Any, Final

__all__ = ["generate"]

JOB: Final = "job"
TASK_NAMES: Final = ("ps", "worker", "chief")
#: Exit codes the failures use; policies match some of them.
EXIT_CODES: Final = (1, 2, 137)
#: Policy timeouts, in seconds; the waits are chosen around them.
TIMEOUTS: Final = (10, 30, 60)
WAITS: Final = (5, 15, 25, 40, 70)
EVENTS: Final = ("PodFailed", "PodEvicted", "PodPending", "Unknown", "TaskCompleted")
ACTIONS: Final = ("RestartJob", "RestartTask", "RestartPod", "AbortJob", "CompleteJob", "TerminateJob", "ResumeJob")
COMMANDS: Final = ("AbortJob", "RestartJob", "ResumeJob", "TerminateJob", "CompleteJob", "SyncJob")


def _policies(rng: random.Random, *, task_level: bool) -> list[dict[str, Any]]:
    """0 to 2 policies; no event and no exit code twice in one list, ``*`` alone, as admission requires."""
    out: list[dict[str, Any]] = []
    used_events: set[str] = set()
    used_codes: set[int] = set()
    for _ in range(rng.choice((0, 0, 1, 1, 2))):
        action = rng.choice(ACTIONS)
        if not task_level and action == "RestartTask" and rng.random() < 0.5:
            action = "RestartJob"
        policy: dict[str, Any]
        if rng.random() < 0.3:
            code = rng.choice([c for c in EXIT_CODES if c not in used_codes] or [3])
            used_codes.add(code)
            policy = {"exitCode": code, "action": action}
        else:
            if not used_events and not out and rng.random() < 0.08:
                used_events.add("*")
                policy = {"event": "*", "action": action}
            else:
                free = [e for e in EVENTS if e not in used_events and "*" not in used_events]
                if not free:
                    continue
                if len(free) > 1 and rng.random() < 0.25:
                    events = rng.sample(free, 2)
                    used_events.update(events)
                    policy = {"events": events, "action": action}
                else:
                    event = rng.choice(free)
                    used_events.add(event)
                    policy = {"event": event, "action": action}
        if "PodPending" in (policy.get("event"), *policy.get("events", ())) or rng.random() < 0.3:
            policy["timeout"] = f"{rng.choice(TIMEOUTS)}s"
        out.append(policy)
    return out


def _job(rng: random.Random) -> tuple[dict[str, Any], list[str]]:
    """The Job and the names of its pods."""
    tasks: list[dict[str, Any]] = []
    pods: list[str] = []
    names = TASK_NAMES[: rng.choice((1, 1, 2, 2, 3))]
    minimums: list[int] = []
    for i, name in enumerate(names):
        replicas = rng.choice((1, 1, 2, 2, 3))
        task: dict[str, Any] = {
            "name": name,
            "replicas": replicas,
            "template": {
                "spec": {
                    "restartPolicy": "Never",
                    "containers": [{"name": "c", "image": "busybox", "resources": {"requests": {"cpu": "100m"}}}],
                }
            },
        }
        minimum = replicas
        if rng.random() < 0.35:
            minimum = rng.randint(1, replicas)
            task["minAvailable"] = minimum
        minimums.append(minimum)
        if policies := _policies(rng, task_level=True):
            task["policies"] = policies
        if i > 0 and rng.random() < 0.3:
            earlier = list(names[:i])
            depends = rng.sample(earlier, rng.randint(1, len(earlier)))
            task["dependsOn"] = {"name": depends}
            if len(depends) > 1 and rng.random() < 0.5:
                task["dependsOn"]["iteration"] = "any"
        tasks.append(task)
        pods += [f"{JOB}-{name}-{index}" for index in range(replicas)]
    spec: dict[str, Any] = {"schedulerName": "volcano", "tasks": tasks}
    total = sum(t["replicas"] for t in tasks)
    if rng.random() < 0.5:
        spec["minAvailable"] = rng.randint(1, total)
    if rng.random() < 0.5:
        spec["maxRetry"] = rng.randint(1, 4)
    if rng.random() < 0.25:
        spec["minSuccess"] = rng.randint(1, total)
    if policies := _policies(rng, task_level=False):
        spec["policies"] = policies
    job = {
        "apiVersion": "batch.volcano.sh/v1alpha1",
        "kind": "Job",
        "metadata": {"name": JOB, "namespace": "default"},
        "spec": spec,
    }
    return job, pods


def _pods(rng: random.Random, pods: list[str], tasks: list[str]) -> str | list[str]:
    """Which pods a step names: every one, a task's, one or two by name."""
    roll = rng.random()
    if roll < 0.3:
        return "*"
    if roll < 0.55:
        return f"{JOB}-{rng.choice(tasks)}-*"
    if roll < 0.85:
        return rng.choice(pods)
    return rng.sample(pods, min(2, len(pods)))


def _steps(rng: random.Random, pods: list[str], tasks: list[str]) -> list[dict[str, Any]]:
    steps: list[dict[str, Any]] = [{"podGroup": "Inqueue"}] if rng.random() < 0.85 else []
    kinds = ["podGroup", "running", "succeeded", "failed", "evict", "wait", "command"]
    weights = [14, 24, 14, 14, 8, 12, 5]
    for _ in range(rng.randint(4, 18)):
        kind = rng.choices(kinds, weights)[0]
        if kind == "podGroup":
            steps.append({"podGroup": rng.choices(("Inqueue", "Running", "Unknown", "Pending"), (10, 4, 2, 1))[0]})
        elif kind == "wait":
            steps.append({"wait": f"{rng.choice(WAITS)}s"})
        elif kind == "command":
            steps.append({"command": rng.choice(COMMANDS)})
        else:
            step: dict[str, Any] = {kind: _pods(rng, pods, tasks)}
            if kind == "failed" and rng.random() < 0.7:
                step["exitCode"] = rng.choice(EXIT_CODES)
            steps.append(step)
    return steps


def generate(seed: int) -> dict[str, Any]:
    """The sequence document of ``seed`` (``job``, ``succeededReady`` and ``steps``, ready to write as YAML)."""
    rng = random.Random(seed)
    job, pods = _job(rng)
    tasks = [t["name"] for t in job["spec"]["tasks"]]
    # Succeeded pods count for dependsOn, as in Volcano v1.15 and volcanolib (docs/differences.md)
    return {"job": job, "succeededReady": True, "steps": _steps(rng, pods, tasks)}
