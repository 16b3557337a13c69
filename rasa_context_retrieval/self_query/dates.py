"""Date conditions in a user's message ("after 2023", "since March 2024", "in the last 6 months").

A written date is a period (a year, a month or a day); the word before it says which end of the
period the condition uses: "after 2023" is ``gt 2023-12-31``, "since March 2024" is
``gte 2024-03-01``, "before 2022" is ``lt 2022-01-01``, "in 2024" is both ends. Values are
LangChain's date dicts, ``{"date": "YYYY-MM-DD", "type": "date"}``, as its query parser produces.

Relative phrases ("this year", "the last 6 months", "since March") are resolved against an
injected clock so that they are testable. Only four-digit years from 1900 to 2099 count, and only
behind a date word, so "version 2.0" or "under 2000" never become dates. A date condition goes to
the schema's only date field, or to the date field whose name the user said ("updated in 2024"),
and only when the message is about change or documents at all (``DATE_SCOPE_WORDS``).
"""

from __future__ import annotations

import calendar
import datetime as dt
import re
from collections import Counter
from collections.abc import Callable, Collection, Sequence
from dataclasses import dataclass

import inflection
from dateutil.relativedelta import MO, relativedelta
from langchain_core.structured_query import Comparator

from rasa_context_retrieval.filters.schema import MetadataField
from rasa_context_retrieval.self_query import english
from rasa_context_retrieval.self_query.constraints import Constraint
from rasa_context_retrieval.self_query.engine import (
    Bound,
    Period,
    Row,
    Said,
    claim,
    conditions_on,
    open_end_rows,
    period_bounds,
    readings,
    said_period,
)
from rasa_context_retrieval.self_query.phrases import (
    CLAUSE_PUNCTUATION,
    CUE_STOPWORDS,
    DATE_CLAUSE_BREAKS,
    NAME_PREFIX_CHARS,
    SMALL_NUMBER_WORDS,
    TOLD_GONE_WORDS,
    alternation,
    any_word,
    phrase_alternation,
    time_scope,
)
from rasa_context_retrieval.self_query.ranges import (
    DATE_WORDS,
    FROM_START,
    OPEN_ENDED_AFTER,
    SPAN_JOINERS,
    SPAN_OPENERS,
    WITHIN,
    YEAR,
    date_word,
    date_words_pattern,
    endpoint_groups,
    range_pattern,
)
from rasa_context_retrieval.self_query.years import YearPhrases

_LISTS, _PHRASES = english.section("dates")

Clock = Callable[[], dt.date]

MONTHS = {name.lower(): number for number, name in enumerate(calendar.month_name) if name}
MONTHS.update({name.lower(): number for number, name in enumerate(calendar.month_abbr) if name})
MONTHS["sept"] = 9
MIN_DESCRIBED_WORDS = 2

# The one of ``WHICH_ONE`` ahead ("next March"); the others are gone ("this past May").
COMING = "coming"
WHICH_ONE: dict[str, str] = _LISTS.WHICH_ONE
# What the templates of this section in ``english.yaml`` are built from.
_FRAGMENTS = {
    "OPEN_ENDED_AFTER": OPEN_ENDED_AFTER,
    "_ANY_MONTH": "|".join(sorted(MONTHS, key=len, reverse=True)),
    "_COUNT": "|".join([r"\d{1,3}", *SMALL_NUMBER_WORDS]),
    "_DATE_WORDS": date_words_pattern(DATE_WORDS),
    "_FILLER": _LISTS._FILLER,
    # A month without a year must be written in full; "may" only capitalised (it is also a verb).
    "_LONE_MONTH": "|".join(
        [name.lower() for name in calendar.month_name if name and name != "May"] + ["(?-i:May)"]
    ),
    "_NAMED_DAYS": "|".join(_LISTS.NAMED_DAYS),
    "_ORDINAL": _LISTS._ORDINAL,
    "_SPAN_JOINERS": alternation(SPAN_JOINERS),
    "_SPAN_OPENERS": alternation(SPAN_OPENERS),
    "_WHICH": rf"(?:(?:this\s+)?(?P<which>{phrase_alternation(WHICH_ONE)})\s+)?",
    "_YEAR": YEAR,
}
DATE_TEXT = _FRAGMENTS["DATE_TEXT"] = english.pattern("dates", "DATE_TEXT", **_FRAGMENTS).pattern
RANGE = range_pattern(lambda group: f"(?P<{group}>{DATE_TEXT})", filler=_LISTS._FILLER)
DAY_SPAN = english.pattern("dates", "DAY_SPAN", **_FRAGMENTS)
SINGLE = english.pattern("dates", "SINGLE", **_FRAGMENTS)
# A date with no word before it: a day ("concerts March 3rd") or "next March". Messages seldom
# name a month, so one cheap scan spares the pattern.
BARE = english.pattern("dates", "BARE", **_FRAGMENTS)
ANY_MONTH = english.pattern("dates", "ANY_MONTH", **_FRAGMENTS)
RELATIVE = english.pattern("dates", "RELATIVE", **_FRAGMENTS)
NAMED_DAY = english.pattern("dates", "NAMED_DAY", **_FRAGMENTS)
# The message may say which way a month or day without a year lies, over the field's direction:
# "since" or a finite past verb ("took effect on 1 June") tells of a day gone, "will" of one to
# come; a participle ("concerts scheduled for March") says nothing of when.
TOLD_GONE = any_word(TOLD_GONE_WORDS)
# How far back in the clause before a date such a word still speaks of it.
TOLD_LOOKBEHIND_CHARS = 40
CLAUSE_END = any_word(DATE_CLAUSE_BREAKS, or_any_of=CLAUSE_PUNCTUATION)
YEAR_IN = re.compile(YEAR)
DAY_IN = english.pattern("dates", "DAY_IN", **_FRAGMENTS)
# How far back from a day the day, week (from Monday), month or year it falls in starts.
UNIT_START = {
    "day": relativedelta(),
    "week": relativedelta(weekday=MO(-1)),
    "month": relativedelta(day=1),
    "year": relativedelta(month=1, day=1),
}


