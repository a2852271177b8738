"""The oracle, built once per test run; reports the Go lane's tests print at the end of the run."""

from __future__ import annotations

from collections.abc import Callable

import pytest
from gotools import build_tool

_reports_key = pytest.StashKey[list[tuple[str, str]]]()


@pytest.fixture(scope="session")
def oracle() -> list[str]:
    """The command that runs the oracle (tools/oracle), built."""
    return build_tool("oracle", "version")


@pytest.fixture
def terminal_report(request: pytest.FixtureRequest) -> Callable[[str, str], None]:
    """``report(title, text)``: show ``text`` under ``title`` in the terminal summary, pass or fail."""
    reports = request.config.stash.setdefault(_reports_key, [])
    return lambda title, text: reports.append((title, text))


def pytest_terminal_summary(terminalreporter: pytest.TerminalReporter, config: pytest.Config) -> None:
    """The reports the tests asked for (:func:`terminal_report`)."""
    for title, text in config.stash.get(_reports_key, []):
        terminalreporter.write_sep("=", title)
        terminalreporter.write_line(text)
