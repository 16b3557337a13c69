"""Dense search is exact within a filter: the k nearest allowed chunks, at any selectivity."""

from __future__ import annotations

from concurrent.futures import ThreadPoolExecutor
from pathlib import Path
from typing import Any

import numpy as np
import pytest
from numpy.typing import NDArray

from rasa_context_retrieval.faiss.dense import GATHER_MAX_FRACTION, DenseIndex, DenseIndexError

ROWS, DIMENSION, K = 20_000, 32, 10


def normalised(matrix: NDArray[Any]) -> NDArray[np.float32]:
    return (matrix / np.linalg.norm(matrix, axis=-1, keepdims=True)).astype(np.float32)


@pytest.fixture(scope="module")
def vectors() -> NDArray[np.float32]:
    return normalised(np.random.default_rng(7).standard_normal((ROWS, DIMENSION)))


@pytest.fixture(scope="module")
def index(vectors: NDArray[np.float32]) -> DenseIndex:
    return DenseIndex.build(vectors)


def brute_force(
    vectors: NDArray[np.float32], query: NDArray[np.float32], k: int, mask: NDArray[np.bool_]
) -> list[int]:
    rows = np.flatnonzero(mask)
    scores = vectors[rows].astype(np.float64) @ query
    return rows[np.argsort(-scores, kind="stable")[:k]].tolist()


def query_near(vectors: NDArray[np.float32], seed: int) -> NDArray[np.float32]:
    rng = np.random.default_rng(seed)
    return normalised(vectors[seed] + 0.5 * rng.standard_normal(DIMENSION))


@pytest.mark.parametrize(
    "selectivity",
    [0.0005, 0.01, GATHER_MAX_FRACTION * 0.9, GATHER_MAX_FRACTION * 1.1, 0.3, 0.9, 1.0],
)
def test_filtered_search_equals_brute_force_over_the_allowed_rows(
    index: DenseIndex, vectors: NDArray[np.float32], selectivity: float
) -> None:
    rng = np.random.default_rng(int(selectivity * 10_000))
    for seed in range(5):
        mask = rng.random(ROWS) < selectivity
        query = query_near(vectors, seed)

        hits = index.search(query, K, mask)

        assert [row for row, _ in hits] == brute_force(vectors, query, K, mask)
        assert all(mask[row] for row, _ in hits)
        expected_scores = [float(vectors[row] @ query) for row, _ in hits]
        assert [score for _, score in hits] == pytest.approx(expected_scores, abs=1e-5)


def test_without_mask_search_is_plain_exact_knn(
    index: DenseIndex, vectors: NDArray[np.float32]
) -> None:
    query = query_near(vectors, 3)

    hits = index.search(query, K)

    assert [row for row, _ in hits] == brute_force(vectors, query, K, np.ones(ROWS, dtype=bool))
    assert hits[0][1] >= hits[-1][1]


def test_fewer_allowed_rows_than_k_returns_just_those(
    index: DenseIndex, vectors: NDArray[np.float32]
) -> None:
    mask = np.zeros(ROWS, dtype=bool)
    mask[[5, 17, 19_999]] = True

    hits = index.search(vectors[17], K, mask)

    assert [row for row, _ in hits][0] == 17
    assert sorted(row for row, _ in hits) == [5, 17, 19_999]
    assert index.search(vectors[17], K, np.zeros(ROWS, dtype=bool)) == []


def test_concurrent_searches_from_threads_give_the_sequential_results(
    index: DenseIndex, vectors: NDArray[np.float32]
) -> None:
    rng = np.random.default_rng(1)
    cases = [
        (query_near(vectors, seed), rng.random(ROWS) < rng.choice([0.01, 0.5]))
        for seed in range(24)
    ]
    sequential = [index.search(query, K, mask) for query, mask in cases]

    with ThreadPoolExecutor(max_workers=6) as pool:
        concurrent = list(pool.map(lambda case: index.search(case[0], K, case[1]), cases))

    assert concurrent == sequential


def test_written_index_reads_back_with_the_same_vectors_and_results(
    index: DenseIndex, vectors: NDArray[np.float32], tmp_path: Path
) -> None:
    path = tmp_path / "dense.faiss"
    mask = np.arange(ROWS) % 7 == 0

    index.write(path)
    loaded = DenseIndex.read(path)

    assert len(loaded) == ROWS and loaded.dimension == DIMENSION
    assert np.array_equal(loaded.vectors, vectors)
    assert loaded.search(vectors[14], K, mask) == index.search(vectors[14], K, mask)
    assert not path.read_bytes().startswith(b"\x80")  # not a pickle


def test_vectors_are_exposed_read_only(index: DenseIndex, vectors: NDArray[np.float32]) -> None:
    assert np.array_equal(index.vectors, vectors)
    with pytest.raises(ValueError):
        index.vectors[0, 0] = 0.0


def test_an_approximate_index_type_can_be_chosen_at_build(vectors: NDArray[np.float32]) -> None:
    hnsw = DenseIndex.build(vectors[:2000], factory="HNSW16")

    assert len(hnsw) == 2000
    assert hnsw.search(vectors[10], 1)[0][0] == 10
    assert np.allclose(hnsw.vectors, vectors[:2000])


def test_misfitting_inputs_raise_errors_that_say_how_to_fix_them(index: DenseIndex) -> None:
    unit = normalised(np.ones(DIMENSION, dtype=np.float32))
    with pytest.raises(DenseIndexError, match="normalise"):
        DenseIndex.build(np.ones((3, DIMENSION), dtype=np.float32))
    with pytest.raises(DenseIndexError, match="dimension"):
        index.search(unit[:-1], K)
    with pytest.raises(DenseIndexError, match="Mask"):
        index.search(unit, K, np.ones(ROWS, dtype=np.int8))
    with pytest.raises(DenseIndexError, match="Mask"):
        index.search(unit, K, np.ones(ROWS - 1, dtype=bool))


def test_an_empty_index_finds_nothing() -> None:
    empty = DenseIndex.build(np.empty((0, DIMENSION), dtype=np.float32))

    assert len(empty) == 0
    assert empty.search(normalised(np.ones(DIMENSION, dtype=np.float32)), K) == []
