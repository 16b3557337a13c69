"""``backend: milvus``: a shared Milvus collection answers every search, filters run server-side.

Milvus holds every chunk's text, metadata, normal form and vector for all replicas; a search gets
its dense rankings, texts, metadata and relevance scores from it, so a replica needs no local copy
of the knowledge base. Writing is the job of whoever ingests (``ingest: auto`` replicas under the
sync lease, or the console's ``index`` command for ``ingest: console_only``): ingestion hands it
the ``EmbeddedKnowledge`` of the documents, whose chunks and vectors it writes as rows (so the
knowledge base is embedded once per change), and which it keeps for BM25 when ``hybrid`` is on.
When a writer's refresh sees documents change, ``withhold`` deletes the changed chunks' rows
before anything is rebuilt, so neither the writer nor any replica serves them until the sync
writes them as they are now.
"""

from __future__ import annotations

from collections.abc import Collection, Sequence

import numpy as np
from langchain_core.structured_query import FilterDirective

from rasa_context_retrieval.access.entitlements import AccessFilter
from rasa_context_retrieval.filters.schema import MetadataField
from rasa_context_retrieval.ingestion.knowledge import (
    EmbeddedKnowledge,
    readable_values,
    served_mask,
    values_admitted,
)
from rasa_context_retrieval.knowledge.models import Chunk, ScoredChunk
from rasa_context_retrieval.milvus.config import MilvusConfig
from rasa_context_retrieval.milvus.store import MilvusChunkStore
from rasa_context_retrieval.retrieve.conformance import conforming
from rasa_context_retrieval.retrieve.fusion import fused_order
from rasa_context_retrieval.retrieve.request import RetrievalRequest


class MilvusBackend:
    """``SearchBackend`` over a Milvus collection; ``local`` is the knowledge a writer synced."""

    def __init__(
        self,
        store: MilvusChunkStore,
        *,
        writes: bool = False,
        local: EmbeddedKnowledge | None = None,
        withheld: np.ndarray | None = None,
    ) -> None:
        self.store = store
        self.writes = writes
        """Whether ``publish`` syncs the collection (an ingesting replica or the console)."""
        self.local = local
        """The knowledge this process ingested from the documents and synced (writers only)."""
        self._withheld = withheld
        """Rows of ``local`` that BM25 must not find (their rows in Milvus were deleted)."""

    @classmethod
    def open(
        cls, config: MilvusConfig, *, writes: bool, fields: Sequence[MetadataField] = ()
    ) -> MilvusBackend:
        """Connect; the block was validated with the rest of ``vector_store:`` (StoreConfig).
        A writer stores the declared ``fields`` in typed fields (``milvus.layout``)."""
        return cls(MilvusChunkStore.connect(config, fields), writes=writes)

    def publish(self, knowledge: EmbeddedKnowledge) -> MilvusBackend:
        """Make the collection hold the knowledge's chunks (when this process writes), with the
        vectors ingestion made: a sync embeds nothing itself."""
        if self.writes:
            vectors = np.array(knowledge.vectors)
            by_text = {chunk.text: vectors[row] for row, chunk in enumerate(knowledge.chunks)}
            self.store.sync(
                knowledge.chunks,
                lambda texts: np.vstack([by_text[text] for text in texts]),
                embedding_model=knowledge.embedder,
            )
        return MilvusBackend(self.store, writes=self.writes, local=knowledge)

    def withhold(self, chunk_ids: Collection[str]) -> MilvusBackend:
        """Delete ``chunk_ids``' rows for every replica now (``MilvusChunkStore.withhold``);
        the local knowledge's copies are withheld from BM25 too."""
        self.store.withhold(chunk_ids)
        withheld = None
        if self.local is not None:
            withheld = np.isin([chunk.chunk_id for chunk in self.local.chunks], list(chunk_ids))
            if self._withheld is not None:
                withheld |= self._withheld
        return MilvusBackend(self.store, writes=self.writes, local=self.local, withheld=withheld)

    def rank(self, request: RetrievalRequest) -> list[ScoredChunk]:
        rankings = [
            self.store.search(vector, request.filter, request.candidates)
            for vector in request.vectors
        ]
        lexical = self._lexical(request) if request.hybrid else []
        found: dict[str, Chunk] = {}
        for ranking in [*rankings, lexical]:  # the first copy wins: Milvus' text and metadata
            for hit in ranking:
                found.setdefault(hit.chunk.chunk_id, hit.chunk)
        relevance = {hit.chunk.chunk_id: hit.relevance for hit in rankings[0]}
        words = [hit.chunk.chunk_id for hit in lexical]
        unscored = [chunk_id for chunk_id in words if chunk_id not in relevance]
        if unscored:  # BM25's hits are ranked by their words only near the best cosine
            relevance.update(self.store.relevance(request.vectors[0], unscored))
        order = fused_order(
            [[hit.chunk.chunk_id for hit in ranking] for ranking in rankings], words, relevance
        )
        unscored = [chunk_id for chunk_id in order if chunk_id not in relevance]
        if unscored:  # found by a paraphrase or BM25 only: score against the standalone query
            relevance.update(self.store.relevance(request.vectors[0], unscored))
        results = [
            ScoredChunk(found[chunk_id], relevance[chunk_id])
            for chunk_id in order
            if chunk_id in relevance and relevance[chunk_id] >= request.threshold
        ]
        return results[: request.top_k]

    def count(self, directive: FilterDirective | None, access: AccessFilter | None) -> int:
        """Exact up to ``milvus.search.MAX_MATCHED`` chunks in scope (the engine asks whether
        any chunk is in scope); every one is re-checked on the metadata Milvus returns."""
        if directive is None and access is None:
            return self.store.count()
        chunks = self.store.matching(directive)
        return sum(conforming(chunks, directive, access)[0])

    def values_of(self, attribute: str) -> frozenset[str]:
        if self.local is not None:
            return self.local.columns.values_of(attribute)
        return self.store.values_of(attribute)

    def readable_values(
        self, attributes: Sequence[str], access: AccessFilter
    ) -> dict[str, frozenset[str]]:
        """From the writer's own knowledge, or from the chunks the collection matches (at most
        ``MAX_MATCHED``: fewer values offered, never values of a chunk ``access`` rejects)."""
        if self.local is not None:
            return readable_values(self.local, attributes, access, self._withheld)
        chunks = self.store.matching(access.directive)
        return values_admitted((chunk.metadata for chunk in chunks), attributes, access)

    def has_attribute(self, attribute: str) -> bool:
        return self.store.has_attribute(attribute)

    def size(self) -> int:
        return self.store.count()

    def close(self) -> None:
        self.store.close()

    def _lexical(self, request: RetrievalRequest) -> list[ScoredChunk]:
        local = self.local
        if local is None:  # refused at start-up (StoreConfig): BM25 would need local chunks
            raise RuntimeError("hybrid search on Milvus needs the ingesting replica's knowledge")
        mask = served_mask(local, request.filter, self._withheld)
        if mask is not None and not mask.any():
            return []
        hits = local.lexical.search(request.texts[0], request.candidates, mask)
        return [ScoredChunk(local.chunks[row], 0.0) for row, score in hits if score > 0]
