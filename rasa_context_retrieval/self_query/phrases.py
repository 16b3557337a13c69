"""The English words that turn a mention into a filter, kept in one place to read and extend.

Whether the user is narrowing the search ("for Android", "under $20") or just talking ("contact
us", "error 404") is judged by these lists; the extractors only apply them. The lists, and why
each word is on one, are in ``english.yaml`` (section ``phrases``); this module gives them their
Python types and builds the patterns that combine several of them.
"""

from __future__ import annotations

import re
from collections.abc import Collection, Iterable, Sequence

import Stemmer

from rasa_context_retrieval.filters.schema import MetadataField
from rasa_context_retrieval.self_query import english

_LISTS, _PHRASES = english.section("phrases")

EVERYDAY_WORDS = frozenset(_LISTS.EVERYDAY_WORDS)

SCOPE_NOUNS = frozenset(_LISTS.SCOPE_NOUNS)

TOPIC_FIELD_WORDS = frozenset(_LISTS.TOPIC_FIELD_WORDS)

TOPIC_ANCHOR_WORDS = tuple(_LISTS.TOPIC_ANCHOR_WORDS)

NEGATORS: str = _LISTS.NEGATORS
NEGATING_PREFIX: str = _LISTS.NEGATING_PREFIX

PREPOSITIONS: str = _LISTS.PREPOSITIONS
NEGATION_BEFORE_VALUE = english.pattern(
    "phrases",
    "NEGATION_BEFORE_VALUE",
    NEGATING_PREFIX=NEGATING_PREFIX,
    NEGATORS=NEGATORS,
    PREPOSITIONS=PREPOSITIONS,
)

ITEM_NOUNS = frozenset(_LISTS.ITEM_NOUNS)
PLURAL_ITEM_NOUNS = frozenset(_LISTS.PLURAL_ITEM_NOUNS)

DETERMINERS_BEFORE_TOPIC = _PHRASES.DETERMINERS_BEFORE_TOPIC

CONCEPT_QUESTION_BEFORE = _PHRASES.CONCEPT_QUESTION_BEFORE

CUE_BEFORE_VALUE = _PHRASES.CUE_BEFORE_VALUE

COORDINATION = _PHRASES.COORDINATION

CURRENCY_SYMBOLS: str = _LISTS.CURRENCY_SYMBOLS
CURRENCY_WORDS = tuple(_LISTS.CURRENCY_WORDS)

MONETARY_FIELD_WORDS = frozenset(_LISTS.MONETARY_FIELD_WORDS)
MONETARY_CUES = frozenset(_LISTS.MONETARY_CUES)

PERIOD_WORDS = _LISTS.PERIOD_WORDS

TIME_UNIT_SECONDS: dict[str, int | None] = _LISTS.TIME_UNIT_SECONDS
MONTHS_IN = _LISTS.MONTHS_IN


def _spelled(spellings: dict[str, list[str]]) -> dict[str, str]:
    """Each spelling of a table of units to the unit it spells."""
    return {spelling: unit for unit, spelled in spellings.items() for spelling in spelled}


# Every spelling of a unit of time: its name, in the plural, and short ("mins").
TIME_UNIT_WORDS = {
    **{unit: unit for unit in TIME_UNIT_SECONDS},
    **{unit + "s": unit for unit in TIME_UNIT_SECONDS},
    **_spelled(_LISTS.TIME_UNIT_SHORT_FORMS),
}
MEASURE_ABBREVIATIONS = _spelled(_LISTS.MEASURE_SPELLINGS)
DATA_SIZES = _LISTS.DATA_SIZES
SUBUNIT: str = _LISTS.SUBUNIT
SUBUNIT_WORDS = dict.fromkeys(_LISTS.SUBUNIT_SPELLINGS, SUBUNIT)
# Every word for a unit a number may be said in: after a count it makes the count a quantity
# ("my first 10 km walk"), not a number of results.
UNIT_WORDS = frozenset(
    [*TIME_UNIT_WORDS, *MEASURE_ABBREVIATIONS, *MEASURE_ABBREVIATIONS.values(), *DATA_SIZES]
    + [*SUBUNIT_WORDS, "miles", "mile", "percent", "%"]
)

