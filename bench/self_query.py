"""How often the rule-based self-query gets the filter right on schemas it was not written for.

Reads the labelled questions in ``bench/data/self_query_schemas.yaml`` (movies, a product
catalogue, articles: each with its ``metadata_fields``, the values its index would hold, and the
filter a careful reader would apply). Every question's expected and extracted filters are cut
into atoms (the comparisons of the top-level ``and``, plus the ``limit``) and the question is:

* ``correct``: the same atoms (no filter meant and none made counts here too);
* ``partial``: some expected atoms, nothing else;
* ``missed``: a filter was meant, none was made;
* ``wrong``: an atom that was not meant (a wrong value, comparator, field or an inverted
  negation) on a question that meant a filter;
* ``spurious``: a filter made where none was meant.

Every third question of each schema is held out: it is scored in its own column and never
printed one by one, so that tuning on the rest cannot look at it.

Run: ``python bench/self_query.py [--baseline CHECKOUT] [--show-dev]``. ``--baseline`` scores the
engine package of another checkout (e.g. the main branch) in a subprocess, in the same run,
for a before/after table, and lists every question whose extracted filter changed.

``--llm FILE`` scores the LLM self-query instead of the rules: FILE holds a ``vector_store.llm``
block (YAML), and each schema gets the constructor the plugin builds for that block, with the
schema's fields and its indexed values as the value catalogue. Questions are asked one at a
time; an answer that failed (timeout, HTTP error, unparseable) counts as no filter and is also
counted on its own. Like the plugin's, the prompt states no date, so questions relative to
today ("listed in the last 7 days") can only come out right by chance.
"""

from __future__ import annotations

import argparse
import asyncio
import datetime as dt
import json
import logging
import statistics
import subprocess
import sys
import time
from collections import Counter
from collections.abc import Iterable, Mapping
from pathlib import Path
from typing import Any

import structlog

REPO_ROOT = Path(__file__).resolve().parents[1]
DEFAULT_DATA = REPO_ROOT / "bench" / "data" / "self_query_schemas.yaml"
TODAY = dt.date(2025, 6, 15)
HELD_OUT_EVERY = 3
TIMING_ROUNDS = 20
OUTCOMES = ("correct", "partial", "missed", "wrong", "spurious")

Atom = tuple[str, str, Any]


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.split("\n")[0])
    parser.add_argument("--data", type=Path, default=DEFAULT_DATA)
    parser.add_argument("--code", type=Path, default=REPO_ROOT, help="checkout whose engine runs")
    parser.add_argument("--baseline", type=Path, help="another checkout, scored for comparison")
    parser.add_argument("--json", action="store_true", help="print raw outcomes as JSON")
    parser.add_argument("--show-dev", action="store_true", help="list dev questions not correct")
    parser.add_argument("--llm", type=Path, help="YAML file with a vector_store.llm block")
    args = parser.parse_args()
    sys.path.insert(0, str(args.code.resolve()))
    structlog.configure(wrapper_class=structlog.make_filtering_bound_logger(logging.WARNING))
    if args.llm is not None:
        rows, failed = score_llm(args.data, args.llm)
        print(summary_table(rows))
        print(f"\nLLM answers that failed (counted as no filter): {failed} of {len(rows)}")
        if args.show_dev:
            _show_not_correct(rows)
        return
    outcomes, timing = score_all(args.data, args.code.resolve())
    if args.json:
        print(json.dumps({"rows": outcomes, "timing": timing}))
        return
    runs = {"after": (outcomes, timing)}
    if args.baseline is not None:
        command = [sys.executable, __file__, "--json", "--data", str(args.data)]
        command += ["--code", str(args.baseline)]
        done = json.loads(
            subprocess.run(command, capture_output=True, text=True, check=True).stdout
        )
        runs = {"before": (done["rows"], done["timing"]), **runs}
    for label, (rows, run_timing) in runs.items():
        print(f"\n### {label}\n")
        print(summary_table(rows))
        print(
            f"\n`construct` per question: median {run_timing['median_us']:.0f} µs, "
            f"p95 {run_timing['p95_us']:.0f} µs ({TIMING_ROUNDS} rounds, debug logging off)"
        )
    if args.baseline is not None:
        _show_changed(runs["before"][0], outcomes)
    if args.show_dev:
        _show_not_correct([row for row in outcomes if not row["held_out"]])


