"""One benchmark table: every grounded set through the ``eval`` engine, and TREC CAsT.

Each help-centre set is scored exactly as ``rasa-context-retrieval eval`` scores it
(``evaluation/runner.py``: one engine per knowledge base, the repository's config.yml, the set's
endpoints.yml), by kind of last question, with the rows plugin (context model), latest message
alone, Rasa's default query (the last two messages) and the human rewrite. A kind with fewer than
10 cases moves by 0.1 per rank, so each set also lists, case by case, where the plugin wins or
loses against Rasa's query, and, for standalone questions and switches, against the latest
message alone. Only test halves are reported (dev halves are for tuning).
CAsT 2021 and 2022 are scored as ``bench/conversational.py`` scores them.

Usage (from the repository root)::

    python bench/grounded_all.py [--skip-cast] [--output bench/results/grounded_all.md]
    python bench/grounded_all.py --half dev --sets energy telecom --skip-cast --output -

``--half dev`` scores the dev halves instead (for choosing an ingredient, never for reporting;
the example eval has no halves and is scored whole); ``--sets`` picks sets by their short name;
``--output -`` only prints; ``--case-log FILE`` appends every case's ranks and the plugin's
query, to compare two versions case by case. Only the part of the output file between the
``results`` markers is replaced.
"""

from __future__ import annotations

import argparse
import asyncio
import datetime
import os
import platform
import sys
import tempfile
from collections.abc import Sequence
from pathlib import Path

import structlog

sys.path.insert(0, str(Path(__file__).resolve().parent))
sys.path.insert(0, str(Path(__file__).resolve().parent.parent))  # this checkout's package

from cast2021 import embedding_client, write_results  # noqa: E402

from rasa_context_retrieval.assistant import ConsoleSession  # noqa: E402
from rasa_context_retrieval.evaluation.cases import load_cases  # noqa: E402
from rasa_context_retrieval.evaluation.report import build_report  # noqa: E402
from rasa_context_retrieval.evaluation.runner import (  # noqa: E402
    CONTEXT_MODEL,
    LATEST_MESSAGE,
    RASA_DEFAULT_QUERY,
    ROWS,
    CaseResult,
    evaluate,
)

ROOT = Path(__file__).resolve().parent.parent
DATA = ROOT / "bench" / "data"
SET_NAMES = (
    "example",
    "bank",
    "energy",
    "telecom",
    "airline",
    "insurance",
    "transport",
    "accounting",
    "shop",
    "lettings",
    "fitness",
    "carhire",
    "delivery",
    "council",
    "hotel",
    "university",
)
GROUNDED_FOLDERS = {
    "bank": "grounded",
    "energy": "grounded-energy",
    "telecom": "grounded-telecom",
    "airline": "grounded-airline",
    "insurance": "grounded-insurance",
    "transport": "grounded-transport",
    "accounting": "grounded-accounting",
    "shop": "grounded-shop",
    "lettings": "grounded-lettings",
    "fitness": "grounded-fitness",
    "carhire": "grounded-carhire",
    "delivery": "grounded-delivery",
    "council": "grounded-council",
    "hotel": "grounded-hotel",
    "university": "grounded-university",
}
"""The help-centre sets under bench/data, each with a dev.yml and a test.yml half."""


def grounded_sets(half: str, names: Sequence[str]) -> list[tuple[str, Path, Path]]:
    """Title, case file and the folder whose endpoints.yml points at the knowledge base."""
    sets = []
    for name in names:
        if name == "example":
            sets.append(
                (
                    "the example assistant (eval/lumen_drive.yml)",
                    ROOT / "eval/lumen_drive.yml",
                    ROOT,
                )
            )
            continue
        folder = DATA / GROUNDED_FOLDERS[name]
        sets.append((f"{name} help centre, {half} half", folder / f"{half}.yml", folder))
    return sets


KINDS = ("all", "standalone", "follow-up", "clarification", "switch")
ROW_LABELS = {
    "context_model": "plugin",
    "latest_message": "latest message",
    "rasa_default_query": "Rasa default query",
    "human_rewrite": "human rewrite",
}
DEFAULT_OUTPUT = ROOT / "bench" / "results" / "grounded_all.md"


def score_set(cases_file: Path, assistant: Path) -> tuple[list[CaseResult], dict, int]:
    session = ConsoleSession(str(ROOT / "config.yml"), str(assistant / "endpoints.yml"))
    session.connect()
    engine = session.store.engine
    docs = engine.config.docs
    assert docs is not None
    results = asyncio.run(evaluate(engine, load_cases(cases_file, docs)))
    return results, build_report(results, engine.config.top_k), engine.config.top_k


def kind_table(report: dict, top_k: int) -> str:
    by_kind = {"all": report["scores"], **report["scores_by_kind"]}
    kinds = [kind for kind in KINDS if kind in by_kind]
    header = f"| MRR@{top_k} | " + " | ".join(
        f"{kind} ({by_kind[kind][CONTEXT_MODEL]['cases']})" for kind in kinds
    )
    lines = [header + " |", "|---" * (len(kinds) + 1) + "|"]
    for row in ROWS:
        cells = [by_kind[kind][row]["mrr"] for kind in kinds]
        shown = ["–" if cell is None else f"{cell:.3f}" for cell in cells]
        lines.append(f"| {ROW_LABELS[row]} | " + " | ".join(shown) + " |")
    return "\n".join(lines)


