"""The self-query mechanisms that carry the rules to schemas they were never tuned on, each on a
schema of its own invention (used cars, flats to rent, a book shop, garden furniture, holiday
cabins, concerts): value short forms and spellings, day-level dates and months without a year,
an integer year field, comparatives, boolean paraphrases read from a field's name, and the
user's own past. Every case is read from the schema; none of these schemas is a benchmark's."""

from __future__ import annotations

from typing import Any

import pytest
from langchain_core.structured_query import Comparison, FilterDirective, Operation, Operator

from rasa_context_retrieval.filters.schema import MetadataField
from rasa_context_retrieval.filters.syntax import parse_filter
from rasa_context_retrieval.self_query.rules import RuleQueryConstructor
from tests.self_query_support import rules_on

CARS = (
    MetadataField(name="make", type="string", description="Manufacturer of the car"),
    MetadataField(name="model", type="string", description="Model name"),
    MetadataField(
        name="body",
        type="string",
        description="Body style",
        values=("SUV", "sedan", "van", "hatchback"),
    ),
    MetadataField(name="year", type="integer", description="Model year of the car"),
    MetadataField(name="price", type="float", description="Asking price in euros"),
    MetadataField(name="weight", type="float", description="Kerb weight in tonnes"),
    MetadataField(
        name="has_warranty",
        type="boolean",
        description="Whether the item is covered by a warranty",
    ),
)
CAR_VALUES = {
    "make": frozenset(["Toyota", "Škoda", "Volvo", "Mercedes-Benz"]),
    "model": frozenset(["Land Rover Defender", "Octavia", "Yaris"]),
}
FLATS = (
    MetadataField(name="district", type="string", description="District of the flat"),
    MetadataField(name="rent", type="float", description="Monthly rent in euros"),
    MetadataField(name="furnished", type="boolean", description="Whether the flat is furnished"),
    MetadataField(
        name="available_from", type="date", description="Date the flat can be moved into"
    ),
)
FLAT_VALUES = {"district": frozenset(["Mitte", "Kreuzberg", "Prenzlauer Berg"])}
BOOKS = (
    MetadataField(
        name="genre",
        type="string",
        description="Genre of the book",
        values=("science fiction", "young adult", "true crime", "poetry"),
    ),
    MetadataField(name="published", type="date", description="Date the book was published"),
)
FURNITURE = (
    MetadataField(name="material", type="string", description="Main material of the piece"),
    MetadataField(name="foldable", type="boolean", description="Whether the piece folds flat"),
    MetadataField(name="weight_kg", type="float", description="Weight of the piece in kg"),
)
FURNITURE_VALUES = {"material": frozenset(["teak", "metal", "rattan"])}
CABINS = (
    MetadataField(name="region", type="string", description="Region of the cabin"),
    MetadataField(name="sleeps", type="integer", description="Number of beds in the cabin"),
    MetadataField(name="kids_allowed", type="boolean", description="Whether children are welcome"),
    MetadataField(name="owner_age", type="integer", description="Age of the owner in years"),
    MetadataField(
        name="sauna_included", type="boolean", description="Whether the cabin has a sauna"
    ),
)
CABIN_VALUES = {"region": frozenset(["Lapland", "Tyrol", "Dolomites"])}
CONCERTS = (
    MetadataField(name="artist", type="string", description="Who plays"),
    MetadataField(name="concert_date", type="date", description="Day of the concert"),
)
CONCERT_VALUES = {"artist": frozenset(["Nils Frahm", "Anoushka Shankar"])}


def atoms(directive: FilterDirective | None) -> set[tuple[str, str, Any]]:
    """The comparisons of a filter's top-level ``and``, in a comparable form."""
    found: set[tuple[str, str, Any]] = set()
    pending = [] if directive is None else [directive]
    while pending:
        node = pending.pop()
        if isinstance(node, Operation) and node.operator == Operator.AND:
            pending.extend(node.arguments)
        else:
            assert isinstance(node, Comparison), node
            value = node.value
            if isinstance(value, dict):
                value = value["date"]
            elif isinstance(value, list):
                value = tuple(sorted(value))
            elif isinstance(value, int | float) and not isinstance(value, bool):
                value = float(value)
            found.add((node.attribute, node.comparator.value, value))
    return found


