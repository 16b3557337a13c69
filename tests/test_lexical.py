"""The BM25 index finds keyword matches, stays inside the filter mask and survives a restart."""

from __future__ import annotations

import json
from concurrent.futures import ThreadPoolExecutor
from functools import cache
from pathlib import Path

import bm25s
import numpy as np
import pytest
from hypothesis import given, settings
from hypothesis import strategies as st

import rasa_context_retrieval.retrieve.lexical as lexical
from rasa_context_retrieval.retrieve.languages import ANALYZERS
from rasa_context_retrieval.retrieve.lexical import LexicalIndex, LexicalIndexError, LexicalSettings

TEXTS = [
    "The Premium plan costs 20 euros per month and includes roaming.",
    "Roaming in the EU is free on every plan.",
    "To reset your router, hold the button for ten seconds.",
    "Premium customers get priority support by phone.",
    "Our Android app supports dark mode.",
    "The iOS app supports dark mode and widgets.",
]


@cache
def _shared_index() -> LexicalIndex:
    return LexicalIndex.build(TEXTS)


@pytest.fixture
def index() -> LexicalIndex:
    return _shared_index()


def test_keyword_query_ranks_matching_chunk_first(index: LexicalIndex) -> None:
    results = index.search("how do I reset the router", k=3)

    assert results[0][0] == 2
    assert all(score > 0 for _, score in results)


def test_stemming_matches_inflected_words(index: LexicalIndex) -> None:
    rows = [row for row, _ in index.search("resetting routers", k=3)]

    assert rows == [2]


def test_rows_without_any_query_term_are_not_returned(index: LexicalIndex) -> None:
    assert index.search("bicycle insurance", k=5) == []


def test_mask_keeps_only_allowed_rows_even_when_they_score_lower(index: LexicalIndex) -> None:
    mask = np.array([False, True, False, False, False, False])

    assert [row for row, _ in index.search("premium plan roaming", k=3, mask=mask)] == [1]


def test_mask_with_no_allowed_rows_returns_nothing(index: LexicalIndex) -> None:
    assert index.search("premium", k=3, mask=np.zeros(len(TEXTS), dtype=bool)) == []


@settings(max_examples=60, deadline=None)
@given(
    allowed=st.lists(st.booleans(), min_size=len(TEXTS), max_size=len(TEXTS)),
    k=st.integers(min_value=1, max_value=len(TEXTS)),
)
def test_masked_search_is_exactly_the_best_k_allowed_rows(allowed: list[bool], k: int) -> None:
    index = _shared_index()
    query = "premium plan app dark mode roaming"
    mask = np.array(allowed)
    unmasked = index.search(query, k=len(TEXTS))
    expected = [(row, score) for row, score in unmasked if allowed[row]][:k]

    assert index.search(query, k=k, mask=mask) == expected


def test_mask_of_wrong_shape_or_type_is_rejected(index: LexicalIndex) -> None:
    with pytest.raises(LexicalIndexError, match="one entry per row"):
        index.search("premium", k=3, mask=np.ones(len(TEXTS) - 1, dtype=bool))
    with pytest.raises(LexicalIndexError, match="boolean"):
        index.search("premium", k=3, mask=np.ones(len(TEXTS), dtype=np.int64))


def test_save_and_load_round_trip_gives_identical_results(
    index: LexicalIndex, tmp_path: Path
) -> None:
    index.save(tmp_path)
    loaded = LexicalIndex.load(tmp_path)
    mask = np.array([True, False, True, True, False, True])

    for query in ("premium roaming", "dark mode app", "reset router", "support"):
        assert loaded.search(query, k=4) == index.search(query, k=4)
        assert loaded.search(query, k=4, mask=mask) == index.search(query, k=4, mask=mask)
    assert len(loaded) == len(index)


def test_saved_settings_are_used_to_tokenise_queries_after_load(tmp_path: Path) -> None:
    LexicalIndex.build(TEXTS, LexicalSettings(stemming=False)).save(tmp_path)
    loaded = LexicalIndex.load(tmp_path)

    assert loaded.settings == LexicalSettings(stemming=False)
    assert loaded.search("resetting routers", k=3) == []


def test_loading_a_folder_without_an_index_says_how_to_fix(tmp_path: Path) -> None:
    with pytest.raises(LexicalIndexError, match="re-run ingestion"):
        LexicalIndex.load(tmp_path)


def test_empty_corpus_searches_empty_and_round_trips(tmp_path: Path) -> None:
    empty = LexicalIndex.build([])
    empty.save(tmp_path)

    assert empty.search("anything", k=3) == []
    assert LexicalIndex.load(tmp_path).search("anything", k=3) == []


