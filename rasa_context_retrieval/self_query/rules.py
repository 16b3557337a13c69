"""Rule-based self-query: the filters a user says in words, without an LLM.

"Plans under $20 a month for Android, not the business tier, updated since March 2024" carries
four filters. ``RuleQueryConstructor`` finds them with one extractor per kind of attribute, reads
the number of results asked for (``limits``), and merges the conditions into LangChain's filter
IR over the declared fields only: the IR slot filters and the LLM constructor produce, so one
translator runs them all.

Precision beats recall: a missing filter only costs some ranking, a wrong one hides the answer.
So every extractor asks for a clear comparison or scope word, and an ambiguous mention (a number
that fits two fields, a word that is a value of two fields) gives no filter. Every rule reads
the schema (names, descriptions, values, aliases), not phrases of one knowledge base. Dates and
years go first (a year is a date, not an amount); a span of text feeds one condition only, and
nothing said in the user's own past story ("I cooked a thai curry last week") is a condition.
"""

from __future__ import annotations

import datetime as dt
import functools
from collections.abc import Collection, Mapping, Sequence
from typing import Any

import structlog
from langchain_core.structured_query import Comparator, Comparison, FilterDirective, StructuredQuery

from rasa_context_retrieval.filters.schema import MetadataField
from rasa_context_retrieval.filters.syntax import conjoin
from rasa_context_retrieval.self_query import english
from rasa_context_retrieval.self_query.booleans import BooleanPhrases
from rasa_context_retrieval.self_query.constraints import Constraint, told_as_personal_past
from rasa_context_retrieval.self_query.dates import Clock, DatePhrases
from rasa_context_retrieval.self_query.glosses import GlossPhrases
from rasa_context_retrieval.self_query.items import item_nouns
from rasa_context_retrieval.self_query.limits import LimitPhrases
from rasa_context_retrieval.self_query.negation import bind_negations
from rasa_context_retrieval.self_query.numbers import NumberPhrases
from rasa_context_retrieval.self_query.phrases import COORDINATION
from rasa_context_retrieval.self_query.vocabulary import ValueVocabulary

_PHRASES = english.patterns("rules")

logger = structlog.get_logger(__name__)

# Decided by bench/self_query_strip.py (results in bench/results/self_query_rules.md).
DEFAULT_STRIP_FILTER_WORDS = False
# Messages are short; a pasted log file is not scanned beyond this for filters.
MAX_SCANNED_CHARS = 1_000
# Order of the bounds on one attribute in the filter tree: lower bounds first.
BOUND_ORDER = [Comparator.GT, Comparator.GTE, Comparator.LT, Comparator.LTE]
MESSAGES_KEPT = 4_096
"""Messages whose conditions are kept, read on one day. A follow-up reads the earlier user
turns of its conversation again (carried filters) and its own message twice (its conditions,
then its search text), about a millisecond a search when each was read anew."""


