"""Random job event sequences through Volcano's job controller (the oracle) and volcanolib's, compared.

:func:`run_job_differential` generates sequences (:mod:`tests.oracle.jobgen`),
writes them as YAML files, runs the oracle on them in batches
(``tools/oracle jobs FILE...``, one process for hundreds of files), drives
volcanolib's controller through each (:func:`tests.oracle.jobsequences.run_sequence`)
and compares them step by step (:data:`tests.oracle.jobsequences.COMPARED`).

From the repository root::

    python -m tests.oracle.jobdiff --count 20000 --out DIR

prints the agreement rate, the time each side took, and the first
disagreements; with ``--out`` the sequences stay in DIR.
"""

from __future__ import annotations

import argparse
import json
import subprocess
import sys
import tempfile
import time
from collections import Counter
from collections.abc import Sequence
from pathlib import Path
from typing import Any, NamedTuple

import yaml

from tests.oracle.jobgen import generate
from tests.oracle.jobsequences import Difference, compare_records, load_sequence, order_undefined_from, run_sequence
from volcanolib.errors import ManifestError

__all__ = ["Outcome", "Report", "run_job_differential", "run_oracle_jobs"]

ROOT = Path(__file__).resolve().parents[2]
#: Sequence files per oracle process, at most.
BATCH = 500


class Outcome(NamedTuple):
    """One sequence compared: the differences (none: they agree), or why a side refused it."""

    path: Path
    differences: tuple[Difference, ...] = ()
    #: Volcano's refusal of the Job, if it refused it.
    volcano_refused: str | None = None
    #: volcanolib's refusal of the Job, if it refused it.
    ours_refused: str | None = None
    #: The first step after which Volcano's record is one of several possible (coincident timeouts).
    order_undefined_from: int | None = None

    @property
    def agrees(self) -> bool:
        """Both accepted the Job and every compared fact of every step is the same, or both refused it."""
        return not self.differences and (self.volcano_refused is None) == (self.ours_refused is None)

    @property
    def order_undefined(self) -> bool:
        """They differ only from a step on in which Volcano ran coincident timeouts in an order of its own."""
        first = self.order_undefined_from
        return bool(self.differences) and first is not None and self.differences[0].step >= first

    @property
    def disagrees(self) -> bool:
        """A difference that counts against volcanolib."""
        return not self.agrees and not self.order_undefined


class Report(NamedTuple):
    """The outcomes in seed order, the seconds each side spent, and the job phases volcanolib's runs reached."""

    outcomes: list[Outcome]
    seconds: dict[str, float]
    #: Job phase -> how many sequences reached it at some step (on volcanolib's side).
    phases: Counter[str]

    @property
    def agreeing(self) -> int:
        """How many sequences agree."""
        return sum(o.agrees for o in self.outcomes)

    @property
    def order_undefined(self) -> int:
        """How many differ only where Volcano's order of coincident timeouts decides."""
        return sum(o.order_undefined for o in self.outcomes)

    @property
    def disagreeing(self) -> list[Outcome]:
        """The sequences that count against volcanolib."""
        return [o for o in self.outcomes if o.disagrees]


def run_oracle_jobs(
    paths: Sequence[Path], oracle: Sequence[str], *, timeout: float = 1800
) -> dict[str, dict[str, Any]]:
    """``oracle jobs`` on the files, in batches: file -> its line (``records`` or ``error``)."""
    lines: dict[str, dict[str, Any]] = {}
    for start in range(0, len(paths), BATCH):
        batch = [str(p) for p in paths[start : start + BATCH]]
        done = subprocess.run([*oracle, "jobs", *batch], capture_output=True, text=True, timeout=timeout, check=False)
        if done.returncode not in (0, 2):
            raise RuntimeError(f"oracle jobs failed ({done.returncode}): {done.stderr.strip()[-2000:]}")
        for text in done.stdout.splitlines():
            line = json.loads(text)
            lines[line["file"]] = line
    missing = [p for p in paths if str(p) not in lines]
    if missing:
        raise RuntimeError(f"oracle jobs printed nothing for {missing[0]} (and {len(missing) - 1} more)")
    return lines


