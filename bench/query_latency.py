"""Query embedding: ONNX export vs Rasa's client, end to end, under load, and int8's cost.

Parts (``--part``; all by default), each printing a Markdown table:

* ``latency``: one search end to end (``connect()`` + plan + query embedding + search, a
  follow-up with history) on the example knowledge base and on 100,000 synthetic chunks
  (scale.py's generator around the example's real vectors; the store's refresh check is off
  there, or it would find those chunks missing from ``docs/`` and serve the example's again), for
  ContextRetrieval with ``query_embedder: auto`` (ONNX) and ``rasa``, and Rasa's FAISS_Store on
  the same chunks and vectors (its own search: embed the last two messages, flat L2 search). The
  three run interleaved, query by query, so machine noise hits them alike. Three ways, each in
  its own table: *cold* clears the query-vector cache before each search, so every text of the
  mix is embedded; *in conversation* first searches the earlier turns of the same conversation
  (untimed, as the assistant did when they were asked) and then times the follow-up, so only what
  is new since (the message and the bot's last reply) is embedded. Bot replies are the example's
  stored answers, so Rasa's query (message + reply) and our mix carry real lengths. In those two
  ways every reply is tagged with its conversation, so nothing is shared between conversations,
  as with replies an LLM writes; *in conversation, stored replies* gives the replies exactly as
  the example assistant says them (extractive answers, ``use_generative_llm: false``), so a reply
  another conversation already received is not embedded again (the example knowledge base only).
* ``load``: bench/load.py's closed loop (every question new) at 100 and 200 conversations, for
  ``rasa`` and ``auto``, alternating.
* ``int8``: top-10 agreement of int8 and fp32 ONNX query vectors (and fp32 against Rasa's
  client), and MRR@10 of each, on TREC CAsT 2021 and 2022 (corpus embedded by Rasa's client,
  queries rewritten by the default heuristic) and on the example knowledge base (ContextRetrieval
  end to end, top_k 10).

Run from the repository root: ``python bench/query_latency.py [--data ../shared/bench-data]``.
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
import time
import zlib
from collections.abc import Callable
from dataclasses import dataclass
from pathlib import Path
from typing import Any

os.environ.setdefault("HF_HUB_OFFLINE", "1")
os.environ.setdefault("TRANSFORMERS_OFFLINE", "1")
os.environ.setdefault("LITELLM_LOCAL_MODEL_COST_MAP", "True")

import numpy as np  # noqa: E402
import structlog  # noqa: E402

REPO = Path(__file__).resolve().parents[1]
sys.path.insert(0, str(REPO))
sys.path.insert(0, str(REPO / "bench"))

from load import SCRIPTS, real_embedder, vector_store_block, wait_until_prepared  # noqa: E402

from rasa_context_retrieval.conversation import Conversation, Turn  # noqa: E402
from rasa_context_retrieval.knowledge.models import Chunk  # noqa: E402

DEFAULT_DATA = REPO / ".." / "shared" / "bench-data"
SEARCHES = 120
LARGE_ROWS = 100_000
DEPTH = 10


def follow_ups(count: int) -> list[tuple[list[str], str]]:
    """(earlier user turns, follow-up) pairs from load.py's scripts; every turn's text unique."""
    pairs = []
    for n in range(count):
        script = SCRIPTS[n % len(SCRIPTS)]
        lines = [
            f"{line.format(plan='plus', region='EU', platform='android', n=7)} ({n})"
            for line in script
        ]
        turn = 1 + n % (len(lines) - 1)
        pairs.append((lines[:turn], lines[turn]))
    return pairs


OVERRIDES: dict[str, Any] = {}
"""Keys set on ContextRetrieval's ``vector_store:`` block for the whole run (``--hybrid``)."""

REPLIES: list[str] = []
"""The example assistant's stored answers (filled from the index): what extractive mode says."""


