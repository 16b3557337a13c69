"""Filters evaluated by a real Milvus server select exactly the chunks the FAISS backend selects.

The FAISS translator's docstring is the specification; every case here runs the same filter
through both backends over the same chunks and also states the expected chunks, so a mistake
shared by both would still fail. Each test runs on two collections: one where every attribute is
in the JSON field (the previous release's layout), one where the attributes are declared and held
in typed fields, including values a typed field cannot hold ("n/a" in an integer field, 2.5 in an
integer field, "abc" in a float field, a year number in a date field), which the layout keeps in
the overflow JSON.
"""

from __future__ import annotations

import datetime as dt
from collections.abc import Iterator
from typing import Any

import numpy as np
import pytest
from hypothesis import HealthCheck, given, settings
from hypothesis import strategies as st
from langchain_core.structured_query import (
    Comparator,
    Comparison,
    FilterDirective,
    Operation,
    Operator,
)

from rasa_context_retrieval.access.entitlements import AccessClause
from rasa_context_retrieval.filters.absence import include_documents_lacking
from rasa_context_retrieval.filters.columns import MetadataColumns
from rasa_context_retrieval.filters.faiss_translator import FaissTranslator
from rasa_context_retrieval.filters.schema import MetadataField
from rasa_context_retrieval.filters.syntax import parse_filter
from rasa_context_retrieval.knowledge.models import Chunk
from rasa_context_retrieval.milvus.expression import UNADDRESSABLE, UnaddressableAttribute
from rasa_context_retrieval.milvus.store import MilvusChunkStore
from tests.milvus_server import milvus_uri  # noqa: F401
from tests.milvus_stores import hashed_embedder, synced_side_by_side

pytestmark = pytest.mark.milvus

DIMENSION = 16

CHUNKS = [
    Chunk(
        "a",
        "a",
        {
            "plan": "Premium",
            "price": 19.99,
            "updated": dt.date(2024, 3, 1),
            "platform": ["android", "iOS"],
            "public": True,
            "title": "Reset your password",
            "rank": 3,
        },
    ),
    Chunk(
        "b",
        "b",
        {
            "plan": " basic ",
            "price": "19.99",
            "updated": "2024-03-01T10:00:00",
            "platform": ["web"],
            "public": False,
            "title": "Password policy",
            "rank": "7",
        },
    ),
    Chunk(
        "c",
        "c",
        {
            "plan": "PREMIUM",
            "price": "5",
            "updated": "2023-12-31",
            "platform": [],
            "public": "true",
            "title": "Two-factor setup",
            "rank": "n/a",
        },
    ),
    Chunk(
        "d",
        "d",
        {
            "plan": "",
            "price": 100,
            "updated": dt.datetime(2024, 1, 1, 12, 0),
            "platform": "android",
            "title": "Sync_folders 100%",
            "rank": 2.5,
        },
    ),
    Chunk(
        "e",
        "e",
        {
            "plan": None,
            "price": "abc",
            "tags": [1, "Two", True],
            "title": 'Quote " and \\ backslash) or (x',
            "rank": " 12 ",
        },
    ),
    Chunk("f", "f", {"updated": 2024, "title": "Ünïcode 😀 title", "plan": "premium "}),
]
IDS = {chunk.chunk_id for chunk in CHUNKS}
VOCABULARIES = {"platform": ("Android", "iOS", "windows"), "tags": ("two", "three")}
DECLARED = [
    MetadataField(name="plan", type="string"),
    MetadataField(name="price", type="float"),
    MetadataField(name="updated", type="date"),
    MetadataField(name="platform", type="list[string]"),
    MetadataField(name="public", type="boolean"),
    MetadataField(name="tags", type="list[string]"),
    MetadataField(name="title", type="string"),
    MetadataField(name="rank", type="integer"),
]
"""Typed fields for every attribute but "unknown"; "tags" holds numbers and bools as members."""
WITH_MEMBER_FLAGS = [
    field.model_copy(update={"values": VOCABULARIES[field.name]})
    if field.name in VOCABULARIES
    else field
    for field in DECLARED
]
"""The same, with the lists' vocabularies declared (member flag fields): each vocabulary leaves
out values the chunks hold ("web", "1", "true"), which only the list field itself has."""


fake_embed = hashed_embedder(DIMENSION)


