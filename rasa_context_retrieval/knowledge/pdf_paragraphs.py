"""A PDF page's laid-out lines → its blocks: paragraphs with wrapped lines rejoined, list items,
and tables as Markdown tables.

A PDF has no paragraphs, only lines at positions. ``pypdf``'s plain text gives one line per
printed line and no gap between paragraphs, so a page of ``Q:``/``A:`` entries read as one
entry whose answer ran on through every later question, and every answer carried the line
breaks of the page's width. Its layout mode keeps the vertical gaps as blank lines and each
line's horizontal extent; from those this module rebuilds what the author wrote:

* a blank line (a vertical gap) ends a paragraph, as in Markdown;
* a line that the next line's first word would have pushed past the right margin was wrapped
  by the layout, so the next line continues it, unless that line starts an item of its own
  (``Q:``, ``A:``, a bullet, a number, a heading mark);
* a bullet (``•``) item becomes a Markdown ``- `` item;
* lines with columns (three spaces or more between cells) are a table: it becomes a Markdown
  table whose first row is the header, as Word and HTML tables do (``knowledge.markdown_table``);
  a line of one cell at the table's left edge is a row of its own (a group heading such as
  "Battery"), one further right continues the cell above it (a wrapped cell).

Joining ``Q:`` and ``A:`` paragraphs, and text that runs on to the next page, is the whole
document's business (``knowledge.pdf_document``).
"""

from __future__ import annotations

import re
from dataclasses import dataclass
from difflib import SequenceMatcher

from rasa_context_retrieval.knowledge.markdown_table import markdown_table

FILLED_LINE = 0.9
"""A line that, with the next line's first word, fills this share of the page's widest line of
text (not a table row or a header with a date on the right) was wrapped by the layout: that word
did not fit (widths in the layout's character columns)."""
COLUMN_GAP = re.compile(r"\S {3,}\S")
"""Three spaces or more inside a laid-out line: columns (a table row), never wrapped text."""
CELL_SEPARATOR = re.compile(r" {3,}")
STARTS_ITEM = re.compile(r"^(Q:|A:|[-•*▪◦‣–]\s|\d{1,3}[.)]\s|#)")
"""A line that begins an item of its own, whatever the line above it looks like."""
LEADER = re.compile(r"(?: {0,3}\.){5,}")
"""Dot leaders between a title and its page number (a table of contents): left out, so that
the entry reads ``3.1 MPPT 4``; the columns stay where they were."""
BULLETS = re.compile(r"^[•▪◦‣–]\s+")
"""Bullet characters a typesetter draws; Markdown writes ``- ``."""
GROUP_ROW_LETTERS = 40
"""A table line of one cell at the table's left edge and at most this long is a row of its own
(a group heading); a longer one is text after the table."""
TABLE_END_GAPS = 2
"""Blank lines in a row that end a table: a taller row leaves one, the text after it more."""


@dataclass(frozen=True)
class Line:
    """A printed line: its words (from the plain text) and where it stands (the laid-out line)."""

    words: str
    laid_out: str

    @property
    def indent(self) -> int:
        return len(self.laid_out) - len(self.laid_out.lstrip())


def page_blocks(layout_text: str, plain_text: str) -> list[str]:
    """The page's blocks in reading order.

    The words come from the plain text, the geometry (gaps, line lengths, columns) from the
    laid-out text: the layout mode places words by position and drops the spaces a typesetter
    such as TeX draws as offsets (``OpenGovdoesnotsell``), the plain mode keeps them. A page
    without laid-out text (the layout mode failed on it) gives the plain text's lines.
    """
    if not layout_text.strip():
        return [" ".join(line.split()) for line in plain_text.splitlines() if line.strip()]
    lines = _paired(layout_text, plain_text)
    text_lines = [line for line in lines if line and not COLUMN_GAP.search(line.laid_out.strip())]
    margin = max((len(line.laid_out) for line in text_lines), default=0) * FILLED_LINE
    blocks: list[list[str]] = [[]]
    above: Line | None = None
    position = 0
    while position < len(lines):
        line = lines[position]
        if line is None:
            if blocks[-1]:
                blocks.append([])
            above, position = None, position + 1
            continue
        if COLUMN_GAP.search(line.laid_out.strip()):
            table, position = _table(lines, position)
            blocks.extend([[table], []])
            above = None
            continue
        words = BULLETS.sub("- ", line.words)
        if above is not None and _continues(above, line.words, margin):
            blocks[-1][-1] = _joined(blocks[-1][-1], words)
        else:
            blocks[-1].append(words)
        above, position = line, position + 1
    return ["\n".join(block) for block in blocks if block]


