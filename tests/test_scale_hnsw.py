"""Above ``exact_search_below`` chunks the dense index is HNSW; every filtered hit is allowed.

A filter is access control: whatever the path, a filtered search returns only allowed chunks. A
narrow filter is searched exactly (the k nearest allowed chunks); a broad one walks the graph
with the filter as a selector and keeps recall@10 >= 0.97 against exact search, like unfiltered
searches do with the persisted ``efSearch``.
"""

from __future__ import annotations

from pathlib import Path
from typing import Any

import numpy as np
import pytest
from numpy.typing import NDArray

from rasa_context_retrieval.faiss.dense import (
    FLAT_FACTORY,
    GRAPH_MIN_FRACTION,
    HNSW_EF_SEARCH,
    HNSW_FACTORY,
    DenseIndex,
    factory_for,
)
from rasa_context_retrieval.faiss.index import KnowledgeIndex
from rasa_context_retrieval.knowledge.models import Chunk

pytestmark = pytest.mark.slow  # builds HNSW graphs and measures their recall

ROWS, DIMENSION, K = 6_000, 384, 10
QUERIES = 60


def clustered(rows: int, seed: int) -> NDArray[np.float32]:
    """Unit vectors with the low intrinsic dimension of sentence embeddings (not uniform noise)."""
    rng = np.random.default_rng(seed)
    basis = rng.standard_normal((24, DIMENSION))
    latent = rng.standard_normal((rows, 24)) * (np.arange(1, 25) ** -0.5)
    matrix = latent @ basis + 0.05 * rng.standard_normal((rows, DIMENSION))
    return (matrix / np.linalg.norm(matrix, axis=1, keepdims=True)).astype(np.float32)


@pytest.fixture(scope="module")
def vectors() -> NDArray[np.float32]:
    return clustered(ROWS + QUERIES, seed=11)


@pytest.fixture(scope="module")
def hnsw(vectors: NDArray[np.float32]) -> KnowledgeIndex:
    chunks = [Chunk(f"c{row}", f"chunk {row}", {"group": row % 7}) for row in range(ROWS)]
    return KnowledgeIndex.build("fp", "test", chunks, vectors[:ROWS], [], exact_search_below=1000)


def exact(
    vectors: NDArray[np.float32], query: NDArray[np.float32], mask: NDArray[np.bool_] | None
) -> list[int]:
    rows = np.arange(len(vectors)) if mask is None else np.flatnonzero(mask)
    scores = vectors[rows].astype(np.float64) @ query
    return rows[np.argsort(-scores, kind="stable")[:K]].tolist()


def test_the_index_type_follows_the_corpus_size(vectors: NDArray[np.float32]):
    assert factory_for(199_999, 200_000) == FLAT_FACTORY
    assert factory_for(200_000, 200_000) == HNSW_FACTORY
    chunks = [Chunk(f"c{row}", "text", {}) for row in range(50)]
    small = KnowledgeIndex.build("fp", "t", chunks, vectors[:50], [], exact_search_below=51)
    large = KnowledgeIndex.build("fp", "t", chunks, vectors[:50], [], exact_search_below=50)
    assert not small.dense.approximate
    assert large.dense.approximate


def test_unfiltered_search_on_hnsw_keeps_recall_at_10_above_0_97(
    hnsw: KnowledgeIndex, vectors: NDArray[np.float32]
):
    assert hnsw.dense.approximate
    corpus = vectors[:ROWS]
    recalls = [
        len({row for row, _ in hnsw.dense.search(query, K)} & set(exact(corpus, query, None))) / K
        for query in vectors[ROWS:]
    ]
    assert np.mean(recalls) >= 0.97


def random_mask(share: float, seed: int) -> NDArray[np.bool_]:
    rng = np.random.default_rng(seed)
    mask = rng.random(ROWS) < share
    mask[rng.integers(ROWS)] = True
    return mask


@pytest.mark.parametrize("share", [0.001, 0.03, GRAPH_MIN_FRACTION * 0.9])
def test_a_narrow_filter_is_searched_exactly(
    hnsw: KnowledgeIndex, vectors: NDArray[np.float32], share: float
):
    mask = random_mask(share, seed=int(share * 1000))
    assert not hnsw.dense.walks_graph(int(mask.sum()))
    for query in vectors[ROWS : ROWS + 20]:
        found = [row for row, _ in hnsw.dense.search(query, K, mask)]
        assert found == exact(vectors[:ROWS], query, mask)


