"""Self-query rules read from the schema, on made-up schemas (ferry crossings, museum
exhibitions, e-scooters) that no benchmark set uses: day spans, glosses of values written in a
field's description, and the other mechanisms that turn a schema's own words into filters."""

from __future__ import annotations

import pytest
from langchain_core.structured_query import FilterDirective

from rasa_context_retrieval.filters.schema import MetadataField
from rasa_context_retrieval.filters.syntax import parse_filter
from tests.self_query_support import rules_on

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


def filter_of(
    fields: tuple[MetadataField, ...], values: dict[str, frozenset[str]], text: str
) -> FilterDirective | None:
    return rules_on(fields, values).construct(text).filter


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
    found = rules_on(FERRIES, FERRY_VALUES).construct("three ferries to Oslo")
    assert found.limit == 3
    assert found.filter == parse_filter('eq("port", "Oslo")')


SCOOTERS = (
    MetadataField(name="zone", type="string", description="Zone the scooter is parked in"),
    MetadataField(
        name="seats",
        type="integer",
        description="Number of seats besides the rider's (0 for a solo scooter)",
    ),
    MetadataField(
        name="docked",
        type="boolean",
        description="False while the scooter is still roaming, true once it is locked to a dock",
    ),
    MetadataField(
        name="battery_class",
        type="integer",
        description="Battery class from 1 (short range) to 3 (long range)",
    ),
    MetadataField(
        name="pedals",
        type="boolean",
        description="Whether it can be pedalled (false = throttle only)",
    ),
)
SCOOTER_VALUES = {"zone": frozenset(["Harbour", "Old Town", "Campus"])}


@pytest.mark.parametrize(
    ("text", "expected"),
    [
        # "(0 for a solo scooter)": the documents' noun is not part of the gloss.
        ("solo scooters in the Old Town", 'and(eq("zone", "Old Town"), eq("seats", 0))'),
        ("scooters that are not solo", 'ne("seats", 0)'),
        # "False while the scooter is still roaming": the state said of the subject.
        ("roaming scooters on Campus", 'and(eq("zone", "Campus"), eq("docked", false))'),
        ("scooters that are still roaming", 'eq("docked", false)'),
        # "from 1 (short range) to 3 (long range)": a phrase of two words counts anywhere.
        ("something long-range please", 'eq("battery_class", 3)'),
        # "(false = throttle only)"
        ("throttle only scooters", 'eq("pedals", false)'),
    ],
)
def test_a_value_glossed_in_the_description_is_a_filter(text: str, expected: str) -> None:
    assert filter_of(SCOOTERS, SCOOTER_VALUES, text) == parse_filter(expected)


@pytest.mark.parametrize(
    "text",
    [
        "I went solo last summer, is that safe?",  # one everyday word, not about the scooters
        "how do I report a roaming dog?",
        "I rode a solo scooter in the Harbour and got a fine",  # the user's own past
    ],
)
def test_a_one_word_gloss_said_of_something_else_is_no_filter(text: str) -> None:
    assert filter_of(SCOOTERS, SCOOTER_VALUES, text) is None


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


def test_a_gloss_written_as_a_noun_counts_in_the_plural() -> None:
    # "(0 for a studio)": "studios" names the kind of flat wanted; the singular alone does not.
    flats = (
        MetadataField(name="bedrooms", type="integer", description="Bedrooms (0 for a studio)"),
    )
    assert filter_of(flats, {}, "any studios near the park?") == parse_filter('eq("bedrooms", 0)')
    assert filter_of(flats, {}, "is a studio worth it?") is None


GYMS = (
    MetadataField(
        name="plan",
        type="string",
        description="How the membership is paid",
        values=["fixed", "rolling"],
    ),
    MetadataField(
        name="commitment_months",
        type="integer",
        description="Months the member signs up for (0 when the membership has no fixed term)",
    ),
)


