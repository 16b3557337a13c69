"""Numeric comparisons in a user's message ("under $20 a month", "at least 3 devices").

A number becomes a filter only when two things hold: a comparison is said around it (under,
at least, between ... and ..., 20 or less, exactly) and the words around it point to exactly one
integer or float field. The pointing is done with cue words: the field's name and description
words, currency words for a monetary field, a rate such as "a month" matching ``price_per_month``.
Anything else ("error 404", "reset 2FA", "more than 3 files", "over 2 months ago") gives no filter:
a missing filter costs a little ranking, a wrong one hides the answer. Without a number, "no"
before a money field's own name ("with no monthly fee") says it is 0.

The comparison phrases are hand-written regular expressions: libraries that parse quantities
(quantulum3, numerizer) read "20 dollars" but not "no more than" or "20 or less" as comparisons.
"""

from __future__ import annotations

import math
import re
from collections.abc import Collection, Sequence
from dataclasses import dataclass
from itertools import takewhile

import inflection
from langchain_core.structured_query import Comparator

from rasa_context_retrieval.filters.schema import MetadataField
from rasa_context_retrieval.filters.values import FLOAT_EXACT_LIMIT, Number, parse_number
from rasa_context_retrieval.self_query import english
from rasa_context_retrieval.self_query.constraints import Constraint, overlaps_any
from rasa_context_retrieval.self_query.engine import Row, claim, scan
from rasa_context_retrieval.self_query.limits import OWNED_BEFORE
from rasa_context_retrieval.self_query.phrases import (
    COUNT_WORDS,
    CUE_STOPWORDS,
    CURRENCY_SYMBOLS,
    CURRENCY_WORDS,
    DATA_SIZES,
    MEASURE_ABBREVIATIONS,
    MONETARY_CUES,
    MONETARY_FIELD_WORDS,
    MONTHS_IN,
    MULTIPLIERS,
    PERIOD_WORDS,
    PHRASE_OPENERS,
    SMALL_NUMBER_WORDS,
    STEMMER,
    SUBUNIT_WORDS,
    TIME_UNIT_SECONDS,
    TIME_UNIT_WORDS,
    alternation,
    any_word,
    phrase_alternation,
    said_of,
)
from rasa_context_retrieval.self_query.ranges import (
    PREFIX_COMPARATORS,
    endpoint_groups,
    range_pattern,
)

_LISTS, _PHRASES = english.section("numbers")

NAME_CUE_WEIGHT = 2
DESCRIPTION_CUE_WEIGHT = 1
CONTEXT_CHARS = 40
CONTEXT_WORDS = 3

MIN_PLAIN_AMOUNT = 5

_SYMBOLS = re.escape(CURRENCY_SYMBOLS)
_CURRENCY_WORDS = "|".join(CURRENCY_WORDS)
_UNITS = alternation(TIME_UNIT_WORDS)
# Digits with thousands commas and a multiplier ("80k", "100 thousand"), a number word, or "an"
# and "half an" before a unit of time ("more than an hour", "under half an hour").
_NUMBER = (
    r"(?:\d{1,3}(?:,\d{3})+(?:\.\d+)?|\d+(?:\.\d+)?)(?:k|\s?(?:thousand|million|grand))?|"
    + COUNT_WORDS
    + rf"|(?:half\s+)?an?(?=\s+(?:{_UNITS})(?!\w))"
)
OWNED_CHARS = 16
OWNED_OR_FOR_BEFORE = re.compile(rf"{OWNED_BEFORE.pattern}|\bfor\s+$", re.IGNORECASE)


_GLUED_UNITS = alternation({*MEASURE_ABBREVIATIONS.values(), *DATA_SIZES, *SUBUNIT_WORDS})


