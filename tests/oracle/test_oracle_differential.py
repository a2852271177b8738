"""Random scenarios of every feature area through the real Volcano (the oracle) and volcanolib.

2,000 scenarios (:data:`PER_AREA` per area of :data:`tests.oracle.generator.AREAS`,
seeds 0 up, so the same ones every run), each run :data:`RUNS` times by the
oracle (Volcano breaks ties at random; a fact its runs disagree on is not
compared). The agreement per area is written to ``build/differential/agreement.md``
(with the most common disagreements and their scenario files, kept next to it)
and shown at the end of the pytest run. ``nox -s differential`` is the long run.

The test fails when the oracle refuses a scenario (the generator wrote one
Volcano cannot read: a generator bug), when volcanolib fails on one, or when an
area's agreement falls below its floor in :data:`FLOORS`.
"""

from __future__ import annotations

import shutil
import time
from collections.abc import Callable
from pathlib import Path

import pytest

from tests.oracle.differential import format_report, run_differential
from tests.oracle.generator import AREAS

pytestmark = pytest.mark.go

ROOT = Path(__file__).resolve().parents[2]
#: Where the run leaves its report and scenarios (git-ignored).
OUT = ROOT / "build" / "differential"
PER_AREA = 100
RUNS = 8

#: The least share of an area's scenarios (percent) on which volcanolib must agree with Volcano on
#: every stable fact: the lower of two measured runs on these seeds after the round's fixes, less
#: 5 points for Volcano's random tie-breaks (two runs differed by up to 3). Raise an area's floor
#: when a fix lands.
FLOORS: dict[str, int] = {
    "queues": 93,
    "proportion": 94,
    "capacity": 93,
    "capacity-hierarchy": 93,
    "drf": 91,
    "drf-hierarchy": 94,
    "priority": 92,
    "gang": 94,
    "binpack": 95,
    "nodeorder": 95,
    "predicates": 95,
    "preempt": 89,
    "preempt-topology": 91,
    "reclaim": 92,
    "backfill": 91,
    "enqueue-overcommit": 94,
    "sla": 93,
    "deviceshare": 92,
    "network-topology": 93,
    "multi-session": 92,
}


def test_random_scenarios_agree_with_volcano_by_area(
    oracle: list[str], terminal_report: Callable[[str, str], None]
) -> None:
    shutil.rmtree(OUT, ignore_errors=True)
    timings: dict[str, float] = {}
    started = time.perf_counter()
    results = run_differential(PER_AREA, RUNS, OUT / "scenarios", oracle=oracle, timings=timings)
    report = format_report(results, examples=5)
    (OUT / "agreement.md").write_text(report + "\n")
    table = report.split("\n\n", 1)[0]
    seconds = ", ".join(f"{k} {v:.0f} s" for k, v in timings.items())
    terminal_report(
        f"agreement with Volcano, {PER_AREA * len(AREAS)} random scenarios",
        f"{table}\n({seconds}; {time.perf_counter() - started:.0f} s in all; details: build/differential/agreement.md)",
    )

    assert set(FLOORS) == set(results) == set(AREAS)
    refused = [f"{e.path.name}: {e.refused}" for r in results.values() for e in r.refused]
    assert refused == [], "the oracle refused generated scenarios (a generator bug)"
    failed = [f"{e.path.name}: {e.failed}" for r in results.values() for e in r.examples if e.failed]
    assert failed == [], "volcanolib failed on generated scenarios"
    assert all(r.total == PER_AREA for r in results.values())
    below = {
        area: f"{100 * r.agreeing / r.total:.1f}% < {FLOORS[area]}%"
        for area, r in results.items()
        if 100 * r.agreeing < FLOORS[area] * r.total
    }
    assert below == {}, report