def said(constructor: RuleQueryConstructor, text: str) -> set[tuple[str, str, Any]]:
    return atoms(constructor.construct(text).filter)


def meant(text: str | None) -> set[tuple[str, str, Any]]:
    return atoms(None if text is None else parse_filter(text))


@pytest.mark.parametrize(
    ("text", "wanted"),
    [
        # a plural of a short or all-capital value
        ("vans under 20000 euros", 'and(eq("body", "van"), lt("price", 20000))'),
        ("SUVs with a warranty", 'and(eq("body", "SUV"), eq("has_warranty", true))'),
        ("vans still under warranty", 'and(eq("body", "van"), eq("has_warranty", true))'),
        # written without its accent
        ("a used Skoda", 'eq("make", "Škoda")'),
        # the first words of a longer value, in the plural
        ("Land Rovers from 2015", 'and(eq("model", "Land Rover Defender"), eq("year", 2015))'),
        # one word of it is too often a word of its own
        ("land for sale", None),
        # the first part of a hyphenated name, capitalised
        ("a Mercedes sedan", 'and(eq("make", "Mercedes-Benz"), eq("body", "sedan"))'),
        ("mercedes is a name", None),
    ],
)
def test_values_said_in_another_spelling_or_shortened(text: str, wanted: str | None) -> None:
    assert said(rules_on(CARS, CAR_VALUES), text) == meant(wanted)


@pytest.mark.parametrize(
    ("text", "wanted"),
    [
        ("sci-fi books", 'eq("genre", "science fiction")'),
        (
            "any sci fi from 2020?",
            'and(eq("genre", "science fiction"), gte("published", "2020-01-01"), '
            'lte("published", "2020-12-31"))',
        ),
        ("YA books", 'eq("genre", "young adult")'),
        ("ya know any good ones?", None),  # initials count in capitals only
        ("books on YA", 'eq("genre", "young adult")'),
        ("YA? OK, thanks", None),  # and only where they name what is wanted
        ("true-crime books", 'eq("genre", "true crime")'),
        ("truecrime books", 'eq("genre", "true crime")'),
        ("What's the difference between poetry and true crime?", None),
    ],
)
def test_book_genres_said_short(text: str, wanted: str | None) -> None:
    assert said(rules_on(BOOKS), text) == meant(wanted)


TOYS = (
    MetadataField(
        name="category",
        type="string",
        description="Category of the toy",
        values=("board games", "bath goods", "puzzles", "action figures"),
    ),
)


@pytest.mark.parametrize(
    ("text", "wanted"),
    [
        # the singular of a plural value, with the value's own cue ("a" before a topic value)
        ("a board game for 4 players", 'eq("category", "board games")'),
        ("an action figure", 'eq("category", "action figures")'),
        ("the puzzle of the century", None),
        # initials that two values share say neither
        ("BGs for toddlers", None),
        ("any AFs under the tree?", 'eq("category", "action figures")'),
    ],
)
def test_singular_forms_and_shared_initials(text: str, wanted: str | None) -> None:
    assert said(rules_on(TOYS), text) == meant(wanted)


@pytest.mark.parametrize(
    ("text", "wanted"),
    [
        # a day: that day; "from" a day: from then on; "by" a day: until it
        ("flats available on March 3", 'eq("available_from", "2026-03-03")'),
        ("flats available on the 3rd of March", 'eq("available_from", "2026-03-03")'),
        ("flats available on July 3rd", 'eq("available_from", "2025-07-03")'),
        ("flats available from the 1st of August", 'gte("available_from", "2025-08-01")'),
        ("a flat available by the 15th of July", 'lte("available_from", "2025-07-15")'),
        # a month without a year is the coming one for a date of moving in
        (
            "flats available in March",
            'and(gte("available_from", "2026-03-01"), lte("available_from", "2026-03-31"))',
        ),
        (
            "flats available between May and July",
            'and(gte("available_from", "2025-05-01"), lte("available_from", "2025-07-31"))',
        ),
    ],
)
def test_days_and_months_without_a_year_on_a_date_ahead(text: str, wanted: str) -> None:
    assert said(rules_on(FLATS, FLAT_VALUES), text) == meant(wanted)


