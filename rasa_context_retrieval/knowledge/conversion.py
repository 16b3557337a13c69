"""Converted formats (PDF, Word, HTML, spreadsheets) → the parts a file is indexed as.

Each converter turns a file's bytes into text with the structure it has (pages, headings,
sections, rows) and raises its own one-line reason when it cannot; this module gives them one
shape for the loader: a part's ``where`` is appended to the file's name to cite it
(``#page=12``, ``#pausing-sync``, ``:7``, ``:FAQ:7``), so a person can open the exact place.
"""

from __future__ import annotations

from collections.abc import Iterable
from dataclasses import dataclass, field
from typing import Any

from rasa_context_retrieval.errors import ContextRetrievalError
from rasa_context_retrieval.knowledge.faq_table import (
    CSV_SUFFIX,
    XLSX_SUFFIX,
    FaqColumns,
    TableUnreadable,
    spreadsheet_rows,
)
from rasa_context_retrieval.knowledge.pdf import PDF_SUFFIX, PdfUnreadable, pdf_parts
from rasa_context_retrieval.knowledge.sections import SECTION, SEPARATOR, split_at_headings
from rasa_context_retrieval.knowledge.slides import PPTX_SUFFIX, SlidesUnreadable, deck_slides
from rasa_context_retrieval.knowledge.table_chunks import BLOCK_SEPARATOR, is_lead
from rasa_context_retrieval.knowledge.web_page import HTML_SUFFIXES, PageUnreadable, page_sections
from rasa_context_retrieval.knowledge.word import DOCX_SUFFIX, WordUnreadable, word_text

PAGE = "page"
"""Set on chunks from a PDF page: the page number its citation ends with; a list of pages for
text that runs across a page break (``[4, 5]``, cited by its first page)."""
ANCHOR = "anchor"
"""Set on chunks from an HTML section with an id: the fragment its citation ends with."""
SLIDE = "slide"
"""Set on chunks from a PowerPoint slide: the slide number its citation ends with."""
PLACE_KEYS = (PAGE, ANCHOR, SLIDE)
"""Attributes that say where in its file a part is: no sidecar or folder rule replaces them."""
CONVERTED_SUFFIXES = (PDF_SUFFIX, DOCX_SUFFIX, *HTML_SUFFIXES, XLSX_SUFFIX, PPTX_SUFFIX)
FORMAT_SUFFIXES = {
    "pdf": (PDF_SUFFIX,),
    "docx": (DOCX_SUFFIX,),
    "html": HTML_SUFFIXES,
    "csv": (CSV_SUFFIX,),
    "xlsx": (XLSX_SUFFIX,),
    "pptx": (PPTX_SUFFIX,),
}
"""The file suffixes each ``document_formats`` name switches on."""


def format_suffixes(formats: Iterable[str]) -> tuple[str, ...]:
    """The file suffixes the ``document_formats`` names switch on, in order."""
    return tuple(suffix for name in formats for suffix in FORMAT_SUFFIXES[name])


class ConversionRefused(ContextRetrievalError, ValueError):
    """The file cannot be indexed; the message is the one-line reason."""


@dataclass(frozen=True)
class ConvertedPart:
    where: str
    """Appended to the file's name in ``source``: ``#page=3``, ``#section-id``, ``:FAQ:7``."""
    text: str
    metadata: dict[str, Any] = field(default_factory=dict)
    row: bool = False
    """A table row: its attributes come from the row's cells, checked like front matter."""


def converted_parts(suffix: str, raw: bytes, columns: FaqColumns) -> list[ConvertedPart]:
    """The parts of one converted file, in order.

    Raises:
        ConversionRefused: the converter's reason (encrypted, no text layer, zip bomb, ...).
    """
    try:
        parts = _parts(suffix, raw, columns)
    except (
        PdfUnreadable,
        WordUnreadable,
        PageUnreadable,
        TableUnreadable,
        SlidesUnreadable,
    ) as unreadable:
        raise ConversionRefused(str(unreadable)) from None
    return _headings_joined(parts) if suffix in HEADED_SUFFIXES else parts


HEADED_SUFFIXES = (PDF_SUFFIX, DOCX_SUFFIX, *HTML_SUFFIXES)
"""Formats whose parts are sections under headings (slides and table rows are not)."""


def _headings_joined(parts: list[ConvertedPart]) -> list[ConvertedPart]:
    """The parts, with a part that is only its heading (``Information Gathered``, followed at
    once by its first subsection) joined to the start of that subsection: alone, it would be a
    chunk that matches a question well and answers nothing. The joined part keeps the
    subsection's place and section."""
    joined: list[ConvertedPart] = []
    for part in parts:
        above = joined[-1] if joined else None
        if above is not None and _introduces(above, part):
            text = f"{above.text}{BLOCK_SEPARATOR}{part.text}"
            joined[-1] = ConvertedPart(part.where, text, part.metadata, part.row)
        else:
            joined.append(part)
    return joined


def _introduces(heading: ConvertedPart, part: ConvertedPart) -> bool:
    """Whether ``heading`` is only the heading of a section that ``part`` is a subsection of."""
    section = heading.metadata.get(SECTION)
    return (
        bool(section)
        and str(part.metadata.get(SECTION, "")).startswith(f"{section}{SEPARATOR}")
        and all(is_lead(block) for block in heading.text.split(BLOCK_SEPARATOR))
    )


def _parts(suffix: str, raw: bytes, columns: FaqColumns) -> list[ConvertedPart]:
    if suffix == PDF_SUFFIX:
        parts, properties = pdf_parts(raw)
        return [
            ConvertedPart(
                f"#page={part.pages[0]}",
                part.text,
                _with_section({**properties, PAGE: _page_attribute(part.pages)}, part.section),
            )
            for part in parts
        ]
    if suffix == DOCX_SUFFIX:
        text, properties = word_text(raw)
        return [
            ConvertedPart("", part, _with_section(properties, where))
            for where, part in split_at_headings(text)
        ]
    if suffix in HTML_SUFFIXES:
        sections, properties = page_sections(raw)
        return [
            ConvertedPart(
                f"#{section.anchor}" if section.anchor else "",
                section.text,
                _with_section(
                    {**properties, ANCHOR: section.anchor} if section.anchor else properties,
                    section.path,
                ),
            )
            for section in sections
        ]
    if suffix == XLSX_SUFFIX:
        return [
            ConvertedPart(f":{where}", entry, attributes, row=True)
            for where, entry, attributes in spreadsheet_rows(raw, columns)
        ]
    if suffix == PPTX_SUFFIX:
        slides, properties = deck_slides(raw)
        return [
            ConvertedPart(
                f"#slide={number}", text, _with_section({**properties, SLIDE: number}, heading)
            )
            for number, heading, text in slides
        ]
    raise ConversionRefused(f"no converter for {suffix!r} files")


def _with_section(properties: dict[str, Any], path: str) -> dict[str, Any]:
    return {**properties, SECTION: path} if path else dict(properties)


def _page_attribute(pages: tuple[int, ...]) -> int | list[int]:
    return pages[0] if len(pages) == 1 else list(pages)
