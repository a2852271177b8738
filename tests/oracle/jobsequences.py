"""Job event sequences (docs/job-sequences.md): read, driven through volcanolib's job controller, compared.

A sequence is a Volcano Job and what happens to it from outside its
controller, step by step: the scheduler admits the PodGroup, pods start,
succeed, fail or are evicted, time passes, a Command arrives. The oracle
(``tools/oracle jobs FILE...``) drives Volcano's own job controller through
it; :func:`run_sequence` drives :class:`volcanolib.controllers.JobController`
through it the way the oracle drives Volcano's, and records the same facts
after each step; :func:`compare_records` names the steps where they differ.

The two drivers share one time model: each write of the driver (a pod's new
phase, an eviction, the PodGroup's phase, a Command) happens at one instant,
after which :data:`SETTLE` seconds pass, in which the controller reacts and
policy timeouts due run; a ``wait`` step lets its duration pass. Each
controller deletion is done at once (no termination grace). volcanolib's
side runs in the job controller tests' stand-in cluster
(tests/unit/controllers/job_harness.py).
"""

from __future__ import annotations

from collections.abc import Iterable, Mapping, Sequence
from pathlib import Path
from typing import Any, Final, NamedTuple

import attrs
import yaml

from tests.unit.controllers.job_harness import NS, Harness
from volcanolib.api.duration import parse_duration
from volcanolib.controllers import CreatePod, CreatePodGroup, DeletePod, JobController
from volcanolib.controllers.job import COMMAND_ACTIONS
from volcanolib.controllers.job import Change as ControllerChange
from volcanolib.manifests.admission import admit_job, queue_facts

__all__ = [
    "COMPARED",
    "SETTLE",
    "Difference",
    "JobSequence",
    "SequenceError",
    "Step",
    "can_move",
    "compare_records",
    "load_sequence",
    "order_undefined_from",
    "parse_sequence",
    "resolve",
    "run_sequence",
    "unmet",
]

#: Seconds each write of the driver takes (the oracle's jobsim.Settle).
SETTLE: Final = 1.0
#: The uid of a Job whose manifest names none: this prefix and its name (the oracle's jobsim.DefaultUIDPrefix).
DEFAULT_UID_PREFIX: Final = "uid-"
#: The exit code of a ``failed`` step that names none.
DEFAULT_EXIT_CODE: Final = 1
#: The queue that always exists, Open.
DEFAULT_QUEUE: Final = "default"
SCHEDULER_NAME: Final = "volcano"
TOP_FIELDS: Final = ("job", "queues", "steps", "succeededReady", "expect", "volcano")
STEP_KINDS: Final = ("podGroup", "running", "succeeded", "failed", "evict", "wait", "command")
POD_GROUP_PHASES: Final = ("Pending", "Inqueue", "Running", "Unknown", "Completed")
#: The pod phase each pod step sets.
STEP_PHASE: Final = {"running": "Running", "succeeded": "Succeeded", "failed": "Failed"}
#: The facts of a record compared step by step (``version`` and ``pods`` are reported, not compared:
#: volcanolib's job version can be lower than Volcano's, docs/job-controller.md).
COMPARED: Final = ("phase", "retryCount", "created", "deleted", "podGroup")
#: The facts of a record.
RECORD_FACTS: Final = ("phase", "retryCount", "version", "created", "deleted", "podGroup", "pods")


class SequenceError(ValueError):
    """A sequence file that cannot be read: the message names the file and the field."""


@attrs.frozen
class Step:
    """One thing that happens to the Job from outside its controller."""

    kind: str
    #: Pod names, or prefixes ending in ``*`` (running, succeeded, failed, evict).
    pods: tuple[str, ...] = ()
    exit_code: int = DEFAULT_EXIT_CODE
    #: The PodGroup phase of a ``podGroup`` step.
    phase: str = ""
    #: Seconds a ``wait`` step lets pass.
    wait: float = 0.0
    #: The action of a ``command`` step.
    action: str = ""


@attrs.frozen
class JobSequence:
    """A Job, the queues it may name, and the steps."""

    job: Mapping[str, Any]
    queues: tuple[Mapping[str, Any], ...]
    steps: tuple[Step, ...]
    #: Succeeded pods' containers report Ready (for the oracle only: volcanolib's pods have no container statuses).
    succeeded_ready: bool = False
    #: Facts expected after some steps: partial records, each with its ``step``.
    expect: tuple[Mapping[str, Any], ...] = ()
    #: Volcano's facts where they differ from ``expect`` on purpose (docs/differences.md); empty otherwise.
    volcano: tuple[Mapping[str, Any], ...] = ()


