"""Which conditions a negation governs, and what becomes of one no rule read as negated.

Each extractor reads the negations it was written for ("not on Android", "non-vegetarian") and
marks its condition (``Constraint.negated``). A negation in a form none reads ("cards that don't
come with travel insurance") would leave a plain ``eq``: the opposite filter, which hides exactly
the documents asked for. ``bind_negations`` is the one safety net every condition goes through:

* a negation in a clause describing the thing before it ("doctors who aren't in Boston")
  governs a condition when only a verb, a preposition or an article stands between: it is
  negated (``ne``, or the other truth value); so is the subject of a negated verb opening such a
  clause ("books that the Central library doesn't stock"), but for a verb of functioning;
* any other negation before a condition in its clause ("I'm not sure about comedy"), or one of
  a bound or date range (its negation is an "or"), is not clear: no filter, never ``eq``;
* a clause ends at punctuation and at a word that opens another ("that", a plain "but": "cheap
  but good" stays positive); values joined by "and"/"or" share the scope of the first.

"""

from __future__ import annotations

import dataclasses
import enum
import re
from collections.abc import Sequence

from langchain_core.structured_query import Comparator

from rasa_context_retrieval.self_query import english
from rasa_context_retrieval.self_query.constraints import Constraint, overlaps_any
from rasa_context_retrieval.self_query.phrases import (
    CLAUSE_OPENERS,
    CLAUSE_PUNCTUATION,
    COORDINATION,
    FUNCTIONING_VERBS,
    JOINING_WORDS,
    NEGATING_PREFIX,
    NEGATORS,
    any_word,
)

_LISTS, _PHRASES = english.section("negation")


class Scope(enum.Enum):
    """How a negation said before a condition relates to it."""

    NONE = "none"
    CLEAR = "clear"
    UNCLEAR = "unclear"


# "no" governs the noun after it ("no travel insurance"); with the shared negators it is the
# whole set of words that negate what follows. The prefix "non-" negates only the word it is
# written onto, which the extractors read themselves ("nonstop with TAP" keeps TAP).
SCOPE_NEGATOR = english.pattern("negation", "SCOPE_NEGATOR", NEGATORS=NEGATORS)
NEGATION_BEFORE = english.pattern(
    "negation", "NEGATION_BEFORE", NEGATING_PREFIX=NEGATING_PREFIX, NEGATORS=NEGATORS
)
# Where a clause ends: punctuation, or a word that opens another clause. "but" is a plain
# conjunction unless it is part of a negator ("anything but", "but not"), which are found first.
CLAUSE_END = any_word(CLAUSE_OPENERS, or_any_of=CLAUSE_PUNCTUATION + "()")
# What may stand between a negator and the condition it clearly governs: a few words, the
# verb and its preposition or article ("don't come with", "don't go along the").
MAX_WORDS_BETWEEN = 3
# Verbs of something working: negated, they report a problem where the value is ("sync is not
# working on Android", "the app won't open on iOS"), the value is still what the user asks about.
FUNCTIONING_VERB = any_word(FUNCTIONING_VERBS)
JOINING_WORD = any_word(JOINING_WORDS)


def bind_negations(text: str, found: Sequence[Constraint]) -> list[Constraint]:
    """``found`` with each condition a negation governs negated, and each one it governs
    unclearly dropped; conditions an extractor already read as negated are kept as they are."""
    ordered = sorted(found, key=lambda constraint: constraint.start)
    kept: list[Constraint] = []
    scopes: dict[int, Scope] = {}
    for index, constraint in enumerate(ordered):
        scope = _scope(text, index, ordered, scopes)
        scopes[index] = scope
        if scope is Scope.NONE and not constraint.negated and _subject_of_negated(text, constraint):
            scope = Scope.CLEAR
        if constraint.negated or _is_negation(constraint) or scope is Scope.NONE:
            kept.append(constraint)
        elif scope is Scope.CLEAR and (negated := negate(constraint)) is not None:
            kept.append(negated)
    return kept


def negated_before(before: str) -> bool:
    """Whether ``before`` ends in a negation of the phrase that follows it ("not", "non-",
    "isn't currently"): how a yes/no phrase or a gloss reads its own negation."""
    return bool(NEGATION_BEFORE.search(before))


def negate(constraint: Constraint) -> Constraint | None:
    """The negation of one condition, or ``None`` when it is no single condition (a bound, a
    date, a range: its negation is an "or")."""
    value = constraint.value
    if constraint.comparator is not Comparator.EQ or isinstance(value, dict):
        return None
    if isinstance(value, bool):
        return dataclasses.replace(constraint, value=not value, negated=True)
    return dataclasses.replace(constraint, comparator=Comparator.NE, negated=True, each=False)


def _subject_of_negated(text: str, constraint: Constraint) -> bool:
    """Whether the condition is the subject of a negated verb in a clause describing the thing
    before it ("books that the Central library doesn't stock"); not a verb of functioning, which
    reports a problem ("guides that Android won't open")."""
    if not _PHRASES.SUBJECT_OPENING_CLAUSE.search(text, 0, constraint.start):
        return False
    verb = _PHRASES.NEGATED_VERB_AFTER.match(text, constraint.end)
    return verb is not None and not FUNCTIONING_VERB.fullmatch(verb["verb"])


def _is_negation(constraint: Constraint) -> bool:
    return constraint.comparator in (Comparator.NE, Comparator.NIN)


def _scope(text: str, index: int, ordered: Sequence[Constraint], scopes: dict[int, Scope]) -> Scope:
    constraint = ordered[index]
    if index and _joined(text, ordered[index - 1], constraint):
        previous = ordered[index - 1]
        # "without a pool or a gym": a value joined to the one before shares its scope.
        if previous.negated or _is_negation(previous):
            return Scope.CLEAR
        return scopes[index - 1]
    clause_start, relative = 0, False
    for end in CLAUSE_END.finditer(text, 0, constraint.start):
        clause_start, relative = end.end(), end[0].lower() in _LISTS.RELATIVE_WORDS
    negator = _last_negator(text, clause_start, constraint.start, ordered)
    if negator is None:
        return Scope.NONE
    between = text[negator.end() : constraint.start]
    if any(other.start >= negator.end() and other.end <= constraint.start for other in ordered):
        return Scope.NONE  # the negation went to the condition said right after it
    if FUNCTIONING_VERB.search(between):
        return Scope.NONE
    far = len(_PHRASES.WORD.findall(between)) > MAX_WORDS_BETWEEN
    if far or not relative or _PHRASES.USER_SUBJECT.search(text, clause_start, negator.start()):
        return Scope.UNCLEAR
    return Scope.CLEAR


def _joined(text: str, previous: Constraint, constraint: Constraint) -> bool:
    """Whether two conditions are said as one list: values of one field ("not Visa or
    Mastercard"), or two things had joined by "and"/"or" ("without a pool or a gym"); not two
    conditions on different fields side by side ("anyone but a dentist, taking new patients")."""
    joiner = COORDINATION.fullmatch(text, previous.end, constraint.start)
    if joiner is None:
        return False
    if previous.attribute == constraint.attribute:
        return True
    both_had = isinstance(previous.value, bool) and isinstance(constraint.value, bool)
    return both_had and bool(JOINING_WORD.search(joiner[0]))


def _last_negator(
    text: str, start: int, end: int, ordered: Sequence[Constraint]
) -> re.Match[str] | None:
    """The last negating word in ``text[start:end]`` that no condition said as its own."""
    said = SCOPE_NEGATOR.finditer(text, start, end)
    free = [match for match in said if not overlaps_any(match.start(), match.end(), ordered)]
    return free[-1] if free else None
