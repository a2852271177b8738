"""Every scenario file in this folder, checked the way ``volcanolib check`` checks it.

Each file is a cluster snapshot, a scheduler configuration and an ``expect``
block (docs/scenario-format.md); most are ported from the Go unit tests of
Volcano's actions and plugins, and name their origin under ``source``.
"""

from __future__ import annotations

from pathlib import Path

import pytest

from volcanolib.sim import check_scenario
from volcanolib.sim.report import format_check

SCENARIOS = sorted(Path(__file__).parent.glob("*.yaml"))


def test_the_suite_is_not_empty() -> None:
    assert len(SCENARIOS) >= 50


@pytest.mark.parametrize("path", SCENARIOS, ids=[p.stem for p in SCENARIOS])
def test_scenario(path: Path) -> None:
    outcome = check_scenario(path)
    assert outcome.ok, format_check(outcome)
