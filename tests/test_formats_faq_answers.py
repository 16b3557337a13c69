"""The example's FAQ as Markdown, as an Excel sheet and as a CSV table gives the same extractive
answers: with ``use_generative_llm: false`` Rasa replies with ``results[0].metadata["answer"]``."""

from __future__ import annotations

import csv
import re
import shutil
from pathlib import Path
from typing import Any

import pytest

from rasa_context_retrieval.knowledge.front_matter import split_front_matter
from tests.store_support import connected_store, tracker_state

openpyxl = pytest.importorskip("openpyxl")

REPO_ROOT = Path(__file__).resolve().parent.parent
FAQ_FILES = sorted((REPO_ROOT / "docs").glob("*/*.md"))
ENTRY = re.compile(r"^Q:\s*(?P<question>.+?)\s*\nA:\s*(?P<answer>.+)$", re.DOTALL)
COLUMNS = ("question", "answer", "category")


def faq_rows() -> list[tuple[str, str, str]]:
    """Every Q/A entry of the example's Markdown documents, with its category."""
    rows = []
    for path in FAQ_FILES:
        attributes, body = split_front_matter(path.read_text(encoding="utf-8"))
        for entry in re.split(r"\n\s*\n", body.strip()):
            match = ENTRY.match(entry.strip())
            if match:
                rows.append((match["question"], match["answer"].strip(), attributes["category"]))
    return rows


def write_markdown(folder: Path) -> None:
    for path in FAQ_FILES:
        target = folder / path.relative_to(REPO_ROOT / "docs")
        target.parent.mkdir(parents=True, exist_ok=True)
        shutil.copyfile(path, target)


def write_xlsx(folder: Path, rows: list[tuple[str, str, str]]) -> None:
    workbook = openpyxl.Workbook()
    sheet = workbook.active
    sheet.title = "FAQ"
    sheet.append(COLUMNS)
    for row in rows:
        sheet.append(row)
    folder.mkdir(parents=True)
    workbook.save(folder / "faq.xlsx")


def write_csv(folder: Path, rows: list[tuple[str, str, str]]) -> None:
    folder.mkdir(parents=True)
    with (folder / "faq.csv").open("w", encoding="utf-8", newline="") as handle:
        writer = csv.writer(handle)
        writer.writerow(COLUMNS)
        writer.writerows(rows)


async def top_answers(store: Any, questions: list[str]) -> list[str]:
    answers = []
    for question in questions:
        results = (await store.search("", tracker_state(("user", question)), 0.0)).results
        answers.append(results[0].metadata["answer"])
    return answers


@pytest.mark.slow  # indexes the FAQ three times
async def test_the_faq_as_a_spreadsheet_or_a_csv_answers_every_question_like_the_markdown(
    embedder: Any, tmp_path: Path
) -> None:
    rows = faq_rows()
    questions = [question for question, _, _ in rows]
    write_markdown(tmp_path / "markdown")
    write_xlsx(tmp_path / "xlsx", rows)
    write_csv(tmp_path / "csv", rows)
    answers = {}
    for name in ("markdown", "xlsx", "csv"):
        store = connected_store(
            embedder,
            {
                "docs": str(tmp_path / name),
                "index_path": str(tmp_path / f"index-{name}"),
                "document_formats": [] if name == "markdown" else [name],
                "rewrite": "off",
                "self_query": "off",
                "query_embedder": "rasa",
            },
        )
        answers[name] = await top_answers(store, questions)

    assert len(questions) >= 80
    assert answers["xlsx"] == answers["markdown"]
    assert answers["csv"] == answers["markdown"]
    # each reply is an entry's answer (never a prose chunk, nor the question repeated)
    assert set(answers["markdown"]) <= {answer for _, answer, _ in rows}
