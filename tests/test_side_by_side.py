"""The parts of one search run at once, and a busy machine never makes them slower than in turn.

``workers.side_by_side`` runs a query mix's model calls and its views' FAISS scans beside each
other; retrieval over a large index uses it, and its rankings must be those of running the views
one after another.
"""

from __future__ import annotations

import threading
from typing import Any

import numpy as np
import pytest
from langchain_core.structured_query import Comparator, Comparison

from rasa_context_retrieval.faiss import retriever
from rasa_context_retrieval.faiss.index import KnowledgeIndex
from rasa_context_retrieval.faiss.retriever import retrieve
from rasa_context_retrieval.knowledge.models import Chunk
from rasa_context_retrieval.retrieve.request import RetrievalRequest
from rasa_context_retrieval.workers import _side_pool, side_by_side

WAIT_S = 5.0


def test_results_come_in_the_order_of_the_calls():
    assert side_by_side([lambda: 1, lambda: 2, lambda: 3]) == [1, 2, 3]
    assert side_by_side([lambda: "only"]) == ["only"]


def test_the_parts_run_at_the_same_time():
    second_started = threading.Event()

    def first() -> bool:
        return second_started.wait(WAIT_S)  # only true if the second runs meanwhile

    def second() -> str:
        second_started.set()
        return "second"

    assert side_by_side([first, second]) == [True, "second"]


def test_a_part_the_busy_pool_has_not_started_is_run_by_the_caller():
    release = threading.Event()
    blockers = [_side_pool.submit(release.wait, WAIT_S) for _ in range(_side_pool._max_workers)]
    try:
        ran_on: list[str] = []
        results = side_by_side(
            [lambda: "first", lambda: ran_on.append(threading.current_thread().name) or "second"]
        )
        assert results == ["first", "second"]
        assert ran_on == [threading.current_thread().name]
        assert not any(blocker.done() for blocker in blockers), "it did not wait for the pool"
    finally:
        release.set()
        for blocker in blockers:
            blocker.result()


def test_the_caller_runs_every_part_not_yet_started_before_it_waits_for_a_running_one():
    """With one pool thread busy on the second part, the third waited behind it in order; here
    the second can only end once the third has run, so that order would take ``WAIT_S``."""
    third_ran = threading.Event()
    release = threading.Event()
    blockers = [_side_pool.submit(release.wait, WAIT_S) for _ in range(_side_pool._max_workers - 1)]
    try:
        results = side_by_side(
            [lambda: "first", lambda: third_ran.wait(WAIT_S), lambda: third_ran.set() or "third"]
        )
        assert results == ["first", True, "third"]
        assert not any(blocker.done() for blocker in blockers), "it did not wait for the pool"
    finally:
        release.set()
        for blocker in blockers:
            blocker.result()


def test_an_error_in_any_part_reaches_the_caller():
    def fails() -> int:
        raise ValueError("part failed")

    with pytest.raises(ValueError, match="part failed"):
        side_by_side([lambda: 1, fails])
    with pytest.raises(ValueError, match="part failed"):
        side_by_side([fails, lambda: 1])


@pytest.fixture(scope="module")
def large_index() -> KnowledgeIndex:
    rng = np.random.default_rng(5)
    rows = 3_000
    vectors = rng.standard_normal((rows, 64)).astype(np.float32)
    vectors /= np.linalg.norm(vectors, axis=1, keepdims=True)
    chunks = [Chunk(f"c{row}", f"chunk {row}", {"group": f"g{row % 4}"}) for row in range(rows)]
    return KnowledgeIndex.build("fp", "test", chunks, vectors, [], exact_search_below=10 * rows)


@pytest.mark.parametrize("filtered", [False, True])
def test_views_searched_side_by_side_rank_as_searched_in_turn(
    large_index: KnowledgeIndex, monkeypatch: Any, filtered: bool
):
    rng = np.random.default_rng(9)
    views = rng.standard_normal((3, 64)).astype(np.float32)
    views /= np.linalg.norm(views, axis=1, keepdims=True)
    request = RetrievalRequest(
        texts=["q"],
        vectors=list(views),
        filter=Comparison(comparator=Comparator.EQ, attribute="group", value="g1")
        if filtered
        else None,
        top_k=10,
        threshold=0.0,
        candidates=20,
        hybrid=False,
    )
    monkeypatch.setattr(retriever, "SIDE_BY_SIDE_MIN_ROWS", len(large_index) + 1)  # in turn
    in_turn = retrieve(large_index, request)
    calls: list[int] = []
    real = retriever.side_by_side

    def counted(parts: Any) -> Any:
        calls.append(len(parts))
        return real(parts)

    allowed = len(large_index) // 4 if filtered else len(large_index)
    monkeypatch.setattr(retriever, "SIDE_BY_SIDE_MIN_ROWS", allowed)
    monkeypatch.setattr(retriever, "side_by_side", counted)
    beside = retrieve(large_index, request)
    assert calls == [3]
    assert [(r.chunk.chunk_id, r.relevance) for r in beside] == [
        (r.chunk.chunk_id, r.relevance) for r in in_turn
    ]
    assert len(beside) == 10


def test_a_filter_allowing_fewer_rows_than_the_threshold_searches_in_turn(
    large_index: KnowledgeIndex, monkeypatch: Any
):
    """A narrow filter's scans cost less than handing one to another thread."""
    request = RetrievalRequest(
        texts=["q"],
        vectors=[np.eye(64, dtype=np.float32)[0], np.eye(64, dtype=np.float32)[1]],
        filter=Comparison(comparator=Comparator.EQ, attribute="group", value="g1"),
        top_k=5,
        threshold=0.0,
        candidates=10,
        hybrid=False,
    )
    monkeypatch.setattr(retriever, "SIDE_BY_SIDE_MIN_ROWS", len(large_index) // 4 + 1)
    monkeypatch.setattr(retriever, "side_by_side", lambda parts: pytest.fail("handed off"))
    assert len(retrieve(large_index, request)) == 5
