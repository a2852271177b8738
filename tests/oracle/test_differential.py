"""The differential run's counting, with a stand-in for the oracle (no Go needed)."""

from __future__ import annotations

import json
import sys
from pathlib import Path

from tests.oracle.differential import format_report, run_differential

# Prints what `oracle simulate --each --runs K --per-session` prints, from volcanolib's own result:
# the scenario files of `refused` areas are refused, those of `differ` areas lose their binds, and
# those of `flaky` areas lose them only when run fewer than ten times.
FAKE_ORACLE = """
import json, sys
from volcanolib.sim.runner import load_scenario, run_scenario
args = sys.argv[1:]
runs = int(args[args.index("--runs") + 1])
for path in args[args.index("--each") + 1:]:
    if "{refused}-" in path:
        print(json.dumps({{"file": path, "error": path + ": invalid scheduler configuration"}}))
        continue
    result = run_scenario(load_scenario([path]), per_session=True).to_dict()
    if "{differ}-" in path or ("{flaky}-" in path and runs < 10):
        for session in result["perSession"]:
            session["binds"] = {{}}
    outcome = {{"count": runs, "result": result}}
    print(json.dumps({{"file": path, "result": {{"runs": runs, "outcomes": [outcome], "always": {{}}}}}}))
"""


def _fake_oracle(tmp_path: Path, *, refused: str = "none", differ: str = "none", flaky: str = "none") -> list[str]:
    script = tmp_path / "fake_oracle.py"
    script.write_text(FAKE_ORACLE.format(refused=refused, differ=differ, flaky=flaky))
    return [sys.executable, str(script)]


def test_volcanolib_agrees_with_itself(tmp_path: Path) -> None:
    timings: dict[str, float] = {}
    results = run_differential(
        3, 2, tmp_path / "out", areas=["gang", "preempt"], oracle=_fake_oracle(tmp_path), jobs=2, timings=timings
    )
    assert {area: (r.agreeing, r.total, r.examples) for area, r in results.items()} == {
        "gang": (3, 3, []),
        "preempt": (3, 3, []),
    }
    written = [f"{a}-{s}.json" for a in ("gang", "preempt") for s in range(3)]
    assert sorted(p.name for p in (tmp_path / "out").iterdir()) == sorted([*written, "disagreements.json"])
    assert json.loads((tmp_path / "out" / "disagreements.json").read_text()) == {}
    assert set(timings) == {"generate", "oracle", "volcanolib"}


def test_refusals_count_apart_and_disagreements_are_examples(tmp_path: Path) -> None:
    oracle = _fake_oracle(tmp_path, refused="sla", differ="binpack")
    results = run_differential(2, 2, tmp_path / "out", areas=["sla", "binpack"], oracle=oracle, first_seed=10)
    sla, binpack = results["sla"], results["binpack"]
    assert (sla.agreeing, sla.total) == (0, 0)
    assert [(e.seed, e.refused == f"{e.path}: invalid scheduler configuration") for e in sla.refused] == [
        (10, True),
        (11, True),
    ]
    # Every generated binpack scenario binds something, so each loses a fact.
    assert (binpack.agreeing, binpack.total, len(binpack.examples)) == (0, 2, 2)
    assert {d.fact[0] for e in binpack.examples for d in e.disagreements} == {"bind", "bound", "binds"}
    report = format_report(results)
    assert "| sla | 0 | 0 | - | 2 | 0 |" in report
    assert "| binpack | 0 | 2 | 0% | 0 | 0 |" in report
    assert "- bind: 2 scenarios, e.g." in report
    written = json.loads((tmp_path / "out" / "disagreements.json").read_text())
    assert written["sla-11.json"] == [f"refused: {tmp_path / 'out' / 'sla-11.json'}: invalid scheduler configuration"]
    assert written["binpack-10.json"][0].startswith("session 1: bind ")


def test_confirm_runs_add_outcomes_to_the_scenarios_that_disagreed(tmp_path: Path) -> None:
    oracle = _fake_oracle(tmp_path, differ="binpack", flaky="gang")
    areas = ["binpack", "gang"]
    plain = run_differential(2, 2, tmp_path / "plain", areas=areas, oracle=oracle)
    assert {area: r.agreeing for area, r in plain.items()} == {"binpack": 0, "gang": 0}
    timings: dict[str, float] = {}
    confirmed = run_differential(2, 2, tmp_path / "out", areas=areas, oracle=oracle, confirm_runs=10, timings=timings)
    # gang's binds held in the first runs only: with the ten more runs they vary and are not compared;
    # binpack's binds are lost in every run, so it still disagrees.
    assert {area: (r.agreeing, r.total) for area, r in confirmed.items()} == {"binpack": (0, 2), "gang": (2, 2)}
    assert "confirm" in timings
