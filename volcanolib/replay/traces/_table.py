"""Reading trace tables (CSV with a header row), with errors naming the file, row and column.

Rows are numbered from 1, the header being row 1, so that a row number is
the line number an editor shows (for files without quoted line breaks).
Values read as missing when empty or spelt ``nan``, ``NaN`` or ``None``
(what pandas writes for an empty cell).
"""

from __future__ import annotations

import csv
import io
import math
from collections.abc import Iterator, Sequence
from pathlib import Path
from typing import NoReturn

from volcanolib.errors import TraceError
from volcanolib.kube import source_name

__all__ = ["Row", "Table", "header_of"]

_MISSING = frozenset({"", "nan", "none", "null"})


class Row:
    """One data row of a table: typed access to its cells, errors naming the file, row and column."""

    __slots__ = ("_cells", "line", "source")

    def __init__(self, source: str, number: int, cells: dict[str, str]) -> None:
        self.source = source
        #: The 1-based row number (the header is row 1).
        self.line = number
        self._cells = cells

    def fail(self, message: str, column: str | None = None) -> NoReturn:
        """Raise a :class:`TraceError` naming this row and ``column``."""
        raise TraceError(message, source=self.source, row=self.line, column=column)

    def text(self, column: str) -> str:
        """The cell, stripped; ``""`` when missing."""
        value = self._cells.get(column, "").strip()
        return "" if value.lower() in _MISSING else value

    def required_text(self, column: str) -> str:
        """The cell, which must not be missing."""
        value = self.text(column)
        if not value:
            self.fail("missing value", column)
        return value

    def number(self, column: str, *, required: bool = True) -> float | None:
        """A finite number (``12``, ``1.5``, ``1e3``); ``None`` when missing and not ``required``."""
        raw = self.text(column)
        if not raw:
            if required:
                self.fail("missing value", column)
            return None
        try:
            value = float(raw)
        except ValueError:
            self.fail(f"expected a number, got {raw!r}", column)
        if not math.isfinite(value):
            self.fail(f"expected a finite number, got {raw!r}", column)
        return value

    def count(self, column: str, *, maximum: int | None = None) -> int:
        """A whole number, at least 0 (``12`` or ``12.0``, as pandas writes integer columns with gaps)."""
        value = self.number(column)
        assert value is not None
        if value != int(value):
            self.fail(f"expected a whole number, got {self.text(column)!r}", column)
        if value < 0:
            self.fail(f"expected a number at least 0, got {self.text(column)!r}", column)
        if maximum is not None and value > maximum:
            self.fail(f"expected a number at most {maximum}, got {self.text(column)!r}", column)
        return int(value)

    def seconds(self, column: str, *, required: bool = True) -> float | None:
        """A time in seconds, at least 0; ``None`` when missing and not ``required``."""
        value = self.number(column, required=required)
        if value is not None and value < 0:
            self.fail(f"negative time {self.text(column)!r}", column)
        return value


def header_of(text: str) -> list[str]:
    """The column names of the first row of CSV text, stripped; empty when there is none or it is not CSV."""
    try:
        for cells in csv.reader(io.StringIO(text, newline="")):
            return [cell.strip() for cell in cells]
    except csv.Error:
        pass
    return []


class Table:
    """A CSV table with a header row, read once from its file.

    Reading the whole file once lets a pipe (``<(zcat pods.csv.gz)``) be
    given where a file is: its header can be looked at and its rows read
    afterwards.

    :param source: the file's name, for errors.
    :param text: the file's text.
    """

    __slots__ = ("header", "source", "text")

    def __init__(self, source: str, text: str) -> None:
        self.source = source
        self.text = text
        #: The column names of the header row, stripped (empty for an empty file or one that is not CSV).
        self.header = header_of(text)

    @classmethod
    def read(cls, path: str | Path) -> Table:
        """Read the table in ``path`` (UTF-8, a byte order mark skipped).

        :raises TraceError: when the file cannot be read.
        """
        source = source_name(path)
        try:
            with open(path, encoding="utf-8-sig", newline="") as stream:
                text = stream.read()
        except OSError as exc:
            raise TraceError(f"cannot read: {exc.strerror or exc}", source=source) from None
        except UnicodeDecodeError:
            raise TraceError("cannot read: not UTF-8 text", source=source) from None
        return cls(source, text)

    def rows(self, columns: Sequence[str], *, kind: str) -> Iterator[Row]:
        """Yield the data rows, the header holding every one of ``columns``.

        Other columns are allowed and ignored; blank lines are skipped (but counted).

        :param kind: what the table is, for errors (``an openb pod list``).
        :raises TraceError: naming the file, row and column of the first bad row.
        """
        source = self.source
        reader = csv.reader(io.StringIO(self.text, newline=""))
        number = 0
        try:
            header: list[str] | None = None
            for cells in reader:
                number += 1
                if header is None:
                    header = [cell.strip() for cell in cells]
                    missing = [c for c in columns if c not in header]
                    if missing:
                        raise TraceError(
                            f"not {kind}: missing column{'s' if len(missing) > 1 else ''} "
                            f"{', '.join(missing)} (expected {','.join(columns)})",
                            source=source,
                            row=1,
                        )
                    continue
                if not cells or (len(cells) == 1 and not cells[0].strip()):
                    continue
                if len(cells) != len(header):
                    raise TraceError(f"expected {len(header)} fields, got {len(cells)}", source=source, row=number)
                yield Row(source, number, dict(zip(header, cells, strict=True)))
        except csv.Error as exc:
            raise TraceError(f"not valid CSV: {exc}", source=source, row=number + 1) from None
        if header is None:
            raise TraceError(f"not {kind}: the file is empty (expected the header {','.join(columns)})", source=source)
