"""Sweep files: grid expansion, and one-line errors before any replay."""

from __future__ import annotations

from pathlib import Path

import pytest
import yaml

from volcanolib.errors import ConfigError
from volcanolib.framework.config import parse_config
from volcanolib.sweep.spec import load_sweep

BASE = """\
actions: "enqueue, allocate, backfill"
tiers:
- plugins:
  - name: priority
  - name: gang
- plugins:
  - name: drf
  - name: proportion
  - name: binpack
"""


def write(tmp_path: Path, sweep: dict[str, object]) -> Path:
    (tmp_path / "base.conf").write_text(BASE)
    (tmp_path / "workload.yaml").write_text("kind: Node\n")
    path = tmp_path / "sweep.yaml"
    path.write_text(yaml.safe_dump(sweep))
    return path


def plugin_names(text: str) -> list[list[str]]:
    return [[p.name for p in tier.plugins] for tier in parse_config(text).tiers]


def test_grid_expands_to_the_cross_product_times_loads_and_seeds(tmp_path: Path) -> None:
    path = write(
        tmp_path,
        {
            "workload": ["workload.yaml"],
            "configurations": [
                {
                    "base": "base.conf",
                    "vary": [
                        {"plugin": "drf", "enabled": [True, False]},
                        {"plugin": "binpack", "argument": "binpack.weight", "values": [1, 10]},
                    ],
                }
            ],
            "load": [1.0, 2.0],
            "seeds": [0, 1, 2],
        },
    )
    sweep = load_sweep(path)
    assert len(sweep.points) == 2 * 2 * 2 * 3
    names = {p.configuration for p in sweep.points}
    assert names == {
        "base[drf=off,binpack.binpack.weight=1]",
        "base[drf=off,binpack.binpack.weight=10]",
        "base[drf=on,binpack.binpack.weight=1]",
        "base[drf=on,binpack.binpack.weight=10]",
    }
    off = next(p for p in sweep.points if p.configuration == "base[drf=off,binpack.binpack.weight=10]")
    assert plugin_names(off.config_text) == [["priority", "gang"], ["proportion", "binpack"]]
    binpack = parse_config(off.config_text).tiers[1].plugins[1]
    assert binpack.arguments["binpack.weight"] == 10
    assert len({p.key for p in sweep.points}) == len(sweep.points)


def test_tier_switch_and_actions_axes(tmp_path: Path) -> None:
    path = write(
        tmp_path,
        {
            "workload": "workload.yaml",
            "configurations": [
                {
                    "name": "b",
                    "base": "base.conf",
                    "vary": [
                        {"plugin": "proportion", "tier": [3]},
                        {"plugin": "gang", "switch": "enablePreemptable", "values": [False]},
                        {"actions": ["enqueue, allocate, reclaim"]},
                    ],
                },
                {"file": "base.conf", "name": "whole"},
            ],
        },
    )
    sweep = load_sweep(path)
    assert [p.configuration for p in sweep.points] == [
        "b[proportion.tier=3,gang.enablePreemptable=false,actions=enqueue,allocate,reclaim]",
        "whole",
    ]
    conf = parse_config(sweep.points[0].config_text)
    assert [[p.name for p in t.plugins] for t in conf.tiers] == [
        ["priority", "gang"],
        ["drf", "binpack"],
        ["proportion"],
    ]
    assert conf.actions == ("enqueue", "allocate", "reclaim")
    assert not conf.tiers[0].plugins[1].enabled("enablePreemptable")
    assert (sweep.points[0].load, sweep.points[0].seed) == (1.0, 0)


@pytest.mark.parametrize(
    ("sweep", "message"),
    [
        (
            {"workload": ["workload.yaml"], "configurations": [{"file": "base.conf"}], "colour": 1},
            "colour: unknown key",
        ),
        (
            {
                "workload": ["workload.yaml"],
                "configurations": [{"base": "base.conf", "vary": [{"plugin": "drf", "colour": [1]}]}],
            },
            "vary[0].colour: unknown key",
        ),
        ({"workload": ["workload.yaml"], "configurations": []}, "configurations: is empty"),
        ({"workload": ["missing.yaml"], "configurations": [{"file": "base.conf"}]}, "workload[0]: no such file"),
        (
            {
                "workload": ["workload.yaml"],
                "configurations": [{"base": "base.conf", "vary": [{"plugin": "drf", "enabled": []}]}],
            },
            "configurations[0].vary[0].enabled: expected a non-empty list",
        ),
        (
            {
                "workload": ["workload.yaml"],
                "configurations": [{"base": "base.conf", "vary": [{"plugin": "nope", "enabled": [False]}]}],
            },
            "plugin 'nope' is not in the base configuration",
        ),
        (
            {
                "workload": ["workload.yaml"],
                "configurations": [{"base": "base.conf", "vary": [{"actions": [""], "plugin": "x"}]}],
            },
            "an 'actions' axis has no other keys",
        ),
        (
            {"workload": ["workload.yaml"], "configurations": [{"file": "base.conf"}], "load": [0]},
            "load[0]: a load factor is a number above 0, got 0",
        ),
        (
            {"workload": ["workload.yaml"], "configurations": [{"file": "base.conf"}], "seeds": [1.5]},
            "seeds[0]: expected an integer",
        ),
        (
            {"workload": ["workload.yaml"], "configurations": [{"file": "workload.yaml"}]},
            "not a scheduler configuration",
        ),
    ],
)
def test_bad_sweep_files_are_one_line_errors(tmp_path: Path, sweep: dict[str, object], message: str) -> None:
    path = write(tmp_path, sweep)
    with pytest.raises(ConfigError) as err:
        load_sweep(path)
    text = str(err.value)
    assert message in text
    assert "\n" not in text


def test_a_point_whose_configuration_does_not_parse_is_named(tmp_path: Path) -> None:
    path = write(
        tmp_path,
        {
            "workload": ["workload.yaml"],
            "configurations": [
                {"name": "odd", "base": "base.conf", "vary": [{"plugin": "drf", "tier": [1], "enabled": [True]}]}
            ],
        },
    )
    with pytest.raises(ConfigError, match="exactly one of"):
        load_sweep(path)
    (tmp_path / "bad.conf").write_text("actions: 5\n")
    path.write_text(yaml.safe_dump({"workload": ["workload.yaml"], "configurations": [{"file": "bad.conf"}]}))
    with pytest.raises(ConfigError, match=r"point bad: actions: expected a comma-separated string"):
        load_sweep(path)


def test_a_missing_sweep_file_is_named_once(tmp_path: Path) -> None:
    missing = tmp_path / "nope.yaml"
    with pytest.raises(ConfigError) as err:
        load_sweep(missing)
    assert str(err.value) == f"{missing}: cannot read the sweep file: No such file or directory"


def test_a_tab_in_the_sweep_file_is_named_as_a_tab(tmp_path: Path) -> None:
    path = tmp_path / "sweep.yaml"
    path.write_text("workload: [workload.yaml]\nconfigurations:\n\t- file: base.conf\n")
    with pytest.raises(ConfigError) as err:
        load_sweep(path)
    assert str(err.value) == f"{path}: not valid YAML: a tab character at line 3, column 1: YAML indents with spaces"
