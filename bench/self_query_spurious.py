"""How often the rule-based self-query makes a filter out of words that mean none.

Real user utterances from open-domain conversations (TREC CAsT 2021 and 2022: "what are the
most common types of breast cancer?", "I remember Glasgow hosting COP26 last year") are run
through the rules against every schema of the tuning sets in ``bench/data/``. Nearly none of
them asks for a product-like metadata filter, so almost every filter made is spurious: a word
or number taken for an attribute it is not about. The report says, per schema, how many
utterances got a filter, the most frequent filter atoms, and sample utterances, to review by
hand (a few may be legitimate: an utterance really asking for that value).

Both the raw utterance and the person's standalone rewrite are run; duplicates (CAsT 2022
repeats early turns across the paths of one topic) count once.

Run: ``python bench/self_query_spurious.py CAST2021_DIR CAST2022_DIR [--baseline CHECKOUT]``.
``--baseline`` runs the engine of another checkout (e.g. an unpacked ``git archive main``) in a
subprocess, in the same run, for a before/after table.
"""

from __future__ import annotations

import argparse
import json
import logging
import statistics
import subprocess
import sys
import time
from collections import Counter
from pathlib import Path
from typing import Any

import structlog

REPO_ROOT = Path(__file__).resolve().parents[1]
DATA = REPO_ROOT / "bench" / "data"
TUNING_SETS = (
    "self_query_schemas.yaml",
    "self_query_unseen.yaml",
    "self_query_tuning2.yaml",
    "self_query_tuning3.yaml",
    "self_query_holdout.yaml",
    "self_query_holdout2.yaml",
    "self_query_holdout3.yaml",
    "self_query_holdout4.yaml",
    "self_query_holdout5.yaml",
)
SAMPLES = 6
TOP_ATOMS = 6


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.split("\n")[0])
    parser.add_argument("cast", type=Path, nargs="+", help="CAsT 2021 / 2022 directories")
    parser.add_argument("--code", type=Path, default=REPO_ROOT, help="checkout whose engine runs")
    parser.add_argument("--baseline", type=Path, help="another checkout, run for comparison")
    parser.add_argument("--json", action="store_true", help="print raw results as JSON")
    args = parser.parse_args()
    sys.path.insert(0, str(args.code.resolve()))
    structlog.configure(wrapper_class=structlog.make_filtering_bound_logger(logging.WARNING))
    utterances = load_utterances(args.cast)
    results = sweep(utterances, args.code.resolve())
    if args.json:
        print(json.dumps(results))
        return
    runs = {"after": results}
    if args.baseline is not None:
        command = [sys.executable, __file__, *map(str, args.cast), "--json"]
        command += ["--code", str(args.baseline)]
        done = subprocess.run(command, capture_output=True, text=True, check=True).stdout
        runs = {"before": json.loads(done), **runs}
    print(f"{len(utterances)} distinct utterances\n")
    print(comparison_table(runs))
    for label, run in runs.items():
        print(f"\n### {label}: filters made\n")
        print(details(run))


def load_utterances(directories: list[Path]) -> list[str]:
    """Every distinct raw utterance and manual rewrite of the CAsT files in ``directories``."""
    seen: dict[str, None] = {}
    for directory in directories:
        for path in sorted(directory.glob("*.json")):
            for topic in json.loads(path.read_text(encoding="utf-8")):
                for turn in topic["turn"]:
                    for key in ("raw_utterance", "utterance", "manual_rewritten_utterance"):
                        text = (turn.get(key) or "").strip()
                        if text:
                            seen.setdefault(text, None)
    return list(seen)


def sweep(utterances: list[str], code: Path) -> dict[str, Any]:
    import importlib

    import yaml

    MetadataField = importlib.import_module("rasa_context_retrieval.filters.schema").MetadataField
    rules_module = importlib.import_module("rasa_context_retrieval.self_query.rules")
    bench = importlib.import_module("bench.self_query")
    schemas: dict[str, Any] = {}
    durations: list[float] = []
    for set_name in TUNING_SETS:
        path = DATA / set_name
        if not path.exists():
            continue
        for schema_name, schema in yaml.safe_load(path.read_text(encoding="utf-8"))[
            "schemas"
        ].items():
            fields = [MetadataField(**field) for field in schema["fields"]]
            known = {name: frozenset(values) for name, values in schema["indexed_values"].items()}
            rules = rules_module.RuleQueryConstructor(fields, known, today=lambda: bench.TODAY)
            hits = []
            for text in utterances:
                started = time.perf_counter()
                structured = rules.construct(text)
                durations.append(time.perf_counter() - started)
                got = bench.atoms(structured.filter, structured.limit)
                if got:
                    hits.append({"q": text, "atoms": sorted(map(str, got))})
            schemas[schema_name] = hits
    return {
        "utterances": len(utterances),
        "schemas": schemas,
        "median_us": statistics.median(durations) * 1e6 if durations else 0.0,
    }


def comparison_table(runs: dict[str, dict[str, Any]]) -> str:
    labels = list(runs)
    names = list(dict.fromkeys(name for run in runs.values() for name in run["schemas"]))
    lines = [
        "| schema | " + " | ".join(f"{label}: with a filter" for label in labels) + " |",
        "|---|" + "---|" * len(labels),
    ]
    for name in [*names, "all"]:
        cells = []
        for run in runs.values():
            if name == "all":
                count = sum(len(hits) for hits in run["schemas"].values())
                total = run["utterances"] * len(run["schemas"])
            else:
                count = len(run["schemas"].get(name, []))
                total = run["utterances"]
            cells.append(f"{count} / {total}")
        lines.append(f"| {name} | " + " | ".join(cells) + " |")
    medians = " | ".join(f"{run['median_us']:.0f} µs" for run in runs.values())
    lines.append(f"| `construct` median | {medians} |")
    return "\n".join(lines)


def details(run: dict[str, Any]) -> str:
    out = []
    for name, hits in run["schemas"].items():
        if not hits:
            continue
        atoms = Counter(atom for hit in hits for atom in hit["atoms"])
        common = ", ".join(f"`{atom}` ×{count}" for atom, count in atoms.most_common(TOP_ATOMS))
        out.append(f"* **{name}** ({len(hits)}): {common}")
        for hit in hits[:SAMPLES]:
            out.append(f"  * {hit['q']!r} -> {', '.join(hit['atoms'])}")
    return "\n".join(out) if out else "none"


if __name__ == "__main__":
    main()
