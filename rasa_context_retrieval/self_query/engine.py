"""The one extractor engine: a table of phrase rows, scanned over a message, spans claimed once.

Years, dates and numbers are the same machine over different words. Each kind declares a table:
rows of a phrase pattern (from ``english.yaml``) and the reading of one match, the bounds it says
(``[(gte, 1990), (lte, 1999)]`` for "in the 90s"). The engine scans the rows, claims each span
once, the first and longest first (so that "from 2010 to 2015" is one range and never also "from
2010" and "2015"), and gives the words before a period ("after", "since", "in") one meaning,
whatever the period is. Yes/no phrases and the values a description explains in words are a
table of ``ValuePhrase`` rows, read the same way for both. A new phrasing is then a pattern row
in ``english.yaml`` and a labelled row in ``tests/self_query_cases.yaml``.
"""

from __future__ import annotations

import re
from collections.abc import Callable, Iterable, Iterator, Sequence
from dataclasses import dataclass, replace
from typing import Any, Generic, NamedTuple, TypeVar

import inflection
from langchain_core.structured_query import Comparator

from rasa_context_retrieval.self_query.constraints import Constraint, Spanned, overlaps_any
from rasa_context_retrieval.self_query.negation import negate, negated_before
from rasa_context_retrieval.self_query.ranges import (
    AFTER_END,
    BEFORE_START,
    EARLIER_WORDS,
    FROM_START,
    LATER_WORDS,
    NEGATED_BEFORE_PERIOD,
    UNTIL_END,
    WITHIN,
    date_word,
)

# How far before a phrase its negation ("not", "non-", "without") is looked for.
LOOKBEHIND_CHARS = 32
# How far before a period its negation ("not in 2023", "except after March") is looked for.
PERIOD_LOOKBEHIND_CHARS = 20
Value = TypeVar("Value")
Reading = TypeVar("Reading", covariant=True)
Bound = tuple[Comparator, Any]
"""One end of a condition: ``(gte, 1990)``."""
Period = tuple[Any, Any]
"""The first and the last value a period covers: a year (``(1990, 1990)``), a month of days."""


@dataclass(frozen=True)
class Said:
    """A reading of ``text[start:end]``: its bounds, none when the words claim without meaning
    anything ("from 2025 to 2022", "not in 2023"), so that no shorter reading of them counts."""

    start: int
    end: int
    bounds: list[Bound]


class Row(NamedTuple, Generic[Reading]):
    """A phrase pattern and how one of its matches reads (into bounds, or a richer record); a
    tuple, as tables are built per message."""

    pattern: re.Pattern[str]
    read: Callable[[re.Match[str]], Reading]
    claims: str | int = 0
    """The group whose words a match claims ("2 [movies about space]" claims only the count)."""


def scan(
    text: str, table: Iterable[Row[Value | None]], taken: Sequence[Constraint] = ()
) -> Iterator[tuple[re.Match[str], Value]]:
    """Every match of every row of ``table`` in ``text`` over words no ``taken`` condition has,
    row by row, with its reading; a row reads ``None`` for a match that is no phrase of its kind
    after all (a bare "2019" with no date word, "I have 2 bedrooms")."""
    for row in table:
        for match in row.pattern.finditer(text):
            if taken and overlaps_any(*match.span(row.claims), taken):
                continue
            reading = row.read(match)
            if reading is not None:
                yield match, reading


def readings(text: str, table: Iterable[Row[list[Bound] | None]]) -> list[Said]:
    """The spans and bounds that the rows of ``table`` read in ``text``."""
    return [Said(match.start(), match.end(), bounds) for match, bounds in scan(text, table)]


Reads = TypeVar("Reads", bound=Spanned)


def claim(
    said: Iterable[Reads],
    taken: Sequence[Constraint],
    read: Callable[[Reads], Sequence[Constraint] | None],
) -> list[Constraint]:
    """The conditions ``read`` makes of the readings kept, the first and longest first, each
    over words no kept one or ``taken`` condition has. A reading claims its words and those of
    its conditions even when it makes none (``[]``: "from 2025 to 2022"); ``None`` is no
    reading of this kind after all ("200 guests" on a schema with no field for them), which
    leaves its words to a shorter one."""
    claimed: list[Spanned] = list(taken)
    kept: list[Constraint] = []
    for reading in sorted(said, key=lambda reading: (reading.start, -reading.end)):
        if overlaps_any(reading.start, reading.end, claimed):
            continue
        conditions = read(reading)
        if conditions is None:
            continue
        claimed += [reading, *conditions]
        kept += conditions
    return kept


def conditions_on(
    attribute: str, as_value: Callable[[Any], Any] = lambda value: value
) -> Callable[[Said], list[Constraint]]:
    """How a reading of bounds reads on ``attribute``: one condition per bound, with the
    reading's span; the bound's value written ``as_value`` (a day as LangChain's date dict)."""
    return lambda reading: [
        Constraint(attribute, comparator, as_value(value), reading.start, reading.end)
        for comparator, value in reading.bounds
    ]


