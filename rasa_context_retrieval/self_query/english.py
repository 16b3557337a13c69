"""The English of the rule-based self-query, read from ``english.yaml`` and compiled once.

The words that turn a mention into a filter ("under", "in stock", "since") and the phrase
patterns built from them are data, not code: ``english.yaml`` holds them, one section per
extractor module, so a new word or spelling is a new entry there and never a new expression in
an extractor. ``phrase_book`` reads and compiles the file.
"""

from __future__ import annotations

import re
from typing import Any

from rasa_context_retrieval.phrase_book import PhraseBook, Table

_BOOK = PhraseBook(__package__, "english.yaml")
patterns = _BOOK.patterns
pattern = _BOOK.pattern


def words(module: str) -> Table[Any]:
    """The word lists, word tables and pattern fragments of one extractor module."""
    return _BOOK.table(module, "words")


def section(module: str) -> tuple[Table[Any], Table[re.Pattern[str]]]:
    """The words and the compiled patterns of one extractor module."""
    return words(module), patterns(module)
