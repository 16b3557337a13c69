"""The FAISS filter translator: which chunks a filter lets through, on real-looking metadata."""

from __future__ import annotations

import datetime as dt
from concurrent.futures import ThreadPoolExecutor
from typing import Any

import numpy as np
import pytest
from langchain_core.structured_query import Comparator, Comparison, StructuredQuery

from rasa_context_retrieval.filters.columns import MetadataColumns
from rasa_context_retrieval.filters.faiss_translator import FaissTranslator
from rasa_context_retrieval.filters.syntax import parse_filter

# The movie documents of LangChain's self-query how-to.
MOVIES: list[dict[str, Any]] = [
    {"year": 1993, "rating": 7.7, "genre": "science fiction"},  # dinosaurs
    {"year": 2010, "director": "Christopher Nolan", "rating": 8.2},  # dreams
    {"year": 2006, "director": "Satoshi Kon", "rating": 8.6},  # dreams, again
    {"year": 2019, "director": "Greta Gerwig", "rating": 8.3},  # women
    {"year": 1995, "genre": "animated"},  # toys
    {"year": 1979, "director": "Andrei Tarkovsky", "genre": "thriller", "rating": 9.9},  # zone
]

# Support articles: list attributes, numbers as strings, dates in every spelling, gaps.
ARTICLES: list[dict[str, Any]] = [
    {"plan": "premium", "platform": ["android", "iOS"], "price": "19.99", "updated": "2024-03-01"},
    {"plan": " Basic ", "platform": ["web"], "price": 5, "updated": dt.date(2023, 11, 15)},
    {
        "plan": "premium_plus",
        "platform": "android",
        "price": "n/a",
        "updated": "2024-06-01T10:00:00Z",
        "beta": True,
    },
    {"plan": "Enterprise", "platform": [], "updated": "2024-01-01", "beta": "false"},
    {"plan": None, "price": ""},
]


def allowed(metadatas: list[dict[str, Any]], text: str) -> set[int]:
    mask = parse_filter(text).accept(FaissTranslator(MetadataColumns(metadatas)))
    assert mask.dtype == np.bool_ and mask.shape == (len(metadatas),)
    return set(np.flatnonzero(mask).tolist())


@pytest.mark.parametrize(
    ("question", "structured_filter", "expected"),
    [
        ("I want to watch a movie rated higher than 8.5", 'gt("rating", 8.5)', {2, 5}),
        (
            "Has Greta Gerwig directed any movies about women",
            'eq("director", "Greta Gerwig")',
            {3},
        ),
        (
            "What's a highly rated (above 8.5) science fiction film?",
            'and(eq("genre", "science fiction"), gt("rating", 8.5))',
            set(),
        ),
        (
            "What's a science fiction movie after 1990 rated above 7?",
            'and(eq("genre", "science fiction"), gt("year", 1990), gt("rating", 7))',
            {0},
        ),
        (
            "What's a movie after 1990 but before 2005 that's all about toys, and is animated",
            'and(gt("year", 1990), lt("year", 2005), eq("genre", "animated"))',
            {4},
        ),
        ("Two movies about dreams, not by Nolan", 'ne("director", "christopher nolan")', {2, 3, 5}),
        ("A movie by Kon or Gerwig", 'in("director", ["Satoshi Kon", "greta gerwig"])', {2, 3}),
        ("Anything but Kon or Gerwig", 'nin("director", ["Satoshi Kon", "Greta Gerwig"])', {1, 5}),
        ("An old or a badly rated movie", 'or(lt("year", 1980), lte("rating", 7.7))', {0, 5}),
        ("A movie that is not animated", 'not(eq("genre", "animated"))', {0, 1, 2, 3, 5}),
        ("A fiction movie", 'contain("genre", "FICTION")', {0}),
        ("A movie by someone called Andrei", 'like("director", "andrei%")', {5}),
        ("From the 90s", 'and(gte("year", 1990), lte("year", 1999))', {0, 4}),
    ],
)
def test_self_query_how_to_questions_select_the_right_movies(
    question: str, structured_filter: str, expected: set[int]
) -> None:
    assert allowed(MOVIES, structured_filter) == expected, question


