"""``rasa-context-retrieval eval FILE``: retrieval quality on the assistant's own conversations.

Reads the same config.yml and endpoints.yml as the assistant, checks the case file against the
knowledge base before loading any model, runs every case through one engine and prints the
report (or, with ``--json``, only the report as JSON). Exits 1 when MRR is below ``--min-mrr``,
so a CI job fails when a change to documents, embeddings or settings makes retrieval worse.
With ``--tune``, it fits the context weights and the threshold to the cases instead
(``evaluation.tuning``) and prints the lines to paste.
"""

from __future__ import annotations

import argparse
import asyncio
import json
import sys
from collections.abc import Sequence
from pathlib import Path
from typing import Any


def register(commands: Any, parents: Sequence[argparse.ArgumentParser] = ()) -> None:
    """Add the ``eval`` subcommand (with the console's common options) to its subparsers."""
    evaluate = commands.add_parser(
        "eval",
        help="measure retrieval on a file of conversations (Hit@1, Hit@k, MRR, ...)",
        parents=list(parents),
    )
    evaluate.add_argument("file", type=Path, help="YAML file of evaluation cases")
    evaluate.add_argument(
        "--min-mrr", type=_unit_interval, default=None, help="exit 1 when MRR is below this"
    )
    evaluate.add_argument("--json", action="store_true", help="print the report as JSON")
    evaluate.add_argument(
        "--tune",
        action="store_true",
        help="pick context_weights and threshold on half the cases, score them on the other half",
    )
    evaluate.set_defaults(run=run)


def run(args: argparse.Namespace) -> int:
    from rasa_context_retrieval.evaluation.cases import load_cases
    from rasa_context_retrieval.knowledge.conversion import format_suffixes

    config = args.setup.config  # validated by the console's pre-flight check
    if config.docs is None or not config.docs.is_dir():
        raise ValueError(
            "evaluation checks each case's expected sources against `docs`: point "
            "vector_store.docs at the knowledge base folder"
        )
    suffixes = format_suffixes(config.document_formats)
    cases = load_cases(args.file, config.docs, config.field_names, suffixes)
    # the engine and the report after the cases: a mistake in the file costs no import
    from rasa_context_retrieval.assistant import ConsoleSession
    from rasa_context_retrieval.evaluation.report import build_report, render_text
    from rasa_context_retrieval.evaluation.runner import evaluate

    session = ConsoleSession(args.config, args.endpoints)
    session.connect()
    engine = session.store.engine
    if args.tune:
        from rasa_context_retrieval.evaluation.tuning import render_tuning, tune

        print(render_tuning(asyncio.run(tune(engine, cases, session.threshold))))
        return 0
    results = asyncio.run(evaluate(engine, cases))
    report = build_report(results, engine.config.top_k, session.threshold, args.min_mrr)
    if args.json:
        print(json.dumps(report, indent=2, ensure_ascii=False))
    else:
        print(render_text(report))
    if not report["passed"]:
        mrr = report["scores"]["context_model"]["mrr"]
        print(f"error: MRR {mrr:.3f} is below --min-mrr {args.min_mrr}", file=sys.stderr)
        return 1
    return 0


def _unit_interval(text: str) -> float:
    try:
        value = float(text)
    except ValueError:
        raise argparse.ArgumentTypeError(f"{text!r} is not a number") from None
    if not 0.0 <= value <= 1.0:
        raise argparse.ArgumentTypeError(f"{text} is not between 0 and 1")
    return value
