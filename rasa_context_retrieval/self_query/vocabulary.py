"""Find the string values of the declared fields in a user's message, and decide which are filters.

Every allowed or indexed value (and alias: "Germany" for ``eu``) is expanded once into its surface
forms ("androids", "Premium", "north america" for ``north-america``), all compiled into one
regular expression. Plurals come from ``inflection`` (Rails rules); ``inflect`` is fuller, but its
import alone takes seconds.

Finding a word is not enough: "contact us" does not mean region ``us``, "my dog" asks for no dog
documents (``_ELSEWHERE_ROWS``). Each form has a strictness, and ``_CUE_ROWS`` says which words
around it make it a filter:

* ``FREE``: a distinctive value ("android", "apac"), wherever it appears;
* ``CUED``: an everyday word ("free", "us", or among the commonest words of English, see
  ``common_words``), with a noun for the documents after it ("free plan") or a capital mid-sentence;
* ``TOPIC``: a value of a topic-like field (category, tags, type), when the sentence asks for
  things of that kind ("laptops", "python articles", "a thriller"), not in "tips for sync";
* ``NAME``: a short form of a name ("Spielberg", "Mercedes", "PS5"), written with a capital;
* ``INITIALS``: "ML" for "machine learning", in capitals where a kind is wanted;
* ``ANCHORED``: a value that is also a field name ("plans"), only with its field's name.

Its field's name said beside it ("category: plans", "gold tier") makes any value a filter, and a
value beside a chosen one may borrow its cue ("free or plus plans", "a Samsung tablet").
"""

from __future__ import annotations

import re
import unicodedata
from collections.abc import Callable, Collection, Iterator, Mapping, Sequence
from dataclasses import dataclass
from enum import Enum
from itertools import pairwise

import inflection
from langchain_core.structured_query import Comparator

from rasa_context_retrieval.filters.schema import STRING_TYPES, MetadataField
from rasa_context_retrieval.self_query import english
from rasa_context_retrieval.self_query.common_words import is_common_word
from rasa_context_retrieval.self_query.constraints import Constraint, overlaps_any
from rasa_context_retrieval.self_query.engine import Row, scan
from rasa_context_retrieval.self_query.items import noun_after
from rasa_context_retrieval.self_query.phrases import (
    CONCEPT_QUESTION_BEFORE,
    COORDINATION,
    CUE_BEFORE_VALUE,
    CUE_STOPWORDS,
    DETERMINERS_BEFORE_TOPIC,
    EVERYDAY_WORDS,
    NEGATION_BEFORE_VALUE,
    NEGATORS,
    PREPOSITIONS,
    SCOPE_NOUNS,
    TOPIC_ANCHOR_WORDS,
    TOPIC_FIELD_WORDS,
    alternation,
)

_PHRASES = english.patterns("vocabulary")

MAX_VALUE_WORDS = 5
MAX_VALUE_CHARS = 60
# Inflecting two-letter words goes wrong more often than right ("us", "eu" are names); three
# letters are ordinary nouns often enough ("dogs", "reds", "guinea pigs").
MIN_INFLECTED_CHARS = 3
# A surname stands for a full name only when it is this long ("Kon" is too short to be sure).
MIN_SURNAME_CHARS = 4
# A singular this short is too often another word ("new" for "news").
MIN_SINGULAR_CHARS = 4
# How far back to look for "not on the" / "plan:" before a value.
LOOKBEHIND_CHARS = 40
# Letters past ASCII up to the end of Latin Extended-B may carry accents to fold.
ASCII_END, LATIN_END = 0x7F, 0x250
# A short form's first word has this many letters or more, and values are found by them.
MIN_FIRST_CLIPPED_CHARS = 3
MIN_CLIPPED_CHARS = 2
MIN_HEAD_CHARS = 4
MIN_TITLE_WORDS = 3


class Strictness(Enum):
    FREE = "free"
    CUED = "cued"
    TOPIC = "topic"
    NAME = "name"
    INITIALS = "initials"
    ANCHORED = "anchored"


