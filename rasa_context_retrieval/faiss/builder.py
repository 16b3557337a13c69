"""Getting an up-to-date index: load it when nothing changed, otherwise (re)build and publish it.

Whether the published index is current is decided by ``ingestion.currency``: a restart with
unchanged documents loads it without embedding anything. Otherwise ingestion makes the
knowledge again (``ingestion.build``), reusing the published index's vectors of unchanged chunks,
and FAISS indexes it and publishes the folder. Several processes starting at once serialise on
the folder's build lock, and the later ones find the index built.
"""

from __future__ import annotations

import time
from collections.abc import Iterator
from contextlib import contextmanager
from typing import Any

import numpy as np
import structlog

from rasa_context_retrieval.faiss.index import (
    IndexCorruptError,
    IndexDirectory,
    IndexFolderNotWritable,
    KnowledgeIndex,
)
from rasa_context_retrieval.ingestion.build import embed_knowledge
from rasa_context_retrieval.ingestion.currency import is_current
from rasa_context_retrieval.ingestion.settings import IndexSettings
from rasa_context_retrieval.knowledge.embedding import embedder_identity

logger = structlog.get_logger()


def ensure_index(
    settings: IndexSettings, embeddings: Any, *, progress: bool = True
) -> KnowledgeIndex:
    """The index for the current documents: loaded if published already, built otherwise."""
    directory = IndexDirectory(settings.index_path)
    fingerprint = settings.fingerprint(embeddings)
    seen = directory.current()
    loaded = _load_if_current(directory, fingerprint)
    if loaded is not None:
        return loaded
    with _acquired(directory):
        # another process may have built it while this one waited for the lock
        loaded = _load_if_current(directory, fingerprint, directory.current() != seen)
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


def _load_if_current(
    directory: IndexDirectory, fingerprint: str, built_meanwhile: bool = False
) -> KnowledgeIndex | None:
    recorded = directory.current_fingerprint()
    if not is_current(recorded, fingerprint, built_meanwhile=built_meanwhile):
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
    known = _previous_vectors(directory, embeddings)
    knowledge = embed_knowledge(settings, embeddings, fingerprint, known, progress=progress)
    index = KnowledgeIndex.built(knowledge, settings.exact_search_below)
    directory.publish(index)
    reused = sum(chunk.chunk_id in known for chunk in index.knowledge.chunks)
    logger.info(
        "knowledge.index.built",
        chunks=len(index),
        embedded=len(index) - reused,
        reused=reused,
        skipped_files=len(index.knowledge.problems),
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
    if previous.knowledge.embedder != embedder_identity(embeddings):
        return {}
    return previous.knowledge.vectors_by_chunk_id()
