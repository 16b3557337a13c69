"""Translate the filter IR into a boolean row mask over a FAISS index's chunks.

FAISS stores vectors only, so a filter cannot be pushed into it as a query language the way
LangChain's Qdrant or Chroma translators do. Instead the filter is evaluated over the columnar
metadata (``MetadataColumns``) into a numpy mask, True = the chunk may be returned, and the
dense search is restricted to that mask exactly (``rasa_context_retrieval.retrieve.dense``).

Semantics, for every comparator (``eq ne gt gte lt lte contain like in nin``):

* Strings compare trimmed and case-insensitively (casefold).
* A filter value is read every way it can be compared: ``"19.99"`` as text and as a number,
  ``"2024-03-01"`` as text and as a date, ``"true"`` as text and as a bool. A chunk matches when
  its value matches under one of the readings that applies to it: numbers (also numbers stored as
  strings) compare numerically, dates as dates, bools as bools, other strings as text.
* Dates: value dicts ``{"date": "YYYY-MM-DD", "type": "date"}`` and plain ISO dates compare by
  day; ``{"datetime": ..., "type": "datetime"}`` and ISO datetimes by second (UTC). A bare year
  such as ``2024`` compared with a date means 2024-01-01.
* ``gt gte lt lte`` order numbers and dates only; any other value matches nothing.
* On a list-valued attribute (``platform: [android, ios]``) ``eq``, ``contain``, ``in`` and
  ``like`` mean "some member matches", ``ne`` and ``nin`` "no member matches".
* ``contain`` on a plain string means substring; ``like`` takes SQL wildcards (``%`` any run,
  ``_`` one character) and matches the whole string, a pattern without wildcards is a substring.
* ``in``/``nin`` take a list (a single value counts as a one-item list).
* A chunk lacking the attribute (missing, None, "", []) matches no comparison on it, not even
  ``ne``/``nin``. ``ne`` and ``nin`` are the complement of ``eq``/``in`` among chunks having it.
* ``and``/``or`` combine masks; ``not(x)`` is the plain complement of ``x``, and with several
  arguments ``not(a, b)`` means "neither", i.e. ``not(or(a, b))``.
* An unknown attribute or a value that cannot be compared gives an all-False comparison mask,
  never an exception.
* ``HasAttribute(a)`` (``filters.absence``) is the rows having ``a`` (not missing).
  It only appears after the "absent means all" rewrite, which is defined there.
"""

from __future__ import annotations

import datetime as dt
import numbers
import re
from collections.abc import Callable, Mapping, Sequence
from dataclasses import dataclass
from typing import Any

import numpy as np
from langchain_core.structured_query import (
    Comparator,
    Comparison,
    Operation,
    Operator,
    StructuredQuery,
    Visitor,
)
from numpy.typing import NDArray

from rasa_context_retrieval.filters.absence import HasAttribute
from rasa_context_retrieval.filters.columns import (
    AttributeColumn,
    MetadataColumns,
    normalise_text,
    parse_instant,
    parse_number,
)

Mask = NDArray[np.bool_]

_ORDERINGS: dict[Comparator, Callable[[Any, Any], Any]] = {
    Comparator.GT: np.greater,
    Comparator.GTE: np.greater_equal,
    Comparator.LT: np.less,
    Comparator.LTE: np.less_equal,
}
_BOOLEAN_WORDS = {"true": True, "false": False}
_YEAR = re.compile(r"\d{4}")
_TEMPORAL_TYPES = ("date", "datetime")
_DATE_LENGTH = len("YYYY-MM-DD")


@dataclass(frozen=True)
class Operand:
    """One filter value, read every way a chunk's value could be compared with it."""

    text: str | None = None
    number: float | None = None
    instant: np.datetime64 | None = None
    has_time: bool = False
    boolean: bool | None = None

    @property
    def comparable(self) -> bool:
        return any(
            reading is not None for reading in (self.text, self.number, self.instant, self.boolean)
        )


