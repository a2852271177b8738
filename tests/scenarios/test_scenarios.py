"""Every scenario file in this folder, checked the way ``volcanolib check`` checks it.

Each file is a cluster snapshot, a scheduler configuration and an ``expect``
block (docs/scenario-format.md); most are ported from the Go unit tests of
Volcano's actions and plugins, and name their origin under ``source``.
"""

from __future__ import annotations

from pathlib import Path

import pytest

from volcanolib.api.task import TaskStatus, in_statuses
from volcanolib.sim import check_scenario, load_scenario, run_scenario
from volcanolib.sim.report import format_check

SCENARIOS = sorted(Path(__file__).parent.glob("*.yaml"))


def test_the_suite_is_not_empty() -> None:
    assert len(SCENARIOS) >= 50


@pytest.mark.parametrize("path", SCENARIOS, ids=[p.stem for p in SCENARIOS])
def test_scenario(path: Path) -> None:
    outcome = check_scenario(path)
    assert outcome.ok, format_check(outcome)


_MOVED_BY_THE_STEP = TaskStatus.BOUND | TaskStatus.BINDING | TaskStatus.ALLOCATED | TaskStatus.RELEASING


@pytest.mark.parametrize("path", SCENARIOS, ids=[p.stem for p in SCENARIOS])
def test_the_end_phase_is_the_written_phase_when_the_step_moves_nothing(path: Path) -> None:
    """``podGroupPhases`` compares the phase the last session wrote, carried one step (bound pods start,
    evicted pods go): for a group without such pods it is exactly the phase that session wrote."""
    result = run_scenario(load_scenario([path]))
    ssn = result.cycles[-1].session
    assert ssn is not None
    for uid, report in result.pod_groups.items():
        job = ssn.jobs.get(uid)
        if job is None or any(in_statuses(t.status, _MOVED_BY_THE_STEP) for t in job.tasks.values()):
            continue
        assert report.phase is job.pod_group.phase, uid
