"""A PDF's pages of blocks → the parts it is indexed as: one per outline entry and page, with
running headers and footers left out and text that a page break cut joined again.

A manual is written as sections and paragraphs and printed on pages; the pages cut both. Read
page by page, a real manual gave chunks that began with the running header
(``MPPT 1210 HUS 2021-05-02``) and ended with the footer (``Libre Solar / Martin Jäger 5``),
cited for a whole page the section of the last heading on it, and split a sentence, a table or
a ``Q:``/``A:`` entry wherever the page ended. Here:

* a line printed at the top (or the bottom) of most pages, page numbers aside, is a running
  header (or footer) and is left out, as is a page number alone;
* a block belongs to the outline entry whose heading precedes it: an entry starts where its
  title is printed on its page (a block of its own, or a block's first line), the entries on
  one page taken in the order of their destinations' heights; an entry whose title is not
  found starts at the top of its page;
* a paragraph that runs on to the next page (the next page starts in lower case and the last
  sentence had not ended), a table that goes on with the same header, a table of contents that
  goes on without its heading (``table_chunks.continues_contents``: the chunker then leaves it
  out whole), and a ``Q:`` whose ``A:`` is on the next page are one block, cited by both pages.
"""

from __future__ import annotations

import re
from collections import Counter
from dataclasses import dataclass

from rasa_context_retrieval.knowledge.markdown_table import table_parts
from rasa_context_retrieval.knowledge.qa_entries import answers
from rasa_context_retrieval.knowledge.sections import SEPARATOR
from rasa_context_retrieval.knowledge.table_chunks import continues_contents

RUNNING_SHARE = 0.5
"""A top or bottom line on at least this share of the pages is a running header or footer."""
RUNNING_MIN_PAGES = 3
"""Fewer pages than this give no evidence of a running line: nothing is left out."""
_NUMBERS = re.compile(r"\d+")
_SECTION_NUMBER = re.compile(r"^\d+(\.\d+)*\.?\s+")
_SENTENCE_END = (".", "!", "?", ":")
_QUOTES = str.maketrans({"\u2018": "'", "\u2019": "'", "\u201c": '"', "\u201d": '"'})
TABLE_ROW = "| "


@dataclass(frozen=True)
class OutlineEntry:
    """An outline (bookmark) entry: where its destination is and the path of titles to it."""

    page: int
    top: float | None
    path: tuple[str, ...]


@dataclass(frozen=True)
class PdfPart:
    """Consecutive blocks of one section on one page; the last may run on to later pages (the
    part then cites them all), and the next part starts after it."""

    pages: tuple[int, ...]
    section: str
    text: str


@dataclass
class _Block:
    """A block with the pages it is printed on and the section it stands under, while text cut
    by page breaks is joined."""

    pages: list[int]
    section: str
    text: str
    first_on_page: bool
    last_on_page: bool


def document_parts(
    pages: list[tuple[int, list[str]]], outline: list[OutlineEntry]
) -> list[PdfPart]:
    """The parts of a PDF from its pages' blocks (``knowledge.pdf_paragraphs``) in order."""
    pages = _without_running_lines(pages)
    blocks = _joined(_in_sections(pages, outline))
    parts: list[PdfPart] = []
    for block in blocks:
        above = parts[-1] if parts else None
        if (
            above is not None
            and above.section == block.section
            and len(above.pages) == 1
            and above.pages[0] == block.pages[0]
        ):
            parts[-1] = PdfPart(tuple(block.pages), block.section, f"{above.text}\n\n{block.text}")
        else:
            parts.append(PdfPart(tuple(block.pages), block.section, block.text))
    return parts


def _without_running_lines(pages: list[tuple[int, list[str]]]) -> list[tuple[int, list[str]]]:
    """The pages without the lines printed at the top or bottom of most of them."""
    printed = [(number, blocks) for number, blocks in pages if _lines(blocks) > 1]
    if len(printed) < RUNNING_MIN_PAGES:
        return pages
    needed = max(2, len(printed) * RUNNING_SHARE)
    tops = Counter(_shape(blocks[0].splitlines()[0]) for _, blocks in printed)
    bottoms = Counter(_shape(blocks[-1].splitlines()[-1]) for _, blocks in printed)
    running_top = {shape for shape, count in tops.items() if count >= needed}
    running_bottom = {shape for shape, count in bottoms.items() if count >= needed}
    running_top -= {shape for shape in running_top if shape.startswith(TABLE_ROW)}  # a header
    running_bottom -= {shape for shape in running_bottom if shape.startswith(TABLE_ROW)}
    return [
        (number, _trimmed(blocks, running_top, running_bottom) if _lines(blocks) > 1 else blocks)
        for number, blocks in pages
    ]


