"""The English of the rule-based self-query, read from ``english.yaml`` and compiled once.

The words that turn a mention into a filter ("under", "in stock", "since") and the phrase
patterns built from them are data, not code: ``english.yaml`` holds them, one section per
extractor module, so a new word or spelling is a new entry there and never a new expression in
an extractor. Every pattern is compiled here, and only here.
"""

from __future__ import annotations

import operator
import re
from collections.abc import Callable, Mapping
from functools import cache, reduce
from importlib.resources import files
from typing import Any, Generic, TypeVar

import yaml

Entry = TypeVar("Entry")


@cache
def _tables() -> dict[str, dict[str, dict[str, Any]]]:
    text = files(__package__).joinpath("english.yaml").read_text(encoding="utf-8")
    tables: dict[str, dict[str, dict[str, Any]]] = yaml.safe_load(text)
    return tables


class Table(Generic[Entry]):
    """The entries of one section, read by name (``_PHRASES.SENTENCE_END``): a module uses an
    entry where it needs it, and never copies it into a constant of its own."""

    def __init__(self, module: str, entries: Mapping[str, Entry]) -> None:
        self._module = module
        self._entries = dict(entries)

    def __getattr__(self, name: str) -> Entry:
        try:
            return self.__dict__["_entries"][name]  # type: ignore[no-any-return]
        except KeyError:
            raise AttributeError(f"english.yaml has no {name} in {self._module}") from None


def words(module: str) -> Table[Any]:
    """The word lists, word tables and pattern fragments of one extractor module."""
    return Table(module, _tables()[module].get("words", {}))


def section(module: str) -> tuple[Table[Any], Table[re.Pattern[str]]]:
    """The words and the compiled patterns of one extractor module."""
    return words(module), patterns(module)


def patterns(module: str) -> Table[re.Pattern[str]]:
    """The phrase patterns of one extractor module, compiled."""
    entries = _tables()[module].get("patterns", {})
    return Table(module, {name: _compiled(said) for name, said in entries.items()})


FRAGMENT = re.compile(r"\$\{(\w+)\}")


def pattern(module: str, name: str, **fragments: object) -> re.Pattern[str]:
    """One phrase pattern of a module built from fragments the module gives: ``${NEGATORS}`` in
    the table is the ``NEGATORS`` fragment, so a word list said once (in the tables or derived
    from them) is reused by every pattern that needs it."""
    return _compiled(
        _tables()[module]["templates"][name],
        lambda source: FRAGMENT.sub(lambda match: str(fragments[match[1]]), source),
    )


def _compiled(
    said: str | dict[str, Any], fill: Callable[[str], str] = lambda source: source
) -> re.Pattern[str]:
    """A table's pattern: a plain string, or ``re`` with ``flags`` (names of ``re`` flags)."""
    if isinstance(said, str):
        return re.compile(fill(said))
    flags = [re.RegexFlag[flag] for flag in said.get("flags", [])]
    return re.compile(fill(said["re"]), reduce(operator.or_, flags, re.NOFLAG))
