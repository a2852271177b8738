"""The real Volcano beside volcanolib: run the oracle and compare its decisions with ours.

The *oracle* is a small Go program of this project (``oracle/`` in the
repository, run through ``tools/oracle``) that runs the scheduler of the
Volcano release volcanolib follows, in-process, on the same scenario files
``volcanolib simulate`` reads, and prints the same JSON shape. It needs Go to
build; nothing else in volcanolib does.

Volcano breaks ties between equal nodes at random and checks predicates in
parallel, so one scenario may end in more than one way. The oracle is run
several times; a *fact* (pod P bound to node N in session S, PodGroup G in
phase Running after session S, ...) is *stable* when every run agrees on it.
volcanolib agrees with Volcano on a scenario when it agrees on every stable
fact (:func:`compare`). Facts on which the runs differ are not compared.
"""

from __future__ import annotations

import json
import os
import shutil
import subprocess
from collections.abc import Iterable, Mapping, Sequence
from pathlib import Path
from typing import Any, Final

import attrs

from volcanolib.errors import VolcanolibError

__all__ = [
    "ORACLE_ENV",
    "Disagreement",
    "OracleOutcome",
    "OracleRun",
    "OracleUnavailable",
    "compare",
    "facts",
    "find_oracle",
    "run_oracle",
    "run_oracle_each",
]

#: The environment variable naming the oracle's command (a path to ``tools/oracle`` or a built binary).
ORACLE_ENV: Final = "VOLCANOLIB_ORACLE"
#: How many times the oracle runs a scenario by default: a 50/50 tie looks stable in 10 runs 2 times in a thousand.
DEFAULT_RUNS: Final = 10

Fact = tuple[str, ...]


class OracleUnavailable(VolcanolibError):
    """The oracle cannot be found or built (no Go, no module proxy)."""


class OracleInputError(VolcanolibError):
    """The oracle (Volcano) could not read the scenario: the message names the file and the problem."""


def find_oracle(explicit: str | os.PathLike[str] | None = None) -> list[str]:
    """The command that runs the oracle.

    In order: ``explicit``; the ``VOLCANOLIB_ORACLE`` environment variable;
    ``tools/oracle`` of the source tree volcanolib was installed from (an
    editable install); ``volcanolib-oracle`` on ``PATH``.

    :raises OracleUnavailable: when none is found.
    """
    for candidate in (explicit, os.environ.get(ORACLE_ENV)):
        if candidate:
            return [str(candidate)]
    tools = Path(__file__).resolve().parents[2] / "tools" / "oracle"
    if tools.is_file() and (tools.parent.parent / "oracle" / "go.mod").is_file():
        return [str(tools)]
    on_path = shutil.which("volcanolib-oracle")
    if on_path:
        return [on_path]
    raise OracleUnavailable(
        "no oracle found: run from a clone of volcanolib (tools/oracle builds it with Go), "
        f"or name it with --oracle or {ORACLE_ENV}"
    )


@attrs.frozen
class OracleOutcome:
    """One way a scenario ended under Volcano, and how many of the runs ended that way."""

    count: int
    result: Mapping[str, Any]


@attrs.frozen
class OracleRun:
    """What the oracle printed for one scenario: its distinct outcomes over ``runs`` runs."""

    runs: int
    outcomes: tuple[OracleOutcome, ...]
    version: str = ""


def _oracle_args(conf: str | os.PathLike[str] | None, sessions: int | None, runs: int, per_session: bool) -> list[str]:
    args = ["simulate", "--runs", str(runs)]
    if conf is not None:
        args += ["--conf", str(conf)]
    if sessions is not None:
        args += ["--sessions", str(sessions)]
    if per_session:
        args.append("--per-session")
    return args


def _parse_run(printed: Mapping[str, Any], runs: int) -> OracleRun:
    if runs == 1:
        return OracleRun(1, (OracleOutcome(1, printed),))
    outcomes = tuple(OracleOutcome(int(o["count"]), o["result"]) for o in printed["outcomes"])
    return OracleRun(int(printed["runs"]), outcomes)


def _invoke(command: Sequence[str], args: Sequence[str], timeout: float | None) -> subprocess.CompletedProcess[str]:
    try:
        done = subprocess.run([*command, *args], capture_output=True, text=True, timeout=timeout, check=False)
    except FileNotFoundError as exc:
        raise OracleUnavailable(f"cannot run the oracle {command[0]}: {exc.strerror}") from None
    except subprocess.TimeoutExpired:
        raise OracleUnavailable(f"the oracle did not answer within {timeout:g} s") from None
    if done.returncode == 3:
        raise OracleUnavailable(done.stderr.strip().splitlines()[-1] if done.stderr.strip() else "oracle not built")
    if done.returncode == 2:
        lines = done.stderr.strip().splitlines()
        raise OracleInputError(lines[-1].removeprefix("oracle: ") if lines else "the oracle refused the input")
    if done.returncode != 0:
        raise OracleUnavailable(f"the oracle failed (exit status {done.returncode}): {done.stderr.strip()[-2000:]}")
    return done


