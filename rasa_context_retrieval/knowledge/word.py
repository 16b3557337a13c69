"""Word (.docx) documents → Markdown text: heading styles become ``#`` headings, list styles
(or numbered paragraphs) stay ``- `` items, tables become Markdown tables, the core-property
title fills ``title``, and a ``Q:`` paragraph with its ``A:`` paragraph is one entry
(``knowledge.qa_entries``). Text inside content controls (``w:sdt``: the fields of forms and
templates, around paragraphs, table rows or cells, or inline in a sentence) is read where it
stands; python-docx's own iteration (``iter_inner_content``, ``Paragraph.text``,
``Table.rows``, ``_Row.cells``, ``_Cell.text``) steps over them, so the document is walked here.

``python-docx`` (MIT) reads styles and core properties directly (``documentation/formats.md``);
its XML parser does not resolve entities, so XXE in a document is never followed. A .docx is a
zip: its members' unpacked size is checked against the file's size before anything is parsed,
so a zip bomb is refused, not unpacked (``knowledge.office_zip``). It is an optional dependency
(the ``office`` extra).
"""

from __future__ import annotations

import io
from collections.abc import Iterator
from typing import Any

from rasa_context_retrieval.errors import ContextRetrievalError
from rasa_context_retrieval.knowledge.markdown_table import markdown_table
from rasa_context_retrieval.knowledge.office_zip import office_library
from rasa_context_retrieval.knowledge.qa_entries import entries_joined

DOCX_SUFFIX = ".docx"
CONTENTS_GALLERY = "Table of Contents"
"""The building-block gallery of the content control Word inserts a table of contents in
(``w:docPartGallery``; the same in every language of Word)."""


class WordUnreadable(ContextRetrievalError, ValueError):
    """The Word file cannot be indexed; the message is the one-line reason."""


def word_text(raw: bytes) -> tuple[str, dict[str, Any]]:
    """The document as Markdown text, and its properties (``title`` when set).

    Raises:
        WordUnreadable: the library is missing, or the file is a zip bomb, corrupt or empty.
    """
    docx = office_library(raw, "docx", "Word", WordUnreadable)
    try:
        document = docx.Document(io.BytesIO(raw))
        blocks = list(_blocks(document))
        title = document.core_properties.title
    except WordUnreadable:
        raise
    except Exception as error:  # python-docx raises KeyError, ValueError, lxml errors, ...
        raise WordUnreadable(f"corrupt Word file ({type(error).__name__})") from None
    text = "\n\n".join(entries_joined([block for block in blocks if block.strip()]))
    if not text.strip():
        raise WordUnreadable("Word file has no text")
    return text, ({"title": title.strip()} if title and title.strip() else {})


def _blocks(document: Any) -> Iterator[str]:
    from docx.text.paragraph import Paragraph

    for element in _content(document.element.body, "w:p", "w:tbl"):
        if element.tag == _qn("w:tbl"):
            yield _markdown_table(element)
        else:
            yield _markdown_paragraph(Paragraph(element, document))


def _content(container: Any, *tags: str) -> Iterator[Any]:
    """The children of ``container`` with one of ``tags`` (paragraphs and tables of a body,
    rows of a table, cells of a row, runs of a paragraph), in document order, those inside
    content controls included."""
    wanted = {_qn(tag) for tag in tags}
    for child in container.iterchildren():
        if child.tag in wanted:
            yield child
        elif (content := _control_content(child)) is not None:
            yield from _content(content, *tags)


def _inline_text(paragraph: Any) -> str:
    """A paragraph's text: its runs and links (python-docx's ``text`` of each)."""
    return "".join(element.text for element in _content(paragraph, "w:r", "w:hyperlink"))


def _control_content(element: Any) -> Any:
    """What a content control (``w:sdt``) shows, its ``w:sdtContent``; None for any other
    element, for a control still showing its placeholder ("Click or tap here to enter text.",
    a field nobody filled in), and for the control Word puts a table of contents in (titles
    and page numbers that say nothing a user asks about)."""
    if element.tag != _qn("w:sdt"):
        return None
    properties = element.find(_qn("w:sdtPr"))
    if properties is not None:
        if properties.find(_qn("w:showingPlcHdr")) is not None:
            return None
        gallery = properties.find(f"{_qn('w:docPartObj')}/{_qn('w:docPartGallery')}")
        if gallery is not None and gallery.get(_qn("w:val")) == CONTENTS_GALLERY:
            return None
    return element.find(_qn("w:sdtContent"))


def _qn(tag: str) -> str:
    from docx.oxml.ns import qn

    return str(qn(tag))


def _markdown_paragraph(paragraph: Any) -> str:
    text = _inline_text(paragraph._p).strip()
    style = (paragraph.style.name if paragraph.style is not None else "") or ""
    if not text:
        return ""
    if style == "Title":
        return f"# {text}"
    if style.startswith("Heading "):
        level = style.removeprefix("Heading ").strip()
        return f"{'#' * min(int(level), 6) if level.isdigit() else '#'} {text}"
    if style.startswith("List") or _numbered(paragraph):
        return f"- {text}"
    return text


def _numbered(paragraph: Any) -> bool:
    """A list item by its numbering, whatever its style: pandoc, for one, writes list items in
    its ``Compact`` style with the numbering on the paragraph."""
    properties = paragraph._p.pPr
    return properties is not None and properties.numPr is not None


def _markdown_table(table: Any) -> str:
    """The table's rows, rows and cells in content controls (a form's repeating section)
    included. As python-docx's ``_Row.cells`` gives them: a cell spanning columns fills each,
    and a cell merged with the one above repeats its text."""
    rows: list[list[str]] = []
    above: dict[int, str] = {}  # the text at each column of the row before
    for row in _content(table, "w:tr"):
        cells: list[str] = []
        column = row.grid_before
        for cell in _content(row, "w:tc"):
            text = above.get(column, "") if cell.vMerge == "continue" else _cell_text(cell)
            cells.extend([text] * cell.grid_span)
            column += cell.grid_span
        above = {row.grid_before + index: text for index, text in enumerate(cells)}
        rows.append(cells)
    return markdown_table(rows)


def _cell_text(cell: Any) -> str:
    return "\n".join(_inline_text(paragraph) for paragraph in _content(cell, "w:p"))
