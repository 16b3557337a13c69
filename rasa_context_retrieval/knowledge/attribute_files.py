"""Attributes for files without front matter: a sidecar per document, a file per folder.

A PDF, a Word file or a web page cannot carry front matter, so its attributes live beside it:

* ``manual.pdf.meta.yml``, a *sidecar*: attributes of ``manual.pdf`` alone;
* ``_attributes.yml``, a *folder file*: attributes of every document in its folder and below,
  so a folder of Premium manuals carries ``plan: premium`` without touching each file.

Outer rules come first, then inner ones: folder files from the docs folder down, then the
sidecar, then the document's own attributes (front matter, a JSON line's ``metadata``, a table
row's cells). An inner rule may set any other attribute, but for an access attribute it can only
*narrow*: the document's values are the intersection of every rule that sets it, and a rule that
would remove it (an empty value) or leave no value at all is refused, never read as public. So a
folder rule is the way to restrict a whole folder, and nothing inside it can undo that.

These files are never indexed as documents. A file that cannot be read exactly (bad YAML, a key
twice, a misspelled access attribute, not a mapping) is refused, and so is every document it
covers: a restricted folder whose rule is unreadable must not become public.
"""

from __future__ import annotations

from collections.abc import Callable, Collection, Mapping
from pathlib import Path, PurePosixPath
from typing import Any

from rasa_context_retrieval.errors import ContextRetrievalError
from rasa_context_retrieval.knowledge.access_attributes import is_unattributed
from rasa_context_retrieval.knowledge.listing import FOLDER_ATTRIBUTES, SIDECAR_SUFFIX


class AttributesRefused(ContextRetrievalError, ValueError):
    """The document's attributes cannot be settled; the message is the one-line reason."""


AttributeReader = Callable[[Path], dict[str, Any]]
"""Reads one attribute file; raises ``AttributesRefused`` with the reason it is refused."""


class AttributeRules:
    """The sidecars and folder files under a docs folder, read once each."""

    def __init__(
        self,
        folder: Path,
        attribute_files: Collection[Path],
        read: AttributeReader,
        access_attributes: Collection[str],
    ) -> None:
        self._access = frozenset(access_attributes)
        self._rules: dict[str, dict[str, Any] | AttributesRefused] = {}
        for path in attribute_files:
            name = path.relative_to(folder).as_posix()
            try:
                self._rules[name] = read(path)
            except AttributesRefused as refused:
                self._rules[name] = refused

    def refuse(self, name: str, reason: str) -> None:
        """An attribute file that was listed but not read (a link out of the docs folder): the
        documents it would cover are refused as if it were unreadable."""
        self._rules[name] = AttributesRefused(reason)

    def refused_files(self) -> list[tuple[str, str]]:
        """``(file, reason)`` of every attribute file that was refused."""
        return [
            (name, str(rule))
            for name, rule in self._rules.items()
            if isinstance(rule, AttributesRefused)
        ]

    def inherited(self, document: str) -> dict[str, Any]:
        """The attributes the folder files and the sidecar give ``document`` (a path under the
        docs folder, without any ``#page`` or ``:line`` part).

        Raises:
            AttributesRefused: a covering file was refused, or a rule widens an outer one.
        """
        attributes: dict[str, Any] = {}
        for name in _covering(document):
            rule = self._rules.get(name)
            if isinstance(rule, AttributesRefused):
                raise AttributesRefused(
                    f"its attributes file {name} is refused ({rule}); not indexed"
                )
            if rule is not None:
                attributes = self.narrowed(attributes, rule, name)
        return attributes

    def narrowed(
        self, outer: Mapping[str, Any], inner: Mapping[str, Any], inner_name: str
    ) -> dict[str, Any]:
        """``inner`` over ``outer``; an access attribute only ever narrows (one rule, here).

        Raises:
            AttributesRefused: ``inner`` removes an access attribute ``outer`` sets, or keeps
                none of its values.
        """
        result = dict(outer)
        for key, value in inner.items():
            if key in self._access and not is_unattributed(outer.get(key)):
                result[key] = _intersection(key, outer[key], value, inner_name)
            else:
                result[key] = value
        return result


def _covering(document: str) -> list[str]:
    """The attribute files that apply to ``document``, outermost first."""
    path = PurePosixPath(document)
    folders = list(reversed(path.parents))  # ".", "a", "a/b"
    names = [FOLDER_ATTRIBUTES if str(f) == "." else f"{f}/{FOLDER_ATTRIBUTES}" for f in folders]
    return [*names, f"{document}{SIDECAR_SUFFIX}"]


def _intersection(key: str, outer: Any, inner: Any, inner_name: str) -> Any:
    if is_unattributed(inner):
        raise AttributesRefused(
            f"{inner_name} removes the access attribute {key!r} that an outer rule sets "
            "(that would make the document public); not indexed"
        )
    allowed = {_comparable(item) for item in _values(outer)}
    kept = [item for item in _values(inner) if _comparable(item) in allowed]
    if not kept:
        raise AttributesRefused(
            f"{inner_name} sets {key}: {inner!r}, none of the values an outer rule allows "
            f"({outer!r}); a rule can narrow access, never widen it; not indexed"
        )
    return kept[0] if len(kept) == 1 and not isinstance(inner, list | tuple) else kept


def _values(value: Any) -> list[Any]:
    return list(value) if isinstance(value, list | tuple) else [value]


def _comparable(value: Any) -> Any:
    if isinstance(value, str):
        return ("text", value.strip())
    if isinstance(value, bool):
        return ("bool", value)
    if isinstance(value, int | float):
        return ("number", float(value))
    return ("other", repr(value))
