"""Random scenarios through the real Volcano (the oracle) and through volcanolib, compared.

:func:`run_differential` generates scenarios per feature area
(:mod:`tests.oracle.generator`), runs the oracle on them in batches (one
process for hundreds of files) and volcanolib on each, and counts the
scenarios on which volcanolib shares every stable fact of Volcano's
(:func:`volcanolib.sim.oracle.compare`).

From the repository root::

    python -m tests.oracle.differential --count 50 --runs 3 --out DIR

prints the agreement per area and the most common disagreements; with
``--out`` the scenarios stay in DIR (JSON) for a closer look.
"""

from __future__ import annotations

import argparse
import json
import logging
import math
import shlex
import sys
import tempfile
import time
from collections import Counter
from collections.abc import Iterable, Sequence
from concurrent.futures import ThreadPoolExecutor
from pathlib import Path
from typing import NamedTuple

from tests.oracle.generator import AREAS, generate
from volcanolib.sim.oracle import Disagreement, OracleRun, compare, find_oracle, run_oracle_each
from volcanolib.sim.runner import load_scenario, run_scenario

__all__ = ["AreaAgreement", "Example", "disagreements_by_file", "format_report", "run_differential"]

#: Files per oracle process, at most (its memory stays flat from one file to the next; a batch
#: bounds what one failed process loses).
BATCH = 500
#: Oracle processes at once.
JOBS = 2


class Example(NamedTuple):
    """One scenario that did not agree: the oracle refused it, volcanolib failed, or the facts differ."""

    area: str
    seed: int
    path: Path
    disagreements: tuple[Disagreement, ...] = ()
    #: Why the oracle (Volcano) refused the scenario.
    refused: str | None = None
    #: Why volcanolib failed on it.
    failed: str | None = None


class AreaAgreement(NamedTuple):
    """One area's count: scenarios agreeing, scenarios compared, and those that did not agree."""

    agreeing: int
    #: Scenarios compared (those the oracle refused are not counted, they are among the examples).
    total: int
    examples: list[Example]

    @property
    def refused(self) -> list[Example]:
        """The scenarios the oracle refused, with its message."""
        return [e for e in self.examples if e.refused is not None]


def _ours(path: Path) -> dict[str, object]:
    result = run_scenario(load_scenario([path]), per_session=True)
    return result.to_dict()


def _batches(paths: Sequence[Path], size: int) -> Iterable[Sequence[Path]]:
    for start in range(0, len(paths), size):
        yield paths[start : start + size]


def run_differential(
    count_per_area: int,
    runs: int = 3,
    out_dir: str | Path | None = None,
    *,
    areas: Sequence[str] = AREAS,
    first_seed: int = 0,
    oracle: Sequence[str] | None = None,
    jobs: int = JOBS,
    timings: dict[str, float] | None = None,
    confirm_runs: int = 0,
) -> dict[str, AreaAgreement]:
    """Compare volcanolib with Volcano on ``count_per_area`` random scenarios of each area.

    :param runs: how many times the oracle runs each scenario (facts that vary are not compared).
    :param out_dir: where the scenarios are written (kept), with ``disagreements.json``
        (:func:`disagreements_by_file`); a temporary directory by default.
    :param first_seed: the seeds are ``first_seed`` to ``first_seed + count_per_area - 1``.
    :param oracle: the oracle's command (found as :func:`volcanolib.sim.oracle.find_oracle` does by default).
    :param jobs: how many oracle processes run at once.
    :param timings: filled with the seconds spent generating (``generate``), in volcanolib
        (``volcanolib``), and until the oracle's last process ended (``oracle``; the two overlap).
    :param confirm_runs: when above 0, each scenario that disagreed is run this many more times
        by the oracle, and a fact counts as stable only if it held in all the runs (a node that
        Volcano picks at random now and then rarely shows in ``runs`` runs).
    :returns: area -> its agreement.
    :raises volcanolib.sim.oracle.OracleUnavailable: when the oracle cannot be built or run.
    """
    clock = timings if timings is not None else {}
    if out_dir is None:
        with tempfile.TemporaryDirectory(prefix="volcanolib-differential-") as tmp:
            return _run(count_per_area, runs, Path(tmp), areas, first_seed, oracle, jobs, clock, confirm_runs)
    directory = Path(out_dir)
    directory.mkdir(parents=True, exist_ok=True)
    results = _run(count_per_area, runs, directory, areas, first_seed, oracle, jobs, clock, confirm_runs)
    (directory / "disagreements.json").write_text(json.dumps(disagreements_by_file(results), indent=1))
    return results


