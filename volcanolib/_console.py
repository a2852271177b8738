"""Tables for a person and progress on standard error, drawn with rich (the ``cli`` extra).

Every command's human output is a sequence of *blocks*: a line of text, or
a :class:`TableSpec` (headers, rows of strings, right-aligned columns, an
indent). Where they go decides how they are drawn:

- on a terminal, by rich: bold headers, and cells wrapped to the
  terminal's width;
- anywhere else (a pipe, a file, a test), as plain text: no colour, no
  wrapping (a row is one line, whatever its length), trailing spaces
  removed, so that ``grep`` and ``diff`` see stable lines.

The plain text of a table is rich's, for any table; tables of more than
:data:`FAST_ROWS` rows, whose cells are all printable, are laid out by a
direct formatter that gives the same text, and a test compares the two.
rich takes 0.3 to 1.5 ms per row (seconds for the PodGroups of a large
cluster dump); the direct layout, microseconds.

Without rich installed, human output is refused with one line naming the
extra (:func:`require_rich`); ``--json`` output does not need it.
"""

from __future__ import annotations

import io
from collections.abc import Callable, Iterator, Sequence
from contextlib import contextmanager
from typing import TYPE_CHECKING, Final, TextIO

import attrs

from volcanolib.errors import MissingExtraError

if TYPE_CHECKING:
    from rich.console import Console, RenderableType
    from rich.table import Table

__all__ = [
    "FAST_ROWS",
    "Block",
    "TableSpec",
    "output",
    "plain_table",
    "print_blocks",
    "progress",
    "render_text",
    "require_rich",
    "rich_table",
    "text_console",
    "write",
]

#: Tables with more rows than this are laid out without rich when written as plain text.
FAST_ROWS: Final = 20
#: The width of plain text: wide enough that rich never wraps or crops a row.
_PLAIN_WIDTH: Final = 1_000_000


@attrs.frozen
class TableSpec:
    """A table to draw: column headers, rows of text, the right-aligned columns, the indent.

    :param headers: one per column.
    :param rows: each as many cells as there are headers.
    :param right: indices of the columns aligned right (numbers).
    :param indent: spaces before every line.
    """

    headers: tuple[str, ...]
    rows: tuple[tuple[str, ...], ...]
    right: frozenset[int] = frozenset()
    indent: int = 2


#: A line of text or a table.
Block = str | TableSpec


def require_rich(feature: str = "printing tables", *, hint: str | None = "or use --json") -> None:
    """Make sure rich can be imported.

    :param feature: what needs it, as the subject of the error's sentence.
    :param hint: what the user may do instead, added to the error.
    :raises MissingExtraError: rich is not installed; one line naming the ``cli`` extra.
    """
    try:
        import rich  # noqa: F401
    except ImportError:
        raise MissingExtraError("cli", "rich", feature, hint=hint) from None


def rich_table(spec: TableSpec) -> Table:
    """The spec as a rich table: no borders, two spaces between columns, bold headers; narrow, cells wrap at spaces."""
    from rich.table import Table
    from rich.text import Text

    table = Table(box=None, pad_edge=False, show_header=True, header_style="bold", padding=(0, 1))
    for i, header in enumerate(spec.headers):
        table.add_column(header, justify="right" if i in spec.right else "left")
    for row in spec.rows:
        table.add_row(*(Text(cell) for cell in row))
    return table


def _renderable(block: Block) -> RenderableType:
    from rich.padding import Padding
    from rich.text import Text

    if isinstance(block, str):
        return Text(block)
    return Padding(rich_table(block), (0, 0, 0, block.indent), expand=False)


def plain_table(spec: TableSpec) -> list[str]:
    """The lines rich gives for the spec as plain text, laid out directly (cells must be printable).

    Runtime complexity: linear in the number of cells.
    """
    from rich.cells import cell_len

    lines = [spec.headers, *spec.rows]
    widths = [max(cell_len(row[i]) for row in lines) for i in range(len(spec.headers))]
    last = len(widths) - 1
    out = []
    pad = " " * spec.indent
    for row in lines:
        cells = []
        for i, cell in enumerate(row):
            if i in spec.right:  # rich drops the trailing spaces of a cell it aligns right
                cell = cell.rstrip(" ")
                cells.append(" " * (widths[i] - cell_len(cell)) + cell)
            else:
                cells.append(cell if i == last else cell + " " * (widths[i] - cell_len(cell)))
        out.append((pad + "  ".join(cells)).rstrip())
    return out


