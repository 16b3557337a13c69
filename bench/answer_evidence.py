"""The conversation as evidence: does the previous answer's document also answer the latest message?

The follow-up decision (``follow_up.py``) reads the shape of the words, and some follow-ups
read as complete questions ("how long till i get the money" after "my car's been written
off"). This script measures, on the dev halves, what it would give to read such a message as a
follow-up when the document the bot just answered from sits among the latest message's own top
candidates, without changing the product. For every case whose latest message the words call
complete (and that has an earlier turn) it runs the plugin's search (the message alone), the
same message read as a follow-up (the normal follow-up mix), and finds the previous answer's
document two ways:

* ``vector``: the last bot message's own vector, its best chunk at a cosine of at least
  ``QUOTED_ANSWER_MATCH`` (as ``engine.search`` finds it for a follow-up);
* ``words``: among the latest message's own candidates, the chunk holding the largest share of
  the bot message's content words, at least ``--overlap`` of them (no embedding, no search).

It then replays data-free rules: the message is read as a follow-up when that document is among
its top ``k`` candidates, or when its best chunk scores within a share of the top cosine, or
stands out of the candidates (z-score) above a limit; or when the last bot message itself (or
the previous user question), taken as one more candidate, would rank among its top ``k``. MRR@4
per set, plugin row; a rule is worth building only if no dev half gets worse. None was kept
(bench/results/grounded_all.md); ``--cases`` lists every message the words call complete with
where each piece of evidence places it.

Usage (from the repository root; dev halves only, never for reporting)::

    python bench/answer_evidence.py [--sets bank energy ...] [--cases]
"""

from __future__ import annotations

import argparse
import dataclasses
import statistics
import sys
from collections.abc import Callable, Sequence
from pathlib import Path
from typing import Any

import numpy as np
import structlog

sys.path.insert(0, str(Path(__file__).resolve().parent))
sys.path.insert(0, str(Path(__file__).resolve().parent.parent))  # this checkout's package

import grounded_all  # noqa: E402
from forced_follow_up import read_as_follow_up  # noqa: E402

from rasa_context_retrieval.assistant import ConsoleSession  # noqa: E402
from rasa_context_retrieval.conversation import Conversation  # noqa: E402
from rasa_context_retrieval.evaluation.cases import load_cases  # noqa: E402
from rasa_context_retrieval.evaluation.runner import _ranking  # noqa: E402
from rasa_context_retrieval.evaluation.tracker import (  # noqa: E402
    rasa_default_query,
    tracker_for,
    tracker_state,
)
from rasa_context_retrieval.retrieve.answer_prior import QUOTED_ANSWER_MATCH  # noqa: E402
from rasa_context_retrieval.retrieve.request import RetrievalRequest  # noqa: E402
from rasa_context_retrieval.rewrite.heuristic import content_words  # noqa: E402

DEPTH = 20
"""Candidates of the latest message alone whose cosines form its score distribution."""
TOP_K = 4


@dataclasses.dataclass
class Case:
    set_name: str
    name: str
    kind: str
    message: str
    complete: bool
    """The words call the message complete and it has an earlier turn."""
    ranks: dict[str, int | None]
    alone: list[tuple[str, float, float]]
    """The latest message's candidates: source, cosine, share of the bot's content words held."""
    vector_source: str | None
    """The previous answer's document by the bot message's vector."""
    bot_cosine: float
    """Cosine between the latest message and the last bot message (0 without one)."""
    question_cosine: float
    """Cosine between the latest message and the previous user message."""


def _shared(bot_words: set[str], text: str) -> float:
    if not bot_words:
        return 0.0
    return len(bot_words & {word.lower() for word in content_words(text)}) / len(bot_words)


