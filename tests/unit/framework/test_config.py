from __future__ import annotations

import pytest

from volcanolib import ConfigError
from volcanolib.framework.config import DEFAULT_CONFIG, is_file_name, load_config, parse_config

FULL = """
actions: "enqueue, allocate,preempt , backfill"
tiers:
- plugins:
  - name: priority
  - name: gang
    enablePreemptable: false
    enabledOverused: false
- plugins:
  - name: drf
    enableHierarchy: true
  - name: binpack
    arguments:
      binpack.weight: 10
      binpack.resources: nvidia.com/gpu
configurations:
- name: preempt
  arguments:
    enableTopologyAwarePreemption: true
"""


def test_parse_full_configuration() -> None:
    config = parse_config(FULL)
    assert config.actions == ("enqueue", "allocate", "preempt", "backfill")
    gang = config.tiers[0].plugins[1]
    assert gang.enabled("enablePreemptable") is False
    assert gang.hook_enabled("preemptable") is False and gang.hook_enabled("overused") is False
    assert gang.hook_enabled("job_ready") is True  # absent means enabled
    assert gang.hook_enabled("job_valid") is True  # not gated
    assert config.tiers[1].plugins[0].enable_hierarchy is True
    assert config.tiers[1].plugins[1].arguments.get_int("binpack.weight", 1) == 10
    assert config.action_arguments("preempt").get_bool("enableTopologyAwarePreemption", False) is True
    assert config.action_arguments("allocate").get_bool("x", False) is False


def test_cluster_order_switch_is_off_by_default() -> None:
    option = parse_config("actions: ''\ntiers:\n- plugins:\n  - name: x\n").tiers[0].plugins[0]
    assert option.enabled("enabledClusterOrder") is False


def test_unknown_switch_is_a_warning_naming_the_closest_key() -> None:
    config = parse_config(
        "actions: ''\ntiers:\n- plugins:\n  - name: gang\n    enableJobOrdr: false\n", source="s.conf"
    )
    assert len(config.warnings) == 1
    assert "enableJobOrdr" in config.warnings[0] and "enableJobOrder" in config.warnings[0]


@pytest.mark.parametrize(
    ("text", "key"),
    [
        ("actions: 3\n", "actions"),
        ("actions: a\ntiers: {plugins: []}\n", "tiers"),
        ("actions: a\ntiers:\n- plugins:\n  - arguments: {}\n", "tiers[0].plugins[0].name"),
        (
            "actions: a\ntiers:\n- plugins:\n  - name: gang\n    enableJobOrder: maybe\n",
            "tiers[0].plugins[0].enableJobOrder",
        ),
        ("actions: a\ntiers:\n- plugins:\n  - name: gang\n    arguments: [1]\n", "tiers[0].plugins[0].arguments"),
        ("actions: a\ntiers:\n- plugins:\n  - name: gang\n- plugins:\n  - name: gang\n", "tiers[1].plugins[0].name"),
        ("actions: a\nconfigurations:\n- arguments: {}\n", "configurations[0].name"),
    ],
)
def test_errors_name_the_offending_key(text: str, key: str) -> None:
    with pytest.raises(ConfigError) as info:
        parse_config(text, source="sched.conf")
    assert info.value.key == key
    assert str(info.value).startswith(f"sched.conf: {key}: ")


def test_drf_hierarchy_with_proportion_in_one_tier_is_a_warning() -> None:
    text = "actions: ''\ntiers:\n- plugins:\n  - name: drf\n    enableHierarchy: true\n  - name: proportion\n"
    assert any("both order queues" in w for w in parse_config(text).warnings)
    assert not parse_config(text.replace("enableHierarchy: true", "enableHierarchy: false")).warnings


def test_invalid_yaml_names_the_line() -> None:
    with pytest.raises(ConfigError, match=r"x: not valid YAML at line \d"):
        parse_config("actions: a\ntiers: [\n", source="x")


def test_a_tab_is_named_as_a_tab() -> None:
    with pytest.raises(ConfigError) as info:
        parse_config('actions: "allocate"\ntiers:\n- plugins:\n\t- name: gang\n', source="x.conf")
    assert str(info.value) == "x.conf: not valid YAML: a tab character at line 4, column 1: YAML indents with spaces"


