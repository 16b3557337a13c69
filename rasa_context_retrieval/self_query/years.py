"""Years said for an integer year field ("after 2005", "from 1979", "in the 90s", "2010 onwards").

A schema may keep the year as a number ("The year the movie was released"). The words around a
year mean what they mean before a date (``ranges.DATE_WORDS``), only the value is the year
itself: "after 2005" is ``gt 2005``, "in the 90s" ``gte 1990`` and ``lte 1999``. With two year
fields, none is guessed. A year counts only in a message about the documents
(``phrases.time_scope``): "I was born in 1985" alone filters nothing.
"""

from __future__ import annotations

import re
from collections.abc import Collection, Sequence

import inflection
from langchain_core.structured_query import Comparator

from rasa_context_retrieval.filters.schema import MetadataField
from rasa_context_retrieval.self_query import english
from rasa_context_retrieval.self_query.constraints import Constraint
from rasa_context_retrieval.self_query.engine import (
    Bound,
    Row,
    claim,
    conditions_on,
    open_end_rows,
    readings,
    said_period,
)
from rasa_context_retrieval.self_query.phrases import (
    CUE_STOPWORDS,
    alternation,
    said_of,
    time_scope,
)
from rasa_context_retrieval.self_query.ranges import (
    DATE_WORDS,
    OPEN_ENDED_AFTER,
    YEAR,
    date_words_pattern,
    endpoint_groups,
    range_pattern,
)

_LISTS, _PHRASES = english.section("years")

NOT_OWN_WORDS = CUE_STOPWORDS | {"year", "years", "when", "was", "were", "released", "made"}
# Words shorter than this ("new", "the") say nothing about which time field is meant.
MIN_DISTINCT_CHARS = 4
# A century is guessed for "the 90s": this decade digit and above are the 1900s.
LAST_CENTURY_FROM_DECADE = 3
RANGE = range_pattern(
    lambda group: f"(?P<{group}>{YEAR})",
    filler=_LISTS._FILLER,
    before=r"(?<![\w-])",
    after=r"(?!\w)",
)
# What the templates of this section in ``english.yaml`` are built from.
_FRAGMENTS = {
    "OPEN_ENDED_AFTER": OPEN_ENDED_AFTER,
    "_FILLER": _LISTS._FILLER,
    "_WORDS": date_words_pattern([*DATE_WORDS, "of"]),
    "_YEAR": YEAR,
}
DECADE = english.pattern("years", "DECADE", **_FRAGMENTS)
SINGLE = english.pattern("years", "SINGLE", **_FRAGMENTS)
ANY_YEAR = english.pattern("years", "ANY_YEAR", **_FRAGMENTS)
COMPARED = english.pattern("years", "COMPARED", **_FRAGMENTS)
# "2010 or later", "2015 or earlier": a year is the period of itself.
LATER, EARLIER = open_end_rows(YEAR, lambda match: (int(match["a"]), int(match["a"])), r"(?<!\w)")


def _range(match: re.Match[str]) -> list[Bound]:
    """ "from 1990 to 1995", "1990-1995": both ends; a range written backwards, nothing."""
    low, high = (int(match[group]) for group in endpoint_groups(match))
    return [(Comparator.GTE, low), (Comparator.LTE, high)] if low <= high else []


def _decade(match: re.Match[str]) -> list[Bound]:
    """ "in the 90s", "after the 2010s", "the 1960s": the ten years, the century guessed."""
    digit = int(match["decade"])
    century = match["century"] or (19 if digit >= LAST_CENTURY_FROM_DECADE else 20)
    first = int(century) * 100 + digit * 10
    return said_period(match, (first, first + 9))


def _single(match: re.Match[str]) -> list[Bound]:
    """ "after 2005", "from 1979", "in 2010"; "not in 2010" claims its words and says nothing."""
    year = int(match["a"])
    return said_period(match, (year, year))


# A year compared as old or new ("older than 2010", "2018 or newer"): the documents' year in a
# message about anything (a story says "in 2010", not "newer than 2010").
COMPARED_TABLE: tuple[Row[list[Bound] | None], ...] = (
    LATER,
    EARLIER,
    Row(COMPARED, _single),
)
# Every year phrase, in a message about the documents.
TABLE = (Row(RANGE, _range), Row(DECADE, _decade), *COMPARED_TABLE, Row(SINGLE, _single))


def is_year_field(field: MetadataField) -> bool:
    """An integer field of calendar years ("Year the game was first published"); "in years"
    or "Years of experience" keep a duration or an age, not a year."""
    return (
        field.type == "integer"
        and bool(_PHRASES.YEAR_WORD.search(said_of(field)))
        and not _PHRASES.DURATION_IN_YEARS.search(said_of(field))
    )


class YearPhrases:
    """Finds year conditions for the schema's one integer year field."""

    def __init__(self, fields: Sequence[MetadataField], item_nouns: Collection[str] = ()) -> None:
        year_fields = [field for field in fields if is_year_field(field)]
        self.attribute = year_fields[0].name if len(year_fields) == 1 else None
        # "Model year of the car": "model" and "car(s)" say a year is the documents' one.
        nouns = {
            word
            for field in year_fields
            for word in _PHRASES.NOUN.findall(said_of(field).lower())
            if word not in NOT_OWN_WORDS
        }
        own_words = {*item_nouns, *nouns, *map(inflection.pluralize, nouns)}
        self._scope = time_scope([field.name for field in year_fields], own_words)
        # Words of the one year field that no date field and no document noun shares.
        dated = " ".join(said_of(field).lower() for field in fields if field.type == "date")
        shared = {*_PHRASES.NOUN.findall(dated), *item_nouns}
        self._distinct = frozenset(
            word
            for word in nouns
            if self.attribute and len(word) >= MIN_DISTINCT_CHARS and word not in shared
        )
        own = alternation(own_words)
        self._year_before = english.pattern("years", "YEAR_BEFORE", **_FRAGMENTS, _OWN=own)

    def is_named(self, text: str) -> bool:
        """Whether ``text`` says a word only the year field has ("took effect" for "Year the
        policy took effect"): a year said with it is this field's, not a date field's."""
        return not self._distinct.isdisjoint(_PHRASES.NOUN.findall(text.lower()))

    def find(
        self, text: str, taken: list[Constraint], *, scoped: bool, values: Sequence[Constraint]
    ) -> list[Constraint]:
        """Year conditions; ``values`` are the value conditions found in ``text``: a year right
        before one is that year ("a 2015 Bordeaux")."""
        if self.attribute is None:
            return []
        said = readings(text, [self._named_by_year(values)])
        if scoped or said or self._scope.search(text):
            said += readings(text, TABLE)
        elif ANY_YEAR.search(text):
            said += readings(text, COMPARED_TABLE)
        return claim(said, taken, conditions_on(self.attribute))

    def _named_by_year(self, values: Sequence[Constraint]) -> Row[list[Bound] | None]:
        """ "a 2020 model", "2015 cars", "a 2015 Bordeaux", "2015 or 2016 models": a year before
        the field's or the documents' own noun or a value is that year, in a message about
        anything."""

        def read(match: re.Match[str]) -> list[Bound] | None:
            rest = match.string[match.end("chain") :]
            next_start = match.end("chain") + len(rest) - len(rest.lstrip(" -"))
            if match["next"] or any(value.start <= next_start < value.end for value in values):
                return [(Comparator.EQ, int(match["a"]))]
            return None

        return Row(self._year_before, read)
