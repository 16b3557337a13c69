"""``ContextRetrieval``: context-aware, filter-exact, scored retrieval for EnterpriseSearchPolicy.

Referenced from config.yml (``vector_store.type``: this class's dotted path)
and configured by the ``vector_store:`` block of endpoints.yml. Rasa's built-in FAISS store searches
with the last two messages glued together, ignores slots, has no filters, returns no scores and
ignores its threshold; this store reads the conversation and slots from ``tracker_state``, rewrites
the follow-up into a standalone query, filters exactly by slots and by what the user said, and
returns results scored by cosine relevance in [0, 1].

This class is only the Rasa-facing shell; the work happens in :mod:`engine.search`.
"""

from __future__ import annotations

import json
import math
import threading
from typing import Any

import structlog
from rasa.core.information_retrieval import (
    InformationRetrieval,
    InformationRetrievalException,
    SearchResult,
    SearchResultList,
)
from rasa.utils.endpoints import EndpointConfig

from rasa_context_retrieval.call_options import read_call_options
from rasa_context_retrieval.config import ConfigurationError, StoreConfig
from rasa_context_retrieval.conversation import Conversation
from rasa_context_retrieval.engine.search import KnowledgeSearch, SearchOutcome
from rasa_context_retrieval.result_metadata import prompt_metadata, tell_if_answers_are_dropped

logger = structlog.get_logger()


class ContextRetrieval(InformationRetrieval):
    """A drop-in ``InformationRetrieval`` for Rasa Pro's EnterpriseSearchPolicy."""

    def __init__(self, embeddings: Any) -> None:
        super().__init__(embeddings)
        self._search: KnowledgeSearch | None = None
        self._connected_with: str | None = None
        self._connecting = threading.Lock()

    def connect(self, config: EndpointConfig | None) -> None:
        """Validate the configuration and open the index; free when nothing changed.

        Rasa calls this before every search, so a repeat call with the same configuration only
        compares it with the last one (and, at most every ``refresh_seconds``, looks at the
        documents' modification times).
        """
        kwargs = dict(config.kwargs) if config is not None else {}
        key = json.dumps(kwargs, sort_keys=True, default=str)
        if self._search is not None and key == self._connected_with:
            self._search.refresh_if_due()
            return
        with self._connecting:
            if self._search is not None and key == self._connected_with:
                return
            store_config = StoreConfig.from_kwargs(kwargs)
            self._search = KnowledgeSearch.open(store_config, self.embeddings, _llm(store_config))
            self._connected_with = key
            logger.info(
                "context_retrieval.connect.ready",
                chunks=len(self._search.live),
                skipped_files=[str(problem) for problem in self._search.live.problems],
            )

    async def search(
        self, query: str, tracker_state: dict[str, Any], threshold: float = 0.0, **kwargs: Any
    ) -> SearchResultList:
        """Ranked, scored results for the conversation in ``tracker_state``.

        ``query`` (Rasa's last two messages) is used only when the tracker holds no user message.
        Index failures raise InformationRetrievalException, so Rasa answers with its
        internal-error pattern; zero results make Rasa answer with its cannot-handle pattern.
        Newer Rasa passes ``k=`` (results wanted, at most ``candidates``); other keywords are
        accepted and ignored (see :mod:`rasa_context_retrieval.call_options`).
        """
        options = read_call_options(kwargs)
        if self._search is None:
            raise InformationRetrievalException() from RuntimeError(
                "ContextRetrieval.search() was called before connect()"
            )
        conversation = Conversation.from_tracker_state(tracker_state, fallback_query=query or "")
        try:
            relevance_threshold = _threshold(threshold)
        except ValueError as error:
            logger.error("context_retrieval.search.bad_threshold", error=str(error))
            raise InformationRetrievalException() from error
        try:
            outcome = await self._search.search(
                conversation, relevance_threshold, top_k=options.top_k
            )
        except Exception as error:
            logger.error("context_retrieval.search.failed", error=str(error))
            raise InformationRetrievalException() from error
        return to_search_result_list(outcome, self._search.config)

    @property
    def engine(self) -> KnowledgeSearch:
        """The search engine behind this store (for the console and benchmarks)."""
        if self._search is None:
            raise RuntimeError("connect() first")
        return self._search


def to_search_result_list(outcome: SearchOutcome, config: StoreConfig) -> SearchResultList:
    """Rasa's result type: text, the metadata ``result_metadata`` keeps, score in [0, 1]."""
    choice = config.result_metadata
    results = [
        SearchResult(
            text=found.chunk.text,
            metadata=prompt_metadata(found.chunk, choice),
            score=found.relevance,
        )
        for found in outcome.results
    ]
    top = outcome.results[0].chunk if outcome.results else None
    tell_if_answers_are_dropped(choice, config.docs, top)
    return SearchResultList(results=results, metadata=outcome.explanation())


def _threshold(value: Any) -> float:
    """The threshold clamped to [0, 1]; a missing or non-numeric one means no threshold.

    Raises:
        ValueError: for NaN, which compares false with every score and so would silently
            return nothing.
    """
    try:
        number = float(value)
    except (TypeError, ValueError):
        return 0.0
    if math.isnan(number):
        raise ValueError(
            "the relevance threshold is NaN; set a number between 0 and 1 "
            "(EnterpriseSearchPolicy's vector_store.threshold)"
        )
    return min(max(number, 0.0), 1.0)


def _llm(config: StoreConfig) -> Any:
    """The LLM planner when any feature needs one (imported lazily: most users run without)."""
    if not config.llm:
        return None
    from rasa_context_retrieval.llm.client import LLMConfigError
    from rasa_context_retrieval.planning.llm_planner import build_llm_planner

    try:
        return build_llm_planner(config)
    except LLMConfigError as error:
        raise ConfigurationError(f"vector_store.llm: {error}") from None


__all__ = ["ConfigurationError", "ContextRetrieval"]
