"""The one grammar of a range said in words, for numbers, years and dates alike.

"between 300 and 600", "from 2010 to 2015", "1990-1995", "March to May", "2018 or later",
"2010 onwards", "2015 or earlier": the *shape* of a range is the same whatever its endpoints are,
so it is written once here. Each kind of value (``numbers``, ``years``, ``dates``) supplies only
how an endpoint is written (a pattern builder, given a group name) and reads the endpoints it
matched; which words open, join or close a range are data of this module:

* a span: an opener (``SPAN_OPENERS``), an optional filler ("the", "year"), an endpoint, a joiner
  (``SPAN_JOINERS``), and the other endpoint: "between 10 and 20", "from the year 1990 to 1995";
* a compact range: two endpoints joined by ``COMPACT_JOINERS`` ("10-20", "1990 to 1995");
* an open end: an endpoint followed by ``LATER_WORDS`` or ``EARLIER_WORDS`` ("2010 or later");
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

_LISTS = english.words("ranges")

Endpoint = Callable[[str], str]
"""A regular expression for one endpoint, its value in the named group given."""

SPAN_OPENERS = tuple(_LISTS["SPAN_OPENERS"])
SPAN_JOINERS = tuple(_LISTS["SPAN_JOINERS"])
COMPACT_JOINERS = tuple(_LISTS["COMPACT_JOINERS"])
LATER_WORDS: str = _LISTS["LATER_WORDS"]
EARLIER_WORDS: str = _LISTS["EARLIER_WORDS"]
# "from 2010 onwards" is an open end, not "from 2010": a single value is not read before these.
OPEN_ENDED_AFTER = rf"(?!\s*(?:{LATER_WORDS}|{EARLIER_WORDS})(?!\w))"
_GROUPS = tuple(_LISTS["_GROUPS"])

# One-sided bounds of an amount: the word before it and the comparison it makes.
PREFIX_COMPARATORS: dict[str, Comparator] = {
    "at most": Comparator.LTE,
    "no more than": Comparator.LTE,
    "not more than": Comparator.LTE,
    "up to": Comparator.LTE,
    "a maximum of": Comparator.LTE,
    "maximum of": Comparator.LTE,
    "max of": Comparator.LTE,
    "no higher than": Comparator.LTE,
    "no greater than": Comparator.LTE,
    "<=": Comparator.LTE,
    "under": Comparator.LT,
    "below": Comparator.LT,
    "less than": Comparator.LT,
    "lower than": Comparator.LT,
    "fewer than": Comparator.LT,
    "cheaper than": Comparator.LT,
    "shorter than": Comparator.LT,
    "smaller than": Comparator.LT,
    "beneath": Comparator.LT,
    "lighter than": Comparator.LT,
    "younger than": Comparator.LT,
    "<": Comparator.LT,
    "at least": Comparator.GTE,
    "no less than": Comparator.GTE,
    "not less than": Comparator.GTE,
    "no fewer than": Comparator.GTE,
    "a minimum of": Comparator.GTE,
    "minimum of": Comparator.GTE,
    "min of": Comparator.GTE,
    ">=": Comparator.GTE,
    "over": Comparator.GT,
    "above": Comparator.GT,
    "more than": Comparator.GT,
    "greater than": Comparator.GT,
    "higher than": Comparator.GT,
    "exceeding": Comparator.GT,
    "beyond": Comparator.GT,
    "pricier than": Comparator.GT,
    "longer than": Comparator.GT,
    "taller than": Comparator.GT,
    "wider than": Comparator.GT,
    "bigger than": Comparator.GT,
    "larger than": Comparator.GT,
    "more expensive than": Comparator.GT,
    "heavier than": Comparator.GT,
    "older than": Comparator.GT,
    ">": Comparator.GT,
    "exactly": Comparator.EQ,
    "precisely": Comparator.EQ,
    "equal to": Comparator.EQ,
}

# One-sided bounds of a period (a date or a year): whether the value's period is excluded or
# included, from its start or its end; ``WITHIN`` is the period itself.
AFTER_END, FROM_START, BEFORE_START, UNTIL_END, WITHIN = "gt", "gte", "lt", "lte", "in"
DATE_WORDS = {
    "after": AFTER_END,
    "beyond": AFTER_END,
    "past": AFTER_END,
    "later than": AFTER_END,
    "newer than": AFTER_END,
    "since": FROM_START,
    "from": WITHIN,
    "starting": FROM_START,
    "starting from": FROM_START,
    "from the start of": FROM_START,
    "starting in": FROM_START,
    "as of": FROM_START,
    "before": BEFORE_START,
    "prior to": BEFORE_START,
    "earlier than": BEFORE_START,
    "older than": BEFORE_START,
    "until": UNTIL_END,
    "till": UNTIL_END,
    "up to": UNTIL_END,
    "through": UNTIL_END,
    "by": UNTIL_END,
    "no later than": UNTIL_END,
    "in": WITHIN,
    "on": WITHIN,
    "during": WITHIN,
    "throughout": WITHIN,
    "for": WITHIN,
}
WORD_GUARDS = _LISTS["WORD_GUARDS"]


def date_words_pattern(words: Collection[str]) -> str:
    """One alternation of date words, the longest first, each guarded as it needs."""
    return "|".join(
        WORD_GUARDS.get(said, "") + r"\s+".join(said.split())
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


def open_ended(value: str, before: str = "") -> tuple[re.Pattern[str], re.Pattern[str]]:
    """ "<value> or later" / "onwards" and "<value> or earlier", the value in group ``a``;
    ``before`` guards the start of the value."""
    later = re.compile(rf"{before}(?P<a>{value})\s+{LATER_WORDS}(?!\w)", re.IGNORECASE)
    earlier = re.compile(rf"{before}(?P<a>{value})\s+{EARLIER_WORDS}(?!\w)", re.IGNORECASE)
    return later, earlier
