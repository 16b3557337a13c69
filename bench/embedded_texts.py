"""Texts the plugin's own searches embed, per help-centre set: in all and at most per search.

Each case is searched as ``eval`` searches it (the query cache cleared first, so every text the
search needs is embedded), once with the check that a complete-reading message continues the
bot's last answer (``KnowledgeSearch._as_continued_answer``) and once without it (as before that
check existed). One warm-up search per set is counted, as ``eval`` runs one.

Usage (from the repository root)::

    python bench/embedded_texts.py [--half test] [--sets bank energy ...]
"""

from __future__ import annotations

import argparse
import asyncio
import sys
from collections.abc import Sequence
from pathlib import Path
from typing import Any

import structlog

sys.path.insert(0, str(Path(__file__).resolve().parent))
sys.path.insert(0, str(Path(__file__).resolve().parent.parent))  # this checkout's package

import grounded_all  # noqa: E402

import rasa_context_retrieval.engine.search as engine_search  # noqa: E402
from rasa_context_retrieval.assistant import ConsoleSession  # noqa: E402
from rasa_context_retrieval.conversation import Conversation  # noqa: E402
from rasa_context_retrieval.evaluation.cases import load_cases  # noqa: E402
from rasa_context_retrieval.evaluation.tracker import (  # noqa: E402
    rasa_default_query,
    tracker_for,
    tracker_state,
)

_answer_to_weigh = engine_search._answer_to_weigh


def _never(*_: Any) -> None:
    return None


def counts(engine: Any, conversations: Sequence[Conversation]) -> list[int]:
    """Texts embedded by each search."""
    embedder = engine.query_embedder
    embed_many = embedder.embed_many
    embedded: list[int] = []

    def counted(texts: Sequence[str]) -> Any:
        embedded[-1] += len(texts)
        return embed_many(texts)

    embedder.embed_many = counted
    try:
        for conversation in conversations:
            engine.clear_query_cache()
            embedded.append(0)
            asyncio.run(engine.search(conversation, 0.0))
    finally:
        embedder.embed_many = embed_many
    return embedded


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    parser.add_argument("--half", choices=["test", "dev"], default="test")
    parser.add_argument(
        "--sets", nargs="*", choices=grounded_all.SET_NAMES, default=list(grounded_all.SET_NAMES)
    )
    args = parser.parse_args()
    structlog.configure(wrapper_class=structlog.make_filtering_bound_logger(30))
    print("| set | without the check | with it | most per search (without / with) |")
    print("|---|---|---|---|")
    for name, (_, cases_file, assistant) in zip(
        args.sets, grounded_all.grounded_sets(args.half, args.sets), strict=True
    ):
        session = ConsoleSession(
            str(grounded_all.ROOT / "config.yml"), str(assistant / "endpoints.yml")
        )
        session.connect()
        engine = session.store.engine
        assert engine.config.docs is not None
        conversations = []
        for case in load_cases(cases_file, engine.config.docs):
            if not case.answerable:
                continue
            tracker = tracker_for(case)
            caps = engine.config.history.caps()
            state = tracker_state(tracker)
            conversations.append(
                Conversation.from_tracker_state(state, rasa_default_query(tracker), caps)
            )
        searched = conversations[:1] + conversations  # the warm-up search, as eval runs it
        engine_search._answer_to_weigh = _never  # type: ignore[assignment]
        before = counts(engine, searched)
        engine_search._answer_to_weigh = _answer_to_weigh
        after = counts(engine, searched)
        print(
            f"| {name} | {sum(before)} for {len(before)} searches | {sum(after)} for "
            f"{len(after)} | {max(before)} / {max(after)} |",
            flush=True,
        )


if __name__ == "__main__":
    main()