def _amount(tag: str) -> str:
    """A number with optional currency before or after it, or a unit of measure written onto it
    ("200mm", "500g", "10GB", "25p"); ``2FA`` and ``v2`` are not amounts."""
    return (
        rf"(?P<{tag}_pre>[{_SYMBOLS}]\s?)?(?<![\w.,])(?P<{tag}>{_NUMBER})"
        rf"(?:\s?(?P<{tag}_post>[{_SYMBOLS}]|(?:{_CURRENCY_WORDS})(?!\w))|(?!\w|[.,]\d)"
        rf"|(?=(?:{_GLUED_UNITS})\b))"
    )


RANGE = range_pattern(_amount)
# "under $20", "at least an hour"; "above price level 2", "at least level 3": a comparison with
# the field's name between it and the number.
PREFIX = re.compile(
    rf"(?<!\w)(?P<comparator>{phrase_alternation(PREFIX_COMPARATORS)})"
    rf"(?:\s*(?:an?\s+)?|\s+(?P<named>[a-z]+(?:[\s_-]+[a-z]+)?)\s+){_amount('n')}",
    re.IGNORECASE,
)
POSTFIX = english.pattern("numbers", "POSTFIX", _AMOUNT=_amount("n"))
# Where a count of a field may start: after "top"/"best"/"first" it is a limit.
_COUNT_START = r"(?<![\w$€£.,/-])(?<!top\s)(?<!best\s)(?<!first\s)"
# "for 10 people", "can take 120 people", "a 16 year old": a party that must fit, a lower bound
# on a field of the most allowed ("Most people allowed on board", ``max_players``,
# ``capacity``) and an upper bound on a field of the least required ("Youngest recommended
# age", ``min_age``).
PEOPLE_WORDS = tuple(_LISTS.PEOPLE_WORDS)
_PARTY = {"_COUNT": COUNT_WORDS, "_PEOPLE": "|".join(PEOPLE_WORDS)}
FOR_PARTY = english.pattern("numbers", "FOR_PARTY", **_PARTY)
HOLDING_VERB = english.pattern("numbers", "HOLDING_VERB", **_PARTY)
AGED_PERSON = english.pattern("numbers", "AGED_PERSON", **_PARTY)
_PERIOD = alternation(PERIOD_WORDS)
RATE_AFTER = english.pattern("numbers", "RATE_AFTER", _PERIOD=_PERIOD)
UNIT_AFTER = english.pattern("numbers", "UNIT_AFTER", _UNITS=_UNITS)
# "Total cooking time in minutes", "Term (months)": the unit a field is kept in, when declared.
DECLARED_UNIT = english.pattern("numbers", "DECLARED_UNIT", _UNITS=_UNITS)
# Every spelling of a unit besides time to the kind of unit it is ("kilometres" -> "km").
UNIT_KINDS = {
    **{unit: unit for unit in MEASURE_ABBREVIATIONS.values()},
    **SUBUNIT_WORDS,
    **DATA_SIZES,
    **MEASURE_ABBREVIATIONS,
}
MEASURE_AFTER = english.pattern("numbers", "MEASURE_AFTER", _MEASURES=alternation(UNIT_KINDS))
OPPOSITE = {
    Comparator.EQ: Comparator.NE,
    Comparator.LT: Comparator.GTE,
    Comparator.LTE: Comparator.GT,
    Comparator.GT: Comparator.LTE,
    Comparator.GTE: Comparator.LT,
}
# Most messages hold no number at all; one cheap scan spares the comparison patterns.
ANY_NUMBER = re.compile(
    rf"\d|(?<!\w)(?:{'|'.join(SMALL_NUMBER_WORDS)}|an?\s+(?:{_UNITS}))(?!\w)", re.IGNORECASE
)
# A number said in words, and "an" or "half an" before a unit of time ("more than an hour").
NUMBER_WORDS = {**SMALL_NUMBER_WORDS, "a": 1, "an": 1, "half a": 0.5, "half an": 0.5}
MONEY_NOUNS = frozenset(_LISTS.MONEY_NOUNS)
# The bound a party that must fit sets on a field of the most allowed, else of the least required.
PARTY_BOUNDS = (
    (Comparator.GTE, frozenset(_LISTS.MAXIMUM_WORDS)),
    (Comparator.LTE, frozenset(_LISTS.MINIMUM_WORDS)),
)
# Words that open another phrase: what follows names something else ("between 40 and 60p with
# a unit rate of at most 24.5p": "unit rate" is the second comparison's).
PHRASE_OPENER = any_word(PHRASE_OPENERS)


