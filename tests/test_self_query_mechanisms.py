"""Each self-query mechanism on schemas that neither the rules nor the benchmark sets use
(hotels, podcasts, courses): what decides is the schema (a field's name, the unit its
description declares, the nouns its descriptions name), so a rule that only knew the phrases of
the tuning sets fails here."""

from __future__ import annotations

import pytest

from rasa_context_retrieval.filters.schema import MetadataField
from rasa_context_retrieval.self_query.rules import RuleQueryConstructor
from tests.self_query_support import expected, rules_on

HOTELS = (
    MetadataField(name="city", type="string", description="City the hotel is in"),
    MetadataField(name="price_per_night", type="float", description="Price of one night in euros"),
    MetadataField(name="stars", type="integer", description="Official star rating from 1 to 5"),
    MetadataField(
        name="has_pool", type="boolean", description="Whether the hotel has a swimming pool"
    ),
    MetadataField(name="pet_friendly", type="boolean", description="Whether pets are allowed"),
)
HOTEL_VALUES = {"city": frozenset(["Paris", "Rome", "Berlin", "Lisbon"])}
PODCASTS = (
    MetadataField(name="genre", type="string", description="Genre of the podcast"),
    MetadataField(
        name="episode_length",
        type="integer",
        description="Average episode length in seconds",
    ),
    MetadataField(name="explicit", type="boolean", description="Whether the podcast is explicit"),
    MetadataField(name="language", type="string", description="Language spoken"),
)
PODCAST_VALUES = {
    "genre": frozenset(["comedy", "true crime", "science", "business"]),
    "language": frozenset(["english", "spanish", "german"]),
}
COURSES = (
    MetadataField(name="subject", type="string", description="Subject of the course"),
    MetadataField(name="duration_hours", type="float", description="Length of the course"),
    MetadataField(name="fee", type="float", description="Fee for the course in dollars"),
    MetadataField(name="is_free", type="boolean", description="Whether the course costs nothing"),
    MetadataField(
        name="accredited", type="boolean", description="Whether the course is accredited"
    ),
)
COURSE_VALUES = {"subject": frozenset(["math", "history", "design"])}


def hotels() -> RuleQueryConstructor:
    return rules_on(HOTELS, HOTEL_VALUES)


def podcasts() -> RuleQueryConstructor:
    return rules_on(PODCASTS, PODCAST_VALUES)


def courses() -> RuleQueryConstructor:
    return rules_on(COURSES, COURSE_VALUES)


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


EVENTS = (
    MetadataField(
        name="family_friendly", type="boolean", description="Whether the event suits children"
    ),
    MetadataField(name="dogs_ok", type="boolean", description="Whether dogs are allowed"),
    MetadataField(name="award", type="boolean", description="Whether the event won a major award"),
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
    ("rules", "text", "wanted"),
    [
        # a field "in seconds": every unit of time converts
        (podcasts, "podcasts shorter than an hour", 'lt("episode_length", 3600)'),
        (podcasts, "episodes under 30 minutes", 'lt("episode_length", 1800)'),
        (podcasts, "episodes less than an hour long", 'lt("episode_length", 3600)'),
        (podcasts, "episodes of half an hour or less", 'lte("episode_length", 1800)'),
        (
            podcasts,
            "episodes between 1 and 2 hours",
            'and(gte("episode_length", 3600), lte("episode_length", 7200))',
        ),
        (podcasts, "episodes longer than 1.5 hours", 'gt("episode_length", 5400)'),
        # a unit in the field's name; a float field keeps fractions
        (courses, "courses shorter than 90 minutes", 'lt("duration_hours", 1.5)'),
        (courses, "courses that take 2 days at most", 'lte("duration_hours", 48)'),
        # what does not convert gives no filter rather than a wrong one
        (podcasts, "episodes under 1.5 seconds", None),
        (podcasts, "episodes longer than 3 months", None),
        (hotels, "hotels under 2 hours from the airport", None),
        (courses, "courses costing over 3 weeks of salary", None),
    ],
)
def test_a_duration_is_converted_to_the_unit_the_field_declares(
    rules: type, text: str, wanted: str | None
) -> None:
    assert rules().construct(text).filter == expected(wanted)


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


def test_a_calendar_year_field_is_no_duration() -> None:
    year = MetadataField(name="year", type="integer", description="The year the film came out")
    rules = rules_on([year], {})
    assert rules.construct("films longer than 2 hours").filter is None
    assert rules.construct("films longer than 2 years").filter is None


