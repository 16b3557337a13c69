"""Getting an up-to-date index: load it when nothing changed, otherwise (re)build and publish it.

The fingerprint covers the knowledge base's bytes, the embedding model and the chunking settings,
so a restart with unchanged documents loads without embedding anything, while a changed, added or
removed document triggers a rebuild. A rebuild re-embeds only chunks whose text is new: vectors of
unchanged chunks are taken over from the previous index.
"""

from __future__ import annotations

import hashlib
import json
import time
from collections.abc import Iterator
from contextlib import contextmanager
from dataclasses import dataclass
from pathlib import Path
from typing import Any

import numpy as np
import structlog

from rasa_context_retrieval.errors import ContextRetrievalError
from rasa_context_retrieval.faiss.index import (
    FORMAT_VERSION,
    IndexCorruptError,
    IndexDirectory,
    IndexFolderNotWritable,
    KnowledgeIndex,
)
from rasa_context_retrieval.knowledge.chunking import CHUNKER_VERSION, chunk_documents
from rasa_context_retrieval.knowledge.embedding import embedder_identity
from rasa_context_retrieval.knowledge.faq_table import DEFAULT_FAQ_COLUMNS, FaqColumns
from rasa_context_retrieval.knowledge.loader import (
    KnowledgeBase,
    content_digest,
    load_knowledge_base,
)
from rasa_context_retrieval.knowledge.parse_cache import ParseCache
from rasa_context_retrieval.query_embedding.documents import embed_documents
from rasa_context_retrieval.retrieve.languages import DEFAULT_LANGUAGE, warn_if_documents_are_not_in

logger = structlog.get_logger()

PARSE_CACHE_FILE = "parsed-files.json"
"""Beside the published index folders in ``index_path`` (``knowledge.parse_cache``)."""


class EmptyKnowledgeBaseError(ContextRetrievalError, ValueError):
    """The docs folder yields no chunk at all."""


@dataclass(frozen=True)
class IndexSettings:
    """What decides the contents of an index (and therefore its fingerprint)."""

    docs: Path
    index_path: Path
    chunk_size: int
    chunk_overlap: int
    embedding_batch_size: int
    exact_search_below: int
    language: str = DEFAULT_LANGUAGE
    """Of the lexical analyzer (stemmer, stop words); a change rebuilds BM25, reusing vectors."""
    access_attributes: tuple[str, ...] = ()
    """The document attributes ``access_filters`` map to: they decide which documents the loader
    refuses (``knowledge.access_attributes``), so a change re-reads every document."""
    extra_suffixes: tuple[str, ...] = ()
    """The opted-in formats besides .md/.txt/.jsonl (``.pdf``); part of the docs digest."""
    faq_columns: FaqColumns = DEFAULT_FAQ_COLUMNS
    """Which columns of an FAQ table hold the question and the answer."""
    onnx_export: Path | None = None
    """Where the ONNX export of a local embedding model is cached, for embedding chunks with it
    (``query_embedding.documents``); None: Rasa's client embeds them. Not in the fingerprint:
    both give the same vectors, so switching re-embeds nothing."""

    def fingerprint(self, embeddings: Any) -> str:
        payload = {
            "format": FORMAT_VERSION,
            "chunker": CHUNKER_VERSION,
            "docs": content_digest(self.docs, self.extra_suffixes),
            "embedder": embedder_identity(embeddings),
            "chunk_size": self.chunk_size,
            "chunk_overlap": self.chunk_overlap,
            # decides the dense index type; a change rebuilds (reusing every vector)
            "exact_search_below": self.exact_search_below,
            "language": self.language,
            # which documents are refused; part of every fingerprint since front matter is read
            # exactly, so an index built by the lenient reader of earlier releases is rebuilt
            "access_attributes": sorted(set(self.access_attributes)),
            "faq_columns": [self.faq_columns.question, self.faq_columns.answer],
        }
        return hashlib.sha256(json.dumps(payload, sort_keys=True).encode()).hexdigest()

    def parse_cache(self) -> ParseCache:
        """What the files parsed to at the last load, under everything that decides a parse."""
        decides = {
            "chunker": CHUNKER_VERSION,  # bumped whenever a parser's output changes too
            "access_attributes": sorted(set(self.access_attributes)),
            "faq_columns": [self.faq_columns.question, self.faq_columns.answer],
        }
        return ParseCache(self.index_path / PARSE_CACHE_FILE, json.dumps(decides, sort_keys=True))


