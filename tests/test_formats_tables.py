"""Tables in chunks: a table split over several chunks keeps its header row in each, a heading
or caption stays with the table (or text) it introduces, and a table of contents is not indexed.
"""

from __future__ import annotations

from collections.abc import Iterable
from dataclasses import replace
from pathlib import Path

import pytest
from langchain_text_splitters import RecursiveCharacterTextSplitter
from structlog.testing import capture_logs

from rasa_context_retrieval.faiss.builder import ensure_index
from rasa_context_retrieval.ingestion import build
from rasa_context_retrieval.ingestion import settings as index_settings
from rasa_context_retrieval.knowledge import chunking
from rasa_context_retrieval.knowledge.chunking import chunk_documents
from rasa_context_retrieval.knowledge.loader import Document, load_knowledge_base
from rasa_context_retrieval.knowledge.models import Chunk
from tests.test_index_persistence import HashingEmbedder, settings_for

fpdf = pytest.importorskip("fpdf")
pytest.importorskip("pypdf")
docx = pytest.importorskip("docx")

PDF = (".pdf",)
HEADER = "| Service | Fee |"
FEE_ROWS = [f"| Service number {n} | {n}.50 EUR |" for n in range(1, 31)]


def library_pdf(path: Path, *, contents: bool = True) -> None:
    """A library's price list: a contents page, an introduction, and a fee table of 30 rows
    under a heading and a caption."""
    document = fpdf.FPDF()
    document.set_font("Helvetica", size=11)
    if contents:
        document.add_page()
        document.multi_cell(0, 6, "Contents")
        document.ln(4)
        for number, (title, page) in enumerate((("Introduction", 2), ("Fees", 3)), start=1):
            document.cell(150, 6, f"{number} {title} " + "." * 60)
            document.cell(0, 6, str(page), new_x="LMARGIN", new_y="NEXT")
    document.add_page()
    document.multi_cell(0, 6, "1 Introduction\n\nThe town library lends books to everyone.")
    document.add_page()
    document.multi_cell(0, 6, "2 Fees")
    document.ln(4)
    document.multi_cell(0, 6, "Table 3: Fees for each service")
    document.ln(2)
    with document.table(col_widths=(90, 60)) as table:
        table.row(("Service", "Fee"))
        for number in range(1, 31):
            table.row((f"Service number {number}", f"{number}.50 EUR"))
    path.parent.mkdir(parents=True, exist_ok=True)
    document.output(str(path))