@pytest.mark.parametrize(
    ("text", "wanted"),
    [
        ("courses under $1.5k", 'lt("fee", 1500)'),
        ("courses with a fee above 2 thousand dollars", 'gt("fee", 2000)'),
        ("courses costing at most 1 million dollars", 'lte("fee", 1000000)'),
    ],
)
def test_amounts_take_k_thousand_and_million(text: str, wanted: str) -> None:
    assert courses().construct(text).filter == expected(wanted)


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


def test_an_everyday_value_before_a_noun_for_the_documents_is_a_filter() -> None:
    assert podcasts().construct("business podcasts").filter == expected('eq("genre", "business")')
    assert podcasts().construct("how do I run a business?").filter is None


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


INSTRUMENTS = (
    MetadataField(
        name="instrument",
        type="string",
        description="Kind of instrument",
        values=["guitar", "piano", "violin", "drum kit"],
    ),
    MetadataField(name="maker", type="string", description="Who built the instrument"),
    MetadataField(name="price", type="float", description="Price in euros"),
    MetadataField(
        name="refurbished", type="boolean", description="Whether the instrument was refurbished"
    ),
)
INSTRUMENT_VALUES = {"maker": frozenset(["Yamaha", "Fender", "Rangers"])}


def instruments() -> RuleQueryConstructor:
    return rules_on(INSTRUMENTS, INSTRUMENT_VALUES)


@pytest.mark.parametrize(
    ("text", "wanted"),
    [
        # someone's own thing, a possessor, a word inside a longer name: no kind wanted
        ("my guitar keeps going out of tune", None),
        ("how do I tune our piano?", None),
        ("why does a violin's bridge lean?", None),
        ("who won the cup for the Glasgow Rangers?", None),
        # the same values said as what is wanted still filter
        ("a guitar under 300 euros", 'and(eq("instrument", "guitar"), lt("price", 300))'),
        ("violins from Yamaha", 'and(eq("instrument", "violin"), eq("maker", "Yamaha"))'),
        ("Fender guitars", 'and(eq("instrument", "guitar"), eq("maker", "Fender"))'),
        ("Rangers drum kits", 'and(eq("instrument", "drum kit"), eq("maker", "Rangers"))'),
    ],
)
def test_a_value_naming_another_thing_is_no_filter(text: str, wanted: str | None) -> None:
    assert instruments().construct(text).filter == expected(wanted)


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


@pytest.mark.parametrize(
    ("text", "limit"),
    [
        ("tell me more about the first one", None),
        ("what is the best one?", None),
        ("I'd like to hear about the first two bands he joined", None),
        ("the top 3 guitars", 3),
        ("the first 2 results please", 2),
        ("best five under 500 euros", 5),
        # a count asked for with a verb of showing, whatever follows it
        ("show me two second-hand cellos", 2),
        ("refurbished ones under 300 euros, show me three", 3),
        ("give me 4 options", 4),
        ("two suggestions please", 2),
        # not a count of something else, nor a quantity
        ("show me 2 of them", None),
        ("show me 10 minutes of practice tips", None),
    ],
)
def test_a_rank_counts_documents_only(text: str, limit: int | None) -> None:
    assert instruments().construct(text).limit == limit


def test_a_singular_noun_in_s_takes_es_in_the_plural() -> None:
    canvas = (
        MetadataField(name="style", type="string", description="Kind of painting on the canvas"),
        MetadataField(name="width_cm", type="integer", description="Width of the canvas"),
        MetadataField(name="framed", type="boolean", description="Whether the canvas is framed"),
    )
    rules = rules_on(canvas, {"style": ["abstract", "portrait"]})
    assert rules.construct("abstract canvases").filter == expected('eq("style", "abstract")')


WHISKIES = (
    MetadataField(name="age", type="integer", description="Age of the whisky in years"),
    MetadataField(name="bottled", type="integer", description="Year the whisky was bottled"),
    MetadataField(name="tasting_time", type="integer", description="Tasting length in minutes"),
)


@pytest.mark.parametrize(
    ("text", "wanted"),
    [
        # an age kept in years is no calendar year field: "bottled" is the one
        ("whiskies bottled after 2015", 'gt("bottled", 2015)'),
        ("a whisky from 2012", 'eq("bottled", 2012)'),
        # minutes do not convert to an age in years: the duration in minutes is the one
        ("tastings of 30 minutes or less", 'lte("tasting_time", 30)'),
    ],
)
def test_a_field_in_years_is_a_duration_not_a_calendar_year(text: str, wanted: str) -> None:
    rules = rules_on(WHISKIES, {})
    assert rules.construct(text).filter == expected(wanted)


