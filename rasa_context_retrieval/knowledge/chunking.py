"""Documents → chunks: Q/A entries stay whole and carry their answer; prose is split by size.

EnterpriseSearchPolicy's extractive mode (``use_generative_llm: false``) answers with
``results[0].metadata["answer"]``, so a Q/A entry ("Q: ...\\nA: ...", entries separated by a
blank line, the format Rasa's own FAQ parser reads) must become exactly one chunk whose metadata
holds the answer. A prose chunk's answer is its own text: without one, a prose chunk ranked first
would make the policy reply with its internal-error pattern. Every chunk keeps its document's
metadata unchanged, plus ``source`` and ``answer``.
"""

from __future__ import annotations

import hashlib
import re
from collections.abc import Iterable

# Imported with the module, not on the first build: the import takes about a second (LangChain's
# runnables), and made on the build thread it held the import machinery while the event loop
# served searches (a 1.3 s stall in bench/cold_start.py). A process that serves imports this
# module when it loads the store, before any conversation.
from langchain_text_splitters import RecursiveCharacterTextSplitter

from rasa_context_retrieval.knowledge.loader import Document
from rasa_context_retrieval.knowledge.models import Chunk

CHUNKER_VERSION = 5
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
        for ordinal, (text, extra) in enumerate(_pieces(document.text, splitter)):
            chunks.append(Chunk(_chunk_id(document.source, ordinal, text), text, {**base, **extra}))
    return chunks


def _pieces(
    text: str, splitter: RecursiveCharacterTextSplitter
) -> Iterable[tuple[str, dict[str, str]]]:
    prose: list[str] = []
    for entry in _ENTRY_SEPARATOR.split(text.strip()):
        match = _QA_ENTRY.match(entry.strip())
        if match is None:
            prose.append(entry)
            continue
        yield from _prose_pieces(prose, splitter)
        prose = []
        question = " ".join(match["question"].split())
        answer = match["answer"].strip()
        yield f"Q: {question}\nA: {answer}", {"question": question, "answer": answer}
    yield from _prose_pieces(prose, splitter)


def _prose_pieces(
    entries: list[str], splitter: RecursiveCharacterTextSplitter
) -> Iterable[tuple[str, dict[str, str]]]:
    text = "\n\n".join(entries).strip()
    if text:
        for piece in splitter.split_text(text):
            yield piece, {"answer": piece}


def _chunk_id(source: str, ordinal: int, text: str) -> str:
    digest = hashlib.sha256(f"{source}\0{ordinal}\0{text}".encode()).hexdigest()
    return digest[:32]