@pytest.mark.parametrize("share", [GRAPH_MIN_FRACTION * 1.2, 0.43, 0.9, 1.0])
def test_a_broad_filter_walks_the_graph_with_recall_at_10_above_0_97(
    hnsw: KnowledgeIndex, vectors: NDArray[np.float32], share: float
):
    mask = random_mask(share, seed=int(share * 1000))
    assert hnsw.dense.walks_graph(int(mask.sum()))
    recalls = []
    for query in vectors[ROWS:]:
        found = [row for row, _ in hnsw.dense.search(query, K, mask)]
        assert len(found) == K
        assert mask[found].all(), "a filtered search returned a row the filter excludes"
        recalls.append(len(set(found) & set(exact(vectors[:ROWS], query, mask))) / K)
    assert np.mean(recalls) >= 0.97


def test_both_paths_return_the_same_top_k_on_small_data(vectors: NDArray[np.float32]):
    small = DenseIndex.build(vectors[:1500], HNSW_FACTORY)
    mask = np.random.default_rng(5).random(1500) < 0.43
    for query in vectors[ROWS : ROWS + 20]:
        graph = small.search(query, K, mask, exact=False)
        scan = small.search(query, K, mask, exact=True)
        assert [row for row, _ in graph] == [row for row, _ in scan]
        np.testing.assert_allclose([s for _, s in graph], [s for _, s in scan], rtol=1e-5)


def test_a_graph_walk_that_finds_too_few_allowed_rows_falls_back_to_the_exact_scan(
    hnsw: KnowledgeIndex, vectors: NDArray[np.float32]
):
    mask = np.zeros(ROWS, dtype=bool)
    far = np.argsort(vectors[:ROWS] @ vectors[ROWS])[:3]  # the rows least like the query
    mask[far] = True
    found = hnsw.dense.search(vectors[ROWS], K, mask, exact=False)
    assert sorted(row for row, _ in found) == sorted(far.tolist())


def test_the_graph_is_never_used_on_a_flat_index(vectors: NDArray[np.float32]):
    flat = DenseIndex.build(vectors[:500])
    assert not flat.walks_graph(500)
    assert not flat.walks_graph(500, exact=False)


def test_hnsw_and_its_search_width_survive_a_restart(
    hnsw: KnowledgeIndex, vectors: NDArray[np.float32], tmp_path: Path
):
    hnsw.write(tmp_path / "index")
    loaded = KnowledgeIndex.read(tmp_path / "index")
    assert loaded.dense.approximate
    graph: Any = loaded.dense._index
    assert graph.hnsw.efSearch == HNSW_EF_SEARCH
    np.testing.assert_array_equal(loaded.knowledge.vectors, hnsw.knowledge.vectors)
    mask = np.arange(ROWS) % 7 == 3
    for query in vectors[ROWS : ROWS + 5]:
        assert loaded.dense.search(query, K) == hnsw.dense.search(query, K)
        assert [r for r, _ in loaded.dense.search(query, K, mask)] == exact(
            vectors[:ROWS], query, mask
        )


def test_an_hnsw_index_without_flat_storage_is_refused() -> None:
    import faiss

    index: Any = faiss.index_factory(8, "HNSW8,SQ8", faiss.METRIC_INNER_PRODUCT)
    with pytest.raises(ValueError, match="cannot filter exactly"):
        DenseIndex(index)


def test_lowering_exact_search_below_rebuilds_as_hnsw_without_re_embedding(tmp_path: Path):
    from dataclasses import replace

    from rasa_context_retrieval.faiss.builder import ensure_index
    from tests.test_index_persistence import HashingEmbedder, make_docs, settings_for

    settings = settings_for(make_docs(tmp_path, 30))
    assert not ensure_index(settings, HashingEmbedder(), progress=False).dense.approximate
    refuses = HashingEmbedder()
    refuses.embed = lambda texts: pytest.fail("unchanged chunks must not be re-embedded")  # type: ignore[method-assign]
    lowered = replace(settings, exact_search_below=10)
    assert ensure_index(lowered, refuses, progress=False).dense.approximate
