"""Numbers in a message: amounts and their units, durations, counts compounded with a field's
name, comparisons, and a party or a person that must fit a range. Each case is read from the
schema (the unit a description declares, the field kept in it), on made-up schemas."""

from __future__ import annotations

import functools

import pytest

from rasa_context_retrieval.filters.schema import MetadataField
from rasa_context_retrieval.filters.syntax import parse_filter
from rasa_context_retrieval.self_query.rules import RuleQueryConstructor
from tests.self_query_support import (
    CAR_VALUES,
    CARS,
    FERRY_CROSSING_VALUES,
    FERRY_CROSSINGS,
    FURNITURE,
    FURNITURE_VALUES,
    HOLIDAY_CABIN_VALUES,
    HOLIDAY_CABINS,
    WORKSHOP_VALUES,
    WORKSHOPS,
    allotments,
    expected,
    expected_filter,
    filter_of,
    hotels,
    meant,
    rules_on,
    said,
)


def test_a_duration_goes_to_the_field_kept_in_time_even_after_another_fields_words() -> None:
    fields = (
        MetadataField(name="pages", type="integer", description="Number of pages"),
        MetadataField(
            name="listening_time", type="integer", description="Audiobook length in minutes"
        ),
    )
    rules = rules_on(fields, {})
    said = rules.construct("audiobooks over 300 pages and under 2 hours")
    assert said.filter == expected('and(gt("pages", 300), lt("listening_time", 120))')


def test_years_in_the_plural_make_a_duration_field() -> None:
    experience = MetadataField(
        name="experience", type="integer", description="Years of experience required"
    )
    rules = rules_on([experience], {})
    said = rules.construct("roles needing at least 5 years of experience")
    assert said.filter == expected('gte("experience", 5)')
    # twelve months make a year; a part of a year on a field of whole years is no filter
    assert rules.construct("roles needing at least 60 months of experience").filter == expected(
        'gte("experience", 5)'
    )
    assert rules.construct("roles needing at least 18 months of experience").filter is None


@pytest.mark.parametrize(
    ("text", "wanted", "limit"),
    [
        ("4-star hotels in Rome", 'and(eq("city", "Rome"), eq("stars", 4))', None),
        ("three star hotels", 'eq("stars", 3)', None),
        ("5 hotels in Paris", 'eq("city", "Paris")', 5),
        ("a 2.5 star hotel", None, None),
        ("not 4-star hotels in Rome", 'and(eq("city", "Rome"), ne("stars", 4))', None),
        # a form of a name word is no compound, and after "top" the count is a limit
        ("top 3 star hotels", None, 3),
    ],
)
def test_a_number_compounded_with_a_field_name_is_its_value(
    text: str, wanted: str | None, limit: int | None
) -> None:
    said = hotels().construct(text)
    assert (said.filter, said.limit) == (expected(wanted), limit)


def test_a_form_of_a_name_word_is_no_compound() -> None:
    rating = MetadataField(name="rating", type="float", description="A 1-10 rating for the film")
    genre = MetadataField(name="genre", type="string", description="The genre of the film")
    rules = rules_on([rating, genre], {"genre": ["drama"]})
    said = rules.construct("the 3 rated films")
    assert (said.filter, said.limit) == (None, 3)


@pytest.mark.parametrize(
    "text",
    [
        # no field is kept in percent or in kilometres: no filter rather than the fee or the size
        "plots costing more than 5% a year",
        "plots more than 3 km away",
    ],
)
def test_a_number_with_a_unit_no_field_is_kept_in_gives_no_filter(text: str) -> None:
    assert allotments().construct(text).filter is None


CAR_PARKS = (
    MetadataField(name="town", type="string", description="Town the car park is in"),
    MetadataField(name="day_rate", type="float", description="Price to park all day in GBP"),
    MetadataField(
        name="penalty", type="float", description="Amount in GBP a driver is fined for overstaying"
    ),
    MetadataField(
        name="charging_price", type="float", description="EV charging price in pence per kWh"
    ),
    MetadataField(name="hourly_fee", type="float", description="Fee in pence per hour"),
    MetadataField(name="max_stay_hours", type="integer", description="Longest stay allowed"),
)


