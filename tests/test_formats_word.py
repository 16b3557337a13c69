"""Word documents: structure kept as Markdown, bad files (zip bomb, XXE, corrupt) skipped."""

from __future__ import annotations

import io
import zipfile
from pathlib import Path

import pytest

from rasa_context_retrieval.knowledge.chunking import chunk_documents
from rasa_context_retrieval.knowledge.loader import load_knowledge_base

docx = pytest.importorskip("docx")

WORD = (".docx",)


def make_docx(path: Path) -> None:
    document = docx.Document()
    document.core_properties.title = "Refund policy"
    document.add_heading("Refunds", 1)
    document.add_paragraph("Open the app", style="List Bullet")
    document.add_paragraph("Choose Billing", style="List Bullet")
    table = document.add_table(rows=2, cols=2)
    for (row, column), text in {
        (0, 0): "Plan",
        (0, 1): "Days",
        (1, 0): "Premium",
        (1, 1): "30",
    }.items():
        table.cell(row, column).text = text
    document.add_paragraph("Q: Can I get a refund?\nA: Within 30 days.")
    path.parent.mkdir(parents=True, exist_ok=True)
    document.save(str(path))


def test_word_keeps_headings_lists_tables_and_its_title(tmp_path: Path):
    make_docx(tmp_path / "policies/refunds.docx")
    assert load_knowledge_base(tmp_path).documents == []  # opt-in only

    knowledge = load_knowledge_base(tmp_path, extra_suffixes=WORD)
    (document,) = knowledge.documents
    assert document.metadata == {"title": "Refund policy", "section": "Refunds"}
    assert document.text.startswith(
        "# Refunds\n\n- Open the app\n\n- Choose Billing\n\n"
        "| Plan | Days |\n| --- | --- |\n| Premium | 30 |"
    )
    chunks = chunk_documents(knowledge.documents, 500, 50)
    assert any(chunk.metadata["answer"] == "Within 30 days." for chunk in chunks)


def test_every_chunk_carries_the_headings_above_it(tmp_path: Path):
    document = docx.Document()
    document.add_paragraph("Read this first.")
    document.add_heading("Refunds", 1)
    document.add_paragraph("Refunds take a week.")
    document.add_heading("Premium", 2)
    document.add_paragraph("Premium refunds are pro rata.")
    document.add_heading("Cancelling", 1)
    document.add_paragraph("Cancel in the app.")
    document.save(str(tmp_path / "policy.docx"))

    knowledge = load_knowledge_base(tmp_path, extra_suffixes=WORD)
    chunks = chunk_documents(knowledge.documents, 500, 50)

    assert [(chunk.metadata.get("section"), chunk.text.splitlines()[-1]) for chunk in chunks] == [
        (None, "Read this first."),
        ("Refunds", "Refunds take a week."),
        ("Refunds > Premium", "Premium refunds are pro rata."),
        ("Cancelling", "Cancel in the app."),
    ]
    assert {chunk.metadata["source"] for chunk in chunks} == {"policy.docx"}


def test_bad_word_files_are_skipped_with_a_reason_and_the_rest_is_served(tmp_path: Path):
    make_docx(tmp_path / "good.docx")
    whole = (tmp_path / "good.docx").read_bytes()
    (tmp_path / "truncated.docx").write_bytes(whole[: len(whole) // 2])
    bomb = io.BytesIO()
    with zipfile.ZipFile(bomb, "w", zipfile.ZIP_DEFLATED) as archive:
        archive.writestr("word/document.xml", b"\0" * 50_000_000)
    (tmp_path / "bomb.docx").write_bytes(bomb.getvalue())

    knowledge = load_knowledge_base(tmp_path, extra_suffixes=WORD)
    reasons = {problem.file: problem.reason for problem in knowledge.problems}

    assert [d.source for d in knowledge.documents] == ["good.docx"]
    assert "zip bomb" in reasons["bomb.docx"]
    assert set(reasons) == {"truncated.docx", "bomb.docx"}


def test_external_entities_in_word_xml_are_never_read(tmp_path: Path):
    secret = tmp_path / "outside.txt"
    secret.write_text("TOP-SECRET-OUTSIDE-DOCS", encoding="utf-8")
    docs = tmp_path / "docs"
    make_docx(docs / "xxe.docx")
    source = (docs / "xxe.docx").read_bytes()
    patched = io.BytesIO()
    with zipfile.ZipFile(io.BytesIO(source)) as original, zipfile.ZipFile(patched, "w") as out:
        for member in original.infolist():
            data = original.read(member)
            if member.filename == "word/document.xml":
                head, body = data.split(b"?>", 1)
                data = (
                    head
                    + b'?><!DOCTYPE w:document [<!ENTITY xxe SYSTEM "file://'
                    + str(secret).encode()
                    + b'">]>'
                    + body.replace(b"Open the app", b"&xxe;")
                )
            out.writestr(member, data)
    (docs / "xxe.docx").write_bytes(patched.getvalue())

    knowledge = load_knowledge_base(docs, extra_suffixes=WORD)
    texts = " ".join(document.text for document in knowledge.documents)
    assert "TOP-SECRET-OUTSIDE-DOCS" not in texts
    assert "Choose Billing" in texts or knowledge.problems


def test_a_question_and_its_answer_in_two_paragraphs_are_one_entry(tmp_path: Path):
    """Word authors press Enter between question and answer: the entry keeps its answer."""
    document = docx.Document()
    for question, answer in [("Can I get a refund?", "Within 30 days."), ("By card?", "Yes.")]:
        document.add_paragraph(f"Q: {question}")
        document.add_paragraph(f"A: {answer}")
    document.save(str(tmp_path / "faq.docx"))

    chunks = chunk_documents(load_knowledge_base(tmp_path, extra_suffixes=WORD).documents, 500, 50)

    assert [(c.metadata.get("question"), c.metadata["answer"]) for c in chunks] == [
        ("Can I get a refund?", "Within 30 days."),
        ("By card?", "Yes."),
    ]


def test_numbered_paragraphs_are_list_items_whatever_their_style(tmp_path: Path):
    """pandoc writes list items in its ``Compact`` style, numbered on the paragraph itself."""
    from docx.oxml import OxmlElement
    from docx.oxml.ns import qn

    document = docx.Document()
    document.add_paragraph("We log requests in situations such as:")
    for text in ("site testing", "defending against attacks"):
        paragraph = document.add_paragraph(text)
        numbering = OxmlElement("w:numPr")
        for name in ("w:ilvl", "w:numId"):
            value = OxmlElement(name)
            value.set(qn("w:val"), "0" if name == "w:ilvl" else "1")
            numbering.append(value)
        paragraph._p.get_or_add_pPr().append(numbering)
    document.save(str(tmp_path / "policy.docx"))

    (policy,) = load_knowledge_base(tmp_path, extra_suffixes=WORD).documents

    assert policy.text == (
        "We log requests in situations such as:\n\n- site testing\n\n- defending against attacks"
    )
