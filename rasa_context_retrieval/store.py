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
from contextlib import AbstractContextManager, nullcontext
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
from rasa_context_retrieval.engine.opening import OpeningSearch
from rasa_context_retrieval.engine.search import KnowledgeSearch, SearchOutcome
from rasa_context_retrieval.result_metadata import prompt_metadata, tell_if_answers_are_dropped
from rasa_context_retrieval.workers import off_loop

logger = structlog.get_logger()


class ContextRetrieval(InformationRetrieval):
    """A drop-in ``InformationRetrieval`` for Rasa Pro's EnterpriseSearchPolicy."""

    def __init__(self, embeddings: Any) -> None:
        super().__init__(embeddings)
        self._opening: OpeningSearch | None = None
        self._config: StoreConfig | None = None
        self._connected_with: str | None = None
        self._connected_block: Any = None
        """A copy of the block last connected with (Rasa may reuse and change its dict)."""
        self._connecting = threading.Lock()
        self._kept_llm: Any = None
        """The ``planning.llm_planner.KeptLLM`` once a block has an ``llm:`` (imported lazily)."""
        self._llm_planner_in_use: Any = None
        """The LLM planner of the search last connected; None without one."""

    def connect(self, config: EndpointConfig | None) -> None:
        """Validate the configuration and start opening the index; returns at once.

        The configuration is checked here, so a mistake still fails at start-up; loading or
        building the index runs on a thread (``engine.opening``), and searches wait for it up to
        ``startup_wait_seconds``. Rasa calls this before every search, so a repeat call with the
        same configuration only compares it with the last one (and, at most every
        ``refresh_seconds``, looks at the documents). After a failed open it tries again.
        """
        kwargs = dict(config.kwargs) if config is not None else {}
        opening = self._opening
        if opening is not None and self._connected_to(kwargs) and not opening.failed:
            if (opened := opening.opened) is not None:
                opened.refresh_if_due()
            return
        with self._connecting:
            opening = self._opening  # another caller may have started an open meanwhile
            if opening is not None and self._connected_to(kwargs) and not opening.failed:
                return
            store_config = StoreConfig.from_kwargs(kwargs)
            llm = self._llm_planner(store_config)
            self._opening = OpeningSearch(lambda: _open(store_config, self.embeddings, llm))
            self._llm_planner_in_use = llm
            self._config, self._connected_with = store_config, _block_key(kwargs)
            self._connected_block = json.loads(self._connected_with)

    def _llm_planner(self, config: StoreConfig) -> Any:
        """The LLM planner when any feature needs one, on the LLM kept while the ``llm:``
        block stays the same (its module is imported lazily: most users run without)."""
        if not config.llm and self._kept_llm is None:
            return None
        from rasa_context_retrieval.llm.client import LLMConfigError
        from rasa_context_retrieval.planning.llm_planner import KeptLLM

        if self._kept_llm is None:
            self._kept_llm = KeptLLM()
        try:
            return self._kept_llm.planner(config)
        except LLMConfigError as error:
            raise ConfigurationError(f"vector_store.llm: {error}") from None

    def _connected_to(self, kwargs: dict[str, Any]) -> bool:
        """Whether ``kwargs`` is the block last connected with. Rasa calls ``connect()`` on its
        event loop before every search, 200 at once in a burst: a dict comparison settles it
        in microseconds, and only a block that differs from the copy is serialised to compare
        (a tuple where YAML gives a list, a value that is not JSON)."""
        return kwargs == self._connected_block or _block_key(kwargs) == self._connected_with

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
        with self._llm_held():
            return await self._search(query, tracker_state, threshold, options.top_k)

    def _llm_held(self) -> AbstractContextManager[None]:
        """Hold the LLM of the search about to run for all of it: another conversation's
        ``connect()`` may change the ``llm:`` block meanwhile, and the client it replaces is
        closed only once the searches that started on it are done."""
        planner = self._llm_planner_in_use
        return planner.in_use() if planner is not None else nullcontext()

    async def _search(
        self, query: str, tracker_state: dict[str, Any], threshold: float, top_k: int | None
    ) -> SearchResultList:
        search = await self._open_search()
        if search is None:
            return SearchResultList(results=[], metadata={})
        conversation = await off_loop(  # a tracker may be long: read it off the event loop
            Conversation.from_tracker_state,
            tracker_state,
            query or "",
            search.config.history.caps(),
        )
        try:
            relevance_threshold = _threshold(threshold)
        except ValueError as error:
            logger.error("context_retrieval.search.bad_threshold", error=str(error))
            raise InformationRetrievalException() from error
        try:
            outcome = await search.search(conversation, relevance_threshold, top_k=top_k)
        except Exception as error:
            logger.error("context_retrieval.search.failed", error=str(error))
            raise InformationRetrievalException() from error
        return to_search_result_list(outcome, search.config)

    async def _open_search(self) -> KnowledgeSearch | None:
        """The open search; None (with one log line) when it is still opening past the bound."""
        if self._opening is None or self._config is None:
            raise InformationRetrievalException() from RuntimeError(
                "ContextRetrieval.search() was called before connect()"
            )
        waited = self._config.startup_wait_seconds
        try:
            search = await self._opening.wait(waited)
        except Exception as error:
            logger.error("context_retrieval.search.index_failed", error=str(error))
            raise InformationRetrievalException() from error
        if search is None:
            logger.warning(
                "context_retrieval.search.index_not_ready",
                waited_seconds=waited,
                event_info=f"the knowledge index is still being built after {waited:g}s "
                "(startup_wait_seconds); answering with no results. Build it before starting "
                "the assistant with `rasa-context-retrieval index`",
            )
        return search

    @property
    def engine(self) -> KnowledgeSearch:
        """The search engine behind this store, once open (the console and benchmarks wait)."""
        if self._opening is None:
            raise RuntimeError("connect() first")
        return self._opening.result()


def _open(config: StoreConfig, embeddings: Any, llm: Any) -> KnowledgeSearch:
    """Open the search (on the opening thread) and say how it went."""
    try:
        search = KnowledgeSearch.open(config, embeddings, llm)
    except Exception as error:
        logger.error("context_retrieval.connect.failed", error=str(error))
        raise
    logger.info(
        "context_retrieval.connect.ready",
        chunks=len(search.live),
        skipped_files=[str(problem) for problem in search.live.problems],
    )
    return search


def _block_key(kwargs: dict[str, Any]) -> str:
    """The block as canonical JSON: two blocks with the same key configure the same store."""
    return json.dumps(kwargs, sort_keys=True, default=str)


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


__all__ = ["ConfigurationError", "ContextRetrieval"]
