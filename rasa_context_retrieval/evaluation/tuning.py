"""``eval --tune``: fit the context weights and the threshold to the assistant's own cases.

The built-in weights were chosen without any assistant's data (rewrite/context.py). An assistant
with labelled cases can do better on its own conversations, so ``--tune``:

1. splits the cases once, by a fixed rule: per kind of question, every other case (the 1st,
   3rd, ...) is for picking, the others are held out;
2. searches the picking cases with every point of a small grid over ``context_weights`` and
   keeps the point with the best MRR (ties go to the point nearest the built-in weights);
3. picks the threshold on the picking cases' top results with those weights
   (``metrics.suggest_threshold``);
4. scores the pick and the defaults (built-in weights, the configured threshold) on the held-out
   cases, which took no part in steps 2 and 3.

Every search runs on one engine: only the planner's weights change between grid points, so the
texts of a case are embedded once and their vectors come from the engine's query cache
afterwards (weights only change how those vectors are mixed).
"""

from __future__ import annotations

import itertools
from collections.abc import Iterator, Sequence
from contextlib import contextmanager
from dataclasses import dataclass

from rasa_context_retrieval.config import ContextWeightsBlock
from rasa_context_retrieval.conversation import Conversation, HistoryCaps
from rasa_context_retrieval.engine.search import KnowledgeSearch
from rasa_context_retrieval.evaluation.cases import EvalCase, group_by_kind
from rasa_context_retrieval.evaluation.metrics import (
    TopResult,
    ranking_scores,
    suggest_threshold,
    threshold_outcome,
)
from rasa_context_retrieval.evaluation.runner import _ranking
from rasa_context_retrieval.evaluation.tracker import rasa_default_query, tracker_for, tracker_state
from rasa_context_retrieval.rewrite.context import TURNS_VIEW_WEIGHTS

PREVIOUS_QUESTION_GRID = (0.0, 0.1, 0.2, 0.4)
TOPIC_GRID = (0.0, 0.1)
LAST_BOT_GRID = (0.0, 0.1, 0.3, 0.5)
"""Weights tried next to the latest message's 1.0: 32 points, round values only, so a pick
reads as a setting, not as a fit to the last decimal."""


@dataclass(frozen=True)
class Scored:
    """What one setting does on a set of cases."""

    mrr: float
    answered_right: int
    """Cases that behave right at the threshold (a right top result answered, a wrong one or
    nothing for an unanswerable question held back)."""
    cases: int


@dataclass(frozen=True)
class Tuning:
    """The pick, and how it and the defaults do on the held-out cases."""

    weights: ContextWeightsBlock
    threshold: float
    picking_cases: tuple[str, ...]
    held_out_cases: tuple[str, ...]
    pick_held_out: Scored
    defaults_held_out: Scored
    default_threshold: float


def split_cases(cases: Sequence[EvalCase]) -> tuple[list[EvalCase], list[EvalCase]]:
    """Picking and held-out cases: per kind, every other case (the first one picks)."""
    picking: list[EvalCase] = []
    held_out: list[EvalCase] = []
    for members in group_by_kind(list(cases), lambda case: case.kind).values():
        picking += members[::2]
        held_out += members[1::2]
    return picking, held_out


def weight_grid() -> list[ContextWeightsBlock]:
    """Every point of the grid, as the ``context_weights`` block it would be configured as."""
    return [
        ContextWeightsBlock(
            previous_question=previous,
            topic=topic,
            last_bot=last_bot,
            previous_answer=TURNS_VIEW_WEIGHTS.previous_answer,  # not tuned: see context-model.md
        )
        for previous, topic, last_bot in itertools.product(
            PREVIOUS_QUESTION_GRID, TOPIC_GRID, LAST_BOT_GRID
        )
    ]


async def tune(engine: KnowledgeSearch, cases: Sequence[EvalCase], threshold: float) -> Tuning:
    """Pick weights and threshold on half the cases, score them on the other half."""
    picking, held_out = split_cases(cases)
    caps = engine.config.history.caps()
    conversations = {id(case): _conversation(case, caps) for case in cases}
    scored = []
    for point in weight_grid():
        tops = await _tops(engine, point, picking, conversations)
        scored.append((ranking_mrr(picking, tops), -_distance_to_defaults(point), point))
    best = max(scored, key=lambda item: (item[0], item[1]))[2]
    picked_tops = await _tops(engine, best, picking, conversations)
    picked_threshold = suggest_threshold([top for top, _ in picked_tops]).threshold
    return Tuning(
        weights=best,
        threshold=picked_threshold,
        picking_cases=tuple(case.name for case in picking),
        held_out_cases=tuple(case.name for case in held_out),
        pick_held_out=await _score(engine, best, picked_threshold, held_out, conversations),
        defaults_held_out=await _score(engine, None, threshold, held_out, conversations),
        default_threshold=threshold,
    )


