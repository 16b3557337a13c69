"""Real documents with an open licence (``bench/data/real-documents``, sources and licences in
its README): a pdfTeX policy with a three-level outline, the same policy written to Word by
pandoc, a help page of the Fossil project, and a product manual (Libre Solar's MPPT 1210 HUS
charge controller, pandoc's Eisvogel template: running headers and footers, Source Sans figures,
several outline entries per page, a table over three pages). What a person reading the
citations relies on: pages, sections, anchors, titles, and text that reads as it is printed."""

from __future__ import annotations

import pytest

from rasa_context_retrieval.knowledge.chunking import chunk_documents
from rasa_context_retrieval.knowledge.loader import Document, load_knowledge_base
from rasa_context_retrieval.knowledge.models import Chunk
from tests.conftest import REPO_ROOT

pytest.importorskip("pypdf")
pytest.importorskip("docx")
pytest.importorskip("lxml")

DOCS = REPO_ROOT / "bench" / "data" / "real-documents" / "docs"
FORMATS = (".pdf", ".docx", ".html")


@pytest.fixture(scope="module")
def documents() -> list[Document]:
    knowledge = load_knowledge_base(DOCS, extra_suffixes=FORMATS)
    assert knowledge.problems == []
    return knowledge.documents


@pytest.fixture(scope="module")
def chunks(documents: list[Document]) -> list[Chunk]:
    return chunk_documents(documents, 1000, 100)


def of(documents: list[Document], file: str) -> list[Document]:
    return [d for d in documents if d.source.split("#")[0] == file]


def test_every_part_of_the_policy_is_cited_with_the_outline_entry_it_stands_in(documents):
    parts = of(documents, "opengov-privacy-policy.pdf")

    assert sorted({d.metadata["page"] for d in parts if isinstance(d.metadata["page"], int)}) == [
        1, 2, 3, 4, 5,
    ]  # fmt: skip
    sections = {d.metadata.get("section") for d in parts}
    assert "Privacy Policy > OpenGov's Use of Information > Supporter Information" in sections
    assert "Privacy Policy > Disclosure of Your Information > Security" in sections
    changes = next(d for d in parts if "Changes to Our Policies" in d.text.split("\n\n")[0])
    assert changes.metadata["section"] == (
        "Privacy Policy > Disclosure of Your Information > Changes to Our Policies"
    )
    assert changes.metadata["page"] == [4, 5]  # its paragraph runs on to page 5
    assert changes.source == "opengov-privacy-policy.pdf#page=4"
    use = next(d for d in parts if d.text.startswith("OpenGov’s Use of Information"))
    assert use.metadata["section"] == "Privacy Policy > OpenGov's Use of Information"


def test_the_policy_pdf_has_no_page_numbers_in_its_text(documents):
    for part in of(documents, "opengov-privacy-policy.pdf"):
        assert all(not line.strip().isdigit() for line in part.text.splitlines())


def test_justified_pdf_lines_keep_their_spaces_and_wrapped_lines_rejoin(documents):
    first = "\n\n".join(
        d.text for d in of(documents, "opengov-privacy-policy.pdf") if d.metadata["page"] == 1
    )

    assert (
        "OpenGov does not sell or rent member, donor or website visitor information under any "
        "circumstances" in first
    )
    assert "- site testing\n- diagnosis of technical problems" in first


def test_the_word_policy_keeps_its_heading_path_and_list_items(documents):
    parts = {d.metadata["section"]: d.text for d in of(documents, "opengov-privacy-policy.docx")}

    assert "Privacy Policy > Information Gathered > Logging" in parts
    assert (
        "- site testing\n\n- diagnosis of technical problems"
        in parts["Privacy Policy > Information Gathered > Logging"]
    )
    assert list(parts)[-1] == "Privacy Policy > Disclosure of Your Information > Security"


def test_the_help_page_is_cited_by_its_anchors_with_the_sidecar_title(documents):
    page = of(documents, "fossil-server-setup.html")

    assert [d.metadata.get("anchor") for d in page] == [
        None, "prep", "methods", "cgi", "slist", "standalone", "scgi", "ssh", "matrix",
        "postsetup", "more",
    ]  # fmt: skip
    assert {d.metadata["title"] for d in page} == {"How To Configure A Fossil Server"}
    assert page[4].metadata["section"] == "Activation Methods > Socket Listener"
    assert page[4].source == "fossil-server-setup.html#slist"


