"""Tables and their captions in chunks: a long table is split by rows, each piece under the
table's header row; a heading or caption stays with what it introduces; a table of contents is
left out.

Read from real manuals, a size-only splitter gave three defects: the second and later chunks of
a specifications table were rows without column names (``| Maximum current | 2.0 A |``: two
amperes of what?), the heading and caption above the table (``5 Specifications`` / ``Table 1:
Overview of specifications``) became a chunk of their own, which matches a question well and
answers nothing, and the contents page was indexed as a table of section titles and page
numbers. LangChain's splitters cut by size and know no table; none of the project's libraries
chunks Markdown tables, so this module does it, on the Markdown tables every format becomes
(``knowledge.markdown_table``).
"""

from __future__ import annotations

import re
from collections.abc import Callable

from rasa_context_retrieval.knowledge.markdown_table import TableLines

BLOCK_SEPARATOR = "\n\n"
LEAD_LETTERS = 100
"""A heading or caption is one line of at most this many characters."""
LEAD_BLOCKS = 2
"""At most this many such lines (a heading, then a caption) introduce the block after them."""
_SENTENCE_END = re.compile(r"[.!?;,]$")
CONTENTS_TITLES = frozenset(
    {
        "contents",
        "table of contents",
        "inhalt",
        "inhaltsverzeichnis",
        "sommaire",
        "table des matières",
        "índice",
        "indice",
        "contenido",
        "contenidos",
        "inhoud",
        "inhoudsopgave",
    }
)
"""Headings a table of contents is printed under, compared without case or ``#`` marks."""
_PAGE_NUMBER = re.compile(r"^\d{1,4}$")
_HEADING_MARK = re.compile(r"^#{1,6}\s+")
_LIST_ITEM = re.compile(r"^([-*+]\s|\d{1,3}[.)]\s)")


def is_lead(block: str) -> bool:
    """Whether a block is a heading or a caption (``Table 3: Fees``, ``Opening hours``): one
    short line that does not end a sentence. It introduces the block after it."""
    text = block.strip()
    if "\n" in text or not text or len(text) > LEAD_LETTERS or text.startswith("|"):
        return False
    if _LIST_ITEM.match(text):  # an item of a list introduces nothing
        return False
    return text.startswith("#") or not _SENTENCE_END.search(text)


def is_contents(lead: list[str], table: TableLines) -> bool:
    """Whether a table is a table of contents: printed under a ``Contents`` heading, with a
    page number ending every row (the header row too: a contents page has no header) in
    page order."""
    if not lead or not is_contents_title(lead[-1]):
        return False
    return _page_numbers(table) is not None


def continues_contents(lead: list[str], contents: TableLines, table: TableLines) -> bool:
    """Whether ``table``, printed at the top of the page after the table of contents
    ``contents`` (under ``lead``), is that table of contents going on without its heading: as
    many columns, and a page number ending every row, its first too (a table of its own has a
    header row of words), going on in page order from where ``contents`` stopped."""
    if not is_contents(lead, contents) or len(table.cells()[0]) != len(contents.cells()[0]):
        return False
    before, after = _page_numbers(contents), _page_numbers(table)
    return before is not None and after is not None and before[-1] <= after[0]


def _page_numbers(table: TableLines) -> list[int] | None:
    """The number ending each row, when every row ends in a page number in page order."""
    pages = [next((cell for cell in reversed(row) if cell), "") for row in table.cells()]
    if not all(_PAGE_NUMBER.match(page) for page in pages):
        return None
    numbers = [int(page) for page in pages]
    return numbers if numbers == sorted(numbers) else None


def is_contents_title(block: str) -> bool:
    """Whether a block is a heading a table of contents is printed under (``Contents``,
    ``# Table of contents``, ``Inhalt:``)."""
    return _title(block) in CONTENTS_TITLES


def _title(block: str) -> str:
    return " ".join(_HEADING_MARK.sub("", block.strip()).split()).casefold().rstrip(":")


def table_pieces(
    lead: list[str],
    table: TableLines,
    chunk_size: int,
    split_text: Callable[[str], list[str]],
) -> list[str]:
    """The table as chunks of at most ``chunk_size`` characters: whole rows under the table's
    header row in each, the ``lead`` (heading, caption) in the first. A row too long for one
    chunk with the header is cut by ``split_text`` (the prose splitter)."""
    pieces: list[str] = []
    opening = BLOCK_SEPARATOR.join([*lead, table.head])
    rows: list[str] = []

    def size(head: str, lines: list[str]) -> int:
        return len(head) + sum(len(line) + 1 for line in lines)

    for row in table.rows:
        head = opening if not pieces else table.head
        if size(head, [*rows, row]) <= chunk_size:
            rows.append(row)
            continue
        if rows:
            pieces.append("\n".join([head, *rows]))
            rows = []
        head = opening if not pieces else table.head
        if size(head, [row]) <= chunk_size:
            rows = [row]
        else:
            pieces.extend(split_text(f"{head}\n{row}"))
    if rows or not pieces:
        pieces.append("\n".join([opening if not pieces else table.head, *rows]))
    return pieces
