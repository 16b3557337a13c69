"""From a conversation to a search plan: the standalone query, the filter and the limit.

The plan is where access control meets the user's words. The access filter comes from trusted
channel metadata only, the static filter from the configuration, the slot filter from the slots,
and the extracted filter from what the user typed (rules or an LLM). The final filter is always
``and(access, static, slot, extracted)``: nothing the user types can widen, replace or remove
the other parts, because the extracted part can only ever be added as another conjunct, and only
the extracted part is ever relaxed.
"""

from __future__ import annotations

import copy
import json
import threading
from collections import OrderedDict
from collections.abc import Mapping
from contextlib import AbstractContextManager
from dataclasses import dataclass, field, replace
from typing import Any, Protocol

import structlog
from langchain_core.structured_query import FilterDirective, StructuredQuery

from rasa_context_retrieval.access.entitlements import AccessFilter
from rasa_context_retrieval.config import ContextWeightsBlock, StoreConfig
from rasa_context_retrieval.conversation import Conversation
from rasa_context_retrieval.filters.absence import absent_means_all
from rasa_context_retrieval.filters.slot_filters import slot_filter
from rasa_context_retrieval.planning.carried_filters import conversation_filters
from rasa_context_retrieval.planning.search_filter import SearchFilter
from rasa_context_retrieval.rewrite.context import (
    DEFAULT_WEIGHTS,
    QUOTED_LAST_BOT_WEIGHT,
    TURNS_VIEW_WEIGHTS,
    ContextModel,
    ContextWeights,
    QueryText,
    QueryView,
    answered_question,
    previous_answer,
    query_views,
    restated_answer,
    with_quoted_answer,
)
from rasa_context_retrieval.rewrite.heuristic import RewriteMode, WordRarity, standalone_query
from rasa_context_retrieval.self_query.common_words import load_word_frequencies
from rasa_context_retrieval.self_query.rules import RuleQueryConstructor
from rasa_context_retrieval.workers import off_loop

logger = structlog.get_logger()

RULE_VOCABULARIES_KEPT = 64
"""Rule constructors kept, one per distinct value catalogue (one per audience, see
``KnowledgeSearch.known_values``); as many as the live index keeps value sets."""


class ValueCatalogue(Protocol):
    """The values the index holds per attribute, among the documents ``access`` admits (all
    documents without one); the same mapping object while they stay the same."""

    def __call__(self, access: AccessFilter | None = None) -> Mapping[str, frozenset[str]]: ...


