"""Executing a search plan on a knowledge index: exact filtered rankings, fused, scored, cut.

Every ranking (dense for each view of the query and each paraphrase, BM25 when hybrid) is computed
inside the same filter mask, so no result can violate a slot filter and a narrow filter still
yields its best ``top_k`` (exactly; a broad filter on an HNSW index walks the graph, see
``faiss.dense``). Rankings are fused with reciprocal rank fusion; the score given to
each result is always its cosine relevance to the leading query vector (clipped to [0, 1]), so
``threshold`` means the same thing whatever produced the ranking.
"""

from __future__ import annotations

import functools

import numpy as np

from rasa_context_retrieval.faiss.index import KnowledgeIndex
from rasa_context_retrieval.ingestion.knowledge import (
    filter_mask,
    readable_values,
    served_mask,
    values_admitted,
)
from rasa_context_retrieval.knowledge.models import ScoredChunk
from rasa_context_retrieval.retrieve.fusion import fused_order
from rasa_context_retrieval.retrieve.request import RetrievalRequest
from rasa_context_retrieval.workers import side_by_side

__all__ = ["filter_mask", "readable_values", "retrieve", "served_mask", "values_admitted"]

SIDE_BY_SIDE_MIN_ROWS = 20_000
"""From this many chunks allowed by the filter the views' dense searches run at once
(``workers.side_by_side``): each is then a scan of milliseconds, against a thread hand-off of
tens of microseconds; a narrow filter's scans are cheaper than the hand-off."""


def retrieve(
    index: KnowledgeIndex, request: RetrievalRequest, withheld: np.ndarray | None = None
) -> list[ScoredChunk]:
    """The best ``top_k`` chunks allowed by the filter and not ``withheld``, ranked by fused
    evidence."""
    mask = served_mask(index.knowledge, request.filter, withheld)
    if mask is not None and not mask.any():
        return []
    searches = [
        functools.partial(index.dense.search, vector, request.candidates, mask)
        for vector in request.vectors
    ]
    found = (
        side_by_side(searches)
        if len(searches) > 1 and _allowed_rows(index, mask) >= SIDE_BY_SIDE_MIN_ROWS
        else [search() for search in searches]
    )
    dense = [[str(row) for row, _ in hits] for hits in found]
    lexical: list[str] = []
    if request.hybrid:
        hits = index.knowledge.lexical.search(request.texts[0], request.candidates, mask)
        lexical = [str(row) for row, score in hits if score > 0]
    cosines = None
    if lexical:  # BM25 ranks only near the best cosine (fused_order): the leader's and its hits'
        leading = [*dense[0][:1], *lexical] if dense else lexical
        scores = index.knowledge.vectors[[int(row) for row in leading]] @ request.vectors[0]
        cosines = dict(zip(leading, scores.tolist(), strict=True))
    rows = [int(row) for row in fused_order(dense, lexical, cosines)]
    relevance = (
        np.clip(index.knowledge.vectors[rows] @ request.vectors[0], 0.0, 1.0) if rows else []
    )
    results = [
        ScoredChunk(index.knowledge.chunks[row], float(score))
        for row, score in zip(rows, relevance, strict=True)
        if score >= request.threshold
    ]
    return results[: request.top_k]


def _allowed_rows(index: KnowledgeIndex, mask: np.ndarray | None) -> int:
    return len(index) if mask is None else int(np.count_nonzero(mask))
