"""Reciprocal rank fusion orders chunk ids by agreement between rankings, deterministically."""

from __future__ import annotations

import pytest
from hypothesis import given
from hypothesis import strategies as st

from rasa_context_retrieval.retrieve.fusion import fused_order, reciprocal_rank_fusion


def ids(fused: list[tuple[str, float]]) -> list[str]:
    return [chunk_id for chunk_id, _ in fused]


def test_a_chunk_found_by_every_query_beats_one_found_first_by_a_single_query() -> None:
    standalone = ["refunds-eu", "refunds-us", "invoices"]
    paraphrase = ["invoices", "refunds-eu", "taxes-eu"]
    bm25 = ["taxes-eu", "refunds-eu", "invoices"]

    fused = reciprocal_rank_fusion([standalone, paraphrase, bm25])

    assert ids(fused) == ["refunds-eu", "invoices", "taxes-eu", "refunds-us"]


def test_scores_are_the_sum_of_reciprocal_ranks_with_k_60() -> None:
    fused = dict(reciprocal_rank_fusion([["a", "b"], ["b"]]))

    assert fused["a"] == pytest.approx(1 / 61)
    assert fused["b"] == pytest.approx(1 / 62 + 1 / 61)


def test_each_chunk_appears_once_even_if_repeated_within_a_ranking() -> None:
    fused = reciprocal_rank_fusion([["a", "a", "b"], ["b", "a"]])

    assert sorted(ids(fused)) == ["a", "b"]
    assert dict(fused)["a"] == pytest.approx(1 / 61 + 1 / 62)


def test_ties_go_to_the_better_rank_then_the_earlier_ranking_then_the_id() -> None:
    # "x" and "y" both sit at ranks 1 and 2: equal scores; "x" reached rank 1 in ranking 0.
    assert ids(reciprocal_rank_fusion([["x", "y"], ["y", "x"]])) == ["x", "y"]
    assert ids(reciprocal_rank_fusion([["y", "x"], ["x", "y"]])) == ["y", "x"]
    # Same rank in the same ranking cannot happen; different rankings of equal length: id.
    assert ids(reciprocal_rank_fusion([["b"], ["a"]])) == ["b", "a"]
    assert ids(reciprocal_rank_fusion([["b", "c"], ["a"], ["c"]])) == ["c", "b", "a"]


def test_no_rankings_and_empty_rankings_fuse_to_nothing() -> None:
    assert reciprocal_rank_fusion([]) == []
    assert reciprocal_rank_fusion([[], []]) == []


def test_a_single_ranking_keeps_its_order() -> None:
    assert ids(reciprocal_rank_fusion([["c", "a", "b"]])) == ["c", "a", "b"]


def test_negative_k_is_rejected_with_the_customary_value_in_the_message() -> None:
    with pytest.raises(ValueError, match="60"):
        reciprocal_rank_fusion([["a"]], k=-1)


rankings_strategy = st.lists(
    st.lists(st.sampled_from("abcdefgh"), max_size=8), min_size=1, max_size=5
)


@given(rankings_strategy)
def test_every_chunk_appears_exactly_once_and_scores_never_increase_down_the_list(
    rankings: list[list[str]],
) -> None:
    fused = reciprocal_rank_fusion(rankings)

    assert len(ids(fused)) == len(set(ids(fused))) == len({i for r in rankings for i in r})
    scores = [score for _, score in fused]
    assert scores == sorted(scores, reverse=True)


def test_a_weighted_ranking_counts_for_its_weight() -> None:
    fused = dict(reciprocal_rank_fusion([["a", "b"], ["b"]], weights=[1.0, 0.5]))

    assert fused["b"] == pytest.approx(1 / 62 + 0.5 / 61)
    with pytest.raises(ValueError, match="one each"):
        reciprocal_rank_fusion([["a"], ["b"]], weights=[1.0])


def test_bm25_reorders_chunks_as_close_as_the_best_and_never_overturns_a_clear_answer() -> None:
    dense = [["plans/free", "install-apps", "release-notes"]]
    bm25 = ["install-apps", "release-notes"]
    # The words view and BM25 agree on "install-apps"; its cosine is far below the best one.
    far = {"plans/free": 0.75, "install-apps": 0.32, "release-notes": 0.41}
    near = {"plans/free": 0.75, "install-apps": 0.70, "release-notes": 0.41}

    assert fused_order(dense, bm25, far)[0] == "plans/free"
    assert fused_order(dense, bm25, near)[0] == "install-apps"
    assert fused_order(dense, bm25)[0] == "install-apps"  # without cosines: rank fusion alone


def test_bm25_alone_or_one_dense_ranking_alone_keeps_its_order() -> None:
    assert fused_order([[]], ["b", "a"], {"a": 0.5, "b": 0.4}) == ["b", "a"]
    assert fused_order([["a", "b"]], []) == ["a", "b"]
    assert fused_order([], []) == []
