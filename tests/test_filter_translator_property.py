"""The vectorised translator agrees with a plain row-by-row reading of the documented semantics.

The reference below evaluates one chunk at a time with ordinary Python comparisons, following the
rules in ``filters/faiss_translator.py``'s docstring; hypothesis feeds both random mixed
metadata and random filter trees.
"""

from __future__ import annotations

import datetime as dt
import operator
import re
from collections.abc import Callable
from dataclasses import dataclass
from typing import Any

import pytest
from hypothesis import given, settings
from hypothesis import strategies as st
from langchain_core.structured_query import (
    Comparator,
    Comparison,
    FilterDirective,
    Operation,
    Operator,
)

from rasa_context_retrieval.filters.absence import include_documents_lacking
from rasa_context_retrieval.filters.columns import MetadataColumns
from rasa_context_retrieval.filters.faiss_translator import FaissTranslator

pytestmark = pytest.mark.slow  # thousands of random filters against a reference

ATTRIBUTES = ["plan", "platform", "price", "updated"]
WORDS = ["Premium", " premium ", "basic", "EU", "a_b", "50%", "android", "iOS", "true", "False"]
NUMERIC_TEXTS = ["19.99", "5", "010", "-1.5", "2024"]
DATE_TEXTS = ["2024-03-01", "2023-12-31", "2024-03-01T10:00:00", "2024-03-01T12:00:00+02:00"]
NUMBERS = [5, 19.99, 2024, 0, -1.5, 10]
DAYS = st.dates(min_value=dt.date(2023, 12, 30), max_value=dt.date(2024, 3, 2))
PATTERNS = ["%a%", "prem%", "%s", "_u", "a_b", "50%", "%", "%mi_m%"]

texts = st.sampled_from(WORDS + NUMERIC_TEXTS + DATE_TEXTS + ["", "  "])
metadata_values = st.one_of(
    st.none(),
    texts,
    st.sampled_from(NUMBERS),
    st.booleans(),
    DAYS,
    st.lists(st.sampled_from(WORDS + [""]), max_size=3),
)
metadatas = st.lists(
    st.dictionaries(st.sampled_from(ATTRIBUTES), metadata_values), min_size=1, max_size=12
)
filter_scalars = st.one_of(
    texts,
    st.sampled_from(PATTERNS),
    st.sampled_from(NUMBERS),
    st.booleans(),
    DAYS.map(lambda day: {"date": day.isoformat(), "type": "date"}),
    st.just({"datetime": "2024-03-01T10:00:00", "type": "datetime"}),
    st.just({"odd": 1}),
)
comparisons = st.builds(
    Comparison,
    comparator=st.sampled_from(list(Comparator)),
    attribute=st.sampled_from(ATTRIBUTES + ["unknown"]),
    value=st.one_of(filter_scalars, st.lists(filter_scalars, max_size=3)),
)
filters = st.recursive(
    comparisons,
    lambda children: st.builds(
        Operation,
        operator=st.sampled_from(list(Operator)),
        arguments=st.lists(children, max_size=3),
    ),
    max_leaves=8,
)


@dataclass(frozen=True)
class Reading:
    """One chunk's value, or one filter value, read as text, number, instant and bool."""

    texts: tuple[str, ...] = ()
    is_list: bool = False
    number: float | None = None
    instant: dt.datetime | None = None
    has_time: bool = False
    boolean: bool | None = None


def iso(text: str) -> dt.datetime | None:
    if not re.match(r"\d{4}-\d{2}-\d{2}", text):
        return None
    try:
        instant = dt.datetime.fromisoformat(text.upper())
    except ValueError:
        return None
    return instant.astimezone(dt.UTC).replace(tzinfo=None) if instant.tzinfo else instant