def collect(names: Sequence[str]) -> list[Case]:
    cases = []
    for name, (title, cases_file, assistant) in zip(
        names, grounded_all.grounded_sets("dev", names), strict=True
    ):
        session = ConsoleSession(
            str(grounded_all.ROOT / "config.yml"), str(assistant / "endpoints.yml")
        )
        session.connect()
        engine = session.store.engine
        assert engine.config.docs is not None
        for case in load_cases(cases_file, engine.config.docs):
            if not case.answerable:
                continue
            tracker = tracker_for(case)
            rasa_query = rasa_default_query(tracker)
            caps = engine.config.history.caps()
            conversation = Conversation.from_tracker_state(tracker_state(tracker), rasa_query, caps)
            latest = conversation.latest_user_text
            plugin = engine._retrieve(engine.planner.plan_here(conversation), 0.0, DEPTH)
            complete = bool(conversation.history) and all(
                len(view) == 1 for view in plugin.plan.views
            )
            mixed = plugin
            if complete:
                with read_as_follow_up(latest):
                    mixed = engine._retrieve(engine.planner.plan_here(conversation), 0.0, DEPTH)
            last_bot = next((t.text for t in reversed(conversation.history) if t.role == "bot"), "")
            vector_source = None
            if last_bot:
                request = RetrievalRequest(
                    texts=[last_bot],
                    vectors=[engine._query_vectors.vectors([last_bot])[0]],
                    filter=plugin.plan.filters.for_backend,
                    top_k=5,
                    threshold=0.0,
                    candidates=5,
                    hybrid=False,
                )
                found = engine.live.backend.rank(request)
                if found and found[0].relevance >= QUOTED_ANSWER_MATCH:
                    vector_source = str(found[0].chunk.metadata.get("source", ""))
            earlier = [t.text for t in conversation.history if t.role == "user"]
            bot_cosine = _cosine(engine, latest, last_bot)
            question_cosine = _cosine(engine, latest, earlier[-1] if earlier else "")
            bot_words = {word.lower() for word in content_words(last_bot)}
            ranks = {
                row: _ranking(case, "", outcome.results[:TOP_K]).first_right_rank
                for row, outcome in (("plugin", plugin), ("mixed", mixed))
            }
            alone = [
                (
                    str(found.chunk.metadata.get("source", "")),
                    found.relevance,
                    _shared(bot_words, found.chunk.text),
                )
                for found in plugin.results
            ]
            cases.append(
                Case(
                    name,
                    case.name,
                    case.kind or "",
                    latest,
                    complete,
                    ranks,
                    alone,
                    vector_source,
                    bot_cosine,
                    question_cosine,
                )
            )
        print(f"collected {title}", file=sys.stderr, flush=True)
    return cases


def _cosine(engine: Any, first: str, second: str) -> float:
    if not first.strip() or not second.strip():
        return 0.0
    one, two = engine._query_vectors.vectors([first, second])
    return float(np.dot(one, two) / (np.linalg.norm(one) * np.linalg.norm(two)))


def as_candidate(case: Case, cosine: float) -> int:
    """The rank a text at ``cosine`` to the message would take among its candidates."""
    return 1 + sum(found > cosine for _, found, _ in case.alone)


def words_source(case: Case, overlap: float) -> str | None:
    """The candidate document holding the largest share of the bot's content words."""
    best = max(case.alone, key=lambda found: found[2], default=None)
    return best[0] if best is not None and best[2] >= overlap else None


def place(case: Case, source: str | None) -> tuple[int | None, float, float]:
    """Rank (1-based), cosine and z-score of ``source``'s best chunk among the candidates."""
    if source is None:
        return None, 0.0, 0.0
    cosines = [cosine for _, cosine, _ in case.alone]
    for rank, (found, cosine, _) in enumerate(case.alone, 1):
        if found == source:
            rest = cosines[: rank - 1] + cosines[rank:]
            spread = statistics.pstdev(rest) if len(rest) > 1 else 0.0
            z = (cosine - statistics.mean(rest)) / (spread or 1e-6) if rest else 0.0
            return rank, cosine, z
    return None, 0.0, 0.0


Test = Callable[[Case, str | None], bool]


