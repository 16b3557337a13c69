"""A table of cell texts as a Markdown table: what every converted format's tables become.

Word, PowerPoint, HTML and PDF tables all reach the chunker this way, so a table reads the same
whatever format it came from; rows shorter than the widest are padded with empty cells. A cell
is written on one line with its ``|`` escaped (``table_cell``), so that a cell holding ``|`` (a
"Monthly | Yearly" label, a shell command) stays one cell of its row. The chunker reads tables
back (``table_parts``) to split a long table by rows.
"""

from __future__ import annotations

import re
from dataclasses import dataclass

_DELIMITER_ROW = re.compile(r"^\|(\s*:?-{3,}:?\s*\|)+$")
"""The second line of a Markdown table: ``| --- | --- |``."""


def markdown_table(rows: list[list[str]]) -> str:
    """The rows of cell texts (the first is the header) as a Markdown table; nothing for no
    rows. Each cell is written by ``table_cell``."""
    if not rows:
        return ""
    width = max(len(row) for row in rows)
    rows = [[table_cell(cell) for cell in row] + [""] * (width - len(row)) for row in rows]
    lines = ["| " + " | ".join(rows[0]) + " |", "|" + " --- |" * width]
    lines.extend("| " + " | ".join(row) + " |" for row in rows[1:])
    return "\n".join(lines)


def table_cell(text: str) -> str:
    """A cell's text as a Markdown table cell: one line, spaces collapsed, ``|`` escaped (an
    unescaped one would end the cell there and shift the rest of its row by a column)."""
    return " ".join(text.split()).replace("|", "\\|")


@dataclass(frozen=True)
class TableLines:
    """A Markdown table as lines: its head (header row and delimiter row) and its body rows."""

    head: str
    rows: list[str]

    def cells(self) -> list[list[str]]:
        """Every row's cells, the header row's first (an escaped ``\\|`` stays in its cell)."""
        return [_cells(line) for line in [self.head.splitlines()[0], *self.rows]]


def table_parts(block: str) -> TableLines | None:
    """The block as a Markdown table, when it is one: every line a ``|`` row, the second the
    delimiter row."""
    lines = block.strip().splitlines()
    if len(lines) < 2 or not all(line.startswith("|") for line in lines):
        return None
    if not _DELIMITER_ROW.match(lines[1].replace(" ", "")):
        return None
    return TableLines("\n".join(lines[:2]), lines[2:])


def _cells(line: str) -> list[str]:
    inner = line.strip().removeprefix("|").removesuffix("|")
    return [cell.strip() for cell in re.split(r"(?<!\\)\|", inner)]
