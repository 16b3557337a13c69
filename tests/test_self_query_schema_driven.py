"""Self-query rules read from the schema, on made-up schemas (ferry crossings, museum
exhibitions, e-scooters) that no benchmark set uses: day spans, glosses of values written in a
field's description, and the other mechanisms that turn a schema's own words into filters."""

from __future__ import annotations

import datetime as dt

import pytest
from langchain_core.structured_query import FilterDirective

from rasa_context_retrieval.filters.syntax import parse_filter
from rasa_context_retrieval.schema import MetadataField
from rasa_context_retrieval.self_query.rules import RuleQueryConstructor

TODAY = dt.date(2025, 6, 15)

FERRIES = (
    MetadataField(name="port", type="string", description="Port the crossing arrives at"),
    MetadataField(name="sailing_day", type="date", description="Day the ferry sails"),
    MetadataField(
        name="changes",
        type="integer",
        description="Number of changes of ship on the way (0 for a through crossing)",
    ),
    MetadataField(
        name="cabin_included",
        type="boolean",
        description="Whether a cabin is included in the fare",
    ),
    MetadataField(name="fare", type="float", description="Fare per passenger in EUR"),
)
FERRY_VALUES = {"port": frozenset(["Bergen", "Kiel", "Oslo", "Tallinn"])}
EXHIBITIONS = (
    MetadataField(name="museum", type="string", description="Museum showing the exhibition"),
    MetadataField(name="opening", type="date", description="Day the exhibition opened"),
    MetadataField(
        name="guided",
        type="boolean",
        description="Whether tours are offered (false = self-guided audio only)",
    ),
)
EXHIBITION_VALUES = {"museum": frozenset(["Louvre", "Prado", "Rijksmuseum"])}


def rules(
    fields: tuple[MetadataField, ...], values: dict[str, frozenset[str]]
) -> RuleQueryConstructor:
    return RuleQueryConstructor(fields, values, today=lambda: TODAY)


def filter_of(
    fields: tuple[MetadataField, ...], values: dict[str, frozenset[str]], text: str
) -> FilterDirective | None:
    return rules(fields, values).construct(text).filter


@pytest.mark.parametrize(
    ("text", "expected"),
    [
        (
            "crossings to Kiel sailing between 3 and 8 October",
            'and(eq("port", "Kiel"), gte("sailing_day", "2025-10-03"),'
            ' lte("sailing_day", "2025-10-08"))',
        ),
        (
            "ferries from the 2nd to the 4th of July 2026",
            'and(gte("sailing_day", "2026-07-02"), lte("sailing_day", "2026-07-04"))',
        ),
    ],
)
def test_a_span_of_days_borrows_the_month_of_its_last_day(text: str, expected: str) -> None:
    assert filter_of(FERRIES, FERRY_VALUES, text) == parse_filter(expected)


def test_from_a_day_of_a_record_is_that_day() -> None:
    text = "the Prado exhibition from 12 March 2024"
    expected = 'and(eq("museum", "Prado"), eq("opening", "2024-03-12"))'
    assert filter_of(EXHIBITIONS, EXHIBITION_VALUES, text) == parse_filter(expected)


def test_documents_named_once_by_a_description_are_counted_for_a_limit() -> None:
    # Only "Day the ferry sails" names what the documents are.
    found = rules(FERRIES, FERRY_VALUES).construct("three ferries to Oslo")
    assert found.limit == 3
    assert found.filter == parse_filter('eq("port", "Oslo")')