@pytest.mark.parametrize(
    ("text", "expected"),
    [
        # "(0 when the membership has no fixed term)": what the subject has is the gloss, and
        # the value "fixed" inside it is no value of its own
        ("memberships with no fixed term", 'eq("commitment_months", 0)'),
        ("fixed memberships", 'eq("plan", "fixed")'),
        ("rolling memberships", 'eq("plan", "rolling")'),
    ],
)
def test_a_gloss_of_several_words_takes_its_words_before_a_value(text: str, expected: str) -> None:
    assert filter_of(GYMS, {}, text) == parse_filter(expected)


WORKSHOPS = (
    MetadataField(name="craft", type="string", description="Craft taught at the workshop"),
    MetadataField(name="length_minutes", type="integer", description="Length in minutes"),
    MetadataField(
        name="materials_included", type="boolean", description="Whether materials come with it"
    ),
    MetadataField(
        name="languages",
        type="list[string]",
        description="Languages the workshop is offered in",
        values=["Dutch", "English", "Italian"],
    ),
)
WORKSHOP_VALUES = {"craft": frozenset(["pottery", "weaving", "woodcarving"])}


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


def test_the_verb_of_an_offered_thing_comes_before_it() -> None:
    # ``materials_included``: "includes materials" says it as well as "materials included".
    text = "a woodcarving workshop that includes materials"
    expected = 'and(eq("craft", "woodcarving"), eq("materials_included", true))'
    assert filter_of(WORKSHOPS, WORKSHOP_VALUES, text) == parse_filter(expected)


def test_not_followed_by_an_adjective_and_preposition_negates_the_value() -> None:
    text = "workshops not offered in Dutch, or not available in Italian"
    assert filter_of(WORKSHOPS, WORKSHOP_VALUES, "workshops not available in Italian") == (
        parse_filter('ne("languages", "Italian")')
    )
    assert filter_of(WORKSHOPS, WORKSHOP_VALUES, text) == parse_filter(
        'nin("languages", ["Dutch", "Italian"])'
    )


CABINS = (
    MetadataField(name="lake", type="string", description="Lake the cabin is on"),
    MetadataField(
        name="facilities",
        type="list[string]",
        description="What the cabin has",
        values=["sauna", "fireplace", "jetty", "wifi"],
    ),
)
CABIN_VALUES = {"lake": frozenset(["Saimaa", "Inari"])}


@pytest.mark.parametrize(
    ("text", "expected"),
    [
        # A cabin lists several facilities: "and" wants each of them, "or" any.
        (
            "a cabin with a sauna and a fireplace",
            'and(eq("facilities", "sauna"), eq("facilities", "fireplace"))',
        ),
        (
            "one that has a sauna, jetty and wifi",
            'and(eq("facilities", "sauna"), eq("facilities", "jetty"), eq("facilities", "wifi"))',
        ),
        ("a cabin with a sauna or a fireplace", 'in("facilities", ["sauna", "fireplace"])'),
        # A string field holds one value: "Saimaa and Inari" can only mean either; and values
        # not said as things had are where the user looks, any of them.
        ("cabins on Saimaa and Inari", 'in("lake", ["Saimaa", "Inari"])'),
        ("tips on sauna and fireplace cabins", 'in("facilities", ["sauna", "fireplace"])'),
        ("a jetty but no wifi", 'and(eq("facilities", "jetty"), ne("facilities", "wifi"))'),
    ],
)
def test_things_had_joined_by_and_must_each_be_there(text: str, expected: str) -> None:
    assert filter_of(CABINS, CABIN_VALUES, text) == parse_filter(expected)


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
    assert filter_of(FERRIES, FERRY_VALUES, text) is None


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
    assert filter_of(FERRIES, FERRY_VALUES, text) == parse_filter(expected)


def test_a_wish_after_a_past_story_still_filters() -> None:
    text = "The ferry to Kiel was late for me last time. Show me crossings to Oslo"
    assert filter_of(FERRIES, FERRY_VALUES, text) == parse_filter('eq("port", "Oslo")')


def test_a_gloss_capitalised_mid_sentence_is_part_of_a_name() -> None:
    flats = (
        MetadataField(name="bedrooms", type="integer", description="Bedrooms (0 for a studio)"),
    )
    assert filter_of(flats, {}, "What do Ghibli Studios films cost to make?") is None
    assert filter_of(flats, {}, "Studios near the park?") == parse_filter('eq("bedrooms", 0)')


