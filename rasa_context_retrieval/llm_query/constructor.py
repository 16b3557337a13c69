"""LLM self-query: the user's words become a metadata filter, and nothing unsafe gets through.

The prompt and the parser are LangChain's query constructor (``get_query_constructor_prompt``,
``StructuredQueryOutputParser`` with its lark grammar), fed with our ``metadata_fields`` (allowed
values spelled out in the descriptions) and few-shot examples for a product knowledge base, so
the LLM writes the self-query syntax the rest of the pipeline reads.

What the LLM writes is untrusted: it may invent attributes, values or types, or be talked into a
broad filter by the user's message. ``keep_valid`` therefore drops every comparison on an
undeclared attribute, with a comparator the attribute's type cannot use, or with a value of the
wrong type or outside the declared values. The rule for what remains:

    A dropped comparison becomes "no condition" where it stands: TRUE under an even number of
    ``not``s, FALSE under an odd number; the constants are then folded away.

So ``and(a, bad)`` keeps ``a``; ``or(a, bad)`` keeps nothing (``a`` alone would narrow the
search to ``a`` although the user also asked for something else); ``not(or(a, bad))`` keeps
``not(a)``; ``not(and(a, bad))`` keeps nothing. Whatever the dropped comparison meant, the
remaining filter admits every document the LLM's whole filter admitted, and widens the search by
the dropped conditions only. LangChain's ``fix_filter_directive`` instead deletes bad children in
place, turning ``or(a, bad)`` into ``a`` and ``not(and(a, bad))`` into ``not(a)``.

Scope is never this module's job: the planner ANDs the result with the slot filter, and an AND
cannot lose a conjunct, so nothing the LLM writes can widen what the slots allow.

The prompt lists each string field's value catalogue: its declared ``values``, or else the values
the index actually holds, with the aliases users say for them. A value outside the catalogue is
dropped like an invented attribute (an alias is read as its value), so the LLM cannot filter on a
spelling no document has. The catalogue follows the index: the prompt is rebuilt when it changes.
With access filters each search passes the values of the documents its user may read
(``construct(..., known_values)``), so a restricted document's values never reach the prompt of
a user who may not read it; one prompt is kept per distinct catalogue.

Every prompt starts with today's date: LangChain's prompt states none, so "updated this year" or
"listed in the last 7 days" would be read against whatever year the LLM guesses.

Unparseable answers, timeouts and LLM errors give ``None`` (logged with the reason); this module
never raises into a search.
"""

from __future__ import annotations

import datetime as dt
import functools
import math
import threading
from collections import OrderedDict
from collections.abc import Callable, Collection, Mapping, Sequence
from dataclasses import dataclass, field
from typing import Any

import structlog
from langchain_classic.chains.query_constructor.base import (
    StructuredQueryOutputParser,
    get_query_constructor_prompt,
)
from langchain_classic.chains.query_constructor.prompt import DEFAULT_SCHEMA, SCHEMA_WITH_LIMIT
from langchain_classic.chains.query_constructor.schema import AttributeInfo
from langchain_core.exceptions import OutputParserException
from langchain_core.prompts import BasePromptTemplate, PromptTemplate
from langchain_core.structured_query import (
    Comparator,
    Comparison,
    FilterDirective,
    Operation,
    Operator,
    StructuredQuery,
)

from rasa_context_retrieval.filters.schema import STRING_TYPES, AttributeType, MetadataField
from rasa_context_retrieval.filters.syntax import parse_filter
from rasa_context_retrieval.llm.client import LLMUnavailable, RetrievalLLM
from rasa_context_retrieval.self_query.dates import Clock
from rasa_context_retrieval.self_query.limits import (
    MAX_LIMIT,  # a larger limit is ignored; top_k applies
)
from rasa_context_retrieval.workers import off_loop

logger = structlog.get_logger()

DEFAULT_TIMEOUT_SECONDS = 2.0
DEFAULT_DOCUMENT_CONTENTS = "Help-centre articles about a software product and its plans"
MAX_PROMPT_VALUES = 60
"""Values listed per field in the prompt; a longer catalogue is still enforced, shown in part."""
ValueSource = Callable[[], Mapping[str, Collection[str]]]
CATALOGUES_KEPT = 64
"""Prompts kept, one per distinct value catalogue (one per audience with access filters)."""

