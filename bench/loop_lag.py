"""Event-loop lag under a burst of concurrent searches through ``ContextRetrieval``.

Rasa serves every conversation from one asyncio loop, so anything a search does on the loop
delays every other conversation. This script fires ``--concurrent`` searches at once (default
200; distinct multi-turn conversations with slots, from ``bench/load.py``) against the example
knowledge base, ``--rounds`` times, while a ticker sleeps 1 ms in a loop and records how late it
wakes up. It prints the largest tick (the longest the loop was blocked) per round and overall.
``--slow-ms`` turns on asyncio's debug report of every callback that held the loop longer than
that, to find what blocks it.

Run: ``python bench/loop_lag.py`` (prints a Markdown table row).
"""

from __future__ import annotations

import argparse
import asyncio
import logging
import os
import sys
import tempfile
import time
from pathlib import Path
from typing import Any

os.environ.setdefault("HF_HUB_OFFLINE", "1")
os.environ.setdefault("TRANSFORMERS_OFFLINE", "1")
os.environ.setdefault("LITELLM_LOCAL_MODEL_COST_MAP", "True")

import numpy as np  # noqa: E402
import structlog  # noqa: E402

REPO = Path(__file__).resolve().parents[1]
sys.path.insert(0, str(REPO))  # run as a script from anywhere

from bench.load import Conversation, real_embedder, vector_store_block  # noqa: E402

TICK_SECONDS = 0.001


async def burst_lags(concurrent: int, rounds: int, slow_ms: float | None) -> dict[str, Any]:
    from rasa.utils.endpoints import EndpointConfig

    from rasa_context_retrieval.store import ContextRetrieval

    loop = asyncio.get_running_loop()
    if slow_ms is not None:
        loop.set_debug(True)
        loop.slow_callback_duration = slow_ms / 1000
        logging.getLogger("asyncio").setLevel(logging.WARNING)
    with tempfile.TemporaryDirectory() as scratch:
        config = EndpointConfig(**vector_store_block(Path(scratch) / "index"))
        store = ContextRetrieval(embeddings=real_embedder())
        store.connect(config)
        chats = [Conversation(seed, unique=False) for seed in range(concurrent)]
        for chat in chats:  # warm the query-vector cache and the rules: time the loop, not torch
            await store.search("", chat.next_state(), 0.0)
        ticks, per_round, elapsed = await burst_rounds(store, config, chats, rounds)
    lag_ms = np.array(ticks) * 1000
    return {
        "concurrent": concurrent,
        "rounds": rounds,
        "searches_per_s": round(concurrent * rounds / elapsed, 1),
        "max_ms": round(float(lag_ms.max()), 1),
        "median_round_max_ms": round(float(np.median(per_round)) * 1000, 1),
        "p99_ms": round(float(np.percentile(lag_ms, 99)), 1),
        "load": round(os.getloadavg()[0], 2),
    }


async def burst_rounds(
    store: Any, config: Any, chats: list[Conversation], rounds: int
) -> tuple[list[float], list[float], float]:
    """``rounds`` bursts of one search per conversation at once, with a ticker that sleeps
    ``TICK_SECONDS`` and records how late it wakes: every tick's lateness (seconds), each round's
    longest, and the seconds all rounds took. Rasa connects before each search, so this does too."""
    ticks: list[float] = []
    per_round: list[float] = []
    started = time.perf_counter()
    for _ in range(rounds):
        done = asyncio.Event()

        async def ticker(done: asyncio.Event) -> None:
            while not done.is_set():
                before = time.perf_counter()
                await asyncio.sleep(TICK_SECONDS)
                ticks.append(time.perf_counter() - before - TICK_SECONDS)

        async def search(chat: Conversation) -> None:
            store.connect(config)
            await store.search("", chat.next_state(), 0.0)

        first = len(ticks)
        tick_task = asyncio.create_task(ticker(done))
        await asyncio.gather(*(search(chat) for chat in chats))
        done.set()
        await tick_task
        per_round.append(max(ticks[first:], default=0.0))
    return ticks, per_round, time.perf_counter() - started


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--concurrent", type=int, default=200)
    parser.add_argument("--rounds", type=int, default=10)
    parser.add_argument("--slow-ms", type=float, default=None)
    args = parser.parse_args()
    structlog.configure(wrapper_class=structlog.make_filtering_bound_logger(logging.WARNING))
    if args.slow_ms is not None:
        logging.basicConfig(level=logging.WARNING)
    result = asyncio.run(burst_lags(args.concurrent, args.rounds, args.slow_ms))
    print(
        "| concurrent | rounds | searches/s | max tick ms | median of per-round max ms "
        "| p99 tick ms | load avg |\n|---:|---:|---:|---:|---:|---:|---:|\n"
        f"| {result['concurrent']} | {result['rounds']} | {result['searches_per_s']} "
        f"| {result['max_ms']} | {result['median_round_max_ms']} | {result['p99_ms']} "
        f"| {result['load']} |"
    )


if __name__ == "__main__":
    main()
