"""Dense search within a metadata filter, over L2-normalised vectors (cosine = inner product).

A filter is access control, so the k results must be the k nearest chunks *among those the
filter allows*, not whatever survives of an unfiltered top ``fetch_k``. The filter arrives as a
bool row mask (``filters.faiss_translator``), and the search picks one of two exact
strategies by the share of rows it selects (measured on 100k x 384, see
bench/results/filtered_search.md):

* few rows (at most ``GATHER_MAX_FRACTION``): gather those vectors and score them in numpy on the
  calling thread; cost grows with the selection only;
* more rows: FAISS's own search with an ``IDSelectorBitmap``, which skips unselected rows.

Large corpora (``factory_for``: from ``exact_search_below`` rows) use an HNSW graph over a flat
store (``HNSW32,Flat``), with ``efSearch`` tuned for recall@10 >= 0.97 and persisted inside the
FAISS file. On such an index a mask picks one of two paths by the share of rows it keeps
(``GRAPH_MIN_FRACTION``, chosen by a sweep of selectivities, bench/results/scale.md):

* a broad mask (a plan or region slot) walks the graph with the mask as an ``IDSelectorBitmap``: an
  exact scan grows with the rows the filter keeps, the graph walk does not, and its recall stays
  that of an unfiltered graph search. Unselected rows are only stepped through, never returned, so a
  result is always allowed; if the walk finds fewer than ``k`` allowed rows, the exact path answers;
* a narrow mask scans exactly the rows it keeps (as on a flat index): a graph walk would mostly
  visit unselected rows, and such filters are cheap to scan anyway.

Searches only read the index, so any number of threads may search at once. Persistence uses
``faiss.write_index``/``faiss.read_index``: no pickle. Given the vectors as a memory-mapped
array, a read maps FAISS's copy too (``IO_FLAG_MMAP_IFC``) instead of reading it, so loading
the vectors costs no time and worker processes share the pages. numpy reads its own mapped
array, not FAISS's mapping: gathering rows from FAISS's mapping kept taking page faults and was
an order of magnitude slower, from ``np.load(mmap_mode="r")`` as fast as from the heap.
"""

from __future__ import annotations

import time
from os import PathLike
from typing import Any

import faiss
import numpy as np
import structlog
from numpy.typing import NDArray

from rasa_context_retrieval.errors import ContextRetrievalError

logger = structlog.get_logger(__name__)

FLAT_FACTORY = "Flat"
"""faiss.index_factory description of the default exhaustive index."""

HNSW_FACTORY = "HNSW32,Flat"
"""The approximate index for large corpora: HNSW graph (32 links per node) over flat storage."""

HNSW_EF_CONSTRUCTION = 64
"""Build-time beam width of the HNSW graph (FAISS default 40; 64 lifts recall at +30% build)."""

HNSW_EF_SEARCH = 256
"""Search-time beam width: recall@10 0.997 against exact search at 1M chunks, p50 1.3 ms (128 gave
0.967, 192 0.994; bench/results/scale.md)."""

GATHER_MAX_FRACTION = 0.05
"""Exact path: masks selecting at most this share of rows are scored by gathering their vectors."""

GRAPH_MIN_FRACTION = 0.05
"""On an HNSW index, masks keeping at least this share of rows walk the graph (see module doc)."""

WIDE_WALK_BELOW_FRACTION = 0.2
"""Graph walks under masks keeping less than this share use twice the persisted ``efSearch``:
the fewer rows a mask keeps, the more of the walk is spent on rows it excludes."""

NORM_TOLERANCE = 1e-3
"""How far a vector's L2 norm may be from 1 before it is rejected as not normalised."""

Hit = tuple[int, float]
"""(row, cosine similarity)."""


class DenseIndexError(ContextRetrievalError, ValueError):
    """The vectors, query or mask given to a ``DenseIndex`` do not fit it."""


def factory_for(rows: int, exact_search_below: int) -> str:
    """The index type for a corpus of ``rows`` chunks: exhaustive below the threshold, else HNSW."""
    return FLAT_FACTORY if rows < exact_search_below else HNSW_FACTORY


