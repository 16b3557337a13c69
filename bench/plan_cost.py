"""The planner's CPU time per follow-up in conversation: rewrite, context views, self-query
rules and carried filters, with no embedding and no index.

The follow-ups and earlier turns are bench/query_latency.py's; each pass tags every text anew
(as another conversation would say it), plans the earlier turns first (untimed, as the
assistant did when they were said) and then times the follow-up. Prints the fastest pass, per
follow-up.

Run from the repository root: ``PYTHONPATH=. python bench/plan_cost.py``.
"""

from __future__ import annotations

import logging
import sys
import time
from pathlib import Path
from typing import Any

import structlog
import yaml

REPO = Path(__file__).resolve().parents[1]
sys.path.insert(0, str(REPO))
sys.path.insert(0, str(REPO / "bench"))

from query_latency import bot_reply, follow_ups  # noqa: E402

from rasa_context_retrieval.config import StoreConfig  # noqa: E402
from rasa_context_retrieval.conversation import Conversation, Turn  # noqa: E402
from rasa_context_retrieval.planning.plan import Planner  # noqa: E402

PASSES = 7
FOLLOW_UPS = 120


def planner() -> Planner:
    block = dict(
        yaml.safe_load((REPO / "endpoints.yml").read_text(encoding="utf-8"))["vector_store"]
    )
    block["docs"] = str(REPO / block["docs"])
    block.pop("type", None)
    known: dict[str, Any] = {}  # the same mapping for every search, as a served index gives
    return Planner(StoreConfig.from_kwargs(block), lambda *_: known)


def conversation(history: list[str], question: str) -> Conversation:
    turns: list[Turn] = []
    for earlier in history:
        turns += [Turn("user", earlier), Turn("bot", bot_reply(earlier))]
    return Conversation((*turns, Turn("user", question)))


def one_pass(plans: Planner, tag: int) -> float:
    """Seconds spent planning the follow-ups of one pass (earlier turns untimed)."""
    spent = 0.0
    for history, question in follow_ups(FOLLOW_UPS):
        history = [f"{text} [{tag}]" for text in history]
        for turn in range(len(history)):
            plans.plan_here(conversation(history[:turn], history[turn]))
        started = time.perf_counter()
        plans.plan_here(conversation(history, f"{question} [{tag}]"))
        spent += time.perf_counter() - started
    return spent


def main() -> None:
    structlog.configure(wrapper_class=structlog.make_filtering_bound_logger(logging.WARNING))
    plans = planner()
    best = min(one_pass(plans, tag) for tag in range(PASSES))
    per_follow_up = best / FOLLOW_UPS * 1000
    print(f"plan per follow-up in conversation: {per_follow_up:.3f} ms (fastest of {PASSES})")


if __name__ == "__main__":
    main()
