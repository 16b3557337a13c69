"""Dates and years in a message: days, months without a year, spans, periods and relative dates
read from a fixed day, and which date or year field they go to."""

from __future__ import annotations

import datetime as dt

import pytest

from rasa_context_retrieval.filters.schema import MetadataField
from rasa_context_retrieval.filters.syntax import parse_filter
from rasa_context_retrieval.self_query.rules import RuleQueryConstructor
from tests.self_query_support import (
    BOOKS,
    CAR_VALUES,
    CARS,
    FERRY_CROSSING_VALUES,
    FERRY_CROSSINGS,
    SCHEMA,
    allotments,
    clinics,
    expected,
    expected_filter,
    filter_of,
    meant,
    rules_on,
    said,
)


def test_a_calendar_year_field_is_no_duration() -> None:
    year = MetadataField(name="year", type="integer", description="The year the film came out")
    rules = rules_on([year], {})
    assert rules.construct("films longer than 2 hours").filter is None
    assert rules.construct("films longer than 2 years").filter is None


def test_a_month_said_about_a_place_is_no_date_of_records() -> None:
    said = clinics().construct("Is York very busy in August?")
    assert said.filter == expected('eq("city", "York")')


def test_a_year_goes_to_the_field_whose_description_says_the_verb() -> None:
    said = allotments().construct("plots that were first let out in 2019")
    assert said.filter == expected('eq("first_let_year", 2019)')


FAIRS = (
    MetadataField(name="town", type="string", description="Town the fair is held in"),
    MetadataField(name="opens_on", type="date", description="Day the fair opens"),
)


@pytest.mark.parametrize(
    ("text", "wanted"),
    [
        # the field looks ahead: a month without a year is the coming one ...
        (
            "fairs opening in March",
            'and(gte("opens_on", "2026-03-01"), lte("opens_on", "2026-03-31"))',
        ),
        # ... unless the message says it lies behind: "since", a verb in the past
        ("fairs open since 1 April", 'gte("opens_on", "2025-04-01")'),
        ("fairs that took place on 3 May", 'eq("opens_on", "2025-05-03")'),
        (
            "fairs that were opened in March",
            'and(gte("opens_on", "2025-03-01"), lte("opens_on", "2025-03-31"))',
        ),
    ],
)
def test_the_message_says_which_way_a_month_without_a_year_lies(text: str, wanted: str) -> None:
    rules = rules_on(FAIRS, {"town": frozenset(["Ely"])})
    assert rules.construct(text).filter == expected(wanted)


def test_a_told_direction_stays_in_its_clause() -> None:
    rules = rules_on(FAIRS, {"town": frozenset(["Ely"])})
    said = rules.construct("I went to Ely last year, which fairs open in March?")
    assert said.filter == expected(
        'and(gte("opens_on", "2026-03-01"), lte("opens_on", "2026-03-31"))'
    )


@pytest.mark.parametrize(
    ("text", "wanted"),
    [
        # a year alone is what the integer year field holds ...
        ("plots from before 2019", 'lt("first_let_year", 2019)'),
        # ... and the date field's when the message names it, or says a month
        ("plots reviewed before 2019", 'lt("reviewed", "2019-01-01")'),
        (
            "plots from March 2024",
            'and(gte("reviewed", "2024-03-01"), lte("reviewed", "2024-03-31"))',
        ),
    ],
)
def test_a_year_alone_goes_to_the_year_field_unless_the_date_field_is_named(
    text: str, wanted: str
) -> None:
    assert allotments().construct(text).filter == expected(wanted)


@pytest.mark.parametrize(
    ("text", "wanted"),
    [
        # a phrasal verb of release makes a date a wish about the documents
        ("what came out in the last 7 days?", 'gte("aired", "2025-06-08")'),
        (
            "anything brought out this year?",
            'and(gte("aired", "2025-01-01"), lte("aired", "2025-12-31"))',
        ),
        # the user's own story stays no filter
        ("I came out of a meeting in the last hour, anything good?", None),
    ],
)
def test_a_phrasal_verb_of_release_scopes_a_date(text: str, wanted: str | None) -> None:
    fields = (MetadataField(name="aired", type="date", description="Day the show aired"),)
    rules = rules_on(fields, {})
    assert rules.construct(text).filter == expected(wanted)


@pytest.mark.parametrize(
    ("text", "wanted"),
    [
        # a year compared as old or new is the documents' year in a message about anything
        ("anything older than 2015?", 'lt("first_let_year", 2015)'),
        (
            "under 20 square metres, 2018 or newer",
            'and(lt("size_m2", 20), gte("first_let_year", 2018))',
        ),
        # a year said plainly still needs a message about the documents
        ("what happened in 2015?", None),
    ],
)
def test_a_year_compared_as_old_or_new_needs_no_other_scope(text: str, wanted: str | None) -> None:
    assert allotments().construct(text).filter == expected(wanted)


