"""Slot filters: the user's scope from Rasa slots, as a metadata filter that is never loosened.

A slot such as ``plan: premium`` or ``region: [eu, uk]`` is the scope the user stated, so answers
stay on their plan and region. It is personalisation, not access control: the user fills slots by
what they say, so a slot grants nothing (entitlements come from ``access_filters``, see
:mod:`rasa_context_retrieval.access`). The scope is still kept strictly: the filter built here is
ANDed with any filter read from the user's words and is never relaxed, dropped or widened to find
more results. That is why a value this module cannot express raises instead of being skipped.
"""

from __future__ import annotations

import numbers
from collections.abc import Mapping
from typing import Any

from langchain_core.structured_query import Comparator, Comparison, FilterDirective

from rasa_context_retrieval.filters.bounds import check_filter
from rasa_context_retrieval.filters.syntax import conjoin

_SCALAR_TYPES = (str, numbers.Real)


def slot_filter(
    slots: Mapping[str, Any], slot_to_attribute: Mapping[str, str]
) -> FilterDirective | None:
    """The AND of one restriction per mapped slot that has a value, or ``None``.

    A scalar restricts with ``eq(attribute, value)``; a list means any of its items
    (``in``). ``None``, ``""`` and ``[]`` add nothing (the slot is not filled); bools and numbers
    keep their type. Slots missing from ``slot_to_attribute`` are ignored.

    Raises:
        ValueError: if a mapped slot holds a value that is neither a scalar nor a list of scalars.
        FilterTooLarge: (a ValueError) if the slots list more values than a filter may hold;
            dropping some would widen the scope, so the search fails instead.
    """
    restrictions = [
        _restriction(slot, attribute, slots.get(slot))
        for slot, attribute in slot_to_attribute.items()
    ]
    directive = conjoin(*restrictions)
    check_filter(directive)
    return directive


def _restriction(slot: str, attribute: str, value: Any) -> FilterDirective | None:
    if isinstance(value, list | tuple | set | frozenset):
        items = [item for item in value if not _is_unset(item)]
        for item in items:
            _check_scalar(slot, item)
        if not items:
            return None
        return Comparison(comparator=Comparator.IN, attribute=attribute, value=items)
    if _is_unset(value):
        return None
    _check_scalar(slot, value)
    return Comparison(comparator=Comparator.EQ, attribute=attribute, value=value)


def _is_unset(value: Any) -> bool:
    return value is None or (isinstance(value, str) and not value.strip())


def _check_scalar(slot: str, value: Any) -> None:
    if not isinstance(value, _SCALAR_TYPES):
        raise ValueError(
            f"Slot {slot!r} holds {value!r} ({type(value).__name__}), which cannot restrict "
            "documents: map only slots holding text, numbers, bools or lists of them."
        )