def pdf_chunks(folder: Path, chunk_size: int = 400) -> list[Chunk]:
    knowledge = load_knowledge_base(folder, extra_suffixes=PDF)
    assert knowledge.problems == []
    return chunk_documents(knowledge.documents, chunk_size, chunk_size // 10)


def table_chunks(chunks: list[Chunk]) -> list[Chunk]:
    return [chunk for chunk in chunks if "| Service number" in chunk.text]


def test_every_chunk_of_a_split_table_starts_its_rows_with_the_header_row(tmp_path: Path):
    library_pdf(tmp_path / "library.pdf")
    pieces = table_chunks(pdf_chunks(tmp_path))

    assert len(pieces) == 3  # 30 rows do not fit in one chunk of 400 characters
    for chunk in pieces:
        lines = chunk.text.splitlines()
        start = lines.index(HEADER)
        assert lines[start + 1] == "| --- | --- |"
        assert all(line.startswith("| Service number") for line in lines[start + 2 :])
        assert len(chunk.text) <= 400  # the repeated header counts in the size
        assert chunk.metadata["answer"] == chunk.text
    rows = [line for c in pieces for line in c.text.splitlines() if "Service number" in line]
    assert rows == FEE_ROWS  # every row once, in order


def test_a_fee_in_a_later_chunk_is_read_with_its_column_names(tmp_path: Path):
    library_pdf(tmp_path / "library.pdf")
    (chunk,) = [c for c in pdf_chunks(tmp_path) if "| Service number 25 |" in c.text]

    assert chunk.text.startswith(f"{HEADER}\n| --- | --- |\n")
    assert chunk.metadata["source"] == "library.pdf#page=3"


def test_the_heading_and_caption_stay_with_the_table_they_introduce(tmp_path: Path):
    library_pdf(tmp_path / "library.pdf")
    chunks = pdf_chunks(tmp_path)
    first = table_chunks(chunks)[0]

    assert first.text.startswith(f"2 Fees\n\nTable 3: Fees for each service\n\n{HEADER}\n")
    assert not any(c.text.strip() in ("2 Fees", "Table 3: Fees for each service") for c in chunks)
    assert sum("Table 3: Fees" in c.text for c in chunks) == 1


def test_a_contents_page_is_left_out_with_the_reason_in_the_log(tmp_path: Path):
    library_pdf(tmp_path / "library.pdf")
    with capture_logs() as logs:
        chunks = pdf_chunks(tmp_path)

    assert [c.metadata["page"] for c in chunks if "Introduction" in c.text] == [2]
    assert not any("Contents" in c.text for c in chunks)
    (left_out,) = [log for log in logs if log["event"] == "knowledge.chunking.contents_left_out"]
    assert left_out["log_level"] == "debug"
    assert left_out["source"] == "library.pdf#page=1"
    assert left_out["entries"] == 2


SERVICES = ["Lending", "Printing", "Scanning", "Binding", "Reading room", "Archive visits"]
TOPICS = ("About", "Booking", "Costs", "Hours", "Rules", "Staff", "Tools")
ENTRIES = [f"{topic} {service}" for service in SERVICES for topic in TOPICS]
"""42 entries: a contents of a page and a half (each entry a 9 mm line)."""


def manual_with_a_long_contents(path: Path, *, after_contents: list[tuple[str, str]]) -> None:
    """A manual whose contents (entries with dot leaders) fill a page and go on at the top of
    the next one without a heading; then, on the page after, a table of ``after_contents``
    rows; then sections."""
    document = fpdf.FPDF()
    document.set_font("Helvetica", size=11)
    document.add_page()
    document.multi_cell(0, 9, "Contents")
    document.ln(4)
    for number, title in enumerate(ENTRIES, start=1):
        document.cell(150, 9, f"{number} {title} " + "." * 60)
        document.cell(0, 9, str(number + 3), new_x="LMARGIN", new_y="NEXT")
    if after_contents:
        document.add_page()
        with document.table(col_widths=(90, 60)) as table:
            for row in after_contents:
                table.row(row)
    for title in ENTRIES[:4]:
        document.add_page()
        document.multi_cell(0, 6, f"{title}\n\nThis section explains {title.lower()} in full.")
    path.parent.mkdir(parents=True, exist_ok=True)
    document.output(str(path))


def test_a_contents_going_on_over_a_second_page_without_its_heading_is_left_out(
    tmp_path: Path,
):
    manual_with_a_long_contents(tmp_path / "manual.pdf", after_contents=[])
    with capture_logs() as logs:
        chunks = pdf_chunks(tmp_path)

    assert [c.text.splitlines()[-1] for c in chunks] == [
        f"This section explains {title.lower()} in full." for title in ENTRIES[:4]
    ]
    assert not any("|" in c.text for c in chunks)
    (left_out,) = [log for log in logs if log["event"] == "knowledge.chunking.contents_left_out"]
    assert left_out["entries"] == len(ENTRIES)


def test_a_price_list_at_the_top_of_the_page_after_the_contents_is_indexed(tmp_path: Path):
    prices = [
        ("Service", "Price"),
        *[(f"{s} per hour", str(50 + 5 * n)) for n, s in enumerate(SERVICES)],
    ]
    manual_with_a_long_contents(tmp_path / "manual.pdf", after_contents=prices)

    chunks = pdf_chunks(tmp_path)
    (price_list,) = [c for c in chunks if "| Service | Price |" in c.text]

    assert price_list.text.splitlines() == [
        "| Service | Price |",
        "| --- | --- |",
        *[f"| {service} | {price} |" for service, price in prices[1:]],
    ]
    assert not any(f"| {len(ENTRIES)} {ENTRIES[-1]} |" in c.text for c in chunks)
    assert not any("| 2 Booking Lending |" in c.text for c in chunks)


def test_a_table_with_numbers_under_another_heading_is_indexed():
    # a PDF table without a header row: its first row is read as the header
    table = "| Monday | 9 |\n| --- | --- |\n| Tuesday | 9 |\n| Wednesday | 10 |\n| Friday | 12 |"
    hours = chunk_documents([Document("hours.md", f"Opening hours\n\n{table}")], 1000, 100)
    contents = chunk_documents([Document("toc.md", f"Contents\n\n{table}")], 1000, 100)

    assert [c.text for c in hours] == [f"Opening hours\n\n{table}"]
    assert contents == []  # the same numbers under a Contents heading are page numbers


def test_a_caption_after_prose_moves_to_the_chunk_of_its_table():
    prose = "Members borrow up to ten books at a time. " * 8  # 336 characters
    table = "| Item | Loan |\n| --- | --- |\n" + "\n".join(
        f"| Item {n} | {n} weeks |" for n in range(6)
    )
    text = f"{prose.strip()}\n\nTable 1: Loan periods\n\n{table}"

    chunks = chunk_documents([Document("loans.md", text)], 400, 40)

    assert [c.text for c in chunks] == [prose.strip(), f"Table 1: Loan periods\n\n{table}"]


def test_a_heading_above_a_long_paragraph_stays_in_its_first_chunk():
    paragraph = " ".join(f"Rule {n} says that late returns cost a small fee." for n in range(20))
    chunks = chunk_documents([Document("rules.md", f"Late returns\n\n{paragraph}")], 300, 30)

    assert chunks[0].text.startswith("Late returns\n\nRule 0 says")
    assert all(len(c.text) <= 300 for c in chunks)
    assert all(c.text != "Late returns" for c in chunks)


def library_docx(path: Path) -> None:
    """A Word price list: a heading followed at once by its first subsection, and a long table
    under a caption."""
    document = docx.Document()
    document.add_heading("Fees", 1)
    document.add_heading("Library card", 2)
    document.add_paragraph("A library card is free for everyone who lives in the county.")
    document.add_heading("Services", 2)
    document.add_paragraph("Table 3: Fees for each service")
    table = document.add_table(rows=31, cols=2)
    table.cell(0, 0).text, table.cell(0, 1).text = "Service", "Fee"
    for number in range(1, 31):
        table.cell(number, 0).text = f"Service number {number}"
        table.cell(number, 1).text = f"{number}.50 EUR"
    path.parent.mkdir(parents=True, exist_ok=True)
    document.save(str(path))


def word_chunks(folder: Path) -> list[Chunk]:
    knowledge = load_knowledge_base(folder, extra_suffixes=(".docx",))
    assert knowledge.problems == []
    return chunk_documents(knowledge.documents, 400, 40)


def test_a_long_word_table_keeps_its_header_and_caption(tmp_path: Path):
    library_docx(tmp_path / "fees.docx")
    pieces = table_chunks(word_chunks(tmp_path))

    assert len(pieces) == 3
    assert pieces[0].text.startswith(f"## Services\n\nTable 3: Fees for each service\n\n{HEADER}")
    assert all(p.text.startswith(f"{HEADER}\n| --- | --- |\n") for p in pieces[1:])
    assert {p.metadata["section"] for p in pieces} == {"Fees > Services"}


def test_a_heading_followed_at_once_by_its_subsection_is_not_a_chunk_of_its_own(tmp_path: Path):
    library_docx(tmp_path / "fees.docx")
    chunks = word_chunks(tmp_path)

    assert "# Fees" not in [c.text for c in chunks]
    (card,) = [c for c in chunks if "library card is free" in c.text]
    assert card.text.startswith("# Fees\n\n## Library card\n\nA library card")
    assert card.metadata["section"] == "Fees > Library card"


def test_a_row_too_long_for_a_chunk_is_cut_like_prose_and_no_chunk_is_larger():
    long_cell = "Renewal can be done at the desk, by phone or online at any time. " * 3
    table = f"| Service | Fee |\n| --- | --- |\n| Renewal | {long_cell.strip()} |\n| Card | 2 EUR |"
    chunks = chunk_documents([Document("fees.md", table)], 120, 10)

    assert all(len(c.text) <= 120 for c in chunks)
    assert chunks[-1].text == "| Service | Fee |\n| --- | --- |\n| Card | 2 EUR |"
    assert "at any time." in " ".join(c.text for c in chunks)


def size_only_chunks(documents: Iterable[Document], size: int, overlap: int) -> list[Chunk]:
    """Chunks as the previous chunker (version 5) cut prose: by size only."""
    splitter = RecursiveCharacterTextSplitter(chunk_size=size, chunk_overlap=overlap)
    return [
        Chunk(
            chunking._chunk_id(document.source, ordinal, piece),
            piece,
            {**document.metadata, "source": document.source, "answer": piece},
        )
        for document in documents
        for ordinal, piece in enumerate(splitter.split_text(document.text))
    ]


def test_an_index_stored_by_the_previous_chunker_is_rebuilt_reusing_unchanged_chunks(
    tmp_path: Path, monkeypatch: pytest.MonkeyPatch
):
    docs = tmp_path / "docs"
    library_pdf(docs / "library.pdf", contents=False)
    settings = replace(settings_for(docs), extra_suffixes=PDF, chunk_size=400, chunk_overlap=40)
    tally = tmp_path / "embedded.txt"
    with monkeypatch.context() as previous_release:
        previous_release.setattr(index_settings, "CHUNKER_VERSION", chunking.CHUNKER_VERSION - 1)
        previous_release.setattr(build, "chunk_documents", size_only_chunks)
        stored = ensure_index(settings, HashingEmbedder(), progress=False)
    assert not all(HEADER in c.text for c in table_chunks(list(stored.knowledge.chunks)))

    upgraded = ensure_index(settings, HashingEmbedder(tally=str(tally)), progress=False)

    pieces = table_chunks(list(upgraded.knowledge.chunks))
    assert all(c.text.startswith(("2 Fees", HEADER)) for c in pieces)
    old_texts = {c.text for c in stored.knowledge.chunks}
    changed = [c for c in upgraded.knowledge.chunks if c.text not in old_texts]
    embedded = sum(int(line.split()[1]) for line in tally.read_text().splitlines())
    assert 0 < embedded == len(changed) < len(upgraded.knowledge.chunks)


def test_a_list_before_a_long_table_stays_a_list_and_the_table_starts_at_its_header():
    rows = "\n".join(f"| Service number {n} | {n}.50 EUR |" for n in range(1, 31))
    text = (
        f"Bring to the desk:\n\n- your library card\n\n- a pen\n\n{HEADER}\n| --- | --- |\n{rows}"
    )
    chunks = chunk_documents([Document("desk.md", text)], 400, 40)

    assert chunks[0].text == "Bring to the desk:\n\n- your library card\n\n- a pen"
    assert all(c.text.startswith(HEADER) for c in chunks[1:])
