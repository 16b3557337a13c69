"""Values and kinds: spellings, short forms, initials, glosses written in a field's description,
coordinated values, everyday words that need a cue, aliases, and a value that names another
thing or fits two fields."""

from __future__ import annotations

import pytest

from rasa_context_retrieval.filters.schema import MetadataField
from rasa_context_retrieval.filters.syntax import parse_filter
from rasa_context_retrieval.self_query.rules import RuleQueryConstructor
from tests.self_query_support import (
    BOOKS,
    CAR_VALUES,
    CARS,
    LAKE_CABIN_VALUES,
    LAKE_CABINS,
    expected,
    expected_filter,
    filter_of,
    instruments,
    meant,
    podcasts,
    rules_on,
    said,
)


def test_an_everyday_value_before_a_noun_for_the_documents_is_a_filter() -> None:
    assert podcasts().construct("business podcasts").filter == expected('eq("genre", "business")')
    assert podcasts().construct("how do I run a business?").filter is None


def test_a_singular_noun_in_s_takes_es_in_the_plural() -> None:
    canvas = (
        MetadataField(name="style", type="string", description="Kind of painting on the canvas"),
        MetadataField(name="width_cm", type="integer", description="Width of the canvas"),
        MetadataField(name="framed", type="boolean", description="Whether the canvas is framed"),
    )
    rules = rules_on(canvas, {"style": ["abstract", "portrait"]})
    assert rules.construct("abstract canvases").filter == expected('eq("style", "abstract")')


def test_a_short_form_may_keep_a_one_letter_word_whole() -> None:
    system = MetadataField(
        name="system",
        type="string",
        description="Camera system",
        values=["Hasselblad X", "Hasselblad H"],
    )
    rules = rules_on([system], {})
    assert rules.construct("lenses for the Hassel X").filter == expected(
        'eq("system", "Hasselblad X")'
    )
    assert rules.construct("lenses for the Hassel Z").filter is None


def test_a_value_naming_another_thing_stays_so_next_to_other_values() -> None:
    # "guitar" is the user's own even after another value; the maker alone may still scope it
    said = instruments().construct("my Fender guitar hums, what can I do?")
    assert said.filter == expected('eq("maker", "Fender")')
    said = instruments().construct("my guitar and piano need tuning")
    assert said.filter is None


@pytest.mark.parametrize(
    ("text", "wanted"),
    [
        ("a DS course", 'eq("subject", "data science")'),
        # a plural of initials is written with a small "s": "DSS" is another word
        ("DSS courses", None),
    ],
)
def test_initials_name_a_value_and_a_word_in_capitals_does_not(
    text: str, wanted: str | None
) -> None:
    fields = (MetadataField(name="subject", type="string", description="Subject of the course"),)
    rules = RuleQueryConstructor(fields, {"subject": frozenset(["data science", "history"])})
    assert rules.construct(text).filter == expected(wanted)


def test_values_learned_from_the_index_are_matched_across_spellings() -> None:
    fields = [
        MetadataField(name="tier", type="string"),
        MetadataField(name="region", type="list[string]"),
    ]
    known = {"tier": ["starter", "Enterprise"], "region": ["north-america", "europe"]}
    constructor = RuleQueryConstructor(fields, known)

    assert constructor.construct("pricing, not the enterprise tier").filter == expected_filter(
        'ne("tier", "Enterprise")'
    )
    assert constructor.construct("data centres in North America").filter == expected_filter(
        'eq("region", "north-america")'
    )


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
    assert filter_of(LAKE_CABINS, LAKE_CABIN_VALUES, text) == parse_filter(expected)


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


def test_a_value_of_two_fields_said_without_a_field_name_gives_no_filter() -> None:
    fields = (
        MetadataField(name="category", type="string", values=("tablet", "phone")),
        MetadataField(name="kind", type="string", values=("tablet", "pill")),
    )
    assert RuleQueryConstructor(fields, {}).construct("cheap tablets").filter is None


def test_aliases_are_read_as_their_value() -> None:
    region = MetadataField(
        name="region",
        type="list[string]",
        values=("eu", "us"),
        aliases={"eu": ["Europe", "Germany", "France"], "us": ["United States", "America"]},
    )
    rules = RuleQueryConstructor([region], {})

    said = rules.construct("I live in Germany. Can I get my money back if I cancel?")
    assert said.filter == expected('eq("region", "eu")')
    assert rules.construct("refunds in the United States").filter == expected('eq("region", "us")')
    assert rules.construct("refunds, except in Europe").filter == expected('ne("region", "eu")')


def test_an_alias_of_an_undeclared_value_or_of_two_values_is_refused() -> None:
    with pytest.raises(ValueError, match="not in its `values`"):
        MetadataField(name="region", type="string", values=("eu",), aliases={"apac": ["Japan"]})
    with pytest.raises(ValueError, match="alias of both"):
        MetadataField(name="region", type="string", aliases={"eu": ["EU"], "us": ["eu"]})


def test_aliases_in_the_wrong_shape_fail_at_start_up_with_the_fix() -> None:
    from rasa_context_retrieval.config import ConfigurationError, StoreConfig

    field = {"name": "region", "type": "string", "aliases": ["Germany"]}
    with pytest.raises(ConfigurationError, match=r"metadata_fields\.0\.aliases: `aliases` maps"):
        StoreConfig.from_kwargs({"docs": "docs", "metadata_fields": [field]})


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
