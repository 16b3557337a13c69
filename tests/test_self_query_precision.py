"""A wrong filter hides the documents the user asked for, so the rules are built to make none:
a negation is never read as its opposite, a month without a year goes the way its date field
looks, and a number with a unit goes only to a field of that unit. Made-up schemas (pet
clinics, market stalls, allotments) that no rule and no benchmark set uses."""

from __future__ import annotations

import pytest

from rasa_context_retrieval.filters.schema import MetadataField
from rasa_context_retrieval.self_query.rules import RuleQueryConstructor
from tests.self_query_support import expected, rules_on

CLINICS = (
    MetadataField(name="city", type="string", description="Town the clinic is in"),
    MetadataField(name="specialism", type="string", description="What the vet specialises in"),
    MetadataField(
        name="services",
        type="list[string]",
        description="Services the clinic offers",
        values=["grooming", "boarding", "microchipping", "hydrotherapy"],
    ),
    MetadataField(
        name="open_sundays", type="boolean", description="Whether the clinic opens on Sundays"
    ),
    MetadataField(name="inspected", type="date", description="Day the clinic was last inspected"),
)
CLINIC_VALUES = {
    "city": frozenset(["Leeds", "York", "Hull"]),
    "specialism": frozenset(["surgeon", "dermatologist", "nutritionist"]),
}
STALLS = (
    MetadataField(name="produce", type="string", description="What the stall sells"),
    MetadataField(
        name="pitch_fee_gbp", type="float", description="Weekly pitch fee of the stall in GBP"
    ),
    MetadataField(
        name="organic_share", type="float", description="Share of organic stock in percent"
    ),
    MetadataField(name="lease_ends", type="date", description="Last day the lease can run"),
    MetadataField(name="listed", type="date", description="Day the stall was added"),
)
STALL_VALUES = {"produce": frozenset(["cheese", "bread", "flowers"])}
ALLOTMENTS = (
    MetadataField(name="size_m2", type="float", description="Plot size in square metres"),
    MetadataField(name="rent", type="float", description="Yearly rent in pounds"),
    MetadataField(name="waiting_months", type="integer", description="Months on the waiting list"),
    MetadataField(
        name="first_let_year", type="integer", description="Year the plot was first let out"
    ),
    MetadataField(name="reviewed", type="date", description="Day the listing was reviewed"),
)


def clinics() -> RuleQueryConstructor:
    return rules_on(CLINICS, CLINIC_VALUES)


def stalls() -> RuleQueryConstructor:
    return rules_on(STALLS, STALL_VALUES)


def allotments() -> RuleQueryConstructor:
    return rules_on(ALLOTMENTS, {})


@pytest.mark.parametrize(
    ("text", "wanted"),
    [
        # "anything / anyone / anywhere but X" never filters on X
        ("anyone but a surgeon", 'ne("specialism", "surgeon")'),
        ("a vet anywhere but Leeds", 'ne("city", "Leeds")'),
        (
            "anyone but a surgeon, open on Sundays",
            'and(ne("specialism", "surgeon"), eq("open_sundays", true))',
        ),
        # a negated verb of having: the value is what the documents must not have
        ("clinics that don't offer grooming", 'ne("services", "grooming")'),
        (
            "clinics that do not do boarding or hydrotherapy",
            'nin("services", ["boarding", "hydrotherapy"])',
        ),
        ("clinics that aren't open on Sundays", 'eq("open_sundays", false)'),
        # "but" as a plain conjunction keeps what follows positive
        (
            "not a surgeon but a dermatologist",
            'and(eq("specialism", "dermatologist"), ne("specialism", "surgeon"))',
        ),
        ("cheap but good clinics in Hull", 'eq("city", "Hull")'),
        # a negated verb of functioning reports a problem where the value is
        ("booking is not working for York", 'eq("city", "York")'),
    ],
)
def test_a_negation_governs_the_value_it_is_said_of(text: str, wanted: str) -> None:
    assert clinics().construct(text).filter == expected(wanted)


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


