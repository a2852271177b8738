"""The command's entry function called in-process: return codes and a plugin that cannot load."""

from __future__ import annotations

import pytest
from cli_helpers import EXAMPLES

from volcanolib import cli
from volcanolib.framework import registry


def test_main_returns_the_exit_status(capsys: pytest.CaptureFixture[str]) -> None:
    assert cli.main(["simulate", str(EXAMPLES / "quickstart.yaml"), "--json"]) == 0
    assert '"binds"' in capsys.readouterr().out
    assert cli.main(["simulate", str(EXAMPLES / "nope.yaml")]) == 2
    err = capsys.readouterr().err
    assert err.startswith("volcanolib: error: ") and err.count("\n") == 1


def test_a_plugin_that_cannot_be_imported_is_listed_with_the_reason(
    monkeypatch: pytest.MonkeyPatch, capsys: pytest.CaptureFixture[str]
) -> None:
    monkeypatch.setitem(registry.BUILTIN_PLUGINS, "zz-missing", "no_such_module:Plugin")  # type: ignore[index]
    assert cli.main(["plugins"]) == 0
    line = next(x for x in capsys.readouterr().out.splitlines() if x.strip().startswith("zz-missing"))
    assert "cannot load: ModuleNotFoundError: No module named 'no_such_module'" in line
