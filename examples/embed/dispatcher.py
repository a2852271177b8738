"""A tiny job dispatcher that embeds volcanolib outside Kubernetes.

Machines are nodes, jobs are PodGroups with tasks, and "binding" a task to a
machine starts its command as a local process. Every cycle the dispatcher:

1. marks the tasks whose process has exited Succeeded (or Failed), which
   gives their resources back;
2. runs one scheduling cycle: volcanolib places whole gangs and calls the
   binder, which starts the processes;
3. marks the started tasks Running and prints what happened.

The ``train`` job needs all four of its tasks at once and does not fit while
``etl`` runs: gang scheduling keeps it waiting whole instead of starting
half of it, while the small ``lint`` job goes ahead.

Run it with ``python examples/embed/dispatcher.py``.
"""

from __future__ import annotations

import argparse
import os
import subprocess
import sys
import time
from collections.abc import Mapping, Sequence
from dataclasses import dataclass

from volcanolib import (
    CycleResult,
    InMemoryCache,
    Node,
    NodeInfo,
    PodGroup,
    PodGroupPhase,
    Resource,
    Scheduler,
    TaskInfo,
    TaskStatus,
)

#: Only ``allocate`` runs; jobs are admitted (``Inqueue``) when submitted.
CONFIG = """
actions: "allocate"
tiers:
- plugins:
  - name: priority
  - name: gang
- plugins:
  - name: drf
  - name: proportion
  - name: binpack
"""

#: The command every task runs: sleep a little, then say where it ran.
TASK_SCRIPT = "import os, time; time.sleep(float(os.environ['DURATION'])); print('ran on', os.environ['MACHINE'])"


@dataclass(frozen=True)
class JobSpec:
    """A job to submit: ``tasks`` identical tasks, all needed at once."""

    name: str
    tasks: int
    cpu: str
    memory: str
    #: How long each task's process runs, in seconds.
    duration: float


MACHINES = {"m1": ("4", "8Gi"), "m2": ("4", "8Gi")}
JOBS = (
    JobSpec("etl", tasks=2, cpu="2", memory="2Gi", duration=0.6),
    JobSpec("train", tasks=4, cpu="2", memory="2Gi", duration=0.3),
    JobSpec("lint", tasks=1, cpu="1", memory="1Gi", duration=0.2),
)


def machine(name: str, cpu: str, memory: str) -> NodeInfo:
    """A node for a machine with the given capacity."""
    return NodeInfo(name, Resource.from_list({"cpu": cpu, "memory": memory}), node=Node(name))


def task_names(spec: JobSpec) -> list[str]:
    """The names of a job's tasks, which also serve as their uids: ``etl-0``, ``etl-1`` ..."""
    return [f"{spec.name}-{index}" for index in range(spec.tasks)]


def submit(cache: InMemoryCache, spec: JobSpec, created: float) -> None:
    """Add a job to the cache: its PodGroup (a gang of all its tasks, already admitted), then its tasks."""
    cache.add_pod_group(
        PodGroup(spec.name, min_member=spec.tasks, phase=PodGroupPhase.INQUEUE, creation_timestamp=created)
    )
    for name in task_names(spec):
        request = Resource.from_list({"cpu": spec.cpu, "memory": spec.memory})
        cache.add_task(TaskInfo(uid=name, name=name, namespace="default", job=f"default/{spec.name}", resreq=request))


class ProcessBinder:
    """A :class:`~volcanolib.Binder` that starts each bound task as a local process.

    :param specs: the job of every task, by task uid.
    """

    def __init__(self, specs: Mapping[str, JobSpec]) -> None:
        self.specs = specs
        #: The processes started and not yet reaped, by task uid.
        self.running: dict[str, subprocess.Popen[str]] = {}

    def bind(self, tasks: Sequence[TaskInfo]) -> list[TaskInfo]:
        """Start a process per task; return the tasks whose process could not start.

        The cache puts a failed task back to Pending, so it is tried again
        next cycle.
        """
        failed = []
        for task in tasks:
            env = {
                **os.environ,
                "MACHINE": task.node_name,
                "DURATION": str(self.specs[task.uid].duration),
            }
            try:
                process = subprocess.Popen(
                    [sys.executable, "-c", TASK_SCRIPT], env=env, stdout=subprocess.PIPE, text=True
                )
            except OSError:
                failed.append(task)
                continue
            self.running[task.uid] = process
        return failed

    def reap(self) -> list[tuple[str, int, str]]:
        """Collect the processes that have exited: ``(task uid, exit code, output)``."""
        done = []
        for uid, process in list(self.running.items()):
            if process.poll() is None:
                continue
            output, _ = process.communicate()
            del self.running[uid]
            done.append((uid, process.returncode, output.strip()))
        return done


def report(cycle: int, result: CycleResult, waiting: dict[str, str]) -> None:
    """Print the tasks started this cycle, and why a job waits when it starts waiting."""
    for task, machine_name in result.binds:
        print(f"cycle {cycle}: start {task.name} on {machine_name}")
    if result.session is None:
        return
    for job in result.session.jobs.values():
        reason = job.job_fit_errors  # written by the gang plugin at session close
        if reason and not waiting.get(job.name):
            print(f"cycle {cycle}: {job.name} waits: {reason}")
        waiting[job.name] = reason


def main(argv: Sequence[str] | None = None) -> int:
    """Submit the example jobs, dispatch them until every task has finished.

    :returns: the exit status: 0 when every task succeeded.
    """
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0] if __doc__ else None)
    parser.add_argument("--period", type=float, default=0.1, help="seconds between cycles (default 0.1)")
    parser.add_argument("--max-cycles", type=int, default=200, help="give up after this many cycles")
    args = parser.parse_args(argv)

    specs = {name: spec for spec in JOBS for name in task_names(spec)}
    binder = ProcessBinder(specs)
    cache = InMemoryCache(binder=binder)
    for name, (cpu, memory) in MACHINES.items():
        cache.add_node(machine(name, cpu, memory))
        print(f"machine {name}: {cpu} cpu, {memory}")
    for created, spec in enumerate(JOBS):
        submit(cache, spec, created)
        print(f"job {spec.name}: {spec.tasks} x ({spec.cpu} cpu, {spec.memory}), all at once")
    scheduler = Scheduler(cache, CONFIG)

    waiting: dict[str, str] = {}
    finished: dict[str, TaskStatus] = {}
    for cycle in range(1, args.max_cycles + 1):
        for uid, code, output in binder.reap():
            status = TaskStatus.SUCCEEDED if code == 0 else TaskStatus.FAILED
            cache.set_task_phase(uid, status)
            finished[uid] = status
            print(f"cycle {cycle}: {uid} {status} ({output})")
        if len(finished) == len(specs):
            succeeded = sum(status is TaskStatus.SUCCEEDED for status in finished.values())
            print(f"{succeeded}/{len(specs)} tasks succeeded in {cycle - 1} cycles")
            return 0 if succeeded == len(specs) else 1
        result = scheduler.run_once()
        report(cycle, result, waiting)
        cache.start_bound_tasks()  # the processes have started: the tasks are Running
        time.sleep(args.period)
    print(f"gave up after {args.max_cycles} cycles; {len(finished)}/{len(specs)} tasks finished")
    return 1


if __name__ == "__main__":
    sys.exit(main())
