"""From a conversation to a search plan: the standalone query, the filter and the limit.

The plan is where access control meets the user's words: the slot filter comes from the slots
only, the extracted filter from what the user typed (rules or an LLM), and the final filter is
always ``and(slot filter, extracted filter)``. Nothing the user types can widen, replace or
remove the slot filter, because the extracted part can only ever be added as another conjunct.
"""

from __future__ import annotations

import json
from collections.abc import Callable, Mapping
from dataclasses import dataclass, field, replace
from typing import Any, Protocol

import structlog
from langchain_core.structured_query import FilterDirective, StructuredQuery

from addons.config import StoreConfig
from addons.conversation import Conversation
from addons.filters.absence import absence_notes
from addons.filters.slot_filters import slot_filter
from addons.filters.syntax import conjoin
from addons.rewrite.heuristic import RewriteMode, standalone_query
from addons.self_query.rules import RuleQueryConstructor

logger = structlog.get_logger()


@dataclass(frozen=True)
class SearchPlan:
    """What one search does."""

    standalone_query: str
    """The follow-up rewritten to stand alone (what the user sees as the query)."""
    search_text: str
    """The text that is embedded and matched: the standalone query minus filter words, if any."""
    slot_filter: FilterDirective | None = None
    extracted_filter: FilterDirective | None = None
    limit: int | None = None
    paraphrases: tuple[str, ...] = ()
    notes: tuple[str, ...] = field(default_factory=tuple)

    @property
    def filter(self) -> FilterDirective | None:
        """The final filter: the slot filter AND the extracted one."""
        return conjoin(self.slot_filter, self.extracted_filter)

    def without_extracted_filter(self, note: str) -> SearchPlan:
        return replace(
            self,
            search_text=self.standalone_query,
            extracted_filter=None,
            notes=(*self.notes, note),
        )


def _filterable(slots: Mapping[str, Any]) -> dict[str, Any]:
    """Slot values as a filter can compare them; nothing here may loosen the restriction.

    A value that is neither a scalar nor a list of scalars (a dict, say) is kept as its JSON
    text: it then restricts to documents carrying that exact text, i.e. in practice to none,
    instead of being dropped (which would widen access) or failing the search.
    """
    return {name: _comparable(value) for name, value in slots.items()}


def _comparable(value: Any) -> Any:
    if isinstance(value, list | tuple | set | frozenset):
        # One level only: a nested list is not a scalar a document could carry, so it becomes
        # JSON text like a dict does (restricting to nothing) instead of failing the search.
        return [_scalar_or_json(item) for item in value if item is not None]
    return _scalar_or_json(value)


def _scalar_or_json(value: Any) -> Any:
    if isinstance(value, str | int | float | bool):
        return value
    return json.dumps(value, sort_keys=True, default=str)


class LLMPlanner(Protocol):
    """The LLM side of planning (rewrite, self-query, paraphrases); see addons/llm."""

    async def rewrite(self, conversation: Conversation) -> str: ...

    async def structured_query(self, standalone: str) -> StructuredQuery | None: ...

    async def rewrite_and_structure(
        self, conversation: Conversation
    ) -> tuple[str, StructuredQuery | None]: ...

    async def paraphrases(self, standalone: str, count: int) -> list[str]: ...


class Planner:
    """Turns a conversation into a SearchPlan according to the configuration."""

    def __init__(
        self,
        config: StoreConfig,
        known_values: Callable[[], Mapping[str, frozenset[str]]],
        llm: LLMPlanner | None = None,
    ) -> None:
        self._config = config
        self._known_values = known_values
        self._llm = llm
        self._rules: RuleQueryConstructor | None = None
        self._rules_values: Mapping[str, frozenset[str]] | None = None

    async def plan(self, conversation: Conversation) -> SearchPlan:
        standalone, structured = await self._standalone_and_structured(conversation)
        slots = slot_filter(_filterable(conversation.filled_slots), self._config.slot_filters)
        search_text = standalone
        extracted = limit = None
        if structured is not None:
            extracted, limit = structured.filter, structured.limit
            if structured.query.strip():
                search_text = structured.query.strip()
        paraphrases: tuple[str, ...] = ()
        if self._config.multi_query and self._llm is not None and standalone:
            paraphrases = tuple(await self._llm.paraphrases(standalone, self._config.multi_query))
        notes = absence_notes(extracted, self._config.metadata_fields)
        return SearchPlan(standalone, search_text, slots, extracted, limit, paraphrases, notes)

    async def _standalone_and_structured(
        self, conversation: Conversation
    ) -> tuple[str, StructuredQuery | None]:
        config, llm = self._config, self._llm
        if llm is not None and config.rewrite == "llm" and config.self_query == "llm":
            return await llm.rewrite_and_structure(conversation)
        if llm is not None and config.rewrite == "llm":
            standalone = await llm.rewrite(conversation)
        elif config.rewrite == "off":
            standalone = conversation.latest_user_text
        else:
            standalone = standalone_query(conversation, RewriteMode(config.rewrite_heuristic))
        if config.self_query == "rules":
            return standalone, self._rule_constructor().construct(standalone)
        if config.self_query == "llm" and llm is not None:
            return standalone, await llm.structured_query(standalone)
        return standalone, None

    def _rule_constructor(self) -> RuleQueryConstructor:
        """Built once per set of known values (they change only when the index does)."""
        values = self._known_values()
        if self._rules is None or values is not self._rules_values:
            kwargs: dict[str, Any] = {}
            if self._config.strip_filter_words is not None:
                kwargs["strip_filter_words"] = self._config.strip_filter_words
            self._rules = RuleQueryConstructor(self._config.metadata_fields, values, **kwargs)
            self._rules_values = values
        return self._rules
