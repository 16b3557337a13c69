"""One filter condition found in the user's words, with where it was said.

Every extractor (values, numbers, dates) reports ``Constraint``s; ``rules`` merges them into one
filter tree and, when asked, cuts their words out of the search text. Keeping the span next to
the condition is what makes that cut possible.

A condition said inside the user's own past story ("I cooked a thai curry last week, what else
could I make?", "I watched a movie in 2010", "I've been a member at Clapham since 2019", "our
box in us-east-1 got rebooted") is not a wish for documents of that kind:
``told_as_personal_past`` is the one test every kind of condition goes through.
"""

from __future__ import annotations

from collections.abc import Iterable
from dataclasses import dataclass
from typing import Any, Protocol

from langchain_core.structured_query import Comparator

from rasa_context_retrieval.self_query import english

_LISTS, _PHRASES = english.section("constraints")


@dataclass(frozen=True)
class Constraint:
    """``attribute <comparator> value``, said in ``text[start:end]`` (filter words included)."""

    attribute: str
    comparator: Comparator
    value: Any
    start: int
    end: int
    each: bool = False
    """A value of a list field said with "and" next to others ("a balcony and a dishwasher"):
    each must be there, rather than any of them."""
    negated: bool = False
    """The extractor read a negation said with it ("not on Android", "can't ship today");
    ``negation.bind_negations`` leaves such a condition as it is."""


class Spanned(Protocol):
    """Anything said at ``text[start:end]``: a condition, a reading, a value found."""

    @property
    def start(self) -> int: ...
    @property
    def end(self) -> int: ...


def overlaps_any(start: int, end: int, taken: Iterable[Spanned]) -> bool:
    """Whether ``text[start:end]`` shares a word with anything ``taken`` (a span is claimed
    once: the one test of every extractor)."""
    return any(said.start < end and start < said.end for said in taken)


PERSONAL_PAST = english.pattern(
    "constraints",
    "PERSONAL_PAST",
    _IN_CLAUSE=_LISTS._IN_CLAUSE,
    _IRREGULAR_PAST=_LISTS._IRREGULAR_PAST,
)
# "Last week Teams was down for me": the mention is the subject of a past state the user had.
PAST_FOR_ME_AFTER = english.pattern(
    "constraints", "PAST_FOR_ME_AFTER", _IN_CLAUSE=_LISTS._IN_CLAUSE
)
HAPPENED_AFTER = english.pattern(
    "constraints", "HAPPENED_AFTER", _IRREGULAR_PAST=_LISTS._IRREGULAR_PAST
)
PERSONAL_LOOKBEHIND_CHARS = 60
PERSONAL_LOOKAHEAD_CHARS = 60


def told_as_personal_past(text: str, start: int) -> bool:
    """Whether the mention at ``text[start]`` sits in a first-person past clause."""
    before = text[max(0, start - PERSONAL_LOOKBEHIND_CHARS) : start]
    if PERSONAL_PAST.search(before):
        return True
    # The span of a condition may open on its preposition ("in us-east-1").
    place = _PHRASES.PLACE_PREPOSITION.match(text, start)
    said = place.end() if place else start
    if _PHRASES.OWN_THING_BEFORE.search(text, max(0, said - PERSONAL_LOOKBEHIND_CHARS), said) and (
        HAPPENED_AFTER.match(text, said)
    ):
        return True
    return bool(PAST_FOR_ME_AFTER.match(text[start : start + PERSONAL_LOOKAHEAD_CHARS]))