@dataclass(frozen=True)
class WrittenDate:
    """What the user wrote: any of year, month and day (a lone month has no year)."""

    year: int | None
    month: int | None = None
    day: int | None = None

    @classmethod
    def read(cls, text: str) -> WrittenDate:
        """What ``text`` says; whether it is a day at all is for ``period`` to tell."""
        iso = _PHRASES.ISO_DATE.search(text)
        if iso:
            return cls(*(int(part) if part else None for part in iso.groups()))
        year = YEAR_IN.search(text)
        months = [MONTHS[w] for w in _PHRASES.MONTH_IN.findall(text.lower()) if w in MONTHS]
        month = months[0] if months else None
        day = DAY_IN.search(YEAR_IN.sub(" ", text)) if month else None
        return cls(int(year[0]) if year else None, month, int(day[1]) if day else None)

    def period(
        self, today: dt.date, year_hint: int | None = None, *, ahead: bool = False
    ) -> Period | None:
        """The days this date covers. A month or day without a year is the latest one up to
        today or, ``ahead`` (for a field of things that take place), the coming one."""
        year = self.year or year_hint
        if year is None and self.month is not None:
            said, now = (self.month, self.day or 0), (today.month, today.day if self.day else 0)
            if ahead:
                year = today.year if said >= now else today.year + 1
            else:
                year = today.year if said <= now else today.year - 1
        if year is None:
            return None
        try:  # "2024-13", "February 30": no day
            first = dt.date(year, self.month or 1, self.day or 1)
        except ValueError:
            return None
        if self.day is not None:
            return first, first
        return first, first + relativedelta(month=self.month or 12, day=31)


def looks_ahead(field: MetadataField) -> bool:
    """Whether a date field holds when something takes place ("Day the talk takes place", a
    departure, a deadline) rather than when something was recorded ("Date the article was
    published"): a month said without a year is then the coming one."""
    # The name says it first ("offer_ends", "last_updated"); the description when it does not.
    for said in (field.name.replace("_", " "), field.description):
        # A finite verb in the past ("Day the type became available") tells of a day gone too.
        ahead = bool(_PHRASES.AHEAD_WORDS.search(said))
        recorded = bool(_PHRASES.RECORDED_WORDS.search(said) or TOLD_GONE.search(said))
        if ahead != recorded:
            return ahead
    return False


def date_value(day: dt.date) -> dict[str, str]:
    """A date as LangChain's query parser writes it."""
    return {"date": day.isoformat(), "type": "date"}