def period_bounds(word: str, first: Any, last: Any) -> list[Bound]:
    """The bounds a date word (``ranges.DATE_WORDS``) says of the period ``first``..``last``:
    "after" is past its end, "since" from its start, "before" before its start, "until" up to
    its end, "in" the period itself (``eq`` when it is one value: "in 2010", "on March 3")."""
    if word == WITHIN and first == last:
        return [(Comparator.EQ, first)]
    return {
        WITHIN: [(Comparator.GTE, first), (Comparator.LTE, last)],
        AFTER_END: [(Comparator.GT, last)],
        FROM_START: [(Comparator.GTE, first)],
        BEFORE_START: [(Comparator.LT, first)],
        UNTIL_END: [(Comparator.LTE, last)],
    }[word]


def said_period(
    match: re.Match[str], period: Period | None, word: str | None = None
) -> list[Bound]:
    """The bounds of a period said with a date word (``period_bounds``): ``word``, else the one
    said in the match's group ``word`` ("after the 2010s", "in 2010", no word: the period
    itself). None, its words claimed all the same, for a period that is no day ("February 30")
    or that is negated ("not in 2023": its negation is an "or")."""
    before = match.string[max(0, match.start() - PERIOD_LOOKBEHIND_CHARS) : match.start()]
    if period is None or NEGATED_BEFORE_PERIOD.search(before):
        return []
    return period_bounds(word or date_word(match.groupdict().get("word")), *period)


def open_end_rows(
    value: str, period: Callable[[re.Match[str]], Period | None], before: str = ""
) -> tuple[Row[list[Bound]], Row[list[Bound]]]:
    """The rows of a period left open at one end ("2010 or later", "March 2024 onwards", "2015
    or earlier"): from its start, or up to its end. ``value`` writes the period in group ``a``
    and ``period`` reads it; ``before`` guards its start."""

    def row(words: str, word: str) -> Row[list[Bound]]:
        pattern = re.compile(rf"{before}(?P<a>{value})\s+{words}(?!\w)", re.IGNORECASE)
        return Row(
            pattern,
            lambda match: [] if (said := period(match)) is None else period_bounds(word, *said),
        )

    return row(LATER_WORDS, FROM_START), row(EARLIER_WORDS, UNTIL_END)


Describes = Callable[[str, str, int, list[Constraint]], bool]
"""Whether the word ending at ``text[end]`` (the text ``before`` it given) says what the
documents are ("remote jobs", "tickets that are still open"); ``taken``: the conditions so far."""


@dataclass(frozen=True)
class ValuePhrase:
    """A phrase that says ``attribute`` is ``value`` wherever it is said."""

    attribute: str
    value: bool | int
    pattern: re.Pattern[str]
    single: bool = False
    """One everyday word ("remote", "direct"): it counts only where it describes the documents,
    or negated."""
    noun: bool = False
    """A thing written with an article ("a studio"): its plural names it as wanted."""
    denial: bool = False
    """The phrase says "no" itself ("out of stock"): the condition is read as a negation."""
    skip: Callable[[re.Match[str], str], bool] | None = None
    """Where, given the match and the text before it, the phrase means something else ("I am
    remote", "Marvel Studios")."""


def said_value(
    text: str, phrase: ValuePhrase, taken: list[Constraint], describes: Describes
) -> Constraint | None:
    """The condition of the first place ``phrase`` is said in ``text`` over words not
    ``taken``; a negation right before it (``negated_before``) or an ``un`` group in the match
    ("unmaintained") negates it."""

    def read(match: re.Match[str]) -> Constraint | None:
        start, end = match.span()
        before = text[max(0, start - LOOKBEHIND_CHARS) : start]
        if phrase.skip is not None and phrase.skip(match, before):
            return None
        negated = negated_before(before) != bool(match.groupdict().get("un"))
        plural = phrase.noun and inflection.singularize(match[0].lower()) != match[0].lower()
        if phrase.single and not (negated or plural or describes(text, before, end, taken)):
            return None
        said = Constraint(phrase.attribute, Comparator.EQ, phrase.value, start, end)
        return negate(said) if negated else replace(said, negated=phrase.denial)

    return next((said for _, said in scan(text, [Row(phrase.pattern, read)], taken)), None)


def first_said(
    text: str, phrases: Iterable[ValuePhrase], taken: list[Constraint], describes: Describes
) -> list[Constraint]:
    """One condition per attribute no ``taken`` condition has: the first of its ``phrases``
    (in order) that ``said_value`` finds over words not taken."""
    found: list[Constraint] = []
    for phrase in phrases:
        if all(constraint.attribute != phrase.attribute for constraint in taken + found):
            said = said_value(text, phrase, taken + found, describes)
            found += [said] if said is not None else []
    return found