@pytest.mark.parametrize(
    ("text", "wanted"),
    [
        # a message that opens on a plural noun and a date word asks for things of that time,
        # even when the schema never names those things
        ("shows in 2026", 'and(gte("aired", "2026-01-01"), lte("aired", "2026-12-31"))'),
        ("gigs since March 2024", 'gte("aired", "2024-03-01")'),
        # a date said in passing still is no filter
        ("what happened in 2026?", None),
        ("my parents met in 2016", None),
    ],
)
def test_a_message_opening_on_things_and_a_date_asks_for_things_of_that_time(
    text: str, wanted: str | None
) -> None:
    fields = (MetadataField(name="aired", type="date", description="Day it first aired"),)
    rules = rules_on(fields, {})
    assert rules.construct(text).filter == expected(wanted)


@pytest.mark.parametrize(
    ("text", "wanted"),
    [
        # "past" and "beyond" before a date are "after" it
        ("courses running past May 2026", 'gt("runs_until", "2026-05-31")'),
        ("courses running beyond 2026", 'gt("runs_until", "2026-12-31")'),
        # "this past May" is the May gone, whichever way the field looks
        (
            "courses running this past May",
            'and(gte("runs_until", "2025-05-01"), lte("runs_until", "2025-05-31"))',
        ),
    ],
)
def test_past_and_beyond_a_date_are_after_it(text: str, wanted: str) -> None:
    fields = (
        MetadataField(name="runs_until", type="date", description="Last day the course runs"),
    )
    rules = rules_on(fields, {})
    assert rules.construct(text).filter == expected(wanted)


def test_a_description_in_the_past_tense_holds_days_gone() -> None:
    # "became available" is a record of a day gone, though "available" looks ahead
    fields = (
        MetadataField(
            name="launch_day", type="date", description="Day the kayak became available to hire"
        ),
    )
    rules = rules_on(fields, {})
    assert rules.construct("kayaks launched after March").filter == expected(
        'gt("launch_day", "2025-03-31")'
    )


@pytest.mark.parametrize(
    ("text", "wanted"),
    [
        # two words only one date field's description has name that field, over a noun
        # sharing another field's first letters ("posters" for ``posted``)
        (
            "posters where offers are accepted until the end of the year",
            'lte("bids_end", "2025-12-31")',
        ),
        # the name said whole still names its own field
        (
            "offers on prints posted this year",
            'and(gte("posted", "2025-01-01"), lte("posted", "2025-12-31"))',
        ),
    ],
)
def test_a_date_field_named_by_its_own_description_words(text: str, wanted: str) -> None:
    fields = (
        MetadataField(name="posted", type="date", description="Day the poster went on sale"),
        MetadataField(
            name="bids_end", type="date", description="Last day offers are accepted for the print"
        ),
    )
    rules = rules_on(fields, {})
    assert rules.construct(text).filter == expected(wanted)


def test_relative_dates_follow_the_injected_clock() -> None:
    constructor = RuleQueryConstructor(SCHEMA, {}, today=lambda: dt.date(2024, 2, 10))

    assert constructor.construct("what changed last year").filter == expected_filter(
        'and(gte("updated", "2023-01-01"), lte("updated", "2023-12-31"))'
    )
    assert constructor.construct("what changed since March").filter == expected_filter(
        'gte("updated", "2023-03-01")'
    )


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
    assert filter_of(FERRY_CROSSINGS, FERRY_CROSSING_VALUES, text) == parse_filter(expected)


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


def test_from_a_day_of_a_record_is_that_day() -> None:
    text = "the Prado exhibition from 12 March 2024"
    expected = 'and(eq("museum", "Prado"), eq("opening", "2024-03-12"))'
    assert filter_of(EXHIBITIONS, EXHIBITION_VALUES, text) == parse_filter(expected)


FLATS = (
    MetadataField(name="district", type="string", description="District of the flat"),
    MetadataField(name="rent", type="float", description="Monthly rent in euros"),
    MetadataField(name="furnished", type="boolean", description="Whether the flat is furnished"),
    MetadataField(
        name="available_from", type="date", description="Date the flat can be moved into"
    ),
)


FLAT_VALUES = {"district": frozenset(["Mitte", "Kreuzberg", "Prenzlauer Berg"])}


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


CONCERTS = (
    MetadataField(name="artist", type="string", description="Who plays"),
    MetadataField(name="concert_date", type="date", description="Day of the concert"),
)


CONCERT_VALUES = {"artist": frozenset(["Nils Frahm", "Anoushka Shankar"])}


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


def test_a_relative_date_kept_from_one_day_is_read_again_the_next() -> None:
    """Readings of a message are kept (a follow-up reads earlier turns again), but "last year"
    said on 1 January means another year than the day before."""
    day = [dt.date(2024, 12, 31)]
    constructor = RuleQueryConstructor(SCHEMA, {}, today=lambda: day[0])
    before_midnight = constructor.construct("what changed last year").filter
    day[0] = dt.date(2025, 1, 1)

    assert before_midnight == expected_filter(
        'and(gte("updated", "2023-01-01"), lte("updated", "2023-12-31"))'
    )
    assert constructor.construct("what changed last year").filter == expected_filter(
        'and(gte("updated", "2024-01-01"), lte("updated", "2024-12-31"))'
    )