def cue_key(word: str) -> str:
    """The form a cue word is compared in, for field words and user words alike: its Snowball
    stem, so that "rated" is a cue for a ``rating`` field and "minutes" for "Reading time"."""
    word = MEASURE_ABBREVIATIONS.get(word, word)
    return str(STEMMER.stemWord(PERIOD_WORDS.get(word, word)))


STOP_KEYS = frozenset(cue_key(word) for word in CUE_STOPWORDS)
PEOPLE_KEYS = frozenset(cue_key(word) for word in PEOPLE_WORDS)


def _cue_words(text: str) -> list[str]:
    keys = (cue_key(word) for word in _PHRASES.WORD.findall(text.lower()))
    return [key for key in keys if key not in STOP_KEYS]


@dataclass(frozen=True)
class NumericField:
    """A numeric field and the words that point to it, weighted."""

    name: str
    integer: bool
    cues: dict[str, int]
    unit: str | None = None
    """The unit of time the field is kept in ("minute" for "Total cooking time in minutes")."""
    name_words: frozenset[str] = frozenset()
    """The words of its name in the singular ("star" for ``stars``)."""
    party: Comparator | None = None
    """How a party that must fit ("for 10 people") bounds it: ``gte`` the most of something
    allowed ("Most people allowed on board"), ``lte`` the least required ("Youngest recommended
    age")."""
    kinds: frozenset[str] = frozenset()
    """The units besides time it is kept in (``PERCENT``, ``MONEY``, "km", "gb")."""

    @classmethod
    def from_field(
        cls, field: MetadataField, item_keys: frozenset[str] = frozenset()
    ) -> NumericField:
        """``item_keys``: the documents' nouns, which point to no one field ("Weight of the
        bike", "Model year of the bike")."""
        name_words = set(_cue_words(field.name.replace("_", " ")))
        description_words = set(_cue_words(field.description)) - item_keys
        cues = dict.fromkeys(description_words, DESCRIPTION_CUE_WEIGHT)
        cues.update(dict.fromkeys(name_words, NAME_CUE_WEIGHT))
        said = _PHRASES.WORD.findall(said_of(field).lower())
        # From every word of its name and description, the documents' nouns too.
        in_subunit = bool(SUBUNIT_WORDS.keys() & set(said))
        monetary = not in_subunit and any(
            inflection.singularize(word) in MONETARY_FIELD_WORDS for word in said
        )
        if monetary:
            cues.update(dict.fromkeys(map(cue_key, MONETARY_CUES), NAME_CUE_WEIGHT))
        # An amount of money is counted over its time words ("day_rate"), never kept in them.
        unit = None if monetary or in_subunit else _declared_unit(field.description, said)
        if unit is not None:
            cues[_LISTS.DURATION_CUE] = NAME_CUE_WEIGHT
        singular = frozenset(map(inflection.singularize, _PHRASES.WORD.findall(field.name.lower())))
        party = next((bound for bound, words in PARTY_BOUNDS if not words.isdisjoint(said)), None)
        kinds = _kinds(said, monetary=monetary)
        cues.update(dict.fromkeys(map(_kind_cue, kinds), NAME_CUE_WEIGHT))
        return cls(field.name, field.type == "integer", cues, unit, singular, party, kinds)

    def takes(self, kind: str | None) -> bool:
        """Whether a number said in ``kind`` may be this field's: one kept in that unit, or in
        no unit at all for a measure ("Length of the trail" takes "8 km", not "4%")."""
        if kind is None or kind in self.kinds:
            return True
        return kind not in (_LISTS.PERCENT, _LISTS.MONEY) and not self.kinds and self.unit is None

    def score(self, cues: set[str]) -> int:
        return sum(self.cues.get(cue, 0) for cue in cues)


