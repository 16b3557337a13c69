"""LLM query rewriting: a follow-up becomes a standalone search query, within a time budget.

"And does it work on Android?" finds nothing alone; the subject is two turns back. One LLM call
sees the recent turns, the filled slots and the latest message and writes the query a search
engine needs. It is an optional improvement over the heuristic rewrite, never a dependency:

* no history, nothing to resolve: the LLM is not called;
* timeout (default 2 s), LLM error or an unusable answer: the heuristic's query is used;
* the same history + slots is never sent twice: answers are kept in a small LRU cache keyed by
  the exact prompt (failures are not cached, so an outage is retried on the next message).

When self-query runs on the LLM as well, ``LLMRewriteAndFilter`` asks for both in ONE call: the
query-constructor prompt (schema, allowed values, examples) with a conversation as its input
and LangChain's JSON answer ``{"query": <standalone query>, "filter": <self-query syntax>}``,
parsed by the same lark grammar and validated by the same rules as ``LLMQueryConstructor``. Two
sequential round trips (rewrite, then filter the rewrite) would double the latency the user
waits for; bench/results/llm.md has the measurements.
"""

from __future__ import annotations

import functools
import re
from collections.abc import Callable, Collection, Mapping
from dataclasses import dataclass
from typing import Any, TypeVar

import structlog
from cachetools import LRUCache
from langchain_core.prompts import BasePromptTemplate
from langchain_core.structured_query import StructuredQuery

from rasa_context_retrieval.conversation import Conversation, Turn
from rasa_context_retrieval.llm.client import LLMUnavailable, RetrievalLLM
from rasa_context_retrieval.llm_query.constructor import (
    CATALOGUES_KEPT,
    Catalogue,
    LLMQueryConstructor,
    conversation_schema_prompt,
    dated,
)
from rasa_context_retrieval.workers import off_loop

logger = structlog.get_logger()

Fallback = Callable[[Conversation], str]
Answer = TypeVar("Answer")

DEFAULT_TIMEOUT_SECONDS = 2.0
DEFAULT_CACHE_SIZE = 512
MAX_HISTORY_TURNS = 6
"""Older turns rarely hold the subject of a follow-up and make the prompt slower."""
MAX_TURN_CHARS = 600
"""A long bot answer is cut: its first sentences name the subject, the rest is detail."""
MAX_QUERY_CHARS = 300
"""A longer "query" is an answer or an essay, not a search query."""

REWRITE_PROMPT = """\
Rewrite the latest user message of a conversation with a customer-support assistant into ONE \
standalone search query for a knowledge base ({document_contents}).
- Resolve pronouns and follow-ups ("it", "that plan", "and on Android?") using the earlier turns \
and the known facts.
- Keep the user's language and wording; add only what the conversation makes explicit.
- Do not answer the question. Reply with the search query only, on a single line.

{conversation}

Standalone search query:"""

_ANSWER_PREFIX = re.compile(r"^(standalone\s+)?(search\s+)?query\s*:\s*", re.IGNORECASE)
_WRAPPING = "\"'`“”‘’ "

# Conversation-shaped examples for the combined call: (turns, slots, expected answer).
CONVERSATION_EXAMPLES: tuple[tuple[tuple[Turn, ...], dict[str, Any], dict[str, Any]], ...] = (
    (
        (
            Turn("user", "What does the premium plan cost?"),
            Turn("bot", "Premium costs 9.99 a month."),
            Turn("user", "does it work on android?"),
        ),
        {},
        {
            "query": "Does the premium plan work on Android?",
            "filter": 'and(eq("plan", "premium"), eq("platform", "android"))',
        },
    ),
    (
        (
            Turn("user", "How do refunds work?"),
            Turn("bot", "You can ask for a refund within 14 days of a payment."),
            Turn("user", "and how long until I get the money?"),
        ),
        {"region": "eu"},
        {"query": "How long does a refund take to arrive?", "filter": "NO_FILTER"},
    ),
    (
        (Turn("user", "Which plans cost less than 5 dollars a month?"),),
        {},
        {
            "query": "Which plans cost less than 5 dollars a month?",
            "filter": 'lt("price_per_month", 5)',
        },
    ),
)


def render_conversation(conversation: Conversation) -> str:
    """The conversation as the prompts show it: known facts, recent turns, latest message."""
    lines = []
    if conversation.filled_slots:
        facts = ", ".join(
            f"{name} = {_one_line(str(value))}"
            for name, value in sorted(conversation.filled_slots.items())
        )
        lines.append(f"Known facts: {facts}")
    history = conversation.history[-MAX_HISTORY_TURNS:]
    if history:
        lines.append("Conversation:")
        lines.extend(f"{_speaker(turn)}: {_one_line(turn.text)}" for turn in history)
    lines.append(f"Latest message: {_one_line(conversation.latest_user_text)}")
    return "\n".join(lines)


def clean_query(answer: str) -> str:
    """The search query in an LLM answer, or ``""`` when the answer is not a usable query."""
    line = next((line for line in answer.splitlines() if line.strip(" `")), "")
    query = " ".join(_ANSWER_PREFIX.sub("", line.strip()).strip(_WRAPPING).split())
    return query if len(query) <= MAX_QUERY_CHARS else ""