def comparison_operands(comparator: Comparator, value: Any) -> list[Operand]:
    """The operands of a comparison: each item for in/nin, else the one value."""
    if comparator in (Comparator.IN, Comparator.NIN):
        return [read_operand(item) for item in _as_list(value)]
    return [read_operand(value)]


def read_operand(value: Any) -> Operand:
    """Every reading of a filter value (see module docstring); unknown types read as nothing."""
    if isinstance(value, bool):
        return Operand(boolean=value)
    if isinstance(value, numbers.Integral):
        return Operand(number=float(value), instant=_year_start(int(value)))
    if isinstance(value, numbers.Real):
        number = float(value)
        return Operand(number=number) if np.isfinite(number) else Operand()
    if isinstance(value, Mapping) and value.get("type") in _TEMPORAL_TYPES:
        text = value.get(str(value["type"]))
        return _temporal(text, has_time=value["type"] == "datetime")
    if isinstance(value, dt.date):
        return _temporal(value, has_time=isinstance(value, dt.datetime))
    if isinstance(value, str):
        return _read_string(value)
    return Operand()


def _read_string(value: str) -> Operand:
    text = normalise_text(value)
    number = parse_number(text)
    instant = _instant(text)
    if instant is None and number is not None and _YEAR.fullmatch(text):
        instant = _year_start(int(text))
    return Operand(
        text=text,
        number=number,
        instant=instant,
        has_time=instant is not None and len(text) > _DATE_LENGTH,
        boolean=_BOOLEAN_WORDS.get(text),
    )


def _temporal(value: Any, *, has_time: bool) -> Operand:
    instant = _instant(value)
    return Operand(instant=instant, has_time=has_time) if instant is not None else Operand()


def _instant(value: Any) -> np.datetime64 | None:
    instant = parse_instant(value)
    return None if instant is None else np.datetime64(instant, "s")


def _year_start(year: int) -> np.datetime64 | None:
    return np.datetime64(dt.datetime(year, 1, 1), "s") if 1 <= year <= 9999 else None


class FaissTranslator(Visitor):
    """Evaluate a filter over ``MetadataColumns`` into a bool mask, True = chunk allowed."""

    allowed_comparators = tuple(Comparator)
    allowed_operators = tuple(Operator)

    def __init__(self, columns: MetadataColumns) -> None:
        self.columns = columns

    def visit_operation(self, operation: Operation) -> Mask:
        self._validate_func(operation.operator)
        masks = [argument.accept(self) for argument in operation.arguments]
        if operation.operator == Operator.AND:
            return _all(masks, len(self.columns))
        either = _any(masks, len(self.columns))
        return either if operation.operator == Operator.OR else ~either

    def visit_comparison(self, comparison: Comparison) -> Mask:
        self._validate_func(comparison.comparator)
        column = self.columns.column(comparison.attribute)
        comparator, value = comparison.comparator, comparison.value
        operands = comparison_operands(comparator, value)
        if comparator in _ORDERINGS:
            return _ordered(column, operands[0], _ORDERINGS[comparator])
        if comparator in (Comparator.EQ, Comparator.IN):
            return _equal(column, operands)
        if comparator in (Comparator.NE, Comparator.NIN):
            if operands and not any(operand.comparable for operand in operands):
                return np.zeros(len(column.present), dtype=bool)
            return column.present & ~_equal(column, operands)
        if comparator == Comparator.CONTAIN:
            return _contain(column, operands[0])
        return _like(column, operands[0])

    def visit_has_attribute(self, has_attribute: HasAttribute) -> Mask:
        return self.columns.column(has_attribute.attribute).present.copy()

    def visit_structured_query(
        self, structured_query: StructuredQuery
    ) -> tuple[str, dict[str, Mask | None]]:
        if structured_query.filter is None:
            return structured_query.query, {"mask": None}
        return structured_query.query, {"mask": structured_query.filter.accept(self)}


def _as_list(value: Any) -> Sequence[Any]:
    return list(value) if isinstance(value, list | tuple | set | frozenset) else [value]


