"""The user's own story is no filter, a wish is: what the user did, owns or counted stays out of
the filter, while a wish said in the perfect or after a story still filters."""

from __future__ import annotations

import pytest

from rasa_context_retrieval.filters.schema import MetadataField
from rasa_context_retrieval.filters.syntax import parse_filter
from tests.self_query_support import (
    FERRY_CROSSING_VALUES,
    FERRY_CROSSINGS,
    HOLIDAY_CABIN_VALUES,
    HOLIDAY_CABINS,
    atoms,
    clinics,
    expected,
    filter_of,
    hotels,
    meant,
    podcasts,
    rules_on,
)


@pytest.mark.parametrize(
    ("text", "wanted", "limit"),
    [
        ("I listened to a comedy podcast yesterday, what else is good?", None, None),
        ("we stayed at a 4-star hotel in Rome last year, where next?", None, None),
        ("I heard two science podcasts this morning", None, None),
        # present wishes by the first person still filter
        ("I need spanish podcasts", 'eq("language", "spanish")', None),
        ("I am interested in comedy podcasts", 'eq("genre", "comedy")', None),
        ("we listened to comedy, now show me 3 science podcasts", 'eq("genre", "science")', 3),
    ],
)
def test_the_users_own_past_is_no_filter(text: str, wanted: str | None, limit: int | None) -> None:
    rules = hotels() if "hotel" in text else podcasts()
    said = rules.construct(text)
    assert (said.filter, said.limit) == (expected(wanted), limit)


FERRY_SEATS = (
    MetadataField(name="port", type="string", description="Port the ferry leaves from"),
    MetadataField(name="sailing", type="date", description="Day the ferry sails"),
    MetadataField(name="seats", type="integer", description="Seats left on the ferry"),
)


FERRY_SEAT_VALUES = {"port": frozenset(["Split", "Ancona", "Bari"])}


@pytest.mark.parametrize(
    ("text", "wanted", "limit"),
    [
        # a name in lowercase where a verb goes is that verb
        ("can we split the fare?", None, None),
        ("should I split the trip in two?", None, None),
        ("ferries from split", 'eq("port", "Split")', None),
        ("ferries leaving Split", 'eq("port", "Split")', None),
        # a count after a preposition is part of the question, not a number of results
        ("how do I share a cabin between two ferries?", None, None),
        ("two ferries from Bari", 'eq("port", "Bari")', 2),
        # "from" a month, for things that take place, is from then on
        ("ferries from July", 'gte("sailing", "2025-07-01")', None),
        # more of the user's own past
        ("I caught a ferry from Ancona in May, which ones go further?", None, None),
    ],
)
def test_words_that_are_no_wish(text: str, wanted: str | None, limit: int | None) -> None:
    rules = rules_on(FERRY_SEATS, FERRY_SEAT_VALUES)
    said = rules.construct(text)
    assert (said.filter, said.limit) == (expected(wanted), limit)


@pytest.mark.parametrize(
    "text",
    [
        # a count with a unit after it is a quantity, and "my first" the user's own
        "I did my first 10 km walk with a surgeon's dog",
        "the first 5 km of the walk to the clinic",
        # the user's story in the perfect is no date filter
        "I've had my dog inspected since 2019, is that enough?",
    ],
)
def test_the_users_own_numbers_and_story_are_no_filter(text: str) -> None:
    said = clinics().construct(text)
    assert (said.filter, said.limit) == (None, None)


@pytest.mark.parametrize(
    "text",
    [
        # The mention is the subject of a past state the user had.
        "Yesterday Kiel was fully booked for us, so what do the fares include?",
        # A story of the user's own thing, its past verb after "my".
        "My bag got soaked on the crossing to Bergen. Who pays for that?",
        # The point inside a number does not end the clause of "I paid".
        "I paid 1,250 for my crossing to Tallinn. Is that a lot?",
        # A story in the perfect: "I've been" something somewhere.
        "I've been a regular on the Kiel route for years and the cabins are always cold.",
        # The place of the user's own thing, and what happened to it.
        "our camper van at Bergen got towed this morning",
    ],
)
def test_the_users_own_past_story_is_no_filter(text: str) -> None:
    assert filter_of(FERRY_CROSSINGS, FERRY_CROSSING_VALUES, text) is None


@pytest.mark.parametrize(
    ("text", "expected"),
    [
        # "I've been looking for" is a wish, not a story
        ("I've been looking for crossings to Oslo", 'eq("port", "Oslo")'),
        # the user's own thing named by the value, no place said: still its scope
        ("my Kiel booking got changed, which crossings are left?", 'eq("port", "Kiel")'),
    ],
)
def test_a_wish_in_the_perfect_or_about_ones_own_thing_still_filters(
    text: str, expected: str
) -> None:
    assert filter_of(FERRY_CROSSINGS, FERRY_CROSSING_VALUES, text) == parse_filter(expected)


def test_a_wish_after_a_past_story_still_filters() -> None:
    text = "The ferry to Kiel was late for me last time. Show me crossings to Oslo"
    assert filter_of(FERRY_CROSSINGS, FERRY_CROSSING_VALUES, text) == parse_filter(
        'eq("port", "Oslo")'
    )


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
    constructed = rules_on(HOLIDAY_CABINS, HOLIDAY_CABIN_VALUES).construct(text)
    assert (atoms(constructed.filter), constructed.limit) == (meant(wanted), limit)
