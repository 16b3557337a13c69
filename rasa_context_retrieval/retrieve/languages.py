"""The knowledge base's language: which stemmer and stop words BM25 uses, and a cheap check.

``language`` in the ``vector_store:`` block is an ISO 639-1 code. It picks the Snowball stemmer
(PyStemmer) and the stop-word list (the NLTK lists bundled with bm25s) of the lexical index;
languages with only one of the two use that one. Chinese and Japanese are not offered: BM25
here splits words at spaces and punctuation, which those scripts do not use.

Dense search does not depend on this key (it depends on the embedding model), and the words
rewrite and the rules self-query understand English only, whatever it says.

At index time :func:`warn_if_documents_are_not_in` guesses each document's language from its
share of stop words (the language whose list covers most of its words) and warns once when most
documents look like another language than the configured one. A guess needs a few dozen words;
shorter documents are not counted.
"""

from __future__ import annotations

import re
from collections import Counter
from collections.abc import Iterable
from dataclasses import dataclass
from typing import Annotated

import structlog
from bm25s import stopwords as nltk
from pydantic import AfterValidator

logger = structlog.get_logger()

DEFAULT_LANGUAGE = "en"
MIN_WORDS_TO_GUESS = 30
"""Fewer words than this say too little about a document's language."""
MIN_STOPWORD_SHARE = 0.15
"""Running text in any listed language has well above this share of stop words (English prose
about 40 %); a document below it (tables, code, error lists) is not guessed."""

_WORD = re.compile(r"\w+")


@dataclass(frozen=True)
class Analyzer:
    """How BM25 turns a language's text into terms."""

    stemmer: str | None
    """PyStemmer algorithm name; ``None``: no stemming."""
    stopwords: tuple[str, ...]


LANGUAGE_NAMES: dict[str, str] = {
    # ISO 639-1 code: the language's name as PyStemmer's Snowball algorithms and bm25s's
    # stop-word lists spell it. The languages with stop words come first: a document whose
    # stop words two lists cover equally is guessed as the earlier one.
    "en": "english",
    "da": "danish",
    "de": "german",
    "es": "spanish",
    "fr": "french",
    "it": "italian",
    "nl": "dutch",
    "no": "norwegian",
    "pt": "portuguese",
    "ru": "russian",
    "sv": "swedish",
    "tr": "turkish",
    "ko": "korean",
    "ar": "arabic",
    "ca": "catalan",
    "cs": "czech",
    "el": "greek",
    "et": "estonian",
    "eu": "basque",
    "fa": "persian",
    "fi": "finnish",
    "ga": "irish",
    "hi": "hindi",
    "hu": "hungarian",
    "hy": "armenian",
    "id": "indonesian",
    "lt": "lithuanian",
    "ne": "nepali",
    "pl": "polish",
    "ro": "romanian",
    "sr": "serbian",
    "ta": "tamil",
    "yi": "yiddish",
}

WITHOUT_STEMMER = frozenset({"korean"})
"""Languages Snowball has no stemmer for (every other name above is a PyStemmer algorithm)."""


def _analyzer(name: str) -> Analyzer:
    """The language's Snowball stemmer and the NLTK stop words bm25s bundles for it, if any
    (bm25s names the English list ``EN``, the others by the language's name)."""
    bundled = "STOPWORDS_" + ("EN" if name == "english" else name.upper())
    return Analyzer(None if name in WITHOUT_STEMMER else name, tuple(getattr(nltk, bundled, ())))


ANALYZERS: dict[str, Analyzer] = {code: _analyzer(name) for code, name in LANGUAGE_NAMES.items()}

_STOPWORD_SETS = {code: frozenset(a.stopwords) for code, a in ANALYZERS.items() if a.stopwords}


def _supported(code: str) -> str:
    if code not in ANALYZERS:
        raise ValueError(
            f"unknown language code; use one of {', '.join(sorted(ANALYZERS))} "
            "(ISO 639-1, lower case)"
        )
    return code


LanguageCode = Annotated[str, AfterValidator(_supported)]
"""An ISO 639-1 code the lexical analyzer supports; validated when the config is read."""


def guess_language(text: str) -> str | None:
    """The language whose stop words cover most of ``text``; None when it cannot tell."""
    words = _WORD.findall(text.casefold())
    if len(words) < MIN_WORDS_TO_GUESS:
        return None
    shares = {
        code: sum(word in stopwords for word in words) / len(words)
        for code, stopwords in _STOPWORD_SETS.items()
    }
    best = max(shares, key=shares.__getitem__)
    return best if shares[best] >= MIN_STOPWORD_SHARE else None


def warn_if_documents_are_not_in(texts: Iterable[str], language: str) -> str | None:
    """Warn (once per call) when most guessable documents look like another language.

    Returns the language most of them look like when it differs, for the caller and tests.
    """
    guesses = Counter(guess for guess in map(guess_language, texts) if guess is not None)
    counted = sum(guesses.values())
    others = counted - guesses[language]
    if not counted or others * 2 <= counted:
        return None
    likely = max((code for code in guesses if code != language), key=guesses.__getitem__)
    logger.warning(
        "knowledge.language.mismatch",
        language=language,
        looks_like=likely,
        documents=counted,
        other_language=others,
        event_info=f"{others} of {counted} documents do not look like '{language}' (most look "
        f"like '{likely}'); set `language: {likely}` in the vector_store block so that keyword "
        "search stems and drops stop words in that language",
    )
    return likely


def warn_about_english_only_steps(language: str, rewrite: str, self_query: str) -> list[str]:
    """Warn at start-up when a non-English knowledge base is planned by English-only rules.

    Returns the settings concerned (empty when there is nothing to say).
    """
    english_only = [
        f"{key}: {mode}"
        for key, mode, rules in (
            ("rewrite", rewrite, "heuristic"),
            ("self_query", self_query, "rules"),
        )
        if mode == rules
    ]
    if language != DEFAULT_LANGUAGE and english_only:
        logger.warning(
            "knowledge.language.english_only_steps",
            language=language,
            settings=english_only,
            event_info=f"{', '.join(english_only)} understand(s) English only; with "
            f"`language: {language}` they mostly leave questions as they are. Use `llm` modes, "
            "or `off`, for follow-ups and filters in other languages",
        )
        return english_only
    return []
