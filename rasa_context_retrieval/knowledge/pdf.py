"""PDF documents → parts cited by their page, so every chunk can cite ``manual.pdf#page=12``.

``pypdf`` (BSD) was chosen over ``pdfminer.six`` because it keeps page boundaries, the outline
and a table's rows in order (``documentation/formats.md``). It is an optional dependency (the
``office`` extra): without it a PDF is skipped with a one-line reason naming the extra.
A PDF that cannot be read is skipped with its reason; nothing in it (JavaScript, forms, links) is
executed or followed, only its text layer is read.

Reading is three steps, one module each: the letters of the extracted text
(``knowledge.pdf_glyphs``), each page's blocks (``knowledge.pdf_paragraphs``), and the whole
document's parts by outline entry across page breaks (``knowledge.pdf_document``).
"""

from __future__ import annotations

import io
from typing import Any

from rasa_context_retrieval.errors import ContextRetrievalError
from rasa_context_retrieval.knowledge.pdf_document import OutlineEntry, PdfPart, document_parts
from rasa_context_retrieval.knowledge.pdf_glyphs import readable
from rasa_context_retrieval.knowledge.pdf_paragraphs import page_blocks

PDF_SUFFIX = ".pdf"
MISSING_LIBRARY = (
    "reading PDF needs the 'office' extra: pip install 'rasa-context-retrieval[office]'"
)


class PdfUnreadable(ContextRetrievalError, ValueError):
    """The PDF cannot be indexed; the message is the one-line reason shown in the problems."""


def pdf_parts(raw: bytes) -> tuple[list[PdfPart], dict[str, Any]]:
    """The PDF's parts (``knowledge.pdf_document``: one per outline entry and page, running
    headers and footers left out, text across page breaks joined) and its properties.

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
        pages = [(number, _page_blocks(page)) for number, page in enumerate(reader.pages, 1)]
        outline = _outline(reader)
    except PdfUnreadable:
        raise
    except (PyPdfError, ValueError, KeyError, TypeError, OSError, RecursionError) as error:
        raise PdfUnreadable(f"corrupt or truncated PDF ({type(error).__name__})") from None
    if not any(blocks for _, blocks in pages):
        raise PdfUnreadable("PDF has no text layer (a scan?); OCR is not supported")
    properties = {"title": str(title)} if title and str(title).strip() else {}
    return document_parts(pages, outline), properties


def _page_blocks(page: Any) -> list[str]:
    """The page's blocks (``knowledge.pdf_paragraphs``) from its plain and laid-out text, glyph
    names and ligatures read as letters; a page the layout mode cannot place (rotated or odd
    text matrices) keeps its plain text's lines."""
    plain = readable(page.extract_text() or "")
    try:
        laid_out = readable(page.extract_text(extraction_mode="layout") or "")
    except (ValueError, KeyError, TypeError, ZeroDivisionError, IndexError):
        laid_out = ""
    return page_blocks(laid_out, plain)


def _outline(reader: Any) -> list[OutlineEntry]:
    """The outline's entries with their page and position; a broken outline gives none, not an
    error."""
    entries: list[OutlineEntry] = []

    def walk(items: list[Any], above: tuple[str, ...]) -> None:
        path = above
        for item in items:
            if isinstance(item, list):
                walk(item, path)
                continue
            path = (*above, " ".join(str(item.title).split()))
            page = reader.get_destination_page_number(item)
            if page is not None and page >= 0:
                entries.append(OutlineEntry(page + 1, _top(item), path))

    try:
        walk(reader.outline, ())
    except Exception:  # noqa: BLE001 (an outline is a nicety; the pages are still read)
        return []
    return entries


def _top(destination: Any) -> float | None:
    """The height on its page a destination points at, when it says (``/XYZ``, ``/FitH``)."""
    try:
        top = destination.get("/Top")
        return float(top) if top is not None else None
    except (TypeError, ValueError):
        return None