def _show_changed(before: list[dict[str, Any]], after: list[dict[str, Any]]) -> None:
    """Every question whose extracted filter differs between the two checkouts: a change meant
    to keep behaviour (a refactoring) lists none."""
    was = {(row["schema"], row["q"]): row["got"] for row in before}
    changed = [row for row in after if was.get((row["schema"], row["q"])) != row["got"]]
    print(f"\nQuestions whose filter changed: {len(changed)} of {len(after)}")
    for row in changed:
        print(f"  {row['schema']:9} {row['q']}")
        print(f"            before {was.get((row['schema'], row['q']))}")
        print(f"            after  {row['got']}")


def _show_not_correct(rows: Iterable[dict[str, Any]]) -> None:
    for row in rows:
        if row["outcome"] != "correct":
            print(f"{row['outcome']:8} {row['schema']:9} {row['q']}")
            print(f"         expected {row['expected']}\n         got      {row['got']}")


def score_all(data: Path, code: Path) -> tuple[list[dict[str, Any]], dict[str, float]]:
    import importlib

    import yaml

    # A baseline checkout may predate the package's rename (it was ``addons``).
    package = "rasa_context_retrieval" if (code / "rasa_context_retrieval").is_dir() else "addons"
    # The schema module moved under ``filters/`` when the layers were drawn.
    schema_module = f"{package}.filters.schema"
    if not (code / package / "filters" / "schema.py").is_file():
        schema_module = f"{package}.schema"
    MetadataField = importlib.import_module(schema_module).MetadataField
    rules_module = importlib.import_module(f"{package}.self_query.rules")
    RuleQueryConstructor = rules_module.RuleQueryConstructor

    labelled = yaml.safe_load(data.read_text(encoding="utf-8"))["schemas"]
    rows = []
    durations: list[float] = []
    for schema_name, schema in labelled.items():
        fields = [MetadataField(**field) for field in schema["fields"]]
        known = {name: frozenset(values) for name, values in schema["indexed_values"].items()}
        rules = RuleQueryConstructor(fields, known, today=lambda: TODAY)
        for number, item in enumerate(schema["questions"], start=1):
            structured = rules.construct(item["q"])
            expected = atoms(_parsed(item["filter"]), item.get("limit"))
            got = atoms(structured.filter, structured.limit)
            rows.append(_row(schema_name, item, number, expected, got))
        durations += _durations(rules, [item["q"] for item in schema["questions"]])
    durations.sort()
    timing = {
        "median_us": statistics.median(durations) * 1e6,
        "p95_us": durations[int(len(durations) * 0.95)] * 1e6,
    }
    return rows, timing


def score_llm(data: Path, llm_file: Path) -> tuple[list[dict[str, Any]], int]:
    """Every question through the plugin's LLM constructor; the rows, and how many answers failed.

    One event loop for all questions: litellm keeps its HTTP clients per loop.
    """
    import yaml
    from structlog.testing import capture_logs

    from rasa_context_retrieval.filters.schema import MetadataField
    from rasa_context_retrieval.llm.block import LLMBlock
    from rasa_context_retrieval.llm.client import RetrievalLLM
    from rasa_context_retrieval.llm_query.constructor import LLMQueryConstructor
    from rasa_context_retrieval.planning.llm_planner import time_budget

    block = LLMBlock.model_validate(yaml.safe_load(llm_file.read_text(encoding="utf-8")))
    client_config = block.client_config()
    llm = RetrievalLLM.from_config(client_config)
    labelled = yaml.safe_load(data.read_text(encoding="utf-8"))["schemas"]

    async def ask_all() -> tuple[list[dict[str, Any]], int]:
        rows, failed = [], 0
        for schema_name, schema in labelled.items():
            known = {name: frozenset(values) for name, values in schema["indexed_values"].items()}
            constructor = LLMQueryConstructor(
                llm,
                [MetadataField(**field) for field in schema["fields"]],
                timeout=time_budget(client_config),
                known_values=lambda known=known: known,
            )
            for number, item in enumerate(schema["questions"], start=1):
                with capture_logs() as logs:
                    structured = await constructor.construct(item["q"])
                failed += any(log["log_level"] == "warning" for log in logs)
                got = atoms(structured.filter, structured.limit) if structured else set()
                expected = atoms(_parsed(item["filter"]), item.get("limit"))
                rows.append(_row(schema_name, item, number, expected, got))
        return rows, failed

    return asyncio.run(ask_all())