def test_the_noun_a_description_is_about_anchors_an_everyday_value() -> None:
    trains = (
        MetadataField(
            name="carriage",
            type="string",
            description="Comfort class of the seat",
            values=["standard", "first"],
        ),
    )
    assert filter_of(trains, {}, "a first class seat to Leeds") == parse_filter(
        'eq("carriage", "first")'
    )
    assert filter_of(trains, {}, "standard class please") == parse_filter(
        'eq("carriage", "standard")'
    )
    assert filter_of(trains, {}, "what is standard for luggage?") is None


def test_the_nouns_a_kind_is_a_kind_of_anchor_an_everyday_value() -> None:
    # "Kind of phone contract": "home phone", "a work contract" name the field after the value
    contracts = (
        MetadataField(
            name="plan",
            type="string",
            description="Kind of phone contract",
            values=["home", "work", "free"],
        ),
    )
    assert filter_of(contracts, {}, "home phone deals") == parse_filter('eq("plan", "home")')
    assert filter_of(contracts, {}, "anything but a work contract") == parse_filter(
        'ne("plan", "work")'
    )
    assert filter_of(contracts, {}, "I work from home, which deals?") is None


TRAILS = (
    MetadataField(
        name="grade",
        type="string",
        description="Difficulty grade of the trail",
        values=["easy", "hard", "alpine"],
    ),
    MetadataField(name="region", type="string", description="Region the trail is in"),
)
TRAIL_VALUES = {"region": frozenset(["Dolomites", "Tatra"])}


@pytest.mark.parametrize(
    ("text", "expected"),
    [
        # "hard" is among the commonest English words: bare, it is not the grade.
        ("is it hard to get a permit in the Tatra?", 'eq("region", "Tatra")'),
        ("how hard is the weather up there?", None),
        # With its field's name or a noun for the documents after it, it is.
        (
            "hard grade trails in the Dolomites",
            'and(eq("grade", "hard"), eq("region", "Dolomites"))',
        ),
        ("any hard trails?", 'eq("grade", "hard")'),
        # A rarer word stays a filter where it is said.
        ("something alpine please", 'eq("grade", "alpine")'),
    ],
)
def test_the_commonest_words_need_a_cue_to_be_a_value(text: str, expected: str | None) -> None:
    found = filter_of(TRAILS, TRAIL_VALUES, text)
    assert found == (parse_filter(expected) if expected else None)


BOATS = (
    MetadataField(
        name="hull_type",
        type="string",
        description="Hull material",
        values=["wooden", "fibreglass", "steel"],
    ),
    MetadataField(name="berth", type="string", description="Marina the boat lies in"),
)
BOAT_VALUES = {"berth": frozenset(["Kiel", "Aarhus"])}


@pytest.mark.parametrize(
    ("text", "expected"),
    [
        # ``hull_type`` is a kind of hull, not of boat: its values count as plain values.
        ("wooden boats in Kiel", 'and(eq("hull_type", "wooden"), eq("berth", "Kiel"))'),
        ("anything except fibreglass", 'ne("hull_type", "fibreglass")'),
        # A lowercase value written inside a longer capitalised name is that name.
        ("how did the Steel Workers Union start?", None),
    ],
)
def test_a_kind_of_something_else_is_a_plain_value(text: str, expected: str | None) -> None:
    found = filter_of(BOATS, BOAT_VALUES, text)
    assert found == (parse_filter(expected) if expected else None)


def test_grand_and_quid_are_money() -> None:
    ferries = rules_on(FERRIES, FERRY_VALUES)
    assert ferries.construct("crossings to Oslo under 2 grand").filter == parse_filter(
        'and(eq("port", "Oslo"), lt("fare", 2000))'
    )
    assert ferries.construct("a fare of at most 90 quid").filter == parse_filter('lte("fare", 90)')


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
    found = filter_of(CABINS, CABIN_VALUES, text)
    assert found == (parse_filter(expected) if expected else None)


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
    found = filter_of(FERRIES, FERRY_VALUES, text)
    assert found == (parse_filter(expected) if expected else None)