@dataclass(frozen=True)
class Way:
    """How a follow-up is timed (see the module's docstring)."""

    name: str
    in_conversation: bool
    stored_replies: bool = False


IN_CONVERSATION = Way("in conversation", in_conversation=True)
STORED_REPLIES = Way("in conversation, stored replies", in_conversation=True, stored_replies=True)
COLD = Way("cold", in_conversation=False)


def bot_reply(question: str, stored: bool = False) -> str:
    """The assistant's answer to an earlier turn: a real stored answer, as the example says it
    (``stored``) or tagged to be as unique as the turn."""
    tag = question.rsplit("(", 1)[-1].rstrip(")")
    answer = REPLIES[zlib.crc32(question.encode()) % len(REPLIES)] if REPLIES else "Here is how."
    return answer if stored else f"{answer} ({tag})"


def tracker_state(history: list[str], question: str, stored: bool = False) -> dict[str, Any]:
    events: list[dict[str, Any]] = []
    for earlier in history:
        reply = bot_reply(earlier, stored)
        events += [{"event": "user", "text": earlier}, {"event": "bot", "text": reply}]
    events.append({"event": "user", "text": question})
    return {"events": events, "slots": {}, "latest_message": {"text": question}}


def percentiles(samples: list[float]) -> tuple[float, float]:
    return float(np.percentile(samples, 50)), float(np.percentile(samples, 95))


# ------------------------------------------------------------------------------------ latency


def rasa_faiss_store(client: Any, chunks: list[Chunk], vectors: np.ndarray) -> Any:
    from rasa.core.information_retrieval.faiss import FAISS_Store

    store = FAISS_Store(embeddings=client)
    store._add_embeddings(  # the same chunks and vectors as ours, no second embedding pass
        [c.text for c in chunks], vectors.tolist(), [c.metadata for c in chunks]
    )
    return store


Timed = Callable[[list[str], str], Any]


def timed_systems(
    client: Any, scratch: Path, large: bool, way: Way
) -> tuple[dict[str, Timed], dict[str, Timed], int]:
    """The systems to time, and what each does untimed before a follow-up (its earlier turns)."""
    from rasa.utils.endpoints import EndpointConfig

    from rasa_context_retrieval.store import ContextRetrieval

    stores: dict[str, Any] = {}
    for mode in ("auto", "rasa"):
        block = {**vector_store_block(scratch / "index"), "query_embedder": mode, **OVERRIDES}
        if large:  # the refresh check would find the synthetic chunks gone from docs/ and
            block["refresh_seconds"] = 0  # serve the example's 133 again after 30 s
        config = EndpointConfig(**block)
        store = ContextRetrieval(embeddings=client)
        store.connect(config)
        wait_until_prepared(store)
        stores[mode] = (store, config)
    index = stores["auto"][0].engine.live.knowledge
    chunks, vectors = list(index.chunks), np.array(index.vectors)
    REPLIES[:] = sorted({str(c.metadata["answer"]) for c in chunks if c.metadata.get("answer")})
    if large:
        chunks, vectors = large_corpus(vectors)
        for store, _ in stores.values():
            live = store.engine.live
            live.swap(_large_knowledge(chunks, vectors, live.knowledge))
    rasa = rasa_faiss_store(client, chunks, vectors)

    def ours(mode: str, clear: bool) -> Timed:
        store, config = stores[mode]

        async def run(history: list[str], question: str) -> Any:
            if clear:
                store.engine.clear_query_cache()
            store.connect(config)
            state = tracker_state(history, question, way.stored_replies)
            return await store.search("", state, 0.0)

        return lambda history, question: asyncio.run(run(history, question))

    def earlier_turns(mode: str) -> Timed:
        search = ours(mode, clear=False)

        def run(history: list[str], question: str) -> None:
            for turn in range(len(history)):
                search(history[:turn], history[turn])

        return run

    def rasas(history: list[str], question: str) -> Any:
        last_bot = bot_reply(history[-1], way.stored_replies) if history else ""
        query = f"{question}\n{last_bot}"  # its default: the last two messages, newest first
        rasa.connect(None)
        return asyncio.run(rasa.search(query, {}, 0.0))

    systems = {
        "ContextRetrieval, ONNX": ours("auto", clear=not way.in_conversation),
        "ContextRetrieval, Rasa's client": ours("rasa", clear=not way.in_conversation),
        "Rasa FAISS_Store": rasas,
    }

    def nothing(history: list[str], question: str) -> None:
        return None

    before: dict[str, Timed] = {name: nothing for name in systems}
    if way.in_conversation:
        before["ContextRetrieval, ONNX"] = earlier_turns("auto")
        before["ContextRetrieval, Rasa's client"] = earlier_turns("rasa")
    return systems, before, len(chunks)


