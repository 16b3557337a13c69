"""Values a field's description explains in words: "(0 for a direct flight)", "(false = manual)".

A schema often says what a number or a yes/no means for its documents: "Number of stops (0 for a
direct flight)", "Automatic transmission (false = manual)", "False while the issue is still
open", "Price level from 1 (inexpensive) to 4 (very expensive)", "Whether guests can get in
without steps (wheelchair accessible)". Each gloss is a phrase for one value, without the
documents' noun: "direct flights" is ``stops = 0``, "manual hybrids" ``automatic = false``.

A gloss of two words or more ("no fixed term") counts wherever it is said, and is read before the
values, so that a value inside it ("fixed") does not take its words. One word ("direct") counts
as a one-word boolean name does (see ``booleans``), or in the plural as the kind wanted
("studios", not "Marvel Studios"); negated, a yes/no gloss means the other answer, a number ``ne``.

"""

from __future__ import annotations

import re
from collections.abc import Collection, Sequence

import inflection

from rasa_context_retrieval.filters.schema import MetadataField
from rasa_context_retrieval.self_query import english
from rasa_context_retrieval.self_query.constraints import Constraint
from rasa_context_retrieval.self_query.engine import Describes, ValuePhrase, first_said

_LISTS, _PHRASES = english.section("glosses")

MAX_GLOSS_WORDS = 3
MIN_WORD_CHARS = 3


def glosses_of(field: MetadataField, item_nouns: Collection[str]) -> list[ValuePhrase]:
    """The glosses the description of an integer or boolean field declares."""
    described = field.description
    said: list[tuple[bool | int, str]] = []
    if field.type == "integer":
        numbers = (_PHRASES.NUMBER_FOR, _PHRASES.NUMBER_BRACKETED)
        said = [(int(m["value"]), m["phrase"]) for p in numbers for m in p.finditer(described)]
    elif field.type == "boolean":
        answers = _PHRASES.ANSWER_FOR.finditer(described)
        said = [(m["value"].lower() in ("true", "yes"), m["phrase"]) for m in answers]
        bracketed = _PHRASES.YES_BRACKETED.search(described)
        if bracketed and not _PHRASES.ANSWER_FOR.search(bracketed["phrase"]):
            said.append((True, bracketed["phrase"]))
    glosses = []
    for value, phrase in said:
        words, noun = _gloss_words(phrase, item_nouns)
        if words:
            pattern, single = _compiled(words, noun), len(words) == 1
            glosses.append(ValuePhrase(field.name, value, pattern, single, noun, skip=_in_a_name))
    return glosses


def _gloss_words(phrase: str, item_nouns: Collection[str]) -> tuple[list[str], bool]:
    lowered = " ".join(phrase.lower().split())
    state = _PHRASES.STATE_OF_SUBJECT.match(lowered)
    had = _PHRASES.HAD_BY_SUBJECT.match(lowered)
    lowered = had["had"] if had else lowered
    words = [state["state"]] if state else re.findall(r"[a-z]+(?:['-][a-z]+)*", lowered)
    noun = bool(words) and words[0] in _LISTS.ARTICLES
    while words and words[0] in _LISTS.LEADING_WORDS:
        words = words[1:]
    while len(words) > 1 and words[-1] in item_nouns:
        words, noun = words[:-1], False  # "a direct flight": "direct", an adjective
    content = words[1:] if words[:1] == ["no"] else words  # "no fixed term"
    if not content or len(words) > MAX_GLOSS_WORDS or len(content[0]) < MIN_WORD_CHARS:
        return [], False
    return words, noun


def _compiled(words: list[str], noun: bool) -> re.Pattern[str]:
    """The words in order, any of space or hyphen between them, a noun also in the plural."""
    last = words[-1]
    forms = sorted({last, inflection.pluralize(last) if noun else last}, key=len, reverse=True)
    said = [*map(re.escape, words[:-1]), f"(?:{'|'.join(map(re.escape, forms))})"]
    joined = _LISTS.WORD_GAP.join(said)
    return re.compile(rf"(?<![\w-])(?:{joined})(?![\w-])", re.IGNORECASE)


class GlossPhrases:
    """Finds the values that the schema's descriptions explain in words."""

    def __init__(
        self, fields: Sequence[MetadataField], item_nouns: Collection[str], describes: Describes
    ) -> None:
        glosses = [gloss for field in fields for gloss in glosses_of(field, item_nouns)]
        # The glosses of one word (``True``) and of several (``False``).
        self._glosses = {one: [g for g in glosses if g.single == one] for one in (True, False)}
        self._describes = describes

    def find(self, text: str, taken: list[Constraint], *, phrases: bool) -> list[Constraint]:
        """One condition per field whose gloss is said over words not taken: the glosses of
        several words (``phrases``), read before the values, else the one-word glosses, which
        lean on the values around them."""
        return first_said(text, self._glosses[not phrases], taken, self._describes)


def _in_a_name(match: re.Match[str], before: str) -> bool:
    """Whether the gloss is written as part of a name ("Marvel Studios"): capitalised, not at
    the start of a sentence, in a message not written in capitals."""
    text = match.string
    sentence_start = _PHRASES.SENTENCE_START.search(text, 0, match.start())
    return match[0][:1].isupper() and not text.isupper() and not sentence_start
