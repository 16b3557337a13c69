"""``backend: faiss``: the knowledge index in this process answers every search.

The backend owns what searching a local index takes: the dense index, the metadata columns and the
mask translator (through ``faiss.retriever``), BM25, and FAISS's thread settings. One instance
serves one immutable ``KnowledgeIndex``; a refresh publishes a new instance for the new index.
"""

from __future__ import annotations

import os
from collections.abc import Sequence

import faiss
import numpy as np
from langchain_core.structured_query import FilterDirective

from rasa_context_retrieval.access.entitlements import AccessFilter
from rasa_context_retrieval.faiss.index import KnowledgeIndex
from rasa_context_retrieval.faiss.retriever import filter_mask, readable_values, retrieve
from rasa_context_retrieval.knowledge.models import ScoredChunk
from rasa_context_retrieval.retrieve.conformance import conforming
from rasa_context_retrieval.retrieve.request import RetrievalRequest

SEARCH_THREADS_PER_QUERY = 1
"""FAISS threads per search. Concurrency comes from many searches at once; letting each search
also fan out over OpenMP threads made a 100k-chunk search 5x slower on a busy 2-core machine
(bench/results/filtered_search.md). Set OMP_NUM_THREADS to override."""


class FaissBackend:
    """``SearchBackend`` over one in-process ``KnowledgeIndex``."""

    def __init__(self, index: KnowledgeIndex) -> None:
        if "OMP_NUM_THREADS" not in os.environ:
            faiss.omp_set_num_threads(SEARCH_THREADS_PER_QUERY)
        self.index = index

    def publish(self, index: KnowledgeIndex, embedder: str) -> FaissBackend:
        """The index is already published on disk by the builder; serve it."""
        return FaissBackend(index)

    def rank(self, request: RetrievalRequest) -> list[ScoredChunk]:
        return retrieve(self.index, request)

    def count(self, directive: FilterDirective | None, access: AccessFilter | None) -> int:
        mask = filter_mask(self.index, directive)
        if mask is None:
            return len(self.index)
        if access is None:
            return int(mask.sum())
        chunks = [self.index.chunks[row] for row in np.flatnonzero(mask)]
        return sum(conforming(chunks, None, access)[0])

    def values_of(self, attribute: str) -> frozenset[str]:
        return self.index.columns.values_of(attribute)

    def readable_values(
        self, attributes: Sequence[str], access: AccessFilter
    ) -> dict[str, frozenset[str]]:
        return readable_values(self.index, attributes, access)

    def has_attribute(self, attribute: str) -> bool:
        return attribute in self.index.columns.attributes()

    def size(self) -> int:
        return len(self.index)

    def close(self) -> None:
        """Nothing to release: the index is memory-mapped and freed with the last reference."""
