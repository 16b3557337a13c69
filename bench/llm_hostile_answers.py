"""Hostile LLM answers against the LLM self-query step: wall time and event-loop blocking.

The local OpenAI-compatible test server (``tests/fake_openai.py``, real HTTP through Rasa's
client) answers with text that LangChain's JSON repair works on for a time quadratic in its
length (a truncated JSON object), with a filter nested thousands of levels deep, or with an
``or()`` of thousands of terms. A 5 ms ticker records the longest the event loop was blocked
while ``LLMQueryConstructor.construct`` ran with ``timeout: 2``. ``--sizes`` picks the truncated
answers' sizes in bytes.

Run: ``python bench/llm_hostile_answers.py`` (prints a Markdown table).
"""

from __future__ import annotations

import argparse
import asyncio
import json
import os
import sys
import time
from pathlib import Path

os.environ.setdefault("HF_HUB_OFFLINE", "1")
os.environ.setdefault("LITELLM_LOCAL_MODEL_COST_MAP", "True")
os.environ.setdefault("OPENAI_API_KEY", "sk-test-not-a-secret")

REPO = Path(__file__).resolve().parents[1]
sys.path.insert(0, str(REPO))  # run as a script from anywhere

TIMEOUT_SECONDS = 2.0
TICK_SECONDS = 0.005


def answers(sizes: list[int]) -> list[tuple[str, str]]:
    truncated = [(f"truncated JSON, {n:,} B", '{"query": "q", "filter": ' + "x" * n) for n in sizes]
    deep = "not(" * 3000 + 'eq("plan", "free")' + ")" * 3000
    wide = "or(" + ", ".join(['eq("plan", "free")'] * 4000) + ")"
    return [
        *truncated,
        ("not() 3,000 deep", json.dumps({"query": "q", "filter": deep})),
        ("or() of 4,000 terms", json.dumps({"query": "q", "filter": wide})),
    ]


async def run(sizes: list[int]) -> None:
    from rasa_context_retrieval.filters.schema import MetadataField
    from rasa_context_retrieval.llm.client import RetrievalLLM
    from rasa_context_retrieval.llm_query.constructor import LLMQueryConstructor
    from tests.fake_openai import FakeOpenAI, Reply

    server = FakeOpenAI()
    server.start()
    llm = RetrievalLLM.from_config(server.llm_config(timeout=TIMEOUT_SECONDS))
    fields = [MetadataField(name="plan", type="string", values=("free", "plus"))]
    constructor = LLMQueryConstructor(llm, fields, timeout=TIMEOUT_SECONDS)
    server.responder = lambda body: Reply('{"query": "q", "filter": "NO_FILTER"}')
    await constructor.construct("warm up")  # the first request sets up the connection
    print("| answer | construct() s | longest event-loop block ms | result |")
    print("|---|---:|---:|---|")
    for name, content in answers(sizes):
        server.responder = lambda body, content=content: Reply(content)
        longest = 0.0
        done = asyncio.Event()

        async def ticker(done: asyncio.Event) -> None:
            nonlocal longest
            while not done.is_set():
                before = time.perf_counter()
                await asyncio.sleep(TICK_SECONDS)
                longest = max(longest, time.perf_counter() - before - TICK_SECONDS)

        ticks = asyncio.create_task(ticker(done))
        started = time.perf_counter()
        result = await constructor.construct("which plans")
        elapsed = time.perf_counter() - started
        done.set()
        await ticks
        outcome = "no filter (fallback)" if result is None else "filter"
        print(f"| {name} | {elapsed:.2f} | {longest * 1000:.0f} | {outcome} |", flush=True)
    server.stop()


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--sizes", type=int, nargs="+", default=[4_000, 24_000, 64_000, 1_600_000])
    asyncio.run(run(parser.parse_args().sizes))


if __name__ == "__main__":
    main()
