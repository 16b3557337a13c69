"""Run evaluation cases through the plugin's engine, and through simpler query texts.

Each case becomes a Rasa tracker; its ``tracker_state`` is read into a conversation exactly as
``ContextRetrieval.search`` does and searched by the same engine, so the plan (standalone query,
filter) is the plugin's own. The same engine then searches, under the very filter that search
used, the latest user message alone and Rasa's default query text, to show what the context
model buys, and the case's human ``rewrite`` when it has one, to show what a perfect rewrite
would. Searches run at threshold 0, so ranking is judged apart from the threshold (the report
suggests one). Results are matched by the document they come from (``source``), and by their
answer when a case names ``expected_answer``, before any trimming of what a result carries to
Rasa.
"""

from __future__ import annotations

import dataclasses
import time
from collections.abc import Sequence
from dataclasses import dataclass
from typing import Any

from langchain_core.structured_query import FilterDirective, Operation, Operator

from rasa_context_retrieval.conversation import Conversation
from rasa_context_retrieval.engine.search import KnowledgeSearch, SearchOutcome
from rasa_context_retrieval.evaluation.cases import EvalCase
from rasa_context_retrieval.evaluation.tracker import rasa_default_query, tracker_for, tracker_state
from rasa_context_retrieval.filters.syntax import parse_filter, to_filter_syntax
from rasa_context_retrieval.knowledge.conversion import PAGE
from rasa_context_retrieval.knowledge.models import ScoredChunk

CONTEXT_MODEL = "context_model"
LATEST_MESSAGE = "latest_message"
RASA_DEFAULT_QUERY = "rasa_default_query"
HUMAN_REWRITE = "human_rewrite"
ROWS = (CONTEXT_MODEL, LATEST_MESSAGE, RASA_DEFAULT_QUERY, HUMAN_REWRITE)
"""What is searched: the plugin's plan, the last user message alone, Rasa's last two messages,
and a person's rewrite of the last message (only for the cases that carry one)."""


@dataclass(frozen=True)
class Ranking:
    """What one query text found for a case."""

    query: str
    sources: tuple[str, ...]
    """As cited, with their place: ``faq.jsonl:3``, ``manual.pdf#page=12``."""
    relevances: tuple[float, ...]
    first_right_rank: int | None
    """1-based rank of the first result from an expected file (holding the expected answer, when
    the case names one); None when none came back."""


@dataclass(frozen=True)
class CaseResult:
    case: EvalCase
    rankings: dict[str, Ranking]
    """Per row of ``ROWS``; ``HUMAN_REWRITE`` only when the case has a rewrite."""
    filter: str | None
    """The final filter the plugin searched with, in self-query syntax."""
    filter_right: bool | None
    """Whether it equals the expected filter; None when the case does not state one."""
    latency_ms: float
    """Planning and retrieval of the plugin's search, query embedding included."""


async def evaluate(engine: KnowledgeSearch, cases: Sequence[EvalCase]) -> list[CaseResult]:
    """Search every case with the plugin, then with the baseline query texts and its rewrite.

    One untimed search comes first, so that latency reflects a running assistant, not the
    one-off set-up of the first search (rule compilation, filter columns).
    """
    if cases:
        await _evaluate_case(engine, cases[0])
    return [await _evaluate_case(engine, case) for case in cases]


async def _evaluate_case(engine: KnowledgeSearch, case: EvalCase) -> CaseResult:
    tracker = tracker_for(case)
    rasa_query = rasa_default_query(tracker)
    caps = engine.config.history.caps()
    conversation = Conversation.from_tracker_state(tracker_state(tracker), rasa_query, caps)
    engine.clear_query_cache()  # time every search with its query embedding, like a new message
    started = time.perf_counter()
    outcome = await engine.search(conversation, threshold=0.0)
    latency_ms = (time.perf_counter() - started) * 1000
    rankings = {CONTEXT_MODEL: _ranking(case, outcome.plan.search_text, outcome.results)}
    others = {LATEST_MESSAGE: conversation.latest_user_text, RASA_DEFAULT_QUERY: rasa_query}
    if case.rewrite is not None:
        others[HUMAN_REWRITE] = case.rewrite
    for row, text in others.items():
        rankings[row] = _ranking(case, text, await _same_filter(engine, outcome, text))
    return CaseResult(
        case=case,
        rankings=rankings,
        filter=outcome.filter_syntax,
        filter_right=_filter_right(case, outcome.plan.filters.as_written)
        if case.checks_filter
        else None,
        latency_ms=round(latency_ms, 2),
    )


async def _same_filter(
    engine: KnowledgeSearch, outcome: SearchOutcome, text: str
) -> list[ScoredChunk]:
    # Only ``text`` forms the query vector: no paraphrases, no earlier turns mixed in.
    plan = dataclasses.replace(
        outcome.plan,
        standalone_query=text,
        search_text=text,
        paraphrases=(),
        views=(),
    )
    return (await engine.search_plan(plan, threshold=0.0)).results


def _ranking(case: EvalCase, query: str, results: Sequence[ScoredChunk]) -> Ranking:
    sources = tuple(str(found.chunk.metadata.get("source", "")) for found in results)
    answers = (str(found.chunk.metadata.get("answer", found.chunk.text)) for found in results)
    pages = (_pages(found.chunk.metadata.get(PAGE)) for found in results)
    rank = next(
        (
            index
            for index, (source, answer, covered) in enumerate(
                zip(sources, answers, pages, strict=False), 1
            )
            if case.is_right(source, answer, covered)
        ),
        None,
    )
    return Ranking(
        query=query,
        sources=sources,
        relevances=tuple(round(found.relevance, 4) for found in results),
        first_right_rank=rank,
    )


def _filter_right(case: EvalCase, actual: FilterDirective | None) -> bool:
    """Compared as parsed trees, so quoting, nesting of ANDs and argument order do not matter."""
    return _canonical(_reparsed(actual)) == _canonical(case.parsed_filter)


def _reparsed(directive: FilterDirective | None) -> FilterDirective | None:
    """The filter as its printed form reads back (dates become the parser's date values)."""
    try:
        printed = to_filter_syntax(directive)
    except ValueError:  # not writable in the syntax, so no expected filter can equal it as text
        return directive
    return None if printed is None else parse_filter(printed)


def _canonical(directive: FilterDirective | None) -> object:
    """A comparable form: ANDs (and ORs) flattened, their arguments in a fixed order."""
    if not isinstance(directive, Operation):
        return directive
    operator = directive.operator.value
    arguments: list[object] = []
    for argument in directive.arguments:
        canonical = _canonical(argument)
        if directive.operator != Operator.NOT and _is_operation(canonical, operator):
            arguments.extend(canonical[1])  # type: ignore[index]
        else:
            arguments.append(canonical)
    if directive.operator == Operator.NOT:
        return (operator, arguments)
    unique = sorted({repr(argument): argument for argument in arguments}.items())
    if len(unique) == 1:  # and(x, x) is x: a slot and the user's words may state the same value
        return unique[0][1]
    return (operator, [argument for _, argument in unique])


def _is_operation(canonical: object, operator: str) -> bool:
    return isinstance(canonical, tuple) and canonical[0] == operator


def _pages(page: Any) -> tuple[int, ...]:
    """The pages a PDF chunk across a page break covers (its ``page`` list); none otherwise."""
    if isinstance(page, list):
        return tuple(number for number in page if isinstance(number, int))
    return ()