def reciprocal(rank: int | None) -> float:
    return 0.0 if rank is None else 1.0 / rank


def against(results: Sequence[CaseResult], row: str, kinds: Sequence[str] | None = None) -> str:
    """Every case (of ``kinds``, or all) where the plugin's rank differs from ``row``'s."""
    lines = []
    for result in results:
        if kinds is not None and result.case.kind not in kinds:
            continue
        ours = result.rankings[CONTEXT_MODEL]
        theirs = result.rankings[row]
        delta = reciprocal(ours.first_right_rank) - reciprocal(theirs.first_right_rank)
        if delta == 0 or not result.case.answerable:
            continue
        verdict = "win" if delta > 0 else "loss"
        lines.append(
            f"- {verdict} ({result.case.kind or 'no kind'}) {result.case.name}: rank "
            f"{ours.first_right_rank or '–'} vs {theirs.first_right_rank or '–'}; "
            f"searched `{ours.query}`"
        )
    wins = sum(line.startswith("- win") for line in lines)
    listed = "\n\n" + "\n".join(lines) if lines else ""
    return f"{wins} wins, {len(lines) - wins} losses.{listed}"


def against_rasa(results: Sequence[CaseResult]) -> str:
    """Every case where the plugin's rank differs from the rank of Rasa's default query."""
    return "Against Rasa's query: " + against(results, RASA_DEFAULT_QUERY)


LATEST_KINDS = ("standalone", "switch")
"""Kinds whose goal is set against the latest message alone: context can only hurt them."""


def against_latest(results: Sequence[CaseResult]) -> str:
    """Standalone questions and switches where the plugin's rank differs from the latest
    message's: the cases where the context model added something it should not have."""
    return "Standalone and switch questions against the latest message alone: " + against(
        results, LATEST_MESSAGE, LATEST_KINDS
    )


def case_lines(title: str, results: Sequence[CaseResult]) -> list[str]:
    """One line per case: its set, name and kind, each row's rank, and the plugin's query."""
    lines = []
    for result in results:
        ranks = " ".join(
            f"{row}={result.rankings[row].first_right_rank or '-'}"
            for row in ROWS
            if row in result.rankings
        )
        query = result.rankings[CONTEXT_MODEL].query
        lines.append(f"{title}\t{result.case.name}\t{result.case.kind}\t{ranks}\t{query}")
    return lines


def grounded_sections(
    half: str = "test", names: Sequence[str] = SET_NAMES, case_log: Path | None = None
) -> list[str]:
    sections = []
    for title, cases_file, assistant in grounded_sets(half, names):
        results, report, top_k = score_set(cases_file, assistant)
        if case_log is not None:
            with case_log.open("a", encoding="utf-8") as log:
                log.writelines(line + "\n" for line in case_lines(title, results))
        latency = report["latency_ms"]
        text = (
            f"### {title}\n\n{report['answerable']} answerable cases, plugin p50 "
            f"{latency.get('p50', 0):.0f} ms.\n\n{kind_table(report, top_k)}\n\n"
            f"{against_rasa(results)}\n\n{against_latest(results)}"
        )
        print(text, flush=True)
        sections.append(text)
    return sections


def cast_sections() -> list[str]:
    from conversational import (
        BENCH_DATA,
        load_cast2021,
        load_cast2022,
        rows_for,
        section,
    )
    from conversational import (
        evaluate as cast_evaluate,
    )

    client = embedding_client()
    sections = []
    for title, loader, data_dir in (
        ("TREC CAsT 2021", load_cast2021, BENCH_DATA / "cast2021"),
        ("TREC CAsT 2022 (every path)", load_cast2022, BENCH_DATA / "cast2022"),
    ):
        corpus, cases = loader(data_dir)
        with tempfile.TemporaryDirectory() as workdir:
            results = cast_evaluate(rows_for(corpus, cases, client, Path(workdir)), cases)
        sections.append(section(title, corpus, cases, results))
        print(sections[-1], flush=True)
    return sections


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    parser.add_argument("--skip-cast", action="store_true", help="only the grounded sets")
    parser.add_argument("--output", default=str(DEFAULT_OUTPUT), help="a file, or - to print only")
    parser.add_argument("--half", choices=["test", "dev"], default="test")
    parser.add_argument("--sets", nargs="*", choices=SET_NAMES, default=list(SET_NAMES))
    parser.add_argument(
        "--case-log", type=Path, help="append one line per case (ranks, plugin query) to a file"
    )
    args = parser.parse_args()
    structlog.configure(wrapper_class=structlog.make_filtering_bound_logger(30))
    sections = [
        f"Run {datetime.date.today().isoformat()}, {os.cpu_count()} cores "
        f"({platform.processor() or platform.machine()}), Python {platform.python_version()}. "
        "Grounded sets: the eval command's engine, the repository's config.yml, each set's "
        "endpoints.yml (the plugin's default configuration), threshold 0."
    ]
    sections += grounded_sections(args.half, args.sets, args.case_log)
    if not args.skip_cast:
        sections += cast_sections()
    if args.output != "-":
        write_results(Path(args.output), "\n\n".join(sections))


if __name__ == "__main__":
    main()