def read_knowledge(settings: IndexSettings) -> KnowledgeBase:
    """The documents and problems of ``settings.docs`` now, parsing only the files that changed
    since the last load (``knowledge.parse_cache``)."""
    return load_knowledge_base(
        settings.docs,
        settings.access_attributes,
        settings.extra_suffixes,
        settings.faq_columns,
        cache=settings.parse_cache(),
    )


def ensure_index(
    settings: IndexSettings, embeddings: Any, *, progress: bool = True
) -> KnowledgeIndex:
    """The index for the current documents: loaded if published already, built otherwise."""
    directory = IndexDirectory(settings.index_path)
    fingerprint = settings.fingerprint(embeddings)
    loaded = _load_if_current(directory, fingerprint)
    if loaded is not None:
        return loaded
    with _acquired(directory):
        loaded = _load_if_current(directory, fingerprint)  # another process may have built it
        if loaded is not None:
            return loaded
        return _build(settings, embeddings, fingerprint, directory, progress)


@contextmanager
def _acquired(directory: IndexDirectory) -> Iterator[None]:
    """The build lock; a folder where the lock file cannot be created is reported as such."""
    lock = directory.lock()
    try:
        lock.acquire()
    except OSError as error:  # never a timeout: the lock waits without one
        raise IndexFolderNotWritable(directory.root, error) from None
    try:
        yield
    finally:
        lock.release()


def _load_if_current(directory: IndexDirectory, fingerprint: str) -> KnowledgeIndex | None:
    if directory.current_fingerprint() != fingerprint:
        return None
    folder = directory.current()
    assert folder is not None
    started = time.perf_counter()
    try:
        index = KnowledgeIndex.read(folder)
    except IndexCorruptError as error:
        logger.warning(
            "knowledge.index.unreadable",
            folder=str(folder),
            error=str(error),
            event_info="the published index is damaged; rebuilding it from the documents",
        )
        return None
    logger.info(
        "knowledge.index.loaded",
        chunks=len(index),
        seconds=round(time.perf_counter() - started, 3),
    )
    return index


def _build(
    settings: IndexSettings,
    embeddings: Any,
    fingerprint: str,
    directory: IndexDirectory,
    progress: bool,
) -> KnowledgeIndex:
    started = time.perf_counter()
    knowledge = read_knowledge(settings)
    chunks = chunk_documents(knowledge.documents, settings.chunk_size, settings.chunk_overlap)
    if not chunks:
        skipped = "; ".join(str(problem) for problem in knowledge.problems[:5]) or "none"
        raise EmptyKnowledgeBaseError(
            f"vector_store.docs: no document could be indexed from '{settings.docs}' "
            f"(add .md, .txt or .jsonl files; skipped files: {skipped})"
        )
    warn_if_documents_are_not_in((d.text for d in knowledge.documents), settings.language)
    known = _previous_vectors(directory, embeddings)
    missing = [chunk for chunk in chunks if chunk.chunk_id not in known]
    fresh = embed_documents(
        embeddings,
        [c.text for c in missing],
        settings.embedding_batch_size,
        settings.onnx_export,
        progress=progress,
    )
    known.update({chunk.chunk_id: fresh[row] for row, chunk in enumerate(missing)})
    vectors = np.vstack([known[chunk.chunk_id] for chunk in chunks]).astype(np.float32)
    index = KnowledgeIndex.build(
        fingerprint,
        embedder_identity(embeddings),
        chunks,
        vectors,
        knowledge.problems,
        settings.exact_search_below,
        settings.language,
    )
    directory.publish(index)
    logger.info(
        "knowledge.index.built",
        chunks=len(chunks),
        embedded=len(missing),
        reused=len(chunks) - len(missing),
        skipped_files=len(knowledge.problems),
        seconds=round(time.perf_counter() - started, 3),
    )
    return index


def _previous_vectors(directory: IndexDirectory, embeddings: Any) -> dict[str, np.ndarray]:
    """Vectors of the published index, if it was made with the same embedding model."""
    folder = directory.current()
    if folder is None:
        return {}
    try:
        previous = KnowledgeIndex.read(folder)
    except IndexCorruptError:
        return {}
    if previous.embedder != embedder_identity(embeddings):
        return {}
    return previous.vectors_by_chunk_id()
