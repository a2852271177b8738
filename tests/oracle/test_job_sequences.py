"""Job event sequences without Go: the format, the generator, volcanolib's side, the pinned expectations.

The comparison with Volcano's own job controller is tests/oracle/test_oracle_jobs.py (marked go).
"""

from __future__ import annotations

import sys
from collections import Counter
from pathlib import Path
from typing import Any

import pytest

from tests.oracle.jobdiff import compare_file, run_job_differential, run_oracle_jobs
from tests.oracle.jobgen import generate
from tests.oracle.jobsequences import (
    SequenceError,
    can_move,
    compare_records,
    load_sequence,
    parse_sequence,
    resolve,
    run_sequence,
    unmet,
)
from volcanolib.errors import ManifestError

PINNED = sorted((Path(__file__).parent / "job_sequences").glob("*.yaml"))
JOB = {
    "apiVersion": "batch.volcano.sh/v1alpha1",
    "kind": "Job",
    "metadata": {"name": "j"},
    "spec": {"tasks": [{"name": "a", "replicas": 2, "template": {"spec": {"containers": [{"name": "c"}]}}}]},
}


@pytest.mark.parametrize("path", PINNED, ids=lambda p: p.stem)
def test_pinned_sequences_meet_their_expectations_in_volcanolib(path: Path) -> None:
    seq = load_sequence(path)
    assert seq.expect, "a pinned sequence says what it expects"
    assert unmet(run_sequence(seq), seq.expect) == []


def test_the_generator_is_deterministic_and_volcano_admission_accepts_its_jobs() -> None:
    assert generate(7) == generate(7)
    assert generate(7) != generate(8)
    phases: Counter[str] = Counter()
    kinds: Counter[str] = Counter()
    for seed in range(150):
        doc = generate(seed)
        seq = parse_sequence(doc, f"seed {seed}")
        records = run_sequence(seq)  # raises ManifestError on a refused Job
        assert [r["step"] for r in records] == list(range(len(seq.steps) + 1))
        phases.update({r["phase"] for r in records})
        kinds.update(step.kind for step in seq.steps)
    assert set(kinds) == {"podGroup", "running", "succeeded", "failed", "evict", "wait", "command"}
    # the sequences reach every phase a job can be in
    assert set(phases) >= {"Pending", "Running", "Restarting", "Completed", "Failed", "Aborted", "Terminated"}


def test_a_step_names_pods_by_name_or_prefix_and_moves_them_only_forward() -> None:
    existing = ["j-b-0", "j-a-1", "j-a-0"]
    assert resolve(["j-a-*", "j-b-0", "j-a-0", "gone"], existing) == ["j-a-0", "j-a-1", "j-b-0"]
    assert resolve(["*"], existing) == ["j-a-0", "j-a-1", "j-b-0"]
    assert can_move("Pending", "Running") and can_move("Running", "Failed") and can_move("Pending", "Succeeded")
    assert not can_move("Running", "Running") and not can_move("Succeeded", "Failed")


def test_a_record_holds_the_job_its_pod_group_and_what_the_controller_did() -> None:
    doc = {"job": JOB, "steps": [{"podGroup": "Inqueue"}, {"running": "*"}, {"evict": "j-a-0"}, {"wait": "5s"}]}
    records = run_sequence(parse_sequence(doc))
    assert records[0] == {
        "step": 0, "phase": "Pending", "retryCount": 0, "version": 0,
        "created": [], "deleted": [], "podGroup": "", "pods": {},
    }  # fmt: skip
    assert (records[1]["created"], records[1]["podGroup"]) == (["j-a-0", "j-a-1"], "Inqueue")
    assert records[2]["pods"] == {"j-a-0": "Running", "j-a-1": "Running"} and records[2]["phase"] == "Running"
    # no policy: the evicted pod is made again (the eviction itself is not the controller's deletion)
    assert (records[3]["created"], records[3]["deleted"], records[3]["phase"]) == (["j-a-0"], [], "Pending")
    assert compare_records(records, records) == []
    theirs = [*records[:3], {**records[3], "phase": "Running"}, records[4]]
    differences = [str(d) for d in compare_records(records, theirs)]
    assert differences == ["step 3: phase: volcanolib 'Pending', Volcano 'Running'"]


