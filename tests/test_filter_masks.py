"""Masks of filters that searches share: the same rows as a fresh evaluation, and never stale."""

from __future__ import annotations

from typing import Any

import numpy as np
import pytest
from langchain_core.structured_query import Comparator, Comparison

from rasa_context_retrieval.faiss.index import KnowledgeIndex
from rasa_context_retrieval.faiss.retriever import filter_mask
from rasa_context_retrieval.filters.columns import MetadataColumns
from rasa_context_retrieval.filters.faiss_translator import FaissTranslator
from rasa_context_retrieval.filters.masks import FilterMasks
from rasa_context_retrieval.filters.syntax import conjoin, parse_filter
from rasa_context_retrieval.knowledge.models import Chunk

METADATA: list[dict[str, Any]] = [
    {"plan": ["plus", "premium"], "region": "eu", "price": "19.99", "beta": True},
    {"plan": "free", "region": "us", "price": 5},
    {"plan": ["premium"], "price": 1},
    {"region": "EU", "beta": "false"},
    {},
]

FILTERS = [
    'eq("plan", "premium")',
    'in("plan", ["free", "plus"])',
    'and(eq("plan", "premium"), eq("region", "eu"))',
    'or(eq("region", "eu"), not(eq("region", "us")))',
    'eq("price", "1")',
    'eq("price", 1)',
    'eq("price", 1.0)',
    'eq("price", "19.99")',
    'eq("beta", true)',
    'eq("beta", "true")',
    'ne("region", "us")',
    'lt("price", 10)',
]


def fresh(metadata: list[dict[str, Any]], text: str) -> set[int]:
    mask = parse_filter(text).accept(FaissTranslator(MetadataColumns(metadata)))
    return set(np.flatnonzero(mask).tolist())


def test_every_filter_asked_again_selects_what_a_fresh_evaluation_selects() -> None:
    masks = FilterMasks(MetadataColumns(METADATA))
    for _ in range(2):  # the second round is answered from what the first kept
        for text in FILTERS:
            assert set(np.flatnonzero(masks.mask(parse_filter(text))).tolist()) == fresh(
                METADATA, text
            ), text


def test_a_value_of_another_type_is_another_filter() -> None:
    """'1', 1 and True read differently, so none may answer for another."""
    metadata: list[dict[str, Any]] = [{"n": "1"}, {"n": 1}, {"n": True}, {"n": "true"}]
    masks = FilterMasks(MetadataColumns(metadata))
    for value in ("1", 1, True, "true", 1.0, "1", True):
        directive = Comparison(comparator=Comparator.EQ, attribute="n", value=value)
        expected = directive.accept(FaissTranslator(MetadataColumns(metadata)))
        np.testing.assert_array_equal(masks.mask(directive), expected, err_msg=repr(value))


def test_an_added_access_condition_narrows_and_is_never_answered_by_the_wider_filter() -> None:
    masks = FilterMasks(MetadataColumns(METADATA))
    slots = parse_filter('eq("plan", "premium")')
    access = parse_filter('eq("region", "eu")')
    wide = masks.mask(slots)
    narrow = masks.mask(conjoin(access, slots))
    assert set(np.flatnonzero(wide).tolist()) == {0, 2}
    assert set(np.flatnonzero(narrow).tolist()) == {0}


def test_a_kept_mask_cannot_be_changed_by_whoever_reads_it() -> None:
    masks = FilterMasks(MetadataColumns(METADATA))
    mask = masks.mask(parse_filter('eq("plan", "premium")'))
    with pytest.raises(ValueError):
        mask[4] = True
    assert not masks.mask(parse_filter('eq("plan", "premium")'))[4]


def _index(plans: list[str]) -> KnowledgeIndex:
    vectors = np.eye(len(plans), dtype=np.float32)
    chunks = [Chunk(f"c{row}", f"text {row}", {"plan": plan}) for row, plan in enumerate(plans)]
    return KnowledgeIndex.build("test", "test", chunks, vectors, [], 1000)


def test_a_refreshed_index_is_filtered_on_its_own_metadata_not_the_old_masks() -> None:
    directive = parse_filter('eq("plan", "premium")')
    old = _index(["premium", "free", "free"])
    assert set(np.flatnonzero(filter_mask(old.knowledge, directive)).tolist()) == {0}
    new = _index(["free", "free", "premium"])  # same chunk ids, the documents changed
    assert set(np.flatnonzero(filter_mask(new.knowledge, directive)).tolist()) == {2}
    assert set(np.flatnonzero(filter_mask(old.knowledge, directive)).tolist()) == {0}


def test_a_budget_of_two_masks_still_answers_every_filter_right() -> None:
    """As on a huge index, where few masks fit: the others are evaluated again."""
    masks = FilterMasks(MetadataColumns(METADATA), budget_bytes=2 * len(METADATA))
    for text in FILTERS * 2:
        assert set(np.flatnonzero(masks.mask(parse_filter(text))).tolist()) == fresh(
            METADATA, text
        ), text
