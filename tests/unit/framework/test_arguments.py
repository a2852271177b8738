"""Typed arguments: declaration, parsing, errors, and how plugins and actions receive them."""

from __future__ import annotations

import os
from collections.abc import Mapping
from pathlib import Path
from typing import Any, ClassVar

import attrs
import pytest

from volcanolib import Arguments, ConfigError, PluginConfigError, Registry, Scheduler, parse_config
from volcanolib.framework.arguments import (
    NoArguments,
    argument,
    argument_per_name,
    argument_specs,
    argument_table,
    declared_arguments,
    parse_arguments,
    parse_str,
)
from volcanolib.framework.registry import PluginHost
from volcanolib.testing import FakeCache


def _upper_label(raw: object) -> str:
    value = parse_str(raw).strip()
    if not value:
        raise ValueError("must not be empty")
    return value.upper()


@attrs.frozen
class Sample:
    """Every kind of argument."""

    flag: bool = argument(key="sample.flag", default=False, doc="A switch.")
    count: int = argument(key="sample.count", default=3, doc="A count.")
    ratio: float = argument(key="sample.ratio", default=0.5, doc="A ratio.")
    label: str = argument(key="sample.label", default="x", doc="A label.", parse=_upper_label)
    names: str = argument(key="sample.names", default="", doc="Comma-separated names.")
    weights: Mapping[str, int] = argument_per_name(
        key="sample.names.<name>.weight", names="names", default=1, doc="Weight of a listed name."
    )


def parse(raw: Mapping[str, Any]) -> Sample:
    return parse_arguments(Sample, raw, owner="plugin 'sample'")


def test_absent_and_null_values_give_the_defaults() -> None:
    assert parse({}) == Sample() == parse({"sample.count": None, "sample.flag": None})
    assert parse({}).weights == {}


@pytest.mark.parametrize(
    ("raw", "field", "expected"),
    [
        ({"sample.flag": True}, "flag", True),
        ({"sample.flag": "TRUE"}, "flag", True),
        ({"sample.flag": " f "}, "flag", False),
        ({"sample.flag": "1"}, "flag", True),
        ({"sample.count": 7}, "count", 7),
        ({"sample.count": -2}, "count", -2),
        ({"sample.ratio": 2}, "ratio", 2.0),
        ({"sample.ratio": 1.25}, "ratio", 1.25),
        ({"sample.label": " gpu "}, "label", "GPU"),
    ],
)
def test_values_are_parsed_by_the_field_type(raw: Mapping[str, Any], field: str, expected: object) -> None:
    value = getattr(parse(raw), field)
    assert value == expected and type(value) is type(expected)


@pytest.mark.parametrize(
    ("key", "value", "message"),
    [
        ("sample.flag", "maybe", "expected a boolean, got 'maybe'"),
        ("sample.flag", 1, "expected a boolean, got 1"),
        ("sample.count", "ten", "expected an integer, got 'ten'"),
        ("sample.count", True, "expected an integer, got True"),
        ("sample.count", 1.5, "expected an integer, got 1.5"),
        ("sample.ratio", "lots", "expected a number, got 'lots'"),
        ("sample.ratio", False, "expected a number, got False"),
        ("sample.names", ["a"], "expected a string, got ['a']"),
        ("sample.label", 7, "expected a string, got 7"),
        ("sample.label", "  ", "must not be empty"),
    ],
)
def test_a_bad_value_names_the_owner_and_the_key(key: str, value: object, message: str) -> None:
    with pytest.raises(ConfigError) as info:
        parse({key: value})
    assert info.value.key == f"plugin 'sample' arguments.{key}"
    assert info.value.message == message
    assert str(info.value) == f"plugin 'sample' arguments.{key}: {message}"


def test_a_parse_function_may_raise_config_error() -> None:
    def refuse(raw: object) -> str:
        raise ConfigError("not today", key="ignored")

    @attrs.frozen
    class Strict:
        mode: str = argument(key="mode", default="", doc="A mode.", parse=refuse)

    with pytest.raises(ConfigError) as info:
        parse_arguments(Strict, {"mode": "x"}, owner="action 'strict'")
    assert (info.value.key, info.value.message) == ("action 'strict' arguments.mode", "not today")


def test_unknown_keys_are_ignored() -> None:
    assert parse({"sample.cuont": "whatever", "other": [1]}) == Sample()


def test_a_key_family_is_read_for_the_listed_names_only() -> None:
    parsed = parse(
        {
            "sample.names": " gpu, ,fpga ",
            "sample.names.gpu.weight": 4,
            # Not listed: not read, so not checked either (as the plugins always did).
            "sample.names.tpu.weight": "heavy",
        }
    )
    assert dict(parsed.weights) == {"gpu": 4, "fpga": 1}
    with pytest.raises(ConfigError) as info:
        parse({"sample.names": "gpu", "sample.names.gpu.weight": "heavy"})
    assert info.value.key == "plugin 'sample' arguments.sample.names.gpu.weight"
    assert info.value.message == "expected an integer, got 'heavy'"


def test_specs_give_keys_types_and_defaults_in_field_order() -> None:
    specs = argument_specs(Sample)
    assert [(s.key, s.type_name, s.default) for s in specs] == [
        ("sample.flag", "bool", False),
        ("sample.count", "int", 3),
        ("sample.ratio", "float", 0.5),
        ("sample.label", "string", "x"),
        ("sample.names", "string", ""),
        ("sample.names.<name>.weight", "int", 1),
    ]
    assert specs[-1].names == "names"
    assert argument_specs(NoArguments) == ()