class DenseIndex:
    """Inner-product search over normalised float32 vectors, exact within a row mask.

    Unfiltered search is exact for a flat index and approximate (HNSW) for an HNSW one.
    """

    def __init__(self, index: faiss.Index, vectors: NDArray[np.float32] | None = None) -> None:
        """Wrap ``index``; ``vectors`` is a read-only copy of its vectors for numpy to read."""
        if index.metric_type != faiss.METRIC_INNER_PRODUCT:
            raise DenseIndexError(
                "The FAISS index must use METRIC_INNER_PRODUCT (cosine on normalised vectors); "
                "rebuild it with DenseIndex.build()."
            )
        self._index = index  # owns the C++ index; the flat storage below is only borrowed
        self._exhaustive = _exhaustive_part(index)
        if vectors is None:
            vectors = _stored_vectors(self._exhaustive)
        elif vectors.dtype != np.float32 or vectors.shape != (index.ntotal, index.d):
            raise DenseIndexError(
                f"Vectors of {vectors.dtype}{vectors.shape} do not fit an index of "
                f"{index.ntotal} x {index.d}; rebuild the index."
            )
        self._vectors = vectors

    @classmethod
    def build(cls, vectors: NDArray[Any], factory: str = FLAT_FACTORY) -> DenseIndex:
        """Index ``vectors`` (rows L2-normalised); row i of the matrix is result row i."""
        matrix = np.ascontiguousarray(vectors, dtype=np.float32)
        if matrix.ndim != 2 or matrix.shape[1] == 0:
            raise DenseIndexError(f"Expected a 2-d (rows, dimension) matrix, got {matrix.shape}.")
        _check_normalised(matrix, "vectors")
        index = faiss.index_factory(matrix.shape[1], factory, faiss.METRIC_INNER_PRODUCT)
        hnsw = getattr(index, "hnsw", None)
        if hnsw is not None:
            hnsw.efConstruction = HNSW_EF_CONSTRUCTION
            hnsw.efSearch = HNSW_EF_SEARCH  # written with the index by faiss.write_index
        index.add(matrix)
        return cls(index)

    @classmethod
    def read(
        cls, path: str | PathLike[str], vectors: NDArray[np.float32] | None = None
    ) -> DenseIndex:
        """Load an index written by ``write``; mapped, not read, when ``vectors`` are given."""
        flags = faiss.IO_FLAG_MMAP_IFC if vectors is not None else 0
        return cls(faiss.read_index(str(path), flags), vectors)

    def write(self, path: str | PathLike[str]) -> None:
        """Persist the index with faiss.write_index."""
        faiss.write_index(self._index, str(path))

    def __len__(self) -> int:
        return int(self._index.ntotal)

    @property
    def dimension(self) -> int:
        return int(self._index.d)

    @property
    def approximate(self) -> bool:
        """Whether unfiltered searches go through an approximate (HNSW) graph."""
        return self._exhaustive is not self._index

    @property
    def vectors(self) -> NDArray[np.float32]:
        """The indexed vectors, read-only, row i = result row i."""
        return self._vectors

    def search(
        self,
        query: NDArray[Any],
        k: int,
        mask: NDArray[np.bool_] | None = None,
        *,
        exact: bool | None = None,
    ) -> list[Hit]:
        """The ``k`` rows nearest to ``query`` among those ``mask`` allows, best first.

        Every hit is allowed by ``mask``. On a flat index the result equals brute force over the
        allowed rows; on an HNSW index it does for narrow masks and is approximate (like an
        unfiltered search) for broad ones. ``exact`` forces the exact scan (True) or the graph
        (False) instead of choosing by the mask's share. Fewer than ``k`` hits are returned when
        fewer rows are allowed. Ties are broken by row number.
        """
        vector = self._check_query(query)
        started = time.perf_counter()
        if k <= 0 or len(self) == 0:
            return []
        allowed = len(self)
        if mask is None:
            hits = self._search_faiss(self._index, vector, k, None)
            strategy = "hnsw" if self.approximate else "faiss"
        else:
            allowed = int(np.count_nonzero(self._check_mask(mask)))
            hits, strategy = self._search_masked(vector, k, mask, allowed, exact)
        logger.debug(
            "retrieve.dense.searched",
            strategy=strategy,
            k=k,
            allowed=allowed,
            hits=len(hits),
            ms=round((time.perf_counter() - started) * 1000, 3),
        )
        return hits

    def walks_graph(self, allowed: int, exact: bool | None = None) -> bool:
        """Whether a mask keeping ``allowed`` rows is searched on the HNSW graph."""
        if not self.approximate or exact:
            return False
        return exact is False or allowed >= GRAPH_MIN_FRACTION * len(self)

    def _search_masked(
        self,
        vector: NDArray[np.float32],
        k: int,
        mask: NDArray[np.bool_],
        allowed: int,
        exact: bool | None,
    ) -> tuple[list[Hit], str]:
        if self.walks_graph(allowed, exact):
            wide = allowed < WIDE_WALK_BELOW_FRACTION * len(self)
            hits = self._search_faiss(self._index, vector, k, mask, widen=2 if wide else 1)
            if len(hits) >= min(k, allowed):
                return hits, "hnsw_bitmap"
        if allowed <= GATHER_MAX_FRACTION * len(self):
            return self._search_gathered(vector, k, np.flatnonzero(mask)), "gather"
        return self._search_faiss(self._exhaustive, vector, k, mask), "faiss_bitmap"

    def _search_gathered(self, query: NDArray[np.float32], k: int, rows: NDArray[Any]) -> list[Hit]:
        if len(rows) == 0:
            return []
        # einsum rather than ``@``: a BLAS matrix-vector product above ~1k rows wakes OpenBLAS's
        # thread pool, which on a busy 2-core machine turned 0.1 ms into 20 ms.
        scores = np.einsum("ij,j->i", np.take(self._vectors, rows, axis=0), query)
        if len(rows) > k:
            best = np.argpartition(-scores, k - 1)[:k]
            rows, scores = rows[best], scores[best]
        return _ranked(rows, scores)

    def _search_faiss(
        self,
        index: faiss.Index,
        query: NDArray[np.float32],
        k: int,
        mask: NDArray[np.bool_] | None,
        widen: int = 1,
    ) -> list[Hit]:
        params = None
        if mask is not None:
            # The packed bitmap must outlive the search call: keep it in this frame.
            bitmap = np.packbits(mask, bitorder="little")
            selector = faiss.IDSelectorBitmap(len(bitmap), faiss.swig_ptr(bitmap))
            if isinstance(index, faiss.IndexHNSW):
                params = faiss.SearchParametersHNSW()  # type: ignore[attr-defined]  # not in faiss stubs
                params.efSearch = index.hnsw.efSearch * widen  # else FAISS's default 16 applies
            else:
                params = faiss.SearchParameters()
            params.sel = selector
        scores, rows = index.search(query[None, :], min(k, len(self)), params=params)
        found = rows[0] >= 0
        return _ranked(rows[0][found], scores[0][found])

    def _check_query(self, query: NDArray[Any]) -> NDArray[np.float32]:
        vector = np.ascontiguousarray(query, dtype=np.float32).reshape(-1)
        if vector.shape[0] != self.dimension:
            raise DenseIndexError(
                f"Query has dimension {vector.shape[0]}, the index {self.dimension}: embed the "
                "query with the model that embedded the chunks."
            )
        _check_normalised(vector[None, :], "query")
        return vector

    def _check_mask(self, mask: NDArray[Any]) -> NDArray[np.bool_]:
        if mask.dtype != np.bool_ or mask.shape != (len(self),):
            raise DenseIndexError(
                f"Mask must be a bool array of shape ({len(self)},), got {mask.dtype} "
                f"{mask.shape}; build it with FaissTranslator over this index's metadata."
            )
        return mask


