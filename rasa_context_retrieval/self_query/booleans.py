"""Yes/no attributes said in words: "in stock", "can ship today", "remote jobs", "not vegetarian".

A boolean field is said by the words of its name ("in_stock": "in stock") and of its
description's clause ("Whether the product can ship today": "ships today"). A phrase of two words
or more counts wherever it is said. One word ("remote") is an everyday word ("remote control"):
it counts only where it describes the documents (``describes_documents``: "remote jobs",
"recipes that are vegetarian", "hotels with a pool"), or negated ("non-vegetarian"). Said
plainly, the field is ``true``; negated ("can't ship today") or denied ("out of stock"), ``false``.
"""

from __future__ import annotations

import re
from collections.abc import Collection, Sequence
from dataclasses import dataclass

import inflection
from langchain_core.structured_query import Comparator

from rasa_context_retrieval.filters.schema import MetadataField
from rasa_context_retrieval.self_query import english
from rasa_context_retrieval.self_query.constraints import Constraint, overlaps_any
from rasa_context_retrieval.self_query.engine import LOOKBEHIND_CHARS, ValuePhrase, first_said
from rasa_context_retrieval.self_query.items import noun_after
from rasa_context_retrieval.self_query.negation import SCOPE_NEGATOR, negate, negated_before
from rasa_context_retrieval.self_query.phrases import CUE_STOPWORDS, STEMMER

_LISTS, _PHRASES = english.section("booleans")

MAX_PHRASE_WORDS = 5
# Extra letters a stemmed word may take back: "ship" -> "ships", "remote" -> "remotely".
INFLECTION_CHARS = 4
AUXILIARIES = frozenset(_LISTS.AUXILIARIES)
ARTICLES = frozenset(_LISTS.ARTICLES)
# "Whether pets are allowed" said as "hotels that allow pets": the content words of the
# description's clause (two or three), in any order and inflection, within a few words of one
# clause. A description that negates ("contains no meat") is left to its name.
DESCRIBED_WINDOW_WORDS = 6
HINT_CHARS = 3
MIN_DESCRIBED_WORDS, MAX_DESCRIBED_WORDS = 2, 3
SETTING_ADVERBS = frozenset(_LISTS.SETTING_ADVERBS)
DESCRIPTION_STOPWORDS = (
    CUE_STOPWORDS | AUXILIARIES | SETTING_ADVERBS | {"whether", "if", "when", "true"}
)
MIN_ROOT_CHARS = 3
REQUIRED = frozenset(_LISTS.REQUIRED)


@dataclass(frozen=True)
class _BooleanField:
    name: str
    phrases: tuple[ValuePhrase, ...]
    """In the order they are tried: a denial ("out of stock" for an "in stock" field), the
    phrases of two words or more (said anywhere, they mean the field), the one-word form (it
    means the field only where it describes the documents)."""
    described: frozenset[str]
    """The stems of the description's content words, said in any order; empty: unused."""
    described_all: frozenset[str] = frozenset()
    """The stems of all the content words of the description's clause, however many."""


