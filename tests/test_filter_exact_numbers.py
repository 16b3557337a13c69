"""Whole numbers in filters compare exactly: an account id never selects its neighbour.

Integers above 2**53 (64-bit ids from a database) that differ share a float, so a filter that
compared numbers as floats selected neighbouring ids. Every comparator is checked here on the
FAISS mask and on the result check every result passes before it leaves the plugin, against a
plain Python reading of the rule (``1 == 1.0``, ``"1"`` is the number 1, a bool is not a number).
``tests/test_milvus_exact_numbers.py`` runs the same cases on a real Milvus server.
"""

from __future__ import annotations

from typing import Any

import pytest
from langchain_core.structured_query import Comparator, Comparison

from rasa_context_retrieval.filters.columns import MetadataColumns
from rasa_context_retrieval.filters.faiss_translator import FaissTranslator
from rasa_context_retrieval.filters.schema import MetadataField
from rasa_context_retrieval.filters.slot_filters import slot_filter
from rasa_context_retrieval.knowledge.models import Chunk
from rasa_context_retrieval.llm_query.constructor import _checked_value
from rasa_context_retrieval.retrieve.conformance import conforming

IDS: list[Any] = [
    2**53 + 1,
    2**53 + 2,
    2**63 - 1,
    -(2**63),
    1,
    1.0,
    "1",
    True,
    float(2**53),
    str(2**53 + 1),
    2**64 - 1,
    2**70,
]
"""What documents hold as ``account``: neighbouring ids above 2**53, the ends of int64, the
number one spelled four ways, 2**53 as a float, an id written as text, the largest uint64, and
an integer beyond the 2**64 bound (compared by its digits only)."""

CHUNKS = [Chunk(f"c{row}", f"c{row}", {"account": value}) for row, value in enumerate(IDS)]

OPERANDS: list[Any] = [
    2**53 + 1,
    2**53 + 2,
    2**53,
    2**63 - 1,
    2**63 - 2,
    -(2**63),
    -(2**63) + 1,
    1,
    1.0,
    2**64 - 1,
    float(2**53),
    2**70,
    2**70 + 1,
]
LISTS: list[list[Any]] = [[2**53 + 1, 2**63 - 1], [2**53 + 2, -(2**63)], [1, 2**53]]
ORDERINGS = {
    Comparator.GT: lambda a, b: a > b,
    Comparator.GTE: lambda a, b: a >= b,
    Comparator.LT: lambda a, b: a < b,
    Comparator.LTE: lambda a, b: a <= b,
}


BOUND = 2**64
"""Integers this large or larger are not compared as numbers, only by their digits."""


def held_number(value: Any) -> int | float | None:
    """The number a document value is, read plainly: text that is a whole number is an int."""
    if isinstance(value, bool) or (isinstance(value, int) and abs(value) >= BOUND):
        return None
    if isinstance(value, str):
        try:
            return int(value)
        except ValueError:
            return float(value)
    return value  # type: ignore[no-any-return]


def exact(comparison: Comparison) -> set[str]:
    """The chunks the rule selects, by Python's exact comparison of int and float."""
    values = comparison.value if isinstance(comparison.value, list) else [comparison.value]
    numeric = [value for value in values if abs(value) < BOUND]
    selected = set()
    for chunk in CHUNKS:
        held = chunk.metadata["account"]
        number = held_number(held)
        equal = number is not None and any(number == value for value in numeric)
        equal |= isinstance(held, int) and abs(held) >= BOUND and held in values
        if comparison.comparator in (Comparator.EQ, Comparator.IN):
            hit = equal
        elif comparison.comparator in (Comparator.NE, Comparator.NIN):
            hit = not equal
        else:
            ordered = ORDERINGS[comparison.comparator]
            hit = number is not None and bool(numeric) and ordered(number, numeric[0])
        if hit:
            selected.add(chunk.chunk_id)
    return selected


def comparisons() -> list[Comparison]:
    scalar = [
        Comparison(comparator=comparator, attribute="account", value=value)
        for comparator in (Comparator.EQ, Comparator.NE, *ORDERINGS)
        for value in OPERANDS
    ]
    listed = [
        Comparison(comparator=comparator, attribute="account", value=values)
        for comparator in (Comparator.IN, Comparator.NIN)
        for values in LISTS
    ]
    return scalar + listed


COMPARISONS = comparisons()


def faiss_ids(comparison: Comparison) -> set[str]:
    mask = comparison.accept(FaissTranslator(MetadataColumns([c.metadata for c in CHUNKS])))
    return {chunk.chunk_id for chunk, allowed in zip(CHUNKS, mask, strict=True) if allowed}


@pytest.mark.parametrize("comparison", COMPARISONS, ids=str)
def test_faiss_selects_exactly_the_documents_whose_id_compares(comparison: Comparison) -> None:
    assert faiss_ids(comparison) == exact(comparison)


@pytest.mark.parametrize("comparison", COMPARISONS, ids=str)
def test_the_result_check_admits_exactly_the_documents_whose_id_compares(
    comparison: Comparison,
) -> None:
    admitted, _ = conforming(CHUNKS, comparison, None)
    found = {chunk.chunk_id for chunk, ok in zip(CHUNKS, admitted, strict=True) if ok}
    assert found == exact(comparison)


def test_a_neighbouring_id_is_not_the_customer_number_in_a_slot() -> None:
    """A slot holding a 64-bit customer number finds that customer's documents only (the id as
    a number and as text), not 2**53 next to it."""
    directive = slot_filter({"customer": 2**53 + 1}, {"customer": "account"})
    assert directive is not None
    assert isinstance(directive, Comparison)
    assert faiss_ids(directive) == {"c0", "c9"}


def test_an_id_the_llm_writes_for_a_float_attribute_stays_exact() -> None:
    """A declared float attribute still takes an integer the LLM writes as it is."""
    field = MetadataField(name="account", type="float")
    value = _checked_value(field, 2**53 + 1)
    assert value == 2**53 + 1 and value != float(2**53)


def test_a_persisted_index_keeps_ids_exact(tmp_path: Any) -> None:
    """Columns written with an index and read back compare ids as exactly as fresh ones."""
    from rasa_context_retrieval.filters.column_files import read_columns, write_columns

    write_columns(MetadataColumns([chunk.metadata for chunk in CHUNKS]), tmp_path / "columns")
    columns = read_columns(tmp_path / "columns", len(CHUNKS))
    assert columns is not None
    comparison = Comparison(comparator=Comparator.EQ, attribute="account", value=2**53 + 1)
    mask = comparison.accept(FaissTranslator(columns))
    assert {chunk.chunk_id for chunk, ok in zip(CHUNKS, mask, strict=True) if ok} == {"c0", "c9"}
