"""Fast paths under one contract: with the switch on, each registered path is checked against its reference."""

from __future__ import annotations

import sys
from pathlib import Path

import pytest

from volcanolib.errors import VerifyError
from volcanolib.framework import fastpath

for folder in ("cache", "actions"):
    sys.path.insert(0, str(Path(__file__).resolve().parents[1] / folder))
from test_incremental import run_cycles  # noqa: E402
from test_node_classes import decisions  # noqa: E402
from test_victim_order import _random_session  # noqa: E402

from volcanolib.framework.victims import VictimOrder  # noqa: E402


def test_random_worlds_check_every_registered_fast_path(monkeypatch: pytest.MonkeyPatch) -> None:
    """The switch checks every path the framework registers; the random worlds reach each one."""
    monkeypatch.setenv(fastpath.CHECK_ENV, "1")
    before = dict(fastpath.CHECKED)
    for seed in range(3):
        run_cycles(seed, cycles=30, nodes=12)  # incremental cycles: kept keys, queue totals, first victims
        decisions(seed, True)  # node classes that are not pointwise (nodeorder's normalised scores)
        ssn, victims, preemptor = _random_session(seed)  # a whole victim order, as capacity asks for it
        VictimOrder(ssn, preemptor).sorted(victims)
        ssn.close()
    checked = {name: fastpath.CHECKED[name] - before.get(name, 0) for name in fastpath.ROUTES}
    assert sorted(name for name, count in checked.items() if count == 0) == [], checked


def test_a_disagreement_names_the_fast_path() -> None:
    path = fastpath.register("a test path", "the test's reference")
    assert fastpath.agree(path, [1, 2], [1, 2]) == [1, 2]
    with pytest.raises(VerifyError, match=r"fast path 'a test path' gave 1, its reference .the test's reference. 2"):
        fastpath.agree(path, 1, 2)
    with pytest.raises(ValueError, match="another reference"):
        fastpath.register("a test path", "something else")
    del fastpath.ROUTES["a test path"]


def test_the_switch_is_the_environment_variable(monkeypatch: pytest.MonkeyPatch) -> None:
    monkeypatch.delenv(fastpath.CHECK_ENV, raising=False)
    assert not fastpath.checking()
    monkeypatch.setenv(fastpath.CHECK_ENV, "0")
    assert not fastpath.checking()
    monkeypatch.setenv(fastpath.CHECK_ENV, "1")
    assert fastpath.checking()
