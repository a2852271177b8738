"""Plugin discovery, loading and refusal."""

from __future__ import annotations

from importlib import metadata

import pytest
import vl_thirdparty

from volcanolib import ConfigError, PluginConfigError, Registry, Scheduler, parse_config
from volcanolib.framework.registry import BUILTIN_ACTIONS, BUILTIN_PLUGINS, CONTRIB_PLUGINS, PluginHost, hooks_of
from volcanolib.testing import FakeCache, build_node, build_pod_group, build_task


def _entry_points(group: str, dist: str) -> dict[str, str]:
    return {ep.name: ep.value for ep in metadata.entry_points(group=group) if ep.dist and ep.dist.name == dist}


def test_static_tables_match_entry_points() -> None:
    assert _entry_points("volcanolib.plugins", "volcanolib") == dict(BUILTIN_PLUGINS)
    assert _entry_points("volcanolib.actions", "volcanolib") == dict(BUILTIN_ACTIONS)
    assert set(_entry_points("volcanolib.plugins", "volcanolib-contrib")) == set(CONTRIB_PLUGINS)


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