def test_a_query_without_filter_gives_no_mask() -> None:
    translator = FaissTranslator(MetadataColumns(MOVIES))

    query, kwargs = translator.visit_structured_query(
        StructuredQuery(query="toy movies about dinosaurs", filter=None)
    )

    assert (query, kwargs) == ("toy movies about dinosaurs", {"mask": None})


def test_a_structured_query_with_filter_gives_its_mask() -> None:
    translator = FaissTranslator(MetadataColumns(MOVIES))
    structured = StructuredQuery(query="dreams", filter=parse_filter('gt("year", 2000)'))

    query, kwargs = translator.visit_structured_query(structured)

    mask = kwargs["mask"]
    assert query == "dreams"
    assert mask is not None and np.flatnonzero(mask).tolist() == [1, 2, 3]


@pytest.mark.parametrize(
    ("structured_filter", "expected"),
    [
        ('eq("plan", "PREMIUM ")', {0}),
        ('eq("plan", "basic")', {1}),
        ('ne("plan", "premium")', {1, 2, 3}),
        ('in("plan", ["basic", "enterprise"])', {1, 3}),
        ('in("plan", "basic")', {1}),
        ('in("plan", [])', set()),
        ('nin("plan", ["basic", "enterprise"])', {0, 2}),
        ('like("plan", "premium")', {0, 2}),
        ('like("plan", "premium_plus")', {2}),
        ('like("plan", "%ise")', {3}),
        ('like("plan", "p_emium%")', {0, 2}),
        ('contain("plan", "prem")', {0, 2}),
    ],
)
def test_string_comparisons_are_trimmed_and_case_insensitive(
    structured_filter: str, expected: set[int]
) -> None:
    assert allowed(ARTICLES, structured_filter) == expected


@pytest.mark.parametrize(
    ("structured_filter", "expected"),
    [
        ('eq("platform", "ios")', {0}),
        ('eq("platform", "android")', {0, 2}),
        ('contain("platform", "android")', {0, 2}),
        ('contain("platform", "andr")', {2}),  # substring of a plain string, not of list members
        ('in("platform", ["web", "ios"])', {0, 1}),
        ('ne("platform", "android")', {1}),
        ('nin("platform", ["web", "ios"])', {2}),
        ('like("platform", "%o%")', {0, 2}),
    ],
)
def test_list_attributes_match_by_membership(structured_filter: str, expected: set[int]) -> None:
    assert allowed(ARTICLES, structured_filter) == expected


@pytest.mark.parametrize(
    ("structured_filter", "expected"),
    [
        ('eq("tags", "a")', {0, 1, 3}),
        ('eq("tags", "true")', {0}),
        ('eq("tags", "3")', {0}),
        ('eq("tags", "1.5")', {3}),
        ('ne("tags", "b")', {0, 1, 3}),
    ],
)
def test_list_members_of_every_kind_read_as_written_and_blank_ones_are_missing(
    structured_filter: str, expected: set[int]
) -> None:
    """Lists, tuples, strings among bools and numbers, blanks: each member reads the same way."""
    tagged: list[dict[str, Any]] = [
        {"tags": ["a", " ", True, 3]},
        {"tags": ("a",)},
        {"tags": [" ", ""]},
        {"tags": [1.5, " a ", None]},
    ]
    assert allowed(tagged, structured_filter) == expected


@pytest.mark.parametrize(
    ("structured_filter", "expected"),
    [
        ('gt("price", 10)', {0}),
        ('lte("price", "19.99")', {0, 1}),
        ('eq("price", 19.99)', {0}),
        ('eq("price", "5.0")', {1}),
        ('ne("price", 5)', {0, 2}),
        ('lt("price", "cheap")', set()),
    ],
)
def test_numbers_compare_numerically_also_when_stored_as_strings(
    structured_filter: str, expected: set[int]
) -> None:
    assert allowed(ARTICLES, structured_filter) == expected


@pytest.mark.parametrize(
    ("structured_filter", "expected"),
    [
        ('gt("updated", "2024-03-01")', {2}),
        ('gte("updated", "2024-03-01")', {0, 2}),
        ('eq("updated", "2024-06-01")', {2}),
        ('eq("updated", "2024-06-01T10:00:00")', {2}),
        ('eq("updated", "2024-06-01T09:00:00")', set()),
        ('lt("updated", "2024-06-01T09:00:00Z")', {0, 1, 3}),
        ('lt("updated", 2024)', {1}),
        ('gte("updated", 2024)', {0, 2, 3}),
        ('and(gte("updated", "2023-11-15"), lt("updated", "2024-01-01"))', {1}),
    ],
)
def test_dates_compare_as_dates_whatever_their_spelling(
    structured_filter: str, expected: set[int]
) -> None:
    assert allowed(ARTICLES, structured_filter) == expected