class DatePhrases:
    """Finds date and year conditions and assigns each to the schema's one time field it is
    about: a date field or an integer field of calendar years."""

    def __init__(
        self, fields: Sequence[MetadataField], today: Clock, item_nouns: Collection[str] = ()
    ) -> None:
        dated = [field for field in fields if field.type == "date"]
        self._date_fields = [field.name for field in dated]
        self._years = YearPhrases(fields, item_nouns)
        self._ahead = frozenset(field.name for field in dated if looks_ahead(field))
        self._today = today
        # The verb a date field's description uses ("When the ticket was opened") names it too.
        self._verbs = {
            field.name: frozenset(_PHRASES.PARTICIPLE.findall(field.description.lower()))
            for field in dated
        }
        self._described = _own_description_words(dated, item_nouns)
        participles = set().union(*self._verbs.values())
        self._scope = time_scope(self._date_fields, {*item_nouns, *participles})

    def find(
        self, text: str, *, scoped: bool = False, values: Sequence[Constraint] = ()
    ) -> list[Constraint]:
        """Date and year conditions; ``scoped``: the message is already a filtering one (it names
        values, ``values``: a year right before one is that year, "a 2015 Bordeaux")."""
        found = self._dates(text, scoped=scoped)
        return found + self._years.find(text, found, scoped=scoped, values=values)

    def _dates(self, text: str, *, scoped: bool) -> list[Constraint]:
        """Date conditions: on the date field named, else on the one date field unless the
        message says a word of the year field, which then takes a year."""
        if not self._date_fields or not (scoped or self._scope.search(text)):
            return []
        named = self._named(text)
        lone = self._date_fields[0] if len(self._date_fields) == 1 else None
        attribute = named or (None if self._years.is_named(text) else lone)
        if attribute is None:
            return []
        today = self._today()
        ahead = attribute in self._ahead
        # A month in a message that only names a value ("Is the Lake District busy in August?")
        # is about that thing, not a record's date, unless a year is said.
        about_records = not ahead and not self._scope.search(text)
        # A year with no month ("before 2021") is what an integer year field holds; a date
        # field takes it only when the message names that date field.
        years_elsewhere = self._years.attribute is not None and named is None
        said = []
        for reading in self._conditions(text, today, ahead):
            if about_records and not YEAR_IN.search(text, reading.start, reading.end):
                continue
            written = WrittenDate.read(text[reading.start : reading.end])
            if years_elsewhere and written.year is not None and written.month is None:
                reading = Said(reading.start, reading.end, [])
            said.append(reading)
        # A date phrase claims its words even with no condition ("from 2025 to 2022").
        return claim(said, (), conditions_on(attribute, as_value=date_value))

    def _named(self, text: str) -> str | None:
        """The one date field ``text`` names, if it names one."""
        lowered = text.lower()
        said = set(_PHRASES.WORD.findall(lowered))
        # The first tier that names one field decides; none or two named: no filter.
        tiers: tuple[Callable[[str], object], ...] = (
            # The name said whole ("released") or the description's verb.
            lambda name: set(name.lower().split("_")) <= said or self._verbs[name] & said,
            # Two words only one description has ("security updates"), over a noun that only
            # shares a name's first letters ("releases" for ``released``).
            lambda name: len(self._described[name] & said) >= MIN_DESCRIBED_WORDS,
            # The name's first letters ("publish" for ``published``), or the description's verb.
            lambda name: (
                any(word[:NAME_PREFIX_CHARS] in lowered for word in name.lower().split("_"))
                or self._verbs[name] & said
            ),
        )
        for names_it in tiers:
            named = [name for name in self._date_fields if names_it(name)]
            if len(named) == 1:
                return named[0]
        return None

    def _conditions(self, text: str, today: dt.date, ahead: bool) -> list[Said]:
        """Every date phrase of ``text`` read on ``today``; ``ahead``: a month or day without a
        year is the coming one (the field's direction, unless the message tells)."""

        def told(match: re.Match[str]) -> bool:
            return told_ahead(text, match.start(), ahead)

        def span(match: re.Match[str]) -> list[Bound]:
            low, high = endpoint_groups(match)
            return _range(match[low], match[high], today, told(match))

        def day_span(match: re.Match[str]) -> list[Bound]:
            first = _PHRASES.DAY_OF_MONTH.sub(match["first"], match["b"], count=1)
            return _range(first, match["b"], today, told(match))

        def single(match: re.Match[str]) -> list[Bound] | None:
            said_word = " ".join((match.groupdict().get("word") or "").lower().split())
            which = WHICH_ONE.get(" ".join((match["which"] or "").lower().split()))
            written = WrittenDate.read(match["a"])
            # A bare year or month ("2019", "March") needs a word that says how.
            if not said_word and not which and written.day is None:
                return None
            ahead_here = which == COMING if which else said_word != "since" and told(match)
            # "from" is "during" for a record ("films from 2020") but "from then on" for things
            # that take place ("boats available from July").
            word = FROM_START if said_word == "from" and ahead_here else None
            return said_period(match, written.period(today, ahead=ahead_here), word)

        def end_of(match: re.Match[str]) -> list[Bound]:
            unit = match["unit"].lower()
            day = today + relativedelta(**{unit + "s": 1}) if match["next"] else today
            return [(Comparator.LTE, _unit_period(day, unit)[1])]

        def named_day(match: re.Match[str]) -> list[Bound]:
            day = today + dt.timedelta(days=_LISTS.NAMED_DAYS[match["day"].lower()])
            return said_period(match, (day, day))

        table: list[Row[list[Bound] | None]] = [
            Row(RANGE, span),
            Row(DAY_SPAN, day_span),
            Row(SINGLE, single),
            *([Row(BARE, single)] if ANY_MONTH.search(text) else []),
            *open_end_rows(
                DATE_TEXT,
                lambda match: WrittenDate.read(match["a"]).period(today, ahead=told(match)),
            ),
            Row(RELATIVE, lambda match: _relative(match, today)),
            Row(_PHRASES.END_OF, end_of),
            Row(NAMED_DAY, named_day),
        ]
        return readings(text, table)