def large_corpus(basis: np.ndarray) -> tuple[list[Chunk], np.ndarray]:
    from scale import chunk_metadata, chunk_text, synthetic_vectors

    rng = np.random.default_rng(LARGE_ROWS)
    vectors = synthetic_vectors(LARGE_ROWS, basis.astype(np.float32), seed=LARGE_ROWS)
    chunks = [
        Chunk(f"c{row}", chunk_text(row, rng), chunk_metadata(row, rng))
        for row in range(LARGE_ROWS)
    ]
    return chunks, vectors


def _large_knowledge(chunks: list[Chunk], vectors: np.ndarray, small: Any) -> Any:
    from rasa_context_retrieval.ingestion.knowledge import EmbeddedKnowledge

    return EmbeddedKnowledge.of("bench", small.embedder, chunks, vectors)


def measure_latency(client: Any, large: bool, way: Way) -> dict[str, Any]:
    with tempfile.TemporaryDirectory() as scratch:
        systems, before, rows = timed_systems(client, Path(scratch), large, way)
        timings: dict[str, list[float]] = {name: [] for name in systems}
        names = list(systems)
        for n, (history, question) in enumerate(follow_ups(SEARCHES + 10)):
            for name in names[n % 3 :] + names[: n % 3]:  # rotate who goes first
                before[name](history, question)
                started = time.perf_counter()
                systems[name](history, question)
                if n >= 10:  # the first ten warm up
                    timings[name].append((time.perf_counter() - started) * 1000)
    baseline = percentiles(timings["Rasa FAISS_Store"])
    rows_out = []
    for name, samples in timings.items():
        p50, p95 = percentiles(samples)
        rows_out.append((name, p50, p95, p50 / baseline[0], p95 / baseline[1]))
    return {
        "chunks": rows,
        "rows": rows_out,
        "load": os.getloadavg()[0],
        "way": way.name,
    }


def latency_table(result: dict[str, Any]) -> str:
    lines = [
        f"{result['chunks']:,} chunks, {result['way']}, {SEARCHES} follow-ups each, interleaved "
        f"(load average after: {result['load']:.1f})",
        "",
        "| system | p50 ms | p95 ms | p50 / Rasa | p95 / Rasa |",
        "|---|---:|---:|---:|---:|",
    ]
    for name, p50, p95, r50, r95 in result["rows"]:
        lines.append(f"| {name} | {p50:.1f} | {p95:.1f} | {r50:.2f} | {r95:.2f} |")
    return "\n".join(lines)


# --------------------------------------------------------------------------------------- load