def _lines(blocks: list[str]) -> int:
    return sum(len(block.splitlines()) for block in blocks)


def _shape(line: str) -> str:
    """A line with its numbers (page numbers, dates) made alike: ``Page # of #``."""
    return _NUMBERS.sub("#", " ".join(line.split())).casefold()


def _trimmed(blocks: list[str], top: set[str], bottom: set[str]) -> list[str]:
    blocks = list(blocks)
    first = blocks[0].splitlines()
    if _shape(first[0]) in top:
        blocks[0] = "\n".join(first[1:])
    if blocks[-1]:
        last = blocks[-1].splitlines()
        if _shape(last[-1]) in bottom:
            blocks[-1] = "\n".join(last[:-1])
    return [block for block in blocks if block.strip()]


def _in_sections(pages: list[tuple[int, list[str]]], outline: list[OutlineEntry]) -> list[_Block]:
    """Every block with the outline path it stands under."""
    path = ""
    result: list[_Block] = []
    for number, page in pages:
        entries = sorted(
            (entry for entry in outline if entry.page == number),
            key=lambda entry: -entry.top if entry.top is not None else float("-inf"),
        )
        titles = [_title_key(entry.path[-1]) for entry in entries]
        headings = {key for block in page for key in _heading_keys(block)}
        waiting = 0
        while waiting < len(entries) and titles[waiting] not in headings:
            path, waiting = SEPARATOR.join(entries[waiting].path), waiting + 1
        for index, text in enumerate(page):
            key = next((key for key in _heading_keys(text) if key in titles[waiting:]), None)
            if key is not None:
                found = titles.index(key, waiting)
                path, waiting = SEPARATOR.join(entries[found].path), found + 1
            result.append(_Block([number], path, text, index == 0, index == len(page) - 1))
        for entry in entries[waiting:]:
            path = SEPARATOR.join(entry.path)
    return result


def _heading_keys(block: str) -> tuple[str, ...]:
    """What in a block can be a printed heading: the block, or its first line (a heading set
    right above its text, with no gap). A heading wrapped at the margin is one line again
    (``knowledge.pdf_paragraphs``)."""
    first = block.splitlines()[0]
    return (_title_key(first),) if first == block else (_title_key(block), _title_key(first))


def _title_key(text: str) -> str:
    """A heading or outline title as compared: no section number, typographic quotes as typed
    (an outline says ``OpenGov's`` where the page prints ``OpenGov’s``), case ignored."""
    text = " ".join(text.translate(_QUOTES).split())
    return _SECTION_NUMBER.sub("", text).casefold()


def _joined(blocks: list[_Block]) -> list[_Block]:
    """The blocks, with a ``Q:`` and its ``A:`` one entry, and text a page break cut whole."""
    joined: list[_Block] = []
    for block in blocks:
        above = joined[-1] if joined else None
        if above is not None and answers(above.text, block.text):
            above.text = f"{above.text}\n{block.text}"
        elif above is not None and above.last_on_page and block.first_on_page:
            lead = [joined[-2].text] if len(joined) > 1 else []
            text = _across_page_break(above.text, block.text, lead)
            if text is None:
                joined.append(block)
                continue
            above.text = text
        else:
            joined.append(block)
            continue
        if block.pages[-1] not in above.pages:
            above.pages.append(block.pages[-1])
        above.last_on_page = block.last_on_page
    return joined


def _across_page_break(above: str, below: str, lead: list[str]) -> str | None:
    """``above`` (the end of a page, under ``lead``) and ``below`` (the top of the next) as
    one block, when the page break cut it; ``None`` when ``below`` starts something new."""
    if above.startswith(TABLE_ROW) or below.startswith(TABLE_ROW):
        above_rows, below_rows = above.splitlines(), below.splitlines()
        if above_rows[0] == below_rows[0]:  # the header printed again on the next page
            return "\n".join([*above_rows, *below_rows[2:]])
        above_table, below_table = table_parts(above), table_parts(below)
        if (
            above_table is not None
            and below_table is not None
            and continues_contents(lead, above_table, below_table)
        ):  # its first row is an entry, not a header
            return "\n".join([*above_rows, below_rows[0], *below_rows[2:]])
        return None
    if above.rstrip().endswith(_SENTENCE_END) or not below[:1].islower():
        return None
    if re.search(r"[a-z]-$", above):
        return f"{above[:-1]}{below}"
    return f"{above} {below}"