_ORDERED = (Comparator.GT, Comparator.GTE, Comparator.LT, Comparator.LTE)
_MEMBERSHIP = (Comparator.IN, Comparator.NIN)
_EQUALITY = (Comparator.EQ, Comparator.NE)
COMPARATORS_BY_TYPE: dict[AttributeType, tuple[Comparator, ...]] = {
    "string": (*_EQUALITY, *_MEMBERSHIP, Comparator.CONTAIN, Comparator.LIKE),
    "list[string]": (*_EQUALITY, *_MEMBERSHIP, Comparator.CONTAIN),
    "integer": (*_EQUALITY, *_ORDERED, *_MEMBERSHIP),
    "float": (*_EQUALITY, *_ORDERED, *_MEMBERSHIP),
    "boolean": _EQUALITY,
    "date": (*_EQUALITY, *_ORDERED),
}
"""What each attribute type can be compared with; anything else is dropped."""

# (standalone query, structured request); the query stays whole (filter words are not removed:
# bench/results/self_query_rules.md found that stripping them does not help).
PRODUCT_EXAMPLES: tuple[tuple[str, dict[str, Any]], ...] = (
    (
        "Which features does the premium plan have on iOS?",
        {"filter": 'and(eq("plan", "premium"), eq("platform", "ios"))'},
    ),
    (
        "Plans under 10 dollars a month that allow at least 5 devices",
        {"filter": 'and(lt("price_per_month", 10), gte("max_devices", 5))'},
    ),
    ("How do I reset my password?", {"filter": "NO_FILTER"}),
    (
        "Refund rules in the EU updated since March 2024",
        {"filter": 'and(eq("region", "eu"), gte("updated", "2024-03-01"))'},
    ),
    ("Offline files on every platform except Windows", {"filter": 'ne("platform", "windows")'}),
    ("Show me three articles about invoices", {"filter": "NO_FILTER", "limit": 3}),
)
NO_FILTER_EXAMPLE = (
    "How do I reset my password?",
    {"query": "How do I reset my password?", "filter": "NO_FILTER"},
)


@dataclass(frozen=True)
class Catalogue:
    """The fields as one catalogue of values describes them, and the prompt built on them."""

    fields: Mapping[str, MetadataField]
    prompt: BasePromptTemplate


@dataclass
class Validation:
    """What ``keep_valid`` kept and why it dropped the rest."""

    filter: FilterDirective | None
    dropped: list[str] = field(default_factory=list)


