"""The normalised copy of a chunk's metadata that Milvus filters on.

Milvus evaluates filters on its servers, where our comparison rules (casefolded strings, numbers
written as text, dates as dates, list membership) cannot run. So each chunk is stored with a
second JSON field, ``filterable``, holding every attribute already normalised the way
``rasa_context_retrieval.filters.columns`` reads it for FAISS, one object per attribute::

    filterable["plan"] = {"s": "premium"}
    filterable["price"] = {"s": "19.99", "n": 19.99}
    filterable["account"] = {"n": 9007199254740992.0, "r": 1}      # 2**53 + 1
    filterable["updated"] = {"s": "2024-03-01", "d": 19783, "t": 1709251200}
    filterable["platform"] = {"l": ["android", "ios"]}
    filterable["public"] = {"b": true}

An attribute that the FAISS columns count as missing (``None``, empty string, empty list, other
types) has no entry. A number is stored as its nearest float ``n`` and, when that float stands for
several integers (2**53 and beyond), the exact remainder ``r`` (``filters.values.number_parts``);
``r`` is left out when it is 0, so every row below 2**53 looks as it did before. So
``exists filterable["x"]`` is exactly "the chunk has the attribute". Values are read by
``filters.values``, as for the FAISS columns, so both backends read them alike.
"""

from __future__ import annotations

import datetime as dt
from collections.abc import Collection, Mapping
from typing import Any

from rasa_context_retrieval.filters.values import (
    Number,
    epoch_days,
    epoch_seconds,
    normalise_text,
    number_parts,
    read_string,
    stored_value,
)

FILTERABLE_FIELD = "filterable"
"""Name of the JSON field holding the normal form (of the attributes without typed fields)."""
OVERFLOW_FIELD = "overflow"
"""Name of the JSON field holding values that typed fields cannot hold (``milvus.layout``)."""
CHUNK_ID_FIELD = "chunk_id"
"""Primary key of the chunk collection (the store writes it, expressions may test it)."""

TEXT = "s"
"""Scalar string, trimmed and casefolded."""
NUMBER = "n"
"""Float, from a number or a numeric string: the number's nearest float."""
REMAINDER = "r"
"""Integer, what a number exceeds its float ``n`` by; absent when 0."""
DAYS = "d"
"""Days since 1970-01-01 (UTC), from a date, datetime or ISO string."""
INSTANT = "t"
"""Seconds since 1970-01-01T00:00:00 UTC, from the same values as ``DAYS``."""
BOOLEAN = "b"
"""A bool, or the strings ``"true"``/``"false"``."""
MEMBERS = "l"
"""List members, trimmed and casefolded strings."""


def normal_form(
    metadata: Mapping[str, Any], *, typed: Collection[str] = ()
) -> dict[str, dict[str, Any]]:
    """The ``filterable`` JSON of one chunk: attribute -> normalised facets (see module doc),
    leaving out the ``typed`` attributes, which the collection holds in typed fields."""
    form: dict[str, dict[str, Any]] = {}
    for attribute, value in metadata.items():
        if attribute in typed:
            continue
        facets = attribute_facets(value)
        if facets and attribute:  # Milvus cannot address an empty JSON key.
            form[str(attribute)] = facets
    return form


def attribute_facets(value: Any) -> dict[str, Any]:
    """The normalised facets of one metadata value; empty when it counts as missing."""
    stored = stored_value(value)
    if stored is None:
        return {}
    if stored.string is not None:
        return _string_facets(stored.string)
    if stored.boolean is not None:
        return {BOOLEAN: stored.boolean}
    if stored.number is not None:
        return _number_facets(stored.number)
    if stored.instant is not None:
        return _temporal_facets(stored.instant)
    return {MEMBERS: sorted({normalise_text(member) for member in stored.members})}


def _string_facets(raw: str) -> dict[str, Any]:
    reading = read_string(raw)
    facets: dict[str, Any] = {TEXT: reading.text}
    if reading.number is not None:
        facets.update(_number_facets(reading.number))
    if reading.instant is not None:
        facets.update(_temporal_facets(reading.instant))
    if reading.boolean is not None:
        facets[BOOLEAN] = reading.boolean
    return facets


def _number_facets(number: Number) -> dict[str, Any]:
    rounded, remainder = number_parts(number)
    return {NUMBER: rounded, REMAINDER: remainder} if remainder else {NUMBER: rounded}


def _temporal_facets(instant: dt.datetime) -> dict[str, Any]:
    return {DAYS: epoch_days(instant), INSTANT: epoch_seconds(instant)}
