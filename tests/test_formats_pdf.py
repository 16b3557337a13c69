"""PDF documents: opt-in, parts citing ``name.pdf#page=N`` with the outline section they stand in,
running headers and footers left out, text across page breaks joined, bad files skipped."""

from __future__ import annotations

import sys
from pathlib import Path

import pytest

from rasa_context_retrieval.knowledge import loader
from rasa_context_retrieval.knowledge.chunking import chunk_documents
from rasa_context_retrieval.knowledge.loader import content_digest, load_knowledge_base
from rasa_context_retrieval.result_metadata import citable_source, prompt_metadata

fpdf = pytest.importorskip("fpdf")
pytest.importorskip("pypdf")

PDF = (".pdf",)


def make_pdf(path: Path, pages: list[str], *, title: str | None = None, **encryption: str) -> None:
    document = fpdf.FPDF()
    document.set_font("Helvetica", size=12)
    for text in pages:
        document.add_page()
        if text:
            document.multi_cell(0, 8, text)
        else:  # a page with a drawing and no text layer, as a scan has
            document.rect(20, 20, 100, 100, style="F")
    if title:
        document.set_title(title)
    if encryption:
        document.set_encryption(**encryption)
    path.parent.mkdir(parents=True, exist_ok=True)
    document.output(str(path))


def problems_by_file(folder: Path) -> dict[str, str]:
    knowledge = load_knowledge_base(folder, extra_suffixes=PDF)
    return {problem.file: problem.reason for problem in knowledge.problems}


def test_pdfs_are_read_only_when_the_format_is_switched_on(tmp_path: Path):
    (tmp_path / "notes.md").write_text("Plain notes.", encoding="utf-8")
    without_pdf = content_digest(tmp_path)
    make_pdf(tmp_path / "manuals/router.pdf", ["Reset the router by holding the button."])

    assert [d.source for d in load_knowledge_base(tmp_path).documents] == ["notes.md"]
    assert content_digest(tmp_path) == without_pdf  # an upgrade does not rebuild or serve it
    sources = [d.source for d in load_knowledge_base(tmp_path, extra_suffixes=PDF).documents]
    assert sources == ["manuals/router.pdf#page=1", "notes.md"]


def test_each_chunk_knows_its_page_and_cites_it(tmp_path: Path):
    make_pdf(
        tmp_path / "manuals/router.pdf",
        ["Chapter one covers setup.", "", "Q: How do I pause sync?\nA: Tap Pause in the menu."],
        title="Router manual",
    )
    knowledge = load_knowledge_base(tmp_path, extra_suffixes=PDF)
    chunks = chunk_documents(knowledge.documents, 500, 50)

    assert [(c.metadata["source"], c.metadata["page"]) for c in chunks] == [
        ("manuals/router.pdf#page=1", 1),
        ("manuals/router.pdf#page=3", 3),
    ]
    assert {c.metadata["title"] for c in chunks} == {"Router manual"}
    assert chunks[1].metadata["answer"] == "Tap Pause in the menu."
    assert knowledge.problems == []


