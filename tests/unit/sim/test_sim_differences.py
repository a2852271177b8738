"""The documented differences from Volcano: each pinned by scenarios, explained in the docs."""

from __future__ import annotations

from pathlib import Path

from volcanolib.sim.differences import KNOWN_DIFFERENCES, reasons_for
from volcanolib.sim.runner import load_scenario

ROOT = Path(__file__).resolve().parents[3]


def test_every_documented_difference_is_pinned_and_explained() -> None:
    """Each known difference names scenarios that show both outcomes, and docs/differences.md explains it."""
    page = (ROOT / "docs" / "differences.md").read_text()
    for difference in KNOWN_DIFFERENCES:
        assert f'<a id="{difference.key}"></a>' in page, difference.key
        assert difference.scenarios, difference.key
        for name in difference.scenarios:
            scenario = load_scenario([ROOT / "tests" / "scenarios" / name])
            assert scenario.volcano_expect is not None, f"{name} has no volcano block"
            assert difference.applies(scenario), f"{difference.key} does not recognise its own scenario {name}"


def test_a_scenario_without_the_features_touches_no_difference() -> None:
    assert reasons_for(load_scenario([ROOT / "examples" / "quickstart.yaml"])) == []
