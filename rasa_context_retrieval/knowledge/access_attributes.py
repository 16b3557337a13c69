"""Attributes that decide access, written where they would not be read: refuse the document.

Under ``access_filters: {plan: plan}`` a document's ``plan`` attribute decides who may read it,
and a document without one is public (unless ``unattributed_documents: private``). So an author
who writes ``Plan: premium``, ``plans: [premium]``, or a JSON line with ``"plan"`` beside its
``"metadata"`` instead of inside it, meant a restricted document and would get a public one.
Likewise front matter that is not at the top of the file (after other text) is read as text,
and ``plan: premium`` would be indexed as words of a public document. Each of these is refused
with a reason, by name, rather than guessed at: a near miss might be meant for another attribute.

The access attributes are handed down as plain names (the loader knows nothing of the
configuration); with none, nothing here applies.
"""

from __future__ import annotations

import re
from collections.abc import Collection, Iterable
from typing import Any

_PLURAL_ENDINGS = ("es", "s")
_FRONT_MATTER_DELIMITER = re.compile(r"^\s*(-{3,}|\+{3,})")
_ASSIGNED_KEY = re.compile(r"""^\s*["']?([^\s"':=#]+)["']?\s*[:=]""")


def is_unattributed(value: Any) -> bool:
    """Whether an access attribute's value is no value at all (none, blank text, an empty
    list): a document holding only such values is unattributed, public by default, so an
    attribute file may never set one."""
    if value is None:
        return True
    if isinstance(value, str):
        return not value.strip()
    return isinstance(value, list | tuple) and len(value) == 0


def _spellings(name: str) -> set[str]:
    """A name case-folded, with and without a plural ending."""
    folded = name.strip().casefold()
    forms = {folded, folded + "s", folded + "es"}
    forms.update(folded.removesuffix(ending) for ending in _PLURAL_ENDINGS)
    return {form for form in forms if form}


def misspelled_access_keys(
    keys: Iterable[object], access_attributes: Collection[str]
) -> list[tuple[str, str]]:
    """``(key, attribute)`` for every key that is not an access attribute but differs from one
    only by case, surrounding spaces or a plural ending (``Plan``, ``plans``, ``PLANS``)."""
    misses = []
    for key in keys:
        text = str(key)
        if text in access_attributes:
            continue
        for attribute in access_attributes:
            if text.strip().casefold() in _spellings(attribute):
                misses.append((text, attribute))
    return misses


def stray_access_line(
    body: str, access_attributes: Collection[str], *, headless: bool
) -> tuple[int, str] | None:
    """``(line, key)`` of the first line of ``body`` that assigns an access attribute (or a near
    miss of one) where front matter might have been meant: after a ``---`` or ``+++`` line, or
    on the first line of a document without front matter (``headless``)."""
    if not access_attributes:
        return None
    in_block = False
    for number, line in enumerate(body.splitlines(), start=1):
        if _FRONT_MATTER_DELIMITER.match(line):
            in_block = True
            continue
        assigned = _ASSIGNED_KEY.match(line) if in_block or (number == 1 and headless) else None
        if assigned is not None:
            key = assigned.group(1)
            if key in access_attributes or misspelled_access_keys([key], access_attributes):
                return number, key
    return None
