"""Stop serving what the documents no longer say: at once when a change is seen, and for good
when the rebuild fails.

A refresh that finds the documents changed rebuilds the index (and, on Milvus, syncs the
collection), which takes from a moment to minutes. Until then the old index would keep answering
from text that was edited, withdrawn or re-scoped (``plan: free`` changed to ``plan: plus``). So
the chunks that the documents on disk no longer contain, word for word and with the same metadata,
are withheld first (``changed_chunk_ids``); nothing needs to be embedded for that. The rebuild as a
whole can fail too (nothing left to index, the embedding model failing on new text, an index folder
that cannot be written): the served index then shrinks to the chunks the documents still contain
(``without_changed_chunks``). New or changed text appears with the next successful rebuild.
"""

from __future__ import annotations

import json
from typing import Any

import numpy as np
import structlog

from rasa_context_retrieval.ingestion.build import read_documents
from rasa_context_retrieval.ingestion.currency import provisional
from rasa_context_retrieval.ingestion.knowledge import EmbeddedKnowledge
from rasa_context_retrieval.ingestion.settings import IndexSettings
from rasa_context_retrieval.knowledge.loader import KnowledgeBase
from rasa_context_retrieval.knowledge.models import Chunk

logger = structlog.get_logger()


def changed_chunk_ids(served: EmbeddedKnowledge, settings: IndexSettings) -> frozenset[str]:
    """Ids of ``served``'s chunks whose text or metadata the documents on disk no longer have
    (edited, re-scoped, removed or unreadable documents)."""
    on_disk = _identities_on_disk(settings)[0]
    changed = [chunk for chunk in served.chunks if _identity(chunk) not in on_disk]
    if changed:
        logger.warning(
            "knowledge.index.withheld",
            withheld=len(changed),
            sources=sorted({str(chunk.metadata.get("source")) for chunk in changed})[:50],
        )
    return frozenset(chunk.chunk_id for chunk in changed)


def without_changed_chunks(served: EmbeddedKnowledge, settings: IndexSettings) -> EmbeddedKnowledge:
    """``served`` minus every chunk whose text or metadata the documents on disk no longer have."""
    on_disk, knowledge = _identities_on_disk(settings)
    rows = [row for row, chunk in enumerate(served.chunks) if _identity(chunk) in on_disk]
    logger.warning(
        "knowledge.index.withdrawn",
        withdrawn=len(served) - len(rows),
        kept=len(rows),
        sources=sorted(
            {
                str(chunk.metadata.get("source"))
                for chunk in served.chunks
                if _identity(chunk) not in on_disk
            }
        )[:50],
    )
    vectors = np.array(served.vectors)[rows].reshape(len(rows), served.vectors.shape[1])
    return EmbeddedKnowledge.of(
        provisional(served.fingerprint),  # never current: the next refresh tries again
        served.embedder,
        [served.chunks[row] for row in rows],
        vectors.astype(np.float32),
        knowledge.problems,
        settings.language,
    )


def chunks_on_disk(settings: IndexSettings) -> list[Chunk]:
    """The chunks the documents make now (read and split; nothing is embedded)."""
    return read_documents(settings, building=False)[1]


def _identities_on_disk(settings: IndexSettings) -> tuple[set[tuple[str, str]], KnowledgeBase]:
    knowledge, chunks = read_documents(settings, building=False)
    return {_identity(chunk) for chunk in chunks}, knowledge


def _identity(chunk: Chunk) -> tuple[str, str]:
    return chunk.chunk_id, _canonical(chunk.metadata)


def _canonical(metadata: dict[str, Any]) -> str:
    return json.dumps(metadata, sort_keys=True, default=str)
