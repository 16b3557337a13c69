"""Negation: a negation governs the value it is said of, and an unclear one gives no filter,
never the opposite."""

from __future__ import annotations

import pytest

from rasa_context_retrieval.filters.syntax import parse_filter
from tests.self_query_support import (
    WORKSHOP_VALUES,
    WORKSHOPS,
    clinics,
    expected,
    filter_of,
    hotels,
    podcasts,
)


@pytest.mark.parametrize(
    ("text", "wanted"),
    [
        ("hotels outside Berlin", 'ne("city", "Berlin")'),
        ("hotels outside of Paris or Rome", 'nin("city", ["Paris", "Rome"])'),
        ("anything but comedy podcasts", 'ne("genre", "comedy")'),
        ("podcasts in any language but english", 'ne("language", "english")'),
        ("podcasts other than true crime", 'ne("genre", "true crime")'),
        ("everything except business podcasts", 'ne("genre", "business")'),
        ("podcasts excluding spanish ones", 'ne("language", "spanish")'),
        ("podcasts not recorded in german", 'ne("language", "german")'),
        ("I didn't enjoy true crime, what else?", 'ne("genre", "true crime")'),
        # a verb between the negator and the value: a question about the value, never its opposite
        (
            "comedy podcasts not working in german",
            'and(eq("genre", "comedy"), eq("language", "german"))',
        ),
    ],
)
def test_negation_words_bind_to_the_value_after_them(text: str, wanted: str) -> None:
    rules = hotels() if "hotel" in text else podcasts()
    assert rules.construct(text).filter == expected(wanted)


@pytest.mark.parametrize(
    "text",
    [
        # the user's own situation, negated: neither the value nor its opposite
        "I don't live in Leeds any more",
        # a negation far from the value in its clause: unclear, so no filter rather than eq
        "clinics that do not seem to ever really offer grooming",
        # a negation outside a clause that describes the documents may be about the user
        "why can't I find a clinic in Leeds?",
        "not sure about a dermatologist",
        "never been to York, any clinics there?",
    ],
)
def test_an_unclear_negation_gives_no_filter_never_the_opposite(text: str) -> None:
    assert clinics().construct(text).filter is None


def test_not_followed_by_an_adjective_and_preposition_negates_the_value() -> None:
    text = "workshops not offered in Dutch, or not available in Italian"
    assert filter_of(WORKSHOPS, WORKSHOP_VALUES, "workshops not available in Italian") == (
        parse_filter('ne("languages", "Italian")')
    )
    assert filter_of(WORKSHOPS, WORKSHOP_VALUES, text) == parse_filter(
        'nin("languages", ["Dutch", "Italian"])'
    )
