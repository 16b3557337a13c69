"""The rules self-query on schemas it was not written for: the schema's names, descriptions,
values and aliases decide, not phrases of the example knowledge base."""

from __future__ import annotations

import pytest
from hypothesis import given, settings
from hypothesis import strategies as st
from langchain_core.structured_query import Comparison, FilterDirective, Operation

from rasa_context_retrieval.filters.schema import MetadataField
from rasa_context_retrieval.filters.syntax import to_filter_syntax
from rasa_context_retrieval.self_query.limits import MAX_LIMIT
from rasa_context_retrieval.self_query.rules import RuleQueryConstructor
from tests.self_query_support import expected, rules_on

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


def movies() -> RuleQueryConstructor:
    return rules_on(MOVIES, MOVIE_VALUES)


def products() -> RuleQueryConstructor:
    return rules_on(PRODUCTS, PRODUCT_VALUES)


def articles() -> RuleQueryConstructor:
    return rules_on(ARTICLES, {})


@pytest.mark.parametrize(
    ("text", "wanted"),
    [
        ("I want to watch a movie rated higher than 8.5", 'gt("rating", 8.5)'),
        ("movies released after 2005", 'gt("year", 2005)'),
        ("films made before 1980", 'lt("year", 1980)'),
        ("a thriller from 1979", 'and(eq("genre", "thriller"), eq("year", 1979))'),
        ("animated movies rated at least 8", 'and(eq("genre", "animated"), gte("rating", 8))'),
        ("horror films from the 90s", 'and(gte("year", 1990), lte("year", 1999))'),
        ("movies from 2010 onwards", 'gte("year", 2010)'),
        (
            "comedies not directed by Greta Gerwig",
            'and(eq("genre", "comedy"), ne("director", "Greta Gerwig"))',
        ),
        ("a comedy, nothing rated below 7", 'and(eq("genre", "comedy"), gte("rating", 7))'),
        ("Nolan films", 'eq("director", "Christopher Nolan")'),
        ("What's a good movie about dinosaurs?", None),
        ("I was born in 1985, what should I watch?", None),
        ("I watched a movie in 2010 that I loved, what else?", None),
    ],
)
def test_movie_questions_filter_on_the_fields_they_name(text: str, wanted: str | None) -> None:
    assert movies().construct(text).filter == expected(wanted)


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


@pytest.mark.parametrize(
    ("text", "limit"),
    [
        ("recommend two movies about toys", 2),
        ("top 3 dramas since 2010", 3),
        ("five thrillers", 5),
        ("what happens in the movie with 2 dreams", None),
        ("I have 2 comedies on DVD, suggest something else", None),
    ],
)
def test_a_count_of_documents_becomes_the_limit(text: str, limit: int | None) -> None:
    assert movies().construct(text).limit == limit


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


def attributes(directive: FilterDirective | None) -> set[str]:
    if isinstance(directive, Comparison):
        return {directive.attribute}
    if isinstance(directive, Operation):
        return set().union(*(attributes(argument) for argument in directive.arguments))
    return set()


def test_aliases_in_the_wrong_shape_fail_at_start_up_with_the_fix() -> None:
    from rasa_context_retrieval.config import ConfigurationError, StoreConfig

    field = {"name": "region", "type": "string", "aliases": ["Germany"]}
    with pytest.raises(ConfigurationError, match=r"metadata_fields\.0\.aliases: `aliases` maps"):
        StoreConfig.from_kwargs({"docs": "docs", "metadata_fields": [field]})