class RuleQueryConstructor:
    """Turns a user's message into a search text and a filter over the declared fields.

    Args:
        fields: the filterable attributes; string and list[string] fields are matched by value
            (and alias), integer and float fields by comparisons (years for a year field), date
            fields by dates, boolean fields by the phrases of their name and description.
        known_values: the distinct string values in the index per attribute, used for a field
            that declares no ``values``.
        strip_filter_words: whether the words that made a filter ("under $20 a month") are cut
            from the returned query.
        today: the clock for relative dates ("this year", "the last 6 months").
    """

    def __init__(
        self,
        fields: Sequence[MetadataField],
        known_values: Mapping[str, Collection[str]] | None = None,
        *,
        strip_filter_words: bool = DEFAULT_STRIP_FILTER_WORDS,
        today: Clock = dt.date.today,
    ) -> None:
        self.strip_filter_words = strip_filter_words
        self._today = today
        self._read_on = functools.lru_cache(maxsize=MESSAGES_KEPT)(self._read)
        self._field_order = {field.name: position for position, field in enumerate(fields)}
        items = item_nouns(fields)
        self._dates = DatePhrases(fields, today, items)
        self._numbers = NumberPhrases(fields, items)
        self._booleans = BooleanPhrases(fields, items)
        self._glosses = GlossPhrases(fields, items, self._booleans.describes_documents)
        self._values = ValueVocabulary(fields, known_values or {}, items)
        self._limits = LimitPhrases(items, self._values.is_plural_value)
        logger.debug(
            "self_query.rules.compiled",
            fields=len(self._field_order),
            value_surfaces=self._values.size,
        )

    def construct(self, text: str) -> StructuredQuery:
        """The search text and the filter (``None`` when the user said none) of ``text``."""
        text = text if isinstance(text, str) else ""
        constraints = self.constraints(text)
        limit = self._limits.find(text[:MAX_SCANNED_CHARS], constraints)
        directive = self.filter_of(constraints)
        query = text.strip()
        if self.strip_filter_words and constraints:
            query = strip_spans(text, constraints) or query
        if directive is not None:
            logger.debug("self_query.rules.filter.extracted", query=query, filter=directive)
        return StructuredQuery(query=query, filter=directive, limit=limit)

    def filter_of(self, constraints: Sequence[Constraint]) -> FilterDirective | None:
        """The filter tree of ``constraints`` (found by ``constraints`` in any message): one
        comparison per condition; values of one field merge into ``in``/``nin`` unless each must
        hold (``Constraint.each``); all joined as every other filter is (``conjoin``, which drops
        a comparison said twice)."""
        comparisons: list[Comparison] = []
        for attribute in sorted(
            {c.attribute for c in constraints}, key=self._field_order.__getitem__
        ):
            on_attribute = [c for c in constraints if c.attribute == attribute]
            comparisons += _value_comparisons(attribute, on_attribute)
            bounds = [c for c in on_attribute if c.comparator in BOUND_ORDER]
            bounds.sort(key=lambda c: BOUND_ORDER.index(c.comparator))
            comparisons += [
                Comparison(comparator=c.comparator, attribute=attribute, value=c.value)
                for c in bounds
            ]
        return conjoin(*comparisons)

    def constraints(self, text: str) -> list[Constraint]:
        """Every condition found in ``text``, with the span of words that said it.

        What a message says depends on the message, the schema, the known values (all fixed
        for this constructor) and the day (relative dates): each message is read once a day."""
        return list(self._read_on(text[:MAX_SCANNED_CHARS], self._today()))

    def _read(self, text: str, today: dt.date) -> tuple[Constraint, ...]:
        """``constraints`` of ``text``, read on ``today`` (the key of the kept readings; the
        date extractor reads the same clock)."""
        scanned = text[:MAX_SCANNED_CHARS]
        # A gloss of several words is the schema's own phrase: its words are no value's.
        glossed = self._glosses.find(scanned, [], phrases=True)
        values = self._values.find(scanned, glossed)
        scoped = bool(values) or bool(_PHRASES.ASKED_FOR_FIRST.match(scanned))
        found = self._dates.find(scanned, scoped=scoped, values=values)
        found += self._numbers.find(scanned, found + glossed, values)
        # Values are read again only around what the other kinds took; else the first reading holds.
        found += self._values.find(scanned, found + glossed) if found else values
        found += glossed
        found += self._glosses.find(scanned, found, phrases=False)
        found += self._booleans.find(scanned, found)
        found = self._booleans.without_described_values(scanned, found)
        found = bind_negations(scanned, found)
        return tuple(c for c in found if not told_as_personal_past(scanned, c.start))


def _value_comparisons(attribute: str, constraints: list[Constraint]) -> list[Comparison]:
    """A value said both wanted and unwanted is neither (the user contradicted themselves)."""

    def said(comparator: Comparator, each: bool = False) -> list[Any]:
        """In order, each once; by equality, as a date value is a dict ("on March 3": ``eq``)."""
        kept: list[Any] = []
        for c in constraints:
            if c.comparator is comparator and (c.each or not each) and c.value not in kept:
                kept.append(c.value)
        return kept

    each, unwanted = said(Comparator.EQ, each=True), said(Comparator.NE)
    wanted = [value for value in said(Comparator.EQ) if value not in each]
    return [
        *_compared(attribute, [v for v in each if v not in unwanted], Comparator.EQ),
        *_compared(
            attribute, [v for v in wanted if v not in unwanted], Comparator.EQ, Comparator.IN
        ),
        *_compared(
            attribute, [v for v in unwanted if v not in wanted], Comparator.NE, Comparator.NIN
        ),
    ]


def _compared(
    attribute: str, values: list[Any], one: Comparator, several: Comparator | None = None
) -> list[Comparison]:
    """One ``one`` comparison per value, or a single ``several`` of them all when there are."""
    if several is not None and len(values) > 1:
        return [Comparison(comparator=several, attribute=attribute, value=values)]
    return [Comparison(comparator=one, attribute=attribute, value=value) for value in values]


def strip_spans(text: str, constraints: Sequence[Constraint]) -> str:
    """``text`` without the words that said the constraints (and the "and" joining them)."""
    kept: list[str] = []
    cursor = 0  # the end of the words cut so far
    for start, end in sorted((c.start, c.end) for c in constraints):
        if kept and (start <= cursor or COORDINATION.fullmatch(text, cursor, start)):
            cursor = max(cursor, end)
        else:
            kept.append(text[cursor:start])
            cursor = end
    kept.append(text[cursor:])
    query = _PHRASES.LEFTOVER_SPACE.sub(" ", " ".join(kept))
    query = _PHRASES.SPACE_BEFORE_PUNCTUATION.sub(r"\1", query)
    query = _PHRASES.DANGLING_EDGES.sub("", query)
    return query if any(char.isalnum() for char in query) else ""
