"""Wall time of the guards the tests check by structure.

The tests assert what a guard does (a repeat ``connect()`` opens nothing, a 3,000-deep filter is
refused before the parser runs, only the first ``MAX_SCANNED_CHARS`` of a huge message are
scanned for filters, a restart embeds nothing); this script prints how long each takes on this
machine, against the example knowledge base, so that a regression in time shows up here and not
as a flaky test on a busy machine.

Run: ``python bench/guard_costs.py`` (prints a Markdown table).
"""

from __future__ import annotations

import asyncio
import contextlib
import logging
import os
import statistics
import sys
import tempfile
import time
from collections.abc import Callable
from pathlib import Path

os.environ.setdefault("HF_HUB_OFFLINE", "1")
os.environ.setdefault("TRANSFORMERS_OFFLINE", "1")
os.environ.setdefault("LITELLM_LOCAL_MODEL_COST_MAP", "True")

REPO = Path(__file__).resolve().parents[1]
sys.path.insert(0, str(REPO))  # run as a script from anywhere

from bench.load import real_embedder, vector_store_block  # noqa: E402

REPEATS = 5
DEEP_FILTER_LEVELS = 3_000
HUGE_MESSAGE = "how do I get a refund on premium in the eu? " * 25_000  # ~1.1 MB


def median_seconds(run: Callable[[], object], repeats: int = REPEATS) -> float:
    times = []
    for _ in range(repeats):
        started = time.perf_counter()
        run()
        times.append(time.perf_counter() - started)
    return statistics.median(times)


def main() -> None:
    import structlog
    from rasa.utils.endpoints import EndpointConfig

    from rasa_context_retrieval.filters.syntax import parse_filter
    from rasa_context_retrieval.store import ContextRetrieval

    # the search of the huge message would log the message itself at debug level
    structlog.configure(wrapper_class=structlog.make_filtering_bound_logger(logging.WARNING))
    embedder = real_embedder()
    rows: list[tuple[str, float]] = []
    with tempfile.TemporaryDirectory() as scratch:
        config = EndpointConfig(**vector_store_block(Path(scratch) / "index"))
        store = ContextRetrieval(embeddings=embedder)
        store.connect(config)  # builds the index once

        def hundred_connects() -> None:
            for _ in range(100):
                store.connect(config)

        rows.append(("repeat connect(), per call", median_seconds(hundred_connects) / 100))
        rows.append(
            (
                "restart: connect() of a new store on the built index",
                median_seconds(lambda: ContextRetrieval(embeddings=embedder).connect(config)),
            )
        )

        def deep_filter() -> None:
            with contextlib.suppress(ValueError):
                parse_filter(
                    "not(" * DEEP_FILTER_LEVELS + 'eq("plan", "premium")' + ")" * DEEP_FILTER_LEVELS
                )

        rows.append((f"refusing a {DEEP_FILTER_LEVELS}-deep filter", median_seconds(deep_filter)))
        state = {"events": [{"event": "user", "text": HUGE_MESSAGE}]}
        rows.append(
            (
                "search of a 1.1 MB message",
                median_seconds(lambda: asyncio.run(store.search("", state, 0.0)), repeats=3),
            )
        )
    print("| guard | median seconds |")
    print("|---|---:|")
    for name, seconds in rows:
        print(f"| {name} | {seconds:.4f} |")


if __name__ == "__main__":
    main()
