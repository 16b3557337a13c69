"""The normalised copy of a chunk's metadata that Milvus filters on.

Milvus evaluates filters on its servers, where our comparison rules (casefolded strings, numbers
written as text, dates as dates, list membership) cannot run. So each chunk is stored with a
second JSON field, ``filterable``, holding every attribute already normalised the way
``rasa_context_retrieval.filters.columns`` reads it for FAISS, one object per attribute::

    filterable["plan"] = {"s": "premium"}
    filterable["price"] = {"s": "19.99", "n": 19.99}
    filterable["updated"] = {"s": "2024-03-01", "d": 19783, "t": 1709251200}
    filterable["platform"] = {"l": ["android", "ios"]}
    filterable["public"] = {"b": true}

An attribute that the FAISS columns count as missing (``None``, empty string, empty list, other
types) has no entry, so ``exists filterable["x"]`` is exactly "the chunk has the attribute". The
parsing helpers are imported from the FAISS columns so that both backends read values alike.
"""

from __future__ import annotations

import datetime as dt
import numbers
from collections.abc import Mapping
from typing import Any

from rasa_context_retrieval.filters.columns import normalise_text, parse_instant, parse_number

FILTERABLE_FIELD = "filterable"
"""Name of the JSON field holding the normal form."""
CHUNK_ID_FIELD = "chunk_id"
"""Primary key of the chunk collection (the store writes it, expressions may test it)."""

TEXT = "s"
"""Scalar string, trimmed and casefolded."""
NUMBER = "n"
"""Float, from a number or a numeric string."""
DAYS = "d"
"""Days since 1970-01-01 (UTC), from a date, datetime or ISO string."""
INSTANT = "t"
"""Seconds since 1970-01-01T00:00:00 UTC, from the same values as ``DAYS``."""
BOOLEAN = "b"
"""A bool, or the strings ``"true"``/``"false"``."""
MEMBERS = "l"
"""List members, trimmed and casefolded strings."""

_EPOCH = dt.datetime(1970, 1, 1)
_BOOLEAN_WORDS = {"true": True, "false": False}


def normal_form(metadata: Mapping[str, Any]) -> dict[str, dict[str, Any]]:
    """The ``filterable`` JSON of one chunk: attribute -> normalised facets (see module doc)."""
    form: dict[str, dict[str, Any]] = {}
    for attribute, value in metadata.items():
        facets = _facets(value)
        if facets and attribute:  # Milvus cannot address an empty JSON key.
            form[str(attribute)] = facets
    return form


def days_and_seconds(instant: dt.datetime) -> tuple[int, int]:
    """Whole days and whole seconds since the epoch of a naive UTC datetime."""
    delta = instant - _EPOCH
    return delta.days, delta.days * 86_400 + delta.seconds


def _facets(value: Any) -> dict[str, Any]:
    if value is None:
        return {}
    if isinstance(value, bool):
        return {BOOLEAN: value}
    if isinstance(value, numbers.Real):
        number = float(value)
        return {NUMBER: number} if number == number and abs(number) != float("inf") else {}
    if isinstance(value, dt.date):
        return _temporal_facets(value)
    if isinstance(value, str):
        return _string_facets(value)
    if isinstance(value, list | tuple | set | frozenset):
        members = _members(value)
        return {MEMBERS: members} if members else {}
    return {}


def _string_facets(value: str) -> dict[str, Any]:
    text = normalise_text(value)
    if not text:
        return {}
    facets: dict[str, Any] = {TEXT: text}
    number = parse_number(text)
    if number is not None:
        facets[NUMBER] = number
    facets.update(_temporal_facets(value))
    if text in _BOOLEAN_WORDS:
        facets[BOOLEAN] = _BOOLEAN_WORDS[text]
    return facets


def _temporal_facets(value: Any) -> dict[str, Any]:
    instant = parse_instant(value)
    if instant is None:
        return {}
    days, seconds = days_and_seconds(instant)
    return {DAYS: days, INSTANT: seconds}


def _members(values: Any) -> list[str]:
    members: list[str] = []
    for member in values:
        if isinstance(member, bool):
            member = "true" if member else "false"
        if isinstance(member, str | numbers.Real) and str(member).strip():
            members.append(normalise_text(str(member)))
    return sorted(set(members))