LAYOUTS = {"json_fields": (), "typed_fields": DECLARED, "member_flags": WITH_MEMBER_FLAGS}


@pytest.fixture(scope="module", params=list(LAYOUTS))
def store(stores: dict[str, MilvusChunkStore], request: pytest.FixtureRequest) -> MilvusChunkStore:
    return stores[request.param]


FAISS = FaissTranslator(MetadataColumns([chunk.metadata for chunk in CHUNKS]))


def milvus_ids(store: MilvusChunkStore, directive: FilterDirective) -> set[str]:
    vector = np.ones(DIMENSION)
    return {hit.chunk.chunk_id for hit in store.search(vector, directive, k=len(CHUNKS))}


def faiss_ids(directive: FilterDirective) -> set[str]:
    mask = directive.accept(FAISS)
    return {chunk.chunk_id for chunk, allowed in zip(CHUNKS, mask, strict=True) if allowed}


CASES = [
    ('eq("plan", "premium")', "acf"),
    ('eq("plan", "BASIC")', "b"),
    ('ne("plan", "premium")', "b"),
    ('eq("price", 19.99)', "ab"),
    ('eq("price", "5.0")', "c"),
    ('gt("price", 10)', "abd"),
    ('gte("price", 19.99)', "abd"),
    ('lt("price", "20")', "abc"),
    ('lte("price", 5)', "c"),
    ('gt("plan", "a")', ""),
    ('eq("updated", "2024-03-01")', "ab"),
    ('gt("updated", "2024-01-01")', "ab"),
    ('gte("updated", "2024-01-01")', "abd"),
    ('lt("updated", "2024-01-01T12:00:00")', "c"),
    ('lte("updated", 2023)', ""),
    ('lte("updated", 2024)', "cdf"),
    ('eq("updated", 2024)', "df"),
    ('eq("platform", "ios")', "a"),
    ('contain("platform", "android")', "ad"),
    ('ne("platform", "android")', "b"),
    ('nin("platform", ["web", "ios"])', "d"),
    ('in("plan", ["basic", "nope"])', "b"),
    ('in("platform", ["web", "IOS"])', "ab"),
    ('eq("public", true)', "ac"),
    ('ne("public", true)', "b"),
    ('eq("tags", "two")', "e"),
    ('eq("tags", "1")', "e"),
    ('eq("tags", "true")', "e"),
    ('contain("title", "password")', "ab"),
    ('like("title", "%password")', "a"),
    ('like("title", "password%")', "b"),
    ('like("title", "two-factor")', "c"),
    ('like("title", "sync_folders 100%")', "d"),
    ('like("title", "t_o%")', "c"),
    ('like("platform", "%droi%")', "ad"),
    ('eq("title", "ünïcode 😀 title")', "f"),
    ('eq("unknown", "x")', ""),
    ('ne("unknown", "x")', ""),
    ('not(eq("unknown", "x"))', "abcdef"),
    ('not(eq("plan", "premium"))', "bde"),
    ('not(eq("plan", "premium"), eq("price", 100))', "be"),
    ('and(eq("plan", "premium"), gt("price", 10))', "a"),
    ('or(eq("plan", "basic"), eq("platform", "android"))', "abd"),
    ('and(not(eq("plan", "premium")), ne("price", "abc"))', "bd"),
    ('eq("rank", 3)', "a"),
    ('eq("rank", "7.0")', "b"),
    ('ne("rank", 3)', "bcde"),
    ('gt("rank", 2.5)', "abe"),
    ('gte("rank", 2.5)', "abde"),
    ('lt("rank", 7)', "ad"),
    ('lte("rank", 6.5)', "ad"),
    ('eq("rank", "n/a")', "c"),
    ('like("rank", "n%")', "c"),
    ('in("rank", [2.5, 12])', "de"),
    ('not(eq("rank", "n/a"))', "abdef"),
    ('eq("rank", 2)', ""),
    ('gt("rank", 1e300)', ""),
    ('gt("rank", -1e300)', "abde"),
    ('eq("public", false)', "b"),
    ('in("public", [true, false])', "abc"),
    ('ne("updated", 2024)', "abc"),
]


@pytest.mark.parametrize(("text", "expected"), CASES)
def test_milvus_selects_what_the_faiss_backend_selects(
    store: MilvusChunkStore, text: str, expected: str
) -> None:
    directive = parse_filter(text)
    assert faiss_ids(directive) == set(expected), "the specification case itself is wrong"
    assert milvus_ids(store, directive) == set(expected), store.expression(directive)


