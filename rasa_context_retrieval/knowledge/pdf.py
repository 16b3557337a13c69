"""PDF documents → one document per page, so every chunk can cite ``manual.pdf#page=12``.

``pypdf`` (BSD) was chosen over ``pdfminer.six`` because it keeps page boundaries, the outline
and a table's rows in order (``documentation/formats.md``). It is an optional dependency (the
``office`` extra): without it a PDF is skipped with a one-line reason naming the extra.
A PDF that cannot be read is skipped with its reason; nothing in it (JavaScript, forms, links) is
executed or followed, only its text layer is read.
"""

from __future__ import annotations

import io
from collections.abc import Iterator
from typing import Any

from rasa_context_retrieval.errors import ContextRetrievalError
from rasa_context_retrieval.knowledge.pdf_paragraphs import paragraphs
from rasa_context_retrieval.knowledge.sections import SECTION, SEPARATOR

PDF_SUFFIX = ".pdf"
MISSING_LIBRARY = (
    "reading PDF needs the 'office' extra: pip install 'rasa-context-retrieval[office]'"
)


class PdfUnreadable(ContextRetrievalError, ValueError):
    """The PDF cannot be indexed; the message is the one-line reason shown in the problems."""


def pdf_pages(raw: bytes) -> Iterator[tuple[int, str, dict[str, Any]]]:
    """``(page number from 1, page text, document properties)`` for every page with text.

    Raises:
        PdfUnreadable: the library is missing, or the file is encrypted, corrupt, or has no
            text layer at all (a scan: OCR is not supported).
    """
    try:
        from pypdf import PdfReader
        from pypdf.errors import PyPdfError
    except ImportError:
        raise PdfUnreadable(MISSING_LIBRARY) from None
    try:
        reader = PdfReader(io.BytesIO(raw), strict=False)
        if reader.is_encrypted:
            raise PdfUnreadable("encrypted PDF; save an unencrypted copy to index it")
        title = reader.metadata.title if reader.metadata is not None else None
        texts = [_page_text(page) for page in reader.pages]
        sections = _page_sections(reader, len(texts))
    except PdfUnreadable:
        raise
    except (PyPdfError, ValueError, KeyError, TypeError, OSError, RecursionError) as error:
        raise PdfUnreadable(f"corrupt or truncated PDF ({type(error).__name__})") from None
    if not any(text.strip() for text in texts):
        raise PdfUnreadable("PDF has no text layer (a scan?); OCR is not supported")
    properties = {"title": str(title)} if title and str(title).strip() else {}
    for number, text in enumerate(texts, start=1):
        if text.strip():
            where = sections.get(number)
            yield number, text, ({**properties, SECTION: where} if where else properties)


def _page_text(page: Any) -> str:
    """The page's paragraphs (``knowledge.pdf_paragraphs``) from its plain and laid-out text; a
    page the layout mode cannot place (rotated or odd text matrices) keeps its plain text."""
    plain = page.extract_text() or ""
    try:
        laid_out = page.extract_text(extraction_mode="layout")
    except (ValueError, KeyError, TypeError, ZeroDivisionError, IndexError):
        return plain
    return paragraphs(laid_out or "", plain)


def _page_sections(reader: Any, pages: int) -> dict[int, str]:
    """Page number → the outline's path at the top of that page (the entries that start on or
    before it), for a PDF with an outline; a broken outline gives no sections, not an error."""
    starts: list[tuple[int, list[str]]] = []

    def walk(items: list[Any], above: list[str]) -> None:
        path = above
        for item in items:
            if isinstance(item, list):
                walk(item, path)
                continue
            path = [*above, " ".join(str(item.title).split())]
            page = reader.get_destination_page_number(item)
            if page is not None and page >= 0:
                starts.append((page + 1, path))

    try:
        walk(reader.outline, [])
    except Exception:  # noqa: BLE001 (an outline is a nicety; the pages are still read)
        return {}
    sections: dict[int, str] = {}
    current: list[str] = []
    ordered = sorted(enumerate(starts), key=lambda item: (item[1][0], item[0]))
    position = 0
    for number in range(1, pages + 1):
        while position < len(ordered) and ordered[position][1][0] <= number:
            current = ordered[position][1][1]
            position += 1
        if current:
            sections[number] = SEPARATOR.join(current)
    return sections
