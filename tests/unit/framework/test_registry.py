"""Plugin discovery, loading and refusal."""

from __future__ import annotations

import logging
from importlib import metadata
from pathlib import Path

import pytest
import vl_thirdparty

from volcanolib import ConfigError, PluginConfigError, Registry, Scheduler, hookimpl, parse_config
from volcanolib.framework.config import DEFAULT_CONFIG
from volcanolib.framework.registry import (
    BUILTIN_ACTIONS,
    BUILTIN_PLUGINS,
    CONTRIB_ACTIONS,
    CONTRIB_PLUGINS,
    PluginHost,
    Provider,
    check_plugin_class,
    hooks_of,
)
from volcanolib.testing import FakeCache, build_node, build_pod_group, build_task


def _entry_points(group: str, dist: str) -> dict[str, str]:
    return {ep.name: ep.value for ep in metadata.entry_points(group=group) if ep.dist and ep.dist.name == dist}


def test_static_tables_match_entry_points() -> None:
    assert _entry_points("volcanolib.plugins", "volcanolib") == dict(BUILTIN_PLUGINS)
    assert _entry_points("volcanolib.actions", "volcanolib") == dict(BUILTIN_ACTIONS)
    assert set(_entry_points("volcanolib.plugins", "volcanolib-contrib")) == set(CONTRIB_PLUGINS)
    assert set(_entry_points("volcanolib.actions", "volcanolib-contrib")) == set(CONTRIB_ACTIONS)


def test_third_party_plugin_is_discovered_with_its_distribution() -> None:
    provider = Registry().plugins()["scripted-a"]
    assert provider.distribution == "volcanolib-test-thirdparty"
    assert provider.load() is vl_thirdparty.Scripted
    assert "job_order" in hooks_of(vl_thirdparty.Scripted)


def test_third_party_plugin_is_configured_by_name_with_arguments() -> None:
    config = parse_config(
        "actions: ''\ntiers:\n- plugins:\n  - name: scripted-a\n    arguments: {label: first, order: name}\n"
    )
    host = PluginHost(config)
    plugin = host.plugins["scripted-a"]
    assert isinstance(plugin, vl_thirdparty.Scripted)
    assert plugin.args == {"label": "first", "order": "name"}
    assert "job_order" in host.implemented_hooks("scripted-a")


def test_unknown_hook_is_refused_at_load_with_the_plugin_name() -> None:
    config = parse_config("actions: ''\ntiers:\n- plugins:\n  - name: badhook\n")
    with pytest.raises(PluginConfigError) as info:
        PluginHost(config)
    assert "badhook" in str(info.value) and "job_ordr" in str(info.value)


def test_tryfirst_on_a_tiered_hook_is_refused() -> None:
    cache = FakeCache()
    with pytest.raises(PluginConfigError) as info:
        Scheduler(cache, "actions: ''\ntiers:\n- plugins:\n  - name: ordered-first\n")
    assert info.value.plugin == "ordered-first" and info.value.hook == "job_order"


def test_unknown_plugin_lists_installed_ones() -> None:
    with pytest.raises(ConfigError) as info:
        PluginHost(parse_config("actions: ''\ntiers:\n- plugins:\n  - name: gnag\n", source="sched.conf"))
    msg = str(info.value)
    assert msg.startswith("sched.conf: tiers[0].plugins[0].name: unknown plugin 'gnag'")
    assert "gang" in msg and "scripted-a" in msg


def test_missing_contrib_plugin_names_its_distribution() -> None:
    registry = Registry(blocked=CONTRIB_PLUGINS)
    with pytest.raises(ConfigError) as info:
        PluginHost(parse_config("actions: ''\ntiers:\n- plugins:\n  - name: predicates\n"), registry)
    assert "volcanolib-contrib" in str(info.value)


def test_unknown_action_lists_installed_ones() -> None:
    with pytest.raises(ConfigError) as info:
        PluginHost(parse_config("actions: 'enqueue, alocate'\ntiers: []\n"))
    assert "unknown action 'alocate'" in str(info.value) and "allocate" in str(info.value)


def test_environment_blocks_plugins(monkeypatch: pytest.MonkeyPatch) -> None:
    monkeypatch.setenv("VOLCANOLIB_DISABLE_PLUGINS", "scripted-a, keyed-a")
    plugins = Registry().plugins()
    assert "scripted-a" not in plugins and "keyed-a" not in plugins and "scripted-b" in plugins


def test_plugin_argument_of_wrong_type_names_plugin_and_key() -> None:
    from volcanolib.framework.config import Arguments

    args = Arguments({"binpack.weight": "ten"}, owner="plugin 'binpack'")
    with pytest.raises(ConfigError) as info:
        args.get_int("binpack.weight", 1)
    assert "plugin 'binpack' arguments.binpack.weight" in str(info.value)
    assert Arguments({"x": "true"}).get_bool("x", False) is True
    assert Arguments({"x": 2}).get_float("x", 0.5) == 2.0


def test_extra_classes_register_without_packaging() -> None:
    class Tiny:
        name = "tiny"

        def __init__(self, arguments: object) -> None:
            pass

    registry = Registry(plugins={"tiny": Tiny})
    host = PluginHost(parse_config("actions: ''\ntiers:\n- plugins:\n  - name: tiny\n"), registry)
    assert isinstance(host.plugins["tiny"], Tiny)


