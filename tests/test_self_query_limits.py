"""Limits: a count or a rank of documents becomes the number of results, and a count of anything
else does not."""

from __future__ import annotations

import pytest

from rasa_context_retrieval.filters.schema import MetadataField
from rasa_context_retrieval.filters.syntax import parse_filter
from tests.self_query_support import (
    FERRY_CROSSING_VALUES,
    FERRY_CROSSINGS,
    instruments,
    movies,
    rules_on,
)


@pytest.mark.parametrize(
    ("text", "limit"),
    [
        ("tell me more about the first one", None),
        ("what is the best one?", None),
        ("I'd like to hear about the first two bands he joined", None),
        ("the top 3 guitars", 3),
        ("the first 2 results please", 2),
        ("best five under 500 euros", 5),
        # a count asked for with a verb of showing, whatever follows it
        ("show me two second-hand cellos", 2),
        ("refurbished ones under 300 euros, show me three", 3),
        ("give me 4 options", 4),
        ("two suggestions please", 2),
        # not a count of something else, nor a quantity
        ("show me 2 of them", None),
        ("show me 10 minutes of practice tips", None),
    ],
)
def test_a_rank_counts_documents_only(text: str, limit: int | None) -> None:
    assert instruments().construct(text).limit == limit


def test_documents_named_once_by_a_description_are_counted_for_a_limit() -> None:
    # Only "Day the ferry sails" names what the documents are.
    found = rules_on(FERRY_CROSSINGS, FERRY_CROSSING_VALUES).construct("three ferries to Oslo")
    assert found.limit == 3
    assert found.filter == parse_filter('eq("port", "Oslo")')


def test_a_count_before_a_plural_value_of_several_words_is_a_limit() -> None:
    fields = (
        MetadataField(
            name="repair",
            type="string",
            description="Kind of repair",
            values=["screen replacement", "battery swap"],
        ),
    )
    found = rules_on(fields, {}).construct("three screen replacements under warranty")
    assert found.limit == 3


@pytest.mark.parametrize(
    ("text", "limit"),
    [
        ("recommend two movies about toys", 2),
        ("top 3 dramas since 2010", 3),
        ("five thrillers", 5),
        ("what happens in the movie with 2 dreams", None),
        ("I have 2 comedies on DVD, suggest something else", None),
    ],
)
def test_a_count_of_documents_becomes_the_limit(text: str, limit: int | None) -> None:
    assert movies().construct(text).limit == limit