class LLMQueryConstructor:
    """Asks an LLM for the filter a standalone query implies, and keeps only its valid part."""

    def __init__(
        self,
        llm: RetrievalLLM,
        fields: Sequence[MetadataField],
        *,
        document_contents: str = DEFAULT_DOCUMENT_CONTENTS,
        enable_limit: bool = False,
        timeout: float = DEFAULT_TIMEOUT_SECONDS,
        known_values: ValueSource | None = None,
        today: Clock = dt.date.today,
    ) -> None:
        self._llm = llm
        self.today = today
        self._declared = tuple(fields)
        self.document_contents = document_contents
        self.enable_limit = enable_limit
        self.timeout = timeout
        # No restrictions in the grammar: unknown attributes must parse so that keep_valid can
        # drop them one by one instead of the whole answer failing. parse_filter is LangChain's
        # grammar behind the size and depth bounds every filter passes.
        self._parser = StructuredQueryOutputParser(ast_parse=parse_filter)
        self._known_values = known_values
        self._catalogues: OrderedDict[int, tuple[Mapping[str, Collection[str]], Catalogue]]
        self._catalogues = OrderedDict()
        self._catalogues_lock = threading.Lock()
        declared = {field.name: field for field in self._declared}
        self._declared_catalogue = Catalogue(declared, self._product_prompt(declared))

    def use_value_catalogue(self, known_values: ValueSource) -> None:
        """Read the values the index holds from ``known_values`` (called lazily, per search)
        when a search passes none of its own."""
        self._known_values = known_values

    @property
    def fields(self) -> Mapping[str, MetadataField]:
        """The fields as the default catalogue (``use_value_catalogue``) describes them."""
        return self.catalogue().fields

    def catalogue(self, known_values: Mapping[str, Collection[str]] | None = None) -> Catalogue:
        """The fields and prompt for ``known_values`` (else the default catalogue's values);
        built once per distinct mapping object, as the index hands out one per audience."""
        values = known_values
        if values is None and self._known_values is not None:
            values = self._known_values()
        if values is None:
            return self._declared_catalogue
        with self._catalogues_lock:
            kept = self._catalogues.get(id(values))
            if kept is not None and kept[0] is values:
                self._catalogues.move_to_end(id(values))
                return kept[1]
        fields = {field.name: field for field in catalogued(self._declared, values)}
        built = Catalogue(fields, self._product_prompt(fields))
        with self._catalogues_lock:
            self._catalogues[id(values)] = (values, built)  # kept: its id stays unique
            while len(self._catalogues) > CATALOGUES_KEPT:
                self._catalogues.popitem(last=False)
        return built

    def _product_prompt(self, fields: Mapping[str, MetadataField]) -> BasePromptTemplate:
        return self.prompt(
            [(query, {"query": query, **request}) for query, request in PRODUCT_EXAMPLES],
            fields=fields,
        )

    def prompt(
        self,
        examples: Sequence[tuple[str, dict[str, Any]]],
        schema_prompt: BasePromptTemplate | None = None,
        *,
        fields: Mapping[str, MetadataField] | None = None,
    ) -> BasePromptTemplate:
        """LangChain's query-constructor prompt for our schema with the examples that fit it.

        Examples whose filter uses an attribute or value this schema lacks are left out, so a
        knowledge base with other attributes is not taught to filter on ours. ``fields`` are
        the default catalogue's unless given.
        """
        described = self.fields if fields is None else fields
        fitting = [
            (text, {key: value for key, value in request.items() if key != "limit"})
            if not self.enable_limit
            else (text, request)
            for text, request in examples
            if self._example_fits(request, described)
        ]
        return get_query_constructor_prompt(
            self.document_contents,
            [attribute_info(metadata_field) for metadata_field in described.values()],
            # With no examples LangChain would fall back to its song-lyrics examples.
            examples=fitting or [NO_FILTER_EXAMPLE],
            allowed_comparators=self.allowed_comparators,
            enable_limit=self.enable_limit,
            schema_prompt=schema_prompt,
        )

    @property
    def allowed_comparators(self) -> list[Comparator]:
        types = {metadata_field.type for metadata_field in self._declared}
        usable = {comparator for kind in types for comparator in COMPARATORS_BY_TYPE[kind]}
        return [comparator for comparator in Comparator if comparator in usable]

    async def construct(
        self, standalone_query: str, known_values: Mapping[str, Collection[str]] | None = None
    ) -> StructuredQuery | None:
        """The valid part of the LLM's filter (and limit) for ``standalone_query``, or None.

        ``known_values`` are the values this search may offer (see ``catalogue``). The returned
        ``query`` is ``standalone_query`` unchanged: it is what the user sees and what relevance
        is measured against.
        """
        if not standalone_query.strip() or not self._declared:
            return None
        catalogue, prompt = await off_loop(
            self._catalogue_and_prompt, standalone_query, known_values
        )
        try:
            structured = await self._llm.complete_and_parse(
                prompt,
                functools.partial(self.parse_answer, catalogue=catalogue),
                timeout=self.timeout,
            )
        except LLMUnavailable as error:
            logger.warning("self_query.llm.unavailable", reason=str(error))
            return None
        if structured is None:
            return None
        return StructuredQuery(
            query=standalone_query, filter=structured.filter, limit=structured.limit
        )

    def _catalogue_and_prompt(
        self, standalone_query: str, known_values: Mapping[str, Collection[str]] | None
    ) -> tuple[Catalogue, str]:
        """Built on a search worker: a new value set builds its catalogue and prompt."""
        catalogue = self.catalogue(known_values)
        return catalogue, dated(catalogue.prompt.format(query=standalone_query), self.today())

    def parse_answer(
        self, answer: str, catalogue: Catalogue | None = None
    ) -> StructuredQuery | None:
        """Parse an answer in the query-constructor JSON format and keep its valid part (valid
        for ``catalogue``, else the default one).

        Never raises: an answer that does not parse gives None and a log event.
        """
        fields = (catalogue or self.catalogue()).fields
        try:
            parsed = self._parser.parse(answer)
        except OutputParserException as error:
            logger.warning(
                "self_query.llm.unparseable", answer=answer[:500], error=str(error)[:300]
            )
            return None
        validation = keep_valid(parsed.filter, fields)
        if validation.dropped:
            logger.info("self_query.llm.dropped", dropped=validation.dropped)
        limit = parsed.limit if self.enable_limit else None
        if limit is not None and not 1 <= limit <= MAX_LIMIT:
            logger.info("self_query.llm.dropped", dropped=[f"limit {limit}"])
            limit = None
        return StructuredQuery(query=parsed.query.strip(), filter=validation.filter, limit=limit)

    def _example_fits(
        self, request: Mapping[str, Any], fields: Mapping[str, MetadataField]
    ) -> bool:
        text = request.get("filter")
        if text in (None, "NO_FILTER"):
            return True
        try:
            directive = self._parser.ast_parse(text)
        except Exception:  # an example that does not parse is a bug, not a user error
            return False
        return not keep_valid(directive, fields).dropped