def test_date_values_as_the_query_constructor_writes_them(store: MilvusChunkStore) -> None:
    on_day = Comparison(
        comparator=Comparator.EQ, attribute="updated", value={"date": "2024-03-01", "type": "date"}
    )
    at_instant = Comparison(
        comparator=Comparator.GTE,
        attribute="updated",
        value={"datetime": "2024-03-01T10:00:00", "type": "datetime"},
    )
    assert milvus_ids(store, on_day) == faiss_ids(on_day) == {"a", "b"}
    assert milvus_ids(store, at_instant) == faiss_ids(at_instant) == {"b"}


ATTRIBUTES = ["plan", "price", "updated", "platform", "public", "tags", "title", "rank", "unknown"]
VALUES = st.one_of(
    st.sampled_from(
        [
            "premium",
            "Basic",
            "19.99",
            "5",
            "2024-03-01",
            "2024-01-01T12:00:00",
            "ios",
            "android",
            "true",
            "two",
            "password",
            "%a%",
            "t_o%",
            "",
            "abc",
            "web",
            "n/a",
            "12",
        ]
    ),
    st.integers(min_value=-5, max_value=2030),
    st.floats(min_value=-10, max_value=200, allow_nan=False, allow_infinity=False),
    st.booleans(),
    st.builds(
        lambda day: {"date": day.isoformat(), "type": "date"},
        st.dates(dt.date(2023, 12, 1), dt.date(2024, 4, 1)),
    ),
)


def comparisons() -> st.SearchStrategy[FilterDirective]:
    scalar = st.builds(
        Comparison,
        comparator=st.sampled_from(
            [c for c in Comparator if c not in (Comparator.IN, Comparator.NIN)]
        ),
        attribute=st.sampled_from(ATTRIBUTES),
        value=VALUES,
    )
    listed = st.builds(
        Comparison,
        comparator=st.sampled_from([Comparator.IN, Comparator.NIN]),
        attribute=st.sampled_from(ATTRIBUTES),
        value=st.lists(VALUES, max_size=3),
    )
    return st.one_of(scalar, listed)


FILTERS = st.recursive(
    comparisons(),
    lambda children: st.builds(
        Operation,
        operator=st.sampled_from(list(Operator)),
        arguments=st.lists(children, max_size=3),
    ),
    max_leaves=5,
)


@settings(
    max_examples=150, deadline=None, suppress_health_check=[HealthCheck.function_scoped_fixture]
)
@given(directive=FILTERS)
def test_any_filter_selects_the_same_chunks_on_both_backends(
    store: MilvusChunkStore, directive: FilterDirective
) -> None:
    assert milvus_ids(store, directive) == faiss_ids(directive), store.expression(directive)


HOSTILE = st.one_of(
    st.text(max_size=30),
    st.sampled_from(
        [
            '") or (chunk_id != "',
            "\\",
            '\\"',
            "'",
            "%",
            "\n",
            "\x00",
            "😀",
            "\\u0022",
            'x"] or exists filterable["plan',
            'premium") or (1 == 1',
        ]
    ),
)


@settings(
    max_examples=200, deadline=None, suppress_health_check=[HealthCheck.function_scoped_fixture]
)
@given(value=HOSTILE, attribute=st.one_of(st.sampled_from(ATTRIBUTES), HOSTILE))
def test_hostile_values_and_attribute_names_cannot_widen_a_filter(
    store: MilvusChunkStore, value: str, attribute: str
) -> None:
    for comparator in (Comparator.EQ, Comparator.NE, Comparator.LIKE, Comparator.CONTAIN):
        directive = Operation(
            operator=Operator.AND,
            arguments=[
                Comparison(comparator=comparator, attribute=attribute, value=value),
                Comparison(comparator=Comparator.EQ, attribute="plan", value="basic"),
            ],
        )
        try:
            selected = milvus_ids(store, directive)
        except UnaddressableAttribute:
            # Sent, it would stop the server (``UNADDRESSABLE``): refused, so nothing is read.
            assert UNADDRESSABLE in attribute
            continue
        # An injected "or" would widen the result beyond the one "basic" chunk.
        assert selected <= {"b"}, store.expression(directive)
        assert selected == faiss_ids(directive), store.expression(directive)


