"""The English of the follow-up decision and the rule-based rewrite, read from
``follow_up.yaml`` and compiled once.

Which words point back ("it", "same"), which openings continue a subject ("and ...", "what
about ...") or announce a new one ("separate question, ..."), which bot questions only offer
more help: these are data, not code. ``follow_up.yaml`` holds them, one section per module that
reads them (``follow_up``, ``rewrite``), so a new phrase is a new entry there and never a new
expression in the logic. Every pattern is compiled here, and only here.

Three kinds of entry, by the section they sit in:

* ``words``: a word list, read as a set (``word in table.ANAPHORA``); a plain string stays a
  string;
* ``openings``: a list of openings, read as a tuple for ``str.startswith``;
* ``patterns``: a regular expression, a plain string or ``re`` with ``flags`` (names of ``re``
  flags).
"""

from __future__ import annotations

import operator
import re
from collections.abc import Mapping
from functools import cache, reduce
from importlib.resources import files
from typing import Any, Generic, TypeVar

import yaml

PHRASE_FILE = "follow_up.yaml"

Entry = TypeVar("Entry")


@cache
def _sections() -> dict[str, dict[str, dict[str, Any]]]:
    text = files(__package__).joinpath(PHRASE_FILE).read_text(encoding="utf-8")
    sections: dict[str, dict[str, dict[str, Any]]] = yaml.safe_load(text)
    return sections


class Table(Generic[Entry]):
    """The entries of one kind in one section, read by name (``WORDS.ANAPHORA``): a module
    uses an entry where it needs it, and never copies it into a constant of its own."""

    def __init__(self, section: str, entries: Mapping[str, Entry]) -> None:
        self._section = section
        self._entries = dict(entries)

    def __getattr__(self, name: str) -> Entry:
        try:
            return self.__dict__["_entries"][name]  # type: ignore[no-any-return]
        except KeyError:
            raise AttributeError(f"{PHRASE_FILE} has no {name} in {self._section}") from None


@cache
def words(section: str) -> Table[Any]:
    """The word lists of one section, each a frozenset (a plain string stays a string)."""
    entries = _sections()[section].get("words", {})
    return Table(section, {name: _word_entry(said) for name, said in entries.items()})


@cache
def openings(section: str) -> Table[tuple[str, ...]]:
    """The lists of openings of one section, each a tuple for ``str.startswith``."""
    entries = _sections()[section].get("openings", {})
    return Table(section, {name: tuple(said) for name, said in entries.items()})


@cache
def patterns(section: str) -> Table[re.Pattern[str]]:
    """The phrase patterns of one section, compiled."""
    entries = _sections()[section].get("patterns", {})
    return Table(section, {name: _compiled(said) for name, said in entries.items()})


def _word_entry(said: str | list[str]) -> str | frozenset[str]:
    return said if isinstance(said, str) else frozenset(said)


def _compiled(said: str | dict[str, Any]) -> re.Pattern[str]:
    """A table's pattern: a plain string, or ``re`` with ``flags`` (names of ``re`` flags)."""
    if isinstance(said, str):
        return re.compile(said)
    flags = [re.RegexFlag[flag] for flag in said.get("flags", [])]
    return re.compile(said["re"], reduce(operator.or_, flags, re.NOFLAG))