@dataclass(frozen=True)
class _Said:
    """A comparison as written: ``(comparator, number text)`` pairs and the words around it."""

    bounds: tuple[tuple[Comparator, str], ...]
    start: int
    end: int
    currency: bool
    comparison: str = ""
    """The words of a comparison said before the number ("under", "cheaper than")."""
    counted: str | None = None
    """The noun inside the phrase, as "devices" in "5 devices or more"."""
    unit: str | None = None
    """The unit of time inside the phrase, as "hour" in "2 hours or less"."""
    named: bool = False
    """The phrase names its field itself, as "star" in "4-star hotels"."""
    party: bool = False
    """A party that must fit ("for 10 people"): only a field of the most allowed or the least
    required takes it."""


def _party(match: re.Match[str]) -> _Said:
    """ "for 10 people", "sleeps 6", "for 8 year olds", "a 16 year old": a party that must fit,
    counted in the noun said (people when none) or, said with an age, in years of age."""
    aged = match.groupdict().get("aged")
    counted = _LISTS.AGE_CUE if aged else cue_key((match["noun"] or _LISTS.PEOPLE).lower())
    return _Said(((Comparator.GTE, match["n"]),), *match.span(), False, counted=counted, party=True)


def _ranged(match: re.Match[str]) -> _Said:
    low, high = endpoint_groups(match)
    bounds = ((Comparator.GTE, match[low]), (Comparator.LTE, match[high]))
    return _Said(bounds, *match.span(), _has_currency(match, low, high))


def _prefixed(match: re.Match[str]) -> _Said:
    """ "under $20", "at least 3"; "above price level 2" names its field between."""
    phrase = " ".join(match["comparator"].lower().split())
    bounds = ((PREFIX_COMPARATORS[phrase], match["n"]),)
    if match["named"]:
        named = " ".join(re.split(r"[\s_-]+", match["named"].lower()))
        return _Said(bounds, *match.span(), False, counted=named, named=True)
    return _Said(bounds, *match.span(), _has_currency(match, "n"), phrase)


def _postfixed(match: re.Match[str]) -> _Said:
    comparator = Comparator.LTE if match["at_most"] else Comparator.GTE
    noun = (match["noun"] or "").lower()
    unit = TIME_UNIT_WORDS.get(noun)
    counted = cue_key(noun) if noun and unit is None else None
    currency = _has_currency(match, "n")
    return _Said(((comparator, match["n"]),), *match.span(), currency, counted=counted, unit=unit)


def _field_count(match: re.Match[str]) -> _Said | None:
    """ "a 2-bedroom flat", "2 bedrooms": the field's name, in the singular as its name words
    are kept ("vcpu" for ``vcpus``, which no stem of "vcpus" gives); not the user's own ("I have
    2 bedrooms") nor a party to fit ("for 3 bedrooms")."""
    start = match.start()
    if OWNED_OR_FOR_BEFORE.search(match.string, max(0, start - OWNED_CHARS), start):
        return None
    counted = inflection.singularize((match["noun"] or match["noun2"] or match["noun3"]).lower())
    return _Said(((Comparator.EQ, match["n"]),), *match.span(), False, counted=counted, named=True)


# Every comparison of an amount, in the order they are read; the schema adds its field counts.
TABLE: tuple[Row[_Said | None], ...] = (
    Row(HOLDING_VERB, _party),
    Row(RANGE, _ranged),
    Row(PREFIX, _prefixed),
    Row(POSTFIX, _postfixed),
    Row(FOR_PARTY, _party),
    Row(AGED_PERSON, _party),
)