def read_text(raw: str, *, year_is_date: bool = False) -> Reading:
    text = raw.strip().casefold()
    is_number = re.fullmatch(r"-?\d+(\.\d+)?", text) is not None
    instant = iso(text)
    if instant is None and year_is_date and re.fullmatch(r"\d{4}", text):
        instant = dt.datetime(int(text), 1, 1)
    return Reading(
        texts=(text,),
        number=float(text) if is_number else None,
        instant=instant,
        has_time=instant is not None and len(text) > 10,
        boolean={"true": True, "false": False}.get(text),
    )


def read_chunk_value(value: Any) -> Reading | None:
    """None when the chunk lacks the attribute."""
    if isinstance(value, bool):
        return Reading(boolean=value)
    if isinstance(value, int | float):
        return Reading(number=float(value))
    if isinstance(value, dt.date):
        return Reading(instant=dt.datetime(value.year, value.month, value.day))
    if isinstance(value, str) and value.strip():
        return read_text(value)
    if isinstance(value, list):
        members = tuple(m.strip().casefold() for m in value if m.strip())
        return Reading(texts=members, is_list=True) if members else None
    return None


def read_filter_value(value: Any) -> Reading | None:
    """None when the value cannot be compared at all."""
    if isinstance(value, bool):
        return Reading(boolean=value)
    if isinstance(value, int):
        return Reading(number=float(value), instant=dt.datetime(value, 1, 1) if value > 0 else None)
    if isinstance(value, float):
        return Reading(number=value)
    if isinstance(value, dict) and value.get("type") in ("date", "datetime"):
        instant = iso(value[value["type"]])
        return Reading(instant=instant, has_time=value["type"] == "datetime")
    if isinstance(value, str):
        return read_text(value, year_is_date=True)
    return None


def same_time(chunk: Reading, wanted: Reading, compare: Callable[[Any, Any], bool]) -> bool:
    if chunk.instant is None or wanted.instant is None:
        return False
    if wanted.has_time:
        return compare(chunk.instant, wanted.instant)
    return compare(chunk.instant.date(), wanted.instant.date())


def equal(chunk: Reading, wanted: Reading) -> bool:
    return (
        (bool(wanted.texts) and wanted.texts[0] in chunk.texts)
        or (wanted.number is not None and chunk.number == wanted.number)
        or same_time(chunk, wanted, operator.eq)
        or (wanted.boolean is not None and chunk.boolean == wanted.boolean)
    )


def ordered(chunk: Reading, wanted: Reading, compare: Callable[[Any, Any], bool]) -> bool:
    numeric = chunk.number is not None and wanted.number is not None
    return (numeric and compare(chunk.number, wanted.number)) or same_time(chunk, wanted, compare)


def like(chunk: Reading, pattern: str) -> bool:
    if "%" not in pattern and "_" not in pattern:
        return any(pattern in text for text in chunk.texts)
    regex = "".join(".*" if c == "%" else "." if c == "_" else re.escape(c) for c in pattern)
    return any(re.fullmatch(regex, text, re.DOTALL) for text in chunk.texts)


ORDERINGS = {
    Comparator.GT: operator.gt,
    Comparator.GTE: operator.ge,
    Comparator.LT: operator.lt,
    Comparator.LTE: operator.le,
}


def compare(comparison: Comparison, metadata: dict[str, Any]) -> bool:
    chunk = read_chunk_value(metadata.get(comparison.attribute))
    if chunk is None:
        return False
    comparator, value = comparison.comparator, comparison.value
    if comparator in (Comparator.IN, Comparator.NIN):
        items = value if isinstance(value, list) else [value]
        wanted = [read_filter_value(item) for item in items]
        found = any(w is not None and equal(chunk, w) for w in wanted)
        if comparator == Comparator.IN:
            return found
        return (not items or any(w is not None for w in wanted)) and not found
    one = read_filter_value(value)
    if one is None:
        return False
    if comparator in ORDERINGS:
        return ordered(chunk, one, ORDERINGS[comparator])
    if comparator == Comparator.EQ:
        return equal(chunk, one)
    if comparator == Comparator.NE:
        return not equal(chunk, one)
    if comparator == Comparator.CONTAIN:
        if not one.texts:
            return equal(chunk, one)
        if chunk.is_list:
            return one.texts[0] in chunk.texts
        return any(one.texts[0] in text for text in chunk.texts)
    return bool(one.texts) and like(chunk, one.texts[0])


