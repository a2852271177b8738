"""Volcano's own job controller (the oracle) and volcanolib's, through the same event sequences.

* The pinned sequences of tests/oracle/job_sequences/: Volcano meets each one's
  expectation (its ``volcano`` block where the sequence documents a
  difference, its ``expect`` block otherwise) and volcanolib agrees with it
  step by step unless the difference is documented.
* Random sequences (tests/oracle/jobgen.py), ``VOLCANOLIB_JOB_SEQUENCES`` of
  them (default 2,000, some 20 to 60 seconds; CI compares at least 500),
  compared step by step: job phase, retry count, pods created and deleted,
  the PodGroup. A difference that starts where several policy timeouts fell
  due at one instant is Volcano's order, counted apart (docs/job-sequences.md).
"""

from __future__ import annotations

import os
import subprocess
from pathlib import Path
from typing import Any

import pytest

from tests.oracle.jobdiff import format_report, run_job_differential, run_oracle_jobs
from tests.oracle.jobsequences import compare_records, load_sequence, run_sequence, unmet

pytestmark = pytest.mark.go

PINNED = sorted((Path(__file__).parent / "job_sequences").glob("*.yaml"))
#: How many random sequences the differential compares (CI: at least 500).
RANDOM = int(os.environ.get("VOLCANOLIB_JOB_SEQUENCES", "2000"))
#: The share of random sequences that may differ only after coincident timeouts (Volcano's order).
ORDER_UNDEFINED_AT_MOST = 0.01


@pytest.fixture(scope="module")
def volcano(oracle: list[str]) -> dict[str, dict[str, Any]]:
    """Every pinned sequence through the oracle, in one process."""
    return run_oracle_jobs(PINNED, oracle, timeout=600)


@pytest.mark.parametrize("path", PINNED, ids=lambda p: p.stem)
def test_pinned_sequence_against_volcano(path: Path, volcano: dict[str, dict[str, Any]]) -> None:
    seq = load_sequence(path)
    line = volcano[str(path)]
    assert "records" in line, line.get("error")
    theirs = line["records"]
    assert unmet(theirs, seq.volcano or seq.expect) == [], "Volcano does not meet the sequence's expectation"
    differences = compare_records(run_sequence(seq), theirs)
    if seq.volcano:
        assert differences, "the sequence documents a difference Volcano no longer shows"
    else:
        assert [str(d) for d in differences] == []


def test_random_sequences_agree_with_volcano(oracle: list[str], tmp_path: Path) -> None:
    report = run_job_differential(RANDOM, oracle, tmp_path)
    summary = format_report(report, examples=20)
    print(summary)
    assert not report.disagreeing, summary
    assert report.order_undefined <= ORDER_UNDEFINED_AT_MOST * RANDOM, summary
    # the sequences exercise the whole lifecycle, on volcanolib's side as on Volcano's (they agree)
    assert {"Running", "Restarting", "Completed", "Failed", "Aborted", "Terminated"} <= set(report.phases), summary


def test_a_bad_sequence_file_is_one_line_naming_the_file_and_field(oracle: list[str], tmp_path: Path) -> None:
    text = (Path(__file__).parent / "job_sequences" / "task-completed-completes-the-job.yaml").read_text()
    bad = tmp_path / "bad.yaml"
    bad.write_text(text.replace("steps:\n", "steps:\n  - runing: '*'\n", 1))
    refused = tmp_path / "refused.yaml"  # a task's minAvailable above its replicas
    refused.write_text(text.replace("replicas: 1", "replicas: 1\n        minAvailable: 2", 1))
    done = subprocess.run([*oracle, "jobs", str(bad), str(refused)], capture_output=True, text=True, check=False)
    assert done.returncode == 2, done.stderr
    lines = run_oracle_jobs([bad, refused], oracle)
    assert lines[str(bad)]["error"].startswith(f"{bad}: steps[0].runing: unknown field")
    assert "\n" not in lines[str(bad)]["error"]
    assert lines[str(refused)]["error"].startswith(f"{refused}: Job default/tf: Volcano's admission refuses it")