FERRIES = (
    MetadataField(name="port", type="string", description="Port the ferry leaves from"),
    MetadataField(name="sailing", type="date", description="Day the ferry sails"),
    MetadataField(name="seats", type="integer", description="Seats left on the ferry"),
)
FERRY_VALUES = {"port": frozenset(["Split", "Ancona", "Bari"])}


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
    rules = rules_on(FERRIES, FERRY_VALUES)
    said = rules.construct(text)
    assert (said.filter, said.limit) == (expected(wanted), limit)


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


CABINS_TO_RENT = (
    MetadataField(name="sleeps", type="integer", description="Most guests the cabin sleeps"),
    MetadataField(name="bedrooms", type="integer", description="Bedrooms in the cabin"),
    MetadataField(name="price", type="float", description="Price per night in euros"),
)


@pytest.mark.parametrize(
    ("text", "wanted"),
    [
        # a party that must fit goes to the field of the most allowed
        ("a cabin for 6 guests", 'gte("sleeps", 6)'),
        ("cabins for 4 guests under 200 euros", 'and(gte("sleeps", 4), lt("price", 200))'),
        # a field that is no maximum does not take it
        ("a cabin for 3 bedrooms", None),
        ("cabins for 2 nights", None),
    ],
)
def test_a_party_that_must_fit_is_a_lower_bound_on_the_most_allowed(
    text: str, wanted: str | None
) -> None:
    rules = rules_on(CABINS_TO_RENT, {})
    assert rules.construct(text).filter == expected(wanted)


AQUARIUMS = (
    MetadataField(name="volume_l", type="integer", description="Water volume of the tank"),
    MetadataField(name="height_cm", type="integer", description="Height of the tank"),
    MetadataField(name="glass_mm", type="integer", description="Thickness of the glass"),
    MetadataField(name="length_m", type="float", description="Length of the cabinet"),
)


@pytest.mark.parametrize(
    ("text", "wanted"),
    [
        # a unit of measure said in full or written onto the number names the field kept in it
        ("tanks of more than 200 litres", 'gt("volume_l", 200)'),
        ("tanks over 200l", 'gt("volume_l", 200)'),
        ("tanks taller than 60 centimetres", 'gt("height_cm", 60)'),
        ("glass of at least 8mm", 'gte("glass_mm", 8)'),
        ("tanks taller than 60", 'gt("height_cm", 60)'),
        # the letter after an apostrophe is no unit
        ("I'm after tanks over 2", None),
    ],
)
def test_a_unit_of_measure_names_the_field_kept_in_it(text: str, wanted: str | None) -> None:
    rules = rules_on(AQUARIUMS, {})
    assert rules.construct(text).filter == expected(wanted)


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


ROOMS = (
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
    rules = rules_on(ROOMS, {})
    assert rules.construct(text).filter == expected(wanted)


CLIMBING_WALLS = (
    MetadataField(name="min_age", type="integer", description="Youngest climber allowed, in years"),
    MetadataField(name="max_group", type="integer", description="Most people in one group"),
    MetadataField(name="opened", type="integer", description="Year the centre opened"),
)


@pytest.mark.parametrize(
    ("text", "wanted"),
    [
        ("walls for 8 year olds", 'lte("min_age", 8)'),
        ("a wall for 12 people", 'gte("max_group", 12)'),
        ("walls for 6-year-olds", 'lte("min_age", 6)'),
        # a count of people is no youngest age
        ("a wall for 12 climbers", None),
    ],
)
def test_a_party_that_must_fit_bounds_the_least_required_from_above(
    text: str, wanted: str | None
) -> None:
    rules = rules_on(CLIMBING_WALLS, {})
    assert rules.construct(text).filter == expected(wanted)


@pytest.mark.parametrize(
    ("text", "wanted"),
    [
        ("Guitars By Fender", 'and(eq("instrument", "guitar"), eq("maker", "Fender"))'),
        ("Is A Yamaha Piano Worth It", 'and(eq("instrument", "piano"), eq("maker", "Yamaha"))'),
        ("what do the Glasgow Rangers play?", None),
    ],
)
def test_title_case_is_no_longer_name(text: str, wanted: str | None) -> None:
    assert instruments().construct(text).filter == expected(wanted)


def test_a_value_naming_another_thing_stays_so_next_to_other_values() -> None:
    # "guitar" is the user's own even after another value; the maker alone may still scope it
    said = instruments().construct("my Fender guitar hums, what can I do?")
    assert said.filter == expected('eq("maker", "Fender")')
    said = instruments().construct("my guitar and piano need tuning")
    assert said.filter is None
