"""What the documents of a knowledge base are called: "movies", "articles", "products".

Several rules lean on these nouns: a topic value right before one ("python articles") is a
filter, a count right before one ("two movies") is a limit, and a year or date in a message that
names them ("films made before 1980") is about the documents, not the user's life. The nouns
are a short generic list plus the noun the schema's own descriptions keep talking about ("The
year the movie was released", "A 1-10 rating for the movie" -> "movie") or, in a schema whose
descriptions name no noun twice, the nouns they name once ("City the hotel is in" -> "hotel").
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

# A noun the descriptions name after "the" in this many fields is what the documents are; when
# no noun is named that often, every noun named once is ("City the hotel is in").
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
    """The plural of a singular noun; ``inflection`` takes a singular in -s for a plural already
    ("lens" -> "lens"), so those take -es ("lenses", "canvases")."""
    form = inflection.pluralize(noun)
    return noun + "es" if form == noun and noun.endswith("s") else form


def noun_after(nouns: Collection[str]) -> re.Pattern[str]:
    """Matches, at a position, one of ``nouns`` coming next: a noun for the documents
    ("[python] articles", "[remote] jobs", "[4-star] hotels"), a field's name ("[gold] tier")."""
    items = alternation(nouns) or r"(?!x)x"
    return re.compile(rf"\s*(?:-\s*)?(?:{items})(?!\w)", re.IGNORECASE)
