"""`absent_means_all`: a document without the attribute holds for every value of it.

The cases are the truth table of ``filters/absence.py``, run through the real FAISS
translator over real metadata columns; the Milvus side runs the same rewrite in
tests/test_milvus_expression.py.
"""

from __future__ import annotations

from typing import Any

import pytest
from langchain_core.structured_query import Comparator, Comparison

from rasa_context_retrieval.config import StoreConfig
from rasa_context_retrieval.filters.absence import (
    absence_notes,
    include_documents_lacking,
    search_filter,
)
from rasa_context_retrieval.filters.columns import MetadataColumns
from rasa_context_retrieval.filters.faiss_translator import FaissTranslator
from rasa_context_retrieval.filters.schema import MetadataField
from rasa_context_retrieval.filters.syntax import parse_filter
from rasa_context_retrieval.knowledge.models import Chunk, ScoredChunk
from rasa_context_retrieval.retrieve.specific_first import specific_first

DOCUMENTS: dict[str, dict[str, Any]] = {
    "android": {"platform": ["android"], "plan": ["plus"]},
    "mobile": {"platform": ["android", "ios"], "plan": ["free", "plus"]},
    "ios": {"platform": ["ios"], "plan": ["free"]},
    "general": {"plan": ["free"]},
    "empty list": {"platform": [], "plan": ["plus"]},
}
COLUMNS = MetadataColumns(list(DOCUMENTS.values()))


def selected(directive: Any) -> set[str]:
    mask = directive.accept(FaissTranslator(COLUMNS))
    return {name for name, allowed in zip(DOCUMENTS, mask, strict=True) if allowed}


LACKING = {"general", "empty list"}
TRUTH_TABLE = [
    # filter, selected without the flag, selected with platform flagged
    ('eq("platform", "android")', {"android", "mobile"}, {"android", "mobile"} | LACKING),
    ('ne("platform", "android")', {"ios"}, {"ios"} | LACKING),
    ('in("platform", ["ios", "web"])', {"mobile", "ios"}, {"mobile", "ios"} | LACKING),
    ('nin("platform", ["ios"])', {"android"}, {"android"} | LACKING),
    ('contain("platform", "andr")', set(), LACKING),
    ('like("platform", "and%")', {"android", "mobile"}, {"android", "mobile"} | LACKING),
    ('not(eq("platform", "android"))', {"ios"} | LACKING, {"ios"} | LACKING),
    (
        'not(ne("platform", "android"))',
        {"android", "mobile"} | LACKING,
        {"android", "mobile"} | LACKING,
    ),
    ('not(not(eq("platform", "android")))', {"android", "mobile"}, {"android", "mobile"} | LACKING),
    (
        'and(eq("platform", "android"), eq("plan", "free"))',
        {"mobile"},
        {"mobile", "general"},
    ),
    (
        'or(eq("platform", "web"), eq("plan", "plus"))',
        {"android", "mobile", "empty list"},
        {"android", "mobile"} | LACKING,
    ),
    ('not(eq("platform", "ios"), eq("plan", "plus"))', {"general"}, {"general"}),
]


@pytest.mark.parametrize(("text", "plain", "flagged"), TRUTH_TABLE)
def test_documents_lacking_a_flagged_attribute_are_never_excluded_by_it(
    text: str, plain: set[str], flagged: set[str]
) -> None:
    directive = parse_filter(text)
    assert selected(directive) == plain
    assert selected(include_documents_lacking(directive, {"platform"})) == flagged


def test_ne_and_not_eq_mean_the_same_on_a_flagged_attribute() -> None:
    ne = include_documents_lacking(parse_filter('ne("platform", "ios")'), {"platform"})
    not_eq = include_documents_lacking(parse_filter('not(eq("platform", "ios"))'), {"platform"})
    assert selected(ne) == selected(not_eq) == {"android"} | LACKING


def test_slot_filters_stay_strict_on_a_flagged_attribute() -> None:
    fields = [MetadataField(name="platform", type="list[string]", absent_means_all=True)]
    slot = Comparison(comparator=Comparator.EQ, attribute="platform", value="ios")
    words = Comparison(comparator=Comparator.EQ, attribute="platform", value="android")

    assert selected(search_filter(slot, None, fields)) == {"mobile", "ios"}
    assert selected(search_filter(None, words, fields)) == {"android", "mobile"} | LACKING
    # The words can only narrow what the slot allows, never reach a document it excludes.
    assert selected(search_filter(slot, words, fields)) == {"mobile"}


def test_without_the_flag_the_filter_is_unchanged() -> None:
    fields = [MetadataField(name="platform", type="list[string]")]
    words = parse_filter('eq("platform", "android")')
    assert search_filter(None, words, fields) == words


def test_the_flag_is_read_from_metadata_fields_and_off_by_default(tmp_path: Any) -> None:
    config = StoreConfig.from_kwargs(
        {
            "docs": str(tmp_path),
            "metadata_fields": [
                {"name": "platform", "type": "list[string]", "absent_means_all": True},
                {"name": "plan", "type": "list[string]"},
            ],
        }
    )
    assert [field.absent_means_all for field in config.metadata_fields] == [True, False]


def scored(name: str, relevance: float) -> ScoredChunk:
    return ScoredChunk(Chunk(name, name, DOCUMENTS[name]), relevance)


def test_specific_documents_come_first_each_group_keeping_its_order() -> None:
    results = [scored("general", 0.8), scored("ios", 0.75), scored("android", 0.7)]
    results.append(scored("mobile", 0.6))
    strict = parse_filter('eq("platform", "android")')

    reordered = specific_first(results, strict)

    assert [r.chunk.chunk_id for r in reordered] == ["android", "mobile", "general", "ios"]
    assert [r.relevance for r in reordered] == [0.7, 0.6, 0.8, 0.75]


def test_with_nothing_specific_among_the_results_the_order_is_unchanged() -> None:
    results = [scored("general", 0.8), scored("empty list", 0.5)]
    assert specific_first(results, parse_filter('eq("platform", "android")')) == results


def test_the_notes_name_each_flagged_attribute_the_words_filter_on() -> None:
    fields = [
        MetadataField(name="platform", type="list[string]", absent_means_all=True),
        MetadataField(name="region", type="list[string]", absent_means_all=True),
        MetadataField(name="plan", type="list[string]"),
    ]
    words = parse_filter('and(not(eq("platform", "ios")), eq("plan", "free"))')

    assert absence_notes(words, fields) == (
        "documents without 'platform' also match (absent_means_all)",
    )
    assert absence_notes(None, fields) == ()


def test_a_stock_langchain_translator_gets_a_typed_error_for_absence_not_an_attribute_error() -> (
    None
):
    from langchain_community.query_constructors.chroma import ChromaTranslator

    from rasa_context_retrieval.errors import ContextRetrievalError
    from rasa_context_retrieval.filters.absence import PresenceNotSupported

    rewritten = include_documents_lacking(parse_filter('eq("platform", "android")'), ["platform"])
    with pytest.raises(PresenceNotSupported, match="absent_means_all") as raised:
        rewritten.accept(ChromaTranslator())
    assert isinstance(raised.value, ValueError)
    assert isinstance(raised.value, ContextRetrievalError)
    assert "platform" in str(raised.value)


def test_a_stock_langchain_translator_still_spells_a_filter_without_absence() -> None:
    from langchain_community.query_constructors.chroma import ChromaTranslator

    plain = include_documents_lacking(parse_filter('eq("platform", "android")'), ["plan"])
    assert plain.accept(ChromaTranslator()) == {"platform": {"$eq": "android"}}