def test_the_table_of_a_declaration() -> None:
    assert argument_table(NoArguments) == "None.\n"
    lines = argument_table(Sample).splitlines()
    assert lines[:2] == ["| argument | type | default | meaning |", "|---|---|---|---|"]
    assert lines[2] == "| `sample.flag` | bool | `false` | A switch. |"
    assert lines[5] == "| `sample.label` | string | `x` | A label. |"
    assert lines[6] == '| `sample.names` | string | `""` | Comma-separated names. |'
    assert lines[7] == "| `sample.names.<name>.weight` | int | `1` | Weight of a listed name. |"


def test_declarations_that_cannot_be_parsed_are_refused() -> None:
    @attrs.frozen
    class Plain:
        count: int = 1

    @attrs.frozen
    class Untyped:
        items: tuple[str, ...] = argument(key="items", default=(), doc="No parser for a tuple.")

    @attrs.frozen
    class Orphan:
        weights: Mapping[str, int] = argument_per_name(key="w.<name>", names="missing", default=1, doc="No names.")

    for cls, message in [(Plain, "not declared with argument"), (Untyped, "parse function"), (Orphan, "names")]:
        with pytest.raises(TypeError, match=message):
            argument_specs(cls)
    with pytest.raises(ValueError, match="<name>"):
        argument_per_name(key="w", names="x", default=1, doc="No placeholder.")


def test_only_an_attrs_class_of_arguments_is_a_declaration() -> None:
    class WithSample:
        Arguments = Sample

    class WithRawMapping:
        Arguments = Arguments  # the raw mapping class: attrs, but not a declaration

    class Without:
        pass

    assert declared_arguments(WithSample) is Sample
    assert declared_arguments(WithRawMapping) is None
    assert declared_arguments(Without) is None


# ---------------------------------------------------------------------- plugins and actions receive them


class SamplePlugin:
    name: ClassVar[str] = "sample"
    Arguments: ClassVar[type[Sample]] = Sample

    def __init__(self, arguments: Sample) -> None:
        self.arguments = arguments


class RawPlugin:
    name: ClassVar[str] = "raw"

    def __init__(self, arguments: Arguments) -> None:
        self.arguments = arguments


class SampleAction:
    name: ClassVar[str] = "sample-action"
    Arguments: ClassVar[type[Sample]] = Sample

    def __init__(self, arguments: Sample) -> None:
        self.arguments = arguments

    def execute(self, ssn: Any) -> None:
        pass


class PlainAction:
    name: ClassVar[str] = "plain-action"

    def execute(self, ssn: Any) -> None:
        pass


REGISTRY = Registry(
    plugins={"sample": SamplePlugin, "raw": RawPlugin},
    actions={"sample-action": SampleAction, "plain-action": PlainAction},
)
CONF = """
actions: "sample-action, plain-action"
tiers:
- plugins:
  - name: sample
    arguments: {sample.count: 9, sample.names: gpu, sample.names.gpu.weight: 2}
  - name: raw
    arguments: {anything: [1, 2]}
configurations:
- name: sample-action
  arguments: {sample.flag: "true"}
- name: plain-action
  arguments: {whatever: 1}
"""


def test_a_declaring_plugin_gets_its_typed_arguments_and_others_the_raw_mapping() -> None:
    host = PluginHost(parse_config(CONF), REGISTRY)
    sample, raw = host.plugins["sample"], host.plugins["raw"]
    assert sample.arguments == Sample(count=9, names="gpu", weights={"gpu": 2})
    assert isinstance(raw.arguments, Arguments) and raw.arguments["anything"] == [1, 2]
    action, plain = host.actions
    assert isinstance(action, SampleAction) and action.arguments == Sample(flag=True)
    assert isinstance(plain, PlainAction)


def test_a_bad_action_argument_refuses_the_configuration_with_its_source() -> None:
    conf = parse_config(CONF.replace('sample.flag: "true"', "sample.count: many"), source="sched.conf")
    with pytest.raises(ConfigError) as info:
        PluginHost(conf, REGISTRY)
    assert (
        str(info.value) == "sched.conf: action 'sample-action' arguments.sample.count: expected an integer, got 'many'"
    )


def test_arguments_of_actions_that_do_not_run_are_not_read() -> None:
    conf = CONF.replace('actions: "sample-action, plain-action"', 'actions: "plain-action"')
    conf = conf.replace('sample.flag: "true"', "sample.count: many")
    assert [a.name for a in PluginHost(parse_config(conf), REGISTRY).actions] == ["plain-action"]


def test_an_action_whose_constructor_fails_is_a_plugin_config_error() -> None:
    class Broken(SampleAction):
        def __init__(self, arguments: Sample) -> None:
            raise RuntimeError("no licence")

    registry = Registry(actions={"sample-action": Broken})
    with pytest.raises(PluginConfigError, match="cannot build action 'sample-action': RuntimeError: no licence"):
        registry.action("sample-action")


def test_a_reload_parses_the_new_arguments(tmp_path: Path) -> None:
    conf = tmp_path / "volcano-scheduler.conf"
    conf.write_text(CONF)
    scheduler = Scheduler(FakeCache(), conf, registry=REGISTRY)
    assert scheduler.host.plugins["sample"].arguments.count == 9
    conf.write_text(CONF.replace("sample.count: 9", "sample.count: 4"))
    stamp = conf.stat().st_mtime + 10
    os.utime(conf, (stamp, stamp))
    assert scheduler.reload_config() is True
    assert scheduler.host.plugins["sample"].arguments.count == 4
