"""``volcanolib diff``: what would Volcano do with this cluster, and does volcanolib agree?

::

    volcanolib diff FILE... [--conf FILE] [--sessions N] [--runs K] [--oracle CMD] [--json]

Runs the scenario (or cluster dump) through volcanolib and through the oracle
(the Volcano release volcanolib follows, built from ``oracle/`` with Go) and
prints both outcomes and every stable fact on which they differ, each with
its reason when docs/differences.md documents it. Exit status: 0 when they
agree, 1 when they differ, 2 on bad input (from either side), 3 when the
oracle cannot be found or built.
"""

from __future__ import annotations

import argparse
import json
from collections import Counter
from collections.abc import Mapping
from typing import Any, TextIO

from volcanolib.sim.oracle import (
    DEFAULT_RUNS,
    Disagreement,
    OracleInputError,
    OracleRun,
    OracleUnavailable,
    compare,
    find_oracle,
    run_oracle,
)

__all__ = ["add_parser", "run"]


def add_parser(sub: Any) -> None:
    """Add ``diff`` to the command line's subcommands."""
    p = sub.add_parser(
        "diff",
        help="run a scenario through volcanolib and the real Volcano, and show where they differ",
        description="Run a scenario or cluster dump through volcanolib and through the oracle (the Volcano "
        "release volcanolib follows, built with Go from oracle/), and show both outcomes and the differences.",
    )
    p.add_argument("files", nargs="+", metavar="FILE", help="scenario or manifest files (YAML or JSON)")
    p.add_argument("--conf", metavar="FILE", help="a volcano-scheduler.conf overriding the scenario's scheduler")
    p.add_argument("--sessions", type=int, metavar="N", help="scheduling cycles to run (default: the scenario's)")
    p.add_argument(
        "--runs",
        type=int,
        default=DEFAULT_RUNS,
        metavar="K",
        help=f"runs of Volcano, whose ties are broken at random (default {DEFAULT_RUNS})",
    )
    p.add_argument("--seed", type=int, default=0, metavar="N", help="volcanolib's tie-break seed (default 0)")
    p.add_argument("--oracle", metavar="CMD", help="the oracle to run (default: tools/oracle of this clone)")
    p.add_argument("--json", action="store_true", help="print both results and the differences as JSON")
    p.set_defaults(handler=run)


def _summary(result: Mapping[str, Any]) -> str:
    phases = Counter(str(r.get("phase")) for r in (result.get("podGroups") or {}).values())
    shown = ", ".join(f"{n} {phase}" for phase, n in sorted(phases.items()))
    return (
        f"{len(result.get('binds') or {})} binds, {len(result.get('evictions') or [])} evictions, "
        f"{len(result.get('pipelined') or {})} pipelined; PodGroups: {shown or 'none'}"
    )


def _unstable(run: OracleRun) -> int:
    """How many facts Volcano's runs disagree on (not compared)."""
    from volcanolib.sim.oracle import facts

    sets = [facts(o.result) for o in run.outcomes]
    keys = set().union(*sets) if sets else set()
    return sum(1 for key in keys if len({f.get(key) for f in sets}) > 1)


def run(args: argparse.Namespace, out: TextIO) -> int:
    """Run ``volcanolib diff``; return the exit status."""
    from volcanolib.sim.differences import reasons_for
    from volcanolib.sim.runner import load_scenario, run_scenario

    if args.runs < 1:
        raise OracleInputError(f"--runs must be at least 1, got {args.runs}")
    scenario = load_scenario(args.files, conf=args.conf, sessions=args.sessions)
    ours = run_scenario(scenario, seed=args.seed, per_session=True).to_dict()
    try:
        command = find_oracle(args.oracle)
        theirs = run_oracle(
            args.files, conf=args.conf, sessions=args.sessions, runs=args.runs, per_session=True, oracle=command
        )
    except OracleUnavailable as exc:
        out.flush()
        import sys

        sys.stderr.write(f"volcanolib: error: {exc}\n")
        return 3
    differences = compare(ours, theirs)
    reasons = reasons_for(scenario)
    if args.json:
        document = {
            "volcanolib": ours,
            "volcano": {
                "runs": theirs.runs,
                "outcomes": [{"count": o.count, "result": o.result} for o in theirs.outcomes],
            },
            "differences": [_as_json(d) for d in differences],
            "documentedReasons": [{"key": r.key, "summary": r.summary, "reason": r.reason} for r in reasons],
        }
        out.write(json.dumps(document, sort_keys=True, indent=2) + "\n")
        return 1 if differences else 0
    out.write(f"Scenario: {scenario.name}\n")
    out.write(f"volcanolib: {_summary(ours)}\n")
    for o in theirs.outcomes:
        share = f"{o.count} of {theirs.runs} runs" if len(theirs.outcomes) > 1 else f"all {theirs.runs} runs"
        out.write(f"Volcano ({share}): {_summary(o.result)}\n")
    unstable = _unstable(theirs)
    if unstable:
        out.write(f"{unstable} facts vary between Volcano's runs (ties broken at random) and are not compared\n")
    if not differences:
        out.write("They agree on every fact that held in all of Volcano's runs.\n")
        return 0
    out.write(f"\nDifferences ({len(differences)})\n")
    for d in differences:
        out.write(f"  {d}\n")
    if reasons:
        out.write("\nDocumented differences that this scenario touches (docs/differences.md):\n")
        for r in reasons:
            out.write(f"  {r.key}: {r.summary}\n    why: {r.reason}\n")
    else:
        out.write("\nNone of the documented differences applies: this may be a bug; please report it with the files.\n")
    return 1


def _as_json(d: Disagreement) -> dict[str, Any]:
    return {"fact": list(d.fact), "volcano": d.volcano, "volcanolib": d.volcanolib}
