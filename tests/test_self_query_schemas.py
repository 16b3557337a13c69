"""Whole schemas: a table of phrasings on the rules' own schema, questions on movie, product and
article schemas, and any text at all giving a query and a filter over declared fields only."""

from __future__ import annotations

import functools
from typing import Any

import pytest
from hypothesis import example, given, settings
from hypothesis import strategies as st
from langchain_core.structured_query import Comparison, FilterDirective, Operation

from rasa_context_retrieval.filters.schema import MetadataField
from rasa_context_retrieval.filters.syntax import to_filter_syntax
from rasa_context_retrieval.self_query.limits import MAX_LIMIT
from rasa_context_retrieval.self_query.rules import RuleQueryConstructor
from tests.self_query_support import MOVIES, SCHEMA, expected, expected_filter, movies, rules_on

PHRASINGS: list[tuple[str, str | None]] = [
    # string values: case, plural, several values, everyday words with a marker
    ("How do I share folders on Android?", 'eq("platform", "android")'),
    ("sync problems on androids", 'eq("platform", "android")'),
    ("Does the iOS app work offline?", 'eq("platform", "ios")'),
    ("What does the Premium tier include?", 'eq("plan", "premium")'),
    ("sharing on android and iOS", 'in("platform", ["android", "ios"])'),
    ("Is file versioning included in Plus?", 'eq("plan", "plus")'),
    ("storage in the free or plus plans", 'in("plan", ["free", "plus"])'),
    ("data residency for EU customers", 'eq("region", "eu")'),
    ("is my data stored in the US?", 'eq("region", "us")'),
    (
        "premium users on macOS",
        'and(eq("plan", "premium"), eq("platform", "macos"))',
    ),
    ("refund rules in the billing category", 'eq("category", "billing")'),
    ("windows app keeps crashing", 'eq("platform", "windows")'),
    # negation
    ("backup options not on Android", 'ne("platform", "android")'),
    ("all plans except the business tier", 'ne("plan", "business")'),
    ("desktop apps excluding windows and macos", 'nin("platform", ["windows", "macos"])'),
    ("what do I lose without the free plan", 'ne("plan", "free")'),
    ("non-premium features", 'ne("plan", "premium")'),
    ("sync is not working on android", 'eq("platform", "android")'),
    # numbers mapped to the right field
    ("plans under $20 a month", 'lt("price_per_month", 20)'),
    ("anything less than $20?", 'lt("price_per_month", 20)'),
    ("plans below 20 dollars", 'lt("price_per_month", 20)'),
    ("at most 20 USD per month", 'lte("price_per_month", 20)'),
    ("20 dollars or less", 'lte("price_per_month", 20)'),
    ("plans over $10 a month", 'gt("price_per_month", 10)'),
    ("more than 10 dollars monthly", 'gt("price_per_month", 10)'),
    ("plans cheaper than 15", 'lt("price_per_month", 15)'),
    (
        "between 10 and 20 dollars",
        'and(gte("price_per_month", 10), lte("price_per_month", 20))',
    ),
    (
        "from 10 to 20 usd a month",
        'and(gte("price_per_month", 10), lte("price_per_month", 20))',
    ),
    ("plans with at least 3 devices", 'gte("max_devices", 3)'),
    ("a plan for at least three devices", 'gte("max_devices", 3)'),
    ("exactly 5 devices", 'eq("max_devices", 5)'),
    ("up to 10 devices", 'lte("max_devices", 10)'),
    ("5 devices or more", 'gte("max_devices", 5)'),
    # dates
    ("what changed after 2023?", 'gt("updated", "2023-12-31")'),
    ("what changed since March 2024", 'gte("updated", "2024-03-01")'),
    ("docs updated before 2022", 'lt("updated", "2022-01-01")'),
    ("what was new in 2024", 'and(gte("updated", "2024-01-01"), lte("updated", "2024-12-31"))'),
    (
        "changes from January to March 2025",
        'and(gte("updated", "2025-01-01"), lte("updated", "2025-03-31"))',
    ),
    # "this year" is the whole year, as "in 2025" is
    ("what's new this year", 'and(gte("updated", "2025-01-01"), lte("updated", "2025-12-31"))'),
    ("updates in the last 6 months", 'gte("updated", "2024-12-15")'),
    ("release notes since 2023-05-10", 'gte("updated", "2023-05-10")'),
    ("articles updated 2024 or later", 'gte("updated", "2024-01-01")'),
    # several fields at once
    (
        "premium plans under $20 a month for android, updated since 2024",
        'and(eq("plan", "premium"), eq("platform", "android"), lt("price_per_month", 20),'
        ' gte("updated", "2024-01-01"))',
    ),
    # no filter: values in a non-filtering sense, numbers that are no comparison, noise
    ("can I upgrade my plan?", None),
    ("is my data safe?", None),
    ("how do I reset 2FA", None),
    ("error 404 when uploading", None),
    ("what's new in version 2.0", None),
    ("", None),
    ("?!...", None),
    ("contact us", None),
    ("please let us know how to cancel", None),
    ("is it free?", None),
    ("my business needs shared folders", None),
    ("what are the security settings?", None),
    ("tips for sync", None),
    ("I was charged twice in March 2024", None),
    ("I can't sync more than 3 files at once", None),
    ("sync stopped working over 2 months ago", None),
    ("how much does it cost?", None),
    ("under 20", None),
    # "under 20" alone names no field; "for 3 devices" is a party that must fit
    ("plans under 20 for 3 devices", 'gte("max_devices", 3)'),
    ("what changed from 2025 to 2022", None),
    ("what changed, not in 2023", None),
]


