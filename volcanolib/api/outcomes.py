"""What a simulated pod does once placed: its outcome, attempt by attempt.

A pod's behaviour is written in annotations, on the pod, on a Volcano Job
task's ``template.metadata`` or on the Job (inherited by every task that
sets none). This module is the one reader of that vocabulary: the replay's
simulated kubelet reads it, and so can any other stand-in for a kubelet.

* ``volcanolib.io/duration`` and ``volcanolib.io/exit-code``: every attempt
  runs that long, then ends Succeeded (exit code 0, the default) or Failed;
  without a duration the pod runs until it is deleted.
* ``volcanolib.io/attempts``: one outcome per attempt, separated by ``;``
  (a pod recreated by its job's controller is the next attempt); the last
  one repeats for later attempts. It replaces ``duration`` and ``exit-code``.
* ``volcanolib.io/attempts.<index>``: the same, for the replica of that
  ``volcano.sh/task-index`` only (on a Job or a task template).

One outcome is one of::

    succeed after 2m                 runs 2m, then Succeeded
    fail after 30s [exit 3]          runs 30s, then Failed with exit code 3 (default 1)
    run                              runs until it is deleted
    reject [after 5s] [exit 2]       never runs: Failed 5s (default 0) after it would have started

followed, for the first three, by ``restarts N every D``: its container
exits and is restarted in place every ``D`` after the start, ``N`` times at
most (the pod stays Running, its restart count grows; Volcano's job
controller raises ``TaskFailed`` once a task's running and pending pods
have restarted ``maxRetry`` times). Durations are Go durations (``90s``,
``1h30m``) or seconds.

.. versionadded:: 0.2
"""

from __future__ import annotations

import re
from collections.abc import Mapping
from typing import Final

import attrs

from volcanolib.api.duration import seconds_or_duration

__all__ = [
    "ATTEMPTS_ANNOTATION",
    "DURATION_ANNOTATION",
    "EXIT_CODE_ANNOTATION",
    "Outcome",
    "OutcomeError",
    "PodOutcomes",
    "parse_attempts",
    "parse_duration",
    "read_outcomes",
]

DURATION_ANNOTATION: Final = "volcanolib.io/duration"
EXIT_CODE_ANNOTATION: Final = "volcanolib.io/exit-code"
ATTEMPTS_ANNOTATION: Final = "volcanolib.io/attempts"
#: Succeeded, Failed, or Running for a pod that runs until it is deleted.
_PHASES: Final = {"succeed": "Succeeded", "fail": "Failed", "run": "Running", "reject": "Failed"}


class OutcomeError(ValueError):
    """An outcome annotation that does not parse; ``key`` names the annotation.

    .. versionadded:: 0.2
    """

    def __init__(self, message: str, key: str) -> None:
        super().__init__(message)
        self.key = key


def parse_duration(value: object) -> float:
    """Seconds in a Go duration (``"1h30m"``, ``"90s"``, ``"1.5h"``) or a number of seconds.

    :raises ValueError: with a readable message when the value is neither, or is negative.
    """
    try:
        seconds = seconds_or_duration(value)
    except ValueError:
        shown = str(value).lower() if isinstance(value, bool) else repr(value)
        raise ValueError(f"expected a duration such as '90s' or '1h30m', got {shown}") from None
    if seconds < 0:
        raise ValueError(f"expected a duration of 0 or more, got {value!r}")
    return seconds


@attrs.frozen
class Outcome:
    """What one attempt of a pod does once it is placed."""

    #: The phase it ends in: Succeeded or Failed; Running when it runs until deleted.
    phase: str = "Running"
    #: Seconds from its start to its end (from when it would have started, for a rejected pod); ``None``: never.
    after: float | None = None
    #: The exit code of a Failed end (0 otherwise).
    exit_code: int = 0
    #: Whether it ever runs (``False``: it fails before it runs).
    runs: bool = True
    #: How many times its container is restarted in place at most.
    restarts: int = 0
    #: Seconds between two restarts (and from the start to the first one).
    restart_every: float | None = None

    def restart_times(self) -> list[float]:
        """Seconds after the start at which the container restarts (those before the attempt ends)."""
        every = self.restart_every
        if not self.runs or not self.restarts or not every:
            return []
        times = [every * k for k in range(1, self.restarts + 1)]
        return [t for t in times if self.after is None or t < self.after]


@attrs.frozen
class PodOutcomes:
    """A pod's outcomes: one per attempt (the last repeats), and per replica where they differ."""

    attempts: tuple[Outcome, ...] = (Outcome(),)
    #: Per ``volcano.sh/task-index``: the attempts of that replica.
    replicas: Mapping[int, tuple[Outcome, ...]] = attrs.field(factory=dict)

    def outcome(self, attempt: int, index: int | None = None) -> Outcome:
        """The outcome of attempt ``attempt`` (0 for the first) of the replica ``index``."""
        attempts = self.replicas.get(index, self.attempts) if index is not None else self.attempts
        return attempts[min(attempt, len(attempts) - 1)]


_TOKEN = re.compile(r"\S+")


