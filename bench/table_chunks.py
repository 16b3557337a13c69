"""Questions about rows of a real specifications table, against chunks cut by size only and by
the chunker's table rules (header row in every piece, caption with its table, no contents page).

The knowledge base is ``bench/data/real-documents/docs`` (a charge controller's manual with a
specifications table over three pages, a privacy policy as PDF and Word, a help page). Both arms
chunk today's parsed documents at ``chunk_size`` 1000 / overlap 100: "size only" with LangChain's
recursive splitter alone (what chunker version 5 did with prose; these documents have no
``Q:``/``A:`` entries), "table rules" with ``chunk_documents``. Each question is answered by one
row of the table; its rank is that of the best chunk holding the row, among all chunks, by cosine
with the example's embedding model (all-MiniLM-L6-v2, no search engine around it).

Usage (from the repository root): ``PYTHONPATH=. python bench/table_chunks.py``
"""

from __future__ import annotations

import datetime as dt
import os
import platform
from collections.abc import Callable
from pathlib import Path

os.environ.setdefault("HF_HUB_OFFLINE", "1")
os.environ.setdefault("TRANSFORMERS_OFFLINE", "1")

import numpy as np  # noqa: E402
from langchain_text_splitters import RecursiveCharacterTextSplitter  # noqa: E402
from sentence_transformers import SentenceTransformer  # noqa: E402

from rasa_context_retrieval.knowledge.chunking import chunk_documents  # noqa: E402
from rasa_context_retrieval.knowledge.loader import Document, load_knowledge_base  # noqa: E402
from rasa_context_retrieval.knowledge.table_chunks import is_lead  # noqa: E402

ROOT = Path(__file__).resolve().parent.parent
DOCS = ROOT / "bench" / "data" / "real-documents" / "docs"
MODEL = ROOT / ".model" / "all-MiniLM-L6-v2"
SIZE, OVERLAP = 1000, 100
HEADER = "| Feature | Value | Comment |"
TABLE_PIECE_ROWS = ("| Quiescent current |", "| Humidity |", "| Power and function |")
"""A row in each of the three pieces the table is cut into (in both arms)."""
QUESTIONS = {
    "What battery voltage does the controller work with?": "| Nominal system voltage | 12 V |",
    "How much current can it charge with at most?": "| Maximum charge current | 10 A |",
    "How much current does it draw when idle?": "| Quiescent current |",
    "What is the highest open circuit voltage of the solar panel?": "| Maximum open circuit",
    "How many cells can the solar module have?": "| Number of cells per module |",
    "How efficient is the conversion?": "| Conversion efficiency |",
    "What type of switch is the load output?": "| Switch type | high-side |",
    "How much current can the USB ports deliver?": "| Maximum current | 2.0 A |",
    "What is the default absorption voltage?": "| Topping / absorption voltage |",
    "At what voltage does trickle charging happen?": "| Trickle charging | 13.8 V |",
    "When is the load disconnected?": "| Load disconnect voltage |",
    "At which voltage does the load reconnect?": "| Load reconnect voltage |",
    "How much does temperature compensation change the voltage?": "| Temperature compensation |",
    "Which interface can I use for a display?": "| UEXT |",
    "What temperature range can it operate in?": "| Operating ambient temperature |",
    "What is the storage temperature range?": "| Storage temperature |",
    "How humid may the environment be?": "| Humidity |",
    "What wire size do the screw terminals take?": "| Screw terminals |",
    "What fuse is built in?": "| Type of internal fuse |",
    "What IP rating does it have?": "| Protection class | IP 20 |",
    "Which standards has it been tested against?": "| Power and function |",
    "Is it protected against reverse battery polarity?": "| Battery reverse polarity |",
}


def size_only(documents: list[Document]) -> list[str]:
    splitter = RecursiveCharacterTextSplitter(chunk_size=SIZE, chunk_overlap=OVERLAP)
    return [piece for document in documents for piece in splitter.split_text(document.text)]


def table_rules(documents: list[Document]) -> list[str]:
    return [chunk.text for chunk in chunk_documents(documents, SIZE, OVERLAP)]


def ranks(texts: list[str], model: SentenceTransformer) -> list[int]:
    vectors = model.encode(texts, normalize_embeddings=True)
    queries = model.encode(list(QUESTIONS), normalize_embeddings=True)
    result = []
    for query, row in zip(queries, QUESTIONS.values(), strict=True):
        order = np.argsort(-(vectors @ query))
        result.append(
            1 + min(int(np.where(order == i)[0][0]) for i, t in enumerate(texts) if row in t)
        )
    return result


def main() -> None:
    documents = load_knowledge_base(DOCS, extra_suffixes=(".pdf", ".docx", ".html"), workers=1)
    model = SentenceTransformer(str(MODEL), device="cpu")
    arms: dict[str, Callable[[list[Document]], list[str]]] = {
        "size only": size_only,
        "table rules": table_rules,
    }
    print(
        f"`PYTHONPATH=. python bench/table_chunks.py`, {dt.date.today()}, {platform.machine()}, "
        f"{len(QUESTIONS)} questions, chunk_size {SIZE}, overlap {OVERLAP}, all-MiniLM-L6-v2\n"
    )
    print(
        "| | chunks | MRR | Hit@1 | Hit@3 | table pieces without the header | "
        "lone heading/caption chunks | contents chunks |"
    )
    print("|---|---|---|---|---|---|---|---|")
    ranked: list[str] = []
    for name, arm in arms.items():
        texts = arm(documents.documents)
        found = ranks(texts, model)
        pieces = [t for t in texts if any(row in t for row in TABLE_PIECE_ROWS)]
        headless = sum(HEADER not in t for t in pieces)
        lone = sum(all(is_lead(b) for b in t.split("\n\n")) and len(t) < 200 for t in texts)
        contents = sum("| 3.3 | Load output | 5 |" in t for t in texts)
        hits = (
            f"{sum(r == 1 for r in found)}/{len(found)} | {sum(r <= 3 for r in found)}/{len(found)}"
        )
        print(
            f"| {name} | {len(texts)} | {np.mean([1 / r for r in found]):.3f} | {hits} "
            f"| {headless}/{len(pieces)} | {lone} | {contents} |"
        )
        ranked.append(f"- {name}: {found}")
    print("\nRanks per question, in the order of `QUESTIONS`:\n")
    print("\n".join(ranked))


if __name__ == "__main__":
    main()
