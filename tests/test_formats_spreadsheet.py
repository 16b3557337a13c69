"""FAQ spreadsheets (.xlsx) and configurable columns: one Q/A chunk per row, nothing evaluated."""

from __future__ import annotations

import io
import zipfile
from pathlib import Path

import pytest

from rasa_context_retrieval.knowledge.chunking import chunk_documents
from rasa_context_retrieval.knowledge.faq_table import FaqColumns
from rasa_context_retrieval.knowledge.loader import load_knowledge_base

openpyxl = pytest.importorskip("openpyxl")

XLSX = (".xlsx",)


def make_xlsx(path: Path, rows: list[list[object]], title: str = "FAQ") -> None:
    workbook = openpyxl.Workbook()
    sheet = workbook.active
    sheet.title = title
    for row in rows:
        sheet.append(row)
    workbook.save(str(path))


def test_each_row_is_one_entry_with_its_answer_and_attributes(tmp_path: Path):
    make_xlsx(
        tmp_path / "faq.xlsx",
        [
            ["Question", "Answer", "plan", "price"],
            ["How do I pause sync?", "Tap Pause.", "free", 0],
            ["No answer", None, "free", 1],
            ["What is the total?", "=SUM(1,2)", "premium", 9.0],
        ],
    )
    assert load_knowledge_base(tmp_path).documents == []  # opt-in only

    knowledge = load_knowledge_base(tmp_path, extra_suffixes=XLSX)
    chunks = chunk_documents(knowledge.documents, 500, 50)

    # A formula is never evaluated: only a value the spreadsheet saved is read, and this one
    # saved none, so its row has no answer and is left out like the row without one.
    assert [(c.metadata["source"], c.metadata["answer"]) for c in chunks] == [
        ("faq.xlsx:FAQ:2", "Tap Pause.")
    ]
    assert chunks[0].text == "Q: How do I pause sync?\nA: Tap Pause."
    assert (chunks[0].metadata["plan"], chunks[0].metadata["price"]) == ("free", 0)


def test_question_and_answer_columns_are_configurable(tmp_path: Path):
    (tmp_path / "faq.csv").write_text("Frage,Antwort,plan\nPause?,Tippe auf Pause.,free\n")
    make_xlsx(tmp_path / "faq.xlsx", [["Frage", "Antwort"], ["Pause?", "Tippe auf Pause."]])
    german = FaqColumns(question="frage", answer="ANTWORT")

    default = load_knowledge_base(tmp_path, extra_suffixes=(".csv", *XLSX))
    configured = load_knowledge_base(tmp_path, extra_suffixes=(".csv", *XLSX), faq_columns=german)

    assert default.documents == []
    assert "no 'question' and no 'answer' column" in default.problems[0].reason
    assert [d.source for d in configured.documents] == ["faq.csv:2", "faq.xlsx:FAQ:2"]
    assert configured.documents[1].text == "Q: Pause?\nA: Tippe auf Pause."


def test_bad_spreadsheets_are_skipped_with_a_reason_and_the_rest_is_served(tmp_path: Path):
    make_xlsx(tmp_path / "good.xlsx", [["question", "answer"], ["Refunds?", "Within 30 days."]])
    make_xlsx(tmp_path / "columns.xlsx", [["q", "a"], ["Refunds?", "Within 30 days."]])
    whole = (tmp_path / "good.xlsx").read_bytes()
    (tmp_path / "truncated.xlsx").write_bytes(whole[: len(whole) // 2])
    bomb = io.BytesIO()
    with zipfile.ZipFile(bomb, "w", zipfile.ZIP_DEFLATED) as archive:
        archive.writestr("xl/worksheets/sheet1.xml", b"\0" * 50_000_000)
    (tmp_path / "bomb.xlsx").write_bytes(bomb.getvalue())
    make_xlsx(
        tmp_path / "misspelled.xlsx", [["question", "answer", "Plan"], ["A?", "B.", "premium"]]
    )

    knowledge = load_knowledge_base(tmp_path, ["plan"], extra_suffixes=XLSX)
    reasons = {problem.file.split(":")[0]: problem.reason for problem in knowledge.problems}

    assert [d.source for d in knowledge.documents] == ["good.xlsx:FAQ:2"]
    assert "no 'question' and no 'answer' column" in reasons["columns.xlsx"]
    assert "not a valid zip" in reasons["truncated.xlsx"]
    assert "zip bomb" in reasons["bomb.xlsx"]
    assert "'Plan' is not the access attribute 'plan'" in reasons["misspelled.xlsx"]


def test_the_configuration_switches_html_and_xlsx_on_and_names_the_columns(tmp_path: Path):
    from rasa_context_retrieval.config import StoreConfig
    from rasa_context_retrieval.engine.live_index import index_settings

    settings = index_settings(
        StoreConfig.from_kwargs(
            {
                "docs": str(tmp_path),
                "document_formats": ["html", "xlsx"],
                "faq_columns": {"question": "Frage", "answer": "Antwort"},
            }
        )
    )
    default = index_settings(StoreConfig.from_kwargs({"docs": str(tmp_path)}))

    assert settings.extra_suffixes == (".html", ".htm", ".xlsx")
    assert settings.faq_columns == FaqColumns("Frage", "Antwort")
    assert default.faq_columns == FaqColumns("question", "answer")


def with_external_entity(raw: bytes, member: str, text: bytes, secret: Path) -> bytes:
    """The Office file with ``text`` in ``member`` replaced by an entity naming ``secret``."""
    patched = io.BytesIO()
    with (
        zipfile.ZipFile(io.BytesIO(raw)) as source,
        zipfile.ZipFile(patched, "w", zipfile.ZIP_DEFLATED) as out,
    ):
        for item in source.namelist():
            data = source.read(item)
            if item == member:
                declaration, body = (
                    data.split(b"?>", 1) if data.startswith(b"<?xml") else (b"", data)
                )
                assert text in body
                doctype = b'<!DOCTYPE x [<!ENTITY xxe SYSTEM "file://' + str(secret).encode()
                opening = declaration + b"?>" if declaration else b""
                data = opening + doctype + b'">]>' + body.replace(text, b"&xxe;")
            out.writestr(item, data)
    return patched.getvalue()


def test_an_external_entity_in_a_spreadsheet_is_never_resolved(tmp_path: Path):
    secret = tmp_path / "secret.txt"
    secret.write_text("TOP-SECRET-OUTSIDE-DOCS")
    docs = tmp_path / "docs"
    docs.mkdir()
    make_xlsx(docs / "plain.xlsx", [["question", "answer"], ["Refunds?", "Within 30 days."]])
    raw = with_external_entity(
        (docs / "plain.xlsx").read_bytes(), "xl/worksheets/sheet1.xml", b"Within 30 days.", secret
    )
    (docs / "plain.xlsx").unlink()
    (docs / "xxe.xlsx").write_bytes(raw)

    knowledge = load_knowledge_base(docs, extra_suffixes=XLSX)

    assert "TOP-SECRET" not in " ".join(d.text for d in knowledge.documents)
    assert [str(problem) for problem in knowledge.problems] == [
        "xxe.xlsx: corrupt spreadsheet (ValueError)"
    ]
