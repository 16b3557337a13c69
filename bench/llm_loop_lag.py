"""Event-loop lag of 200 concurrent searches on the LLM path (``rewrite: llm``, ``self_query:
llm``), against the OpenAI-compatible test server running in a process of its own.

The server (``tests/fake_openai.py``) answers every request at once with ``--answer``: a normal
combined answer, or a filter nested 800 deep (refused by the filter bounds). Searches go through
``ContextRetrieval`` with the example knowledge base, as in ``bench/loop_lag.py``, while a 1 ms
ticker records how late it wakes up. It also counts the steps that fell back busy: no place
among the ``MAX_CALLS_IN_FLIGHT`` calls came free within ``llm_queue_wait_seconds``, or the
queue was full.

Run: ``python bench/llm_loop_lag.py [--answer normal|deep]`` (prints a Markdown table row).
"""

from __future__ import annotations

import argparse
import asyncio
import json
import logging
import os
import subprocess
import sys
import tempfile
from pathlib import Path
from typing import Any

os.environ.setdefault("HF_HUB_OFFLINE", "1")
os.environ.setdefault("TRANSFORMERS_OFFLINE", "1")
os.environ.setdefault("LITELLM_LOCAL_MODEL_COST_MAP", "True")
os.environ.setdefault("OPENAI_API_KEY", "sk-test-not-a-secret")

import numpy as np  # noqa: E402
import structlog  # noqa: E402

REPO = Path(__file__).resolve().parents[1]
sys.path.insert(0, str(REPO))  # run as a script from anywhere

from bench.load import Conversation, real_embedder, vector_store_block  # noqa: E402
from bench.loop_lag import burst_rounds  # noqa: E402

DEEP_FILTER_LEVELS = 800
ANSWERS = {
    "normal": json.dumps({"query": "How much does the premium plan cost?", "filter": "NO_FILTER"}),
    "deep": json.dumps(
        {
            "query": "How much does the premium plan cost?",
            "filter": "not(" * DEEP_FILTER_LEVELS
            + 'eq("plan", "premium")'
            + ")" * DEEP_FILTER_LEVELS,
        }
    ),
}


def start_server(answer: str) -> tuple[subprocess.Popen[str], str]:
    server = subprocess.Popen(
        [sys.executable, "-m", "tests.fake_openai", "--answer", answer],
        cwd=REPO,
        stdout=subprocess.PIPE,
        text=True,
    )
    assert server.stdout is not None
    return server, server.stdout.readline().strip()


async def burst_lags(
    base_url: str, concurrent: int, rounds: int, slow_ms: float | None = None
) -> dict[str, Any]:
    from rasa.utils.endpoints import EndpointConfig

    from rasa_context_retrieval.store import ContextRetrieval

    busy = 0

    def count_busy(_: Any, __: str, event: dict[str, Any]) -> dict[str, Any]:
        nonlocal busy
        busy += event.get("event") == "llm.complete.busy"
        raise structlog.DropEvent

    structlog.configure(processors=[count_busy])
    with tempfile.TemporaryDirectory() as scratch:
        block = vector_store_block(Path(scratch) / "index")
        block.update(
            rewrite="llm",
            self_query="llm",
            llm={
                "provider": "openai",
                "model": "gpt-4o-mini",
                "api_base": base_url,
                "api_key": "${OPENAI_API_KEY}",
                "timeout": 5,
                "max_retries": 0,
            },
        )
        config = EndpointConfig(**block)
        store = ContextRetrieval(embeddings=real_embedder())
        store.connect(config)
        chats = [Conversation(seed, unique=False) for seed in range(concurrent)]
        for chat in chats:  # warm the query-vector cache: time the loop, not the model
            await store.search("", chat.next_state(), 0.0)
        busy = 0
        if slow_ms is not None:  # asyncio reports each callback that held the loop this long
            asyncio.get_running_loop().set_debug(True)
            asyncio.get_running_loop().slow_callback_duration = slow_ms / 1000
        ticks, per_round, elapsed = await burst_rounds(store, config, chats, rounds)
    lag_ms = np.array(ticks) * 1000
    return {
        "searches_per_s": round(concurrent * rounds / elapsed, 1),
        "max_ms": round(float(lag_ms.max()), 1),
        "median_round_max_ms": round(float(np.median(per_round)) * 1000, 1),
        "p99_ms": round(float(np.percentile(lag_ms, 99)), 1),
        "busy_share": round(busy / (concurrent * rounds), 2),
        "load": round(os.getloadavg()[0], 2),
    }


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--answer", choices=sorted(ANSWERS), default="normal")
    parser.add_argument("--concurrent", type=int, default=200)
    parser.add_argument("--rounds", type=int, default=5)
    parser.add_argument("--slow-ms", type=float, default=None)
    args = parser.parse_args()
    logging.basicConfig(level=logging.WARNING)
    logging.getLogger("LiteLLM").setLevel(logging.ERROR)
    server, base_url = start_server(ANSWERS[args.answer])
    try:
        result = asyncio.run(burst_lags(base_url, args.concurrent, args.rounds, args.slow_ms))
    finally:
        server.terminate()
        server.wait()
    print(
        "| answer | concurrent | rounds | searches/s | max tick ms | median of per-round max ms "
        "| p99 tick ms | LLM steps that fell back busy | load avg |\n"
        "|---|---:|---:|---:|---:|---:|---:|---:|---:|\n"
        f"| {args.answer} | {args.concurrent} | {args.rounds} | {result['searches_per_s']} "
        f"| {result['max_ms']} | {result['median_round_max_ms']} | {result['p99_ms']} "
        f"| {result['busy_share']} | {result['load']} |"
    )


if __name__ == "__main__":
    main()
