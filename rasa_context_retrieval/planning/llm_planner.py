"""The LLM side of planning, assembled from the ``vector_store:`` config.

``plan.Planner`` asks for four things (the ``LLMPlanner`` protocol): a rewrite, a
structured query for a standalone query, both in one call, and paraphrases. This module wires
them to one ``RetrievalLLM`` built from the ``llm:`` block; the heuristic rewrite is the fallback
whenever the LLM is slow, failing or talking nonsense.
"""

from __future__ import annotations

from collections.abc import Collection, Mapping
from typing import Any

from langchain_core.structured_query import StructuredQuery

from rasa_context_retrieval.config import StoreConfig
from rasa_context_retrieval.conversation import Conversation
from rasa_context_retrieval.llm.client import RetrievalLLM
from rasa_context_retrieval.llm_query.constructor import LLMQueryConstructor, ValueSource
from rasa_context_retrieval.rewrite.heuristic import standalone_query as heuristic_standalone_query
from rasa_context_retrieval.rewrite.llm_rewrite import (
    DEFAULT_TIMEOUT_SECONDS,
    Fallback,
    LLMRewriteAndFilter,
    LLMRewriter,
    RewriteLLM,
)
from rasa_context_retrieval.rewrite.multi_query import paraphrases


class LLMQueryPlanner:
    """Rewrite, self-query and paraphrases on one LLM (implements ``plan.LLMPlanner``)."""

    def __init__(
        self,
        llm: RetrievalLLM,
        constructor: LLMQueryConstructor,
        fallback: Fallback = heuristic_standalone_query,
        *,
        timeout: float = DEFAULT_TIMEOUT_SECONDS,
    ) -> None:
        self._llm = llm
        self._constructor = constructor
        self._timeout = timeout
        rewrite_llm = RewriteLLM(llm, fallback, timeout)
        self._rewriter = LLMRewriter(rewrite_llm)
        self._combined = LLMRewriteAndFilter(constructor, rewrite_llm)

    async def rewrite(self, conversation: Conversation) -> str:
        return await self._rewriter.standalone_query(conversation)

    def use_value_catalogue(self, known_values: ValueSource) -> None:
        self._constructor.use_value_catalogue(known_values)

    async def structured_query(
        self, standalone: str, known_values: Mapping[str, Collection[str]] | None = None
    ) -> StructuredQuery | None:
        return await self._constructor.construct(standalone, known_values)

    async def rewrite_and_structure(
        self, conversation: Conversation, known_values: Mapping[str, Collection[str]] | None = None
    ) -> tuple[str, StructuredQuery | None]:
        return await self._combined.rewrite_and_structure(conversation, known_values)

    async def paraphrases(self, standalone: str, count: int) -> list[str]:
        return await paraphrases(self._llm, standalone, count, timeout=self._timeout)


def build_llm_planner(config: StoreConfig) -> LLMQueryPlanner:
    """Build the planner; raises ``LLMConfigError`` (a ValueError) for a bad ``llm:`` block."""
    llm_config = config.llm.client_config() if config.llm else {}
    llm = RetrievalLLM.from_config(llm_config, queue_wait=config.llm_queue_wait_seconds)
    timeout = time_budget(llm_config)
    constructor = LLMQueryConstructor(llm, config.metadata_fields, timeout=timeout)
    return LLMQueryPlanner(llm, constructor, timeout=timeout)


def time_budget(llm_config: Mapping[str, Any]) -> float:
    """Wall-time budget of one LLM step: the block's ``timeout`` when set, else the default.

    Rasa applies ``timeout`` per HTTP attempt; here it also bounds the whole step, retries
    included, so that it is the most a step can add to an answer.
    """
    timeout = llm_config.get("timeout")
    if isinstance(timeout, bool) or not isinstance(timeout, int | float) or timeout <= 0:
        return DEFAULT_TIMEOUT_SECONDS
    return float(timeout)
