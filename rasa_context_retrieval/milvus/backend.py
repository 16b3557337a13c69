"""``backend: milvus``: dense rankings from a shared Milvus collection, filters run server-side.

The engine keeps its local view of the knowledge base (chunks, BM25, metadata columns and the
vectors it embedded once); Milvus holds the same chunks and vectors for every replica and answers
the dense part of each search with the filter evaluated on the server. Syncing reuses the local
vectors, so the knowledge base is embedded once per change, not once per backend. With
``ingest: console_only`` assistants never write: ``rasa-context-retrieval index`` does (CI/CD).
"""

from __future__ import annotations

import numpy as np
from langchain_core.structured_query import FilterDirective

from rasa_context_retrieval.knowledge.index import KnowledgeIndex
from rasa_context_retrieval.milvus.config import MilvusConfig
from rasa_context_retrieval.milvus.store import MilvusChunkStore, SyncReport
from rasa_context_retrieval.retrieve.retriever import DenseRanking


class MilvusBackend:
    """The Milvus collection as the source of dense rankings, kept in sync with the local index."""

    def __init__(self, store: MilvusChunkStore, config: MilvusConfig) -> None:
        self.store = store
        self.config = config

    @classmethod
    def open(cls, config: MilvusConfig) -> MilvusBackend:
        """Connect; the block was validated with the rest of ``vector_store:`` (StoreConfig)."""
        return cls(MilvusChunkStore.connect(config), config)

    def publish(
        self, index: KnowledgeIndex, embedder: str, *, force: bool = False
    ) -> SyncReport | None:
        """Make the collection hold the index's chunks (unless ingestion is the console's job)."""
        if self.config.ingest == "console_only" and not force:
            return None
        vectors = np.array(index.vectors)
        by_text = {chunk.text: vectors[row] for row, chunk in enumerate(index.chunks)}
        return self.store.sync(
            index.chunks,
            lambda texts: np.vstack([by_text[text] for text in texts]),
            embedding_model=embedder,
        )

    def ranking(self, index: KnowledgeIndex) -> DenseRanking:
        """Dense rankings from Milvus as rows of ``index`` (chunks it lacks are skipped)."""

        def rank(
            vector: np.ndarray, k: int, directive: FilterDirective | None, _: np.ndarray | None
        ) -> list[int]:
            hits = self.store.search(vector, directive, k)
            return [
                index.row_of[h.chunk.chunk_id] for h in hits if h.chunk.chunk_id in index.row_of
            ]

        return rank

    def close(self) -> None:
        self.store.close()