@pytest.fixture(scope="module")
def constructor() -> RuleQueryConstructor:
    return rules_on(SCHEMA, {})


@pytest.mark.parametrize(("text", "expected"), PHRASINGS)
def test_a_phrasing_becomes_the_filter_a_user_means(
    constructor: RuleQueryConstructor, text: str, expected: str | None
) -> None:
    assert constructor.construct(text).filter == expected_filter(expected)


def test_the_table_covers_filters_and_filter_free_phrasings() -> None:
    with_filter = [text for text, expected in PHRASINGS if expected is not None]
    without = [text for text, expected in PHRASINGS if expected is None]
    assert len(with_filter) >= 40 and len(without) >= 15


def test_the_query_keeps_the_users_words_by_default(constructor: RuleQueryConstructor) -> None:
    query = constructor.construct("  plans under $20 a month for android ")

    assert query.query == "plans under $20 a month for android"


def test_stripping_removes_only_the_words_that_made_filters() -> None:
    constructor = rules_on(SCHEMA, {}, strip_filter_words=True)

    assert constructor.construct("plans under $20 a month for android").query == "plans"
    assert constructor.construct("how do I sync on android and iOS?").query == "how do I sync?"
    assert constructor.construct("what changed after 2023?").query == "what changed?"
    assert constructor.construct("contact us").query == "contact us"
    assert constructor.construct("for Android").query == "for Android"


STRIPPING = rules_on(SCHEMA, {}, strip_filter_words=True)


_FRAGMENTS = st.sampled_from(
    [
        "under",
        "at least",
        "between",
        "and",
        "or",
        "not",
        "except",
        "from",
        "to",
        "since",
        "after",
        "in",
        "the last",
        "this year",
        "$",
        "20",
        "3",
        "2024",
        "March",
        "May",
        "2024-02-30",
        "9" * 400,
        "devices",
        "a month",
        "android",
        "US",
        "free",
        "plans",
        "category",
        "changed",
        "-",
        ",",
        "?",
    ]
)


def _attributes(directive: FilterDirective | None) -> set[str]:
    if isinstance(directive, Comparison):
        return {directive.attribute}
    if isinstance(directive, Operation):
        return set().union(*(_attributes(argument) for argument in directive.arguments))
    return set()


@pytest.mark.slow  # a large property run
@settings(max_examples=300, deadline=None)
@example("sync on io\u017f")  # long s: matches "s" case-insensitively, folds to "s"
@example("on andro\u0130d")  # dotted capital I: matches "i", folds to two characters
@example("9" * 400 + " devices or more")
@example("$" * 3000 + "20 a month")
@given(
    st.one_of(
        st.text(max_size=200),
        st.lists(_FRAGMENTS, max_size=12).map(" ".join),
    )
)
def test_any_text_gives_a_query_and_a_filter_over_declared_fields_only(text: Any) -> None:
    result = STRIPPING.construct(text)

    assert isinstance(result.query, str)
    assert _attributes(result.filter) <= {field.name for field in SCHEMA}


PRODUCTS = (
    MetadataField(
        name="category",
        type="string",
        description="Kind of product",
        values=("laptop", "phone", "tablet", "monitor", "headphones"),
    ),
    MetadataField(name="price", type="float", description="Price in US dollars"),
    MetadataField(name="brand", type="string", description="Manufacturer of the product"),
    MetadataField(
        name="in_stock", type="boolean", description="Whether the product can ship today"
    ),
)