def run_oracle(
    paths: Sequence[str | os.PathLike[str]],
    *,
    conf: str | os.PathLike[str] | None = None,
    sessions: int | None = None,
    runs: int = DEFAULT_RUNS,
    per_session: bool = True,
    oracle: Sequence[str] | None = None,
    timeout: float | None = None,
) -> OracleRun:
    """Run Volcano on the files as one scenario (merged in order, as ``volcanolib simulate`` merges them).

    :raises OracleUnavailable: when the oracle cannot be found, built or run.
    :raises OracleInputError: when Volcano cannot read the files (the message names the file).
    """
    command = list(oracle) if oracle is not None else find_oracle()
    args = [*_oracle_args(conf, sessions, runs, per_session), *map(str, paths)]
    done = _invoke(command, args, timeout)
    return _parse_run(json.loads(done.stdout), runs)


def run_oracle_each(
    paths: Sequence[str | os.PathLike[str]],
    *,
    sessions: int | None = None,
    runs: int = DEFAULT_RUNS,
    per_session: bool = True,
    oracle: Sequence[str] | None = None,
    timeout: float | None = None,
) -> dict[str, OracleRun | str]:
    """Run Volcano on each file as its own scenario, in one process.

    :returns: file -> its run, or the one-line reason Volcano could not read it.
    :raises OracleUnavailable: when the oracle cannot be found, built or run.
    """
    command = list(oracle) if oracle is not None else find_oracle()
    args = [*_oracle_args(None, sessions, runs, per_session), "--each", *map(str, paths)]
    done = _invoke(command, args, timeout)
    out: dict[str, OracleRun | str] = {}
    for line in done.stdout.splitlines():
        if not line.strip():
            continue
        entry = json.loads(line)
        if "error" in entry:
            out[entry["file"]] = str(entry["error"])
        else:
            out[entry["file"]] = _parse_run(entry["result"], runs)
    return out


# ---------------------------------------------------------------------- facts


def facts(result: Mapping[str, Any]) -> dict[Fact, str]:
    """The facts of a ``simulate --json --per-session`` result (ours or the oracle's), as key -> value.

    Per session ``S`` (from 1): ``("bind", S, pod)`` -> node; ``("bound", S,
    pod)`` -> ``"yes"`` (the pod was bound, wherever); ``("binds", S)`` -> the
    number of binds; ``("evict", S, pod)``; ``("pipelined", S, pod)`` -> node;
    ``("phase", S, podgroup)`` -> the phase the session left;
    ``("condition", S, podgroup, type)`` -> ``"status/reason"``. A fact absent
    from a result has no value there (``None`` in :func:`compare`).
    """
    out: dict[Fact, str] = {}
    sessions = result.get("perSession") or []
    if not sessions:
        sessions = [
            {
                "binds": result.get("binds", {}),
                "evictions": result.get("evictions", []),
                "pipelined": result.get("pipelined", {}),
                "podGroups": {},
            }
        ]
    for index, session in enumerate(sessions, start=1):
        s = str(index)
        binds = session.get("binds") or {}
        out[("binds", s)] = str(len(binds))
        for pod, node in binds.items():
            out[("bind", s, pod)] = node
            out[("bound", s, pod)] = "yes"
        for pod in session.get("evictions") or []:
            out[("evict", s, pod)] = "yes"
        for pod, node in (session.get("pipelined") or {}).items():
            out[("pipelined", s, pod)] = node
        for pg, state in (session.get("podGroups") or {}).items():
            out[("phase", s, pg)] = str(state.get("phase", ""))
            for cond in state.get("conditions") or []:
                out[("condition", s, pg, str(cond.get("type")))] = f"{cond.get('status')}/{cond.get('reason', '')}"
    return out


@attrs.frozen
class Disagreement:
    """A stable fact of Volcano's that volcanolib's result does not share."""

    fact: Fact
    #: What every oracle run gave (``None``: the fact is absent in every run).
    volcano: str | None
    #: What volcanolib gave (``None``: absent).
    volcanolib: str | None

    def __str__(self) -> str:
        kind, session, *rest = self.fact
        what = " ".join([kind, *rest])
        return f"session {session}: {what}: Volcano {self.volcano or '-'}, volcanolib {self.volcanolib or '-'}"


def compare(ours: Mapping[str, Any], oracle: OracleRun | Iterable[Mapping[str, Any]]) -> list[Disagreement]:
    """The stable facts of the oracle's outcomes on which our result differs, sorted.

    :param ours: our ``simulate --json --per-session`` result.
    :param oracle: the oracle's run (or its outcomes' results).
    """
    results = [o.result for o in oracle.outcomes] if isinstance(oracle, OracleRun) else list(oracle)
    theirs = [facts(r) for r in results]
    mine = facts(ours)
    keys: set[Fact] = set(mine)
    for f in theirs:
        keys.update(f)
    # A PodGroup only one side knows (made differently) is a difference of its own, not one per fact.
    out: list[Disagreement] = []
    for key in sorted(keys):
        values = {f.get(key) for f in theirs}
        if len(values) != 1:
            continue  # Volcano's runs differ: not a stable fact
        volcano = values.pop()
        if mine.get(key) != volcano:
            out.append(Disagreement(key, volcano, mine.get(key)))
    return out