# The cues that make a sense of each strictness a filter: all of one row ("ML talks": initials
# and a noun for the documents after them). ANCHORED needs its field's name beside it.
_CUE_ROWS: dict[Strictness, tuple[tuple[str, ...], ...]] = {
    Strictness.FREE: ((),),
    Strictness.CUED: (("scope noun after",), ("capital mid-sentence",)),
    Strictness.NAME: (("capital",),),
    Strictness.INITIALS: (
        ("initials", "scope noun after"),
        ("initials", "determiner before"),
        ("initials", "preposition before"),
    ),
    Strictness.TOPIC: (
        ("plural",),
        ("document noun after",),
        ("documents on before",),
        ("excluded before",),
        ("opening query",),
        ("determiner before",),
    ),
    Strictness.ANCHORED: (),
}
# The cues that say a value names something other than the documents, all of one row: no cue
# or neighbour makes it a filter then.
_ELSEWHERE_ROWS = (
    ("owner before", "kind fields"),  # "my dog"
    ("lowercase", "capitalised values", "verb slot before"),  # "can we split" for ``Split``
    ("lowercase", "possessive after"),  # "a cat's blink"
    # "Is parking free for guests?": about parking, not hotels with it
    ("list fields", "question subject before", "no scope noun after"),
    # "Electric Pump-Fed engines": a lowercase value inside a name
    ("capital, not in a title", "lowercase values", "capitalised word after"),
    # "Cincinnati Reds", unless the word before is a value too ("Samsung Galaxy")
    ("capital, not in a title", "name before", "no value right before"),
)


@dataclass(frozen=True)
class ValueSense:
    """One meaning of a surface form: ``attribute`` has ``value``."""

    attribute: str
    value: str
    strictness: Strictness


@dataclass
class _Candidate:
    text: str
    start: int
    end: int
    senses: tuple[ValueSense, ...]
    chosen: ValueSense | None = None
    negated: bool = False
    each: bool = False
    elsewhere: bool = False
    """It names something other than the documents ("my dog"): no neighbour makes it a filter."""

    @property
    def written(self) -> str:
        return self.text[self.start : self.end]

    @property
    def before(self) -> str:
        """The text just before the value, where "not on the" or "plan:" is said."""
        return self.text[max(0, self.start - LOOKBEHIND_CHARS) : self.start]

    @property
    def mid_sentence(self) -> bool:
        return not _PHRASES.SENTENCE_END.search(self.text[: self.start].rstrip())


def fold_accents(text: str) -> str:
    """``text`` with accents dropped letter by letter ("rosé" -> "rose", "Müller" -> "Muller"),
    of the same length, so that positions found in the folded text hold in the original."""
    return text if text.isascii() else text.translate(_FOLDED)


_FOLDED = str.maketrans(
    {
        char: bare
        for char in map(chr, range(ASCII_END + 1, LATIN_END))
        if len(bare := unicodedata.normalize("NFKD", char).encode("ascii", "ignore").decode()) == 1
    }
)


def surface_key(text: str) -> str:
    """The form every surface is stored and looked up under: case-folded, accents dropped,
    single spaces."""
    return " ".join(
        word for word in _PHRASES.WORD_SEPARATORS.split(fold_accents(text).casefold()) if word
    )


def surface_forms(value: str) -> set[str]:
    """``value``, the plural of its last word ("SUVs" for all capitals) and, of several words,
    written as one ("ebikes" for "e-bike"). Never singular: "windows" is no "window"."""
    key = surface_key(value)
    words = key.split(" ")
    last = words[-1]
    forms = {key}
    if value.isupper() and value.isalpha() and len(value) > 1:
        forms.add(key + "s")
    elif len(last) >= MIN_INFLECTED_CHARS and last.isalpha():
        forms.add(" ".join([*words[:-1], inflection.pluralize(last)]))
    if len(words) > 1:
        forms |= {form.replace(" ", "") for form in forms}
    return forms


def _other_forms(
    value: str, words: list[str], strictness: Strictness
) -> Iterator[tuple[set[str], Strictness]]:
    """The short forms of a value (``words``: its surface key), kept only where they name no
    other value: a singular ("a sneaker": an ordinary word, so never free), a name's last word
    ("Gerwig") or first hyphened part ("Mercedes"), its one model code ("PS5" for "Sony PS5")
    and its initials ("ML" for "machine learning")."""
    singular = inflection.singularize(words[-1])
    if len(singular) >= MIN_SINGULAR_CHARS and singular != words[-1]:
        loose = Strictness.CUED if strictness is Strictness.FREE else strictness
        yield {" ".join([*words[:-1], singular])}, loose
    for parts, index in ((value.split(), -1), (value.split("-"), 0)):
        part = surface_key(parts[index])
        capitalised = all(word[:1].isupper() for word in parts)
        if len(parts) > 1 and capitalised and len(part) >= MIN_SURNAME_CHARS and part.isalpha():
            yield {part}, Strictness.NAME
    codes = [word for word in words if word.isalnum() and not (word.isalpha() or word.isdigit())]
    if len(words) > 1 and len(codes) == 1:
        yield set(codes), Strictness.NAME
    if len(words) > 1 and all(word.isalpha() for word in words):
        initials = "".join(word[0] for word in words)
        yield {initials, initials + "s"}, Strictness.INITIALS