MULTIPLIERS = _LISTS.MULTIPLIERS

CUE_STOPWORDS = frozenset(_LISTS.CUE_STOPWORDS)

SMALL_NUMBER_WORDS = _LISTS.SMALL_NUMBER_WORDS

DATE_SCOPE_WORDS = tuple(_LISTS.DATE_SCOPE_WORDS)
# A field name word matches a user's word by its first letters: "updated", "updates", "update".
NAME_PREFIX_CHARS = 5


def alternation(words: Iterable[str]) -> str:
    """``words`` as one regular-expression alternation, each escaped and said once, the longest
    first (so that "new york" is tried before "new"): how every list of words or values is
    matched as a whole."""
    return "|".join(re.escape(word) for word in sorted(dict.fromkeys(words), key=len, reverse=True))


def phrase_alternation(phrases: Iterable[str]) -> str:
    """Like :func:`alternation`, for phrases of several words: any space between their words
    ("no  more than")."""
    ordered = sorted(phrases, key=len, reverse=True)
    return "|".join(r"\s+".join(map(re.escape, phrase.split())) for phrase in ordered)


def any_word(words: Sequence[str], *, or_any_of: str = "") -> re.Pattern[str]:
    """Any of ``words`` as a whole word (or any one character of ``or_any_of``), case ignored:
    the one place a word list of this module becomes a pattern, so a new word is a new entry of
    its list and never a new expression."""
    said = rf"\b(?:{'|'.join(words)})\b"
    return re.compile(rf"[{or_any_of}]|{said}" if or_any_of else said, re.IGNORECASE)


def time_scope(field_names: Sequence[str], extra_words: Collection[str] = ()) -> re.Pattern[str]:
    """Words that make a year or date in a message a wish about documents: "changed", "released",
    the time field's name by its first letters ("publish" for ``published``), the documents'
    nouns ("articles")."""
    words = alternation({*DATE_SCOPE_WORDS, *extra_words})
    names = [word[:NAME_PREFIX_CHARS] for name in field_names for word in name.lower().split("_")]
    prefixes = alternation(filter(None, names)) or words
    return re.compile(rf"(?<!\w)(?:(?:{words})(?!\w)|{prefixes})", re.IGNORECASE)


TOLD_GONE_WORDS: list[str] = _LISTS.TOLD_GONE_WORDS
REQUEST_VERBS = tuple(_LISTS.REQUEST_VERBS)
PHRASE_OPENERS = tuple(_LISTS.PHRASE_OPENERS)
FUNCTIONING_VERBS: list[str] = _LISTS.FUNCTIONING_VERBS
CLAUSE_OPENERS: list[str] = _LISTS.CLAUSE_OPENERS
DATE_CLAUSE_BREAKS = tuple(_LISTS.DATE_CLAUSE_BREAKS)
CLAUSE_PUNCTUATION: str = _LISTS.CLAUSE_PUNCTUATION
JOINING_WORDS = tuple(_LISTS.JOINING_WORDS)


COUNT_WORDS = alternation(SMALL_NUMBER_WORDS)
"""A count said in words ("two", "fifteen"), the longest first: one alternation for every
pattern that reads a count."""


STEMMER = Stemmer.Stemmer("english")
"""The Snowball stemmer of English (PyStemmer, which BM25 already uses): every rule that
compares a user's word with a field's by stem ("rated" for ``rating``) uses this one."""


def said_of(field: MetadataField) -> str:
    """All a schema says of a field in words: its name with spaces, then its description
    ("model year Model year of the car")."""
    return f"{field.name.replace('_', ' ')} {field.description}"
