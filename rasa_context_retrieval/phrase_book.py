"""A YAML file of English phrase data, read and compiled once.

The follow-up decision (``follow_up.yaml``) and the rule-based self-query
(``self_query/english.yaml``) keep their English as data, one section per module that reads it,
so a new phrase is a new entry there and never a new expression in the logic. This module is the
one reader of such files: every phrase pattern is compiled here, and only here.
"""

from __future__ import annotations

import operator
import re
from collections.abc import Callable, Mapping
from functools import cached_property, reduce
from importlib.resources import files
from typing import Any, Generic, TypeVar

import yaml

Entry = TypeVar("Entry")

FRAGMENT = re.compile(r"\$\{(\w+)\}")
"""A fragment in a template: ``${NEGATORS}`` is filled with the ``NEGATORS`` the module gives."""


class Table(Generic[Entry]):
    """The entries of one kind in one section, read by name (``WORDS.ANAPHORA``): a module uses
    an entry where it needs it, and never copies it into a constant of its own."""

    def __init__(self, file: str, section: str, entries: Mapping[str, Entry]) -> None:
        self._file = file
        self._section = section
        self._entries = dict(entries)

    def __getattr__(self, name: str) -> Entry:
        try:
            return self.__dict__["_entries"][name]  # type: ignore[no-any-return]
        except KeyError:
            raise AttributeError(f"{self._file} has no {name} in {self._section}") from None


class PhraseBook:
    """One phrase file of a package: sections of ``words``, ``openings``, ``patterns`` and
    ``templates``."""

    def __init__(self, package: str, file: str) -> None:
        self._package = package
        self._file = file

    @cached_property
    def _sections(self) -> dict[str, dict[str, dict[str, Any]]]:
        text = files(self._package).joinpath(self._file).read_text(encoding="utf-8")
        sections: dict[str, dict[str, dict[str, Any]]] = yaml.safe_load(text)
        return sections

    def table(
        self, section: str, kind: str, read: Callable[[Any], Entry] = lambda said: said
    ) -> Table[Entry]:
        """The entries of one kind in a section, each read by ``read``."""
        entries = self._sections[section].get(kind, {})
        return Table(self._file, section, {name: read(said) for name, said in entries.items()})

    def patterns(self, section: str) -> Table[re.Pattern[str]]:
        """The phrase patterns of a section, compiled."""
        return self.table(section, "patterns", compiled)

    def pattern(self, section: str, name: str, **fragments: object) -> re.Pattern[str]:
        """One template of a section built from fragments the module gives, so that a word list
        said once (in the file or derived from it) is reused by every pattern that needs it."""
        return compiled(
            self._sections[section]["templates"][name],
            lambda source: FRAGMENT.sub(lambda match: str(fragments[match[1]]), source),
        )


def compiled(
    said: str | dict[str, Any], fill: Callable[[str], str] = lambda source: source
) -> re.Pattern[str]:
    """A file's pattern: a plain string, or ``re`` with ``flags`` (names of ``re`` flags)."""
    if isinstance(said, str):
        return re.compile(fill(said))
    flags = [re.RegexFlag[flag] for flag in said.get("flags", [])]
    return re.compile(fill(said["re"]), reduce(operator.or_, flags, re.NOFLAG))
