"""Yes/no attributes said in words: "in stock", "can ship today", "out of stock".

A boolean field is found by the words of its name ("in_stock" -> "in stock") and by the clause
of its description ("Whether the product can ship today" -> "can ship today", "ship today",
"ships today"). Said plainly, the field is ``true``; after a negation ("not in stock", "can't
ship today") or as the "out of" of an "in" name ("out of stock"), it is ``false``. One word alone
("free" for ``is_free``) is too common to mean the field, so a phrase needs two words.
"""

from __future__ import annotations

import re
from collections.abc import Sequence
from dataclasses import dataclass

import Stemmer
from langchain_core.structured_query import Comparator

from rasa_context_retrieval.schema import MetadataField
from rasa_context_retrieval.self_query.constraints import Constraint, overlaps_any

MIN_PHRASE_WORDS = 2
MAX_PHRASE_WORDS = 5
LOOKBEHIND_CHARS = 24
# Extra letters a stemmed verb may take back: "ship" -> "ships", "shipped", "shipping".
INFLECTION_CHARS = 4
WORD = re.compile(r"[a-z0-9]+")
# "Whether the product can ship today": the subject and a leading "whether"/"if" go.
DESCRIPTION_LEAD = re.compile(
    r"^(?:(?:true\s+)?(?:whether|if|when)\s+)?(?:(?:the|a|an|this|its)\s+[a-z]+\s+)?", re.IGNORECASE
)
CLAUSE_END = re.compile(r"[.,;:()]")
AUXILIARIES = frozenset(["can", "could", "is", "are", "has", "have", "does", "do", "will"])
NAME_LEADS = frozenset(["is", "has", "can"])
NEGATION_BEFORE = re.compile(
    r"(?:\b(?:not|never|no\s+longer|cannot)|n['’]?t)\s+(?:(?:be|been|currently|yet)\s+)?$",
    re.IGNORECASE,
)
_STEMMER = Stemmer.Stemmer("english")


@dataclass(frozen=True)
class _BooleanField:
    name: str
    said: re.Pattern[str]
    denied: re.Pattern[str] | None


class BooleanPhrases:
    """Finds ``eq(field, true/false)`` for the schema's boolean fields."""

    def __init__(self, fields: Sequence[MetadataField]) -> None:
        self._fields = [
            compiled
            for field in fields
            if field.type == "boolean"
            for compiled in [_compile(field)]
            if compiled is not None
        ]

    def find(self, text: str, taken: list[Constraint]) -> list[Constraint]:
        found: list[Constraint] = []
        for field in self._fields:
            for value, pattern in ((False, field.denied), (True, field.said)):
                match = pattern.search(text) if pattern is not None else None
                if match is None or overlaps_any(match.start(), match.end(), taken + found):
                    continue
                before = text[max(0, match.start() - LOOKBEHIND_CHARS) : match.start()]
                negated = bool(NEGATION_BEFORE.search(before))
                said = value != negated
                found.append(
                    Constraint(field.name, Comparator.EQ, said, match.start(), match.end())
                )
                break
        return found


def _compile(field: MetadataField) -> _BooleanField | None:
    phrases = _phrases(field)
    if not phrases:
        return None
    said = re.compile(rf"(?<!\w)(?:{'|'.join(phrases)})(?!\w)", re.IGNORECASE)
    name_words = WORD.findall(field.name.lower())
    denied = None
    if len(name_words) >= MIN_PHRASE_WORDS and name_words[0] == "in":
        rest = r"\s+".join(map(re.escape, name_words[1:]))
        denied = re.compile(rf"(?<!\w)out\s+of\s+{rest}(?!\w)", re.IGNORECASE)
    return _BooleanField(field.name, said, denied)


def _phrases(field: MetadataField) -> list[str]:
    """Regex alternatives for the field's phrases, longest first."""
    word_lists = []
    name_words = WORD.findall(field.name.lower())
    while name_words and name_words[0] in NAME_LEADS:
        name_words = name_words[1:]
    word_lists.append(name_words)
    clause = CLAUSE_END.split(field.description.strip())[0]
    described = WORD.findall(DESCRIPTION_LEAD.sub("", clause.lower()))
    if len(described) <= MAX_PHRASE_WORDS:
        while described and described[0] in AUXILIARIES:
            described = described[1:]
        word_lists.append(described)
    patterns = {_pattern(words) for words in word_lists if len(words) >= MIN_PHRASE_WORDS}
    return sorted(patterns, key=len, reverse=True)


def _pattern(words: list[str]) -> str:
    """The words in order, the first one in any inflection ("ship" -> "ships", "shipping")."""
    stem = _STEMMER.stemWord(words[0])
    first = rf"{re.escape(stem)}[a-z]{{0,{INFLECTION_CHARS}}}" if len(stem) > 2 else words[0]
    return r"\s+".join([first, *map(re.escape, words[1:])])