@pytest.mark.parametrize(
    ("doc", "message"),
    [
        ([], "expected a mapping of job, queues, steps"),
        ({"steps": []}, "job: missing"),
        ({"job": JOB, "step": []}, "step: unknown field"),
        ({"job": JOB, "steps": [{"running": "*", "evict": "x"}]}, "steps[0]: expected exactly one of"),
        ({"job": JOB, "steps": [{"runing": "*"}]}, "steps[0].runing: unknown field"),
        ({"job": JOB, "steps": [{"running": "a*b"}]}, "steps[0].running: 'a*b': expected a pod name or a prefix"),
        ({"job": JOB, "steps": [{"running": "*", "exitCode": 2}]}, "steps[0].exitCode: only a failed step"),
        ({"job": JOB, "steps": [{"failed": "*", "exitCode": 0}]}, "steps[0].exitCode: expected a non-zero integer"),
        ({"job": JOB, "steps": [{"wait": "soon"}]}, "steps[0].wait: expected a positive duration"),
        ({"job": JOB, "steps": [{"podGroup": "Admitted"}]}, "steps[0].podGroup: expected one of Pending, Inqueue"),
        ({"job": JOB, "steps": [{"command": "Pause"}]}, "steps[0].command: expected one of AbortJob"),
        ({"job": JOB, "steps": [], "expect": [{"step": 1}]}, "expect[0].step: 1 is not a step (0 to 0)"),
        ({"job": JOB, "steps": [], "expect": [{"step": 0, "phse": "x"}]}, "expect[0].phse: unknown fact"),
    ],
)
def test_a_bad_sequence_is_one_error_naming_the_field(doc: Any, message: str) -> None:
    with pytest.raises(SequenceError, match=r"^seq\.yaml: ") as err:
        parse_sequence(doc, "seq.yaml")
    assert message in str(err.value)


def test_a_job_volcano_refuses_is_a_manifest_error() -> None:
    job = {**JOB, "spec": {**JOB["spec"], "policies": [{"exitCode": 0, "action": "RestartJob"}]}}
    with pytest.raises(ManifestError, match="exitCode"):
        run_sequence(parse_sequence({"job": job, "steps": []}))


# Prints what `oracle jobs` prints, from volcanolib's own records; a file whose name ends in
# "-DIFFER.yaml" gets another phase at its last step, one ending in "-REFUSED.yaml" is refused.
FAKE_ORACLE = """
import json, sys
sys.path.insert(0, {root!r})
from tests.oracle.jobsequences import load_sequence, run_sequence
for path in sys.argv[2:]:
    if path.endswith("-REFUSED.yaml"):
        print(json.dumps({{"file": path, "error": path + ": Job default/job: refused"}}))
        continue
    records = run_sequence(load_sequence(path))
    if path.endswith("-DIFFER.yaml"):
        records[-1]["phase"] = "Unknown"
    print(json.dumps({{"file": path, "records": records}}))
"""


def test_the_differential_counts_agreements_and_names_disagreements(tmp_path: Path) -> None:
    script = tmp_path / "fake_oracle.py"
    script.write_text(FAKE_ORACLE.format(root=str(Path(__file__).resolve().parents[2])))
    report = run_job_differential(6, [sys.executable, str(script)], tmp_path / "same")
    assert (report.agreeing, report.disagreeing, len(report.outcomes)) == (6, [], 6)
    assert sum(report.phases.values()) >= 6
    for i, name in enumerate(["a-DIFFER", "b-REFUSED"]):
        (tmp_path / "mixed").mkdir(exist_ok=True)
        (tmp_path / "mixed" / f"{name}.yaml").write_text((tmp_path / "same" / f"seq-{i}.yaml").read_text())
    paths = sorted((tmp_path / "mixed").glob("*.yaml"))
    lines = run_oracle_jobs(paths, [sys.executable, str(script)])
    differ, refused = (compare_file(p, lines[str(p)]) for p in paths)
    assert differ.disagrees and differ.differences[0].fact == "phase"
    assert refused.disagrees and refused.volcano_refused is not None and refused.ours_refused is None