def test_default_configuration_loads_with_both_distributions() -> None:
    cache = FakeCache()
    cache.add_node(build_node("n1"))
    cache.add_pod_group(build_pod_group("pg"))
    cache.add_task(build_task("pg-t-0", job="pg"))
    scheduler = Scheduler(cache)
    assert [a.name for a in scheduler.host.actions] == ["enqueue", "allocate", "backfill"]
    assert list(scheduler.host.plugins) == [
        "priority", "gang", "conformance", "overcommit", "drf", "predicates", "proportion", "nodeorder", "binpack",
    ]  # fmt: skip


def test_a_misspelt_plugin_or_action_name_gets_did_you_mean() -> None:
    with pytest.raises(ConfigError) as info:
        PluginHost(parse_config("actions: ''\ntiers:\n- plugins:\n  - name: gnag\n", source="sched.conf"))
    assert "unknown plugin 'gnag' (did you mean 'gang'?); installed plugins: " in str(info.value)
    with pytest.raises(ConfigError) as info:
        PluginHost(parse_config("actions: 'enqueue, alocate'\ntiers: []\n"))
    assert "unknown action 'alocate' (did you mean 'allocate'?)" in str(info.value)
    with pytest.raises(ConfigError) as info:
        PluginHost(parse_config("actions: ''\ntiers:\n- plugins:\n  - name: zzzzzz\n"))
    assert "did you mean" not in str(info.value)


def test_a_missing_contrib_plugin_says_how_to_install_it() -> None:
    registry = Registry(blocked=CONTRIB_PLUGINS)
    with pytest.raises(ConfigError) as info:
        PluginHost(parse_config("actions: ''\ntiers:\n- plugins:\n  - name: predicates\n"), registry)
    assert "pip install -e ./plugins_contrib" in str(info.value)
    assert "pip install volcanolib-contrib" not in str(info.value)  # no package index serves it


def test_the_default_configuration_runs_without_contrib_with_one_warning(caplog: pytest.LogCaptureFixture) -> None:
    registry = Registry(blocked=CONTRIB_PLUGINS)  # as with only the volcanolib distribution installed
    cache = FakeCache()
    cache.add_node(build_node("n1"))
    cache.add_pod_group(build_pod_group("pg", min_member=2))
    for i in range(2):
        cache.add_task(build_task(f"pg-t-{i}", job="pg"))
    with caplog.at_level(logging.WARNING, logger="volcanolib"):
        scheduler = Scheduler(cache, registry=registry)
        again = Scheduler(FakeCache(), registry=registry)
    assert list(scheduler.host.plugins) == ["priority", "gang", "conformance", "drf", "proportion", "binpack"]
    assert again.config is scheduler.config  # one derived configuration, one warning per process
    [warning] = scheduler.config.warnings
    assert warning.startswith("volcanolib-contrib is not installed: the default configuration runs without ")
    assert "nodeorder, overcommit, predicates" in warning and "pip install -e ./plugins_contrib" in warning
    assert len([r for r in caplog.records if "volcanolib-contrib is not installed" in r.getMessage()]) <= 1
    result = Scheduler(cache, registry=registry).run_once()
    assert sorted(task.name for task, _ in result.binds) == ["pg-t-0", "pg-t-1"]
    # with contrib installed the default configuration is the full one
    assert Registry().default_config() is DEFAULT_CONFIG


def test_check_plugin_class_refuses_what_installing_would_refuse() -> None:
    check_plugin_class("scripted-a", vl_thirdparty.Scripted)
    with pytest.raises(PluginConfigError) as info:
        check_plugin_class("badhook", vl_thirdparty.BadHook)
    assert str(info.value) == "plugin 'badhook': unknown hook 'job_ordr': no such hook specification"
    with pytest.raises(PluginConfigError) as info:
        check_plugin_class("ordered-first", vl_thirdparty.TryFirst)
    assert info.value.plugin == "ordered-first" and info.value.hook == "job_order"

    class WrongArguments:
        name = "wrong-arguments"

        @hookimpl
        def job_order(self, ssn: object, left: object, rigth: object) -> int:
            return 0

    with pytest.raises(PluginConfigError, match="rigth"):
        check_plugin_class("wrong-arguments", WrongArguments)


@pytest.mark.parametrize(
    ("plugin", "expected"),
    [
        ("badhook", "tiers[0].plugins[1]: plugin 'badhook': unknown hook 'job_ordr'"),
        ("ordered-first", "tiers[0].plugins[1]: plugin 'ordered-first', hook 'job_order': tiered hooks"),
        ("unimportable", "tiers[0].plugins[1]: plugin 'unimportable': cannot import no_such_module_here:X"),
    ],
)
def test_an_error_in_a_configured_plugin_names_the_configuration_file(
    plugin: str, expected: str, tmp_path: Path
) -> None:
    registry = Registry()
    registry._plugins["unimportable"] = Provider("unimportable", "no_such_module_here:X", "broken-dist")
    conf = tmp_path / "volcano-scheduler.conf"
    conf.write_text(f"actions: allocate\ntiers:\n- plugins:\n  - name: gang\n  - name: {plugin}\n")
    with pytest.raises(PluginConfigError) as info:
        Scheduler(FakeCache(), conf, registry=registry)
    assert str(info.value).startswith(f"{conf}: {expected}"), str(info.value)
    assert info.value.plugin == plugin
