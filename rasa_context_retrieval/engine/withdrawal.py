"""When a rebuild fails, stop serving what the documents no longer say.

A refresh normally rebuilds the index from the documents on disk, and a document that cannot be
read is simply missing from the new index. But the rebuild as a whole can fail (nothing left to
index, the embedding model failing on new text, an index folder that cannot be written). Keeping
the old index then keeps answering from text that was edited, withdrawn or re-scoped (``plan:
free`` changed to ``plan: plus``). Instead, the served index shrinks to the chunks that the
documents on disk still contain, word for word and with the same metadata; nothing needs to be
embedded for that, so it works whatever broke the rebuild. New or changed text appears with the
next successful rebuild.
"""

from __future__ import annotations

import json
from typing import Any

import numpy as np
import structlog

from rasa_context_retrieval.faiss.builder import IndexSettings
from rasa_context_retrieval.faiss.index import KnowledgeIndex
from rasa_context_retrieval.knowledge.chunking import chunk_documents
from rasa_context_retrieval.knowledge.loader import load_knowledge_base
from rasa_context_retrieval.knowledge.models import Chunk

logger = structlog.get_logger()

PARTIAL_FINGERPRINT_PREFIX = "withdrawn:"
"""Marks an index that matches no documents' fingerprint, so the next refresh tries again."""


def without_changed_chunks(index: KnowledgeIndex, settings: IndexSettings) -> KnowledgeIndex:
    """``index`` minus every chunk whose text or metadata the documents on disk no longer have."""
    knowledge = load_knowledge_base(settings.docs, settings.access_attributes)
    on_disk = {
        _identity(chunk)
        for chunk in chunk_documents(
            knowledge.documents, settings.chunk_size, settings.chunk_overlap
        )
    }
    rows = [row for row, chunk in enumerate(index.chunks) if _identity(chunk) in on_disk]
    logger.warning(
        "knowledge.index.withdrawn",
        withdrawn=len(index) - len(rows),
        kept=len(rows),
        sources=sorted(
            {
                str(chunk.metadata.get("source"))
                for chunk in index.chunks
                if _identity(chunk) not in on_disk
            }
        )[:50],
    )
    vectors = np.array(index.vectors)[rows].reshape(len(rows), index.vectors.shape[1])
    return KnowledgeIndex.build(
        PARTIAL_FINGERPRINT_PREFIX + index.fingerprint.removeprefix(PARTIAL_FINGERPRINT_PREFIX),
        index.embedder,
        [index.chunks[row] for row in rows],
        vectors.astype(np.float32),
        knowledge.problems,
        settings.exact_search_below,
    )


def _identity(chunk: Chunk) -> tuple[str, str]:
    return chunk.chunk_id, _canonical(chunk.metadata)


def _canonical(metadata: dict[str, Any]) -> str:
    return json.dumps(metadata, sort_keys=True, default=str)
