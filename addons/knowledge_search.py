"""One search, end to end: conversation → plan → retrieve → scored results with an explanation.

This is the engine behind both the Rasa plugin and the console, so both run the same code path.
CPU work (embedding the query, FAISS, BM25) runs in a worker thread: Rasa serves many
conversations on one event loop and must not stall while one of them searches. Searches may run
concurrently; the index they read is replaced, never mutated, when documents change.
"""

from __future__ import annotations

import asyncio
import os
import threading
import time
from collections.abc import Mapping
from dataclasses import dataclass, field
from functools import lru_cache
from pathlib import Path
from typing import Any

import faiss
import numpy as np
import structlog
from langchain_core.structured_query import FilterDirective

from addons.config import StoreConfig
from addons.conversation import Conversation
from addons.filters.syntax import to_filter_syntax
from addons.knowledge.builder import IndexSettings, ensure_index
from addons.knowledge.embedding import embed_query, embedder_identity
from addons.knowledge.index import KnowledgeIndex
from addons.knowledge.loader import stat_signature
from addons.knowledge.model_integrity import is_bundled_model, verify_bundled_model
from addons.knowledge.models import ScoredChunk
from addons.plan import LLMPlanner, Planner, SearchPlan
from addons.retrieve.retriever import RetrievalRequest, retrieve

logger = structlog.get_logger()

QUERY_VECTOR_CACHE_SIZE = 1024
SEARCH_THREADS_PER_QUERY = 1
"""FAISS threads per search. Concurrency comes from many searches at once; letting each search
also fan out over OpenMP threads made a 100k-chunk search 5x slower on a busy 2-core machine
(bench/results/filtered_search.md). Set OMP_NUM_THREADS to override."""


@dataclass
class SearchOutcome:
    """The ranked results and everything needed to explain them."""

    results: list[ScoredChunk]
    plan: SearchPlan
    filter_relaxed: bool = False
    timings_ms: dict[str, float] = field(default_factory=dict)

    @property
    def filter_syntax(self) -> str | None:
        return _printed(self.plan.filter)

    def explanation(self) -> dict[str, Any]:
        """What goes into ``SearchResultList.metadata``."""
        plan = self.plan
        return {
            "query": plan.search_text,
            "standalone_query": plan.standalone_query,
            "filter": self.filter_syntax,
            "slot_filter": _printed(plan.slot_filter),
            "extracted_filter": _printed(plan.extracted_filter),
            "filter_relaxed": self.filter_relaxed,
            "paraphrases": list(plan.paraphrases),
            "notes": list(plan.notes),
            "total_results": len(self.results),
            "timings_ms": self.timings_ms,
        }


