"""The seam between the search engine and where chunks live: one protocol, one class per backend.

The engine (``engine.search``) plans a search, hands the backend a ``RetrievalRequest`` and
checks whatever comes back against the filter (``retrieve.conformance``); it never learns whether
FAISS in this process (``faiss.backend``) or a Milvus collection (``milvus.backend``)
answered. The live index (``engine.live_index``) decides which backend serves and swaps it when
the documents change. Every backend is given the same input, ingestion's ``EmbeddedKnowledge``
(``ingestion.knowledge``), so no backend reads another backend's objects.
"""

from __future__ import annotations

from collections.abc import Collection, Sequence
from typing import Protocol

from langchain_core.structured_query import FilterDirective

from rasa_context_retrieval.access.entitlements import AccessFilter
from rasa_context_retrieval.ingestion.knowledge import EmbeddedKnowledge
from rasa_context_retrieval.knowledge.models import ScoredChunk
from rasa_context_retrieval.retrieve.request import RetrievalRequest


class SearchBackend(Protocol):
    """Filtered, scored rankings over one knowledge base, and what its metadata holds."""

    def publish(self, knowledge: EmbeddedKnowledge) -> SearchBackend:
        """A backend serving ``knowledge`` (the chunks and vectors ingestion made); this one
        keeps serving what it served, so searches under way finish on one consistent view."""
        ...

    def withhold(self, chunk_ids: Collection[str]) -> SearchBackend:
        """A backend that never serves ``chunk_ids`` (a refresh saw their documents change),
        until a later ``publish`` serves them as the documents say now. Takes effect before it
        returns, for every searcher of this knowledge base (on Milvus, every replica too)."""
        ...

    def rank(self, request: RetrievalRequest) -> list[ScoredChunk]:
        """The best ``request.top_k`` chunks ``request.filter`` allows, fused over every query
        vector (and BM25 when hybrid), each scored by its cosine relevance to the first vector
        clipped to [0, 1], none below ``request.threshold``."""
        ...

    def count(self, directive: FilterDirective | None, access: AccessFilter | None) -> int:
        """Chunks ``directive`` admits whose metadata ``access`` admits exactly."""
        ...

    def values_of(self, attribute: str) -> frozenset[str]:
        """Distinct string values of ``attribute`` as written (trimmed), list members included."""
        ...

    def readable_values(
        self, attributes: Sequence[str], access: AccessFilter
    ) -> dict[str, frozenset[str]]:
        """``values_of`` each attribute over only the chunks ``access`` admits exactly."""
        ...

    def has_attribute(self, attribute: str) -> bool:
        """Whether some chunk has ``attribute``."""
        ...

    def size(self) -> int:
        """Chunks served."""
        ...

    def close(self) -> None: ...
