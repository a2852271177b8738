"""Fixtures of the trace reader tests."""

from __future__ import annotations

from collections.abc import Callable
from pathlib import Path

import pytest

EditCell = Callable[[Path, int, str, str], Path]


@pytest.fixture
def with_cell(tmp_path: Path) -> EditCell:
    """A copy of a CSV file with one cell changed: ``with_cell(path, row, column, value)`` (row 1 is the header)."""

    def edit(source: Path, row: int, column: str, value: str) -> Path:
        lines = source.read_text().splitlines()
        header = lines[0].split(",")
        cells = lines[row - 1].split(",")
        cells[header.index(column)] = value
        lines[row - 1] = ",".join(cells)
        path = tmp_path / source.name
        path.write_text("\n".join(lines) + "\n")
        return path

    return edit
