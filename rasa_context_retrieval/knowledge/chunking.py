"""Documents → chunks: Q/A entries stay whole and carry their answer; prose is split by size.

EnterpriseSearchPolicy's extractive mode (``use_generative_llm: false``) answers with
``results[0].metadata["answer"]``, so a Q/A entry ("Q: ...\\nA: ...", entries separated by a
blank line, the format Rasa's own FAQ parser reads) must become exactly one chunk whose metadata
holds the answer. A prose chunk's answer is its own piece of the document: without one, a prose
chunk ranked first would make the policy reply with its internal-error pattern. Every chunk keeps
its document's metadata unchanged, plus ``source`` and ``answer``.

A chunk's text is headed by the document's title, and a Q/A entry's by the headings above it
(headings above entries are no chunk of their own): they name what a chunk's words leave out.

Prose is cut by LangChain's recursive splitter, block by block (blocks are separated by blank
lines), with three rules of its own (``knowledge.table_chunks``): a heading or caption line stays
in the chunk of the block it introduces, a table too long for one chunk is cut between rows with
its header row repeated in every piece, and a table of contents is left out.
"""

from __future__ import annotations

import hashlib
import re
from collections.abc import Iterable

import structlog

# Imported with the module, not on the first build: the import takes about a second (LangChain's
# runnables), and made on the build thread it held the import machinery while the event loop
# served searches (a 1.3 s stall in bench/cold_start.py). A process that serves imports this
# module when it loads the store, before any conversation.
from langchain_text_splitters import RecursiveCharacterTextSplitter

from rasa_context_retrieval.knowledge.loader import Document
from rasa_context_retrieval.knowledge.markdown_table import table_parts
from rasa_context_retrieval.knowledge.models import Chunk
from rasa_context_retrieval.knowledge.table_chunks import (
    BLOCK_SEPARATOR,
    LEAD_BLOCKS,
    is_contents,
    is_lead,
    table_pieces,
)

logger = structlog.get_logger()

CHUNKER_VERSION = 13
"""Part of the index fingerprint: bump it whenever chunk texts or chunk metadata change."""

_ENTRY_SEPARATOR = re.compile(r"\n\s*\n")
_QA_ENTRY = re.compile(r"^Q:\s*(?P<question>.+?)\s*\nA:\s*(?P<answer>.+)$", re.DOTALL)


def chunk_documents(
    documents: Iterable[Document], chunk_size: int, chunk_overlap: int
) -> list[Chunk]:
    """Split every document; chunk ids are stable for unchanged text at the same place."""
    splitter = RecursiveCharacterTextSplitter(chunk_size=chunk_size, chunk_overlap=chunk_overlap)
    chunks: list[Chunk] = []
    for document in documents:
        base = {**document.metadata}
        base.setdefault("source", document.source)
        prose = _Prose(splitter, chunk_size, document.source)
        title = _title(document.text, chunk_size)
        for ordinal, (text, extra) in enumerate(_pieces(document.text, prose)):
            if title is not None and not text.startswith(title):
                text = f"{title}{BLOCK_SEPARATOR}{text}"  # its answer stays the piece alone
            chunks.append(Chunk(_chunk_id(document.source, ordinal, text), text, {**base, **extra}))
    return chunks


def _title(text: str, chunk_size: int) -> str | None:
    """The document's title: its first block when that is a top-level Markdown heading.

    It heads every chunk of the document that does not start with it: "## Booking
    confirmation" alone does not say it is about a car booking, and a page's variants ("...
    for Plus members", "... for business accounts") differ by their title only. The title is
    part of the text that is embedded, ranked by BM25 and shown to the LLM, never of the answer.
    ``chunk_size`` bounds the document's own text in a chunk; the title comes on top of it (a
    title of at most a quarter of ``chunk_size``). Pieces cut shorter to make room for it
    ranked worse on the dev halves of the help centres (7 cases down, 1 up).
    """
    first = _ENTRY_SEPARATOR.split(text.strip(), maxsplit=1)[0].strip()
    if not first.startswith("# ") or "\n" in first or len(first) > chunk_size // 4:
        return None  # a title longer than a quarter of a chunk would crowd out its text
    return first