def _all(masks: list[Mask], n: int) -> Mask:
    return np.logical_and.reduce(masks) if masks else np.ones(n, dtype=bool)


def _any(masks: list[Mask], n: int) -> Mask:
    return np.logical_or.reduce(masks) if masks else np.zeros(n, dtype=bool)


def _equal(column: AttributeColumn, operands: Sequence[Operand]) -> Mask:
    selected = np.zeros(len(column.vocabulary), dtype=bool)
    for operand in operands:
        code = column.vocabulary_codes.get(operand.text) if operand.text is not None else None
        if code is not None:
            selected[code] = True
    mask = column.rows_with_text(selected)
    numbers_ = [operand.number for operand in operands if operand.number is not None]
    if numbers_:
        mask |= np.isin(column.numbers, numbers_)
    days = [op.instant for op in operands if op.instant is not None and not op.has_time]
    if days:
        mask |= np.isin(column.days, np.array(days).astype(column.days.dtype))
    instants = [op.instant for op in operands if op.instant is not None and op.has_time]
    if instants:
        mask |= np.isin(column.instants, np.array(instants))
    booleans = [int(op.boolean) for op in operands if op.boolean is not None]
    if booleans:
        mask |= np.isin(column.booleans, booleans)
    return mask


def _ordered(column: AttributeColumn, operand: Operand, order: Callable[[Any, Any], Any]) -> Mask:
    mask = np.zeros(len(column.present), dtype=bool)
    if operand.number is not None:
        mask |= order(column.numbers, operand.number)
    if operand.instant is not None:
        if operand.has_time:
            mask |= order(column.instants, operand.instant)
        else:
            mask |= order(column.days, operand.instant.astype(column.days.dtype))
    return mask


def _contain(column: AttributeColumn, operand: Operand) -> Mask:
    if operand.text is None:
        return _equal(column, [operand])
    substring = _containing(column.vocabulary, operand.text)
    exact = np.zeros(len(column.vocabulary), dtype=bool)
    code = column.vocabulary_codes.get(operand.text)
    if code is not None:
        exact[code] = True
    return column.rows_with_text(substring, lists=False) | column.rows_with_text(
        exact, scalars=False
    )


def _like(column: AttributeColumn, operand: Operand) -> Mask:
    if operand.text is None:
        return np.zeros(len(column.present), dtype=bool)
    return column.rows_with_text(_like_vocabulary(column.vocabulary, operand.text))


def _containing(vocabulary: NDArray[Any], needle: str) -> Mask:
    """Vocabulary entries containing ``needle``.

    numpy's fixed-width strings drop trailing NUL characters, so a needle with a NUL would
    become "" there and match everything; such (hostile) needles are checked in Python.
    """
    if "\0" in needle:
        return np.fromiter((needle in str(text) for text in vocabulary), bool, len(vocabulary))
    return np.asarray(np.strings.find(vocabulary, needle) >= 0)


def _like_vocabulary(vocabulary: NDArray[Any], pattern: str) -> Mask:
    """Which vocabulary entries match an SQL LIKE pattern (already casefolded)."""
    if "%" not in pattern and "_" not in pattern:
        return _containing(vocabulary, pattern)
    inner = pattern.strip("%")
    if "%" not in inner and "_" not in inner and "\0" not in inner:
        if pattern.startswith("%") and pattern.endswith("%"):
            return _containing(vocabulary, inner)
        if pattern.endswith("%"):
            return np.asarray(np.strings.startswith(vocabulary, inner))
        return np.asarray(np.strings.endswith(vocabulary, inner))
    # numpy has no vectorised regex; this loops over distinct values, not over rows.
    regex = re.compile(
        "".join(".*" if c == "%" else "." if c == "_" else re.escape(c) for c in pattern),
        re.DOTALL,
    )
    return np.fromiter(
        (regex.fullmatch(text) is not None for text in vocabulary),
        dtype=bool,
        count=len(vocabulary),
    )
