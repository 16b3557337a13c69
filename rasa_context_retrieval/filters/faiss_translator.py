"""Translate the filter IR into a boolean row mask over a FAISS index's chunks.

FAISS stores vectors only, so a filter cannot be pushed into it as a query language the way
LangChain's Qdrant or Chroma translators do. Instead the filter is evaluated over the columnar
metadata (``MetadataColumns``) into a numpy mask, True = the chunk may be returned, and the
dense search is restricted to that mask exactly (``rasa_context_retrieval.faiss.dense``).

What a filter means is defined in ``filters.semantics`` (shared with the Milvus backend); this
module only spells its primitive selections as masks over the typed columns.
"""

from __future__ import annotations

from collections.abc import Callable, Sequence
from typing import Any

import numpy as np
from langchain_core.structured_query import Comparator, StructuredQuery
from numpy.typing import NDArray

from rasa_context_retrieval.filters.columns import AttributeColumn, MetadataColumns
from rasa_context_retrieval.filters.semantics import Facet, FilterSemantics, Mask
from rasa_context_retrieval.filters.values import FLOAT_EXACT_LIMIT, Number, number_parts

_ORDERINGS: dict[Comparator, Callable[[Any, Any], Any]] = {
    Comparator.GT: np.greater,
    Comparator.GTE: np.greater_equal,
    Comparator.LT: np.less,
    Comparator.LTE: np.less_equal,
}
_STRICT: dict[Comparator, Callable[[Any, Any], Any]] = {
    Comparator.GT: np.greater,
    Comparator.GTE: np.greater,
    Comparator.LT: np.less,
    Comparator.LTE: np.less,
}
_DAY = "datetime64[D]"
_INSTANT = "datetime64[s]"


class ColumnSelections:
    """``filters.semantics.Selections`` as bool masks over ``MetadataColumns``."""

    def __init__(self, columns: MetadataColumns) -> None:
        self.columns = columns
        self._read: dict[str, AttributeColumn] = {}

    def nothing(self) -> Mask:
        return np.zeros(len(self.columns), dtype=bool)

    def everything(self) -> Mask:
        return np.ones(len(self.columns), dtype=bool)

    def all_of(self, parts: Sequence[Mask]) -> Mask:
        return np.logical_and.reduce(parts) if len(parts) > 1 else parts[0].copy()

    def any_of(self, parts: Sequence[Mask]) -> Mask:
        return np.logical_or.reduce(parts) if len(parts) > 1 else parts[0].copy()

    def complement(self, part: Mask) -> Mask:
        return ~part

    def having(self, attribute: str) -> Mask:
        return self._column(attribute).present.copy()

    def texts(self, attribute: str, texts: Sequence[str], *, scalars: bool, members: bool) -> Mask:
        column = self._column(attribute)
        selected = np.zeros(len(column.vocabulary), dtype=bool)
        for text in texts:
            code = column.vocabulary_codes.get(text)
            if code is not None:
                selected[code] = True
        if not selected.any():
            return self.nothing()
        return column.rows_with_text(selected, scalars=scalars, lists=members)

    def facet_in(self, attribute: str, facet: Facet, values: Sequence[Any]) -> Mask:
        if facet is Facet.NUMBER:
            return _numbers_in(self._column(attribute), values)
        readings, wanted = self._facet(attribute, facet, values)
        return np.isin(readings, wanted)

    def facet_ordered(
        self, attribute: str, facet: Facet, comparator: Comparator, bound: Any
    ) -> Mask:
        if facet is Facet.NUMBER:
            return _numbers_ordered(self._column(attribute), comparator, bound)
        readings, wanted = self._facet(attribute, facet, [bound])
        return np.asarray(_ORDERINGS[comparator](readings, wanted[0]))

    def vocabulary(self, attribute: str) -> NDArray[Any]:
        return self._column(attribute).vocabulary

    def _column(self, attribute: str) -> AttributeColumn:
        # Cached per filter: an unknown attribute's (empty) column is built on every request.
        column = self._read.get(attribute)
        if column is None:
            column = self._read[attribute] = self.columns.column(attribute)
        return column

    def _facet(
        self, attribute: str, facet: Facet, values: Sequence[Any]
    ) -> tuple[NDArray[Any], NDArray[Any]]:
        column = self._column(attribute)
        if facet is Facet.DAY:
            return column.days, np.asarray(values, dtype=np.int64).astype(_DAY)
        if facet is Facet.INSTANT:
            return column.instants, np.asarray(values, dtype=np.int64).astype(_INSTANT)
        return column.booleans, np.asarray([int(value) for value in values], dtype=np.int8)


def _numbers_in(column: AttributeColumn, values: Sequence[Number]) -> Mask:
    """Rows whose number is exactly one of ``values``: equal floats first (vectorised), then the
    few rows whose float could stand for several numbers (2**53 and beyond) by their exact parts."""
    wanted = {number_parts(value) for value in values}
    mask = np.isin(column.numbers, [rounded for rounded, _ in wanted])
    unsure = mask & ((column.remainders != 0) | (np.abs(column.numbers) >= FLOAT_EXACT_LIMIT))
    for row in np.flatnonzero(unsure):
        mask[row] = (float(column.numbers[row]), int(column.remainders[row])) in wanted
    return mask


def _numbers_ordered(column: AttributeColumn, comparator: Comparator, bound: Number) -> Mask:
    """Rows whose number orders against ``bound`` as ``comparator`` says, exactly: by float,
    and on equal floats by the remainder (``filters.values.number_parts``)."""
    rounded, remainder = number_parts(bound)
    beyond = _STRICT[comparator](column.numbers, rounded)
    tied = (column.numbers == rounded) & _ORDERINGS[comparator](column.remainders, remainder)
    return np.asarray(beyond | tied)


class FaissTranslator(FilterSemantics[Mask]):
    """Evaluate a filter over ``MetadataColumns`` into a bool mask, True = chunk allowed."""

    def __init__(self, columns: MetadataColumns) -> None:
        super().__init__(ColumnSelections(columns))
        self.columns = columns

    def visit_structured_query(
        self, structured_query: StructuredQuery
    ) -> tuple[str, dict[str, Mask | None]]:
        if structured_query.filter is None:
            return structured_query.query, {"mask": None}
        return structured_query.query, {"mask": structured_query.filter.accept(self)}