def _pieces(text: str, prose: _Prose) -> Iterable[tuple[str, dict[str, str]]]:
    """The document's chunks in order: prose pieces, and one chunk per Q/A entry.

    The headings right above a run of entries ("# Deposits for Plus members") head each entry's
    text, and are no chunk of their own: alone, a heading matched a short message ("plus") better
    than the entry that answers it, and as the first result its "answer" was the heading. Above
    each entry, they name what its question leaves out (whose deposit). The answer stays the
    entry's own.
    """
    blocks: list[str] = []
    heading: list[str] = []
    for entry in _ENTRY_SEPARATOR.split(text.strip()):
        match = _QA_ENTRY.match(entry.strip())
        if match is None:
            blocks.append(entry)
            continue
        if blocks:
            heading, blocks = _entries_heading(blocks, heading)
        yield from prose.pieces(blocks)
        blocks = []
        question = " ".join(match["question"].split())
        answer = match["answer"].strip()
        entry_text = BLOCK_SEPARATOR.join([*heading, f"Q: {question}\nA: {answer}"])
        yield entry_text, {"question": question, "answer": answer}
    yield from prose.pieces(blocks)


def _entries_heading(blocks: list[str], heading: list[str]) -> tuple[list[str], list[str]]:
    """The heading of the entries after ``blocks``, and the blocks left as prose.

    Headings at the end of ``blocks`` head the entries and leave the prose; an introduction
    that opens with a heading keeps it (it is that introduction's heading too) and lends it to
    the entries; prose without a heading leaves the entries under the heading they had.
    """
    trailing = _trailing_leads(blocks)
    if trailing:
        return [block.strip() for block in trailing], blocks[: len(blocks) - len(trailing)]
    opening = []
    for block in blocks[:LEAD_BLOCKS]:
        if not is_lead(block):
            break
        opening.append(block.strip())
    return (opening or heading), blocks


KEPT_TOGETHER = "\n\x1f\n"
"""Joins a heading or caption to the block it introduces inside the text handed to the
splitter: the splitter cuts first at blank lines and this is none, so the two land in one chunk
(the blank line is put back after splitting). Only a pair that fits in one chunk is joined."""


class _Prose:
    """Prose blocks of one document → chunk texts, each its own answer."""

    def __init__(
        self, splitter: RecursiveCharacterTextSplitter, chunk_size: int, source: str
    ) -> None:
        self.splitter = splitter
        self.chunk_size = chunk_size
        self.source = source

    def pieces(self, blocks: list[str]) -> Iterable[tuple[str, dict[str, str]]]:
        run: list[str] = []
        for block in blocks:
            lead = _trailing_leads(run) if not is_lead(block) else []
            table = table_parts(block)
            if table is not None and is_contents(lead, table):
                run.pop()  # its "Contents" heading; a line above that is the document's own
                logger.debug(
                    "knowledge.chunking.contents_left_out",
                    source=self.source,
                    entries=len(table.rows) + 1,
                    event_info="a table of contents says nothing a user asks about",
                )
                continue
            unit = KEPT_TOGETHER.join([*lead, block])
            if len(unit) <= self.chunk_size or (table is None and not lead):
                run[len(run) - len(lead) :] = [unit]
                continue
            del run[len(run) - len(lead) :]
            yield from self._split(run)
            run = []
            if table is not None:
                texts = table_pieces(lead, table, self.chunk_size, self.splitter.split_text)
            else:
                texts = self._led(lead, block)
            yield from ((text, {"answer": text}) for text in texts)
        yield from self._split(run)

    def _split(self, run: list[str]) -> Iterable[tuple[str, dict[str, str]]]:
        text = BLOCK_SEPARATOR.join(run).strip()
        if text:
            for piece in self.splitter.split_text(text):
                piece = piece.replace(KEPT_TOGETHER, BLOCK_SEPARATOR)
                yield piece, {"answer": piece}

    def _led(self, lead: list[str], block: str) -> list[str]:
        """A block too long for one chunk, cut by the splitter, with its heading or caption in
        its first piece (cut shorter to make room)."""
        opening = BLOCK_SEPARATOR.join(lead)
        room = self.chunk_size - len(opening) - len(BLOCK_SEPARATOR)
        pieces = self.splitter.split_text(block)
        if room < 1:  # a chunk size too small for the heading: it stays a chunk of its own
            return [opening, *pieces]
        if len(pieces[0]) > room:
            first = RecursiveCharacterTextSplitter(chunk_size=room, chunk_overlap=0)
            start = first.split_text(block)[0]
            rest = block.strip()[len(start) :]
            pieces = [start, *self.splitter.split_text(rest)]
        return [f"{opening}{BLOCK_SEPARATOR}{pieces[0]}", *pieces[1:]]


def _trailing_leads(run: list[str]) -> list[str]:
    """The headings and captions at the end of ``run`` (at most ``LEAD_BLOCKS``)."""
    count = 0
    while count < min(LEAD_BLOCKS, len(run)) and is_lead(run[len(run) - 1 - count]):
        count += 1
    return run[len(run) - count :]


def _chunk_id(source: str, ordinal: int, text: str) -> str:
    digest = hashlib.sha256(f"{source}\0{ordinal}\0{text}".encode()).hexdigest()
    return digest[:32]