def _run(
    count: int,
    runs: int,
    directory: Path,
    areas: Sequence[str],
    first_seed: int,
    oracle: Sequence[str] | None,
    jobs: int,
    clock: dict[str, float],
    confirm_runs: int = 0,
) -> dict[str, AreaAgreement]:
    start = time.perf_counter()
    files: dict[Path, tuple[str, int]] = {}
    for area in areas:
        for seed in range(first_seed, first_seed + count):
            path = directory / f"{area}-{seed}.json"
            path.write_text(json.dumps(generate(seed, area), indent=1))
            files[path] = (area, seed)
    clock["generate"] = time.perf_counter() - start

    # The oracle's processes run while volcanolib runs here: "oracle" is the wall time until the
    # last of them ended, "volcanolib" the time volcanolib took.
    start = time.perf_counter()
    theirs: dict[str, OracleRun | str] = {}
    command = list(oracle) if oracle is not None else find_oracle()
    size = max(1, min(BATCH, math.ceil(len(files) / max(jobs, 1))))
    with ThreadPoolExecutor(max_workers=max(jobs, 1)) as pool:
        answers = [
            pool.submit(run_oracle_each, batch, runs=runs, oracle=command) for batch in _batches(list(files), size)
        ]
        ours: dict[Path, dict[str, object] | str] = {}
        for path in files:
            try:
                ours[path] = _ours(path)
            except Exception as exc:  # a failure of volcanolib is a finding, not the end of the run
                ours[path] = f"{type(exc).__name__}: {exc}"
        clock["volcanolib"] = time.perf_counter() - start
        for answer in answers:
            theirs.update(answer.result())
    clock["oracle"] = time.perf_counter() - start
    if confirm_runs > 0:
        start = time.perf_counter()
        _confirm(files, theirs, ours, confirm_runs, command)
        clock["confirm"] = time.perf_counter() - start

    out = {area: AreaAgreement(0, 0, []) for area in areas}
    for path, (area, seed) in files.items():
        agreeing, total, examples = out[area]
        oracle_run = theirs.get(str(path), "the oracle printed no result for this file")
        if isinstance(oracle_run, str):
            examples.append(Example(area, seed, path, refused=oracle_run))
            continue
        result = ours[path]
        if isinstance(result, str):
            examples.append(Example(area, seed, path, failed=result))
            out[area] = AreaAgreement(agreeing, total + 1, examples)
            continue
        differences = compare(result, oracle_run)
        if differences:
            examples.append(Example(area, seed, path, tuple(differences)))
        out[area] = AreaAgreement(agreeing + (not differences), total + 1, examples)
    return out


def _confirm(
    files: Iterable[Path],
    theirs: dict[str, OracleRun | str],
    ours: dict[Path, dict[str, object] | str],
    runs: int,
    command: Sequence[str],
) -> None:
    """Run the oracle ``runs`` more times on each scenario that disagreed, and add those outcomes."""
    doubtful = []
    for path in files:
        first, result = theirs.get(str(path)), ours[path]
        if isinstance(first, OracleRun) and not isinstance(result, str) and compare(result, first):
            doubtful.append(path)
    if not doubtful:
        return
    for name, again in run_oracle_each(doubtful, runs=runs, oracle=command).items():
        first = theirs[name]
        if isinstance(again, OracleRun) and isinstance(first, OracleRun):
            theirs[name] = OracleRun(first.runs + again.runs, first.outcomes + again.outcomes, first.version)


def disagreements_by_file(results: dict[str, AreaAgreement]) -> dict[str, list[str]]:
    """Each scenario file that did not agree -> its disagreements (or why it was refused or failed), as text."""
    out: dict[str, list[str]] = {}
    for r in results.values():
        for e in r.examples:
            if e.refused is not None:
                out[e.path.name] = [f"refused: {e.refused}"]
            elif e.failed is not None:
                out[e.path.name] = [f"volcanolib failed: {e.failed}"]
            else:
                out[e.path.name] = [str(d) for d in e.disagreements]
    return out