def load_sequence(path: str | Path) -> JobSequence:
    """Read a sequence file (YAML).

    :raises SequenceError: naming the file and the field.
    """
    try:
        doc = yaml.safe_load(Path(path).read_text())
    except (OSError, yaml.YAMLError) as exc:
        raise SequenceError(f"{path}: {exc}") from None
    return parse_sequence(doc, str(path))


def parse_sequence(doc: Any, where: str = "<sequence>") -> JobSequence:
    """Read a sequence from its parsed YAML document.

    :raises SequenceError: naming ``where`` and the field.
    """
    if not isinstance(doc, dict):
        raise SequenceError(f"{where}: expected a mapping of {', '.join(TOP_FIELDS)}")
    unknown = sorted(set(doc) - set(TOP_FIELDS))
    if unknown:
        raise SequenceError(f"{where}: {unknown[0]}: unknown field (expected {', '.join(TOP_FIELDS)})")
    if not isinstance(doc.get("succeededReady", False), bool):
        raise SequenceError(f"{where}: succeededReady: expected true or false")
    job = doc.get("job")
    if not isinstance(job, dict):
        raise SequenceError(f"{where}: job: missing (a batch.volcano.sh/v1alpha1 Job manifest)")
    if job.get("kind") != "Job" or job.get("apiVersion") != "batch.volcano.sh/v1alpha1":
        raise SequenceError(f"{where}: job: expected kind Job of batch.volcano.sh/v1alpha1")
    if not (job.get("metadata") or {}).get("name"):
        raise SequenceError(f"{where}: job.metadata.name: missing")
    queues = doc.get("queues") or []
    if not isinstance(queues, list) or not all(isinstance(q, dict) for q in queues):
        raise SequenceError(f"{where}: queues: expected a list of Queue manifests")
    for i, queue in enumerate(queues):
        if not (queue.get("metadata") or {}).get("name"):
            raise SequenceError(f"{where}: queues[{i}].metadata.name: missing")
    steps = doc.get("steps") or []
    if not isinstance(steps, list):
        raise SequenceError(f"{where}: steps: expected a list")
    parsed = tuple(_step(raw, f"{where}: steps[{i}]") for i, raw in enumerate(steps))
    expect = _expectations(doc.get("expect"), len(parsed), f"{where}: expect")
    volcano = _expectations(doc.get("volcano"), len(parsed), f"{where}: volcano")
    return JobSequence(job, tuple(queues), parsed, bool(doc.get("succeededReady", False)), expect, volcano)


def _expectations(raw: Any, steps: int, where: str) -> tuple[Mapping[str, Any], ...]:
    if raw is None:
        return ()
    if not isinstance(raw, list):
        raise SequenceError(f"{where}: expected a list of partial records, each with its step")
    for i, record in enumerate(raw):
        if not isinstance(record, dict) or not isinstance(record.get("step"), int):
            raise SequenceError(f"{where}[{i}].step: expected the step number (0: after the Job is created)")
        if not 0 <= record["step"] <= steps:
            raise SequenceError(f"{where}[{i}].step: {record['step']} is not a step (0 to {steps})")
        unknown = sorted(set(record) - {"step", *RECORD_FACTS})
        if unknown:
            raise SequenceError(f"{where}[{i}].{unknown[0]}: unknown fact (expected {', '.join(RECORD_FACTS)})")
    return tuple(raw)


def unmet(records: Sequence[Mapping[str, Any]], expected: Iterable[Mapping[str, Any]]) -> list[str]:
    """The expected facts the records do not meet, one line each."""
    out: list[str] = []
    for want in expected:
        record = records[want["step"]]
        for fact, value in want.items():
            if fact != "step" and record.get(fact) != value:
                out.append(f"step {want['step']}: {fact}: expected {value!r}, got {record.get(fact)!r}")
    return out


