"""A standalone test that asks the knowledge base: does the latest message alone find its subject?

The follow-up decision (``follow_up.py``) reads the shape of the words. This script measures,
on the dev halves, what a decision made by retrieval itself would give, without changing the
product: for every case it runs the plugin's search, the latest message alone (same filter),
and, for a message the words call standalone, the plugin's search with that message read as a
follow-up. From the relevances of each search it then replays data-free rules:

* a follow-up is searched alone when the message alone is the more confident search: its best
  match stands further out of its own candidates (z-score of the best cosine against the other
  candidates: relative to the knowledge base's score distribution for that query, no constant
  per set) than the mix's does, by a margin; or its best cosine is higher; or its gap to the
  second is larger;
* a message the words call standalone gets context (the plugin's follow-up search, or Rasa's
  query) when the message alone finds no confident match.

MRR@4 per set, plugin row; a rule is worth building only if no dev half gets worse.

Usage (from the repository root; dev halves only, never for reporting)::

    python bench/standalone_by_retrieval.py [--sets bank energy ...]
"""

from __future__ import annotations

import argparse
import dataclasses
import statistics
import sys
from collections.abc import Callable, Sequence
from pathlib import Path

import structlog

sys.path.insert(0, str(Path(__file__).resolve().parent))
sys.path.insert(0, str(Path(__file__).resolve().parent.parent))  # this checkout's package

import grounded_all  # noqa: E402
from forced_follow_up import read_as_follow_up  # noqa: E402

from rasa_context_retrieval.assistant import ConsoleSession  # noqa: E402
from rasa_context_retrieval.conversation import Conversation  # noqa: E402
from rasa_context_retrieval.engine.search import SearchOutcome  # noqa: E402
from rasa_context_retrieval.evaluation.cases import load_cases  # noqa: E402
from rasa_context_retrieval.evaluation.runner import _ranking  # noqa: E402
from rasa_context_retrieval.evaluation.tracker import (  # noqa: E402
    rasa_default_query,
    tracker_for,
    tracker_state,
)

DEPTH = 20
"""Candidates whose cosines form the score distribution of one search."""
TOP_K = 4


@dataclasses.dataclass
class Case:
    set_name: str
    follow_up: bool
    first: bool
    ranks: dict[str, int | None]
    alone: list[float]
    mix: list[float]


def _cosines(outcome: SearchOutcome) -> list[float]:
    return sorted((found.relevance for found in outcome.results), reverse=True)


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
            follow_up = any(len(view) > 1 for view in plugin.plan.views)
            alone_plan = dataclasses.replace(
                plugin.plan, standalone_query=latest, search_text=latest, paraphrases=(), views=()
            )
            alone = engine._retrieve(alone_plan, 0.0, DEPTH, False)
            rasa_plan = dataclasses.replace(alone_plan, search_text=rasa_query)
            rasa = engine._retrieve(rasa_plan, 0.0, DEPTH, False)
            mixed = plugin
            if not follow_up and conversation.history:
                with read_as_follow_up(latest):
                    mixed = engine._retrieve(engine.planner.plan_here(conversation), 0.0, DEPTH)
            outcomes = {"plugin": plugin, "alone": alone, "mixed": mixed, "rasa": rasa}
            ranks = {
                row: _ranking(case, "", outcome.results[:TOP_K]).first_right_rank
                for row, outcome in outcomes.items()
            }
            cases.append(
                Case(
                    name,
                    follow_up,
                    not conversation.history,
                    ranks,
                    _cosines(alone),
                    _cosines(mixed),
                )
            )
        print(f"collected {title}", file=sys.stderr, flush=True)
    return cases


def standing_out(cosines: list[float]) -> float:
    """How far the best cosine stands out of the other candidates (z-score)."""
    if len(cosines) < 3:
        return 0.0
    rest = cosines[1:]
    return (cosines[0] - statistics.mean(rest)) / (statistics.pstdev(rest) or 1e-6)


def gap(cosines: list[float]) -> float:
    return cosines[0] - cosines[1] if len(cosines) > 1 else 0.0


def best(cosines: list[float]) -> float:
    return cosines[0] if cosines else 0.0


Rule = Callable[[Case], int | None]


def rules() -> list[tuple[str, Rule]]:
    def alone_when(test: Callable[[Case], bool]) -> Rule:
        return lambda c: c.ranks["alone"] if c.follow_up and test(c) else c.ranks["plugin"]

    def context_when(test: Callable[[Case], bool], row: str) -> Rule:
        return lambda c: (
            c.ranks[row] if not c.follow_up and not c.first and test(c) else (c.ranks["plugin"])
        )

    listed: list[tuple[str, Rule]] = [("plugin (words decide)", lambda c: c.ranks["plugin"])]
    listed.append(("latest message alone", lambda c: c.ranks["alone"]))
    for margin in (0.0, 1.0, 2.0):
        listed.append(
            (
                f"follow-up alone when its best stands out more (z + {margin})",
                alone_when(lambda c, m=margin: standing_out(c.alone) >= standing_out(c.mix) + m),
            )
        )
    for margin in (0.0, 0.05):
        listed.append(
            (
                f"follow-up alone when its best cosine is higher (+ {margin})",
                alone_when(lambda c, m=margin: best(c.alone) >= best(c.mix) + m),
            )
        )
    listed.append(
        (
            "follow-up alone when its gap to the second is larger (and >= 0.1)",
            alone_when(lambda c: gap(c.alone) >= 0.1 and gap(c.alone) > gap(c.mix)),
        )
    )
    for limit in (2.5, 3.0):
        listed.append(
            (
                f"standalone gets context when its best stands out < {limit}",
                context_when(lambda c, t=limit: standing_out(c.alone) < t, "mixed"),
            )
        )
        listed.append(
            (
                f"standalone gets Rasa's query when its best stands out < {limit}",
                context_when(lambda c, t=limit: standing_out(c.alone) < t, "rasa"),
            )
        )
    return listed


def table(cases: Sequence[Case]) -> str:
    names = list(dict.fromkeys(case.set_name for case in cases))
    lines = ["| rule | " + " | ".join(names) + " |", "|---" * (len(names) + 1) + "|"]
    for label, rule in rules():
        cells = []
        for name in names:
            ranks = [rule(case) for case in cases if case.set_name == name]
            cells.append(f"{sum(1 / rank for rank in ranks if rank) / len(ranks):.3f}")
        lines.append(f"| {label} | " + " | ".join(cells) + " |")
    return "\n".join(lines)


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    parser.add_argument(
        "--sets", nargs="*", choices=grounded_all.SET_NAMES, default=list(grounded_all.SET_NAMES)
    )
    args = parser.parse_args()
    structlog.configure(wrapper_class=structlog.make_filtering_bound_logger(30))
    print(table(collect(args.sets)))


if __name__ == "__main__":
    main()