@functools.cache  # the rules keep nothing between messages: build them once
def car_parks() -> RuleQueryConstructor:
    return rules_on(CAR_PARKS, {"town": frozenset(["Bath", "Wells"])})


@pytest.mark.parametrize(
    ("text", "wanted"),
    [
        # an amount described "in GBP" like another is money too: the named field takes it
        ("car parks with a penalty under £60", 'lt("penalty", 60)'),
        ("a fine of €100 or less in Bath", 'and(eq("town", "Bath"), lte("penalty", 100))'),
        # pence and cents are a unit of their own, written onto the number or not
        ("charging price under 30p per kWh", 'lt("charging_price", 30)'),
        ("an hourly fee below 80 pence", 'lt("hourly_fee", 80)'),
        # the words after a number's unit that open another phrase name the next comparison
        (
            "a day rate between £5 and £10 with a charging price of at most 35p",
            'and(gte("day_rate", 5), lte("day_rate", 10), lte("charging_price", 35))',
        ),
        # "in pence per hour" is a rate: the fee is not kept in hours
        ("stays of at least 3 hours", 'gte("max_stay_hours", 3)'),
    ],
)
def test_money_subunits_and_rates_point_to_their_field(text: str, wanted: str) -> None:
    assert car_parks().construct(text).filter == expected(wanted)


@pytest.mark.parametrize(
    "text",
    [
        # pence go to no field kept in pounds, pounds to no field kept in pence
        "car parks in Wells for under 50p",
        "charging price under £1",
    ],
)
def test_pence_and_pounds_do_not_convert(text: str) -> None:
    assert car_parks().construct(text).filter in (None, expected('eq("town", "Wells")'))


@pytest.mark.parametrize(
    ("fields", "text", "wanted"),
    [
        # a person of an age must fit: at most the youngest allowed, at least the oldest
        (
            (
                MetadataField(
                    name="min_age", type="integer", description="Youngest camper, in years"
                ),
            ),
            "camps a 9 year old could join",
            'lte("min_age", 9)',
        ),
        (
            (
                MetadataField(
                    name="min_age", type="integer", description="Youngest camper, in years"
                ),
            ),
            "which camps can I send my 12-year-old to?",
            'lte("min_age", 12)',
        ),
        (
            (MetadataField(name="max_age", type="integer", description="Oldest age to apply"),),
            "cover an 80 year old can still buy",
            'gte("max_age", 80)',
        ),
    ],
)
def test_a_person_of_an_age_must_fit_the_age_limits(
    fields: tuple[MetadataField, ...], text: str, wanted: str
) -> None:
    assert RuleQueryConstructor(fields, {}).construct(text).filter == expected(wanted)


def test_the_age_of_a_thing_is_no_person_who_must_fit() -> None:
    fields = (
        MetadataField(
            name="min_age", type="integer", description="Youngest age the game is for, in years"
        ),
        MetadataField(name="maker", type="string", description="Who makes the game"),
    )
    rules = RuleQueryConstructor(fields, {"maker": frozenset(["Ravensburger"])})
    assert rules.construct("games for my 3 year old").filter == expected('lte("min_age", 3)')
    # an age said of a noun for the documents or of a value is the thing's age
    assert rules.construct("are my 5 year old games still sold?").filter is None
    assert rules.construct("my 10-year-old Ravensburger box is missing a piece").filter == (
        expected('eq("maker", "Ravensburger")')
    )