def fact_kind(d: Disagreement) -> str:
    """The kind of a fact: ``bind``, ``phase``, ``condition Unschedulable``, ..."""
    return f"condition {d.fact[3]}" if d.fact[0] == "condition" else d.fact[0]


def fact_kinds(example: Example) -> set[str]:
    """The kinds of facts an example disagrees on."""
    return {fact_kind(d) for d in example.disagreements}


def format_report(results: dict[str, AreaAgreement], *, examples: int = 3) -> str:
    """The agreement table, then per area the fact kinds most often disagreed on, with example files."""
    lines = ["| area | agree | compared | rate | refused | volcanolib failed |", "|---|---:|---:|---:|---:|---:|"]
    agreeing = total = 0
    for area, r in results.items():
        failed = sum(1 for e in r.examples if e.failed)
        rate = f"{100 * r.agreeing / r.total:.0f}%" if r.total else "-"
        lines.append(f"| {area} | {r.agreeing} | {r.total} | {rate} | {len(r.refused)} | {failed} |")
        agreeing += r.agreeing
        total += r.total
    if total:
        lines.append(f"| all | {agreeing} | {total} | {100 * agreeing / total:.0f}% | | |")
    for area, r in results.items():
        if not r.examples:
            continue
        lines.append("")
        lines.append(f"## {area}")
        kinds: Counter[str] = Counter()
        for e in r.examples:
            kinds.update(fact_kinds(e))
        for kind, n in kinds.most_common(6):
            shown = [e for e in r.examples if kind in fact_kinds(e)][:examples]
            lines.append(f"- {kind}: {n} scenarios, e.g.")
            for e in shown:
                first = next(str(d) for d in e.disagreements if fact_kind(d) == kind)
                lines.append(f"  - {e.path}: {first}")
        for e in [e for e in r.examples if e.refused or e.failed][:examples]:
            lines.append(f"- {'refused' if e.refused else 'volcanolib failed'}: {e.path}: {e.refused or e.failed}")
    return "\n".join(lines)


def main(argv: Sequence[str] | None = None) -> int:
    """``python -m tests.oracle.differential``: run, print the report."""
    parser = argparse.ArgumentParser(prog="python -m tests.oracle.differential", description=__doc__.split("\n")[0])
    parser.add_argument("--count", type=int, default=20, help="scenarios per area")
    parser.add_argument("--runs", type=int, default=3, help="oracle runs per scenario")
    parser.add_argument(
        "--confirm-runs",
        type=int,
        default=0,
        help="oracle runs more for each scenario that disagreed (its facts must hold in all runs)",
    )
    parser.add_argument("--out", help="keep the scenarios in this directory")
    parser.add_argument("--areas", help="comma-separated areas (default: all)")
    parser.add_argument("--first-seed", type=int, default=0)
    parser.add_argument("--jobs", type=int, default=JOBS, help="oracle processes at once")
    parser.add_argument("--oracle", help="the oracle's command (default: tools/oracle, built when needed)")
    args = parser.parse_args(argv)
    # The loader's warnings (gangs that cannot start, ...) are expected of random scenarios.
    logging.getLogger("volcanolib").setLevel(logging.ERROR)
    areas = args.areas.split(",") if args.areas else AREAS
    unknown = [a for a in areas if a not in AREAS]
    if unknown:
        parser.error(f"unknown areas {', '.join(unknown)}; the areas are {', '.join(AREAS)}")
    timings: dict[str, float] = {}
    results = run_differential(
        args.count,
        args.runs,
        args.out,
        areas=areas,
        first_seed=args.first_seed,
        oracle=shlex.split(args.oracle) if args.oracle else None,
        jobs=args.jobs,
        timings=timings,
        confirm_runs=args.confirm_runs,
    )
    print(format_report(results))
    print()
    print(", ".join(f"{k} {v:.1f} s" for k, v in timings.items()), file=sys.stderr)
    return 0


if __name__ == "__main__":
    sys.exit(main())