@pytest.mark.parametrize(
    ("text", "held"),
    [
        (
            "apiVersion: v1\nkind: Node\nmetadata: {name: n1}\n---\napiVersion: v1\nkind: Pod\nmetadata: {name: p}\n"
            "---\nkind: Node\nmetadata: {name: n2}\n",
            "3 YAML documents of Kubernetes objects (Node, Pod)",
        ),
        ("actions: allocate\n---\nactions: enqueue\n", "2 YAML documents"),
    ],
)
def test_several_documents_are_not_a_configuration(text: str, held: str) -> None:
    with pytest.raises(ConfigError) as info:
        parse_config(text, source="cluster.yaml")
    assert str(info.value) == (
        f"cluster.yaml: {held}, not a scheduler configuration: a configuration is one mapping with 'actions' "
        "and 'tiers' (cluster files are given as FILE arguments)"
    )


def test_default_configuration() -> None:
    assert DEFAULT_CONFIG.actions == ("enqueue", "allocate", "backfill")
    names = [[p.name for p in t.plugins] for t in DEFAULT_CONFIG.tiers]
    assert names == [
        ["priority", "gang", "conformance"],
        ["overcommit", "drf", "predicates", "proportion", "nodeorder", "binpack"],
    ]


def test_load_config_missing_file(tmp_path) -> None:  # type: ignore[no-untyped-def]
    with pytest.raises(ConfigError) as info:
        load_config(tmp_path / "nope.conf")
    assert "nope.conf" in str(info.value)


NOT_SCHEDULER_CONFIGURATIONS = {
    "empty": ("", "empty: not a scheduler configuration"),
    "only comments": ("# truncated\n", "empty: not a scheduler configuration"),
    "no actions key": ("tiers:\n- plugins:\n  - name: gang\n", "not a scheduler configuration: no 'actions' key"),
    "misspelt actions key": ("action: allocate\n", "no 'actions' key (found 'action': did you mean 'actions'?)"),
    "actions left empty": ("actions:\ntiers: []\n", "actions: no actions given"),
    "a ConfigMap": (
        "apiVersion: v1\nkind: ConfigMap\nmetadata: {name: volcano-scheduler-configmap}\n"
        "data:\n  volcano-scheduler.conf: |\n    actions: allocate\n",
        "a Kubernetes ConfigMap, not a scheduler configuration; give the text of its data entry",
    ),
    "a Node": (
        "apiVersion: v1\nkind: Node\nmetadata: {name: n1}\n",
        "a Kubernetes Node, not a scheduler configuration",
    ),
    "a list of nodes": (
        "- {apiVersion: v1, kind: Node, metadata: {name: n1}}\n" * 50,
        "not a scheduler configuration: expected a mapping, got a list",
    ),
    "a scenario": ("objects: []\n", "not a scheduler configuration: no 'actions' key"),
}


@pytest.mark.parametrize("case", sorted(NOT_SCHEDULER_CONFIGURATIONS))
def test_a_document_without_actions_is_refused_in_one_line(case: str) -> None:
    text, expected = NOT_SCHEDULER_CONFIGURATIONS[case]
    with pytest.raises(ConfigError) as info:
        parse_config(text, source="sched.conf")
    message = str(info.value)
    assert message.startswith("sched.conf: ") and expected in message, message
    assert "\n" not in message and len(message) < 250


def test_a_file_without_actions_is_refused_naming_the_file(tmp_path) -> None:  # type: ignore[no-untyped-def]
    path = tmp_path / "volcano-scheduler.conf"
    path.write_text("\n\n")
    with pytest.raises(ConfigError, match=r"volcano-scheduler.conf: empty: not a scheduler configuration"):
        load_config(path)


def test_an_explicit_empty_actions_runs_no_action() -> None:
    assert parse_config('actions: ""\ntiers: []\n').actions == ()
    assert parse_config("actions: []\n").actions == ()


@pytest.mark.parametrize(
    ("text", "is_file"),
    [
        ("sched.conf", True),
        ("  /etc/volcano/volcano-scheduler.conf\n", True),
        ("C:\\volcano\\sched.conf", True),
        ("actions: allocate", False),
        ("{actions: allocate}", False),
        ('actions: "enqueue, allocate"\ntiers: []\n', False),
        ("[a, b]", False),
        ("", False),
        ("actions: [", False),
    ],
)
def test_a_configuration_string_is_a_file_name_only_when_it_is_one_plain_line(text: str, is_file: bool) -> None:
    assert is_file_name(text) is is_file