def test_a_count_before_a_singular_field_name_used_as_a_modifier_is_its_value() -> None:
    fields = (
        MetadataField(name="gpus", type="integer", description="Number of graphics cards"),
        MetadataField(name="price", type="float", description="Price per hour in USD"),
    )
    assert filter_of(fields, {}, "4 GPU servers") == parse_filter('eq("gpus", 4)')
    # the singular joined to nothing ("with 1 GPU") is the grammatical singular, not a name
    assert filter_of(fields, {}, "servers with 1 GPU") is None


SCANNERS = (
    MetadataField(name="model", type="string", description="Scanner model"),
    MetadataField(name="firmware", type="string", description="Firmware release the note is for"),
    MetadataField(name="size_mb", type="float", description="Download size in MB"),
)
SCANNER_VALUES = {
    "model": frozenset(["Fujitsu X500", "Canon R40", "Epson Workforce"]),
    "firmware": frozenset(["2.0.3", "2.1.0", "3.0.1"]),
}


@pytest.mark.parametrize(
    ("text", "expected"),
    [
        # a code of letters and digits names the one value it is part of
        ("manuals for the X500", 'eq("model", "Fujitsu X500")'),
        ("X500 or R40 scanners", 'in("model", ["Fujitsu X500", "Canon R40"])'),
        # a release number of three parts is a value, not an amount
        ("what changed in 2.1.0?", 'eq("firmware", "2.1.0")'),
        ("fixes in 2.0.3 or 3.0.1", 'in("firmware", ["2.0.3", "3.0.1"])'),
        # inside a longer number it is not said
        ("fixes in 2.1.0.4", None),
    ],
)
def test_codes_and_release_numbers_name_their_values(text: str, expected: str | None) -> None:
    found = filter_of(SCANNERS, SCANNER_VALUES, text)
    assert found == (parse_filter(expected) if expected else None)


def test_a_field_name_inside_another_value_does_not_anchor_the_next_word() -> None:
    fields = (
        MetadataField(name="grant", type="string", description="Grant or fund the page is about"),
        MetadataField(
            name="page_kind",
            type="string",
            description="Kind of help page",
            values=["deadlines", "eligibility"],
        ),
    )
    values = {"grant": frozenset(["Arts Grant", "Travel Fund Deadline"])}
    # "Grant" ends the value said; it is not the field ``grant`` named before "deadline"
    assert filter_of(fields, values, "Arts Grant deadline dates") == parse_filter(
        'eq("grant", "Arts Grant")'
    )


CLIMBING = (
    MetadataField(
        name="session_type",
        type="string",
        description="Kind of session",
        values=["bouldering", "top rope", "lead climbing", "kids club"],
    ),
    MetadataField(name="coach", type="string", description="Coach running the session"),
    MetadataField(name="wall", type="string", description="Centre the session is held at"),
)
CLIMBING_VALUES = {"coach": frozenset(["Ana Ruiz", "Ben Cole"]), "wall": frozenset(["Docklands"])}


@pytest.mark.parametrize(
    ("text", "expected"),
    [
        # a message that opens on a kind and goes on with a condition asks for that kind
        (
            "bouldering with Ana Ruiz",
            'and(eq("session_type", "bouldering"), eq("coach", "Ana Ruiz"))',
        ),
        ("top rope for beginners", 'eq("session_type", "top rope")'),
        (
            "bouldering sessions not at Docklands",
            'and(eq("session_type", "bouldering"), ne("wall", "Docklands"))',
        ),
        # kinds set apart from what is wanted are kinds
        ("anything except lead climbing", 'ne("session_type", "lead climbing")'),
        # opening on a kind said of something ("... is", "... of") is no such query
        ("bouldering is hard on the fingers", None),
        ("history of bouldering", None),
    ],
)
def test_a_message_opening_on_a_kind_asks_for_it(text: str, expected: str | None) -> None:
    found = filter_of(CLIMBING, CLIMBING_VALUES, text)
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
