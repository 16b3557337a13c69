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
    clinics,
    courses,
    expected,
    filter_of,
    hotels,
    instruments,
    meant,
    podcasts,
    rules_on,
    said,
)


@pytest.mark.parametrize(
    ("rules", "text", "wanted"),
    [
        # a one-word name before a noun for the documents or a value, or after "are"
        (podcasts, "explicit podcasts", 'eq("explicit", true)'),
        (podcasts, "explicit comedy podcasts", 'and(eq("genre", "comedy"), eq("explicit", true))'),
        (podcasts, "podcasts that are explicit", 'eq("explicit", true)'),
        (
            podcasts,
            "a comedy podcast that's explicit",
            'and(eq("genre", "comedy"), eq("explicit", true))',
        ),
        (courses, "free courses", 'eq("is_free", true)'),
        # negated: "not", "non-", "aren't", "without", "with no"
        (podcasts, "non-explicit podcasts", 'eq("explicit", false)'),
        (
            courses,
            "unaccredited design courses",
            'and(eq("subject", "design"), eq("accredited", false))',
        ),
        (
            podcasts,
            "science podcasts that aren't explicit",
            'and(eq("genre", "science"), eq("explicit", false))',
        ),
        (
            courses,
            "history courses that are not free",
            'and(eq("subject", "history"), eq("is_free", false))',
        ),
        # a thing the documents come with: "has_pool" -> "with a pool"
        (hotels, "hotels in Lisbon with a pool", 'and(eq("city", "Lisbon"), eq("has_pool", true))'),
        (hotels, "hotels with no pool", 'eq("has_pool", false)'),
        (hotels, "hotels without a swimming pool", 'eq("has_pool", false)'),
        # a hyphenated two-word name
        (hotels, "pet-friendly hotels", 'eq("pet_friendly", true)'),
        # the same word not describing the documents: no filter
        (podcasts, "Is explicit language a problem?", None),
        (podcasts, "what is explicit?", None),
        (podcasts, "my explicit podcasts got flagged", None),
        (courses, "free advice on design", 'eq("subject", "design")'),
        (hotels, "hotels with pool tables", None),
    ],
)
def test_booleans_come_from_the_field_name_where_it_describes_the_documents(
    rules: type, text: str, wanted: str | None
) -> None:
    assert rules().construct(text).filter == expected(wanted)


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


EVENTS = (
    MetadataField(
        name="family_friendly", type="boolean", description="Whether the event suits children"
    ),
    MetadataField(name="dogs_ok", type="boolean", description="Whether dogs are allowed"),
    MetadataField(name="award", type="boolean", description="Whether the event won a major award"),
)


@pytest.mark.parametrize(
    ("text", "wanted"),
    [
        ("events that suit children", 'eq("family_friendly", true)'),
        ("events that don't suit children", 'eq("family_friendly", false)'),
        ("events that allow dogs", 'eq("dogs_ok", true)'),
        ("events where dogs are not allowed", 'eq("dogs_ok", false)'),
        ("events that won a major award", 'eq("award", true)'),
        ("events that never won a major award", 'eq("award", false)'),
        # the words in separate clauses, or too far apart, say something else
        ("my dogs, as you know, are allowed on the sofa", None),
        ("a major festival where children can see who won an award", None),
    ],
)
def test_booleans_come_from_the_description_words_in_any_order(
    text: str, wanted: str | None
) -> None:
    rules = rules_on(EVENTS, {})
    assert rules.construct(text).filter == expected(wanted)


@pytest.mark.parametrize(
    ("text", "wanted"),
    [
        ("can an old amp be refurbished to sound new?", None),
        ("pianos that are refurbished", 'and(eq("instrument", "piano"), eq("refurbished", true))'),
        ("refurbished violins", 'and(eq("instrument", "violin"), eq("refurbished", true))'),
    ],
)
def test_a_participle_with_the_object_of_its_verb_is_no_state(
    text: str, wanted: str | None
) -> None:
    assert instruments().construct(text).filter == expected(wanted)


STUDIOS = (
    MetadataField(name="room", type="string", description="Kind of studio room"),
    MetadataField(
        name="deposit_required", type="boolean", description="Whether a deposit is taken"
    ),
)


@pytest.mark.parametrize(
    ("text", "wanted"),
    [
        ("studios that need a deposit", 'eq("deposit_required", true)'),
        ("studios requiring a deposit", 'eq("deposit_required", true)'),
        ("studios without a deposit", 'eq("deposit_required", false)'),
        ("a studio that doesn't need a deposit", 'eq("deposit_required", false)'),
        ("no deposit needed", 'eq("deposit_required", false)'),
        ("deposit-free studios", 'eq("deposit_required", false)'),
        # the user's own need is a question, not a filter
        ("do I need a deposit to book?", None),
    ],
)
def test_a_required_thing_is_said_needed_or_denied(text: str, wanted: str | None) -> None:
    rules = rules_on(STUDIOS, {})
    assert rules.construct(text).filter == expected(wanted)


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


HOTEL_ROOMS = (
    MetadataField(
        name="family_safe", type="boolean", description="Whether the room is safe for kids and pets"
    ),
    MetadataField(name="heated", type="boolean", description="Whether the pool is warmed outdoors"),
    MetadataField(name="floor", type="integer", description="Floor of the room"),
)


@pytest.mark.parametrize(
    ("text", "wanted"),
    [
        # each thing of "safe for kids and pets" says the field
        ("rooms that are safe for pets", 'eq("family_safe", true)'),
        ("rooms safe for kids", 'eq("family_safe", true)'),
        # an adverb of place is no word the user must repeat
        ("a pool that is warmed", 'eq("heated", true)'),
        ("how warm is the sea in June?", None),
    ],
)
def test_welcomed_things_and_setting_adverbs(text: str, wanted: str | None) -> None:
    rules = rules_on(HOTEL_ROOMS, {})
    assert rules.construct(text).filter == expected(wanted)


HEATING = (
    MetadataField(
        name="fuel", type="string", description="What the deal supplies", values=["gas", "oil"]
    ),
    MetadataField(
        name="offset",
        type="boolean",
        description="Whether all the gas on the deal is carbon offset by the supplier",
    ),
)


@pytest.mark.parametrize(
    ("text", "wanted"),
    [
        ("gas deals", 'eq("fuel", "gas")'),
        # a value qualified by another word of a yes/no field's description is that field's
        # subject ("offset gas"), not a value asked for
        ("deals with carbon offset gas", 'eq("offset", true)'),
    ],
)
def test_a_value_qualified_as_a_boolean_describes_it_is_no_value(
    text: str, wanted: str | None
) -> None:
    rules = rules_on(HEATING, {})
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


@pytest.mark.parametrize(
    ("text", "wanted"),
    [
        # a question that opens on a thing the documents have asks about it
        ("When does the grooming start at weekends?", None),
        ("What time does the last boarding slot end?", None),
        # asked as what the documents must have, it is still a filter
        ("which clinics do boarding?", 'eq("services", "boarding")'),
    ],
)
def test_a_question_opening_on_a_thing_had_asks_about_it(text: str, wanted: str | None) -> None:
    assert clinics().construct(text).filter == expected(wanted)


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