def _step(raw: Any, where: str) -> Step:
    kinds_text = ", ".join(STEP_KINDS)
    if not isinstance(raw, dict):
        raise SequenceError(f"{where}: expected a mapping with one of {kinds_text}")
    for key in raw:
        if key not in STEP_KINDS and key != "exitCode":
            expected = f"expected one of {kinds_text}, and exitCode with failed"
            raise SequenceError(f"{where}.{key}: unknown field ({expected})")
    kinds = [key for key in raw if key in STEP_KINDS]
    if len(kinds) != 1:
        raise SequenceError(f"{where}: expected exactly one of {kinds_text}, got {len(kinds)} ({', '.join(kinds)})")
    kind = kinds[0]
    value = raw[kind]
    if "exitCode" in raw and kind != "failed":
        raise SequenceError(f"{where}.exitCode: only a failed step has an exit code")
    if kind == "podGroup":
        if value not in POD_GROUP_PHASES:
            raise SequenceError(f"{where}.podGroup: expected one of {', '.join(POD_GROUP_PHASES)}")
        return Step(kind, phase=value)
    if kind == "wait":
        try:
            seconds = parse_duration(value) if isinstance(value, str) else -1.0
        except ValueError:
            seconds = -1.0
        if seconds <= 0:
            raise SequenceError(f"{where}.wait: expected a positive duration such as 30s or 1m30s, got {value!r}")
        return Step(kind, wait=seconds)
    if kind == "command":
        if value not in COMMAND_ACTIONS:
            raise SequenceError(f"{where}.command: expected one of {', '.join(sorted(COMMAND_ACTIONS))}")
        return Step(kind, action=value)
    pods = [value] if isinstance(value, str) else value
    if not isinstance(pods, list) or not pods:
        raise SequenceError(f"{where}.{kind}: expected a pod name, a prefix ending in *, or a non-empty list of them")
    for pod in pods:
        if not isinstance(pod, str) or not pod or "*" in pod[:-1]:
            raise SequenceError(f"{where}.{kind}: {pod!r}: expected a pod name or a prefix ending in *")
    code = raw.get("exitCode", DEFAULT_EXIT_CODE)
    if isinstance(code, bool) or not isinstance(code, int) or code == 0:
        raise SequenceError(f"{where}.exitCode: expected a non-zero integer")
    return Step(kind, pods=tuple(pods), exit_code=code)


def resolve(patterns: Iterable[str], existing: Iterable[str]) -> list[str]:
    """The pods a step's patterns select among those that exist: names in the order given, each prefix's by name."""
    names = sorted(existing)
    seen: set[str] = set()
    out: list[str] = []
    for pattern in patterns:
        matches = [n for n in names if n.startswith(pattern[:-1])] if pattern.endswith("*") else [pattern]
        for name in matches:
            if name in names and name not in seen:
                seen.add(name)
                out.append(name)
    return out


def can_move(current: str, phase: str) -> bool:
    """Whether a pod may move from ``current`` to ``phase``: it starts from Pending, ends from Pending or Running."""
    if phase == "Running":
        return current == "Pending"
    return phase in ("Succeeded", "Failed") and current in ("Pending", "Running")


class _Driver:
    """volcanolib's job controller in the job tests' stand-in cluster, driven as the oracle drives Volcano's."""

    def __init__(self, job: Mapping[str, Any]) -> None:
        self.cluster = Harness(JobController(scheduler_name=SCHEDULER_NAME, default_queue=DEFAULT_QUEUE))
        self.name = str(job["metadata"]["name"])
        self.seen = 0  # the cluster's log entries already recorded
        self.coincident = 0  # the most policy timeouts due at one instant since the last record
        self.stored = 0  # the cluster's log entries already stored as the API server stores them

    @property
    def now(self) -> float:
        return self.cluster.now

    def store(self) -> None:
        """A PodGroup is created without a phase: the API server drops the status of a new object."""
        for change in self.cluster.log[self.stored :]:
            if isinstance(change, CreatePodGroup) and change.manifest["metadata"]["name"] in self.cluster.groups:
                self.cluster.groups[change.manifest["metadata"]["name"]]["status"] = {"phase": ""}
        self.stored = len(self.cluster.log)

    def advance(self, to: float) -> None:
        """Let time pass until ``to``: each policy timeout due runs at its own time."""
        while (due := self.cluster.ctrl.next_deadline()) is not None and due <= to:
            self.coincident = max(self.coincident, self.due_at(due))
            self.cluster.tick(max(self.now, due))
            self.store()
        self.cluster.now = to

    def due_at(self, due: float) -> int:
        """How many policy timeouts wait to run at ``due`` (read from the controller's timer heap)."""
        return sum(1 for timer in self.cluster.ctrl._timers if timer.due == due and not timer.cancelled)

    def settled(self, changes: list[ControllerChange]) -> None:
        """A write of the driver happened now, with these reactions; then SETTLE passes."""
        self.cluster.apply(changes)
        self.store()
        self.advance(self.now + SETTLE)

    def group(self) -> tuple[str, str] | None:
        """The job's PodGroup, as (name, phase), or ``None``."""
        for name, group in self.cluster.groups.items():
            return name, str(group["status"]["phase"])
        return None

    def step(self, step: Step) -> None:
        cluster = self.cluster
        if step.kind == "podGroup":
            group = self.group()
            if group is not None and group[1] != step.phase:
                cluster.groups[group[0]]["status"]["phase"] = step.phase
                self.settled(cluster.ctrl.pod_group_phase(NS, group[0], step.phase, now=self.now))
        elif step.kind == "wait":
            self.advance(self.now + step.wait)
        elif step.kind == "command":
            self.settled(cluster.ctrl.command(NS, self.name, step.action, now=self.now))
        else:
            for pod in resolve(step.pods, cluster.pods):
                if pod not in cluster.pods:
                    continue  # gone meanwhile
                if step.kind == "evict":
                    del cluster.pods[pod]
                    self.settled(cluster.ctrl.pod_deleted(NS, pod, now=self.now, evicted=True))
                    continue
                phase = STEP_PHASE[step.kind]
                if not can_move(cluster.pods[pod]["status"]["phase"], phase):
                    continue
                cluster.pods[pod]["status"]["phase"] = phase
                code = step.exit_code if phase == "Failed" else None
                self.settled(cluster.ctrl.pod_phase(NS, pod, phase, now=self.now, exit_code=code))

    def record(self, index: int) -> dict[str, Any]:
        state = self.cluster.ctrl.job(NS, self.name)
        new, self.seen = self.cluster.log[self.seen :], len(self.cluster.log)
        group = self.group()
        coincident, self.coincident = self.coincident, 0
        return {
            "step": index,
            "phase": state.phase,
            "retryCount": state.retry_count,
            "version": state.version,
            "created": sorted(c.manifest["metadata"]["name"] for c in new if isinstance(c, CreatePod)),
            "deleted": sorted(c.name for c in new if isinstance(c, DeletePod)),
            "podGroup": None if group is None else group[1],
            "pods": {name: pod["status"]["phase"] for name, pod in sorted(self.cluster.pods.items())},
            **({"coincidentTimeouts": coincident} if coincident > 1 else {}),
        }