def reference(directive: FilterDirective, metadata: dict[str, Any]) -> bool:
    if isinstance(directive, Comparison):
        return compare(directive, metadata)
    assert isinstance(directive, Operation)
    results = [reference(argument, metadata) for argument in directive.arguments]
    if directive.operator == Operator.AND:
        return all(results)
    return any(results) if directive.operator == Operator.OR else not any(results)


@settings(max_examples=400, deadline=None)
@given(
    st.lists(st.dictionaries(st.sampled_from(ATTRIBUTES), metadata_values), max_size=12),
    comparisons,
)
def test_each_comparison_mask_equals_row_by_row_reference(
    rows: list[dict[str, Any]], comparison: Comparison
) -> None:
    mask = comparison.accept(FaissTranslator(MetadataColumns(rows)))

    assert mask.tolist() == [reference(comparison, metadata) for metadata in rows]


@settings(max_examples=150, deadline=None)
@given(metadatas, filters)
def test_filter_tree_mask_equals_row_by_row_reference(
    rows: list[dict[str, Any]], directive: FilterDirective
) -> None:
    mask = directive.accept(FaissTranslator(MetadataColumns(rows)))

    assert mask.tolist() == [reference(directive, metadata) for metadata in rows]


def reference_absent_means_all(
    directive: FilterDirective,
    metadata: dict[str, Any],
    flagged: set[str],
    *,
    negated: bool = False,
) -> bool:
    """``reference`` where a chunk lacking a flagged attribute is never excluded by a condition
    on it: such a comparison is true, or false under an odd number of ``not`` (which the ``not``
    then turns into true)."""
    if isinstance(directive, Comparison):
        lacking = read_chunk_value(metadata.get(directive.attribute)) is None
        if directive.attribute in flagged and lacking:
            return not negated
        return compare(directive, metadata)
    assert isinstance(directive, Operation)
    inner = not negated if directive.operator == Operator.NOT else negated
    results = [
        reference_absent_means_all(argument, metadata, flagged, negated=inner)
        for argument in directive.arguments
    ]
    if directive.operator == Operator.AND:
        return all(results)
    return any(results) if directive.operator == Operator.OR else not any(results)


flagged_attributes = st.sets(st.sampled_from(ATTRIBUTES + ["unknown"]))


@settings(max_examples=150, deadline=None)
@given(metadatas, filters, flagged_attributes)
def test_absent_means_all_mask_equals_row_by_row_reference(
    rows: list[dict[str, Any]], directive: FilterDirective, flagged: set[str]
) -> None:
    rewritten = include_documents_lacking(directive, flagged)
    assert rewritten is not None

    mask = rewritten.accept(FaissTranslator(MetadataColumns(rows)))

    assert mask.tolist() == [
        reference_absent_means_all(directive, metadata, flagged) for metadata in rows
    ]


@settings(max_examples=150, deadline=None)
@given(metadatas, filters, flagged_attributes)
def test_absent_means_all_only_adds_chunks_lacking_a_flagged_attribute(
    rows: list[dict[str, Any]], directive: FilterDirective, flagged: set[str]
) -> None:
    columns = MetadataColumns(rows)
    plain = directive.accept(FaissTranslator(columns))
    rewritten = include_documents_lacking(directive, flagged)
    assert rewritten is not None
    widened = rewritten.accept(FaissTranslator(columns))

    lacks_one = [
        any(read_chunk_value(metadata.get(name)) is None for name in flagged) for metadata in rows
    ]
    for row, (before, after) in enumerate(zip(plain.tolist(), widened.tolist(), strict=True)):
        assert after or not before, f"row {row} was allowed and is not any more"
        assert after == before or lacks_one[row], f"row {row} has every flagged attribute"