class NumberPhrases:
    """Finds numeric comparisons and maps each to the one integer/float field it is about."""

    def __init__(self, fields: Sequence[MetadataField], item_nouns: Collection[str] = ()) -> None:
        numeric = [field for field in fields if field.type in _LISTS.NUMERIC_TYPES]
        nouns = frozenset(map(cue_key, item_nouns))
        self._fields = [NumericField.from_field(field, nouns) for field in numeric]
        # Every word that points to a field, or to none: the words a comparison may be said with.
        self._known = STOP_KEYS.union(*(field.cues for field in self._fields))
        monetary = [field for field in self._fields if _LISTS.MONEY in field.kinds]
        self._only_monetary = monetary[0] if len(monetary) == 1 else None
        items = alternation(item_nouns) or r"(?!x)x"
        self._item_after = re.compile(rf"[\s-]+(?:{items})(?!\w)", re.IGNORECASE)
        self._table = [*TABLE, *_field_counts(numeric)]
        # A money field's name words without a currency ("exit_fee_gbp" -> exit, fee).
        self._charges = [
            (field, words)
            for field in self._fields
            if _LISTS.MONEY in field.kinds and (words := field.name_words - set(CURRENCY_WORDS))
        ]
        # Every word a charge may be named by, in the singular and the plural, to its singular.
        named_by = {word for _, words in self._charges for word in words} | MONEY_NOUNS
        self._charge_forms = {
            form: word for word in named_by for form in (word, inflection.pluralize(word))
        }

    def find(
        self, text: str, taken: list[Constraint], values: Sequence[Constraint] = ()
    ) -> list[Constraint]:
        """Numeric conditions; ``values`` are the value conditions in ``text``: a plain amount
        after one ("kids bikes under 300") is a price."""
        found: list[Constraint] = self._no_charge(text, taken) if self._charges else []
        if not self._fields or not ANY_NUMBER.search(text):
            return found
        return found + claim(
            [said for _, said in scan(text, self._table)],
            taken + found,
            lambda said: self._constraints(text, said, values),
        )

    def _ages_a_thing(self, text: str, said: _Said, values: Sequence[Constraint]) -> bool:
        """ "a 3 year old laptop", "my 10-year-old Volvo": an age of a thing (a noun for the
        documents or a value right after it), not of a person who must fit."""
        if self._item_after.match(text, said.end):
            return True
        gap = len(text[said.end :]) - len(text[said.end :].lstrip(" -"))
        return any(value.start == said.end + gap for value in values)

    def _no_charge(self, text: str, taken: list[Constraint]) -> list[Constraint]:
        """ "with no monthly fee", "without a monthly charge", "no excess at all": an amount of
        money the documents do not charge is 0. The words after "no" must be the field's name,
        its money noun said as any money noun ("charge" for ``monthly_fee``), and nothing else
        ("no foreign transaction fees" is no monthly fee)."""
        found: list[Constraint] = []
        for match in _PHRASES.NO_CHARGE.finditer(text):
            words = match["words"].split()
            # No word past one that names no charge is part of its name.
            said = [
                self._charge_forms[word.lower()]
                for word in takewhile(lambda word: word.lower() in self._charge_forms, words)
            ]
            # Naming two charges, it says neither.
            named = [field for field, name in self._charges if _names_charge(said, name)]
            end = match.start("words") + len(" ".join(words[: len(said)]))
            if len(named) == 1 and not overlaps_any(match.start(), end, taken):
                zero = 0 if named[0].integer else 0.0
                found.append(
                    Constraint(named[0].name, Comparator.EQ, zero, match.start(), end, negated=True)
                )
        return found

    def _constraints(
        self, text: str, said: _Said, value_conditions: Sequence[Constraint]
    ) -> list[Constraint] | None:
        """The conditions of one comparison, or ``None`` when it is none of a field here (its
        words are then left to a shorter reading: "hold at least 200 guests" with no field for
        guests may still be "at least 200" of another)."""
        aged = said.party and said.counted == _LISTS.AGE_CUE
        if aged and self._ages_a_thing(text, said, value_conditions):
            return None
        field, end, unit = self._field_of(text, said, value_conditions)
        if field is None or (said.party and field.party is None):
            return None
        values = [_parse_number(number) for _, number in said.bounds]
        if unit is not None:
            if half := _PHRASES.HALF_AFTER.match(text, end):
                values, end = [value + 0.5 for value in values], half.end()
            # "more than an hour" on a field in minutes is 60; "3 months" on a price, nothing.
            factor = _conversion(unit, field.unit)
            if factor is None:
                return None
            values = [round(value * factor, 9) for value in values]
        if any(not math.isfinite(value) or (field.integer and value % 1) for value in values):
            return None
        comparators = [comparator for comparator, _ in said.bounds]
        if said.party and field.party:
            if field.party == Comparator.LTE and not aged and _LISTS.AGE_CUE in field.cues:
                return None  # "for 12 climbers" counts people, not the youngest climber's age
            comparators = [field.party]  # "for 8 year olds": a youngest age of 8 or less
        negated = bool(
            _PHRASES.NEGATED_BEFORE.search(text[max(0, said.start - CONTEXT_CHARS) : said.start])
        )
        if negated:
            if len(comparators) > 1:
                return None  # "not between 10 and 20" is an "or"; no filter rather than a wrong one
            comparators = [OPPOSITE[comparator] for comparator in comparators]
        return [
            Constraint(
                field.name, comparator, _typed(value, field), said.start, end, negated=negated
            )
            for comparator, value in zip(comparators, sorted(values), strict=True)
        ]

    def _field_of(
        self, text: str, said: _Said, values: Sequence[Constraint]
    ) -> tuple[NumericField | None, int, str | None]:
        """The field the words around a comparison point to, where its words end, and the unit
        of time said with it; a phrase that names its field ("4-star hotels", "above price level
        2") is of the one field whose name holds its words."""
        end = said.end
        if said.named:
            words = set((said.counted or "").split())
            named = [field for field in self._fields if words and words <= field.name_words]
            return (named[0] if len(named) == 1 else None), end, None
        cue = _LISTS.COMPARATOR_CUES.get(said.comparison)
        cues = set() if cue is None else {cue_key(cue)}
        if said.counted is not None:
            # A party of people is counted in any word for people ("120 people" for guests).
            counted = PEOPLE_KEYS if said.party and said.counted in PEOPLE_KEYS else {said.counted}
            if self._known.isdisjoint(counted):
                return None, end, None
            cues |= counted
        # "$20 a month" is a rate, "20 minutes" a unit of time said after the number.
        rate = RATE_AFTER.match(text, end)
        said_unit = None if rate or said.unit else UNIT_AFTER.match(text, end)
        unit = TIME_UNIT_WORDS[said_unit["unit"].lower()] if said_unit else said.unit
        if rate:
            cues.add(cue_key((rate["period"] or rate["adverb"]).lower()))
        if said_after := rate or said_unit:
            end = said_after.end()
        if unit is not None:
            cues.add(_LISTS.DURATION_CUE)
        kind = _said_kind(text, said)
        next_word = _PHRASES.WORD.match(text[end : end + CONTEXT_CHARS].lower().lstrip())
        if (
            next_word
            and not (rate or said_unit or kind or said.party)
            and cue_key(next_word[0]) not in self._known
        ):
            return None, end, unit  # "more than 3 files": it counts something we do not index.
        after = _clause_words(text[end : end + CONTEXT_CHARS], first=True)
        before = _clause_words(text[max(0, said.start - CONTEXT_CHARS) : said.start], first=False)
        cues |= set(after) | set(before)
        if kind is not None:
            cues.add(_kind_cue(kind))
        if (
            said.comparison in _LISTS.PLAIN_AMOUNT_COMPARATORS
            and unit is None
            and kind is None
            and _parse_number(said.bounds[0][1]) >= MIN_PLAIN_AMOUNT
            and not any(field.score(cues) for field in self._fields)
            and any(
                value.end <= said.start
                and not _PHRASES.CLAUSE_BREAK.search(text, value.end, said.start)
                for value in values
            )
        ):
            return self._only_monetary, end, None
        return self._best_field(cues, unit, kind), end, unit

    def _best_field(
        self, cues: set[str], unit: str | None = None, kind: str | None = None
    ) -> NumericField | None:
        """The field the cues point to most, if one does; a unit of time said ("20 minutes")
        leaves out the fields kept in a unit it does not convert to (an age in years), any other
        unit the fields not kept in it ("4%" is no fee)."""
        fields = [
            field
            for field in self._fields
            if (unit is None or field.unit is None or _conversion(unit, field.unit) is not None)
            and field.takes(kind)
        ]
        scores = [field.score(cues) for field in fields]
        best = max(scores, default=0)
        return fields[scores.index(best)] if best and scores.count(best) == 1 else None


