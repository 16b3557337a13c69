"""FAQ tables (.csv) → one ``Q:``/``A:`` entry per row, the other columns as its attributes.

The chunker turns each entry into exactly one chunk carrying ``metadata["answer"]``, so
extractive answers work as with a Q/A Markdown file. Columns are found by header name, case and
surrounding spaces ignored (``question`` and ``answer``). Cells are read as plain text: nothing
in a cell is evaluated (a spreadsheet formula such as ``=cmd|...`` stays text).
"""

from __future__ import annotations

import csv
import io
from collections.abc import Iterator
from typing import Any

from rasa_context_retrieval.errors import ContextRetrievalError

CSV_SUFFIX = ".csv"
QUESTION_COLUMN = "question"
ANSWER_COLUMN = "answer"


class TableUnreadable(ContextRetrievalError, ValueError):
    """The table cannot be indexed; the message is the one-line reason."""


def faq_rows(text: str) -> Iterator[tuple[int, str, dict[str, Any]]]:
    """``(line, "Q: ...\\nA: ...", attributes)`` for every row with a question and an answer.

    Raises:
        TableUnreadable: the header has no question or no answer column.
    """
    reader = csv.reader(io.StringIO(text))
    try:
        header = next(reader)
    except (StopIteration, csv.Error):
        raise TableUnreadable("empty or unreadable CSV") from None
    names = [name.strip() for name in header]
    folded = [name.casefold() for name in names]
    missing = [c for c in (QUESTION_COLUMN, ANSWER_COLUMN) if c not in folded]
    if missing:
        raise TableUnreadable(
            f"no {' and no '.join(repr(c) for c in missing)} column in the header "
            f"({', '.join(names) or 'empty'}); not indexed"
        )
    question_at, answer_at = folded.index(QUESTION_COLUMN), folded.index(ANSWER_COLUMN)
    try:
        for row in reader:
            cells = [cell.strip() for cell in row] + [""] * (len(names) - len(row))
            question, answer = cells[question_at], cells[answer_at]
            if not question or not answer:
                continue
            attributes = {
                name: cells[at]
                for at, name in enumerate(names)
                if at not in (question_at, answer_at) and name and cells[at]
            }
            yield reader.line_num, f"Q: {' '.join(question.split())}\nA: {answer}", attributes
    except csv.Error as error:
        raise TableUnreadable(f"broken CSV at line {reader.line_num}: {error}") from None
