"""One range grammar: "between X and Y", "from X to Y" and "X-Y" read alike for numbers, years and
dates, each kind only reading its own endpoints."""

from __future__ import annotations

import pytest

from rasa_context_retrieval.filters.schema import MetadataField
from rasa_context_retrieval.self_query import dates, numbers, years
from rasa_context_retrieval.self_query.ranges import COMPACT_JOINERS, SPAN_JOINERS, alternation
from tests.self_query_support import expected, rules_on

PRICE = MetadataField(name="price_per_month", type="float", description="Monthly price in USD")
YEAR = MetadataField(name="year", type="integer", description="Year the movie was released")
PUBLISHED = MetadataField(
    name="published", type="date", description="Date the article was published"
)

PRICE_RANGE = 'and(gte("price_per_month", 10), lte("price_per_month", 20))'
YEAR_RANGE = 'and(gte("year", 1990), lte("year", 1995))'
SPRING = 'and(gte("published", "2024-03-01"), lte("published", "2024-05-31"))'


@pytest.mark.parametrize(
    ("field", "message", "meant"),
    [
        (PRICE, "plans between $10 and $20 a month", PRICE_RANGE),
        (PRICE, "plans from $10 to $20 a month", PRICE_RANGE),
        (PRICE, "plans $10-$20 a month", PRICE_RANGE),
        (YEAR, "movies between 1990 and 1995", YEAR_RANGE),
        (YEAR, "movies from the year 1990 until 1995", YEAR_RANGE),
        (YEAR, "movies 1990-1995", YEAR_RANGE),
        (PUBLISHED, "articles published between March 2024 and May 2024", SPRING),
        (PUBLISHED, "articles published from March 2024 to May 2024", SPRING),
        (PUBLISHED, "articles published March 2024 - May 2024", SPRING),
    ],
)
def test_a_range_reads_the_same_for_numbers_years_and_dates(
    field: MetadataField, message: str, meant: str
) -> None:
    assert rules_on([field]).construct(message).filter == expected(meant)


def test_every_kind_spells_its_ranges_with_the_one_set_of_range_words() -> None:
    for pattern in (numbers.RANGE, years.RANGE, dates.RANGE):
        assert f"(?:{alternation(SPAN_JOINERS)})" in pattern.pattern
        assert f"(?:{alternation(COMPACT_JOINERS)})" in pattern.pattern