class BooleanPhrases:
    """Finds ``eq(field, true/false)`` for the schema's boolean fields."""

    def __init__(self, fields: Sequence[MetadataField], item_nouns: Collection[str] = ()) -> None:
        items = frozenset(STEMMER.stemWords(list(item_nouns)))
        self._fields = [_compile(field, items) for field in fields if field.type == "boolean"]
        self._phrases = [phrase for field in self._fields for phrase in field.phrases]
        # Stemming every message is the costly part; a word starting like none of the described
        # stems ("remot" -> "rem") spares it.
        starts = {stem[:HINT_CHARS] for field in self._fields for stem in field.described}
        hint = "|".join(sorted(map(re.escape, starts)))
        self._described_hint = re.compile(rf"(?<!\w)(?:{hint})", re.I) if starts else None
        self._noun_after = noun_after(item_nouns)
        self._described_any = any(len(field.described_all) > 1 for field in self._fields)

    def without_described_values(self, text: str, found: list[Constraint]) -> list[Constraint]:
        """``found`` without the values said as a yes/no field's subject: a value whose word and
        the word right before it are both content words of one boolean field's description
        ("100% renewable electricity" for "Whether all the electricity on the tariff comes from
        renewable sources" speaks of the yes/no property, not of a value "electricity")."""

        def described(end: int) -> bool:
            said = _PHRASES.LAST_TWO_WORDS.search(text, max(0, end - 2 * LOOKBEHIND_CHARS), end)
            stems = set(STEMMER.stemWords([said[1].lower(), said[2].lower()]) if said else [])
            return len(stems) == 2 and any(stems <= field.described_all for field in self._fields)

        if not self._described_any:
            return found
        return [c for c in found if not (isinstance(c.value, str) and described(c.end))]

    def find(self, text: str, taken: list[Constraint]) -> list[Constraint]:
        """Boolean conditions: a phrase of the field (``first_said``), else the content words of
        its description in any order; ``taken`` are the conditions found so far."""
        found = first_said(text, self._phrases, taken, self.describes_documents)
        if self._described_hint is None or not self._described_hint.search(text):
            return found
        words = _stemmed_words(text)
        for field in self._fields:
            if field.described and all(c.attribute != field.name for c in taken + found):
                said = self._described(text, field, words, taken + found)
                found += [said] if said is not None else []
        return found

    @staticmethod
    def _described(
        text: str, field: _BooleanField, words: list[tuple[str, int, int]], taken: list[Constraint]
    ) -> Constraint | None:
        for position, (stem, start, _) in enumerate(words):
            if stem not in field.described:
                continue
            seen: set[str] = set()
            for other, _, end in words[position : position + DESCRIBED_WINDOW_WORDS]:
                seen |= {other} & field.described
                if seen != field.described:
                    continue
                if _PHRASES.CLAUSE_BREAK.search(text, start, end) or overlaps_any(
                    start, end, taken
                ):
                    break
                before = text[max(0, start - LOOKBEHIND_CHARS) : start]
                said = Constraint(field.name, Comparator.EQ, True, start, end)
                if negated_before(before) or SCOPE_NEGATOR.search(text, start, end):
                    return negate(said)
                return said
        return None

    def describes_documents(
        self, text: str, before: str, end: int, taken: list[Constraint]
    ) -> bool:
        """Whether the word ending at ``text[end]`` (``before`` it: the text just before the
        word) says what the documents are ("remote jobs", "that are vegetarian")."""
        if _PHRASES.OWNED_BEFORE.search(before):
            return False  # "my remote job is boring": the user's own, not a wish
        if self._noun_after.match(text, end):
            return True
        if _PHRASES.PREDICATE_BEFORE.search(before):
            said = text[:end].rsplit(None, 1)[-1].lower()
            return not (said.endswith(("ed", "en")) and _PHRASES.VERB_OBJECT_AFTER.match(text, end))
        if _PHRASES.WITH_BEFORE.search(before) and _PHRASES.PHRASE_END.match(text, end):
            return True
        gap = len(text[end:]) - len(text[end:].lstrip(" -"))
        return any(constraint.start == end + gap for constraint in taken)  # "vegetarian indian"


def _compile(field: MetadataField, item_stems: frozenset[str]) -> _BooleanField:
    phrases: list[str] = []
    words: list[str] = []
    for word_list in _word_lists(field):
        (phrases if len(word_list) > 1 else words).append(_pattern(word_list))
    name_words = _PHRASES.WORD.findall(field.name.lower())
    if len(name_words) == 1:
        stem = STEMMER.stemWord(name_words[0])
        if len(stem) >= MIN_ROOT_CHARS:
            # "stabilized": "with stabilization"; "heated": "with heating"
            words.append(rf"{re.escape(stem)}(?:{_LISTS.NOUN_SUFFIXES})")
    denied = None
    if len(name_words) > 1 and name_words[0] == "in":
        rest = r"[\s-]+".join(map(re.escape, name_words[1:]))
        denied = english.pattern("booleans", "OUT_OF", REST=rest)
    if len(name_words) == 2 and name_words[1] in REQUIRED:
        thing, required = re.escape(name_words[0]), "|".join(sorted(REQUIRED))
        denied = english.pattern("booleans", "NOT_REQUIRED", THING=thing, REQUIRED=required)
    rows = [
        ValuePhrase(field.name, value, pattern, single=single, denial=not value, skip=skip)
        for value, pattern, single, skip in (
            (False, denied, False, None),
            (True, _alternatives(phrases), False, _said_of_the_user),
            (True, _alternatives(words, _LISTS.UN_PREFIX), True, None),
        )
        if pattern is not None
    ]
    return _BooleanField(field.name, tuple(rows), *_described_stems(field, item_stems))


def _said_of_the_user(match: re.Match[str], before: str) -> bool:
    """ "do I need a licence?", "we need a deposit": the user's own need, not the documents'."""
    return bool(_PHRASES.USER_SUBJECT_BEFORE.search(before))


def _described_stems(
    field: MetadataField, item_stems: frozenset[str]
) -> tuple[frozenset[str], frozenset[str]]:
    """The stems of the content words of the description's clause but the documents' noun
    ("Whether a certificate is awarded": certif, award): those that mean the field said in any
    order (two or three, from a clause that does not negate), and all of them."""
    words = _PHRASES.WORD.findall(_PHRASES.CLAUSE_END.split(field.description.strip())[0].lower())
    content = [word for word in words if word not in DESCRIPTION_STOPWORDS]
    stems = frozenset(STEMMER.stemWords(content)) - item_stems
    negates = any(word in _LISTS.NEGATION_WORDS for word in words)
    if negates or not MIN_DESCRIBED_WORDS <= len(stems) <= MAX_DESCRIBED_WORDS:
        return frozenset(), stems
    return stems, stems