def _ranked(rows: NDArray[Any], scores: NDArray[Any]) -> list[Hit]:
    order = np.lexsort((rows, -scores))
    return [(int(rows[i]), float(scores[i])) for i in order]


def _check_normalised(matrix: NDArray[np.float32], what: str) -> None:
    norms = np.linalg.norm(matrix, axis=1)
    bad = np.flatnonzero(np.abs(norms - 1.0) > NORM_TOLERANCE)
    if len(bad):
        raise DenseIndexError(
            f"{what} row {int(bad[0])} has L2 norm {float(norms[bad[0]]):.4f}; "
            "normalise embeddings (normalize_embeddings=True) before indexing or searching."
        )


def _exhaustive_part(index: faiss.Index) -> faiss.Index:
    """The index itself when it is exhaustive, the flat storage under an HNSW graph otherwise."""
    if isinstance(index, faiss.IndexHNSW):
        storage = faiss.downcast_index(index.storage)
        if not isinstance(storage, faiss.IndexFlat):
            raise DenseIndexError(
                f"HNSW over {type(storage).__name__} cannot filter exactly; build it with "
                f"DenseIndex.build(factory={HNSW_FACTORY!r})."
            )
        return storage
    return index


def _stored_vectors(index: faiss.Index) -> NDArray[np.float32]:
    if index.ntotal == 0:
        vectors = np.empty((0, index.d), dtype=np.float32)
    elif isinstance(index, faiss.IndexFlat):
        # Zero-copy view of the flat index's own storage; valid while the index lives.
        view = faiss.rev_swig_ptr(index.get_xb(), index.ntotal * index.d)
        vectors = np.asarray(view).reshape(index.ntotal, index.d)
    else:
        vectors = np.asarray(index.reconstruct_n(0, index.ntotal), dtype=np.float32)
    vectors.flags.writeable = False
    return vectors
