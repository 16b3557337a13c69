"""What the documents of a knowledge base are called: "movies", "articles", "products".

A topic value before one ("python articles") is a filter, a count before one ("two movies") a
limit. The nouns are a generic list plus the noun the schema's descriptions keep naming ("The year
the movie was released" -> "movie") or, if none is named twice, those named once ("hotel").
"""

from __future__ import annotations

import re
from collections import Counter
from collections.abc import Collection, Sequence

import inflection

from rasa_context_retrieval.filters.schema import MetadataField
from rasa_context_retrieval.self_query import english
from rasa_context_retrieval.self_query.phrases import ITEM_NOUNS, PLURAL_ITEM_NOUNS, alternation

_PHRASES = english.patterns("items")

MIN_DESCRIPTIONS_NAMING_ITEM = 2


def item_nouns(fields: Sequence[MetadataField]) -> frozenset[str]:
    """Singular and plural forms of the nouns for the documents of this schema."""
    # "The year the movie was released" names the field ``year``; the head noun of a name is
    # the field's, a word before it may be the documents' ("bike_type": the type of a bike).
    field_words = {
        words[-1] for field in fields if (words := _PHRASES.NAME_WORDS.findall(field.name.lower()))
    }
    counts = Counter(
        word
        for field in fields
        for word in {match.lower() for match in _PHRASES.DESCRIBED_NOUN.findall(field.description)}
    )
    named = {word: count for word, count in counts.items() if word not in field_words}
    described = {
        word for word, count in named.items() if count >= MIN_DESCRIPTIONS_NAMING_ITEM
    } or set(named)
    singular = ITEM_NOUNS | described
    return frozenset(singular | {plural(noun) for noun in singular} | PLURAL_ITEM_NOUNS)


def plural(noun: str) -> str:
    """The plural of a singular noun: ``inflection`` keeps "lens" as it is, so -s takes -es."""
    form = inflection.pluralize(noun)
    return noun + "es" if form == noun and noun.endswith("s") else form


def noun_after(nouns: Collection[str]) -> re.Pattern[str]:
    """Matches one of ``nouns`` coming next: "[python] articles", "[gold] tier"."""
    items = alternation(nouns) or r"(?!x)x"
    return re.compile(rf"\s*(?:-\s*)?(?:{items})(?!\w)", re.IGNORECASE)
