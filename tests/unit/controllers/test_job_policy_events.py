"""A policy's events: repeats within one policy are merged, an event in two policies is refused.

Volcano's admission webhook (``validatePolicies``) merges a policy's
``event`` and ``events`` and drops repeats; it refuses an event only when a
second policy of the same list names it. ``simulate`` and ``replay`` read
Jobs through the same check, so they refuse the same Jobs, naming the file.
"""

from __future__ import annotations

from pathlib import Path
from typing import Any

import pytest
import yaml
from job_harness import Harness, job, task

from volcanolib import ManifestError, cli
from volcanolib.replay import load_workload
from volcanolib.sim import load_scenario


@pytest.mark.parametrize(
    "policy",
    [
        {"events": ["PodEvicted", "PodFailed", "PodEvicted"], "action": "AbortJob"},
        {"event": "PodFailed", "events": ["PodFailed"], "action": "AbortJob"},
    ],
)
def test_repeated_events_in_one_policy_are_one_event(policy: dict[str, Any]) -> None:
    h = Harness()
    h.submit(job("j", task("a", 2), policies=[policy]))
    h.admit()
    h.phase("j-a-0", "Running")
    h.phase("j-a-1", "Failed", exit_code=1)
    assert h.state("j").phase in ("Aborting", "Aborted")


def _file(tmp_path: Path, policies: list[dict[str, Any]]) -> Path:
    manifest = job("j", task("a", 1), policies=policies)
    path = tmp_path / "job.yaml"
    path.write_text(yaml.safe_dump({"objects": [manifest]}))
    return path


def _refusal(load: Any, path: Path) -> str | None:
    try:
        load([path])
    except ManifestError as exc:
        return str(exc)
    return None


@pytest.mark.parametrize(
    ("policies", "message"),
    [
        ([{"events": ["PodEvicted", "PodFailed", "PodEvicted"], "action": "RestartJob"}], None),
        ([{"event": "PodFailed", "events": ["PodFailed"], "action": "AbortJob"}], None),
        (
            [{"event": "PodFailed", "action": "AbortJob"}, {"events": ["PodFailed"], "action": "RestartJob"}],
            "spec.policies[1]: event 'PodFailed' is already handled by policy 0 of this list",
        ),
        (
            [{"event": "*", "action": "AbortJob"}, {"event": "PodFailed", "action": "RestartJob"}],
            "spec.policies: '*' stands for every event: no other event may be named in the same list",
        ),
    ],
)
def test_simulate_and_replay_refuse_the_same_jobs_naming_the_file(
    tmp_path: Path, policies: list[dict[str, Any]], message: str | None
) -> None:
    path = _file(tmp_path, policies)
    simulate = _refusal(load_scenario, path)
    replay = _refusal(load_workload, path)
    assert simulate == replay
    if message is None:
        assert simulate is None
    else:
        assert simulate is not None and str(path) in simulate and message in simulate


def test_replay_refuses_at_load_with_one_line_naming_the_file(
    tmp_path: Path, capsys: pytest.CaptureFixture[str]
) -> None:
    path = _file(
        tmp_path, [{"event": "PodFailed", "action": "AbortJob"}, {"event": "PodFailed", "action": "RestartJob"}]
    )
    assert cli.main(["replay", str(path)]) == 2
    err = capsys.readouterr().err
    assert err.count("\n") == 1
    assert str(path) in err and "Job ns1/j" in err and "spec.policies[1]" in err