PRODUCT_VALUES = {"brand": frozenset(["Apple", "Samsung", "Dell"])}


@functools.cache  # the rules keep nothing between messages: build them once
def products() -> RuleQueryConstructor:
    return rules_on(PRODUCTS, PRODUCT_VALUES)


@pytest.mark.parametrize(
    ("text", "wanted"),
    [
        ("laptops under $1000", 'and(eq("category", "laptop"), lt("price", 1000))'),
        (
            "phones between 300 and 600 dollars",
            'and(eq("category", "phone"), gte("price", 300), lte("price", 600))',
        ),
        (
            "Which headphones are in stock?",
            'and(eq("category", "headphones"), eq("in_stock", true))',
        ),
        (
            "products from Apple that can ship today",
            'and(eq("brand", "Apple"), eq("in_stock", true))',
        ),
        ("laptops that are out of stock", 'and(eq("category", "laptop"), eq("in_stock", false))'),
        ("a tablet that can't ship today", 'and(eq("category", "tablet"), eq("in_stock", false))'),
        ("a laptop, but not a Dell", 'and(eq("category", "laptop"), ne("brand", "Dell"))'),
        ("What is your return policy?", None),
        ("Is the iPhone waterproof?", None),
    ],
)
def test_product_questions_use_values_and_booleans_without_field_names(
    text: str, wanted: str | None
) -> None:
    assert products().construct(text).filter == expected(wanted)


ARTICLES = (
    MetadataField(name="author", type="string", description="Who wrote the article"),
    MetadataField(name="published", type="date", description="Date the article was published"),
    MetadataField(
        name="tags",
        type="list[string]",
        description="Topics the article is tagged with",
        values=("python", "security", "cloud"),
    ),
    MetadataField(name="reading_time", type="integer", description="Reading time in minutes"),
)


@functools.cache  # the rules keep nothing between messages: build them once
def articles() -> RuleQueryConstructor:
    return rules_on(ARTICLES, {})


@pytest.mark.parametrize(
    ("text", "wanted"),
    [
        (
            "articles about python published since 2023",
            'and(gte("published", "2023-01-01"), eq("tags", "python"))',
        ),
        (
            "security posts in 2021",
            'and(gte("published", "2021-01-01"), lte("published", "2021-12-31"),'
            ' eq("tags", "security"))',
        ),
        ("articles that take more than 30 minutes to read", 'gt("reading_time", 30)'),
        ("security articles not about cloud", 'and(eq("tags", "security"), ne("tags", "cloud"))'),
        ("Is Rust worth learning in 2025?", None),
        ("an article I read in 2021 about burnout", None),
        ("tips for writing", None),
    ],
)
def test_article_questions_read_dates_durations_and_tags(text: str, wanted: str | None) -> None:
    assert articles().construct(text).filter == expected(wanted)


FRAGMENTS = st.sampled_from(
    [
        "top",
        "two",
        "5",
        "movies",
        "thrillers",
        "not",
        "directed by",
        "Greta Gerwig",
        "Nolan",
        "after",
        "from",
        "the 90s",
        "1979",
        "2010 onwards",
        "rated",
        "higher than",
        "8.5",
        "nothing",
        "below",
        "in stock",
        "out of stock",
        "can't ship today",
        "laptops",
        "under $1000",
        "between",
        "and",
        "I watched",
        ",",
        "?",
    ]
)


def attributes(directive: FilterDirective | None) -> set[str]:
    if isinstance(directive, Comparison):
        return {directive.attribute}
    if isinstance(directive, Operation):
        return set().union(*(attributes(argument) for argument in directive.arguments))
    return set()


@pytest.mark.slow  # a large property run
@settings(max_examples=200, deadline=None)
@given(st.one_of(st.text(max_size=200), st.lists(FRAGMENTS, max_size=14).map(" ".join)))
def test_any_text_gives_declared_fields_and_a_sane_limit(text: str) -> None:
    for rules, fields in ((movies(), MOVIES), (products(), PRODUCTS), (articles(), ARTICLES)):
        result = rules.construct(text)
        printed = to_filter_syntax(result.filter) or ""
        declared = {field.name for field in fields}
        assert all(f'"{name}"' in printed for name in attributes(result.filter))
        assert attributes(result.filter) <= declared
        assert result.limit is None or 1 <= result.limit <= MAX_LIMIT