@pytest.mark.parametrize(
    ("text", "wanted"),
    [
        # a date of something that ends looks ahead, even when its description says "Last day"
        ("stalls whose lease ends after August", 'gt("lease_ends", "2025-08-31")'),
        ("stalls added after August", 'gt("listed", "2024-08-31")'),
    ],
)
def test_a_month_without_a_year_goes_the_way_its_field_looks(text: str, wanted: str) -> None:
    assert stalls().construct(text).filter == expected(wanted)


def test_a_month_said_about_a_place_is_no_date_of_records() -> None:
    said = clinics().construct("Is York very busy in August?")
    assert said.filter == expected('eq("city", "York")')


@pytest.mark.parametrize(
    ("text", "wanted"),
    [
        # a number in % goes only to a rate field, one in a currency only to a money field
        ("stalls with more than 30% organic stock", 'gt("organic_share", 30)'),
        ("stalls with a pitch fee under £40", 'lt("pitch_fee_gbp", 40)'),
        (
            "cheese stalls paying more than 8%",
            'and(eq("produce", "cheese"), gt("organic_share", 8))',
        ),
    ],
)
def test_a_number_with_a_unit_goes_to_a_field_of_that_unit(text: str, wanted: str) -> None:
    assert stalls().construct(text).filter == expected(wanted)


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


def test_a_year_goes_to_the_field_whose_description_says_the_verb() -> None:
    said = allotments().construct("plots that were first let out in 2019")
    assert said.filter == expected('eq("first_let_year", 2019)')


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


COVERS = (
    MetadataField(
        name="cover_type",
        type="string",
        description="Kind of cover",
        values=["loose cover", "fitted cover", "stretch cover"],
    ),
    MetadataField(
        name="fits",
        type="list[string]",
        description="Furniture the cover is made for",
        values=["sofa", "armchair", "footstool"],
    ),
)


@pytest.mark.parametrize(
    ("text", "wanted"),
    [
        # the head noun said once stands for each value joined before it
        ("loose or fitted covers", 'in("cover_type", ["loose cover", "fitted cover"])'),
        (
            "stretch, loose or fitted covers",
            'in("cover_type", ["stretch cover", "loose cover", "fitted cover"])',
        ),
        # a word that makes no value with the head noun is no value
        ("blue or fitted covers", 'eq("cover_type", "fitted cover")'),
        # "both ... and ..." asks for each value of a list field, plain "and" for any
        (
            "covers that fit both the sofa and the armchair",
            'and(eq("fits", "sofa"), eq("fits", "armchair"))',
        ),
        ("covers for the sofa and the armchair", 'in("fits", ["sofa", "armchair"])'),
    ],
)
def test_coordinated_values_share_a_head_noun_and_both_means_each(text: str, wanted: str) -> None:
    rules = rules_on(COVERS, {})
    assert rules.construct(text).filter == expected(wanted)


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


STORAGE = (
    MetadataField(name="storage_gb", type="integer", description="Cloud storage included, in GB"),
    MetadataField(name="term_months", type="integer", description="Minimum term in months"),
    MetadataField(name="price", type="float", description="Price per month in GBP"),
)


@pytest.mark.parametrize(
    ("text", "wanted"),
    [
        # a data size written onto the number
        ("plans with at least 200GB of storage", 'gte("storage_gb", 200)'),
        ("100GB or less", 'lte("storage_gb", 100)'),
        # "or shorter" / "or longer" bound a length like "or less" / "or more"
        ("a term of 18 months or shorter", 'lte("term_months", 18)'),
        # a year is twelve months
        ("a term of 2 years or longer", 'gte("term_months", 24)'),
        ("plans of a year or less", 'lte("term_months", 12)'),
    ],
)
def test_data_sizes_lengths_and_years_in_months(text: str, wanted: str) -> None:
    rules = rules_on(STORAGE, {})
    assert rules.construct(text).filter == expected(wanted)


CLUBS = (
    MetadataField(name="joining_fee", type="float", description="One-off fee in GBP to join"),
    MetadataField(name="monthly_fee", type="float", description="Monthly fee in GBP"),
)