def test_the_help_page_reads_as_a_browser_shows_it(documents):
    text = "\n".join(d.text for d in of(documents, "fossil-server-setup.html"))

    assert "a much stronger password under Admin → Users." in text  # UTF-8, one line
    assert "\n2. Run the Admin → Security-Audit tool" in text  # numbered as printed
    assert ".content th.fep" not in text  # the page's style sheet is no knowledge


def test_no_chunk_is_larger_than_asked_and_each_keeps_its_place(chunks):
    assert all(len(c.text) <= 1000 for c in chunks)
    for chunk in chunks:
        source = chunk.metadata["source"]
        if source.endswith(".docx"):
            continue
        assert ("#page=" in source) == ("page" in chunk.metadata)
        if "anchor" in chunk.metadata:
            assert source.endswith(f"#{chunk.metadata['anchor']}")


MANUAL = "libre-solar-mppt-1210-hus-manual.pdf"


def manual_chunks(chunks: list[Chunk]) -> list[Chunk]:
    return [c for c in chunks if c.metadata["source"].split("#")[0] == MANUAL]


def test_the_manual_is_cited_by_section_and_page_with_its_title(chunks):
    manual = manual_chunks(chunks)
    first_line = {c.text.splitlines()[0]: c for c in manual}

    assert {c.metadata["title"] for c in manual} == {"MPPT 1210 HUS"}
    load_output = first_line["3.3 Load output"]  # the third of four entries on page 5
    assert load_output.metadata["section"] == "Description of Functions > Load output"
    assert load_output.metadata["source"] == f"{MANUAL}#page=5"
    bulk = next(c for c in manual if c.text.startswith("- Bulk stage"))  # top of page 5
    assert bulk.metadata["section"] == "Description of Functions > Three-stage battery charging"


def test_the_manual_reads_as_printed_without_running_lines(chunks):
    text = "\n".join(c.text for c in manual_chunks(chunks) if c.metadata["page"] != 1)

    assert "Martin Jäger" not in text and "2021-05-02" not in text  # footer and header
    assert ".pnum" not in text and "/f_t" not in text
    assert "charge any battery with a nominal voltage of 12 V." in text  # Source Sans figures
    assert "to the best of our knowledge." in text  # TeX's hyphenation undone
    assert "After a current cutoff limit" in text  # ligatures as letters
    assert "\n- Use insulated tools only.\n" in text
    assert "Load output | 5 |" not in text and ". . ." not in text  # no contents page


def test_the_manual_s_contents_page_is_read_but_not_indexed(documents, chunks):
    (contents,) = [d for d in of(documents, MANUAL) if d.text.startswith("Contents")]

    assert "| 3.3 | Load output | 5 |" in contents.text  # read without its dot leaders
    assert contents.source == f"{MANUAL}#page=2"
    assert not [c for c in manual_chunks(chunks) if c.metadata["page"] == 2]


def test_the_paragraph_cut_by_a_page_break_is_one_chunk_citing_both_pages(chunks):
    (chunk,) = [c for c in manual_chunks(chunks) if "temperatures measured inside" in c.text]

    assert chunk.metadata["page"] == [5, 6]
    assert chunk.metadata["source"] == f"{MANUAL}#page=5"
    assert chunk.metadata["section"] == "Description of Functions > Temperature compensation"


def test_the_specifications_table_over_three_pages_is_one_markdown_table(documents):
    (table,) = [d for d in of(documents, MANUAL) if "| Feature | Value | Comment |" in d.text]

    assert table.metadata["page"] == [9, 10, 11]
    assert table.text.count("| Feature | Value | Comment |") == 1  # repeated header dropped
    assert "| Maximum charge current | 10 A |  |" in table.text
    assert "| Battery type | Lead-acid | safe general settings, also suitable for LFP |" in (
        table.text
    )
    assert (
        "| Power and function | EN/IEC 62509, EN/IEC 62093 | Tested in non-certified lab only |"
        in (table.text)
    )


def test_each_chunk_of_the_specifications_table_has_its_column_names(chunks):
    pieces = [c for c in manual_chunks(chunks) if "| Feature | Value | Comment |" in c.text]

    assert len(pieces) == 3
    assert pieces[0].text.startswith(
        "5 Specifications\n\nTable 1: Overview of specifications\n\n| Feature | Value | Comment |"
    )
    assert all(p.text.startswith("| Feature | Value | Comment |\n| --- |") for p in pieces[1:])
    assert "| Maximum current | 2.0 A | total for both ports |" in pieces[0].text
    assert "| Protection class | IP 20 | with housing (3D files available) |" in pieces[1].text
    assert not any(
        c.text == "5 Specifications\n\nTable 1: Overview of specifications" for c in chunks
    )