@dataclass(frozen=True)
class SearchPlan:
    """What one search does."""

    standalone_query: str
    """The follow-up rewritten to stand alone (what the user sees as the query)."""
    search_text: str
    """The text that is embedded and matched: the standalone query minus filter words, if any."""
    filters: SearchFilter = field(default_factory=SearchFilter)
    """Every part of the filter and what derives from them, assembled once (filters/assembly)."""
    limit: int | None = None
    paraphrases: tuple[str, ...] = ()
    notes: tuple[str, ...] = field(default_factory=tuple)
    views: tuple[QueryView, ...] = ()
    """The query vectors whose rankings are fused, each a weighted mix of texts, the leading
    one first (rewrite/context.py); none: ``search_text`` alone."""
    previous_answer: str | None = None
    """The last bot message of a follow-up, whose vector finds the document the previous answer
    came from (retrieve/answer_prior.py); None: the message is no follow-up."""
    previous_answer_weight: float = 0.0
    """How much that document's ranking weighs next to the search's own (1)."""

    @property
    def query_views(self) -> tuple[QueryView, ...]:
        """The views searched: each one's weighted embeddings, summed and normalised, form one
        query vector (LLM paraphrases come on top, one vector each)."""
        return self.views or ((QueryText(self.search_text, 1.0),),)

    def without_carried_filter(self, note: str) -> SearchPlan:
        """The same plan without the conditions carried from earlier turns (the words' own
        filter and the scope stay)."""
        return replace(self, filters=self.filters.without_carried(), notes=(*self.notes, note))

    def with_quoted_answer(self, source: str, match: float) -> SearchPlan:
        """The plan with the last bot message weighing ``QUOTED_LAST_BOT_WEIGHT`` in the turns
        view, because it quotes ``source`` (matched at ``match``)."""
        if self.previous_answer is None:
            return self
        note = (
            f"the last bot message quotes {source} (match {match:.2f}): it weighs "
            f"{QUOTED_LAST_BOT_WEIGHT} in the turns view"
        )
        views = with_quoted_answer(self.views, self.previous_answer)
        return replace(self, views=views, notes=(*self.notes, note))

    def without_extracted_filter(self, note: str) -> SearchPlan:
        return replace(
            self,
            search_text=self.standalone_query,
            filters=self.filters.without_words(),
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


def _model_weights(model: ContextModel) -> ContextWeights:
    """The built-in weights of ``model``."""
    return TURNS_VIEW_WEIGHTS if model is ContextModel.WORDS_AND_TURNS else DEFAULT_WEIGHTS


class LLMPlanner(Protocol):
    """The LLM side of planning (rewrite, self-query, paraphrases); see llm."""

    def use_value_catalogue(self, known_values: ValueCatalogue) -> None:
        """Where the self-query prompt reads the values the index holds by default."""

    async def rewrite(self, conversation: Conversation) -> str: ...

    async def structured_query(
        self, standalone: str, known_values: Mapping[str, frozenset[str]] | None = None
    ) -> StructuredQuery | None:
        """The filter of ``standalone``, offering ``known_values`` (this user's) in the prompt."""

    async def rewrite_and_structure(
        self, conversation: Conversation, known_values: Mapping[str, frozenset[str]] | None = None
    ) -> tuple[str, StructuredQuery | None]: ...

    async def paraphrases(self, standalone: str, count: int) -> list[str]: ...

    def in_use(self) -> AbstractContextManager[None]:
        """Keep the LLM's client open for a whole plan: a changed ``llm:`` block closes the
        one it replaces only once the plans still running on it are done."""
        ...


class Planner:
    """Turns a conversation into a SearchPlan according to the configuration."""

    def __init__(
        self,
        config: StoreConfig,
        known_values: ValueCatalogue,
        llm: LLMPlanner | None = None,
        word_rarity: WordRarity | None = None,
    ) -> None:
        self._config = config
        self._known_values = known_values
        self._word_rarity = word_rarity
        """How distinctive a word is in the knowledge base: the words view keeps the earlier
        turns' most distinctive words (None: the first ones)."""
        self._llm = llm
        if llm is not None:
            llm.use_value_catalogue(known_values)
        self._rules: OrderedDict[int, tuple[Mapping[str, Any], RuleQueryConstructor]]
        self._rules = OrderedDict()
        self._rules_lock = threading.Lock()
        # One vocabulary serves everyone unless access filters give audiences their own.
        self._rules_kept = RULE_VOCABULARIES_KEPT if config.access_filters else 1
        if config.self_query == "rules":
            load_word_frequencies()

    @property
    def local(self) -> bool:
        """Whether a plan needs no LLM call: it is then pure CPU work (``plan_here``)."""
        config = self._config
        uses_llm = config.rewrite == "llm" or config.self_query == "llm" or config.multi_query
        return self._llm is None or not uses_llm

    async def plan(self, conversation: Conversation) -> SearchPlan:
        if self.local or self._llm is None:
            return await off_loop(self.plan_here, conversation)
        with self._llm.in_use():
            return await self._llm_plan(conversation, self._llm)

    async def _llm_plan(self, conversation: Conversation, llm: LLMPlanner) -> SearchPlan:
        access = self._access(conversation)
        standalone, structured, carried = await self._standalone_and_structured(
            conversation, access
        )
        paraphrases: tuple[str, ...] = ()
        if self._config.multi_query and standalone:
            paraphrases = tuple(await llm.paraphrases(standalone, self._config.multi_query))
        return self._assembled(conversation, access, standalone, structured, carried, paraphrases)

    def plan_here(self, conversation: Conversation) -> SearchPlan:
        """The plan of a ``local`` planner, on the calling thread (a worker: it is CPU work)."""
        access = self._access(conversation)
        return self._assembled(conversation, access, *self._local_plan(conversation, access), ())

    def _access(self, conversation: Conversation) -> AccessFilter | None:
        """The user's access filter, read once per search: it scopes the search and the values
        the self-query may offer."""
        return AccessFilter.from_channel(
            conversation.channel, self._config.access_filters, self._config.unattributed_documents
        )

    def _values(self, access: AccessFilter | None) -> Mapping[str, frozenset[str]]:
        """The values this user may be offered: all the index holds without access filters."""
        return self._known_values() if access is None else self._known_values(access)

    def _assembled(
        self,
        conversation: Conversation,
        access: AccessFilter | None,
        standalone: str,
        structured: StructuredQuery | None,
        carried: FilterDirective | None,
        paraphrases: tuple[str, ...],
    ) -> SearchPlan:
        slots = slot_filter(_filterable(conversation.filled_slots), self._config.slot_filters)
        search_text = standalone
        extracted = limit = None
        if structured is not None:
            extracted, limit = structured.filter, structured.limit
            if structured.query.strip():
                search_text = structured.query.strip()
        filters = SearchFilter(
            access=access,
            static=self._config.static_filter,
            slots=slots,
            extracted=extracted,
            carried=carried,
            absent_means_all=absent_means_all(self._config.metadata_fields),
        )
        plan = SearchPlan(standalone, search_text, filters, limit, paraphrases, filters.notes)
        return self._with_context(plan, conversation)

    def _with_context(self, plan: SearchPlan, conversation: Conversation) -> SearchPlan:
        """The views of the follow-up with its earlier turns (no-LLM rewrite only).

        The latest message as typed leads the turns, unless the self-query changed the searched
        text (filter words stripped, an LLM's query): then that text leads.
        """
        if self._config.rewrite != "heuristic":
            return plan
        model = ContextModel(self._config.context_model)
        weights = self._context_weights()
        views = query_views(
            conversation,
            plan.search_text,
            model,
            message_searched=plan.search_text == plan.standalone_query,
            weights=weights,
        )
        prior_weight = (weights or _model_weights(model)).previous_answer
        answer = previous_answer(views, conversation)
        notes = plan.notes
        restated = restated_answer(conversation) if len(views[0]) > 1 else None
        if restated is not None:
            notes = (
                *notes,
                "the message swaps a facet the last bot message named: the turns view is led "
                f"by that answer restated ({restated})",
            )
        question = answered_question(conversation) if len(views[0]) > 1 else None
        if question is not None:
            notes = (
                *notes,
                "the message answers the bot's question: it is searched with the question "
                f"before it, and the bot's question weighs more in the turns view ({question})",
            )
        return replace(
            plan,
            views=views,
            previous_answer=answer,
            previous_answer_weight=prior_weight,
            notes=notes,
        )

    def reweighted(self, weights: ContextWeightsBlock | None) -> Planner:
        """This planner with ``weights`` as its ``context_weights`` (None: the built-in ones).

        It shares the rule constructors, so trying weights (``eval --tune``) compiles nothing
        again.
        """
        planner = copy.copy(self)
        planner._config = self._config.model_copy(update={"context_weights": weights})
        return planner

    def _context_weights(self) -> ContextWeights | None:
        """The configured ``context_weights`` over the model's own; None when none is set."""
        block = self._config.context_weights
        if block is None:
            return None
        own = _model_weights(ContextModel(self._config.context_model))
        configured = {key: value for key, value in block.model_dump().items() if value is not None}
        return replace(own, **configured)

    async def _standalone_and_structured(
        self, conversation: Conversation, access: AccessFilter | None
    ) -> tuple[str, StructuredQuery | None, FilterDirective | None]:
        config, llm = self._config, self._llm
        if llm is not None and config.rewrite == "llm" and config.self_query == "llm":
            values = self._values(access)
            return (*await llm.rewrite_and_structure(conversation, values), None)
        if llm is not None and config.rewrite == "llm":
            standalone = await llm.rewrite(conversation)
        elif config.rewrite == "off":
            standalone = conversation.latest_user_text
        elif config.self_query == "llm" and llm is not None:
            standalone = await off_loop(self._heuristic_rewrite, conversation)
        else:
            return await off_loop(self._local_plan, conversation, access)
        if config.self_query == "rules":
            return await off_loop(self._rule_query, conversation, standalone, access)
        if config.self_query == "llm" and llm is not None:
            return standalone, await llm.structured_query(standalone, self._values(access)), None
        return standalone, None, None

    def _heuristic_rewrite(self, conversation: Conversation) -> str:
        mode = RewriteMode(self._config.rewrite_heuristic)
        return standalone_query(conversation, mode, self._word_rarity)

    def _local_plan(
        self, conversation: Conversation, access: AccessFilter | None
    ) -> tuple[str, StructuredQuery | None, FilterDirective | None]:
        """The rewrite and the rules: pure CPU, so that hundreds of concurrent searches do not
        stall the event loop it runs in a worker thread (bench/results/hardening.md)."""
        if self._config.rewrite == "off":
            return self._rule_query(conversation, conversation.latest_user_text, access)
        return self._rule_query(conversation, self._heuristic_rewrite(conversation), access)

    def _rule_query(
        self, conversation: Conversation, standalone: str, access: AccessFilter | None
    ) -> tuple[str, StructuredQuery | None, FilterDirective | None]:
        """The rules' filter for this message, and the conditions carried from earlier turns."""
        if self._config.self_query != "rules":
            return standalone, None, None
        rules = self._rule_constructor(self._values(access))
        if self._config.carry_filters:
            found = conversation_filters(conversation, standalone, rules)
            return standalone, found.structured, found.carried
        return standalone, rules.construct(standalone), None

    def _rule_constructor(self, values: Mapping[str, frozenset[str]]) -> RuleQueryConstructor:
        """Built once per set of known values (they change when the index does, and differ
        between audiences when access filters are configured)."""
        with self._rules_lock:
            kept = self._rules.get(id(values))
            if kept is not None and kept[0] is values:
                self._rules.move_to_end(id(values))
                return kept[1]
        kwargs: dict[str, Any] = {}
        if self._config.strip_filter_words is not None:
            kwargs["strip_filter_words"] = self._config.strip_filter_words
        rules = RuleQueryConstructor(self._config.metadata_fields, values, **kwargs)
        with self._rules_lock:
            self._rules[id(values)] = (values, rules)  # the mapping is kept: its id stays unique
            while len(self._rules) > self._rules_kept:
                self._rules.popitem(last=False)
        return rules