def _is_matchable(value: object) -> bool:
    """Whether a value has letters, or is a release number ("4.1.1"), which no amount or date
    is written as."""
    if not isinstance(value, str) or len(value) > MAX_VALUE_CHARS:
        return False
    key = surface_key(value)
    words = any(char.isalpha() for char in key) and len(key.split(" ")) <= MAX_VALUE_WORDS
    return words or bool(_PHRASES.RELEASE_NUMBER.fullmatch(key))


def _is_short_form(said: tuple[str, ...], words: tuple[str, ...]) -> bool:
    """Whether ``said`` shortens the value ``words``: each word clipped ("sci fi", "Fuji X") or
    the first words whole ("jack russells")."""
    last = said[-1].removesuffix("s") if len(said[-1]) > MIN_CLIPPED_CHARS else said[-1]
    said = (*said[:-1], last)
    if len(said) < len(words):
        return said == words[: len(said)]
    return (
        len(said) == len(words)
        and said != words
        and len(said[0]) >= MIN_FIRST_CLIPPED_CHARS
        and all(
            part == word or (len(part) >= MIN_CLIPPED_CHARS and word.startswith(part))
            for part, word in zip(said, words, strict=True)
        )
    )


def _field_words(field: MetadataField) -> set[str]:
    words = {word for word in _PHRASES.WORD_SEPARATORS.split(field.name.lower()) if len(word) > 1}
    return words | {word + "s" for word in words} | {word.removesuffix("s") for word in words}


def _description_words(field: MetadataField) -> set[str]:
    return set(_PHRASES.WORD_SEPARATORS.split(field.description.lower()))


def _named_as_topic(field: MetadataField) -> bool:
    """Whether the field's name says its values are kinds of the documents: "category", "tags",
    "bike_type" ("The kind of bike"); "fuel_type" ("Engine fuel") is a property of them."""
    words = [word for word in _PHRASES.WORD_SEPARATORS.split(field.name.lower()) if word]
    if not _field_words(field) & TOPIC_FIELD_WORDS:
        return False
    return len(words) == 1 or bool(_description_words(field) & TOPIC_FIELD_WORDS)


def _field_named(field: MetadataField) -> tuple[re.Pattern[str], re.Pattern[str]]:
    """The field named after and before a value: its name, the nouns its description's first
    phrase is about ("Travel class of the fare": "first class"; "Kind of insurance cover": "home
    insurance") and, for a topic field, "category" or "articles"."""
    described = field.description.strip().lower()
    kind_of = _PHRASES.KIND_OF.match(described)
    phrase = _PHRASES.DESCRIPTION_PHRASE_END.split(described[kind_of.end() if kind_of else 0 :])[0]
    # "Kind of insurance cover": the nouns of what it is a kind of ("home insurance")
    heads = [word for word in phrase.split() if word != "or"] if kind_of else phrase.split()[-1:]
    kept = {
        head
        for head in heads
        if len(head) >= MIN_HEAD_CHARS and head.isalpha() and head not in CUE_STOPWORDS
    }
    words = _field_words(field) | kept | {inflection.pluralize(head) for head in kept}
    anchors = words | set(TOPIC_ANCHOR_WORDS) if _named_as_topic(field) else words
    before = english.pattern("vocabulary", "FIELD_NAMED_BEFORE", ANCHORS=alternation(anchors))
    return noun_after(anchors), before


def _negated_as_described(field: MetadataField) -> re.Pattern[str]:
    """A negator, a word of the field's description and a preposition before a value negate it:
    "not taught in" for "Languages the course is taught in"."""
    words = {
        word
        for word in _PHRASES.DESCRIBED_WORD.findall(field.description.lower())
        if word not in CUE_STOPWORDS
    }
    return english.pattern(
        "vocabulary",
        "NEGATED_AS_DESCRIBED",
        NEGATORS=NEGATORS,
        WORDS=alternation(words) or r"(?!x)x",
        PREPOSITIONS=PREPOSITIONS,
    )