def _row(
    schema: str, item: Mapping[str, Any], number: int, expected: set[Atom], got: set[Atom]
) -> dict[str, Any]:
    return {
        "schema": schema,
        "q": item["q"],
        "held_out": number % HELD_OUT_EVERY == 0,
        "outcome": outcome(expected, got),
        "expected": sorted(map(str, expected)),
        "got": sorted(map(str, got)),
    }


def _durations(rules: Any, questions: list[str]) -> list[float]:
    measured = []
    for _ in range(TIMING_ROUNDS):
        for question in questions:
            started = time.perf_counter()
            rules.construct(question)
            measured.append(time.perf_counter() - started)
    return measured


def _parsed(text: str | None) -> Any:
    from rasa_context_retrieval.filters.syntax import parse_filter

    return None if text is None else parse_filter(text)


def atoms(directive: Any, limit: int | None) -> set[Atom]:
    """The conditions of a filter's top-level ``and`` in a comparable form, and the limit."""
    from langchain_core.structured_query import Comparison, Operation, Operator

    found: set[Atom] = set() if limit is None else {("limit", "eq", limit)}
    pending = [] if directive is None else [directive]
    while pending:
        node = pending.pop()
        if isinstance(node, Operation) and node.operator == Operator.AND:
            pending.extend(node.arguments)
        elif isinstance(node, Comparison):
            found.add(_comparison_atom(node.attribute, node.comparator.value, node.value))
        else:
            found.add(("expression", "is", repr(node)))
    return found


def _comparison_atom(attribute: str, comparator: str, value: Any) -> Atom:
    if isinstance(value, bool) and comparator == "ne":
        return (attribute, "eq", not value)
    if isinstance(value, Mapping) and "date" in value:
        return (attribute, comparator, str(value["date"]))
    if isinstance(value, list | tuple):
        return (attribute, comparator, tuple(sorted(map(str, value))))
    if isinstance(value, int | float) and not isinstance(value, bool):
        return (attribute, comparator, float(value))
    return (attribute, comparator, value)


def outcome(expected: set[Atom], got: set[Atom]) -> str:
    if got == expected:
        return "correct"
    if not expected:
        return "spurious"
    if not got:
        return "missed"
    return "partial" if got < expected else "wrong"


def summary_table(rows: list[dict[str, Any]]) -> str:
    lines = [
        "| schema | split | questions | " + " | ".join(OUTCOMES) + " | fully correct |",
        "|---|---|---|" + "---|" * len(OUTCOMES) + "---|",
    ]
    schemas = sorted({row["schema"] for row in rows}, key=[r["schema"] for r in rows].index)
    for schema in [*schemas, "all"]:
        for split, held_out in (("dev", False), ("held-out", True), ("both", None)):
            chosen = [
                row
                for row in rows
                if schema in ("all", row["schema"])
                and (held_out is None or row["held_out"] == held_out)
            ]
            lines.append(_line(schema, split, chosen))
    return "\n".join(lines)


def _line(schema: str, split: str, rows: Iterable[dict[str, Any]]) -> str:
    rows = list(rows)
    counts = Counter(row["outcome"] for row in rows)
    share = counts["correct"] / len(rows) if rows else 0.0
    cells = " | ".join(str(counts[name]) for name in OUTCOMES)
    return f"| {schema} | {split} | {len(rows)} | {cells} | {share:.0%} |"


if __name__ == "__main__":
    main()
