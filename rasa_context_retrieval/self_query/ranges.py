"""The one grammar of a range said in words, for numbers, years and dates alike.

"between 300 and 600", "from 2010 to 2015", "1990-1995", "March to May", "2018 or later",
"2010 onwards", "2015 or earlier": the *shape* of a range is the same whatever its endpoints are,
so it is written once here. Each kind of value (``numbers``, ``years``, ``dates``) supplies only
how an endpoint is written (a pattern builder, given a group name) and reads the endpoints it
matched; which words open, join or close a range are data of this module:

* a span: an opener (``SPAN_OPENERS``), an optional filler ("the", "year"), an endpoint, a joiner
  (``SPAN_JOINERS``), and the other endpoint: "between 10 and 20", "from the year 1990 to 1995";
* a compact range: two endpoints joined by ``COMPACT_JOINERS`` ("10-20", "1990 to 1995");
* an open end: an endpoint followed by ``LATER_WORDS`` or ``EARLIER_WORDS`` ("2010 or later",
  read by ``engine.open_end_rows``);
* a one-sided bound: a word before one value. Amounts and periods read these words differently
  ("older than 40" is more years, "older than 2010" an earlier year), so there are two tables:
  ``PREFIX_COMPARATORS`` for amounts ("under", "over", "at least") and ``DATE_WORDS`` for dates
  and years ("after", "before", "since", "in"), both here, both data.

A match names its endpoints ``low`` and ``high`` through :func:`endpoint_groups`; which is lower is
for the kind to decide (dates and years keep the order written, numbers sort).
"""

from __future__ import annotations

import re
from collections.abc import Callable, Collection

from langchain_core.structured_query import Comparator

from rasa_context_retrieval.self_query import english
from rasa_context_retrieval.self_query.phrases import alternation

_LISTS, _PHRASES = english.section("ranges")

Endpoint = Callable[[str], str]
"""A regular expression for one endpoint, its value in the named group given."""

SPAN_OPENERS = tuple(_LISTS.SPAN_OPENERS)
SPAN_JOINERS = tuple(_LISTS.SPAN_JOINERS)
COMPACT_JOINERS = tuple(_LISTS.COMPACT_JOINERS)
LATER_WORDS: str = _LISTS.LATER_WORDS
EARLIER_WORDS: str = _LISTS.EARLIER_WORDS
# "from 2010 onwards" is an open end, not "from 2010": a single value is not read before these.
OPEN_ENDED_AFTER = rf"(?!\s*(?:{LATER_WORDS}|{EARLIER_WORDS})(?!\w))"
_GROUPS = tuple(_LISTS._GROUPS)
YEAR: str = _LISTS.YEAR
NEGATED_BEFORE_PERIOD = _PHRASES.NEGATED_BEFORE_PERIOD

# One-sided bounds of an amount: the words before it and the comparison they make.
PREFIX_COMPARATORS = {
    phrase: Comparator(comparator) for phrase, comparator in _LISTS.PREFIX_COMPARATORS.items()
}

# One-sided bounds of a period (a date or a year): whether the value's period is excluded or
# included, from its start or its end; ``WITHIN`` is the period itself.
AFTER_END, FROM_START, BEFORE_START, UNTIL_END, WITHIN = "gt", "gte", "lt", "lte", "in"
DATE_WORDS: dict[str, str] = _LISTS.DATE_WORDS


def date_word(said: str | None) -> str:
    """The one-sided bound a date word said before a period or a year makes (``DATE_WORDS``);
    no word, or one not in the table ("of"), is the period itself."""
    return DATE_WORDS.get(" ".join((said or "in").lower().split()), WITHIN)


def date_words_pattern(words: Collection[str]) -> str:
    """One alternation of date words, the longest first, each guarded as it needs."""
    return "|".join(
        _LISTS.WORD_GUARDS.get(said, "") + r"\s+".join(said.split())
        for said in sorted(words, key=len, reverse=True)
    )


def range_pattern(
    endpoint: Endpoint, *, filler: str = "", before: str = "", after: str = ""
) -> re.Pattern[str]:
    """Spans and compact ranges of ``endpoint`` values (module docstring).

    ``filler`` may stand before each endpoint of a span ("from the year 1990"); ``before`` guards
    the start of a compact range (a span starts at its opener) and ``after`` the end of both.
    """
    (span_low, span_high), (compact_low, compact_high) = _GROUPS
    return re.compile(
        rf"(?<!\w)(?:{alternation(SPAN_OPENERS)})\s+{filler}{endpoint(span_low)}"
        rf"\s+(?:{alternation(SPAN_JOINERS)})\s+{filler}{endpoint(span_high)}{after}"
        rf"|{before}{endpoint(compact_low)}\s*(?:{alternation(COMPACT_JOINERS)})\s*"
        rf"{endpoint(compact_high)}{after}",
        re.IGNORECASE,
    )


def endpoint_groups(match: re.Match[str]) -> tuple[str, str]:
    """The group names of the two endpoints a :func:`range_pattern` match found, as written."""
    return next(groups for groups in _GROUPS if match[groups[0]] is not None)
