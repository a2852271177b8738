"""Tables drawn by rich: plain text off a terminal, the direct layout of large tables, the missing extra."""

from __future__ import annotations

import io
import re
import sys
from pathlib import Path

import pytest
from hypothesis import given
from hypothesis import strategies as st

from volcanolib import MissingExtraError, cli
from volcanolib import _console as console_mod
from volcanolib._console import TableSpec, output, plain_table, progress, render_text, require_rich, write

ROOT = Path(__file__).resolve().parents[2]
QUICKSTART = str(ROOT / "examples" / "quickstart.yaml")


class Terminal(io.StringIO):
    """A stream that says it is a terminal."""

    def isatty(self) -> bool:
        return True


# Printable cells, some wide (two columns each), some with inner or outer spaces.
CELL = st.text(st.sampled_from("ab-/. 0123 宽字é"), max_size=12).filter(str.isprintable)


@st.composite
def specs(draw: st.DrawFn) -> TableSpec:
    columns = draw(st.integers(1, 4))
    headers = tuple(draw(st.lists(CELL.filter(bool), min_size=columns, max_size=columns)))
    rows = draw(st.lists(st.tuples(*[CELL] * columns), max_size=8))
    right = frozenset(draw(st.sets(st.integers(0, columns - 1))))
    return TableSpec(headers, tuple(rows), right, draw(st.integers(0, 4)))


@given(specs())
def test_the_direct_layout_gives_the_text_rich_gives(spec: TableSpec) -> None:
    assert len(spec.rows) <= console_mod.FAST_ROWS  # so render_text asks rich
    assert render_text([spec]) == "".join(line + "\n" for line in plain_table(spec))


def test_a_large_table_is_laid_out_directly_with_the_same_text(monkeypatch: pytest.MonkeyPatch) -> None:
    rows = tuple((f"ns/job-{i}", "default", str(i * 7 % 1000)) for i in range(console_mod.FAST_ROWS + 1))
    spec = TableSpec(("POD GROUP", "QUEUE", "N"), rows, frozenset({2}))
    laid_out: list[TableSpec] = []

    def spy(spec: TableSpec) -> list[str]:
        laid_out.append(spec)
        return plain_table(spec)

    monkeypatch.setattr(console_mod, "plain_table", spy)
    direct = render_text([spec])
    assert laid_out == [spec]
    monkeypatch.setattr(console_mod, "plain_table", None)  # rich only
    monkeypatch.setattr(console_mod, "FAST_ROWS", len(rows))
    assert render_text([spec]) == direct
    lines = direct.splitlines()
    assert lines[1].split() == ["ns/job-0", "default", "0"]
    assert len({len(line) for line in lines}) == 1  # the last column is aligned right: every line ends under it


def test_plain_text_never_wraps_and_has_no_trailing_spaces() -> None:
    long = "x" * 500
    text = render_text(["title", TableSpec(("A", "B"), (("1", long), ("22", "y"))), "", "end"])
    assert text.splitlines() == ["title", "  A   B", f"  1   {long}", "  22  y", "", "end"]


def test_on_a_terminal_rich_wraps_cells_to_its_width(monkeypatch: pytest.MonkeyPatch) -> None:
    monkeypatch.setenv("COLUMNS", "40")
    out = Terminal()
    write(out, [TableSpec(("NODE", "PODS"), (("n1", " ".join(f"pod-{i}" for i in range(12))),))])
    assert "\x1b[1mNODE" in out.getvalue()  # bold headers
    lines = re.sub(r"\x1b\[[0-9;]*m", "", out.getvalue()).splitlines()
    assert len(lines) == 4 and all(len(line) <= 40 for line in lines)
    assert lines[1].split() == ["n1", "pod-0", "pod-1", "pod-2", "pod-3", "pod-4"]
    assert lines[3].split() == ["pod-10", "pod-11"]


def test_output_holds_plain_text_until_the_end() -> None:
    out = io.StringIO()
    with output(out) as console:
        console.print("a [b] :smile:   ")
        assert out.getvalue() == ""
    assert out.getvalue() == "a [b] :smile:\n"  # no markup, no emoji, no trailing spaces


def test_progress_is_silent_off_a_terminal_and_drawn_on_one() -> None:
    quiet = io.StringIO()
    with progress("replaying", quiet) as report:
        report(1.0, 2.0)
    assert quiet.getvalue() == ""
    shown = Terminal()
    with progress("replaying", shown) as report:
        for done in range(0, 101, 10):
            report(float(done), 100.0)
    assert "replaying" in shown.getvalue()


def test_without_rich_tables_are_refused_with_the_extra_named(monkeypatch: pytest.MonkeyPatch) -> None:
    monkeypatch.setitem(sys.modules, "rich", None)
    with pytest.raises(MissingExtraError) as info:
        require_rich()
    assert str(info.value) == (
        "printing tables needs the 'cli' extra (rich): pip install 'volcanolib[cli]' (or use --json)"
    )
    assert isinstance(info.value, ImportError) and info.value.extra == "cli"
    with progress("replaying", Terminal()) as report:  # no bar, no error
        report(1.0, 2.0)


@pytest.mark.parametrize("command", [["simulate", QUICKSTART], ["explain", QUICKSTART, "default/x"], ["plugins"]])
def test_commands_that_print_tables_exit_2_without_rich(
    command: list[str], monkeypatch: pytest.MonkeyPatch, capsys: pytest.CaptureFixture[str]
) -> None:
    monkeypatch.setitem(sys.modules, "rich", None)
    assert cli.main(command) == 2
    captured = capsys.readouterr()
    assert captured.out == ""
    assert captured.err == (
        "volcanolib: error: printing tables needs the 'cli' extra (rich): "
        "pip install 'volcanolib[cli]' (or use --json)\n"
    )


@pytest.mark.parametrize("command", [["simulate", QUICKSTART, "--json"], ["plugins", "--json"], ["check", QUICKSTART]])
def test_json_and_check_need_no_rich(
    command: list[str], monkeypatch: pytest.MonkeyPatch, capsys: pytest.CaptureFixture[str]
) -> None:
    monkeypatch.setitem(sys.modules, "rich", None)
    assert cli.main(command) in (0, 1)  # check: the quick start has no expect block
    assert "volcanolib[cli]" not in capsys.readouterr().err
