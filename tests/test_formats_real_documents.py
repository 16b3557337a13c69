"""Real documents with an open licence (``bench/data/real-documents``, sources and licences in
its README): a pdfTeX policy with a three-level outline, the same policy written to Word by
pandoc, and a help page of the Fossil project. What a person reading the citations relies on:
pages, sections, anchors, titles, and text that reads as it is printed."""

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


def test_every_page_of_the_pdf_is_cited_with_the_outline_entry_it_stands_in(documents):
    pages = of(documents, "opengov-privacy-policy.pdf")

    assert [d.source for d in pages] == [
        f"opengov-privacy-policy.pdf#page={n}" for n in range(1, 6)
    ]
    assert [d.metadata["page"] for d in pages] == [1, 2, 3, 4, 5]
    assert pages[1].metadata["section"] == (
        "Privacy Policy > OpenGov's Use of Information > Supporter Information"
    )
    assert (
        pages[4].metadata["section"] == "Privacy Policy > Disclosure of Your Information > Security"
    )


def test_justified_pdf_lines_keep_their_spaces_and_wrapped_lines_rejoin(documents):
    first = of(documents, "opengov-privacy-policy.pdf")[0].text

    assert (
        "OpenGov does not sell or rent member, donor or website visitor information under any "
        "circumstances" in first
    )
    assert "• site testing\n• diagnosis of technical problems" in first


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