def measure_load(seconds: float, conversations: list[int]) -> str:
    lines = [
        "| query embedder | conversations | searches/s | CPU ms per search | p50 ms | p95 ms "
        "| errors | loop lag p50 / p99 / max ms | load avg |",
        "|---|---:|---:|---:|---:|---:|---:|---|---:|",
    ]
    by_count: dict[int, dict[str, float]] = {}
    for count in conversations:
        for mode in ("rasa", "auto"):
            command = [sys.executable, str(REPO / "bench" / "load.py"), "--one", "2", "--unique"]
            command += ["--conversations", str(count), "--seconds", str(seconds)]
            command += ["--query-embedder", mode]
            done = subprocess.run(command, capture_output=True, text=True, check=True)
            r = json.loads(done.stdout.strip().splitlines()[-1])
            by_count.setdefault(count, {})[mode] = r["throughput"]
            lines.append(
                f"| {mode} | {count} | {r['throughput']} | {r['cpu_ms_per_search']} | "
                f"{r['p50_ms']} | {r['p95_ms']} | "
                f"{r['errors']} | {r['loop_lag_p50_ms']} / {r['loop_lag_p99_ms']} / "
                f"{r['loop_lag_max_ms']} | {r['load'][1]} |"
            )
            print(lines[-1], flush=True)
    ratios = ", ".join(f"{c}: {v['auto'] / v['rasa']:.2f}x" for c, v in by_count.items())
    return "\n".join(lines) + f"\n\nThroughput ONNX / Rasa's client, same run: {ratios}"


# --------------------------------------------------------------------------------------- int8


def cast_sets(data: Path) -> dict[str, tuple[list[str], list[str], list[tuple[Conversation, str]]]]:
    """name -> (corpus ids, corpus texts, [(conversation, gold id)])."""
    from cast2021 import load_benchmark

    corpus, cases = load_benchmark(data / "cast2021")
    sets = {"CAsT 2021": (corpus.ids, corpus.texts, [(c.conversation, c.gold) for c in cases])}
    paths = json.loads(
        (data / "cast2022" / "2022_evaluation_topics_flattened_duplicated_v1.0.json").read_text(
            encoding="utf-8"
        )
    )
    texts: dict[str, str] = {}
    cases22: list[tuple[Conversation, str]] = []
    for path in paths:
        turns: list[Turn] = []
        for turn in path["turn"]:
            response = (turn.get("response") or "").strip()
            if response:
                texts.setdefault(response, f"r{len(texts)}")
                conversation = Conversation(turns=(*turns, Turn("user", turn["utterance"])))
                cases22.append((conversation, texts[response]))
            turns += [Turn("user", turn["utterance"]), Turn("bot", response)]
    sets["CAsT 2022"] = (list(texts.values()), list(texts), cases22)
    return sets


def agreement(a: list[list[str]], b: list[list[str]]) -> tuple[float, float]:
    """Mean share of b's top-10 in a's, and the share of identical top-10 lists."""
    overlap = np.mean([len(set(x) & set(y)) / max(len(y), 1) for x, y in zip(a, b, strict=True)])
    identical = np.mean([x == y for x, y in zip(a, b, strict=True)])
    return float(overlap), float(identical)


def mrr(rankings: list[list[str]], golds: list[str]) -> float:
    ranks = [r.index(g) + 1 if g in r else None for r, g in zip(rankings, golds, strict=True)]
    return float(np.mean([1 / rank if rank else 0.0 for rank in ranks]))


def measure_int8(client: Any, data: Path) -> str:
    from rasa_context_retrieval.knowledge.embedding import embed_texts
    from rasa_context_retrieval.query_embedding.embedder import (
        RasaQueryEmbedder,
        open_query_embedder,
    )
    from rasa_context_retrieval.rewrite.heuristic import DEFAULT_MODE, standalone_query

    lines = [
        "| set | queries | fp32 vs Rasa: top-10 overlap / identical | int8 vs fp32: overlap "
        "/ identical | MRR@10 Rasa / fp32 / int8 |",
        "|---|---:|---|---|---|",
    ]
    with tempfile.TemporaryDirectory() as scratch:
        embedders = {
            "rasa": RasaQueryEmbedder(client),
            "fp32": open_query_embedder("auto", client, Path(scratch), background=False),
            "int8": open_query_embedder("int8", client, Path(scratch), background=False),
        }
        for name, (ids, texts, cases) in cast_sets(data).items():
            vectors = embed_texts(client, texts, 64, progress=False)
            queries = [standalone_query(c, DEFAULT_MODE) for c, _ in cases]
            ranked = {}
            for kind, embedder in embedders.items():
                q = np.vstack([embedder.embed(text) for text in queries])
                top = np.argsort(-(q @ vectors.T), axis=1)[:, :DEPTH]
                ranked[kind] = [[ids[i] for i in row] for row in top]
            golds = [gold for _, gold in cases]
            lines.append(_int8_row(name, ranked, golds))
            print(lines[-1], flush=True)
    lines.append(example_kb_int8(client))
    return "\n".join(lines)


