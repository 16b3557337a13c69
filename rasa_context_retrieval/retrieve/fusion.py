"""Reciprocal rank fusion: one ranking out of several, by rank alone.

Dense search for the standalone query, dense search for each LLM paraphrase and BM25 produce
rankings whose scores are not comparable (cosines of different query vectors, BM25 weights), so
they are fused by rank: a chunk scores ``sum(1 / (k + rank))`` over the rankings it appears in
(Cormack, Clarke & Büttcher, SIGIR 2009; ``k = 60`` as there). A chunk found by several rankings
rises; a chunk only one ranking likes still keeps its place among the others' hits.

Why not LangChain's ``MultiQueryRetriever``: it concatenates the result lists in generation order
and removes duplicates, and by default drops the original query (``include_original=False``).
The first paraphrase's hits therefore fill the top of the list whatever the other queries found,
and a paraphrase that drifted away from the user's question can push out the hits of the
question itself. Here the caller always passes the ranking of the original standalone query as
one of the lists (conventionally the first), and every list counts the same.

The fused score is for ordering only. The score reported to Rasa stays each chunk's cosine
relevance to the standalone query in [0, 1] (attached by the caller), so ``threshold`` keeps one
meaning whether or not fusion ran.

Hand-written because it is ten lines; the libraries that ship RRF (ranx, LangChain's
``EnsembleRetriever``) come with a retriever or evaluation framework around it.
"""

from __future__ import annotations

import math
from collections.abc import Mapping, Sequence

DEFAULT_RRF_K = 60

LEXICAL_WEIGHT = 0.3
"""What BM25's ranking counts for next to a dense ranking's 1. Dense search finds what a
question means, BM25 the rare words it shares with a document ("excess", "Saturday", "6.4").
Even at 0.3, BM25's first place outweighs the gap between dense ranks 1 and 2 (k = 60 makes
the top ranks almost equal), so BM25 decides among near-ties; ``LEXICAL_MARGIN`` keeps it from
deciding more. Chosen with the margin on the dev halves of eleven help centres and the example
eval, against 1.0 (bench/results/grounded_all.md)."""

LEXICAL_MARGIN = 0.2
"""How far below the best chunk's cosine (to the leading view) a BM25 hit may be and still be
ranked by its words (``fused_order``). Without it, on the dev halves, BM25 overturned answers
dense search was sure of (airline 0.798 to 0.742 MRR@4 at weight 1.0); measured at 0.1 and 0.2."""


def reciprocal_rank_fusion(
    rankings: Sequence[Sequence[str]],
    k: int = DEFAULT_RRF_K,
    weights: Sequence[float] | None = None,
) -> list[tuple[str, float]]:
    """Fuse rankings of chunk ids (best first) into ``(chunk_id, rrf_score)``, best first.

    ``weights`` (one per ranking, default 1 each) scale each ranking's contributions: a ranking
    that is evidence rather than a search of its own (the previous answer's document,
    ``retrieve.answer_prior``) counts for less than a full ranking.

    Each id appears once in the result. An id repeated within one ranking counts once, at its
    best rank there. Equal scores are ordered by the best rank the id reached in any ranking,
    then by the earliest ranking it reached it in (the standalone query's, when passed first),
    then by id, so the order never depends on dict or set iteration.

    Raises:
        ValueError: ``k`` is negative, or ``weights`` does not give one weight per ranking.
    """
    if k < 0:
        raise ValueError(f"k must be >= 0 (got {k}); the customary value is {DEFAULT_RRF_K}")
    if weights is not None and len(weights) != len(rankings):
        raise ValueError(f"{len(weights)} weights for {len(rankings)} rankings: give one each")
    scale = [1.0] * len(rankings) if weights is None else list(weights)
    contributions: dict[str, list[float]] = {}
    best_position: dict[str, tuple[int, int]] = {}
    for list_index, ranking in enumerate(rankings):
        seen: set[str] = set()
        for rank, chunk_id in enumerate(ranking, start=1):
            if chunk_id in seen:
                continue
            seen.add(chunk_id)
            contributions.setdefault(chunk_id, []).append(scale[list_index] / (k + rank))
            position = (rank, list_index)
            if position < best_position.get(chunk_id, (math.inf, math.inf)):  # type: ignore[operator]
                best_position[chunk_id] = position
    # math.fsum is exactly rounded, so equal multisets of ranks give bit-identical scores.
    scores = {chunk_id: math.fsum(parts) for chunk_id, parts in contributions.items()}
    return sorted(
        scores.items(),
        key=lambda item: (-item[1], *best_position[item[0]], item[0]),
    )


def fused_order(
    dense: Sequence[Sequence[str]],
    lexical: Sequence[str] = (),
    relevance: Mapping[str, float] | None = None,
) -> list[str]:
    """Chunk ids, best first, of the dense rankings (one per view of the query and per
    paraphrase, the leading view first) fused with BM25's at ``LEXICAL_WEIGHT``.

    BM25 only ranks chunks that mean about as much as the best one: ``relevance`` (cosine to
    the leading view, for the leading view's best and every BM25 hit) keeps the BM25 hits within
    ``LEXICAL_MARGIN`` of the best. Rank fusion alone ignores how far apart two cosines are, so
    a page that only shares a word ("Android") overtook the one answer dense search was sure of
    (0.32 against 0.75). Empty rankings take no part; a lone ranking is kept as it is.
    """
    if lexical and relevance is not None:
        known = [
            relevance[chunk_id]
            for chunk_id in [*(dense[0][:1] if dense else []), *lexical]
            if chunk_id in relevance
        ]
        floor = max(known, default=math.inf) - LEXICAL_MARGIN
        lexical = [chunk_id for chunk_id in lexical if relevance.get(chunk_id, -math.inf) >= floor]
    present = [(list(ranking), 1.0) for ranking in dense if ranking]
    if lexical:
        present.append((list(lexical), LEXICAL_WEIGHT))
    if len(present) <= 1:
        return present[0][0] if present else []
    fused = reciprocal_rank_fusion(
        [ranking for ranking, _ in present], weights=[weight for _, weight in present]
    )
    return [chunk_id for chunk_id, _ in fused]
