"""PowerPoint (.pptx) decks → one Markdown document per slide, cited as ``deck.pptx#slide=3``.

A slide is the unit a person presents and looks up, so each slide with text is one document:
its title becomes a ``#`` heading (and its ``section``), text frames stay paragraphs, indented
paragraphs stay ``- `` items, tables become Markdown tables, and the deck's core-property title
fills ``title``. Speaker notes are not read: they are often remarks never meant for readers.
``python-pptx`` (MIT, ``office`` extra) parses the XML without resolving entities, and the zip is
checked for its unpacked size first (``knowledge.office_zip``).
"""

from __future__ import annotations

import io
from collections.abc import Iterator
from typing import Any

from rasa_context_retrieval.errors import ContextRetrievalError
from rasa_context_retrieval.knowledge.markdown_table import markdown_table
from rasa_context_retrieval.knowledge.office_zip import office_library

PPTX_SUFFIX = ".pptx"


class SlidesUnreadable(ContextRetrievalError, ValueError):
    """The deck cannot be indexed; the message is the one-line reason."""


def deck_slides(raw: bytes) -> tuple[list[tuple[int, str, str]], dict[str, Any]]:
    """``(slide number from 1, slide title, Markdown text)`` per slide with text, and the deck's
    properties (``title`` when set).

    Raises:
        SlidesUnreadable: the library is missing, or the file is a zip bomb, corrupt or empty.
    """
    pptx = office_library(raw, "pptx", "PowerPoint", SlidesUnreadable)
    try:
        deck = pptx.Presentation(io.BytesIO(raw))
        slides = [
            (number, *_slide_text(slide)) for number, slide in enumerate(deck.slides, start=1)
        ]
        title = deck.core_properties.title
    except Exception as error:  # python-pptx raises KeyError, ValueError, lxml errors, ...
        raise SlidesUnreadable(f"corrupt PowerPoint file ({type(error).__name__})") from None
    kept = [(number, heading, text) for number, heading, text in slides if text.strip()]
    if not kept:
        raise SlidesUnreadable("PowerPoint file has no text")
    return kept, ({"title": title.strip()} if title and title.strip() else {})


def _slide_text(slide: Any) -> tuple[str, str]:
    title_shape = slide.shapes.title
    heading = " ".join(title_shape.text_frame.text.split()) if title_shape is not None else ""
    blocks = [f"# {heading}"] if heading else []
    for shape in slide.shapes:
        if title_shape is not None and shape.shape_id == title_shape.shape_id:
            continue
        blocks.extend(_shape_blocks(shape))
    return heading, "\n\n".join(block for block in blocks if block.strip())


def _shape_blocks(shape: Any) -> Iterator[str]:
    if getattr(shape, "has_table", False) and shape.has_table:
        yield _markdown_table(shape.table)
    elif getattr(shape, "has_text_frame", False) and shape.has_text_frame:
        for paragraph in shape.text_frame.paragraphs:
            text = " ".join(paragraph.text.split())
            if text:
                yield f"- {text}" if paragraph.level > 0 else text
    elif hasattr(shape, "shapes"):  # a group
        for inner in shape.shapes:
            yield from _shape_blocks(inner)


def _markdown_table(table: Any) -> str:
    return markdown_table([[cell.text for cell in row.cells] for row in table.rows])