def _outcome(text: str, key: str) -> Outcome:
    words = _TOKEN.findall(text.strip())
    if not words:
        raise OutcomeError("an empty outcome (expected succeed, fail, run or reject)", key)
    verb = words[0].lower()
    if verb not in _PHASES:
        raise OutcomeError(
            f"unknown outcome {words[0]!r} in {text.strip()!r} (expected succeed, fail, run or reject)", key
        )
    fields: dict[str, str] = {}
    rest = words[1:]
    i = 0
    while i < len(rest):
        word = rest[i].lower()
        if word in ("after", "exit", "every") and i + 1 < len(rest):
            fields[word] = rest[i + 1]
            i += 2
        elif word == "restarts" and i + 1 < len(rest):
            fields["restarts"] = rest[i + 1]
            i += 2
        else:
            raise OutcomeError(f"unexpected {rest[i]!r} in {text.strip()!r}", key)

    def seconds(name: str) -> float | None:
        if name not in fields:
            return None
        try:
            return parse_duration(fields[name])
        except ValueError as exc:
            raise OutcomeError(f"{exc} in {text.strip()!r}", key) from None

    def integer(name: str, default: int) -> int:
        if name not in fields:
            return default
        try:
            return int(fields[name])
        except ValueError:
            raise OutcomeError(f"expected an integer after {name!r}, got {fields[name]!r}", key) from None

    after = seconds("after")
    exit_code = integer("exit", 1 if verb in ("fail", "reject") else 0)
    restarts = integer("restarts", 0)
    every = seconds("every")
    if verb in ("succeed", "fail") and after is None:
        raise OutcomeError(f"{verb!r} needs 'after DURATION' in {text.strip()!r}", key)
    if verb == "run" and after is not None:
        raise OutcomeError(f"'run' runs until deleted: no 'after' in {text.strip()!r}", key)
    if "exit" in fields and verb not in ("fail", "reject"):
        raise OutcomeError(f"only 'fail' and 'reject' take an exit code, in {text.strip()!r}", key)
    if verb in ("fail", "reject") and exit_code == 0:
        raise OutcomeError(f"a failure needs a non-zero exit code, in {text.strip()!r}", key)
    if ("restarts" in fields) != ("every" in fields):
        raise OutcomeError(f"give 'restarts N every DURATION' together, in {text.strip()!r}", key)
    if verb == "reject" and restarts:
        raise OutcomeError(f"a rejected pod never runs, so it never restarts, in {text.strip()!r}", key)
    if restarts < 0 or (every is not None and every <= 0):
        raise OutcomeError(f"restarts need a count of 0 or more and a period above 0, in {text.strip()!r}", key)
    return Outcome(
        phase=_PHASES[verb],
        after=0.0 if verb == "reject" and after is None else after,
        exit_code=exit_code if verb in ("fail", "reject") else 0,
        runs=verb != "reject",
        restarts=restarts,
        restart_every=every,
    )


def parse_attempts(text: str, key: str = ATTEMPTS_ANNOTATION) -> tuple[Outcome, ...]:
    """Parse ``volcanolib.io/attempts``: outcomes separated by ``;``, one per attempt.

    >>> [o.phase for o in parse_attempts("fail after 30s exit 2; succeed after 1m")]
    ['Failed', 'Succeeded']

    :param key: the annotation it came from, for errors.
    :raises OutcomeError: naming the annotation and the part that does not parse.
    """
    parts = text.split(";")
    if not any(part.strip() for part in parts):
        raise OutcomeError("expected at least one outcome", key)
    return tuple(_outcome(part, key) for part in parts if part.strip())


def _single(annotations: Mapping[str, str], base: Outcome | None) -> Outcome | None:
    """The outcome ``duration`` and ``exit-code`` give (over ``base``'s), or ``None`` when neither is set."""
    raw_duration = annotations.get(DURATION_ANNOTATION)
    raw_code = annotations.get(EXIT_CODE_ANNOTATION)
    if raw_duration is None and raw_code is None:
        return None
    after = base.after if base is not None and base.runs else None
    code = base.exit_code if base is not None else 0
    if raw_duration is not None:
        try:
            after = parse_duration(raw_duration)
        except ValueError as exc:
            raise OutcomeError(str(exc), DURATION_ANNOTATION) from None
    if raw_code is not None:
        try:
            code = int(str(raw_code).strip())
        except ValueError:
            raise OutcomeError(f"expected an integer exit code, got {raw_code!r}", EXIT_CODE_ANNOTATION) from None
    if after is None:
        return Outcome(exit_code=code)  # runs until deleted; the code is kept for a duration set further down
    return Outcome("Failed" if code else "Succeeded", after, code)


def read_outcomes(annotations: Mapping[str, str], inherited: PodOutcomes | None = None) -> PodOutcomes:
    """A pod's outcomes from its annotations; what they do not say comes from ``inherited``.

    ``volcanolib.io/attempts`` replaces the inherited attempts; otherwise
    ``duration`` and ``exit-code`` replace the parts of the inherited single
    outcome they name. ``volcanolib.io/attempts.<index>`` adds (or replaces)
    the attempts of one replica.

    :param annotations: the object's annotations.
    :param inherited: the outcomes of the enclosing object (a Job for its tasks).
    :raises OutcomeError: naming the annotation, when a value does not parse or
        ``attempts`` is given together with ``duration`` or ``exit-code``.
    """
    base = inherited or PodOutcomes()
    attempts = base.attempts
    raw = annotations.get(ATTEMPTS_ANNOTATION)
    if raw is not None:
        for other in (DURATION_ANNOTATION, EXIT_CODE_ANNOTATION):
            if other in annotations:
                raise OutcomeError(f"give either {ATTEMPTS_ANNOTATION} or {other}, not both", other)
        attempts = parse_attempts(raw)
    else:
        single = _single(annotations, base.attempts[0] if len(base.attempts) == 1 else None)
        if single is not None:
            attempts = (single,)
    replicas = dict(base.replicas)
    prefix = ATTEMPTS_ANNOTATION + "."
    for key, value in annotations.items():
        if key.startswith(prefix):
            index = key[len(prefix) :]
            if not index.isdigit():
                raise OutcomeError(f"expected a replica index after {prefix!r}, got {index!r}", key)
            replicas[int(index)] = parse_attempts(value, key)
    return PodOutcomes(attempts, replicas)
