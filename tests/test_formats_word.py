"""Word documents: structure kept as Markdown, bad files (zip bomb, XXE, corrupt) skipped."""

from __future__ import annotations

import io
import zipfile
from pathlib import Path
from typing import Any

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


def content_control(
    *inner: str, block: bool, gallery: str | None = None, placeholder: bool = False
) -> Any:
    """A "Rich text" content control (``w:sdt``) around ``inner``: paragraphs (``block``) or
    runs (inline, inside a paragraph), as Word writes one in a form or template; with a
    ``gallery``, a building block such as Word's table of contents; a ``placeholder`` control
    shows its prompt, nobody filled it in."""
    from docx.oxml import parse_xml
    from docx.oxml.ns import nsdecls

    kind = (
        f"<w:docPartObj><w:docPartGallery w:val='{gallery}'/><w:docPartUnique/></w:docPartObj>"
        if gallery
        else "<w:richText/>"
    )
    if placeholder:
        kind = "<w:showingPlcHdr/>" + kind
    runs = "".join(f"<w:r><w:t xml:space='preserve'>{text}</w:t></w:r>" for text in inner)
    content = (
        "".join(f"<w:p><w:r><w:t>{text}</w:t></w:r></w:p>" for text in inner) if block else runs
    )
    return parse_xml(
        f"<w:sdt {nsdecls('w')}><w:sdtPr><w:alias w:val='Field'/>{kind}</w:sdtPr>"
        f"<w:sdtContent>{content}</w:sdtContent></w:sdt>"
    )


def test_text_in_content_controls_is_indexed_in_document_order(tmp_path: Path):
    """Forms and templates wrap their fields in content controls: around a paragraph, inside
    a table cell, around table rows or cells, or inline in a sentence. Their text is the
    document's text; the control Word puts its table of contents in is left out."""
    from docx.oxml.ns import qn

    document = docx.Document()
    contents = document.add_paragraph("Placeholder")
    contents._p.addnext(
        content_control("Contents", "Application form\t1", block=True, gallery="Table of Contents")
    )
    contents._p.getparent().remove(contents._p)
    document.add_heading("Application form", 1)
    document.add_paragraph("Fill in every field.")
    intro = document.add_paragraph("Placeholder")
    intro._p.addnext(content_control("Applicant: Jane Example", "Born in Lyon", block=True))
    intro._p.getparent().remove(intro._p)
    table = document.add_table(rows=2, cols=2)
    table.cell(0, 0).text, table.cell(0, 1).text = "Plan", "Days"
    table.cell(1, 0).text = "Premium"
    days = table.cell(1, 1)
    days._tc.remove(days.paragraphs[0]._p)
    days._tc.append(content_control("30", block=True))
    late = table.add_row()  # a repeating section: a row in a control, a cell in another
    late.cells[0].text, late.cells[1].text = "Basic", "14"
    section = content_control(block=True)
    section.find(qn("w:sdtContent")).append(late._tr)
    table._tbl.append(section)
    cell = late._tr.tc_lst[1]
    wrapped = content_control(block=True)
    cell.addprevious(wrapped)
    wrapped.find(qn("w:sdtContent")).append(cell)
    signed = document.add_paragraph("Signed by ")
    signed._p.append(content_control("the account owner", block=False))
    signed.add_run(" on arrival.")
    document.add_paragraph("Remarks: ")._p.append(
        content_control("Click or tap here to enter text.", block=False, placeholder=True)
    )
    document.save(str(tmp_path / "form.docx"))

    chunks = chunk_documents(load_knowledge_base(tmp_path, extra_suffixes=WORD).documents, 500, 50)
    text = "\n\n".join(chunk.text for chunk in chunks)

    expected = [
        "Fill in every field.",
        "Applicant: Jane Example",
        "Born in Lyon",
        "| Premium | 30 |",
        "| Basic | 14 |",
        "Signed by the account owner on arrival.",
    ]
    assert all(line in text for line in expected), text
    assert "Contents" not in text
    assert "Click or tap" not in text
    assert [text.index(line) for line in expected] == sorted(text.index(line) for line in expected)


def test_a_contents_table_printed_over_two_pages_is_left_out(tmp_path: Path):
    """A .docx has no pages: a contents table is one table under its heading, however many
    pages it is printed on, and Word's own table of contents is one content control."""
    document = docx.Document()
    document.add_heading("Contents", 1)
    entries = [f"Entry about topic {letter}" for letter in "ABCDEFGHIJKLMNOPQRSTUVWXYZ"] * 2
    table = document.add_table(rows=len(entries), cols=2)
    for row, title in enumerate(entries):
        table.cell(row, 0).text, table.cell(row, 1).text = title, str(row + 3)
    document.add_heading("Lending", 1)
    document.add_paragraph("Books are lent for three weeks.")
    document.save(str(tmp_path / "manual.docx"))

    chunks = chunk_documents(load_knowledge_base(tmp_path, extra_suffixes=WORD).documents, 500, 50)

    assert [chunk.text for chunk in chunks] == ["# Lending\n\nBooks are lent for three weeks."]


def test_a_contents_typed_as_paragraphs_is_left_out_and_a_price_list_is_not(tmp_path: Path):
    """A contents typed by hand, a line per section ending in its page number after a tab or
    dot leaders, under a Contents heading, is left out as a contents table is. Lines ending
    in numbers under another heading (a price list), or not in page order, are indexed as
    typed."""
    from structlog.testing import capture_logs

    document = docx.Document()
    document.add_heading("Contents", 1)
    document.add_paragraph("1 Lending\t2")
    document.add_paragraph("2 Fees .......... 3")
    document.add_paragraph("3 Opening hours\u2026\u2026\u20264")
    document.add_heading("Lending", 1)
    document.add_paragraph("Books are lent for three weeks.")
    document.add_heading("Fees", 1)
    document.add_paragraph("Late return, per day\t2")
    document.add_paragraph("Lost card\t5")
    document.add_heading("Contents", 2)
    document.add_paragraph("Lost card\t5")
    document.add_paragraph("Late return\t2")
    document.save(str(tmp_path / "library.docx"))

    with capture_logs() as logs:
        chunks = chunk_documents(
            load_knowledge_base(tmp_path, extra_suffixes=WORD).documents, 500, 50
        )

    assert [chunk.text for chunk in chunks] == [
        "# Lending\n\nBooks are lent for three weeks.",
        "# Fees\n\nLate return, per day\t2\n\nLost card\t5\n\n"
        "## Contents\n\nLost card\t5\n\nLate return\t2",
    ]
    (left_out,) = [log for log in logs if log["event"] == "knowledge.chunking.contents_left_out"]
    assert left_out["entries"] == 3


def test_merged_table_cells_fill_every_column_and_row_they_cover(tmp_path: Path):
    document = docx.Document()
    table = document.add_table(rows=3, cols=3)
    for row, cells in enumerate([["Plan", "Storage", "Price"], ["Free", "5 GB", "0"]]):
        for column, text in enumerate(cells):
            table.cell(row, column).text = text
    table.cell(2, 0).text = "Plus and Pro"
    table.cell(1, 0).merge(table.cell(2, 0))  # down: "Free" covers both rows
    table.cell(2, 1).merge(table.cell(2, 2)).text = "ask us"  # across
    document.save(str(tmp_path / "plans.docx"))

    (page,) = load_knowledge_base(tmp_path, extra_suffixes=WORD).documents

    assert page.text.splitlines() == [
        "| Plan | Storage | Price |",
        "| --- | --- | --- |",
        "| Free Plus and Pro | 5 GB | 0 |",
        "| Free Plus and Pro | ask us | ask us |",
    ]