def catalogued(
    fields: Sequence[MetadataField], known_values: Mapping[str, Collection[str]]
) -> tuple[MetadataField, ...]:
    """``fields`` where a string field without declared values gets the values the index holds.

    A field whose documents hold no value yet keeps ``values=None`` (anything is accepted): an
    empty catalogue would reject every filter on it.
    """
    return tuple(
        field.model_copy(update={"values": tuple(sorted(known_values[field.name], key=str))})
        if field.type in STRING_TYPES and field.values is None and known_values.get(field.name)
        else field
        for field in fields
    )


def attribute_info(metadata_field: MetadataField) -> AttributeInfo:
    """The field as the query-constructor prompt describes it, its value catalogue included."""
    description = metadata_field.description.strip().rstrip(".")
    if metadata_field.values:
        shown = metadata_field.values[:MAX_PROMPT_VALUES]
        listed = ", ".join(f'"{value}"' for value in shown)
        if len(metadata_field.values) > len(shown):
            listed += f" (and {len(metadata_field.values) - len(shown)} more)"
        description = f"{description}. One of {listed}" if description else f"One of {listed}"
    for value, aliases in metadata_field.aliases:
        description += f'. "{value}" is also called {", ".join(aliases)}'
    if metadata_field.type == "list[string]":
        description += ". A document can have several values; eq matches documents having the value"
    return AttributeInfo(
        name=metadata_field.name, description=description, type=metadata_field.type
    )


def dated(prompt: str, today: dt.date) -> str:
    """``prompt`` with today's date before it, for the relative dates in the user's words."""
    return (
        f"Today's date is {today.isoformat()} ({today:%A}). Read relative dates such as "
        f'"this year", "since last month" or "in the last 7 days" from it.\n\n{prompt}'
    )


def conversation_schema_prompt(*, enable_limit: bool) -> PromptTemplate:
    """LangChain's schema prompt, with ``query`` meaning the standalone rewrite of a chat turn."""
    schema = SCHEMA_WITH_LIMIT if enable_limit else DEFAULT_SCHEMA
    schema = _replace_once(
        schema,
        "text string to compare to document contents",
        "the latest user message rewritten as one standalone search query",
    )
    schema = _replace_once(
        schema,
        "The query string should contain only text that is expected to match the contents of "
        "documents. Any conditions in the filter should not be mentioned in the query as well.",
        "The user query is a conversation. Write the query so that it is understood without the "
        'conversation: resolve pronouns and follow-ups ("and on Android?") from earlier turns '
        "and the known facts, keep the user's language and words, do not answer the question. "
        "The filter holds only conditions the user asked for; known facts are applied "
        "separately, do not repeat them in the filter.",
    )
    return PromptTemplate.from_template(schema)


def keep_valid(
    directive: FilterDirective | None, fields: Mapping[str, MetadataField]
) -> Validation:
    """Drop invalid comparisons so that the filter can only widen, never narrow (module doc)."""
    validation = Validation(filter=None)
    if directive is None:
        return validation
    kept = _prune(directive, fields, positive=True, dropped=validation.dropped)
    # At positive polarity a folded constant is always TRUE, i.e. no filter.
    validation.filter = None if isinstance(kept, bool) else kept
    return validation


