"""How many results the user asks for: "top 3", "two movies", "show me 5 cheap laptops".

A count is a limit after "top"/"best"/"first" (unless it counts something else: "the first two
marriages", or is the pronoun of "the first one"), asked for with a verb of showing ("show me
two ...", "give me 3"), or counting the documents or the results themselves: a plural noun for
them ("movies", "suggestions", see ``items``) or a plural value ("thrillers", "security fixes")
within a few words. A count of anything else ("3 files"), after "I have" or a preposition
("split between two boats"), in the user's own past ("I watched two movies"), or already read
as a filter is no limit.
"""

from __future__ import annotations

import re
from collections.abc import Callable, Collection
from itertools import combinations

import inflection

from rasa_context_retrieval.self_query import english
from rasa_context_retrieval.self_query.constraints import Constraint, told_as_personal_past
from rasa_context_retrieval.self_query.engine import Row, scan
from rasa_context_retrieval.self_query.phrases import (
    COUNT_WORDS,
    REQUEST_VERBS,
    SMALL_NUMBER_WORDS,
    UNIT_WORDS,
    any_word,
)

_LISTS, _PHRASES = english.section("limits")

MAX_LIMIT = 50
"""A larger count is not a number of results anyone reads; the configured ``top_k`` applies."""
_COUNT = rf"\d{{1,2}}|{COUNT_WORDS}"
TOP = english.pattern("limits", "TOP", _COUNT=_COUNT)
# The count and up to four words after it: "5 most recent python articles".
COUNTED = english.pattern("limits", "COUNTED", _COUNT=_COUNT)
REQUESTED = english.pattern("limits", "REQUESTED", _COUNT=_COUNT)
LOOKBEHIND_CHARS = 16
REQUEST_CHARS = 24
OWNED_BEFORE = _PHRASES.OWNED_BEFORE
REQUEST_VERB = any_word(REQUEST_VERBS)


class LimitPhrases:
    """Finds the number of results asked for, if any."""

    def __init__(self, item_nouns: Collection[str], is_plural_value: Callable[[str], bool]) -> None:
        self._plural_items = frozenset(
            noun for noun in item_nouns if inflection.singularize(noun) != noun
        )
        self._is_plural_value = is_plural_value

    def find(self, text: str, taken: list[Constraint]) -> int | None:
        """The count of the first phrase that asks for one, over words no condition took."""
        table = [
            Row(TOP, self._top),
            # Most messages ask with no verb of showing; one cheap scan spares the rest.
            *([Row(REQUESTED, _requested)] if REQUEST_VERB.search(text) else []),
            Row(COUNTED, self._counted, claims="n"),
        ]
        return next((count for _, count in scan(text, table, taken)), None)

    def _top(self, match: re.Match[str]) -> int | None:
        """ "top 3", "the first two": a rank of the documents; not the user's own ("my first
        10"), "the first one" (a pronoun for something said before), "the first 10 km" (a
        quantity), nor "the first two marriages" (a count of another plural)."""
        word = _next_word(match)
        if OWNED_BEFORE.search(_before(match)) or match["n"].lower() == "one" or word in UNIT_WORDS:
            return None
        if word is None or inflection.singularize(word) == word or word in _LISTS.RESULT_NOUNS:
            return _count(match["n"])
        return _count(match["n"]) if self._is_document_word(word) else None

    def _counted(self, match: re.Match[str]) -> int | None:
        """ "two movies", "3 options": a count of the documents or the results, not of what the
        user has, is between, or told of in a story ("I watched two movies last week")."""
        before = _before(match)
        if OWNED_BEFORE.search(before) or _PHRASES.PREPOSITION_BEFORE.search(before):
            return None
        if told_as_personal_past(match.string, match.start()):
            return None
        words = match["words"].lower().split()
        if words[0] in _LISTS.RESULT_NOUNS:
            return _count(match["n"])  # "two suggestions please", "3 options for Lisbon"
        if not self._is_document_word(words[0]) and inflection.singularize(words[0]) != words[0]:
            return None  # "4 people looking for bikes": it counts people
        # "two security fixes": a plural value may be several words
        spans = combinations(range(len(words) + 1), 2)
        if any(self._is_document_word(" ".join(words[i:j])) for i, j in spans):
            return _count(match["n"])
        return None

    def _is_document_word(self, word: str) -> bool:
        return word in self._plural_items or self._is_plural_value(word)


def _requested(match: re.Match[str]) -> int | None:
    """ "show me two ...", "give me 3": several asked for with a verb of showing, whatever noun
    follows, unless it is a unit ("show me 5 km routes") or "of"/"more"/"other"."""
    text, start = match.string, match.start()
    asked = _PHRASES.REQUEST_BEFORE.search(text, max(0, start - REQUEST_CHARS), start)
    count = _count(match["n"])
    if not asked or _next_word(match) in UNIT_WORDS | {"of", "more", "other"}:
        return None
    return count if count is not None and count > 1 else None


def _before(match: re.Match[str]) -> str:
    return match.string[max(0, match.start() - LOOKBEHIND_CHARS) : match.start()]


def _next_word(match: re.Match[str]) -> str | None:
    following = _PHRASES.NEXT_WORD.match(match.string, match.end())
    return following["word"].lower() if following else None


def _count(text: str) -> int | None:
    lowered = text.lower()
    count = SMALL_NUMBER_WORDS.get(lowered) if not lowered.isdigit() else int(lowered)
    return count if count is not None and 1 <= count <= MAX_LIMIT else None