def _names_charge(said: Sequence[str], name_words: frozenset[str]) -> bool:
    """Whether the words ``said`` after "no" name the money field of ``name_words``."""
    said_set = set(said)
    if not said_set <= name_words | MONEY_NOUNS or not name_words - MONEY_NOUNS <= said_set:
        return False
    return bool(said_set & MONEY_NOUNS) or said_set == name_words


def _kinds(words: Sequence[str], *, monetary: bool) -> frozenset[str]:
    """The units besides time a field is kept in, from the words of its name and description."""
    kinds = {UNIT_KINDS[word] for word in words if word in UNIT_KINDS}
    if monetary:
        kinds.add(_LISTS.MONEY)
    # "rate" is a percentage unless the field says it is kept in another unit ("Unit rate in
    # pence per kWh").
    if not kinds and any(word in _LISTS.PERCENT_FIELD_WORDS for word in words):
        kinds.add(_LISTS.PERCENT)
    return frozenset(kinds)


def _kind_cue(kind: str) -> str:
    """The cue a said unit gives to the fields kept in it (not a word a user can write)."""
    return f"<{kind}>"


def _said_kind(text: str, said: _Said) -> str | None:
    """The unit besides time a number is said in: a currency, or "%", "GB", "km" right after the
    comparison ("more than 4[%]", "between 5 and 10[GB]")."""
    if said.currency:
        return _LISTS.MONEY
    if _PHRASES.PERCENT_AFTER.match(text, said.end):
        return _LISTS.PERCENT
    measure = MEASURE_AFTER.match(text, said.end)
    return UNIT_KINDS[measure["unit"].lower()] if measure else None