def _prune(
    node: Any, fields: Mapping[str, MetadataField], *, positive: bool, dropped: list[str]
) -> FilterDirective | bool:
    """``node`` without invalid comparisons; a bool is the constant the node folded to."""
    if isinstance(node, Comparison):
        problem, checked = _check_comparison(node, fields)
        if checked is None:
            dropped.append(problem)
            return positive
        return checked
    if not isinstance(node, Operation) or not node.arguments:
        dropped.append(f"not a filter: {node!r}"[:200])
        return positive
    if node.operator == Operator.NOT:
        # not(a, b) means "neither", as the FAISS translator reads it.
        inner = (
            node.arguments[0]
            if len(node.arguments) == 1
            else Operation(operator=Operator.OR, arguments=node.arguments)
        )
        kept = _prune(inner, fields, positive=not positive, dropped=dropped)
        return (
            (not kept)
            if isinstance(kept, bool)
            else Operation(operator=Operator.NOT, arguments=[kept])
        )
    children = [_prune(arg, fields, positive=positive, dropped=dropped) for arg in node.arguments]
    absorbing = node.operator == Operator.OR  # TRUE absorbs an or, FALSE absorbs an and
    if any(child is absorbing for child in children):
        return absorbing
    remaining = [child for child in children if not isinstance(child, bool)]
    if not remaining:
        return not absorbing
    if len(remaining) == 1:
        return remaining[0]
    return Operation(operator=node.operator, arguments=remaining)


def _check_comparison(
    comparison: Comparison, fields: Mapping[str, MetadataField]
) -> tuple[str, Comparison | None]:
    described = f"{comparison.comparator.value}({comparison.attribute!r}, {comparison.value!r})"
    metadata_field = fields.get(comparison.attribute)
    if metadata_field is None:
        return f"{described}: undeclared attribute", None
    if comparison.comparator not in COMPARATORS_BY_TYPE[metadata_field.type]:
        return (
            f"{described}: {comparison.comparator.value} cannot compare {metadata_field.type}",
            None,
        )
    if comparison.comparator in _MEMBERSHIP:
        items = comparison.value if isinstance(comparison.value, list) else [comparison.value]
        values = [_checked_value(metadata_field, item) for item in items]
        if not values or any(value is _INVALID for value in values):
            return f"{described}: value not allowed for {metadata_field.type}", None
        return "", Comparison(
            comparator=comparison.comparator, attribute=comparison.attribute, value=values
        )
    value = _checked_value(metadata_field, comparison.value)
    if value is _INVALID:
        return f"{described}: value not allowed for {metadata_field.type}", None
    return "", Comparison(
        comparator=comparison.comparator, attribute=comparison.attribute, value=value
    )


_INVALID = object()


def _checked_value(metadata_field: MetadataField, value: Any) -> Any:
    """``value`` in the canonical form for the field's type, or ``_INVALID``."""
    kind = metadata_field.type
    if kind in ("string", "list[string]"):
        return _allowed_text(metadata_field, value)
    if isinstance(value, bool):
        return value if kind == "boolean" else _INVALID
    if kind == "integer":
        is_whole = isinstance(value, int) or (isinstance(value, float) and value.is_integer())
        return int(value) if is_whole else _INVALID
    if kind == "float":
        # An integer stays exact: a float would make neighbouring ids above 2**53 equal.
        if isinstance(value, int):
            return value
        return float(value) if isinstance(value, float) and math.isfinite(value) else _INVALID
    if kind == "boolean":
        words = {"true": True, "false": False}
        return words.get(value.strip().lower(), _INVALID) if isinstance(value, str) else _INVALID
    return _date(value)


def _allowed_text(metadata_field: MetadataField, value: Any) -> Any:
    if not isinstance(value, str) or not value.strip():
        return _INVALID
    if metadata_field.values is None:
        return value.strip()
    by_folded = {allowed.casefold(): allowed for allowed in metadata_field.values}
    for allowed, aliases in metadata_field.aliases:
        by_folded.update({alias.casefold(): allowed for alias in aliases})
    return by_folded.get(value.strip().casefold(), _INVALID)


def _date(value: Any) -> Any:
    """A date as the grammar produces it (``{"date": ..., "type": "date"}``), checked."""
    if isinstance(value, str):
        value = {"date": value.strip(), "type": "date"}
    if not isinstance(value, Mapping) or value.get("type") not in ("date", "datetime"):
        return _INVALID
    text = value.get(str(value["type"]))
    try:
        if value["type"] == "date":
            dt.date.fromisoformat(str(text))
        else:
            dt.datetime.fromisoformat(str(text).replace("Z", "+00:00"))
    except ValueError:
        return _INVALID
    return dict(value)


def _replace_once(text: str, old: str, new: str) -> str:
    if text.count(old) != 1:  # LangChain reworded its prompt: fail loudly, not silently
        raise RuntimeError(f"LangChain's query-constructor prompt no longer contains {old!r}")
    return text.replace(old, new)