def _stemmed_words(text: str) -> list[tuple[str, int, int]]:
    """Every word of ``text`` as (stem, start, end)."""
    matches = list(_PHRASES.WORD.finditer(text))
    stems = STEMMER.stemWords([match[0].lower() for match in matches])
    return [(stem, match.start(), match.end()) for stem, match in zip(stems, matches, strict=True)]


def _word_lists(field: MetadataField) -> list[list[str]]:
    """The field's phrases as word lists: its name, the clause of its description, and the
    plainer forms of either that say the same."""
    name_words = _PHRASES.WORD.findall(field.name.lower())
    while len(name_words) > 1 and name_words[0] in _LISTS.NAME_LEADS:
        name_words = name_words[1:]
    word_lists = [name_words]
    if len(name_words) > 2 and name_words[-1] in _LISTS.RESTRICTING:
        # "self_hosted_only": "self-hosted servers" says it; one word ("members") is too plain
        word_lists.append(name_words[:-1])
    if len(name_words) == 1:  # "foldable": "folding bikes", "bikes that fold"
        root = _PHRASES.ABLE_SUFFIX.sub("", name_words[0])
        if root != name_words[0] and len(root) >= MIN_ROOT_CHARS:
            word_lists.append([root])
    if len(name_words) == 2 and name_words[1] in _LISTS.OFFERED:
        word_lists.append(name_words[:1])  # "breakfast_included": "hotels with breakfast"
        # "pets_allowed": "that allow pets"; "breakfast_included": "includes breakfast"
        word_lists.append(name_words[::-1])
    if len(name_words) == 2 and name_words[1] in REQUIRED:  # "needs a licence", "licence needed"
        thing = name_words[0]
        article = "an" if thing[:1] in "aeiou" else "a"
        word_lists += [[verb, article, thing] for verb in ("need", "require")]
        word_lists += [[thing, word] for word in sorted(REQUIRED)]
    word_lists += _welcomed(f"{' '.join(name_words)}. {field.description}")
    clause = _PHRASES.CLAUSE_END.split(field.description.strip())[0]
    described = _PHRASES.WORD.findall(_PHRASES.DESCRIPTION_LEAD.sub("", clause.lower()))
    adjective = _PHRASES.DESCRIBED_ADJECTIVE.match(" ".join(described))
    if adjective:
        word_lists.append([adjective["word"]])
    elif len(described) <= MAX_PHRASE_WORDS:
        while described and described[0] in AUXILIARIES | ARTICLES:
            described = described[1:]  # "has a sauna": "sauna", a thing had, not a phrase
        if described:
            word_lists.append(described)
    return [words for words in word_lists if words]


def _welcomed(said: str) -> list[list[str]]:
    """ "good with kids", "pets allowed", "allows dogs": the phrases that say the same of the
    thing welcomed ("kid-friendly", "fine around kids", "dog friendly")."""
    things = {
        thing.lower()
        for match in _PHRASES.WELCOMED.finditer(said)
        for thing in (match["thing"] or match["thing2"] or match["thing3"], match["more"])
        if thing
    } - DESCRIPTION_STOPWORDS
    forms = things | {inflection.singularize(thing) for thing in things}
    forms |= {inflection.pluralize(thing) for thing in forms}
    lists = [[form, "friendly"] for form in sorted(forms)]
    lists += [
        [good, way, form] for form in sorted(forms) for good in _LISTS.GOOD for way in _LISTS.AROUND
    ]
    return lists


def _alternatives(patterns: list[str], prefix: str = "") -> re.Pattern[str] | None:
    if not patterns:
        return None
    ordered = sorted(set(patterns), key=len, reverse=True)
    return re.compile(rf"(?<!\w){prefix}(?:{'|'.join(ordered)})(?!\w)", re.IGNORECASE)


def _pattern(words: list[str]) -> str:
    """The words in order, the first one in any inflection ("ship" -> "ships", "shipping"), the
    last of several also in the plural ("local ssd": "without local SSDs"), and an article
    between two words where English puts one ("on_shelf": "on the shelf")."""
    stem = STEMMER.stemWord(words[0])
    first = re.escape(words[0])
    if len(stem) > 2:
        first = rf"(?:{first}|{re.escape(stem)}[a-z]{{0,{INFLECTION_CHARS}}})"
    rest = [re.escape(word) for word in words[1:]]
    if rest and words[-1].isalpha() and len(words[-1]) >= MIN_ROOT_CHARS:
        rest[-1] += "(?:e?s)?"
    return _LISTS.GAP_OR_ARTICLE.join([first, *rest])
