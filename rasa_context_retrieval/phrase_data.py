"""The English of the follow-up decision and the rule-based rewrite, read from
``follow_up.yaml`` and compiled once.

Which words point back ("it", "same"), which openings continue a subject ("and ...", "what
about ...") or announce a new one ("separate question, ..."), which bot questions only offer
more help: these are data, not code. ``follow_up.yaml`` holds them, one section per module that
reads them (``follow_up``, ``rewrite``), so a new phrase is a new entry there and never a new
expression in the logic.

Three kinds of entry, by the section they sit in:

* ``words``: a word list, read as a set (``word in table.ANAPHORA``); a plain string stays a
  string;
* ``openings``: a list of openings, read as a tuple for ``str.startswith``;
* ``patterns``: a regular expression, a plain string or ``re`` with ``flags`` (names of ``re``
  flags).
"""

from __future__ import annotations

import re
from functools import cache
from typing import Any

from rasa_context_retrieval.phrase_book import PhraseBook, Table

_BOOK = PhraseBook(__package__, "follow_up.yaml")


@cache
def words(section: str) -> Table[Any]:
    """The word lists of one section, each a frozenset (a plain string stays a string)."""
    return _BOOK.table(section, "words", _word_entry)


@cache
def openings(section: str) -> Table[tuple[str, ...]]:
    """The lists of openings of one section, each a tuple for ``str.startswith``."""
    return _BOOK.table(section, "openings", tuple)


@cache
def patterns(section: str) -> Table[re.Pattern[str]]:
    """The phrase patterns of one section, compiled."""
    return _BOOK.patterns(section)


def _word_entry(said: str | list[str]) -> str | frozenset[str]:
    return said if isinstance(said, str) else frozenset(said)