def _has_currency(match: re.Match[str], *tags: str) -> bool:
    """Whether a currency symbol or word is said with the amount."""
    return any(match[f"{tag}_pre"] or match[f"{tag}_post"] for tag in tags)


def _clause_words(text: str, *, first: bool) -> list[str]:
    """Up to ``CONTEXT_WORDS`` cue words next to the comparison, within its clause and, after
    it, within its phrase.

    Words right after another number are that number's ("below 400 calories and under 45
    minutes": "calories" says nothing about the 45), up to a word that opens another phrase."""
    pieces = _PHRASES.CLAUSE_BREAK.split(text)
    clause = pieces[0] if first else pieces[-1]
    if first:
        clause = PHRASE_OPENER.split(clause, maxsplit=1)[0]
    elif len(pieces) > 1 and text[-len(clause) - 1 : len(text) - len(clause)].isdigit():
        # "60p with a unit rate of at most 24.5p": only a new phrase's words are this number's.
        opened = PHRASE_OPENER.split(clause)
        if len(opened) == 1:
            return []
        clause = opened[-1]
    words = _cue_words(_PHRASES.CONTRACTION.sub("", clause.lower()))
    return words[:CONTEXT_WORDS] if first else words[-CONTEXT_WORDS:]


def _parse_number(text: str) -> Number:
    """The number said, NaN when it is none: an ``int`` when the words are a whole number
    ("12345678901234567891", "80k", "three"), a float for a decimal ("2.5", "1.5k", "half an").
    An id above 2**53 keeps every digit, since the filters compare integers exactly
    (``filters.values``) and its neighbour shares its float."""
    lowered = " ".join(text.lower().split())
    if lowered in NUMBER_WORDS:
        return NUMBER_WORDS[lowered]
    parts = _PHRASES.NUMBER_PARTS.fullmatch(lowered.replace(",", ""))
    if parts is None or (digits := parse_number(parts["digits"])) is None:
        return math.nan
    return digits * MULTIPLIERS.get(parts["multiplier"], 1)