def compare_file(path: Path, line: dict[str, Any], phases: Counter[str] | None = None) -> Outcome:
    """volcanolib on one sequence file, against the oracle's line for it.

    :param phases: counts the job phases volcanolib's run reached.
    """
    seq = load_sequence(path)
    try:
        ours = run_sequence(seq)
    except ManifestError as exc:
        return Outcome(path, volcano_refused=line.get("error"), ours_refused=str(exc))
    if phases is not None:
        phases.update({r["phase"] for r in ours})
    if "error" in line:
        return Outcome(path, volcano_refused=line["error"])
    differences = tuple(compare_records(ours, line["records"]))
    return Outcome(path, differences, order_undefined_from=order_undefined_from(ours))


def write_sequences(count: int, directory: Path, first_seed: int = 0) -> list[Path]:
    """Generate sequences of seeds ``first_seed`` ... and write them to ``directory`` as ``seq-SEED.yaml``."""
    directory.mkdir(parents=True, exist_ok=True)
    paths = []
    for seed in range(first_seed, first_seed + count):
        path = directory / f"seq-{seed}.yaml"
        path.write_text(yaml.safe_dump(generate(seed), sort_keys=False))
        paths.append(path)
    return paths


def run_job_differential(
    count: int, oracle: Sequence[str], out_dir: str | Path | None = None, *, first_seed: int = 0
) -> Report:
    """Compare volcanolib's job controller with Volcano's on ``count`` random sequences.

    :param out_dir: where the sequences are written (kept); a temporary directory by default.
    """
    if out_dir is None:
        with tempfile.TemporaryDirectory(prefix="volcanolib-jobdiff-") as tmp:
            return _run(count, oracle, Path(tmp), first_seed)
    return _run(count, oracle, Path(out_dir), first_seed)


def _run(count: int, oracle: Sequence[str], directory: Path, first_seed: int) -> Report:
    start = time.perf_counter()
    paths = write_sequences(count, directory, first_seed)
    generated = time.perf_counter()
    lines = run_oracle_jobs(paths, oracle)
    volcano = time.perf_counter()
    phases: Counter[str] = Counter()
    outcomes = [compare_file(path, lines[str(path)], phases) for path in paths]
    ours = time.perf_counter()
    seconds = {"generate": generated - start, "volcano": volcano - generated, "volcanolib": ours - volcano}
    return Report(outcomes, seconds, phases)


def format_report(report: Report, examples: int = 10) -> str:
    """The agreement rate, the speed of each side, and the first disagreements."""
    total = len(report.outcomes)
    lines = [
        f"{report.agreeing}/{total} sequences agree ({100 * report.agreeing / max(total, 1):.2f}%), "
        f"{report.order_undefined} differ after coincident timeouts (Volcano's order), "
        f"{len(report.disagreeing)} disagree"
    ]
    for side in ("volcano", "volcanolib"):
        secs = report.seconds.get(side, 0.0)
        lines.append(f"  {side}: {secs:.1f} s, {total / secs if secs else 0:.0f} sequences/s")
    refused = Counter(
        "both" if o.volcano_refused and o.ours_refused else "Volcano" if o.volcano_refused else "volcanolib"
        for o in report.outcomes
        if o.volcano_refused or o.ours_refused
    )
    if refused:
        lines.append(f"  refused: {dict(refused)}")
    reached = ", ".join(f"{phase} {count}" for phase, count in report.phases.most_common())
    lines.append(f"  sequences reaching each job phase: {reached}")
    for outcome in report.disagreeing[:examples]:
        refusal = outcome.volcano_refused or outcome.ours_refused
        first = outcome.differences[0] if outcome.differences else f"refused: {refusal}"
        lines.append(f"  {outcome.path}: {first}")
    return "\n".join(lines)


def main(argv: Sequence[str] | None = None) -> int:
    parser = argparse.ArgumentParser(description=__doc__.split("\n")[0])
    parser.add_argument("--count", type=int, default=500, help="how many random sequences (default 500)")
    parser.add_argument("--first-seed", type=int, default=0)
    parser.add_argument("--out", help="keep the sequences in this directory")
    parser.add_argument("--oracle", default=str(ROOT / "tools" / "oracle"), help="the oracle's command")
    parser.add_argument("--examples", type=int, default=10, help="disagreements to print")
    args = parser.parse_args(argv)
    report = run_job_differential(args.count, [args.oracle], args.out, first_seed=args.first_seed)
    print(format_report(report, args.examples))
    return 1 if report.disagreeing else 0


if __name__ == "__main__":
    sys.exit(main())
