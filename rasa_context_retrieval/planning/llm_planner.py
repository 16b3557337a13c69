"""The LLM side of planning, assembled from the ``vector_store:`` config.

``plan.Planner`` asks for four things (the ``LLMPlanner`` protocol): a rewrite, a
structured query for a standalone query, both in one call, and paraphrases. This module wires
them to one ``RetrievalLLM`` built from the ``llm:`` block; the heuristic rewrite is the fallback
whenever the LLM is slow, failing or talking nonsense.
"""

from __future__ import annotations

import json
from collections.abc import Collection, Mapping
from contextlib import AbstractContextManager
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

    def in_use(self) -> AbstractContextManager[None]:
        return self._llm.in_use()


def build_llm_planner(config: StoreConfig, llm: RetrievalLLM | None = None) -> LLMQueryPlanner:
    """Build the planner on ``llm``, or on a new one for ``config``'s ``llm:`` block; raises
    ``LLMConfigError`` (a ValueError) for a bad block."""
    llm_config = _client_config(config)
    if llm is None:
        llm = RetrievalLLM.from_config(llm_config, queue_wait=config.llm_queue_wait_seconds)
    timeout = time_budget(llm_config)
    constructor = LLMQueryConstructor(llm, config.metadata_fields, timeout=timeout)
    return LLMQueryPlanner(llm, constructor, timeout=timeout)


class KeptLLM:
    """A store's one ``RetrievalLLM``, kept for as long as its ``llm:`` block stays the same.

    Rasa calls ``connect()`` before every search, and a connect after a failed open (an
    unreachable embedding service or Milvus: every search, until it opens) or with a changed
    ``vector_store:`` block plans afresh. Building the LLM builds an HTTP client (a TLS context,
    about 30 ms of CPU, and a pool of connections), so a new one is built only when the
    ``llm:`` block or the queue wait changes. The one it replaces is closed then, or, while
    other conversations' searches still wait for its answers, once the last of them is done
    (``RetrievalLLM.in_use``): their searches were planned on it and complete on it.
    """

    def __init__(self) -> None:
        self._llm: RetrievalLLM | None = None
        self._key: str | None = None

    def planner(self, config: StoreConfig) -> LLMQueryPlanner | None:
        """The planner for ``config`` on the kept LLM; None without an ``llm:`` block.

        Raises:
            LLMConfigError: the ``llm:`` block cannot be built (the kept LLM stays).
        """
        if not config.llm:
            self.close()
            return None
        key = json.dumps(
            [_client_config(config), config.llm_queue_wait_seconds], sort_keys=True, default=str
        )
        if self._llm is None or key != self._key:
            fresh = RetrievalLLM.from_config(
                _client_config(config), queue_wait=config.llm_queue_wait_seconds
            )
            self.close()
            self._llm, self._key = fresh, key
        return build_llm_planner(config, self._llm)

    def close(self) -> None:
        """Close the kept LLM's HTTP client, if there is one, once no search uses it."""
        if self._llm is not None:
            self._llm.close()
        self._llm, self._key = None, None


def _client_config(config: StoreConfig) -> dict[str, Any]:
    return config.llm.client_config() if config.llm else {}


def time_budget(llm_config: Mapping[str, Any]) -> float:
    """Wall-time budget of one LLM step: the block's ``timeout`` when set, else the default.

    Rasa applies ``timeout`` per HTTP attempt; here it also bounds the whole step, retries
    included, so that it is the most a step can add to an answer.
    """
    timeout = llm_config.get("timeout")
    if isinstance(timeout, bool) or not isinstance(timeout, int | float) or timeout <= 0:
        return DEFAULT_TIMEOUT_SECONDS
    return float(timeout)
