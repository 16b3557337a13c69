"""What the rules self-query tests share: one fixed day, the rules on a schema, a filter in the
self-query syntax, and the made-up schemas (hotels, clinics, ferries, cabins...) that tests of
several subjects read."""

from __future__ import annotations

import datetime as dt
import functools
from collections.abc import Collection, Mapping, Sequence
from typing import Any

from langchain_classic.chains.query_constructor.parser import get_parser
from langchain_core.structured_query import Comparison, FilterDirective, Operation, Operator

from rasa_context_retrieval.filters.schema import MetadataField
from rasa_context_retrieval.filters.syntax import parse_filter
from rasa_context_retrieval.self_query.rules import RuleQueryConstructor

TODAY = dt.date(2025, 6, 15)
"""The day every relative date in these tests is read from."""


def rules_on(
    fields: Sequence[MetadataField],
    values: Mapping[str, Collection[str]] | None = None,
    **options: Any,
) -> RuleQueryConstructor:
    """The rules for ``fields`` with the index holding ``values``, on :data:`TODAY`."""
    return RuleQueryConstructor(fields, values or {}, today=lambda: TODAY, **options)


def expected(text: str | None) -> FilterDirective | None:
    """The filter written in the self-query syntax (None: no filter meant)."""
    return None if text is None else parse_filter(text)


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


@functools.cache  # the rules keep nothing between messages: build them once
def hotels() -> RuleQueryConstructor:
    return rules_on(HOTELS, HOTEL_VALUES)


@functools.cache  # the rules keep nothing between messages: build them once
def podcasts() -> RuleQueryConstructor:
    return rules_on(PODCASTS, PODCAST_VALUES)


@functools.cache  # the rules keep nothing between messages: build them once
def courses() -> RuleQueryConstructor:
    return rules_on(COURSES, COURSE_VALUES)


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


@functools.cache  # the rules keep nothing between messages: build them once
def instruments() -> RuleQueryConstructor:
    return rules_on(INSTRUMENTS, INSTRUMENT_VALUES)


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


@functools.cache  # the rules keep nothing between messages: build them once
def clinics() -> RuleQueryConstructor:
    return rules_on(CLINICS, CLINIC_VALUES)


@functools.cache  # the rules keep nothing between messages: build them once
def stalls() -> RuleQueryConstructor:
    return rules_on(STALLS, STALL_VALUES)


@functools.cache  # the rules keep nothing between messages: build them once
def allotments() -> RuleQueryConstructor:
    return rules_on(ALLOTMENTS, {})


SCHEMA = (
    MetadataField(name="plan", type="list[string]", values=("free", "plus", "premium", "business")),
    MetadataField(name="region", type="list[string]", values=("eu", "us", "apac")),
    MetadataField(
        name="platform",
        type="list[string]",
        values=("android", "ios", "web", "windows", "macos"),
    ),
    MetadataField(
        name="category",
        type="string",
        values=(
            "billing",
            "plans",
            "sync",
            "security",
            "sharing",
            "account",
            "troubleshooting",
            "privacy",
        ),
    ),
    MetadataField(name="price_per_month", type="float", description="Monthly price in USD"),
    MetadataField(
        name="max_devices", type="integer", description="Maximum number of devices that sync"
    ),
    MetadataField(name="updated", type="date", description="When the article was last updated"),
)


def expected_filter(text: str | None) -> FilterDirective | None:
    """The IR LangChain's own query parser makes of a filter written in its syntax."""
    if text is None:
        return None
    directive = get_parser().parse(text)
    assert isinstance(directive, FilterDirective)
    return directive