def _own_description_words(
    fields: Sequence[MetadataField], item_nouns: Collection[str]
) -> dict[str, frozenset[str]]:
    """The content words only one date field's description has, as written and in the plural
    or singular ("Last day the release receives security updates": "security", "updates"); two
    of them said name that field. Words two descriptions share ("day", "release") and the
    documents' nouns name none."""
    words = {
        field.name: {
            word
            for word in _PHRASES.DESCRIBED_WORD.findall(field.description.lower())
            if word not in CUE_STOPWORDS and word not in item_nouns
        }
        for field in fields
    }
    counts = Counter(word for said in words.values() for word in said)
    owned = {}
    for name, own in words.items():
        kept = {word for word in own if counts[word] == 1}
        nouns = {word for word in kept if not word.endswith(("ed", "es", "s"))}
        forms = {inflection.pluralize(word) for word in nouns}
        forms |= {inflection.singularize(word) for word in kept if word.endswith("s")}
        owned[name] = frozenset(kept | forms)
    return owned


def told_ahead(text: str, start: int, ahead: bool) -> bool:
    """Whether a month or day without a year said at ``text[start]`` is the coming one: as the
    clause before it tells ("since", "took effect", "will"), else as its field looks."""
    before = text[max(0, start - TOLD_LOOKBEHIND_CHARS) : start]
    clause = CLAUSE_END.split(before)[-1]
    return not TOLD_GONE.search(clause) and (bool(_PHRASES.TOLD_COMING.search(clause)) or ahead)


def _range(low_text: str, high_text: str, today: dt.date, ahead: bool) -> list[Bound]:
    low, high = WrittenDate.read(low_text), WrittenDate.read(high_text)
    high_period = high.period(today, ahead=ahead)
    if high_period is None:
        return []
    # "from November to March 2025": the first month borrows the year and may fall before it.
    wraps = low.year is None and (low.month or 0) > (high.month or 13)
    low_period = low.period(today, year_hint=high_period[0].year - wraps)
    if low_period is None or low_period[0] > high_period[1]:
        return []
    return [(Comparator.GTE, low_period[0]), (Comparator.LTE, high_period[1])]


def _relative(match: re.Match[str], today: dt.date) -> list[Bound]:
    """ "the last 6 months", "last year", "this week" (the whole week, as a named period is);
    "next week" and "the next 3 days"."""
    unit, which = match["unit"].lower(), match["which"].lower()
    count = (match["count"] or "").lower()
    word = date_word(match["word"])
    one = relativedelta(**{unit + "s": 1})
    ahead = which in ("next", "coming", "upcoming")
    if which in ("this", "current"):  # "in" it is the whole period, as "in June" is
        first, last = _unit_period(today, unit)
        return period_bounds(word, first, last if word == WITHIN else today)
    # "last year" is the previous calendar year; "the last year" the past twelve months.
    if not count and (ahead or (match["the"] is None and which in ("last", "previous"))):
        return period_bounds(word, *_unit_period(today + (one if ahead else -one), unit))
    span = (int(count) if count.isdigit() else SMALL_NUMBER_WORDS.get(count, 1)) * one
    try:
        return (
            [(Comparator.GTE, today), (Comparator.LTE, today + span)]
            if ahead
            else [(Comparator.GTE, today - span)]
        )
    except (ValueError, OverflowError):  # "the last 999 years" before year 1
        return []


def _unit_period(day: dt.date, unit: str) -> Period:
    """The first and the last day of the day, week, month or year that ``day`` falls in."""
    start = day + UNIT_START[unit]
    return start, start + relativedelta(**{unit + "s": 1}) - dt.timedelta(days=1)