def run_sequence(seq: JobSequence) -> list[dict[str, Any]]:
    """Drive volcanolib's job controller through ``seq``: a record after the Job is made (step 0) and after each step.

    Each record: the Job's ``phase``, ``retryCount`` and ``version``; the pods
    the controller ``created`` and ``deleted`` during the step (sorted names);
    the ``podGroup`` phase (``None`` when there is none); the ``pods`` that
    exist with their phases. The oracle prints the same shape. A record also
    has ``coincidentTimeouts`` when several policy timeouts fell due at one
    instant during the step (see :func:`order_undefined_from`).

    :raises ManifestError: when Volcano's admission would refuse the Job.
    """
    meta = {**seq.job["metadata"], "namespace": NS}  # the namespace names nothing that is recorded
    meta.setdefault("uid", DEFAULT_UID_PREFIX + str(meta["name"]))
    job: dict[str, Any] = {**seq.job, "metadata": meta}
    default = {"apiVersion": "scheduling.volcano.sh/v1beta1", "kind": "Queue", "metadata": {"name": DEFAULT_QUEUE}}
    admit_job(job, queues=queue_facts([default, *seq.queues]), scheduler_name=SCHEDULER_NAME)
    driver = _Driver(job)
    driver.settled(driver.cluster.ctrl.submit(job, now=driver.now))
    records = [driver.record(0)]
    for index, step in enumerate(seq.steps, start=1):
        driver.step(step)
        records.append(driver.record(index))
    return records


class Difference(NamedTuple):
    """One fact of one step on which volcanolib and Volcano differ."""

    step: int
    fact: str
    ours: Any
    volcano: Any

    def __str__(self) -> str:
        return f"step {self.step}: {self.fact}: volcanolib {self.ours!r}, Volcano {self.volcano!r}"


def compare_records(
    ours: Sequence[Mapping[str, Any]], volcano: Sequence[Mapping[str, Any]], facts: Sequence[str] = COMPARED
) -> list[Difference]:
    """The differences between volcanolib's records and the oracle's, step by step, first steps first.

    :raises ValueError: when they do not have a record for the same steps.
    """
    if [r["step"] for r in ours] != [r["step"] for r in volcano]:
        raise ValueError(f"{len(ours)} records from volcanolib, {len(volcano)} from Volcano")
    return [
        Difference(mine["step"], fact, mine.get(fact), theirs.get(fact))
        for mine, theirs in zip(ours, volcano, strict=True)
        for fact in facts
        if mine.get(fact) != theirs.get(fact)
    ]


def order_undefined_from(ours: Sequence[Mapping[str, Any]]) -> int | None:
    """The first step in which several policy timeouts fell due at one instant, or ``None``.

    Volcano runs such timeouts side by side, in an order its goroutines
    decide, and one may cancel another that has not started yet
    (docs/job-sequences.md): from that step on Volcano's record is one of
    several possible, and a difference is not counted as volcanolib's.
    The timeouts are volcanolib's, which are Volcano's as long as the two
    agree.
    """
    return next((r["step"] for r in ours if r.get("coincidentTimeouts", 0) > 1), None)
