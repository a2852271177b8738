"""A plugin or action whose entry point cannot be imported: one line naming it, its distribution and the error."""

from __future__ import annotations

import sys
from pathlib import Path

import pytest

from volcanolib import ConfigError, PluginConfigError, PluginError, Registry, Scheduler
from volcanolib.testing import FakeCache, build_node

DIST = "volcanolib-broken-plugins"

MODULES = {
    "vl_broken_missing": "import vl_no_such_module_anywhere\n",
    "vl_broken_raises": "raise RuntimeError('cannot start without a licence server')\n",
    "vl_broken_syntax": "def oops(:\n",
    "vl_broken_fine": "class Plugin:\n    name = 'fine'\n\n    def __init__(self, arguments):\n        pass\n",
}
ENTRY_POINTS = {
    "broken-missing": ("vl_broken_missing:Plugin", "ModuleNotFoundError: No module named 'vl_no_such_module_anywhere'"),
    "broken-raises": ("vl_broken_raises:Plugin", "RuntimeError: cannot start without a licence server"),
    "broken-syntax": ("vl_broken_syntax:Plugin", "SyntaxError: "),
    "broken-attribute": ("vl_broken_fine:Missing", "AttributeError: "),
}


@pytest.fixture
def broken_distribution(tmp_path: Path, monkeypatch: pytest.MonkeyPatch) -> Path:
    """An installed distribution (a dist-info directory on sys.path) whose entry points fail to import."""
    for module, source in MODULES.items():
        (tmp_path / f"{module}.py").write_text(source)
        monkeypatch.delitem(sys.modules, module, raising=False)
    info = tmp_path / "volcanolib_broken_plugins-0.1.dist-info"
    info.mkdir()
    (info / "METADATA").write_text(f"Metadata-Version: 2.1\nName: {DIST}\nVersion: 0.1\n")
    plugins = "".join(f"{name} = {target}\n" for name, (target, _) in ENTRY_POINTS.items())
    actions = "broken-action = vl_broken_raises:Action\n"
    (info / "entry_points.txt").write_text(f"[volcanolib.plugins]\n{plugins}\n[volcanolib.actions]\n{actions}")
    monkeypatch.syspath_prepend(str(tmp_path))
    return tmp_path


def _cache() -> FakeCache:
    cache = FakeCache()
    cache.add_node(build_node("n1"))
    return cache


@pytest.mark.parametrize("plugin", sorted(ENTRY_POINTS))
def test_a_plugin_that_cannot_be_imported_is_one_clear_error(broken_distribution: Path, plugin: str) -> None:
    target, error = ENTRY_POINTS[plugin]
    registry = Registry()
    assert registry.plugins()[plugin].distribution == DIST
    with pytest.raises(PluginConfigError) as info:
        Scheduler(_cache(), f"actions: allocate\ntiers:\n- plugins:\n  - name: gang\n  - name: {plugin}\n")
    message = str(info.value)
    assert "\n" not in message
    assert info.value.plugin == plugin
    assert f"'{plugin}'" in message and target in message and f"'{DIST}'" in message and error in message
    assert info.value.__cause__ is not None  # the original error stays available to a debugger


def test_an_action_that_cannot_be_imported_is_one_clear_error(broken_distribution: Path) -> None:
    with pytest.raises(PluginError) as info:
        Scheduler(_cache(), "actions: 'enqueue, broken-action'\ntiers: []\n")
    message = str(info.value)
    assert "\n" not in message and "'broken-action'" in message and f"'{DIST}'" in message
    assert "RuntimeError: cannot start without a licence server" in message


def test_a_plugin_that_cannot_be_imported_on_reload_keeps_the_last_good_configuration(
    broken_distribution: Path, tmp_path: Path
) -> None:
    import os

    conf = tmp_path / "sched.conf"
    conf.write_text("actions: allocate\ntiers:\n- plugins:\n  - name: gang\n")
    scheduler = Scheduler(_cache(), conf)
    conf.write_text("actions: allocate\ntiers:\n- plugins:\n  - name: broken-raises\n")
    os.utime(conf, (conf.stat().st_mtime + 10, conf.stat().st_mtime + 10))
    assert scheduler.reload_config() is False
    assert list(scheduler.host.plugins) == ["gang"]
    assert "broken-raises" in (scheduler.config_error or "") and DIST in (scheduler.config_error or "")


def test_a_plugin_constructor_that_raises_is_a_config_error_naming_the_plugin() -> None:
    class Touchy:
        name = "touchy"

        def __init__(self, arguments: object) -> None:
            raise KeyError("weight")

    with pytest.raises(ConfigError) as info:
        Scheduler(
            _cache(),
            "actions: ''\ntiers:\n- plugins:\n  - name: touchy\n",
            registry=Registry(plugins={"touchy": Touchy}),
        )
    assert str(info.value) == "tiers[0].plugins[0].arguments: plugin 'touchy' refused its arguments: KeyError: 'weight'"