class KnowledgeSearch:
    """The knowledge index plus the planner, kept fresh while the assistant runs."""

    def __init__(
        self,
        config: StoreConfig,
        embeddings: Any,
        index: KnowledgeIndex,
        llm: LLMPlanner | None = None,
        backend: Any = None,
    ) -> None:
        self.config = config
        self.backend = backend
        """``MilvusBackend`` for ``backend: milvus``; None searches the local FAISS index."""
        self.embeddings = embeddings
        self.index = index
        self.planner = Planner(config, self.known_values, llm)
        self._settings = _index_settings(config)
        self._signature = stat_signature(config.docs)
        self._checked_at = time.monotonic()
        self._refreshing = threading.Lock()
        self._values_cache: tuple[KnowledgeIndex, Mapping[str, frozenset[str]]] | None = None
        self._embed_cached = lru_cache(maxsize=QUERY_VECTOR_CACHE_SIZE)(self._embed_uncached)

    @classmethod
    def open(
        cls,
        config: StoreConfig,
        embeddings: Any,
        llm: LLMPlanner | None = None,
        *,
        progress: bool = True,
        ingest: bool = False,
    ) -> KnowledgeSearch:
        """Load the published index, or build it when the documents changed.

        With ``backend: milvus`` the collection is synced too (always when ``ingest``, the
        console's ``index`` command; otherwise unless its ``ingest`` is ``console_only``).
        """
        if "OMP_NUM_THREADS" not in os.environ:
            faiss.omp_set_num_threads(SEARCH_THREADS_PER_QUERY)
        _check_embedding_model(embeddings)
        index = ensure_index(_index_settings(config), embeddings, progress=progress)
        backend = None
        if config.backend == "milvus" and config.milvus is not None:
            from addons.milvus.backend import MilvusBackend

            backend = MilvusBackend.open(config.milvus)
            backend.publish(index, embedder_identity(embeddings), force=ingest)
        search = cls(config, embeddings, index, llm, backend)
        search.warn_about_undeclared_attributes()
        return search

    def known_values(self) -> Mapping[str, frozenset[str]]:
        """Distinct string values per declared attribute in the current index."""
        index = self.index
        if self._values_cache is None or self._values_cache[0] is not index:
            values = {
                field.name: index.columns.values_of(field.name)
                for field in self.config.metadata_fields
            }
            self._values_cache = (index, values)
        return self._values_cache[1]

    def warn_about_undeclared_attributes(self) -> None:
        present = self.index.columns.attributes()
        for field_name in sorted(self.config.field_names - present):
            logger.warning(
                "knowledge_search.metadata_field.absent",
                attribute=field_name,
                event_info=f"no indexed document has the attribute '{field_name}'; "
                "filters on it will match nothing",
            )

    async def search(
        self, conversation: Conversation, threshold: float = 0.0, top_k: int | None = None
    ) -> SearchOutcome:
        """``top_k`` replaces the configured one for this search, at most the ranking depth."""
        started = time.perf_counter()
        plan = await self.planner.plan(conversation)
        planned = time.perf_counter()
        deepest = max(self.config.candidates, self.config.top_k)
        wanted = min(top_k, deepest) if top_k else self.config.top_k
        outcome = await asyncio.to_thread(self._retrieve, plan, threshold, wanted)
        outcome.timings_ms = {
            "plan": _ms(planned - started),
            "retrieve": _ms(time.perf_counter() - planned),
            "total": _ms(time.perf_counter() - started),
        }
        logger.debug("knowledge_search.search", **outcome.explanation())
        return outcome

    def _retrieve(self, plan: SearchPlan, threshold: float, top_k: int) -> SearchOutcome:
        index = self.index  # one consistent snapshot even if a refresh swaps it meanwhile
        results = self._run(index, plan, threshold, top_k)
        if results or plan.extracted_filter is None:
            return SearchOutcome(results, plan)
        relaxed = plan.without_extracted_filter("the filter from the message matched nothing")
        outcome = self._run(index, relaxed, threshold, top_k)
        return SearchOutcome(outcome, relaxed, filter_relaxed=True)

    def _run(
        self, index: KnowledgeIndex, plan: SearchPlan, threshold: float, top_k: int
    ) -> list[ScoredChunk]:
        texts = [plan.search_text, *plan.paraphrases]
        if not plan.search_text.strip():
            return []
        request = RetrievalRequest(
            texts=texts,
            vectors=[self._embed_cached(text) for text in texts],
            filter=plan.filter,
            top_k=min(top_k, plan.limit or top_k),
            threshold=threshold,
            candidates=max(self.config.candidates, top_k),
            hybrid=self.config.hybrid,
        )
        dense = self.backend.ranking(index) if self.backend is not None else None
        return retrieve(index, request, dense)

    def clear_query_cache(self) -> None:
        """Forget cached query vectors (benchmarks time a search with its embedding)."""
        self._embed_cached.cache_clear()

    def _embed_uncached(self, text: str) -> np.ndarray:
        vector = embed_query(self.embeddings, text)
        vector.setflags(write=False)
        return vector

    def refresh_if_due(self) -> None:
        """Pick up changed documents: a cheap stat check, then a rebuild in the background."""
        interval = self.config.refresh_seconds
        if interval <= 0 or time.monotonic() - self._checked_at < interval:
            return
        self._checked_at = time.monotonic()
        signature = stat_signature(self.config.docs)
        if signature == self._signature or not self._refreshing.acquire(blocking=False):
            return
        threading.Thread(target=self._rebuild, args=(signature,), daemon=True).start()

    def _rebuild(self, signature: tuple[tuple[str, int, int], ...]) -> None:
        try:
            index = ensure_index(self._settings, self.embeddings, progress=False)
            if self.backend is not None:
                self.backend.publish(index, embedder_identity(self.embeddings))
            self.index = index
            self._signature = signature
            logger.info("knowledge_search.refresh.done", chunks=len(self.index))
        except Exception as error:  # keep serving the previous index; report why
            logger.error("knowledge_search.refresh.failed", error=str(error))
        finally:
            self._refreshing.release()


def _check_embedding_model(embeddings: Any) -> None:
    """Refuse a corrupt copy of the bundled model before it embeds anything."""
    model = str(getattr(embeddings, "model", "") or "")
    if is_bundled_model(model):
        verify_bundled_model(Path(model))


def _index_settings(config: StoreConfig) -> IndexSettings:
    return IndexSettings(
        docs=config.docs,
        index_path=config.index_path,
        chunk_size=config.chunk_size,
        chunk_overlap=config.chunk_overlap,
        embedding_batch_size=config.embedding_batch_size,
        exact_search_below=config.exact_search_below,
    )


def _printed(directive: FilterDirective | None) -> str | None:
    """The filter in LangChain's syntax for the explanation; never fails the search.

    Some values have no spelling in that syntax (an infinite number, a string holding both kinds
    of quote, e.g. from a slot); those filters are shown as the IR's repr instead.
    """
    try:
        return to_filter_syntax(directive)
    except ValueError:
        return repr(directive)


def _ms(seconds: float) -> float:
    return round(seconds * 1000, 2)
