"""The pod-outcome vocabulary: outcomes per attempt and per replica, read from annotations."""

from __future__ import annotations

import pytest

from volcanolib.api.outcomes import (
    ATTEMPTS_ANNOTATION,
    DURATION_ANNOTATION,
    EXIT_CODE_ANNOTATION,
    Outcome,
    OutcomeError,
    PodOutcomes,
    parse_attempts,
    read_outcomes,
)


def test_each_kind_of_outcome() -> None:
    assert parse_attempts("succeed after 2m; fail after 30s exit 3; run; reject after 5s exit 2; reject") == (
        Outcome("Succeeded", 120.0),
        Outcome("Failed", 30.0, 3),
        Outcome(),
        Outcome("Failed", 5.0, 2, runs=False),
        Outcome("Failed", 0.0, 1, runs=False),
    )
    assert parse_attempts("fail after 1m") == (Outcome("Failed", 60.0, 1),)


def test_container_restarts_happen_while_the_attempt_runs() -> None:
    (outcome,) = parse_attempts("fail after 50s exit 1 restarts 3 every 20s")
    assert (outcome.restarts, outcome.restart_every) == (3, 20.0)
    assert outcome.restart_times() == [20.0, 40.0]  # the third would come after the end
    (forever,) = parse_attempts("run restarts 2 every 1m")
    assert forever.restart_times() == [60.0, 120.0]


def test_the_last_attempt_repeats_and_replicas_may_differ() -> None:
    outcomes = read_outcomes(
        {ATTEMPTS_ANNOTATION: "fail after 1m; succeed after 5m", f"{ATTEMPTS_ANNOTATION}.1": "succeed after 4m"}
    )
    assert [outcomes.outcome(k).phase for k in range(3)] == ["Failed", "Succeeded", "Succeeded"]
    assert outcomes.outcome(0, index=0).phase == "Failed"
    assert outcomes.outcome(0, index=1) == Outcome("Succeeded", 240.0)


def test_duration_and_exit_code_are_one_outcome_for_every_attempt_and_inherit_field_by_field() -> None:
    job = read_outcomes({EXIT_CODE_ANNOTATION: "2"})
    assert job.outcome(0) == Outcome(exit_code=2)  # no duration: runs until deleted
    task = read_outcomes({DURATION_ANNOTATION: "90s"}, job)
    assert task.outcome(0) == task.outcome(5) == Outcome("Failed", 90.0, 2)
    assert read_outcomes({}, task) == task
    assert read_outcomes({}) == PodOutcomes()


@pytest.mark.parametrize(
    ("annotations", "key", "message"),
    [
        ({ATTEMPTS_ANNOTATION: "explode after 1m"}, ATTEMPTS_ANNOTATION, "unknown outcome 'explode'"),
        ({ATTEMPTS_ANNOTATION: "succeed"}, ATTEMPTS_ANNOTATION, "'succeed' needs 'after DURATION'"),
        ({ATTEMPTS_ANNOTATION: "fail after soon"}, ATTEMPTS_ANNOTATION, "expected a duration"),
        ({ATTEMPTS_ANNOTATION: "fail after 1m exit 0"}, ATTEMPTS_ANNOTATION, "non-zero exit code"),
        ({ATTEMPTS_ANNOTATION: "succeed after 1m exit 2"}, ATTEMPTS_ANNOTATION, "only 'fail' and 'reject'"),
        ({ATTEMPTS_ANNOTATION: "run after 1m"}, ATTEMPTS_ANNOTATION, "no 'after'"),
        ({ATTEMPTS_ANNOTATION: "run restarts 2"}, ATTEMPTS_ANNOTATION, "'restarts N every DURATION' together"),
        ({ATTEMPTS_ANNOTATION: "reject restarts 1 every 1s"}, ATTEMPTS_ANNOTATION, "never restarts"),
        ({ATTEMPTS_ANNOTATION: " ; "}, ATTEMPTS_ANNOTATION, "at least one outcome"),
        ({ATTEMPTS_ANNOTATION: "run", DURATION_ANNOTATION: "1m"}, DURATION_ANNOTATION, "not both"),
        ({f"{ATTEMPTS_ANNOTATION}.x": "run"}, f"{ATTEMPTS_ANNOTATION}.x", "replica index"),
        ({EXIT_CODE_ANNOTATION: "one"}, EXIT_CODE_ANNOTATION, "integer exit code"),
    ],
)
def test_bad_outcomes_name_the_annotation(annotations: dict[str, str], key: str, message: str) -> None:
    with pytest.raises(OutcomeError) as info:
        read_outcomes(annotations)
    assert info.value.key == key
    assert message in str(info.value)