def rules() -> list[tuple[str, str, Test]]:
    listed: list[tuple[str, str, Test]] = []
    for way in ("vector", "words"):
        for k in (1, 2, 3, 5):
            listed.append((f"among top {k}", way, lambda c, s, k=k: (place(c, s)[0] or 99) <= k))
        for share in (0.95, 0.9, 0.85):
            listed.append(
                (
                    f"cosine >= {share} x top",
                    way,
                    lambda c, s, r=share: (
                        place(c, s)[0] is not None and place(c, s)[1] >= r * c.alone[0][1]
                    ),
                )
            )
        for limit in (2.0, 1.5, 1.0):
            listed.append(
                (
                    f"stands out z >= {limit}",
                    way,
                    lambda c, s, t=limit: place(c, s)[0] is not None and place(c, s)[2] >= t,
                )
            )
    for k in (1, 2, 3, 4, 5):
        listed.append(
            (
                f"the bot message would rank in the top {k}",
                "bot",
                lambda c, s, k=k: c.bot_cosine > 0 and as_candidate(c, c.bot_cosine) <= k,
            )
        )
        listed.append(
            (
                f"the previous question would rank in the top {k}",
                "question",
                lambda c, s, k=k: c.question_cosine > 0 and as_candidate(c, c.question_cosine) <= k,
            )
        )
    return listed


def source_for(case: Case, way: str, overlap: float) -> str | None:
    return case.vector_source if way == "vector" else words_source(case, overlap)


def score(cases: Sequence[Case], name: str, rank_of: Callable[[Case], int | None]) -> str:
    ranks = [rank_of(case) for case in cases if case.set_name == name]
    return f"{sum(1 / rank for rank in ranks if rank) / len(ranks):.3f}"


def table(cases: Sequence[Case], overlap: float) -> str:
    names = list(dict.fromkeys(case.set_name for case in cases))
    lines = ["| rule | " + " | ".join(names) + " |", "|---" * (len(names) + 1) + "|"]
    lines.append(
        "| plugin (words decide) | "
        + " | ".join(score(cases, name, lambda c: c.ranks["plugin"]) for name in names)
        + " |"
    )
    for label, way, test in rules():

        def rank_of(c: Case, way: str = way, test: Test = test) -> int | None:
            if c.complete and test(c, source_for(c, way, overlap)):
                return c.ranks["mixed"]
            return c.ranks["plugin"]

        moved = sum(c.complete and test(c, source_for(c, way, overlap)) for c in cases)
        cells = " | ".join(score(cases, name, rank_of) for name in names)
        lines.append(f"| {way}: {label} ({moved} read as follow-ups) | {cells} |")
    return "\n".join(lines)


def case_table(cases: Sequence[Case], overlap: float) -> str:
    lines = []
    for c in cases:
        if not c.complete:
            continue
        vector = place(c, c.vector_source)
        words = place(c, words_source(c, overlap))
        lines.append(
            f"{c.set_name}\t{c.kind}\t{c.name}\talone={c.ranks['plugin'] or '-'} "
            f"mixed={c.ranks['mixed'] or '-'}\tvector rank={vector[0]} z={vector[2]:.2f} "
            f"share={vector[1] / c.alone[0][1] if c.alone else 0:.2f}\twords rank={words[0]} "
            f"z={words[2]:.2f}\tbot={c.bot_cosine:.2f} as rank {as_candidate(c, c.bot_cosine)}"
            f"\tquestion={c.question_cosine:.2f} as rank {as_candidate(c, c.question_cosine)}"
            f"\t{c.message}"
        )
    return "\n".join(lines)


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    parser.add_argument(
        "--sets", nargs="*", choices=grounded_all.SET_NAMES, default=list(grounded_all.SET_NAMES)
    )
    parser.add_argument("--overlap", type=float, default=0.6)
    parser.add_argument("--cases", action="store_true", help="also list every complete message")
    args = parser.parse_args()
    structlog.configure(wrapper_class=structlog.make_filtering_bound_logger(30))
    cases = collect(args.sets)
    print(table(cases, args.overlap))
    if args.cases:
        print()
        print(case_table(cases, args.overlap))


if __name__ == "__main__":
    main()
