"""The plugin's own row on TREC CAsT 2021 and 2022, alone: a quick check of one change.

``bench/grounded_all.py`` and ``bench/conversational.py`` score every row (several minutes);
this script scores only ``ContextRetrieval`` in its default configuration, fed as
EnterpriseSearchPolicy feeds it, with and without the search of a complete message as a
follow-up when it continues the bot's last answer (``KnowledgeSearch._as_continued_answer``),
and lists the turns whose rank differs. For choosing; the full table stays the reference.

Usage (from the repository root)::

    python bench/cast_plugin.py
"""

from __future__ import annotations

import sys
import tempfile
import time
from pathlib import Path

import structlog

sys.path.insert(0, str(Path(__file__).resolve().parent))
sys.path.insert(0, str(Path(__file__).resolve().parent.parent))  # this checkout's package

from cast2021 import DEPTH, context_retrieval_retriever, embedding_client  # noqa: E402
from conversational import BENCH_DATA, load_cast2021, load_cast2022  # noqa: E402

from rasa_context_retrieval.engine.search import KnowledgeSearch  # noqa: E402

INDEX_WAITS = 600
"""Seconds to wait for the index to answer before scoring."""

_continued = KnowledgeSearch._as_continued_answer


def _never(*_: object) -> None:
    return None


def ready(retrieve, case) -> None:  # type: ignore[no-untyped-def]
    """Wait until the index answers: a search that comes while it is still being built answers
    nothing (``startup_wait_seconds``), which on a loaded machine costs the first turns."""
    for _ in range(INDEX_WAITS):
        if retrieve(case.conversation):
            return
        time.sleep(1)
    raise SystemExit("the index was not built in time")


def ranks(retrieve, cases) -> list[int | None]:  # type: ignore[no-untyped-def]
    found = []
    for case in cases:
        ranking = retrieve(case.conversation)[:DEPTH]
        found.append(ranking.index(case.gold) + 1 if case.gold in ranking else None)
    return found


def mrr(found: list[int | None], cases, needs: bool | None = None) -> float:  # type: ignore[no-untyped-def]
    kept = [
        rank
        for rank, case in zip(found, cases, strict=True)
        if needs is None or case.needs_rewrite == needs
    ]
    return sum(1 / rank for rank in kept if rank) / max(len(kept), 1)


def main() -> None:
    structlog.configure(wrapper_class=structlog.make_filtering_bound_logger(30))
    client = embedding_client()
    for title, loader, folder in (
        ("CAsT 2021", load_cast2021, BENCH_DATA / "cast2021"),
        ("CAsT 2022", load_cast2022, BENCH_DATA / "cast2022"),
    ):
        corpus, cases = loader(folder)
        with tempfile.TemporaryDirectory() as workdir:
            retrieve = context_retrieval_retriever(corpus, client, Path(workdir))
            ready(retrieve, cases[0])
            KnowledgeSearch._as_continued_answer = _never  # type: ignore[method-assign]
            before = ranks(retrieve, cases)
            KnowledgeSearch._as_continued_answer = _continued  # type: ignore[method-assign]
            after = ranks(retrieve, cases)
        for label, found in (("without", before), ("with", after)):
            print(
                f"{title} {label}: all {mrr(found, cases):.3f} needs rewrite "
                f"{mrr(found, cases, True):.3f} no rewrite {mrr(found, cases, False):.3f}"
            )
        for case, old, new in zip(cases, before, after, strict=True):
            if old != new:
                print(f"  {old} -> {new}: {case.conversation.latest_user_text}")


if __name__ == "__main__":
    main()
