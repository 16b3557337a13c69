"""What a user's words turn into as a filter, with no LLM: values, amounts, dates, negations, and
the many phrasings that must stay filter-free."""

from __future__ import annotations

import datetime as dt
from typing import Any

import pytest
from hypothesis import example, given, settings
from hypothesis import strategies as st
from langchain_classic.chains.query_constructor.parser import get_parser
from langchain_core.structured_query import Comparison, FilterDirective, Operation

from rasa_context_retrieval.filters.schema import MetadataField
from rasa_context_retrieval.self_query.rules import RuleQueryConstructor
from tests.self_query_support import rules_on

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


def expected_filter(text: str | None) -> FilterDirective | None:
    """The IR LangChain's own query parser makes of a filter written in its syntax."""
    if text is None:
        return None
    directive = get_parser().parse(text)
    assert isinstance(directive, FilterDirective)
    return directive


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


def test_a_number_that_fits_two_fields_gives_no_filter() -> None:
    fields = [
        MetadataField(name="price_per_month", type="float", description="Price in USD"),
        MetadataField(name="price_per_year", type="float", description="Price in USD"),
    ]
    constructor = RuleQueryConstructor(fields, {})

    assert constructor.construct("plans under $20").filter is None
    assert constructor.construct("plans under $20 a year").filter == expected_filter(
        'lt("price_per_year", 20)'
    )


def test_relative_dates_follow_the_injected_clock() -> None:
    constructor = RuleQueryConstructor(SCHEMA, {}, today=lambda: dt.date(2024, 2, 10))

    assert constructor.construct("what changed last year").filter == expected_filter(
        'and(gte("updated", "2023-01-01"), lte("updated", "2023-12-31"))'
    )
    assert constructor.construct("what changed since March").filter == expected_filter(
        'gte("updated", "2023-03-01")'
    )


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