@pytest.mark.parametrize(
    ("text", "wanted"),
    [
        # a day needs no word before it; a bare month or year does
        (
            "Nils Frahm concerts March 3rd",
            'and(eq("artist", "Nils Frahm"), eq("concert_date", "2026-03-03"))',
        ),
        (
            "Nils Frahm concerts in 2019",
            'and(eq("artist", "Nils Frahm"), gte("concert_date", "2019-01-01"), '
            'lte("concert_date", "2019-12-31"))',
        ),
        ("Nils Frahm, 2019", 'eq("artist", "Nils Frahm")'),
        # the user says which month: "next March", "last September"
        (
            "concerts next March",
            'and(gte("concert_date", "2026-03-01"), lte("concert_date", "2026-03-31"))',
        ),
        ("concerts since last September", 'gte("concert_date", "2024-09-01")'),
        # named days, and the periods ahead of things that take place (TODAY is a Sunday)
        ("concerts tomorrow", 'eq("concert_date", "2025-06-16")'),
        (
            "concerts next week",
            'and(gte("concert_date", "2025-06-16"), lte("concert_date", "2025-06-22"))',
        ),
        (
            "concerts this month",
            'and(gte("concert_date", "2025-06-01"), lte("concert_date", "2025-06-30"))',
        ),
        (
            "concerts in the next 3 days",
            'and(gte("concert_date", "2025-06-15"), lte("concert_date", "2025-06-18"))',
        ),
    ],
)
def test_a_day_alone_and_which_month(text: str, wanted: str) -> None:
    assert said(rules_on(CONCERTS, CONCERT_VALUES), text) == meant(wanted)


def test_a_month_without_a_year_is_the_latest_for_a_record_and_the_coming_for_an_event() -> None:
    assert said(rules_on(BOOKS), "books published in March") == meant(
        'and(gte("published", "2025-03-01"), lte("published", "2025-03-31"))'
    )
    assert said(rules_on(BOOKS), "books published on March 3rd") == meant(
        'eq("published", "2025-03-03")'
    )
    assert said(rules_on(BOOKS), "books published this month") == meant(
        'and(gte("published", "2025-06-01"), lte("published", "2025-06-30"))'
    )
    assert said(rules_on(BOOKS), "books published yesterday") == meant(
        'eq("published", "2025-06-14")'
    )
    assert said(rules_on(CONCERTS, CONCERT_VALUES), "Nils Frahm concerts in February") == meant(
        'and(eq("artist", "Nils Frahm"), gte("concert_date", "2026-02-01"), '
        'lte("concert_date", "2026-02-28"))'
    )


@pytest.mark.parametrize(
    ("text", "wanted"),
    [
        ("a 2020 model", 'eq("year", 2020)'),
        ("2015 cars", 'eq("year", 2015)'),
        ("a 2018 Volvo", 'and(eq("make", "Volvo"), eq("year", 2018))'),
        ("cars from 2015", 'eq("year", 2015)'),
        ("a Toyota, 2019 or newer", 'and(eq("make", "Toyota"), gte("year", 2019))'),
        ("2015 or 2016 models", 'in("year", [2015, 2016])'),
        # the user's own past, a supposition, and a year of the user's life: no filter
        ("my old one was a 2012 Toyota, what do I need to know?", None),
        ("if it were a 2012 Volvo, would the insurance cost more?", None),
        ("I was born in 1985", None),
    ],
)
def test_an_integer_year_field(text: str, wanted: str | None) -> None:
    assert said(rules_on(CARS, CAR_VALUES), text) == meant(wanted)