def _fast(spec: TableSpec) -> bool:
    return len(spec.rows) > FAST_ROWS and all(cell.isprintable() for row in spec.rows for cell in row)


def text_console(file: TextIO | None = None, *, width: int = _PLAIN_WIDTH) -> Console:
    """A console that writes plain text to ``file`` (a new buffer when omitted): no colour, no markup, no wrapping."""
    from rich.console import Console

    return Console(
        file=file if file is not None else io.StringIO(),
        width=width,
        color_system=None,
        force_terminal=False,
        force_jupyter=False,
        force_interactive=False,
        highlight=False,
        emoji=False,
        markup=False,
        soft_wrap=False,
    )


def _stripped(text: str) -> str:
    return "".join(line.rstrip() + "\n" for line in text.splitlines())


def render_text(blocks: Sequence[Block]) -> str:
    """The blocks as plain text, one line per row, without trailing spaces, ending with a newline.

    :raises MissingExtraError: rich is not installed.
    """
    require_rich()
    console = text_console()
    out: list[str] = []
    for block in blocks:
        if isinstance(block, TableSpec) and _fast(block):
            out.extend(line + "\n" for line in plain_table(block))
            continue
        console.print(_renderable(block))
        out.append(_stripped(console.file.getvalue()))  # type: ignore[attr-defined]
        console.file.seek(0)
        console.file.truncate()
    return "".join(out)


def print_blocks(console: Console, blocks: Sequence[Block]) -> None:
    """Print the blocks to a rich console (on a terminal: styled and wrapped to its width)."""
    for block in blocks:
        console.print(_renderable(block))


def _terminal(out: TextIO) -> bool:
    try:
        return out.isatty()
    except (AttributeError, ValueError):  # a closed or unusual stream
        return False


def write(out: TextIO, blocks: Sequence[Block]) -> None:
    """Write the blocks to ``out``: drawn by rich on a terminal, else as :func:`render_text` gives them.

    :raises MissingExtraError: rich is not installed.
    """
    if _terminal(out):
        require_rich()
        from rich.console import Console

        print_blocks(Console(file=out, highlight=False, emoji=False, markup=False), blocks)
    else:
        out.write(render_text(blocks))


@contextmanager
def output(out: TextIO) -> Iterator[Console]:
    """A rich console for ``out``: the terminal itself, or one whose plain text reaches ``out`` at the end.

    For a stream that is not a terminal, the text is held until the block
    ends, then written with trailing spaces removed (as :func:`write` does).

    :raises MissingExtraError: rich is not installed.
    """
    require_rich()
    if _terminal(out):
        from rich.console import Console

        yield Console(file=out, highlight=False, emoji=False, markup=False)
        return
    console = text_console()
    yield console
    out.write(_stripped(console.file.getvalue()))  # type: ignore[attr-defined]


def _nothing(done: float, total: float) -> None:
    """Progress nobody sees."""


@contextmanager
def progress(description: str, stream: TextIO) -> Iterator[Callable[[float, float], None]]:
    """A progress bar on ``stream`` while the block runs, when it is a terminal and rich is installed.

    :param description: the label before the bar.
    :param stream: standard error, usually.
    :returns: (as the context value) a function ``report(done, total)`` to
        call as the work advances, in any unit; it costs next to nothing
        between two visible changes, and nothing when no bar is shown. The
        bar is removed when the block ends.
    """
    if not _terminal(stream):
        yield _nothing
        return
    try:
        from rich.console import Console
        from rich.progress import BarColumn, Progress, TaskProgressColumn, TextColumn, TimeElapsedColumn
    except ImportError:
        yield _nothing
        return
    bar = Progress(
        TextColumn("{task.description}"),
        BarColumn(),
        TaskProgressColumn(),
        TimeElapsedColumn(),
        console=Console(file=stream),
        transient=True,
    )
    task = bar.add_task(description, total=None)
    shown = [-1.0]

    def report(done: float, total: float) -> None:
        # Only a change of at least a thousandth of the total reaches rich (which takes a lock).
        if total > 0 and abs(done - shown[0]) * 1000 < total:
            return
        shown[0] = done
        bar.update(task, completed=done, total=total)

    with bar:
        yield report
