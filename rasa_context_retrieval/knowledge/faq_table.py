"""FAQ tables (.csv, .xlsx) → one ``Q:``/``A:`` entry per row, the other columns as attributes.

The chunker turns each entry into exactly one chunk carrying ``metadata["answer"]``, so
extractive answers work as with a Q/A Markdown file. Columns are found by header name, case and
surrounding spaces ignored (``question`` and ``answer`` unless configured otherwise). Cells are
read as plain values: nothing in a cell is evaluated. A CSV formula such as ``=cmd|...`` stays
text; a spreadsheet is opened read-only with ``data_only`` (``openpyxl``, ``office`` extra), so a
formula gives the value the spreadsheet saved, never a computation, and its zip size is checked
first (``knowledge.office_zip``).
"""

from __future__ import annotations

import csv
import datetime as dt
import io
from collections.abc import Iterable, Iterator
from dataclasses import dataclass
from typing import Any

from rasa_context_retrieval.errors import ContextRetrievalError
from rasa_context_retrieval.knowledge.office_zip import office_library

CSV_SUFFIX = ".csv"
XLSX_SUFFIX = ".xlsx"
QUESTION_COLUMN = "question"
ANSWER_COLUMN = "answer"


class TableUnreadable(ContextRetrievalError, ValueError):
    """The table cannot be indexed; the message is the one-line reason."""


@dataclass(frozen=True)
class FaqColumns:
    """The header names of the question and the answer column (case and spaces ignored)."""

    question: str = QUESTION_COLUMN
    answer: str = ANSWER_COLUMN


DEFAULT_FAQ_COLUMNS = FaqColumns()

FaqRow = tuple[str, str, dict[str, Any]]
"""``(where, "Q: ...\\nA: ...", attributes)``: ``where`` is the CSV line or ``sheet:row``."""


def faq_rows(text: str, columns: FaqColumns = DEFAULT_FAQ_COLUMNS) -> Iterator[FaqRow]:
    """The entries of a CSV table, ``where`` being the line number.

    Raises:
        TableUnreadable: the header has no question or no answer column, or the CSV is broken.
    """
    reader = csv.reader(io.StringIO(text))
    try:
        header = next(reader)
    except (StopIteration, csv.Error):
        raise TableUnreadable("empty or unreadable CSV") from None
    try:
        numbered = ((str(reader.line_num), row) for row in reader)
        yield from _entries(header, numbered, columns)
    except csv.Error as error:
        raise TableUnreadable(f"broken CSV at line {reader.line_num}: {error}") from None


def spreadsheet_rows(raw: bytes, columns: FaqColumns = DEFAULT_FAQ_COLUMNS) -> Iterator[FaqRow]:
    """The entries of every worksheet whose header has both columns, ``where`` = ``sheet:row``.

    Raises:
        TableUnreadable: the library is missing, the file is a zip bomb or corrupt, or no
            worksheet has the question and answer columns.
    """
    openpyxl = office_library(raw, "openpyxl", "spreadsheets", TableUnreadable)
    try:
        workbook = openpyxl.load_workbook(io.BytesIO(raw), read_only=True, data_only=True)
        sheets = [(sheet.title, list(sheet.iter_rows(values_only=True))) for sheet in workbook]
        workbook.close()
    except Exception as error:  # openpyxl raises KeyError, ValueError, parser errors, ...
        raise TableUnreadable(f"corrupt spreadsheet ({type(error).__name__})") from None
    read_any, problems = False, []
    for title, rows in sheets:
        header = [_cell_text(cell) for cell in rows[0]] if rows else []
        try:
            numbered = ((f"{title}:{at}", list(row)) for at, row in enumerate(rows[1:], start=2))
            entries = list(_entries(header, numbered, columns))
        except TableUnreadable as unreadable:
            problems.append(f"sheet {title!r}: {unreadable}")
            continue
        read_any = True
        yield from entries
    if not read_any:
        raise TableUnreadable("; ".join(problems) or "empty spreadsheet")


def _entries(
    header: list[str], rows: Iterable[tuple[str, list[Any]]], columns: FaqColumns
) -> Iterator[FaqRow]:
    names = [str(name or "").strip() for name in header]
    folded = [name.casefold() for name in names]
    wanted = (columns.question, columns.answer)
    missing = [name for name in wanted if name.strip().casefold() not in folded]
    if missing:
        raise TableUnreadable(
            f"no {' and no '.join(repr(name) for name in missing)} column in the header "
            f"({', '.join(names) or 'empty'}); not indexed"
        )
    question_at, answer_at = (folded.index(name.strip().casefold()) for name in wanted)
    for where, row in rows:
        cells = list(row) + [None] * (len(names) - len(row))
        question, answer = _cell_text(cells[question_at]), _cell_text(cells[answer_at])
        if not question or not answer:
            continue
        attributes = {
            name: _attribute(cells[at])
            for at, name in enumerate(names)
            if at not in (question_at, answer_at) and name and _cell_text(cells[at])
        }
        yield where, f"Q: {' '.join(question.split())}\nA: {answer}", attributes


def _cell_text(cell: Any) -> str:
    return str(_attribute(cell)).strip() if cell is not None else ""


def _attribute(cell: Any) -> Any:
    """A cell as an attribute: text stripped, whole floats as ints, dates as ISO strings."""
    if isinstance(cell, str):
        return cell.strip()
    if isinstance(cell, float) and cell.is_integer():
        return int(cell)
    if isinstance(cell, dt.date | dt.datetime | dt.time):
        return cell.isoformat()
    return cell
