"""An id said in a message is filtered on exactly: "order number exactly 12345678901234567891"
finds that order and never its neighbour.

Above 2**53 neighbouring integers share one float. The filter layer compares integers exactly
below 2**64 (``tests/test_filter_exact_numbers.py``), so the self-query must hand it the number
as said: an integer when the words are an integer, a float only for a decimal.
"""

from __future__ import annotations

from pathlib import Path
from typing import Any

import pytest
from langchain_core.structured_query import Comparison

from rasa_context_retrieval.filters.schema import MetadataField
from rasa_context_retrieval.filters.values import number_parts
from rasa_context_retrieval.milvus.expression import MilvusExpressionTranslator
from rasa_context_retrieval.milvus.layout import CollectionLayout
from rasa_context_retrieval.store import ContextRetrieval
from tests.self_query_support import rules_on
from tests.store_support import connected_store, tracker_state

OURS = 12345678901234567891
THEIRS = 12345678901234567890
"""The order before ``OURS``: another order, with the same float value."""
FIELDS = [
    MetadataField(name="order_number", type="integer", description="Order number"),
    MetadataField(name="total", type="float", description="Order total in dollars"),
]
ASKED = f"what was in order number exactly {OURS}?"


def test_the_two_orders_share_a_float() -> None:
    """The premise: through a float the two orders cannot be told apart."""
    assert OURS != THEIRS and float(OURS) == float(THEIRS)


@pytest.mark.parametrize(
    ("text", "wanted"),
    [
        (ASKED, OURS),
        (f"orders with order number above {THEIRS}", THEIRS),
        (f"orders totalling under {OURS} dollars", OURS),
        ("orders totalling under 20.5 dollars", 20.5),
        ("orders totalling under 20 dollars", 20.0),
    ],
)
def test_an_integer_said_stays_exact_in_the_filter(text: str, wanted: float) -> None:
    """An integer keeps its every digit, on an integer field and on a float one (a float field
    may hold an id too); on a float field, a number a float holds exactly is a float."""
    said = rules_on(FIELDS).construct(text).filter
    assert isinstance(said, Comparison)
    assert type(said.value) is type(wanted) and said.value == wanted


@pytest.fixture(scope="module")
def store(embedder: Any, tmp_path_factory: pytest.TempPathFactory) -> ContextRetrieval:
    docs = tmp_path_factory.mktemp("orders")
    for name, order in (("ours.md", OURS), ("theirs.md", THEIRS)):
        (docs / name).write_text(
            f"---\norder_number: {order}\n---\nOrder {name[:-3]}: two chairs and a table.",
            encoding="utf-8",
        )
    return connected_store(
        embedder,
        {
            "docs": str(docs),
            "index_path": str(Path(tmp_path_factory.mktemp("index"))),
            "metadata_fields": [{"name": "order_number", "type": "integer"}],
            "top_k": 10,
        },
    )


async def test_a_search_for_an_order_number_finds_that_order_only(store: ContextRetrieval) -> None:
    found = await store.search("", tracker_state(("user", ASKED)), 0.0)
    assert [result.metadata["source"] for result in found.results] == ["ours.md"]


def _planned_for_the_orders() -> CollectionLayout:
    """The layout a collection of the two orders gets: typed fields for the declared attributes,
    and the overflow JSON for the ids an integer field cannot hold."""
    planned = CollectionLayout.planned(FIELDS)
    return planned.with_overflow(
        planned.needed_overflow([{"order_number": OURS}, {"order_number": THEIRS}])
    )


@pytest.mark.parametrize("layout", [CollectionLayout.legacy(), _planned_for_the_orders()])
def test_the_milvus_expression_compares_the_remainder_said(layout: CollectionLayout) -> None:
    """On Milvus an integer past 2**53 is its float and the exact remainder: the expression
    the self-query's filter becomes tests the remainder of the number said."""
    said = rules_on(FIELDS).construct(ASKED).filter
    assert said is not None
    expression = said.accept(MilvusExpressionTranslator(layout=layout))
    rounded, remainder = number_parts(OURS)
    assert remainder != 0
    assert f"== {rounded!r})" in expression and f'["r"] == {remainder})' in expression


def test_a_whole_number_too_large_to_compare_makes_no_filter() -> None:
    """The filters compare integers below 2**64 only; a larger one said would be rounded, so
    it filters on nothing rather than on a number the user did not say."""
    assert rules_on(FIELDS).construct(f"orders with order number above {2**64}").filter is None
    assert rules_on(FIELDS).construct(f"orders with order number above {2**64 - 1}").filter