@dataclass(frozen=True)
class RewriteLLM:
    """The LLM a rewrite asks, the seconds it may take, and the heuristic rewrite that answers
    instead when it gives no usable answer in time (both rewrite steps share one)."""

    llm: RetrievalLLM
    fallback: Fallback
    timeout: float = DEFAULT_TIMEOUT_SECONDS

    async def ask(self, prompt: str, parse: Callable[[str], Answer]) -> Answer:
        """The parsed answer; raises ``LLMUnavailable`` past the timeout or on an LLM error."""
        return await self.llm.complete_and_parse(prompt, parse, timeout=self.timeout)

    async def heuristic(self, conversation: Conversation) -> str:
        """The heuristic's query, computed off the event loop."""
        return await off_loop(self.fallback, conversation)

    async def fall_back(self, conversation: Conversation, reason: str, event: str) -> str:
        """The heuristic's query, with a warning ``event`` saying why the LLM's was not used."""
        query = await self.heuristic(conversation)
        logger.warning(event, reason=reason, standalone_query=query)
        return query


class LLMRewriter:
    """Standalone search queries from an LLM, falling back to a heuristic rewrite."""

    def __init__(
        self,
        llm: RewriteLLM,
        *,
        document_contents: str = "help-centre articles",
        cache_size: int = DEFAULT_CACHE_SIZE,
    ) -> None:
        self._llm = llm
        self._document_contents = document_contents
        self._cache: LRUCache[str, str] = LRUCache(maxsize=cache_size)

    async def standalone_query(self, conversation: Conversation) -> str:
        if not conversation.history:
            return await self._llm.heuristic(conversation)
        prompt = await off_loop(
            REWRITE_PROMPT.format,
            document_contents=self._document_contents,
            conversation=render_conversation(conversation),
        )
        if prompt in self._cache:
            return self._cache[prompt]
        try:
            query = await self._llm.ask(prompt, clean_query)
        except LLMUnavailable as error:
            return await self._llm.fall_back(conversation, str(error), "rewrite.llm.fallback")
        if not query:
            return await self._llm.fall_back(
                conversation, "the answer is not a search query", "rewrite.llm.fallback"
            )
        self._cache[prompt] = query
        logger.debug("rewrite.llm.done", standalone_query=query)
        return query


class LLMRewriteAndFilter:
    """The standalone query and the self-query filter from one LLM call."""

    def __init__(
        self,
        constructor: LLMQueryConstructor,
        llm: RewriteLLM,
        *,
        cache_size: int = DEFAULT_CACHE_SIZE,
    ) -> None:
        self._constructor = constructor
        self._llm = llm
        self._cache: LRUCache[str, tuple[str, StructuredQuery | None]] = LRUCache(
            maxsize=cache_size
        )
        self._prompts: LRUCache[int, tuple[Catalogue, BasePromptTemplate]] = LRUCache(
            maxsize=CATALOGUES_KEPT
        )

    def _prompt_for(self, catalogue: Catalogue) -> BasePromptTemplate:
        """The conversation prompt on ``catalogue`` (built once per catalogue)."""
        kept = self._prompts.get(id(catalogue))
        if kept is not None and kept[0] is catalogue:
            return kept[1]
        constructor = self._constructor
        prompt = constructor.prompt(
            [
                (render_conversation(Conversation(turns, slots)), answer)
                for turns, slots, answer in CONVERSATION_EXAMPLES
            ],
            schema_prompt=conversation_schema_prompt(enable_limit=constructor.enable_limit),
            fields=catalogue.fields,
        )
        self._prompts[id(catalogue)] = (catalogue, prompt)  # kept: its id stays unique
        return prompt

    async def rewrite_and_structure(
        self, conversation: Conversation, known_values: Mapping[str, Collection[str]] | None = None
    ) -> tuple[str, StructuredQuery | None]:
        """``(standalone query, structured query or None)``; never raises.

        ``known_values`` are the values this search may offer (``LLMQueryConstructor.catalogue``).
        Without history the message already stands alone: only the filter is asked for (still
        one call). On failure the heuristic query is returned with no LLM filter.
        """
        if not conversation.history:
            standalone = await self._llm.heuristic(conversation)
            return standalone, await self._constructor.construct(standalone, known_values)
        catalogue, prompt = await off_loop(self._catalogue_and_prompt, conversation, known_values)
        if prompt in self._cache:
            return self._cache[prompt]
        try:
            structured = await self._llm.ask(
                prompt, functools.partial(self._constructor.parse_answer, catalogue=catalogue)
            )
        except LLMUnavailable as error:
            return await self._fall_back(conversation, str(error))
        if structured is None:
            return await self._fall_back(conversation, "unparseable answer")
        standalone = clean_query(structured.query) or await self._llm.heuristic(conversation)
        result = (
            standalone,
            StructuredQuery(query=standalone, filter=structured.filter, limit=structured.limit),
        )
        self._cache[prompt] = result
        logger.debug("rewrite.llm_combined.done", standalone_query=standalone)
        return result

    def _catalogue_and_prompt(
        self, conversation: Conversation, known_values: Mapping[str, Collection[str]] | None
    ) -> tuple[Catalogue, str]:
        """Built on a search worker: the prompt holds the conversation and the catalogue."""
        catalogue = self._constructor.catalogue(known_values)
        prompt = dated(
            self._prompt_for(catalogue).format(query=render_conversation(conversation)),
            self._constructor.today(),
        )
        return catalogue, prompt

    async def _fall_back(self, conversation: Conversation, reason: str) -> tuple[str, None]:
        """The heuristic's query and no LLM filter."""
        return await self._llm.fall_back(
            conversation, reason, "rewrite.llm_combined.fallback"
        ), None


def _speaker(turn: Turn) -> str:
    return "USER" if turn.role == "user" else "AI"


def _one_line(text: str) -> str:
    flat = " ".join(text.split())
    return flat if len(flat) <= MAX_TURN_CHARS else flat[:MAX_TURN_CHARS].rstrip() + " …"