FERRY_CROSSINGS = (
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


FERRY_CROSSING_VALUES = {"port": frozenset(["Bergen", "Kiel", "Oslo", "Tallinn"])}


def filter_of(
    fields: tuple[MetadataField, ...], values: dict[str, frozenset[str]], text: str
) -> FilterDirective | None:
    return rules_on(fields, values).construct(text).filter


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


LAKE_CABINS = (
    MetadataField(name="lake", type="string", description="Lake the cabin is on"),
    MetadataField(
        name="facilities",
        type="list[string]",
        description="What the cabin has",
        values=["sauna", "fireplace", "jetty", "wifi"],
    ),
)


LAKE_CABIN_VALUES = {"lake": frozenset(["Saimaa", "Inari"])}


MOVIES = (
    MetadataField(name="genre", type="string", description="The genre of the movie"),
    MetadataField(name="year", type="integer", description="The year the movie was released"),
    MetadataField(name="director", type="string", description="The name of the movie director"),
    MetadataField(name="rating", type="float", description="A 1-10 rating for the movie"),
)


MOVIE_VALUES = {
    "genre": frozenset(["science fiction", "comedy", "drama", "thriller", "animated"]),
    "director": frozenset(["Greta Gerwig", "Christopher Nolan", "Satoshi Kon"]),
}


@functools.cache  # the rules keep nothing between messages: build them once
def movies() -> RuleQueryConstructor:
    return rules_on(MOVIES, MOVIE_VALUES)


CARS = (
    MetadataField(name="make", type="string", description="Manufacturer of the car"),
    MetadataField(name="model", type="string", description="Model name"),
    MetadataField(
        name="body",
        type="string",
        description="Body style",
        values=("SUV", "sedan", "van", "hatchback"),
    ),
    MetadataField(name="year", type="integer", description="Model year of the car"),
    MetadataField(name="price", type="float", description="Asking price in euros"),
    MetadataField(name="weight", type="float", description="Kerb weight in tonnes"),
    MetadataField(
        name="has_warranty",
        type="boolean",
        description="Whether the item is covered by a warranty",
    ),
)


CAR_VALUES = {
    "make": frozenset(["Toyota", "Škoda", "Volvo", "Mercedes-Benz"]),
    "model": frozenset(["Land Rover Defender", "Octavia", "Yaris"]),
}


BOOKS = (
    MetadataField(
        name="genre",
        type="string",
        description="Genre of the book",
        values=("science fiction", "young adult", "true crime", "poetry"),
    ),
    MetadataField(name="published", type="date", description="Date the book was published"),
)


FURNITURE = (
    MetadataField(name="material", type="string", description="Main material of the piece"),
    MetadataField(name="foldable", type="boolean", description="Whether the piece folds flat"),
    MetadataField(name="weight_kg", type="float", description="Weight of the piece in kg"),
)


FURNITURE_VALUES = {"material": frozenset(["teak", "metal", "rattan"])}


HOLIDAY_CABINS = (
    MetadataField(name="region", type="string", description="Region of the cabin"),
    MetadataField(name="sleeps", type="integer", description="Number of beds in the cabin"),
    MetadataField(name="kids_allowed", type="boolean", description="Whether children are welcome"),
    MetadataField(name="owner_age", type="integer", description="Age of the owner in years"),
    MetadataField(
        name="sauna_included", type="boolean", description="Whether the cabin has a sauna"
    ),
)


HOLIDAY_CABIN_VALUES = {"region": frozenset(["Lapland", "Tyrol", "Dolomites"])}


def atoms(directive: FilterDirective | None) -> set[tuple[str, str, Any]]:
    """The comparisons of a filter's top-level ``and``, in a comparable form."""
    found: set[tuple[str, str, Any]] = set()
    pending = [] if directive is None else [directive]
    while pending:
        node = pending.pop()
        if isinstance(node, Operation) and node.operator == Operator.AND:
            pending.extend(node.arguments)
        else:
            assert isinstance(node, Comparison), node
            value = node.value
            if isinstance(value, dict):
                value = value["date"]
            elif isinstance(value, list):
                value = tuple(sorted(value))
            elif isinstance(value, int | float) and not isinstance(value, bool):
                value = float(value)
            found.add((node.attribute, node.comparator.value, value))
    return found


def said(constructor: RuleQueryConstructor, text: str) -> set[tuple[str, str, Any]]:
    return atoms(constructor.construct(text).filter)


def meant(text: str | None) -> set[tuple[str, str, Any]]:
    return atoms(None if text is None else parse_filter(text))