def _int8_row(name: str, ranked: dict[str, list[list[str]]], golds: list[str] | None) -> str:
    fp = agreement(ranked["fp32"], ranked["rasa"])
    q8 = agreement(ranked["int8"], ranked["fp32"])
    scores = " / ".join(f"{mrr(ranked[k], golds):.3f}" for k in ranked) if golds else "no gold"
    return (
        f"| {name} | {len(ranked['rasa'])} | {fp[0]:.3f} / {fp[1]:.3f} | {q8[0]:.3f} / "
        f"{q8[1]:.3f} | {scores} |"
    )


def example_kb_int8(client: Any) -> str:
    from rasa.utils.endpoints import EndpointConfig

    from rasa_context_retrieval.store import ContextRetrieval

    ranked: dict[str, list[list[str]]] = {}
    with tempfile.TemporaryDirectory() as scratch:
        for kind, mode in (("rasa", "rasa"), ("fp32", "auto"), ("int8", "int8")):
            block = {**vector_store_block(Path(scratch) / "index"), "query_embedder": mode}
            block["top_k"] = DEPTH
            store = ContextRetrieval(embeddings=client)
            store.connect(EndpointConfig(**block))
            wait_until_prepared(store)
            ranked[kind] = [
                [str(r.metadata.get("source")) + r.text[:40] for r in result.results]
                for result in (
                    asyncio.run(store.search("", tracker_state(history, question), 0.0))
                    for history, question in follow_ups(60)
                )
            ]
    return _int8_row("example KB (end to end)", ranked, None)


# --------------------------------------------------------------------------------------- main


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--part", choices=["latency", "load", "int8", "all"], default="all")
    parser.add_argument("--data", type=Path, default=DEFAULT_DATA)
    parser.add_argument("--seconds", type=float, default=20.0)
    parser.add_argument("--conversations", type=int, nargs="+", default=[100, 200])
    parser.add_argument(
        "--hybrid",
        choices=["true", "false"],
        help="set ContextRetrieval's hybrid key (default: as endpoints.yml, BM25 on with FAISS)",
    )
    args = parser.parse_args()
    if args.hybrid is not None:
        OVERRIDES["hybrid"] = args.hybrid == "true"
    structlog.configure(wrapper_class=structlog.make_filtering_bound_logger(logging.WARNING))
    logging.getLogger().setLevel(logging.ERROR)
    os.sched_setaffinity(0, set(sorted(os.sched_getaffinity(0))[:2]))
    import faiss
    import torch

    torch.set_num_threads(2)  # as load.py does for 2 cores
    faiss.omp_set_num_threads(1)
    client = real_embedder() if args.part != "load" else None
    if args.part in ("latency", "all"):
        for large in (False, True):
            for way in (
                (IN_CONVERSATION, COLD) if large else (IN_CONVERSATION, STORED_REPLIES, COLD)
            ):
                result = measure_latency(client, large, way)
                print(latency_table(result) + "\n", flush=True)
    if args.part in ("load", "all"):
        print(measure_load(args.seconds, args.conversations) + "\n", flush=True)
    if args.part in ("int8", "all"):
        print(measure_int8(client, args.data), flush=True)


if __name__ == "__main__":
    main()
