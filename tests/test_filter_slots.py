"""Slot filters: the user's scope becomes an AND of eq/in restrictions that nothing loosens."""

from __future__ import annotations

from typing import Any

import numpy as np
import pytest
from langchain_core.structured_query import Comparator, Comparison, Operation, Operator

from rasa_context_retrieval.filters.columns import MetadataColumns
from rasa_context_retrieval.filters.faiss_translator import FaissTranslator
from rasa_context_retrieval.filters.slot_filters import slot_filter
from rasa_context_retrieval.filters.syntax import conjoin, parse_filter, to_filter_syntax

MAPPING = {"user_plan": "plan", "user_region": "region", "is_beta": "beta", "max_price": "price"}


def test_a_filled_slot_restricts_to_documents_whose_attribute_equals_it() -> None:
    directive = slot_filter({"user_plan": "premium"}, MAPPING)

    assert directive == Comparison(comparator=Comparator.EQ, attribute="plan", value="premium")


def test_several_slots_are_all_required() -> None:
    directive = slot_filter({"user_plan": "premium", "user_region": "eu"}, MAPPING)

    assert to_filter_syntax(directive) == 'and(eq("plan", "premium"), eq("region", "eu"))'


def test_a_list_value_means_any_of_its_items() -> None:
    directive = slot_filter({"user_region": ["eu", "uk", None, ""]}, MAPPING)

    assert directive == Comparison(comparator=Comparator.IN, attribute="region", value=["eu", "uk"])


@pytest.mark.parametrize("empty", [None, "", "   ", [], [None, ""]])
def test_unfilled_slots_add_nothing(empty: Any) -> None:
    assert slot_filter({"user_plan": empty}, MAPPING) is None
    assert slot_filter({"user_plan": empty, "user_region": "eu"}, MAPPING) == Comparison(
        comparator=Comparator.EQ, attribute="region", value="eu"
    )


def test_bools_and_numbers_keep_their_type() -> None:
    directive = slot_filter({"is_beta": True, "max_price": 9.99}, MAPPING)

    assert directive == Operation(
        operator=Operator.AND,
        arguments=[
            Comparison(comparator=Comparator.EQ, attribute="beta", value=True),
            Comparison(comparator=Comparator.EQ, attribute="price", value=9.99),
        ],
    )


def test_unmapped_slots_are_ignored() -> None:
    assert slot_filter({"requested_slot": "user_plan", "session_started": True}, MAPPING) is None


def test_a_value_that_cannot_restrict_raises_rather_than_being_dropped() -> None:
    with pytest.raises(ValueError, match="user_plan"):
        slot_filter({"user_plan": {"name": "premium"}}, MAPPING)


def test_the_slot_filter_still_holds_when_anded_with_a_wider_filter_from_the_users_words() -> None:
    documents = [
        {"plan": "premium", "region": "eu"},
        {"plan": "basic", "region": "eu"},
        {"plan": "premium", "region": "us"},
    ]
    scope = slot_filter({"user_plan": "Premium", "user_region": "eu"}, MAPPING)
    from_words = parse_filter('or(eq("plan", "basic"), eq("plan", "premium"))')

    combined = conjoin(scope, from_words)
    assert combined is not None

    mask = combined.accept(FaissTranslator(MetadataColumns(documents)))

    assert np.flatnonzero(mask).tolist() == [0]