def test_bad_pdfs_are_skipped_with_one_line_reasons_and_the_rest_is_served(tmp_path: Path):
    make_pdf(tmp_path / "good.pdf", ["Served text."])
    make_pdf(tmp_path / "locked.pdf", ["Secret."], owner_password="o", user_password="u")
    make_pdf(tmp_path / "scan.pdf", ["", ""])
    whole = (tmp_path / "good.pdf").read_bytes()
    (tmp_path / "truncated.pdf").write_bytes(whole[: len(whole) // 3])
    (tmp_path / "garbage.pdf").write_bytes(b"%PDF-1.7\n" + bytes(range(256)) * 4)

    knowledge = load_knowledge_base(tmp_path, extra_suffixes=PDF)
    reasons = {problem.file: problem.reason for problem in knowledge.problems}

    assert [d.source for d in knowledge.documents] == ["good.pdf#page=1"]
    assert "encrypted" in reasons["locked.pdf"]
    assert "OCR is not supported" in reasons["scan.pdf"]
    assert set(reasons) == {"locked.pdf", "scan.pdf", "truncated.pdf", "garbage.pdf"}
    assert all("\n" not in reason for reason in reasons.values())


def test_a_pdf_over_the_size_cap_is_not_read(tmp_path: Path, monkeypatch: pytest.MonkeyPatch):
    make_pdf(tmp_path / "big.pdf", ["Some text " * 200])
    monkeypatch.setattr(loader, "MAX_FILE_BYTES", 100)
    assert "limit" in problems_by_file(tmp_path)["big.pdf"]


def test_without_the_library_a_pdf_is_skipped_naming_the_extra(
    tmp_path: Path, monkeypatch: pytest.MonkeyPatch
):
    make_pdf(tmp_path / "manual.pdf", ["Text."])
    monkeypatch.setitem(sys.modules, "pypdf", None)
    reason = problems_by_file(tmp_path)["manual.pdf"]
    assert "rasa-context-retrieval[office]" in reason


def test_a_changed_pdf_changes_the_digest_so_the_index_is_rebuilt(tmp_path: Path):
    make_pdf(tmp_path / "manual.pdf", ["Version one."])
    before = content_digest(tmp_path, PDF)
    assert content_digest(tmp_path, PDF) == before  # unchanged: nothing is parsed again
    make_pdf(tmp_path / "manual.pdf", ["Version two."])
    assert content_digest(tmp_path, PDF) != before


def test_the_citation_keeps_the_page_whatever_is_shown(tmp_path: Path):
    make_pdf(tmp_path / "manuals/router.pdf", ["Setup.", "Reset."], title="Router manual")
    knowledge = load_knowledge_base(tmp_path, extra_suffixes=PDF)
    second = chunk_documents(knowledge.documents, 500, 50)[1]

    assert prompt_metadata(second, "lean")["source"] == "Router manual, page 2"
    with_url = {**second.metadata, "url": "https://example.com/router.pdf"}
    assert citable_source(with_url) == "https://example.com/router.pdf#page=2"
    untitled = {k: v for k, v in second.metadata.items() if k != "title"}
    assert citable_source(untitled) == "manuals/router.pdf#page=2"


def test_the_configuration_key_switches_the_format_on_for_the_build(tmp_path: Path):
    from rasa_context_retrieval.config import ConfigurationError, StoreConfig
    from rasa_context_retrieval.engine.live_index import index_settings

    default = index_settings(StoreConfig.from_kwargs({"docs": str(tmp_path)}))
    opted = index_settings(
        StoreConfig.from_kwargs({"docs": str(tmp_path), "document_formats": ["pdf", "csv"]})
    )
    assert default.extra_suffixes == ()
    assert opted.extra_suffixes == (".pdf", ".csv")
    with pytest.raises(ConfigurationError):
        StoreConfig.from_kwargs({"docs": str(tmp_path), "document_formats": ["exe"]})


def test_a_page_carries_the_outline_section_it_stands_in(tmp_path: Path):
    document = fpdf.FPDF()
    document.set_font("Helvetica", size=12)
    for chapter, sub, text in [
        ("Setup", None, "Unpack the router."),
        (None, "Cables", "Plug in the cable."),
        (None, None, "Still about cables."),
        ("Reset", None, "Hold the button."),
    ]:
        document.add_page()
        if chapter:
            document.start_section(chapter, level=0)
        if sub:
            document.start_section(sub, level=1)
        document.multi_cell(0, 8, text)
    document.output(str(tmp_path / "router.pdf"))

    knowledge = load_knowledge_base(tmp_path, extra_suffixes=PDF)

    assert [(d.metadata["page"], d.metadata.get("section")) for d in knowledge.documents] == [
        (1, "Setup"),
        (2, "Setup > Cables"),
        (3, "Setup > Cables"),
        (4, "Reset"),
    ]


LONG_ANSWER = (
    "Open Settings, choose Sync and tap Pause; files already on this device stay where they "
    "are, uploads wait until you tap Resume, and nothing is deleted on any other device."
)


def test_entries_on_a_page_stay_apart_and_wrapped_answers_read_as_written(tmp_path: Path):
    """A PDF of Q/A entries (a gap between entries, answers wrapped at the margin) gives the
    same entries and answers as the Markdown it was printed from."""
    document = fpdf.FPDF()
    document.set_font("Helvetica", size=11)
    document.add_page()
    for question in ("How do I pause sync?", "Does pausing delete files?"):
        document.multi_cell(0, 5, f"Q: {question}\nA: {LONG_ANSWER}")
        document.ln(5)
    document.multi_cell(0, 5, "Before you start:\n- a charged phone\n- the app, version 6 or later")
    document.output(str(tmp_path / "sync.pdf"))

    chunks = chunk_documents(load_knowledge_base(tmp_path, extra_suffixes=PDF).documents, 500, 50)

    assert [c.metadata.get("question") for c in chunks] == [
        "How do I pause sync?",
        "Does pausing delete files?",
        None,
    ]
    assert [c.metadata["answer"] for c in chunks[:2]] == [LONG_ANSWER, LONG_ANSWER]
    assert chunks[2].text == "Before you start:\n- a charged phone\n- the app, version 6 or later"


def test_a_question_and_its_answer_in_two_paragraphs_are_one_entry(tmp_path: Path):
    make_pdf(tmp_path / "faq.pdf", ["Q: Can I undo a deletion?\n\nA: Yes, within 30 days."])

    chunks = chunk_documents(load_knowledge_base(tmp_path, extra_suffixes=PDF).documents, 500, 50)

    assert [(c.metadata.get("question"), c.metadata["answer"]) for c in chunks] == [
        ("Can I undo a deletion?", "Yes, within 30 days.")
    ]


def test_a_table_stays_a_markdown_table(tmp_path: Path):
    document = fpdf.FPDF()
    document.set_font("Helvetica", size=11)
    document.add_page()
    with document.table(col_widths=(60, 60, 60)) as table:
        for row in (("Plan", "Storage", "Price"), ("Free", "5 GB", "0"), ("Plus", "200 GB", "3")):
            table.row(row)
    document.output(str(tmp_path / "plans.pdf"))

    (page,) = load_knowledge_base(tmp_path, extra_suffixes=PDF).documents

    assert page.text.splitlines() == [
        "| Plan | Storage | Price |",
        "| --- | --- | --- |",
        "| Free | 5 GB | 0 |",
        "| Plus | 200 GB | 3 |",
    ]


def test_several_outline_entries_on_one_page_each_give_their_section(tmp_path: Path):
    document = fpdf.FPDF()
    document.set_font("Helvetica", size=12)
    document.add_page()
    for chapter, subsections in [
        ("Setup", [("Cables", "Plug in the cable."), ("Power", "Press the power button.")]),
        ("Reset", [("Factory reset", "Hold the button for ten seconds.")]),
    ]:
        document.start_section(chapter, level=0)
        document.multi_cell(0, 8, chapter)
        document.ln(6)
        for title, text in subsections:
            document.start_section(title, level=1)
            document.multi_cell(0, 8, f"1.{len(title)} {title}")  # a numbered heading
            document.ln(6)
            document.multi_cell(0, 8, text)
            document.ln(6)
    document.output(str(tmp_path / "router.pdf"))

    chunks = chunk_documents(load_knowledge_base(tmp_path, extra_suffixes=PDF).documents, 500, 0)

    sections = {c.text.splitlines()[-1]: c.metadata.get("section") for c in chunks}
    assert sections == {
        "Plug in the cable.": "Setup > Cables",
        "Press the power button.": "Setup > Power",
        "Hold the button for ten seconds.": "Reset > Factory reset",
    }
    # a chapter heading followed at once by its first subsection is read with it, not alone
    assert [c.text.split("\n\n")[:2] for c in chunks if c.text.startswith(("Setup", "Reset"))] == [
        ["Setup", "1.6 Cables"],
        ["Reset", "1.13 Factory reset"],
    ]
    assert {c.metadata["source"] for c in chunks} == {"router.pdf#page=1"}


def test_a_heading_set_right_above_its_text_starts_its_section(tmp_path: Path):
    document = fpdf.FPDF()
    document.set_font("Helvetica", size=12)
    document.add_page()
    document.start_section("Setup", level=0)
    document.multi_cell(0, 5, "Setup\nUnpack the router.")
    document.ln(8)
    document.start_section("Cables", level=0)
    document.multi_cell(0, 5, "Cables\nUse the grey cable.")  # no gap under the heading
    document.output(str(tmp_path / "router.pdf"))

    documents = load_knowledge_base(tmp_path, extra_suffixes=PDF).documents

    assert [(d.metadata["section"], d.text.splitlines()[-1]) for d in documents] == [
        ("Setup", "Unpack the router."),
        ("Cables", "Use the grey cable."),
    ]


def test_entries_on_a_page_follow_their_positions_not_the_outline_order(tmp_path: Path):
    document = fpdf.FPDF()
    document.set_font("Helvetica", size=12)
    document.add_page()
    document.set_y(150)  # the outline names "Reset" first, but it is printed lower down
    document.start_section("Reset", level=0)
    document.multi_cell(0, 8, "Reset\n\nHold the button.")
    document.set_y(30)
    document.start_section("Setup", level=0)
    document.multi_cell(0, 8, "Setup\n\nUnpack the router.")
    document.output(str(tmp_path / "router.pdf"))

    documents = load_knowledge_base(tmp_path, extra_suffixes=PDF).documents

    assert [(d.metadata["section"], d.text.splitlines()[-1]) for d in documents] == [
        ("Setup", "Unpack the router."),
        ("Reset", "Hold the button."),
    ]


def test_a_paragraph_and_an_entry_cut_by_a_page_break_are_read_whole(tmp_path: Path):
    make_pdf(
        tmp_path / "router.pdf",
        [
            "Chapter one.\n\nWhen you hold the reset button the router restarts and",
            "keeps your settings.\n\nQ: Can I undo a factory reset?",
            "A: No, the settings are gone.\n\nThat is all.",
        ],
    )

    chunks = chunk_documents(load_knowledge_base(tmp_path, extra_suffixes=PDF).documents, 500, 0)

    by_text = {c.text: (c.metadata["page"], c.metadata["source"]) for c in chunks}
    whole = (
        "Chapter one.\n\n"
        "When you hold the reset button the router restarts and keeps your settings."
    )
    assert by_text[whole] == ([1, 2], "router.pdf#page=1")
    entry = "Q: Can I undo a factory reset?\nA: No, the settings are gone."
    assert by_text[entry] == ([2, 3], "router.pdf#page=2")
    assert chunks[1].metadata["answer"] == "No, the settings are gone."
    assert by_text["That is all."] == (3, "router.pdf#page=3")


def test_a_chunk_across_two_pages_is_shown_with_both(tmp_path: Path):
    make_pdf(tmp_path / "router.pdf", ["The router restarts and", "keeps your settings."])
    (chunk,) = chunk_documents(load_knowledge_base(tmp_path, extra_suffixes=PDF).documents, 500, 0)

    assert (
        citable_source({**chunk.metadata, "title": "Router manual"}) == "Router manual, pages 1-2"
    )
    assert citable_source({**chunk.metadata, "url": "https://example.com/r.pdf"}) == (
        "https://example.com/r.pdf#page=1"
    )


class _ManualWithRunningLines(fpdf.FPDF):
    def header(self) -> None:
        self.set_font("Helvetica", size=9)
        self.cell(0, 8, "Acme Router X2 - User Manual")
        self.ln(14)

    def footer(self) -> None:
        self.set_y(-15)
        self.set_font("Helvetica", size=9)
        self.cell(0, 8, f"Page {self.page_no()}")


def test_running_headers_footers_and_page_numbers_are_not_indexed(tmp_path: Path):
    document = _ManualWithRunningLines()
    for text in ("Unpack the router.", "Plug in the cable.", "Press the power button."):
        document.add_page()
        document.set_font("Helvetica", size=12)
        document.multi_cell(0, 8, text)
    document.output(str(tmp_path / "router.pdf"))

    documents = load_knowledge_base(tmp_path, extra_suffixes=PDF).documents

    assert [(d.metadata["page"], d.text) for d in documents] == [
        (1, "Unpack the router."),
        (2, "Plug in the cable."),
        (3, "Press the power button."),
    ]


def test_a_pdf_of_two_pages_keeps_its_top_and_bottom_lines(tmp_path: Path):
    document = _ManualWithRunningLines()
    for text in ("Unpack the router.", "Plug in the cable."):
        document.add_page()
        document.set_font("Helvetica", size=12)
        document.multi_cell(0, 8, text)
    document.output(str(tmp_path / "router.pdf"))

    (first, _) = load_knowledge_base(tmp_path, extra_suffixes=PDF).documents

    assert first.text.splitlines()[0] == "Acme Router X2 - User Manual"
    assert first.text.splitlines()[-1] == "Page 1"


def test_a_table_over_three_pages_is_one_table_with_its_header_once(tmp_path: Path):
    document = fpdf.FPDF()
    document.set_font("Helvetica", size=11)
    for first in (1, 4, 7):
        document.add_page()
        with document.table(col_widths=(60, 60)) as table:
            for row in (
                ("Setting", "Default"),
                *((f"Option {n}", f"{n} s") for n in range(first, first + 3)),
            ):
                table.row(row)
    document.output(str(tmp_path / "settings.pdf"))

    (table,) = load_knowledge_base(tmp_path, extra_suffixes=PDF).documents

    assert table.metadata["page"] == [1, 2, 3]
    assert table.text.splitlines() == [
        "| Setting | Default |",
        "| --- | --- |",
        *(f"| Option {n} | {n} s |" for n in range(1, 10)),
    ]


def test_bullet_lists_stay_markdown_lists(tmp_path: Path):
    document = fpdf.FPDF()
    document.core_fonts_encoding = "windows-1252"  # has the bullet
    document.set_font("Helvetica", size=12)
    document.add_page()
    document.multi_cell(0, 8, "In the box:\n\u2022 the router\n\u2022 a power cable")
    document.output(str(tmp_path / "kit.pdf"))

    (page,) = load_knowledge_base(tmp_path, extra_suffixes=PDF).documents

    assert page.text == "In the box:\n- the router\n- a power cable"