@pytest.mark.parametrize(
    ("text", "wanted"),
    [
        # no amount of a money field named is 0; its money noun may be said as another one
        ("clubs with no joining fee", 'eq("joining_fee", 0)'),
        ("a club without a monthly charge", 'eq("monthly_fee", 0)'),
        # a money noun that names no one field, or other words with it: no filter
        ("clubs with no fees", None),
        ("clubs with no hidden monthly fees", None),
    ],
)
def test_no_amount_of_a_named_charge_is_zero(text: str, wanted: str | None) -> None:
    rules = rules_on(CLUBS, {})
    assert rules.construct(text).filter == expected(wanted)


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


ROOMS = (
    MetadataField(name="max_guests", type="integer", description="Most guests the room can hold"),
    MetadataField(name="day_rate", type="float", description="Price for a day in GBP"),
)


@pytest.mark.parametrize(
    ("text", "wanted"),
    [
        # a verb of holding before a count of people is a party that must fit
        ("rooms that can take 40 people", 'gte("max_guests", 40)'),
        ("rooms that seat at least 12", 'gte("max_guests", 12)'),
        # any word for people counts the guests
        ("a room for 25 people", 'gte("max_guests", 25)'),
        # a count of something else is no party
        ("a room that fits 3 tables", None),
    ],
)
def test_a_party_that_must_fit_is_said_with_a_verb_of_holding(
    text: str, wanted: str | None
) -> None:
    rules = rules_on(ROOMS, {})
    assert rules.construct(text).filter == expected(wanted)


LESSONS = (
    MetadataField(
        name="languages",
        type="list[string]",
        description="Languages the lesson is taught in",
        values=["French", "German", "Welsh"],
    ),
)


@pytest.mark.parametrize(
    ("text", "wanted"),
    [
        # the words the description says of the documents, negated, negate the value
        ("lessons not taught in Welsh", 'ne("languages", "Welsh")'),
        (
            "lessons that aren't taught in French or German",
            'nin("languages", ["French", "German"])',
        ),
        ("lessons taught in Welsh", 'eq("languages", "Welsh")'),
    ],
)
def test_a_negated_word_of_the_fields_description_negates_its_value(text: str, wanted: str) -> None:
    rules = rules_on(LESSONS, {})
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
        ("stalls whose lease ends before the end of the month", 'lte("lease_ends", "2025-06-30")'),
        ("leases ending by the end of next month", 'lte("lease_ends", "2025-07-31")'),
        ("leases that end by the end of the year", 'lte("lease_ends", "2025-12-31")'),
    ],
)
def test_the_end_of_a_period_is_its_last_day(text: str, wanted: str) -> None:
    assert stalls().construct(text).filter == expected(wanted)


TENTS = (
    MetadataField(
        name="tier", type="string", description="Range the tent is in", values=["basic", "pro"]
    ),
    MetadataField(
        name="season",
        type="string",
        description="Season the tent is made for",
        values=["summer", "winter"],
    ),
)


@pytest.mark.parametrize(
    ("text", "wanted"),
    [
        # an everyday value stacked before another value and a noun for the documents
        ("basic summer tents", 'and(eq("tier", "basic"), eq("season", "summer"))'),
        # alone, or not before the documents' noun, it is an everyday word
        ("what is basic summer camping?", 'eq("season", "summer")'),
        ("the basic idea of winter tents", 'eq("season", "winter")'),
    ],
)
def test_an_everyday_value_stacked_before_another_describes_the_documents(
    text: str, wanted: str
) -> None:
    rules = rules_on(TENTS, {})
    assert rules.construct(text).filter == expected(wanted)


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
        # the value is the subject of a negated verb in a clause about the documents
        ("services that the York clinic doesn't offer", 'ne("city", "York")'),
        ("clinics that Leeds does not license", 'ne("city", "Leeds")'),
        # said plainly it is still wanted
        ("services that the York clinic offers", 'eq("city", "York")'),
        # a negated verb of functioning reports a problem there, no exclusion
        ("booking pages that York won't load", 'eq("city", "York")'),
    ],
)
def test_a_value_as_subject_of_a_negated_clause_is_excluded(text: str, wanted: str) -> None:
    assert clinics().construct(text).filter == expected(wanted)


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
