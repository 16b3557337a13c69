"""PowerPoint decks: one document per slide cited as ``deck.pptx#slide=N``, bad files skipped."""

from __future__ import annotations

import io
import zipfile
from pathlib import Path

import pytest

from rasa_context_retrieval.knowledge.chunking import chunk_documents
from rasa_context_retrieval.knowledge.loader import load_knowledge_base
from rasa_context_retrieval.result_metadata import citable_source

pptx = pytest.importorskip("pptx")
from pptx.util import Inches  # noqa: E402

PPTX = (".pptx",)


def make_deck(path: Path) -> None:
    deck = pptx.Presentation()
    deck.core_properties.title = "Router training"
    slide = deck.slides.add_slide(deck.slide_layouts[1])  # title and content
    slide.shapes.title.text = "Resetting"
    body = slide.placeholders[1].text_frame
    body.text = "Hold the button for ten seconds."
    item = body.add_paragraph()
    item.text = "The light turns amber"
    item.level = 1
    deck.slides.add_slide(deck.slide_layouts[6])  # blank: no text, no document
    third = deck.slides.add_slide(deck.slide_layouts[5])  # title only
    third.shapes.title.text = "Plans"
    table = third.shapes.add_table(2, 2, Inches(1), Inches(2), Inches(4), Inches(1)).table
    for (row, column), text in {
        (0, 0): "Plan",
        (0, 1): "Ports",
        (1, 0): "Free",
        (1, 1): "2",
    }.items():
        table.cell(row, column).text = text
    notes = third.notes_slide.notes_text_frame
    notes.text = "SPEAKER-NOTE do not mention the discount"
    path.parent.mkdir(parents=True, exist_ok=True)
    deck.save(str(path))


def test_each_slide_is_a_document_cited_by_its_number(tmp_path: Path):
    make_deck(tmp_path / "training/router.pptx")
    assert load_knowledge_base(tmp_path).documents == []  # opt-in only

    knowledge = load_knowledge_base(tmp_path, extra_suffixes=PPTX)

    assert [d.source for d in knowledge.documents] == [
        "training/router.pptx#slide=1",
        "training/router.pptx#slide=3",
    ]
    first, third = knowledge.documents
    assert (
        first.text == "# Resetting\n\nHold the button for ten seconds.\n\n- The light turns amber"
    )
    assert third.text == "# Plans\n\n| Plan | Ports |\n| --- | --- |\n| Free | 2 |"
    assert first.metadata == {"title": "Router training", "slide": 1, "section": "Resetting"}
    assert "SPEAKER-NOTE" not in third.text

    chunk = chunk_documents(knowledge.documents, 500, 50)[0]
    assert citable_source(chunk.metadata) == "Router training, slide 1"
    assert citable_source({**chunk.metadata, "url": "https://x.test/r.pptx"}) == (
        "https://x.test/r.pptx#slide=1"
    )


def test_bad_decks_are_skipped_with_a_reason_and_the_rest_is_served(tmp_path: Path):
    make_deck(tmp_path / "good.pptx")
    whole = (tmp_path / "good.pptx").read_bytes()
    (tmp_path / "truncated.pptx").write_bytes(whole[: len(whole) // 2])
    bomb = io.BytesIO()
    with zipfile.ZipFile(bomb, "w", zipfile.ZIP_DEFLATED) as archive:
        archive.writestr("ppt/slides/slide1.xml", b"\0" * 50_000_000)
    (tmp_path / "bomb.pptx").write_bytes(bomb.getvalue())

    knowledge = load_knowledge_base(tmp_path, extra_suffixes=PPTX)
    reasons = {problem.file: problem.reason for problem in knowledge.problems}

    assert {d.source.split("#")[0] for d in knowledge.documents} == {"good.pptx"}
    assert "not a valid zip" in reasons["truncated.pptx"]
    assert "zip bomb" in reasons["bomb.pptx"]


def test_an_external_entity_in_a_deck_is_never_resolved(tmp_path: Path):
    from tests.test_formats_spreadsheet import with_external_entity

    secret = tmp_path / "secret.txt"
    secret.write_text("TOP-SECRET-OUTSIDE-DOCS")
    docs = tmp_path / "docs"
    make_deck(docs / "plain.pptx")
    raw = with_external_entity(
        (docs / "plain.pptx").read_bytes(), "ppt/slides/slide1.xml", b"Hold the button", secret
    )
    (docs / "plain.pptx").unlink()
    (docs / "xxe.pptx").write_bytes(raw)

    knowledge = load_knowledge_base(docs, extra_suffixes=PPTX)

    assert "TOP-SECRET" not in " ".join(d.text for d in knowledge.documents)
    assert knowledge.documents[0].source == "xxe.pptx#slide=1"  # the entity dropped, not read