def _paired(layout_text: str, plain_text: str) -> list[Line | None]:
    """Each laid-out line with the plain text's words for it (``None`` for a gap).

    Where the two modes break lines differently (the layout mode puts a cell beside a two-line
    cell on one line, the plain mode on its own), the laid-out line keeps its own words.
    """
    laid_out = [line.rstrip() for line in layout_text.splitlines()]
    printed = [" ".join(line.split()) for line in plain_text.splitlines() if line.strip()]
    texts = [index for index, line in enumerate(laid_out) if line.strip()]
    words = {index: " ".join(laid_out[index].split()) for index in texts}
    matcher = SequenceMatcher(
        None, [_letters(laid_out[i]) for i in texts], [_letters(p) for p in printed], autojunk=False
    )
    for tag, start, end, plain_start, _ in matcher.get_opcodes():
        if tag == "equal":
            for offset, index in enumerate(texts[start:end]):
                words[index] = printed[plain_start + offset]
    return [
        Line(_without_leaders(words[i]), LEADER.sub(_blank, line)) if i in words else None
        for i, line in enumerate(laid_out)
    ]


def _without_leaders(words: str) -> str:
    return " ".join(LEADER.sub(" ", words).split())


def _blank(match: re.Match[str]) -> str:
    return " " * len(match[0])


def _letters(line: str) -> str:
    return "".join(line.split())


def _continues(above: Line, words: str, margin: float) -> bool:
    """Whether ``words`` (a line's text) is the wrapped rest of the line ``above``."""
    if STARTS_ITEM.match(words) or COLUMN_GAP.search(above.laid_out.strip()):
        return False
    width = max(len(above.laid_out), above.indent + len(above.words))
    return width + 1 + len(words.split()[0]) >= margin


def _joined(text: str, rest: str) -> str:
    """A wrapped line joined to the next one; a word TeX hyphenated at the margin is whole
    again (``knowl-`` + ``edge.``)."""
    if re.search(r"[a-z]-$", text) and rest[:1].islower():
        return f"{text[:-1]}{rest}"
    return f"{text} {rest}"


def _table(lines: list[Line | None], start: int) -> tuple[str, int]:
    """The Markdown table that starts at ``lines[start]`` and the index after its last line; a
    line with columns but no second row like it (a running header with a date on the right) is
    one line of text, its cells one space apart."""
    first = lines[start]
    assert first is not None
    left = first.indent
    columns = [match.start() for match in re.finditer(r"(?:^|(?<=   ))\S", first.laid_out)]
    rows: list[list[str]] = []
    position, end, gaps, multi_cell, ended_by_text = start, start + 1, 0, 0, False
    while position < len(lines) and gaps < TABLE_END_GAPS:
        line = lines[position]
        position += 1
        if line is None:
            gaps += 1
            continue
        gaps = 0
        cells = _cells(line)
        if len(cells) > 1:
            rows.append(cells)
            multi_cell = len(rows)
        elif line.indent > left + 2 and rows:
            column = min(range(len(columns)), key=lambda c: abs(columns[c] - line.indent))
            row = rows[-1] + [""] * (column + 1 - len(rows[-1]))
            row[column] = f"{row[column]} {cells[0]}".strip()
            rows[-1] = row
        elif line.indent == left and cells[0][:1].islower() and rows:
            rows[-1][0] = f"{rows[-1][0]} {cells[0]}"
        elif line.indent == left and len(line.words) <= GROUP_ROW_LETTERS:
            rows.append(cells)
        else:
            ended_by_text = True
            position -= 1
            break
        end = position
    if multi_cell < 2:
        return " ".join(rows[0]), start + 1
    if ended_by_text:  # the short lines before that text were text too, not group rows
        rows = rows[:multi_cell]
        end = _after_row(lines, start, multi_cell)
    return markdown_table(rows), end


def _after_row(lines: list[Line | None], start: int, rows: int) -> int:
    """The index after the ``rows``-th printed line from ``start`` (continuation lines aside)."""
    seen, position = 0, start
    while position < len(lines) and seen < rows:
        line = lines[position]
        position += 1
        if line is not None and COLUMN_GAP.search(line.laid_out.strip()):
            seen += 1
    return position


def _cells(line: Line) -> list[str]:
    """The line's cells (split where the layout has a column gap), in the plain text's words."""
    laid_out = CELL_SEPARATOR.split(line.laid_out.strip())
    words = iter(line.words.split())
    cells: list[str] = []
    for cell in laid_out:
        wanted, taken = len(_letters(cell)), []
        while wanted > 0:
            word = next(words, None)
            if word is None:
                break
            taken.append(word)
            wanted -= len(word)
        cells.append(" ".join(taken))
    rest = list(words)
    if rest:
        cells[-1] = " ".join([cells[-1], *rest]).strip()
    return cells
