"""Yes/no fields said in words: a field's name or description words in any order, a participle,
a thing had or lacked, welcomed or needed, and the phrasings that are no state of the documents."""

from __future__ import annotations

import pytest

from rasa_context_retrieval.filters.schema import MetadataField
from rasa_context_retrieval.filters.syntax import parse_filter
from rasa_context_retrieval.self_query.rules import RuleQueryConstructor
from tests.self_query_support import (
    FURNITURE,
    FURNITURE_VALUES,
    HOLIDAY_CABIN_VALUES,
    HOLIDAY_CABINS,
    LAKE_CABIN_VALUES,
    LAKE_CABINS,
    WORKSHOP_VALUES,
    WORKSHOPS,
    expected,
    filter_of,
    meant,
    rules_on,
    said,
)


def test_a_participle_that_ends_the_description_is_a_one_word_boolean() -> None:
    audited = MetadataField(
        name="audited", type="boolean", description="Whether the package has been audited"
    )
    language = MetadataField(name="language", type="string", description="The package language")
    rules = RuleQueryConstructor([audited, language], {"language": ["rust", "go"]})
    assert rules.construct("audited rust packages").filter == expected(
        'and(eq("audited", true), eq("language", "rust"))'
    )
    assert rules.construct("unaudited packages").filter == expected('eq("audited", false)')
    said = rules.construct("packages that have been audited")
    assert said.filter == expected('eq("audited", true)')


@pytest.mark.parametrize(
    ("text", "wanted"),
    [
        ("tents with insulation", 'eq("insulated", true)'),
        ("a tent without insulation", 'eq("insulated", false)'),
        ("what insulation do I need for winter?", None),
    ],
)
def test_the_noun_of_a_one_word_name_is_had_or_lacked(text: str, wanted: str | None) -> None:
    tents = (
        MetadataField(name="insulated", type="boolean", description="Whether the tent is lined"),
        MetadataField(name="berths", type="integer", description="Sleeping places in the tent"),
    )
    rules = rules_on(tents, {})
    assert rules.construct(text).filter == expected(wanted)


@pytest.mark.parametrize(
    ("text", "wanted"),
    [
        # a one-word boolean said as a state the documents are in
        ("add-ons that are still in preview", 'eq("preview", true)'),
        ("add-ons that are not in preview", 'eq("preview", false)'),
        # a question's opening is no description of the documents
        ("what is in preview?", None),
    ],
)
def test_a_one_word_boolean_is_a_state_the_documents_are_in(text: str, wanted: str | None) -> None:
    fields = (
        MetadataField(
            name="preview", type="boolean", description="Whether the add-on is not yet stable"
        ),
    )
    assert RuleQueryConstructor(fields, {}).construct(text).filter == expected(wanted)


def test_a_phrase_in_brackets_ending_a_yes_no_description_says_yes() -> None:
    piers = (
        MetadataField(
            name="ramped",
            type="boolean",
            description="Whether a pushchair can get onto the pier without lifting (step free)",
        ),
    )
    assert filter_of(piers, {}, "step-free piers") == parse_filter('eq("ramped", true)')
    assert filter_of(piers, {}, "piers that aren't step free") == parse_filter(
        'eq("ramped", false)'
    )
    assert filter_of(piers, {}, "what is the longest pier?") is None


def test_the_verb_of_an_offered_thing_comes_before_it() -> None:
    # ``materials_included``: "includes materials" says it as well as "materials included".
    text = "a woodcarving workshop that includes materials"
    expected = 'and(eq("craft", "woodcarving"), eq("materials_included", true))'
    assert filter_of(WORKSHOPS, WORKSHOP_VALUES, text) == parse_filter(expected)


@pytest.mark.parametrize(
    ("text", "expected"),
    [
        # A question that opens on a thing the cabins have asks about that thing.
        ("Is the sauna heated in winter?", None),
        ("When is wifi switched off at night?", None),
        # A thing had named as the kind of documents is still asked for.
        ("Are wifi cabins dearer?", 'eq("facilities", "wifi")'),
        # Asked for as something had, it is a filter.
        ("Which cabins have a sauna?", 'eq("facilities", "sauna")'),
        (
            "Is there a cabin with a fireplace on Inari?",
            'and(eq("lake", "Inari"), eq("facilities", "fireplace"))',
        ),
    ],
)
def test_a_question_about_a_thing_had_is_no_filter_on_it(text: str, expected: str | None) -> None:
    found = filter_of(LAKE_CABINS, LAKE_CABIN_VALUES, text)
    assert found == (parse_filter(expected) if expected else None)


PRINTS = (
    MetadataField(
        name="in_catalogue", type="boolean", description="Whether the print can be ordered"
    ),
    MetadataField(
        name="has_gilt_frame", type="boolean", description="Whether a gold-leaf surround is fitted"
    ),
)


@pytest.mark.parametrize(
    ("text", "expected"),
    [
        # an article between the words of a yes/no name, as English says it
        ("prints that are in the catalogue", 'eq("in_catalogue", true)'),
        # the last word of the name in the plural
        ("prints without gilt frames", 'eq("has_gilt_frame", false)'),
    ],
)
def test_a_yes_no_name_said_with_an_article_or_in_the_plural(text: str, expected: str) -> None:
    assert filter_of(PRINTS, {}, text) == parse_filter(expected)


def test_a_name_ending_in_only_is_said_by_its_thing() -> None:
    fields = (
        MetadataField(
            name="trade_account_only",
            type="boolean",
            description="Whether the offer is for business buyers",
        ),
    )
    assert filter_of(fields, {}, "offers open to trade account holders") == parse_filter(
        'eq("trade_account_only", true)'
    )


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
            HOLIDAY_CABINS,
            HOLIDAY_CABIN_VALUES,
            "kid-friendly cabins in Lapland",
            'and(eq("region", "Lapland"), eq("kids_allowed", true))',
        ),
        (HOLIDAY_CABINS, HOLIDAY_CABIN_VALUES, "child friendly cabins", 'eq("kids_allowed", true)'),
        # the thing of "<thing>_included", had by the documents
        (HOLIDAY_CABINS, HOLIDAY_CABIN_VALUES, "cabins with a sauna", 'eq("sauna_included", true)'),
        (
            HOLIDAY_CABINS,
            HOLIDAY_CABIN_VALUES,
            "cabins in Lapland without sauna",
            'and(eq("region", "Lapland"), eq("sauna_included", false))',
        ),
        (HOLIDAY_CABINS, HOLIDAY_CABIN_VALUES, "how hot should a sauna be?", None),
        (
            HOLIDAY_CABINS,
            HOLIDAY_CABIN_VALUES,
            "cabins that are fine with kids",
            'eq("kids_allowed", true)',
        ),
        (
            HOLIDAY_CABINS,
            HOLIDAY_CABIN_VALUES,
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
