"""BM25's share of a search: ``LexicalIndex.search`` and ``rarity`` per call, best of several.

On the example knowledge base (``docs/``, as endpoints.yml configures it) and on 100,000
synthetic chunks (bench/scale.py's generator), for the follow-ups and earlier turns of
bench/query_latency.py. ``--reference`` also times the same index tokenising each query with
``bm25s.tokenize``, as searches did before, and checks that both give the same results.

Run from the repository root: ``PYTHONPATH=. python bench/lexical_query.py [--reference]``.
"""

from __future__ import annotations

import argparse
import logging
import sys
import time
from collections.abc import Callable
from pathlib import Path

import bm25s
import numpy as np
import structlog
import yaml

REPO = Path(__file__).resolve().parents[1]
sys.path.insert(0, str(REPO))
sys.path.insert(0, str(REPO / "bench"))

from query_latency import LARGE_ROWS, follow_ups  # noqa: E402

from rasa_context_retrieval.config import StoreConfig  # noqa: E402
from rasa_context_retrieval.engine.live_index import index_settings  # noqa: E402
from rasa_context_retrieval.ingestion.build import read_documents  # noqa: E402
from rasa_context_retrieval.retrieve.lexical import LexicalIndex  # noqa: E402

PASSES = 7
DEPTH = 20


class TokenisedByBm25s(LexicalIndex):
    """The index as searches used it before: each query through ``bm25s.tokenize``."""

    def _query_terms(self, query: str) -> list[str]:
        terms = bm25s.tokenize(
            query,
            token_pattern=self.settings.token_pattern,
            stopwords=self._stopwords(),
            stemmer=self._stemmer(),
            return_ids=False,
            show_progress=False,
        )
        return list(terms[0]) if terms else []


def example_texts() -> list[str]:
    block = dict(
        yaml.safe_load((REPO / "endpoints.yml").read_text(encoding="utf-8"))["vector_store"]
    )
    block["docs"] = str(REPO / block["docs"])
    block.pop("type", None)
    _, chunks = read_documents(index_settings(StoreConfig.from_kwargs(block)), building=False)
    return [chunk.text for chunk in chunks]


def large_texts() -> list[str]:
    from scale import chunk_text

    rng = np.random.default_rng(LARGE_ROWS)
    return [chunk_text(row, rng) for row in range(LARGE_ROWS)]


def per_call_ms(call: Callable[[str], object], queries: list[str]) -> float:
    """Fastest of ``PASSES`` passes over ``queries``, per call."""
    best = float("inf")
    for _ in range(PASSES):
        started = time.perf_counter()
        for query in queries:
            call(query)
        best = min(best, time.perf_counter() - started)
    return best / len(queries) * 1000


def queries() -> list[str]:
    pairs = follow_ups(120)
    return [question for _, question in pairs] + [turn for history, _ in pairs for turn in history]


def words(texts: list[str]) -> list[str]:
    return [word for text in texts for word in text.split()]


def measure(name: str, texts: list[str], reference: bool) -> list[str]:
    index = LexicalIndex.build(texts)
    asked = queries()
    rows = [f"| {name} | search | {per_call_ms(lambda q: index.search(q, DEPTH), asked):.3f} |"]
    rows.append(f"| {name} | rarity | {per_call_ms(index.rarity, words(asked)):.4f} |")
    if reference:
        before = TokenisedByBm25s(index._retriever, len(index), index.settings)
        for query in asked:
            assert before.search(query, DEPTH) == index.search(query, DEPTH), query
        for word in words(asked):
            assert before.rarity(word) == index.rarity(word), word
        rows.insert(
            1,
            f"| {name} | search, bm25s.tokenize | "
            f"{per_call_ms(lambda q: before.search(q, DEPTH), asked):.3f} |",
        )
        rows.append(
            f"| {name} | rarity, bm25s.tokenize | {per_call_ms(before.rarity, words(asked)):.4f} |"
        )
    return rows


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--reference", action="store_true", help="also time bm25s.tokenize")
    args = parser.parse_args()
    print("| knowledge base | call | ms per call |\n|---|---|---:|")
    structlog.configure(wrapper_class=structlog.make_filtering_bound_logger(logging.WARNING))
    for name, texts in (("example (docs/)", example_texts()), ("synthetic", large_texts())):
        for row in measure(f"{name}, {len(texts):,} chunks", texts, args.reference):
            print(row, flush=True)


if __name__ == "__main__":
    main()
