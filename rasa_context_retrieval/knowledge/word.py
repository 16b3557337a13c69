"""Word (.docx) documents → Markdown text: heading styles become ``#`` headings, list styles
(or numbered paragraphs) stay ``- `` items, tables become Markdown tables, the core-property
title fills ``title``, and a ``Q:`` paragraph with its ``A:`` paragraph is one entry
(``knowledge.qa_entries``).

``python-docx`` (MIT) reads styles and core properties directly (``documentation/formats.md``);
its XML parser does not resolve entities, so XXE in a document is never followed. A .docx is a
zip: its members' unpacked size is checked against the file's size before anything is parsed,
so a zip bomb is refused, not unpacked (``knowledge.office_zip``). It is an optional dependency
(the ``office`` extra).
"""

from __future__ import annotations

import io
from typing import Any

from rasa_context_retrieval.errors import ContextRetrievalError
from rasa_context_retrieval.knowledge.markdown_table import markdown_table
from rasa_context_retrieval.knowledge.office_zip import office_library
from rasa_context_retrieval.knowledge.qa_entries import entries_joined

DOCX_SUFFIX = ".docx"


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


def _blocks(document: Any) -> Any:
    from docx.table import Table
    from docx.text.paragraph import Paragraph

    for item in document.iter_inner_content():
        if isinstance(item, Table):
            yield _markdown_table(item)
        elif isinstance(item, Paragraph):
            yield _markdown_paragraph(item)


def _markdown_paragraph(paragraph: Any) -> str:
    text = paragraph.text.strip()
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
    return markdown_table([[cell.text for cell in row.cells] for row in table.rows])