ABSENT_MEANS_ALL_CASES = [
    # filter, attributes whose absence means "applies to all", expected chunks
    ('eq("platform", "android")', {"platform"}, "acdef"),
    ('ne("platform", "android")', {"platform"}, "bcef"),
    ('nin("platform", ["web"])', {"platform"}, "acdef"),
    ('not(eq("platform", "android"))', {"platform"}, "bcef"),
    ('not(not(eq("platform", "ios")))', {"platform"}, "acef"),
    ('and(eq("plan", "premium"), eq("platform", "ios"))', {"platform"}, "acf"),
    ('and(eq("plan", "basic"), ne("platform", "web"))', {"plan", "platform"}, "de"),
    ('gt("price", 50)', {"price"}, "df"),
    ('eq("unknown", "x")', {"unknown"}, "abcdef"),
]


@pytest.mark.parametrize(("text", "flagged", "expected"), ABSENT_MEANS_ALL_CASES)
def test_absent_means_all_selects_the_same_chunks_on_both_backends(
    store: MilvusChunkStore, text: str, flagged: set[str], expected: str
) -> None:
    directive = include_documents_lacking(parse_filter(text), flagged)
    assert directive is not None
    assert faiss_ids(directive) == set(expected), "the specification case itself is wrong"
    assert milvus_ids(store, directive) == set(expected), store.expression(directive)


@settings(
    max_examples=100, deadline=None, suppress_health_check=[HealthCheck.function_scoped_fixture]
)
@given(directive=FILTERS, flagged=st.sets(st.sampled_from(ATTRIBUTES)))
def test_any_filter_with_absent_means_all_selects_the_same_chunks_on_both_backends(
    store: MilvusChunkStore, directive: FilterDirective, flagged: set[str]
) -> None:
    rewritten = include_documents_lacking(directive, flagged)
    assert rewritten is not None
    assert milvus_ids(store, rewritten) == faiss_ids(rewritten), store.expression(rewritten)


def test_declared_attributes_are_filtered_on_typed_fields(store: MilvusChunkStore) -> None:
    """The typed collection reads declared attributes from typed fields: from the JSON only where
    a value did not fit (overflow), and never from the JSON field of undeclared attributes."""
    if not store.planned.typed:
        pytest.skip("the JSON-field collection")
    plan = store.expression(parse_filter('eq("plan", "premium")'))
    rank = store.expression(parse_filter('gt("rank", 2)'))
    assert "filterable" not in plan and "overflow" not in plan, plan
    assert "overflow" in rank and "filterable" not in rank, rank
    assert "filterable" in store.expression(parse_filter('eq("unknown", "x")'))


def test_declared_list_values_are_filtered_on_member_flags(store: MilvusChunkStore) -> None:
    """A list's declared values are tested on their indexed flag fields, other values on the list
    field itself (no index), and the selection is the same either way."""
    platform = next((t for t in store.planned.typed if t.attribute == "platform"), None)
    if platform is None or not platform.flags:
        pytest.skip("no member flags in this layout")
    declared = store.expression(parse_filter('in("platform", ["IOS", "android"])'))
    other = store.expression(parse_filter('in("platform", ["web", "ios"])'))
    assert "array_contains_any" not in declared and declared.count(" == 1)") == 2, declared
    assert other.count(" == 1)") == 1 and '_l, ["web"])' in other, other


MIXED_ATTRIBUTES = {
    "plan": "string",
    "platform": "list[string]",
    "price": "float",
    "rank": "integer",
    "updated": "date",
    "public": "boolean",
}
MIXED_VALUES: list[object] = [
    None,
    "",
    "  ",
    "Premium",
    " premium ",
    "n/a",
    "19.99",
    "5",
    "010",
    "-1.5",
    "2024",
    "2024-03-01",
    "2023-12-31",
    "2024-03-01T10:00:00",
    "true",
    "False",
    "x" * 2000,
    5,
    0,
    -1.5,
    19.99,
    2024,
    2**60,
    True,
    False,
    dt.date(2024, 3, 1),
    dt.datetime(2024, 1, 1, 12, 0),
    [],
    ["android", "iOS"],
    ["web"],
    [1, "Two", True],
    ["a"] * 3 + [f"m{i}" for i in range(200)],
]
"""Every kind of value in every attribute: most do not fit the declared type, so the typed
collection holds them in the overflow JSON, next to rows whose values fit."""