def test_date_value_dicts_from_the_parser_compare_as_dates() -> None:
    translator = FaissTranslator(MetadataColumns(ARTICLES))
    after = Comparison(
        comparator=Comparator.GT,
        attribute="updated",
        value={"date": "2023-12-31", "type": "date"},
    )
    at = Comparison(
        comparator=Comparator.EQ,
        attribute="updated",
        value={"datetime": "2024-06-01T12:00:00+02:00", "type": "datetime"},
    )

    assert np.flatnonzero(after.accept(translator)).tolist() == [0, 2, 3]
    assert np.flatnonzero(at.accept(translator)).tolist() == [2]


def test_booleans_match_real_bools_and_their_spelled_out_strings() -> None:
    assert allowed(ARTICLES, 'eq("beta", true)') == {2}
    assert allowed(ARTICLES, 'eq("beta", false)') == {3}
    assert allowed(ARTICLES, 'eq("beta", "TRUE")') == {2}


def test_chunks_lacking_the_attribute_never_match_not_even_ne_or_nin() -> None:
    assert allowed(MOVIES, 'ne("genre", "animated")') == {0, 5}
    assert allowed(MOVIES, 'nin("director", ["nobody"])') == {1, 2, 3, 5}
    assert allowed(ARTICLES, 'ne("price", 1)') == {0, 1, 2}


def test_not_is_the_plain_complement_including_chunks_lacking_the_attribute() -> None:
    assert allowed(MOVIES, 'not(eq("genre", "thriller"))') == {0, 1, 2, 3, 4}
    assert allowed(MOVIES, 'not(eq("genre", "thriller"), gt("rating", 8.4))') == {0, 1, 3, 4}


@pytest.mark.parametrize(
    "structured_filter",
    [
        'eq("studio", "Ghibli")',
        'ne("studio", "Ghibli")',
        'gt("genre", "animated")',
        'gt("rating", [1, 2])',
        'like("rating", 8)',
        'ne("genre", [])',
    ],
)
def test_unknown_attributes_and_incomparable_values_match_nothing(
    structured_filter: str,
) -> None:
    assert allowed(MOVIES, structured_filter) == set()


def test_a_value_of_no_known_type_matches_nothing_and_raises_nothing() -> None:
    translator = FaissTranslator(MetadataColumns(MOVIES))

    for comparator in Comparator:
        comparison = Comparison(comparator=comparator, attribute="year", value={"odd": 1})
        assert not comparison.accept(translator).any(), comparator


def test_concurrent_searches_share_one_column_build() -> None:
    columns = MetadataColumns(ARTICLES * 2000)
    translator = FaissTranslator(columns)
    directive = parse_filter('and(eq("platform", "android"), gte("updated", 2024))')

    with ThreadPoolExecutor(max_workers=8) as pool:
        masks = list(pool.map(lambda _: directive.accept(translator), range(16)))

    expected = np.tile(np.array([True, False, True, False, False]), 2000)
    assert all(np.array_equal(mask, expected) for mask in masks)
    assert columns.column("platform") is columns.column("platform")


def test_columns_expose_attributes_and_distinct_string_values() -> None:
    columns = MetadataColumns(ARTICLES)

    assert len(columns) == 5
    assert columns.attributes() == {"plan", "platform", "price", "updated", "beta"}
    assert columns.values_of("platform") == {"android", "iOS", "web"}
    assert columns.values_of("plan") == {"premium", "Basic", "premium_plus", "Enterprise"}
    assert columns.values_of("studio") == frozenset()


def test_a_nul_character_in_a_pattern_does_not_match_every_value():
    columns = MetadataColumns([{"title": "hello"}, {"title": "wor\x00ld"}, {"title": ["x", "y"]}])
    translator = FaissTranslator(columns)
    for comparator in (Comparator.CONTAIN, Comparator.LIKE):
        mask = Comparison(comparator=comparator, attribute="title", value="\x00").accept(translator)
        assert mask.tolist() == [False, True, False]