def _typed(value: Number, field: NumericField) -> Number:
    """A checked value as its field takes it: an integer field's as an ``int``, a float field's
    as a ``float`` (as it always was), except a whole number no float holds exactly (an id above
    2**53), which stays the ``int`` said rather than become its neighbour."""
    if field.integer:
        return int(value)
    if isinstance(value, int) and abs(value) >= FLOAT_EXACT_LIMIT:
        return value
    return float(value)


def _declared_unit(description: str, words: Sequence[str]) -> str | None:
    """The unit of time of a duration field, from its description ("in minutes") or the one unit
    among its name and description ``words`` ("duration_seconds", "Minutes to cook", "Years of
    experience"). A month or a year counts only in the plural or when declared ("Loan term in
    months"): "The year the movie was released" is a calendar year, not a duration."""
    if declared := DECLARED_UNIT.search(description):
        return TIME_UNIT_WORDS[declared["unit"].lower()]
    units = {
        TIME_UNIT_WORDS[word]
        for word in words
        if word in TIME_UNIT_WORDS
        and (TIME_UNIT_SECONDS[TIME_UNIT_WORDS[word]] is not None or word.endswith("s"))
    }
    return units.pop() if len(units) == 1 else None


def _conversion(said: str, kept: str | None) -> float | None:
    """The factor from a said unit of time to the field's; None when they do not convert (a
    month has no fixed number of days, but is a twelfth of a year)."""
    for scale in (MONTHS_IN, TIME_UNIT_SECONDS):
        said_size, kept_size = scale.get(said), scale.get(kept or "")
        if said_size and kept_size:
            return float(said_size / kept_size)
    return None


def _field_counts(fields: Sequence[MetadataField]) -> tuple[Row[_Said | None], ...]:
    """ "2 bedrooms", "a 2-bedroom flat", "8 vCPU machines", "0 stops": a count right before the
    name of an integer field that is a plural noun (``bedrooms``, ``stops``), or before its
    singular joined to the count or used as a modifier of a noun after it, is that field's
    value, whatever noun follows ("with 1 change" alone is the grammatical singular of any
    count, not a name). After "top"/"best"/"first" it is a limit."""
    plurals = [
        name
        for field in fields
        if field.type == "integer"
        and (name := field.name.lower()).isalpha()
        and inflection.singularize(name) != name
    ]
    if not plurals:
        return ()
    singulars = alternation(map(inflection.singularize, plurals))
    pattern = re.compile(
        rf"{_COUNT_START}(?P<n>\d{{1,3}}|{COUNT_WORDS})(?:\s+(?P<noun>{alternation(plurals)})"
        rf"|-(?P<noun2>{singulars})"
        rf"|\s+(?P<noun3>{singulars})(?=\s+{_LISTS.NOUN_AFTER_MODIFIER}))(?![\w-])",
        re.IGNORECASE,
    )
    return (Row(pattern, _field_count),)