class ValueVocabulary:
    """The string values of the declared fields, compiled for matching in user messages."""

    def __init__(
        self,
        fields: Sequence[MetadataField],
        known_values: Mapping[str, Collection[str]],
        item_nouns: Collection[str] = (),
    ) -> None:
        string_fields = [field for field in fields if field.type in STRING_TYPES]
        field_name_words = set().union(*(_field_words(field) for field in fields))
        string_field_words = set().union(*(_field_words(field) for field in string_fields))
        self._list_fields = frozenset(f.name for f in string_fields if f.type == "list[string]")
        self._senses: dict[str, list[ValueSense]] = {}
        self._short_forms: dict[str, dict[tuple[str, str], Strictness]] = {}
        # Values of several words by the first letters of their first word, for short forms.
        self._multiword: dict[str, list[tuple[tuple[str, ...], ValueSense]]] = {}
        self._field_named = {field.name: _field_named(field) for field in string_fields}
        self._negated_as_described = {f.name: _negated_as_described(f) for f in string_fields}
        # Fields whose values are kinds of the documents: "category", "Kind of animal".
        self._kind_fields = frozenset(
            field.name
            for field in string_fields
            if _named_as_topic(field) or _description_words(field) & TOPIC_FIELD_WORDS
        )
        for field in string_fields:
            aliases = field.alias_map
            values = field.values or tuple(known_values.get(field.name, ()))
            for value in dict.fromkeys([*values, *aliases]):
                self._add_value(field, value, field_name_words, aliases.get(value, ()))
        for form, owners in self._short_forms.items():
            if form not in self._senses and len(owners) == 1:
                ((attribute, value), strictness), *_ = owners.items()
                self._senses[form] = [ValueSense(attribute, value, strictness)]
        self._scope_after = noun_after(SCOPE_NOUNS | string_field_words | set(item_nouns))
        self._item_after = noun_after(item_nouns)
        self._item_on_before = english.pattern(
            "vocabulary", "ITEM_ON_BEFORE", ITEMS=alternation(item_nouns) or r"(?!x)x"
        )
        self._plurals = frozenset(
            form for form in self._senses if inflection.singularize(form) != form
        )
        alternatives = alternation(self._senses).replace(r"\ ", r"[\s\-_/]+") or r"(?!x)x"
        self._pattern = re.compile(rf"(?<!\w)(?:{alternatives})(?!\w)", re.IGNORECASE)

    @property
    def size(self) -> int:
        return len(self._senses)

    def is_plural_value(self, written: str) -> bool:
        """Whether ``written`` is a value in the plural ("thrillers", "laptops", "headphones")."""
        return surface_key(written) in self._plurals

    def _add_value(
        self,
        field: MetadataField,
        value: object,
        field_name_words: set[str],
        aliases: Sequence[str] = (),
    ) -> None:
        if not _is_matchable(value):
            return
        assert isinstance(value, str)
        for written in (value, *aliases):
            if _is_matchable(written):
                forms = surface_forms(written)
                strictness = self._strictness(field, forms, field_name_words)
                for form in forms:
                    senses = self._senses.setdefault(form, [])
                    if all(sense.attribute != field.name for sense in senses):
                        senses.append(ValueSense(field.name, value, strictness))
        words = surface_key(value).split(" ")
        strictness = self._strictness(field, {surface_key(value)}, field_name_words)
        for forms, form_strictness in _other_forms(value, words, strictness):
            for form in forms:
                self._short_forms.setdefault(form, {})[(field.name, value)] = form_strictness
        if len(words) > 1 and all(word.isalpha() for word in words):
            self._multiword.setdefault(words[0][:MIN_FIRST_CLIPPED_CHARS], []).append(
                (tuple(words), ValueSense(field.name, value, strictness))
            )

    @staticmethod
    def _strictness(
        field: MetadataField, forms: set[str], field_name_words: set[str]
    ) -> Strictness:
        rows = (
            (forms & field_name_words, Strictness.ANCHORED),
            (_named_as_topic(field), Strictness.TOPIC),
            (forms & SCOPE_NOUNS, Strictness.ANCHORED),
            (forms & (EVERYDAY_WORDS | CUE_STOPWORDS), Strictness.CUED),
            (any(map(is_common_word, forms)), Strictness.CUED),
        )
        return next((strictness for said, strictness in rows if said), Strictness.FREE)

    def find(self, text: str, taken: list[Constraint]) -> list[Constraint]:
        """Value filters said in ``text``: ``eq`` for a scoping mention, ``ne`` when negated."""
        text = fold_accents(text)
        candidates = [said for _, said in scan(text, [Row(self._pattern, self._said)], taken)]
        candidates = _with_added(candidates, taken, self._said_shortened(text), chained=False)
        heads = (self._shared_heads(text, candidate) for candidate in candidates)
        candidates = _with_added(candidates, taken, heads, chained=True)
        for candidate in candidates:
            said = self._cues(candidate, candidates)
            candidate.elsewhere = any(said.issuperset(row) for row in _ELSEWHERE_ROWS)
            if not candidate.elsewhere:
                candidate.chosen = self._resolve(candidate, candidates, said)
            candidate.negated = bool(NEGATION_BEFORE_VALUE.search(candidate.before))
            if candidate.chosen and not candidate.negated:
                described = self._negated_as_described[candidate.chosen.attribute]
                candidate.negated = bool(described.search(candidate.before))
        self._accept_beside(candidates)
        for group in _runs(
            candidates, lambda a, b: bool(COORDINATION.fullmatch(text, a.end, b.start))
        ):
            _share_within(group)
        self._mark_each(candidates)
        return [
            _constraint(candidate)
            for candidate in candidates
            if candidate.chosen and not CONCEPT_QUESTION_BEFORE.search(text, 0, candidate.start)
        ]

    def _said(self, match: re.Match[str]) -> _Candidate | None:
        """The senses of a surface form said; the regex matches case-insensitively by simple
        case folding, so the rare letter whose full folding differs ("İ") finds none."""
        senses = self._senses.get(surface_key(match[0]))
        if not senses or _PHRASES.LONGER_NUMBER_AFTER.match(match.string, match.end()):
            return None  # "4.1.1" inside "4.1.1.2"
        return _Candidate(match.string, match.start(), match.end(), tuple(senses))

    def _said_shortened(self, text: str) -> Iterator[Iterator[_Candidate]]:
        """Values of several words said shortened ("sci-fi", "Jack Russells"), in two words at
        least: one ("German") is too often a word of its own. One that fits two values of a field
        says neither."""
        words = list(_PHRASES.SHORT_FORM_WORD.finditer(text))
        for position, first in enumerate(words):
            if surface_key(first[0])[:MIN_FIRST_CLIPPED_CHARS] in self._multiword:
                yield (
                    _Candidate(text, said[0].start(), said[-1].end(), self._short_senses(said))
                    for size in range(MAX_VALUE_WORDS, 1, -1)
                    if len(said := words[position : position + size]) == size
                    and all(
                        _PHRASES.SHORT_FORM_GAP.fullmatch(text, a.end(), b.start())
                        for a, b in pairwise(said)
                    )
                )

    def _short_senses(self, words_said: Sequence[re.Match[str]]) -> tuple[ValueSense, ...]:
        said = tuple(surface_key(word[0]) for word in words_said)
        senses: dict[str, list[ValueSense]] = {}
        for words, sense in self._multiword.get(said[0][:MIN_FIRST_CLIPPED_CHARS], ()):
            if _is_short_form(said, words):
                senses.setdefault(sense.attribute, []).append(sense)
        return tuple(listed[0] for listed in senses.values() if len(listed) == 1)

    def _shared_heads(self, text: str, candidate: _Candidate) -> Iterator[_Candidate]:
        """Values said with the head noun of a later one ("weekly or monthly passes"), only when
        the word and the head are a surface form of a value of the same field."""
        head = " ".join(candidate.written.split()[1:])
        attributes = {sense.attribute for sense in candidate.senses}
        start = candidate.start
        while head and (
            joined := _PHRASES.ELLIPTIC_WORD_BEFORE.search(
                text, max(0, start - LOOKBEHIND_CHARS), start
            )
        ):
            senses = self._senses.get(surface_key(f"{joined['word']} {head}"), ())
            owned = tuple(sense for sense in senses if sense.attribute in attributes)
            yield _Candidate(text, joined.start(), joined.end("word"), owned)
            start = joined.start()

    def _resolve(
        self, candidate: _Candidate, candidates: list[_Candidate], said: set[str]
    ) -> ValueSense | None:
        """The one sense its field's name said next to it gives, else the one sense whose
        strictness the cues ``said`` satisfy (a row of ``_CUE_ROWS``); none when two are left."""
        anchored = [s for s in candidate.senses if self._has_own_field(candidate, s, candidates)]
        if anchored:
            return anchored[0] if len(anchored) == 1 else None
        accepted = [
            sense
            for sense in candidate.senses
            if any(said.issuperset(row) for row in _CUE_ROWS[sense.strictness])
        ]
        return accepted[0] if len(accepted) == 1 else None

    def _cues(self, candidate: _Candidate, candidates: list[_Candidate]) -> set[str]:
        """The cues said around a value. Initials count in capitals only, in a message not all
        in capitals, and not as a word of their own in the plural ("SOS" is no plural of "SO")."""
        text, start, end = candidate.text, candidate.start, candidate.end
        written, before, senses = candidate.written, candidate.before, candidate.senses
        word_of_its_own = written.endswith("S") and any(
            len(sense.value.split()) == len(written) - 1
            for sense in senses
            if sense.strictness is Strictness.INITIALS
        )
        phrase_start = _phrase_start(candidate, candidates)  # "my [Tamron zoom]"
        name_before = _PHRASES.CAPITALISED_WORD_BEFORE.search(text, 0, start)
        long_words = _PHRASES.LONG_WORD.findall(text)  # "Best Sci-Fi Movies By Nolan"
        title_case = len(long_words) >= MIN_TITLE_WORDS and all(w[0].isupper() for w in long_words)
        said = {
            "scope noun after": self._scope_after.match(text, end),
            "no scope noun after": not self._scope_after.match(text, end),
            "capital mid-sentence": not text.isupper()
            and written != written.lower()
            and candidate.mid_sentence,
            "capital": written[0].isupper(),
            "capital, not in a title": written[:1].isupper() and not title_case,
            "lowercase": written.islower(),
            "initials": not (text.isupper() or word_of_its_own)
            and written.removesuffix("s").isupper(),
            "determiner before": DETERMINERS_BEFORE_TOPIC.search(before),
            "preposition before": _PHRASES.INITIALS_PREPOSITION_BEFORE.search(before),
            "plural": self.is_plural_value(written),
            "document noun after": self._item_after.match(text, end),
            "documents on before": self._item_on_before.search(before),
            "excluded before": _PHRASES.KIND_EXCLUDED_BEFORE.search(before),
            "opening query": _PHRASES.MESSAGE_OPENING.fullmatch(before)
            and _PHRASES.KIND_QUERY_AFTER.match(text, end),
            "owner before": _PHRASES.OWNER_BEFORE.search(
                text[max(0, phrase_start - LOOKBEHIND_CHARS) : phrase_start]
            ),
            "verb slot before": _PHRASES.VERB_SLOT_BEFORE.search(before),
            "possessive after": _PHRASES.POSSESSIVE_AFTER.match(text, end),
            "question subject before": _PHRASES.QUESTION_SUBJECT_BEFORE.search(text, 0, start),
            "capitalised word after": _PHRASES.CAPITALISED_WORD_AFTER.match(text, end)
            and candidate.mid_sentence,
            "name before": name_before and name_before["word"].lower() not in CUE_STOPWORDS,
            "no value right before": phrase_start == start,
            "kind fields": all(sense.attribute in self._kind_fields for sense in senses),
            "list fields": all(sense.attribute in self._list_fields for sense in senses),
            "capitalised values": all(sense.value[:1].isupper() for sense in senses),
            "lowercase values": all(sense.value.islower() for sense in senses),
        }
        return {cue for cue, found in said.items() if found}

    def _accept_beside(self, candidates: list[_Candidate]) -> None:
        """A value right beside a chosen value of another field takes its one sense of a kind: a
        topic value after it ("a Samsung tablet"), an everyday value before it and a noun for the
        documents ("basic car policies"); a value chosen here counts next."""
        for after in (True, False):
            for first, second in pairwise(candidates):
                candidate, neighbour = (second, first) if after else (first, second)
                if (
                    candidate.chosen is not None
                    or candidate.elsewhere
                    or neighbour.chosen is None
                    or first.text[first.end : second.start].strip()
                    or not (after or self._scope_after.match(first.text, second.end))
                ):
                    continue
                strictness = Strictness.TOPIC if after else Strictness.CUED
                senses = [
                    sense
                    for sense in candidate.senses
                    if sense.strictness is strictness
                    and sense.attribute != neighbour.chosen.attribute
                ]
                candidate.chosen = senses[0] if len(senses) == 1 else None

    def _has_own_field(
        self, candidate: _Candidate, sense: ValueSense, candidates: Sequence[_Candidate]
    ) -> bool:
        """Whether the field's name is said next to the value ("category: plans", "gold tier"), not
        as a word of another value ("Child Benefit payment" for a field ``benefit``)."""
        text, start = candidate.text, candidate.start
        others = [other for other in candidates if other is not candidate]
        after, before = self._field_named[sense.attribute]
        said = (
            after.match(text, candidate.end),
            before.search(text, max(0, start - LOOKBEHIND_CHARS), start),
        )
        return any(m is not None and not overlaps_any(m.start(), m.end(), others) for m in said)

    def _mark_each(self, candidates: list[_Candidate]) -> None:
        """Values of a list field had by the documents, joined by "and" ("with a balcony and a
        dishwasher") or said with "both", must each be there; joined by "or", or not said as things
        had ("on android and iOS"), any of them."""

        def joined(previous: _Candidate, candidate: _Candidate) -> bool:
            field = candidate.chosen and candidate.chosen.attribute
            return bool(
                field in self._list_fields
                and previous.chosen
                and previous.chosen.attribute == field
                and any(
                    joiner.fullmatch(candidate.text, previous.end, candidate.start)
                    for joiner in (_PHRASES.EACH_JOINER, _PHRASES.LIST_COMMA)
                )
            )

        for chain in _runs(candidates, joined):
            if (
                len(chain) > 1
                and _PHRASES.EACH_JOINER.fullmatch(chain[0].text, chain[-2].end, chain[-1].start)
                and _PHRASES.EACH_BEFORE.search(chain[0].before)
            ):
                for candidate in chain:
                    candidate.each = True