@pytest.mark.parametrize(
    ("fields", "values", "text", "wanted"),
    [
        (
            FURNITURE,
            FURNITURE_VALUES,
            "teak chairs lighter than 5 kg",
            'and(eq("material", "teak"), lt("weight_kg", 5))',
        ),
        (CABINS, CABIN_VALUES, "owners younger than 40 years", 'lt("owner_age", 40)'),
        (
            CABINS,
            CABIN_VALUES,
            "owners under 40 years old in Tyrol",
            'and(eq("region", "Tyrol"), lt("owner_age", 40))',
        ),
        # a plain amount after a value is the one price; alone, or small, it says nothing
        (
            CARS,
            CAR_VALUES,
            "Toyota vans under 15000",
            'and(eq("make", "Toyota"), eq("body", "van"), lt("price", 15000))',
        ),
        (CARS, CAR_VALUES, "under 15000", None),
        (CARS, CAR_VALUES, "Toyota under 3", 'eq("make", "Toyota")'),
        # numbers of no field
        (CARS, CAR_VALUES, "Can I pick up my Toyota from the 4th floor?", 'eq("make", "Toyota")'),
        (CARS, CAR_VALUES, "order 4417 never arrived", None),
    ],
)
def test_comparatives_and_plain_amounts(
    fields: tuple[MetadataField, ...],
    values: dict[str, frozenset[str]],
    text: str,
    wanted: str | None,
) -> None:
    assert said(rules_on(fields, values), text) == meant(wanted)


@pytest.mark.parametrize(
    ("fields", "values", "text", "wanted"),
    [
        # the verb of an "-able" name
        (
            FURNITURE,
            FURNITURE_VALUES,
            "folding teak chairs",
            'and(eq("material", "teak"), eq("foldable", true))',
        ),
        (
            FURNITURE,
            FURNITURE_VALUES,
            "metal tables that fold",
            'and(eq("material", "metal"), eq("foldable", true))',
        ),
        (FURNITURE, FURNITURE_VALUES, "How do I fold a deck chair?", None),
        # "<things> welcome" said as "<thing>-friendly" or "fine with <things>"
        (
            CABINS,
            CABIN_VALUES,
            "kid-friendly cabins in Lapland",
            'and(eq("region", "Lapland"), eq("kids_allowed", true))',
        ),
        (CABINS, CABIN_VALUES, "child friendly cabins", 'eq("kids_allowed", true)'),
        # the thing of "<thing>_included", had by the documents
        (CABINS, CABIN_VALUES, "cabins with a sauna", 'eq("sauna_included", true)'),
        (
            CABINS,
            CABIN_VALUES,
            "cabins in Lapland without sauna",
            'and(eq("region", "Lapland"), eq("sauna_included", false))',
        ),
        (CABINS, CABIN_VALUES, "how hot should a sauna be?", None),
        (CABINS, CABIN_VALUES, "cabins that are fine with kids", 'eq("kids_allowed", true)'),
        (
            CABINS,
            CABIN_VALUES,
            "cabins in Tyrol that are not kid-friendly",
            'and(eq("region", "Tyrol"), eq("kids_allowed", false))',
        ),
    ],
)
def test_booleans_said_by_a_form_of_their_name(
    fields: tuple[MetadataField, ...],
    values: dict[str, frozenset[str]],
    text: str,
    wanted: str | None,
) -> None:
    assert said(rules_on(fields, values), text) == meant(wanted)


@pytest.mark.parametrize(
    ("text", "wanted", "limit"),
    [
        ("I rode out a storm in Lapland, any cabins in Tyrol?", 'eq("region", "Tyrol")', None),
        ("we drove through the Dolomites last year, was it worth it?", None, None),
        ("we are 4 people looking for cabins", None, None),
        ("we loved Lapland, is Tyrol as good?", 'eq("region", "Tyrol")', None),
        ("two cabins in Lapland", 'eq("region", "Lapland")', 2),
        (
            "cabins in the Dolomites, nothing in Tyrol",
            'and(eq("region", "Dolomites"), ne("region", "Tyrol"))',
            None,
        ),
    ],
)
def test_the_users_past_counts_and_negation(
    text: str, wanted: str | None, limit: int | None
) -> None:
    constructed = rules_on(CABINS, CABIN_VALUES).construct(text)
    assert (atoms(constructed.filter), constructed.limit) == (meant(wanted), limit)