def ranking_mrr(cases: Sequence[EvalCase], tops: Sequence[tuple[TopResult, int | None]]) -> float:
    """MRR over the answerable ``cases`` (0 when none is)."""
    ranks = [rank for case, (_, rank) in zip(cases, tops, strict=True) if case.answerable]
    return ranking_scores(ranks).mrr or 0.0


async def _score(
    engine: KnowledgeSearch,
    weights: ContextWeightsBlock | None,
    threshold: float,
    cases: Sequence[EvalCase],
    conversations: dict[int, Conversation],
) -> Scored:
    tops = await _tops(engine, weights, cases, conversations)
    outcome = threshold_outcome([top for top, _ in tops], threshold)
    return Scored(ranking_mrr(cases, tops), outcome.correct, len(cases))


async def _tops(
    engine: KnowledgeSearch,
    weights: ContextWeightsBlock | None,
    cases: Sequence[EvalCase],
    conversations: dict[int, Conversation],
) -> list[tuple[TopResult, int | None]]:
    """Per case, its top result and the rank of the first right result, with ``weights``."""
    found = []
    with _weighted(engine, weights):
        for case in cases:
            outcome = await engine.search(conversations[id(case)], threshold=0.0)
            ranking = _ranking(case, outcome.plan.search_text, outcome.results)
            relevance = ranking.relevances[0] if ranking.relevances else 0.0
            top = TopResult(relevance=relevance, right=ranking.first_right_rank == 1)
            found.append((top, ranking.first_right_rank))
    return found


@contextmanager
def _weighted(engine: KnowledgeSearch, weights: ContextWeightsBlock | None) -> Iterator[None]:
    """The engine's planner with ``weights`` (None: the built-in ones) for the searches inside."""
    planner = engine.planner
    engine.planner = planner.reweighted(weights)
    try:
        yield
    finally:
        engine.planner = planner


def _conversation(case: EvalCase, caps: HistoryCaps) -> Conversation:
    """The conversation of ``case`` as the plugin reads it from Rasa's tracker."""
    tracker = tracker_for(case)
    return Conversation.from_tracker_state(
        tracker_state(tracker), rasa_default_query(tracker), caps
    )


def _distance_to_defaults(point: ContextWeightsBlock) -> float:
    defaults = TURNS_VIEW_WEIGHTS
    return (
        abs((point.previous_question or 0.0) - defaults.previous_question)
        + abs((point.topic or 0.0) - defaults.topic)
        + abs((point.last_bot or 0.0) - defaults.last_bot)
    )


def _verdict(pick: Scored, defaults: Scored) -> list[str]:
    """A line for each part of the pick that does no better than the defaults held out."""
    lines = []
    if pick.mrr <= defaults.mrr:
        lines.append(
            "the picked weights do not beat the built-in ones on the held-out cases (MRR): "
            "leave context_weights out"
        )
    if pick.answered_right <= defaults.answered_right:
        lines.append(
            "the picked threshold does not answer more held-out cases right than the "
            "configured one: keep it"
        )
    return [*lines, ""] if lines else []


def render_tuning(tuning: Tuning) -> str:
    """The comparison on the held-out cases and the lines to paste."""
    pick, defaults = tuning.pick_held_out, tuning.defaults_held_out
    weights = tuning.weights
    lines = [
        f"picked on {len(tuning.picking_cases)} cases; scored on {len(tuning.held_out_cases)} "
        "held-out cases (every other case per kind), which took no part in picking",
        "",
        f"{'held out':<12}{'MRR':>8}{'answered right at threshold':>32}",
        f"{'defaults':<12}{defaults.mrr:>8.3f}"
        f"{f'{defaults.answered_right}/{defaults.cases} at {tuning.default_threshold:g}':>32}",
        f"{'pick':<12}{pick.mrr:>8.3f}"
        f"{f'{pick.answered_right}/{pick.cases} at {tuning.threshold:g}':>32}",
        "",
        *_verdict(pick, defaults),
        "# endpoints.yml",
        "vector_store:",
        "  context_weights:",
        f"    previous_question: {weights.previous_question}",
        f"    topic: {weights.topic}",
        f"    last_bot: {weights.last_bot}",
        f"    previous_answer: {weights.previous_answer}",
        "",
        "# config.yml, in the EnterpriseSearchPolicy entry",
        "vector_store:",
        f"  threshold: {tuning.threshold}",
    ]
    return "\n".join(lines)