def _with_added(
    candidates: list[_Candidate],
    taken: list[Constraint],
    tries: Iterator[Iterator[_Candidate]],
    *,
    chained: bool,
) -> list[_Candidate]:
    """Add the tries that name a value on words no other reading has; a run of tries stops at its
    first fit or, ``chained`` ("weekly, monthly or annual passes", backwards), first miss."""
    found = list(candidates)
    for run in tries:
        for candidate in run:
            fits = bool(candidate.senses) and not overlaps_any(
                candidate.start, candidate.end, [*taken, *found]
            )
            if fits:
                found.append(candidate)
            if fits != chained:
                break
    return sorted(found, key=lambda candidate: candidate.start)


def _phrase_start(candidate: _Candidate, candidates: list[_Candidate]) -> int:
    """Where the values said right before ``candidate`` start ("my [Tamron zoom]")."""
    start = candidate.start
    for previous in reversed([c for c in candidates if c.end <= candidate.start]):
        if candidate.text[previous.end : start].strip():
            break
        start = previous.start
    return start


def _share_within(group: list[_Candidate]) -> None:
    """Members of "free, plus or premium plans" share the field one of them was given and "my
    guitar and piano" its owner."""
    attributes = {candidate.chosen.attribute for candidate in group if candidate.chosen}
    for candidate in group:
        if group[0].elsewhere:
            candidate.elsewhere, candidate.chosen = True, None
        elif len(attributes) == 1 and candidate.chosen is None and not candidate.elsewhere:
            same_field = (sense for sense in candidate.senses if sense.attribute in attributes)
            candidate.chosen = next(same_field, None)


def _constraint(candidate: _Candidate) -> Constraint:
    assert candidate.chosen is not None
    cue = CUE_BEFORE_VALUE.search(candidate.before)
    start = candidate.start - len(candidate.before) + cue.start() if cue else candidate.start
    return Constraint(
        attribute=candidate.chosen.attribute,
        comparator=Comparator.NE if candidate.negated else Comparator.EQ,
        value=candidate.chosen.value,
        start=start,
        end=candidate.end,
        each=candidate.each and not candidate.negated,
        negated=candidate.negated,
    )


def _runs(
    candidates: list[_Candidate], joined: Callable[[_Candidate, _Candidate], bool]
) -> list[list[_Candidate]]:
    """The candidates in runs of neighbours ``joined`` to the one before ("free, plus or
    premium")."""
    runs: list[list[_Candidate]] = []
    for candidate in candidates:
        if runs and joined(runs[-1][-1], candidate):
            runs[-1].append(candidate)
        else:
            runs.append([candidate])
    return runs
