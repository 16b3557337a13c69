"""``backend: faiss``: the knowledge index in this process answers every search.

The backend owns what searching a local index takes: the dense index, the metadata columns and the
mask translator (through ``faiss.retriever``), BM25, and FAISS's thread settings. One instance
serves one immutable ``KnowledgeIndex``: the dense index over one ``EmbeddedKnowledge``. A refresh
publishes new knowledge, and ``publish`` serves it from a new instance (with the dense index read
or built for it already, see ``KnowledgeIndex.of``).
Between a refresh seeing a change and that publication, an instance serves the same index with
the changed chunks withheld: a mask, so withholding costs no rebuild.
"""

from __future__ import annotations

import os
from collections.abc import Collection, Sequence

import faiss
import numpy as np
from langchain_core.structured_query import FilterDirective

from rasa_context_retrieval.access.entitlements import AccessFilter
from rasa_context_retrieval.faiss.index import KnowledgeIndex
from rasa_context_retrieval.faiss.retriever import retrieve
from rasa_context_retrieval.ingestion.knowledge import (
    EmbeddedKnowledge,
    readable_values,
    served_mask,
)
from rasa_context_retrieval.knowledge.models import ScoredChunk
from rasa_context_retrieval.retrieve.conformance import conforming
from rasa_context_retrieval.retrieve.request import RetrievalRequest

SEARCH_THREADS_PER_QUERY = 1
"""FAISS threads per search. Concurrency comes from many searches at once; letting each search
also fan out over OpenMP threads made a 100k-chunk search 5x slower on a busy 2-core machine
(bench/results/filtered_search.md). Set OMP_NUM_THREADS to override."""


class FaissBackend:
    """``SearchBackend`` over one in-process ``KnowledgeIndex``."""

    def __init__(
        self, index: KnowledgeIndex, exact_search_below: int, withheld: np.ndarray | None = None
    ) -> None:
        if "OMP_NUM_THREADS" not in os.environ:
            faiss.omp_set_num_threads(SEARCH_THREADS_PER_QUERY)
        self.index = index
        self.exact_search_below = exact_search_below
        """From this many chunks a dense index built here is an HNSW graph (``faiss.dense``)."""
        self._withheld = withheld
        """Rows never served (True), or None."""

    @classmethod
    def serving(cls, knowledge: EmbeddedKnowledge, exact_search_below: int) -> FaissBackend:
        """A backend serving ``knowledge``."""
        return cls(KnowledgeIndex.of(knowledge, exact_search_below), exact_search_below)

    def publish(self, knowledge: EmbeddedKnowledge) -> FaissBackend:
        """Serve ``knowledge`` (published on disk by the builder already, when it was built)."""
        return FaissBackend.serving(knowledge, self.exact_search_below)

    def withhold(self, chunk_ids: Collection[str]) -> FaissBackend:
        """The same index, never serving ``chunk_ids`` (nor what this one withholds)."""
        withheld = np.zeros(len(self.index), dtype=bool)
        if self._withheld is not None:
            withheld |= self._withheld
        row_of = self.index.knowledge.row_of
        withheld[[row_of[i] for i in chunk_ids if i in row_of]] = True
        withheld.flags.writeable = False
        return FaissBackend(self.index, self.exact_search_below, withheld)

    def rank(self, request: RetrievalRequest) -> list[ScoredChunk]:
        return retrieve(self.index, request, self._withheld)

    def count(self, directive: FilterDirective | None, access: AccessFilter | None) -> int:
        mask = served_mask(self.index.knowledge, directive, self._withheld)
        if mask is None:
            return len(self.index)
        if access is None:
            return int(mask.sum())
        chunks = [self.index.knowledge.chunks[row] for row in np.flatnonzero(mask)]
        return sum(conforming(chunks, None, access)[0])

    def values_of(self, attribute: str) -> frozenset[str]:
        return self.index.knowledge.columns.values_of(attribute)

    def readable_values(
        self, attributes: Sequence[str], access: AccessFilter
    ) -> dict[str, frozenset[str]]:
        return readable_values(self.index.knowledge, attributes, access, self._withheld)

    def has_attribute(self, attribute: str) -> bool:
        return attribute in self.index.knowledge.columns.attributes()

    def size(self) -> int:
        if self._withheld is None:
            return len(self.index)
        return len(self.index) - int(np.count_nonzero(self._withheld))

    def close(self) -> None:
        """Nothing to release: the index is memory-mapped and freed with the last reference."""