MIXED_VOCABULARIES = {"platform": ("android", "two", "a", "m7", "premium")}
"""Member flags for some of the list's values, among them members of lists that overflow."""


def mixed_chunks(count: int = 90) -> list[Chunk]:
    rng = np.random.default_rng(20261123)
    chunks = []
    for row in range(count):
        metadata = {}
        for attribute in MIXED_ATTRIBUTES:
            if rng.random() < 0.8:
                metadata[attribute] = MIXED_VALUES[int(rng.integers(len(MIXED_VALUES)))]
        chunks.append(Chunk(f"m{row}", f"m{row}", metadata))
    return chunks


MIXED = mixed_chunks()
MIXED_FAISS = FaissTranslator(MetadataColumns([chunk.metadata for chunk in MIXED]))


MIXED_DECLARED = [
    MetadataField(name=name, type=kind, values=MIXED_VOCABULARIES.get(name))  # type: ignore[arg-type]
    for name, kind in MIXED_ATTRIBUTES.items()
]


@pytest.fixture(scope="module")
def stores(milvus_uri: str) -> Iterator[dict[str, MilvusChunkStore]]:  # noqa: F811
    """The chunks in each layout, and the mixed chunks in their typed layout, synced at once."""
    plans = {layout: (fields, CHUNKS) for layout, fields in LAYOUTS.items()}
    plans["mixed"] = (MIXED_DECLARED, MIXED)
    with synced_side_by_side(milvus_uri, "semantics", plans, fake_embed) as stores:
        yield stores


@pytest.fixture(scope="module")
def mixed_store(stores: dict[str, MilvusChunkStore]) -> MilvusChunkStore:
    return stores["mixed"]


MIXED_FILTERS = st.recursive(
    st.one_of(
        st.builds(
            Comparison,
            comparator=st.sampled_from(list(Comparator)),
            attribute=st.sampled_from([*MIXED_ATTRIBUTES, "unknown"]),
            value=st.one_of(
                VALUES, st.sampled_from(MIXED_VALUES[:17]), st.lists(VALUES, max_size=3)
            ),
        ),
    ),
    lambda children: st.builds(
        Operation,
        operator=st.sampled_from(list(Operator)),
        arguments=st.lists(children, max_size=3),
    ),
    max_leaves=5,
)


@settings(
    max_examples=200, deadline=None, suppress_health_check=[HealthCheck.function_scoped_fixture]
)
@given(directive=MIXED_FILTERS, flagged=st.sets(st.sampled_from(list(MIXED_ATTRIBUTES))))
def test_typed_fields_with_values_of_every_kind_select_what_faiss_selects(
    mixed_store: MilvusChunkStore, directive: FilterDirective, flagged: set[str]
) -> None:
    version = mixed_store.served()
    assert version is not None and version.layout.overflow, "no value needed the overflow"
    for candidate in (directive, include_documents_lacking(directive, flagged)):
        assert candidate is not None
        hits = mixed_store.search(np.ones(DIMENSION), candidate, k=len(MIXED))
        mask = candidate.accept(MIXED_FAISS)
        expected = {chunk.chunk_id for chunk, allowed in zip(MIXED, mask, strict=True) if allowed}
        assert {hit.chunk.chunk_id for hit in hits} == expected, mixed_store.expression(candidate)


ACCESS_CASES = [
    # (entitlement, unattributed documents, chunks the directive selects on either backend)
    (("premium",), "public", "acdef"),
    (("premium",), "private", "acf"),
    (("basic",), "private", "b"),
    ((), "public", "de"),
    ((), "private", ""),
]
"""Access clauses search within a case-insensitive superset (the exact check follows); chunk
"d" has no plan and "e" a None plan: public by default, and never selected when private."""


@pytest.mark.parametrize(("allowed", "unattributed", "expected"), ACCESS_CASES)
def test_access_clauses_select_the_same_chunks_on_both_backends(
    store: MilvusChunkStore, allowed: tuple[str, ...], unattributed: Any, expected: str
) -> None:
    directive = AccessClause("plan", allowed, "message", unattributed).directive
    assert faiss_ids(directive) == set(expected)
    assert milvus_ids(store, directive) == set(expected)
