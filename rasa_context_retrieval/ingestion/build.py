"""Making ``EmbeddedKnowledge`` from the documents: read, chunk, embed only what is new.

A rebuild re-embeds only chunks whose text is new: the caller hands over the vectors it already
has by chunk id (those of the published index, made by the same embedding model), and only the
other chunks are embedded. Nothing here knows where the result is served or stored.
"""

from __future__ import annotations

from collections.abc import Mapping
from typing import Any

import numpy as np

from rasa_context_retrieval.errors import ContextRetrievalError
from rasa_context_retrieval.ingestion.currency import recorded_fingerprint
from rasa_context_retrieval.ingestion.knowledge import EmbeddedKnowledge
from rasa_context_retrieval.ingestion.settings import IndexSettings
from rasa_context_retrieval.knowledge.chunking import chunk_documents
from rasa_context_retrieval.knowledge.embedding import embedder_identity
from rasa_context_retrieval.knowledge.loader import KnowledgeBase, load_knowledge_base
from rasa_context_retrieval.knowledge.models import Chunk
from rasa_context_retrieval.query_embedding.documents import embed_documents
from rasa_context_retrieval.retrieve.languages import warn_if_documents_are_not_in


class EmptyKnowledgeBaseError(ContextRetrievalError, ValueError):
    """The docs folder yields no chunk at all."""


def read_documents(
    settings: IndexSettings, *, building: bool = True
) -> tuple[KnowledgeBase, list[Chunk]]:
    """The documents as the loader reads them now, and the chunks they make (nothing embedded).
    Only files that changed since the last load are parsed (``knowledge.parse_cache``).
    ``building``: False for a read that only looks, whose lost parses use up no file's tries."""
    knowledge = load_knowledge_base(
        settings.docs,
        settings.access_attributes,
        settings.extra_suffixes,
        settings.faq_columns,
        cache=settings.parse_cache(records_losses=building),
    )
    return knowledge, chunk_documents(
        knowledge.documents, settings.chunk_size, settings.chunk_overlap
    )


def embed_knowledge(
    settings: IndexSettings,
    embeddings: Any,
    fingerprint: str,
    known: Mapping[str, np.ndarray],
    *,
    progress: bool = True,
) -> EmbeddedKnowledge:
    """The documents' chunks with their vectors: ``known`` ones reused, the others embedded.

    ``fingerprint`` is ``settings.fingerprint(embeddings)`` as the caller read it before deciding
    to build (the documents are not digested twice); the knowledge records it, or its provisional
    form when a file is due another parse (``ingestion.currency``)."""
    knowledge, chunks = read_documents(settings)
    if not chunks:
        skipped = "; ".join(str(problem) for problem in knowledge.problems[:5]) or "none"
        raise EmptyKnowledgeBaseError(
            f"vector_store.docs: no document could be indexed from '{settings.docs}' "
            f"(add .md, .txt or .jsonl files; skipped files: {skipped})"
        )
    warn_if_documents_are_not_in((d.text for d in knowledge.documents), settings.language)
    missing = [chunk for chunk in chunks if chunk.chunk_id not in known]
    fresh = embed_documents(
        embeddings,
        [c.text for c in missing],
        settings.embedding_batch_size,
        settings.onnx_export,
        bf16=settings.bf16,
        progress=progress,
    )
    vectors = {**known, **{chunk.chunk_id: fresh[row] for row, chunk in enumerate(missing)}}
    return EmbeddedKnowledge.of(
        recorded_fingerprint(fingerprint, knowledge),
        embedder_identity(embeddings),
        chunks,
        np.vstack([vectors[chunk.chunk_id] for chunk in chunks]).astype(np.float32),
        knowledge.problems,
        settings.language,
    )
