"""A table cell holding ``|`` stays one cell of its row, in every format with tables.

Tables of every format become Markdown tables, where ``|`` separates cells: a cell such as
"Monthly | Yearly" is written with its ``|`` escaped, so that its row keeps the table's number
of columns and each value stays under its own header.
"""

from __future__ import annotations

import re
from collections.abc import Callable
from pathlib import Path

import pytest

from rasa_context_retrieval.knowledge.chunking import chunk_documents
from rasa_context_retrieval.knowledge.loader import load_knowledge_base

docx = pytest.importorskip("docx")
fpdf = pytest.importorskip("fpdf")
pptx = pytest.importorskip("pptx")
pytest.importorskip("pypdf")
pytest.importorskip("lxml")
from pptx.util import Inches  # noqa: E402

TABLE = [["Plan", "Billing", "Price"], ["Plus", "Monthly | Yearly", "3 EUR"]]
CELL_BORDER = re.compile(r"(?<!\\)\|")
"""Where a Markdown reader ends a cell: at every ``|`` not escaped with a backslash."""


def word_file(path: Path) -> None:
    document = docx.Document()
    document.add_paragraph("Plans and their billing.")
    table = document.add_table(rows=len(TABLE), cols=len(TABLE[0]))
    for row, cells in enumerate(TABLE):
        for column, text in enumerate(cells):
            table.cell(row, column).text = text
    document.save(str(path.with_suffix(".docx")))


def slide_deck(path: Path) -> None:
    deck = pptx.Presentation()
    slide = deck.slides.add_slide(deck.slide_layouts[5])  # title only
    slide.shapes.title.text = "Plans"
    shape = slide.shapes.add_table(len(TABLE), len(TABLE[0]), Inches(1), Inches(2), Inches(6), 1)
    for row, cells in enumerate(TABLE):
        for column, text in enumerate(cells):
            shape.table.cell(row, column).text = text
    deck.save(str(path.with_suffix(".pptx")))


def web_page(path: Path) -> None:
    header, *rows = TABLE
    html_rows = "".join(
        "<tr>" + "".join(f"<td>{cell}</td>" for cell in row) + "</tr>" for row in rows
    )
    path.with_suffix(".html").write_text(
        "<html><head><title>Plans</title></head><body><main><h1>Plans</h1>"
        "<table><tr>" + "".join(f"<th>{cell}</th>" for cell in header) + "</tr>"
        f"{html_rows}</table></main></body></html>",
        encoding="utf-8",
    )


def pdf_file(path: Path) -> None:
    document = fpdf.FPDF()
    document.set_font("Helvetica", size=11)
    document.add_page()
    with document.table(col_widths=(50, 70, 50)) as table:
        for row in TABLE:
            table.row(row)
    document.output(str(path.with_suffix(".pdf")))


@pytest.mark.parametrize(
    ("write", "suffix"),
    [(word_file, ".docx"), (slide_deck, ".pptx"), (web_page, ".html"), (pdf_file, ".pdf")],
    ids=["word", "slides", "html", "pdf"],
)
def test_a_cell_holding_a_bar_keeps_its_row_in_the_table_columns(
    tmp_path: Path, write: Callable[[Path], None], suffix: str
) -> None:
    write(tmp_path / "plans")
    knowledge = load_knowledge_base(tmp_path, extra_suffixes=(suffix,))
    chunks = chunk_documents(knowledge.documents, 500, 50)

    table_lines = [
        line for chunk in chunks for line in chunk.text.splitlines() if line.startswith("|")
    ]
    rows = [CELL_BORDER.split(line.strip().strip("|")) for line in table_lines]
    assert len(rows) == 3, "header, delimiter and one row"
    assert all(len(cells) == 3 for cells in rows)
    assert [cell.strip() for cell in rows[2]] == ["Plus", "Monthly \\| Yearly", "3 EUR"]