def test_concurrent_searches_give_the_same_results_as_sequential(index: LexicalIndex) -> None:
    queries = ["premium plan", "dark mode", "reset router", "roaming free", "priority support"] * 40
    sequential = [index.search(query, k=3) for query in queries]

    with ThreadPoolExecutor(max_workers=8) as pool:
        concurrent = list(pool.map(lambda query: index.search(query, k=3), queries))

    assert concurrent == sequential


def test_a_rare_word_is_more_distinctive_than_a_common_one_and_an_absent_word_is_not() -> None:
    index = _shared_index()

    assert index.rarity("router") > index.rarity("roaming") > 0  # one chunk against two
    assert index.rarity("Routers") == index.rarity("router")  # read as the corpus was
    assert index.rarity("satellite") == 0.0
    assert index.rarity("the") == 0.0  # a stop word


def test_numbers_of_any_length_and_versions_are_terms() -> None:
    index = LexicalIndex.build(
        [
            "Lumen Drive 6.4 brings faster first sync.",
            "Version history keeps 30 days of changes.",
            "Boarding group 2 boards after priority.",
        ]
    )

    assert [row for row, _ in index.search("what is new in 6.4?", k=3)] == [0]
    assert [row for row, _ in index.search("can i get on with 2", k=3)] == [2]


def test_an_index_saved_before_numbers_were_terms_tokenises_as_it_was_built(
    tmp_path: Path,
) -> None:
    old = LexicalIndex.build(
        ["Lumen Drive 6.4 brings faster sync."], LexicalSettings(numbers=False)
    )
    old.save(tmp_path)
    payload = json.loads((tmp_path / "lexical.json").read_text())
    del payload["settings"]["numbers"]  # as written before the setting existed
    (tmp_path / "lexical.json").write_text(json.dumps(payload))

    loaded = LexicalIndex.load(tmp_path)

    assert loaded.settings.numbers is False
    assert loaded.search("6.4", k=1) == []
    assert LexicalIndex.build(["Lumen Drive 6.4 brings faster sync."]).search("6.4", k=1)


class _TokenisedByBm25s(LexicalIndex):
    """The same index, each query's terms made by ``bm25s.tokenize``, the corpus's tokeniser."""

    def _query_terms(self, query: str) -> list[str]:
        terms = bm25s.tokenize(
            query,
            token_pattern=self.settings.token_pattern,
            stopwords=self._stopwords(),
            stemmer=self._stemmer(),
            return_ids=False,
            show_progress=False,
        )
        return list(terms[0]) if terms else []


ANALYSED = [
    *TEXTS,
    "The THE the: Premium's plans, PLANNED planning, 6.4 v2.0.1 12:30 2,5 a 1 I",
    "Größe STRASSE straße Über-Größen café naïve İstanbul résumé",
    "Die Rückerstattung erfolgt innerhalb von vierzehn Tagen auf Ihr Konto.",
    "Le forfait gratuit comprend cinq gigaoctets de stockage pour les appareils.",
]


@pytest.mark.parametrize("language", sorted(ANALYZERS))
@pytest.mark.parametrize("numbers", [True, False])
@pytest.mark.parametrize(("stemming", "stopwords"), [(True, True), (False, False)])
def test_a_query_is_scored_on_exactly_the_terms_the_corpus_tokeniser_makes(
    language: str, numbers: bool, stemming: bool, stopwords: bool
) -> None:
    options = LexicalSettings(stemming, stopwords, language, numbers)
    index = LexicalIndex.build(ANALYSED, options)
    reference = _TokenisedByBm25s(index._retriever, len(index), options)

    for query in [*ANALYSED, *(word for text in ANALYSED for word in text.split())]:
        assert index.search(query, k=len(ANALYSED)) == reference.search(query, k=len(ANALYSED))
        assert index.rarity(query) == reference.rarity(query)


@settings(max_examples=200, deadline=None)
@given(query=st.text(alphabet="aAeEsSiIøßİ0123456789.,: '-", max_size=40))
def test_any_query_text_is_scored_as_the_corpus_tokeniser_reads_it(query: str) -> None:
    index = _shared_index()
    reference = _TokenisedByBm25s(index._retriever, len(index), index.settings)

    assert index.search(query, k=len(TEXTS)) == reference.search(query, k=len(TEXTS))


def test_a_search_makes_no_vocabulary_for_its_query(
    index: LexicalIndex, monkeypatch: pytest.MonkeyPatch
) -> None:
    """bm25s.tokenize builds a vocabulary, an id list and progress bars for a corpus: for one
    query that was about half of a search on the example knowledge base."""
    expected = (index.search("resetting routers", k=3), index.rarity("Routers"))

    def corpus_tokeniser(*args: object, **kwargs: object) -> None:
        raise AssertionError("a query went through the corpus tokeniser")

    monkeypatch.setattr(lexical.bm25s, "tokenize", corpus_tokeniser)

    assert (index.search("resetting routers", k=3), index.rarity("Routers")) == expected
