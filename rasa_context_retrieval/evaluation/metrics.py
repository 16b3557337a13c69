"""Retrieval metrics over evaluation cases, and the threshold they suggest.

Pure functions over ranks and scores, so each can be checked by hand on a few numbers.
"""

from __future__ import annotations

from collections.abc import Sequence
from dataclasses import dataclass

import numpy as np


@dataclass(frozen=True)
class RankingScores:
    """Hit@1, Hit@k and mean reciprocal rank over answerable cases (None: there were none)."""

    cases: int
    hit_at_1: float | None
    hit_at_k: float | None
    mrr: float | None


def ranking_scores(ranks: Sequence[int | None]) -> RankingScores:
    """``ranks``: per case, the 1-based rank of the first right result, None when none came back.

    Results are cut at the store's ``top_k``, so a hit at any returned rank is a hit at k.
    """
    if not ranks:
        return RankingScores(0, None, None, None)
    count = len(ranks)
    return RankingScores(
        cases=count,
        hit_at_1=sum(rank == 1 for rank in ranks) / count,
        hit_at_k=sum(rank is not None for rank in ranks) / count,
        mrr=sum(1.0 / rank for rank in ranks if rank is not None) / count,
    )


def latency_percentiles(milliseconds: Sequence[float]) -> dict[str, float]:
    """p50 and p95 (linear interpolation between the measured values)."""
    if not milliseconds:
        return {"p50": 0.0, "p95": 0.0}
    p50, p95 = np.percentile(np.asarray(milliseconds, dtype=float), [50, 95])
    return {"p50": round(float(p50), 1), "p95": round(float(p95), 1)}


@dataclass(frozen=True)
class TopResult:
    """The best result of one case: its relevance (0 when nothing came back) and whether it is
    right. A question the documents cannot answer never has a right top result."""

    relevance: float
    right: bool


@dataclass(frozen=True)
class ThresholdOutcome:
    """What a threshold does on the cases: right answers kept, wrong top results let through."""

    threshold: float
    right_kept: int
    right_lost: int
    wrong_passed: int
    wrong_blocked: int

    @property
    def correct(self) -> int:
        return self.right_kept + self.wrong_blocked


def threshold_outcome(tops: Sequence[TopResult], threshold: float) -> ThresholdOutcome:
    """Count, at ``threshold``, which top results would be answered (relevance >= threshold)."""
    right = [top.relevance for top in tops if top.right]
    wrong = [top.relevance for top in tops if not top.right]
    return ThresholdOutcome(
        threshold=threshold,
        right_kept=sum(score >= threshold for score in right),
        right_lost=sum(score < threshold for score in right),
        wrong_passed=sum(score >= threshold for score in wrong),
        wrong_blocked=sum(score < threshold for score in wrong),
    )


def suggest_threshold(tops: Sequence[TopResult], decimals: int = 3) -> ThresholdOutcome:
    """The relevance threshold that best separates right top results from wrong ones.

    The assistant answers from its top result when its relevance reaches the threshold and
    otherwise says it cannot help. A case behaves right when a right top result is answered or a
    wrong one (including any result for a question the documents cannot answer) is held back.
    The suggestion is the threshold under which the most cases behave right. Only the gaps
    between observed relevances matter, so the candidates are 0 and the midpoints between
    neighbouring observed relevances (a threshold never sits on a case's own score); among equally
    good candidates the lowest wins, because it keeps the most answers. The value is rounded to
    ``decimals`` and the counts are those of the rounded value.
    """
    scores = sorted({round(top.relevance, 6) for top in tops})
    candidates = [0.0] + [(low + high) / 2 for low, high in zip(scores, scores[1:], strict=False)]
    if scores:
        candidates.append(scores[-1] + 10.0**-decimals)
    outcomes = [threshold_outcome(tops, round(value, decimals)) for value in candidates]
    return max(outcomes, key=lambda outcome: (outcome.correct, -outcome.threshold))