@pytest.mark.parametrize(
    ("text", "wanted"),
    [
        # the field's name between the comparison and its number
        ("hostels above comfort level 2", 'gt("comfort_level", 2)'),
        ("nothing above comfort level 3", 'lte("comfort_level", 3)'),
        ("at least level 4", 'gte("comfort_level", 4)'),
        # words that are no field's name leave the number to the usual cues
        ("above the 3 hostels", None),
    ],
)
def test_a_comparison_may_name_its_field_before_the_number(text: str, wanted: str | None) -> None:
    fields = (
        MetadataField(name="comfort_level", type="integer", description="From 1 (basic) to 5"),
        MetadataField(name="beds", type="integer", description="Number of beds"),
    )
    assert RuleQueryConstructor(fields, {}).construct(text).filter == expected(wanted)


def test_a_number_that_fits_two_fields_gives_no_filter() -> None:
    fields = [
        MetadataField(name="price_per_month", type="float", description="Price in USD"),
        MetadataField(name="price_per_year", type="float", description="Price in USD"),
    ]
    constructor = RuleQueryConstructor(fields, {})

    assert constructor.construct("plans under $20").filter is None
    assert constructor.construct("plans under $20 a year").filter == expected_filter(
        'lt("price_per_year", 20)'
    )


@pytest.mark.parametrize(
    ("text", "expected"),
    [
        (
            "pottery workshops shorter than an hour and a half",
            'and(eq("craft", "pottery"), lt("length_minutes", 90))',
        ),
        (
            "at least 2 hours and a half of weaving",
            'and(eq("craft", "weaving"), gte("length_minutes", 150))',
        ),
    ],
)
def test_and_a_half_adds_half_the_unit(text: str, expected: str) -> None:
    assert filter_of(WORKSHOPS, WORKSHOP_VALUES, text) == parse_filter(expected)


def test_grand_and_quid_are_money() -> None:
    ferries = rules_on(FERRY_CROSSINGS, FERRY_CROSSING_VALUES)
    assert ferries.construct("crossings to Oslo under 2 grand").filter == parse_filter(
        'and(eq("port", "Oslo"), lt("fare", 2000))'
    )
    assert ferries.construct("a fare of at most 90 quid").filter == parse_filter('lte("fare", 90)')


@pytest.mark.parametrize(
    ("text", "expected"),
    [
        # A count before the name of a count field (``changes``) is its value.
        # The singular is not the field's name.
        ("crossings to Kiel with 1 change", 'eq("port", "Kiel")'),
        ("crossings to Kiel with 2 changes", 'and(eq("port", "Kiel"), eq("changes", 2))'),
        ("a 1-change crossing", 'eq("changes", 1)'),
        ("3 changes or more", 'gte("changes", 3)'),
        # The user's own count is no wish.
        ("I had 2 changes last time, is that normal?", None),
    ],
)
def test_a_count_before_a_count_fields_name_is_its_value(text: str, expected: str | None) -> None:
    found = filter_of(FERRY_CROSSINGS, FERRY_CROSSING_VALUES, text)
    assert found == (parse_filter(expected) if expected else None)


def test_a_count_before_a_singular_field_name_used_as_a_modifier_is_its_value() -> None:
    fields = (
        MetadataField(name="gpus", type="integer", description="Number of graphics cards"),
        MetadataField(name="price", type="float", description="Price per hour in USD"),
    )
    assert filter_of(fields, {}, "4 GPU servers") == parse_filter('eq("gpus", 4)')
    # the singular joined to nothing ("with 1 GPU") is the grammatical singular, not a name
    assert filter_of(fields, {}, "servers with 1 GPU") is None


@pytest.mark.parametrize(
    ("fields", "values", "text", "wanted"),
    [
        (
            FURNITURE,
            FURNITURE_VALUES,
            "teak chairs lighter than 5 kg",
            'and(eq("material", "teak"), lt("weight_kg", 5))',
        ),
        (
            HOLIDAY_CABINS,
            HOLIDAY_CABIN_VALUES,
            "owners younger than 40 years",
            'lt("owner_age", 40)',
        ),
        (
            HOLIDAY_CABINS,
            HOLIDAY_CABIN_VALUES,
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
