"""Ingestion: every readable document loads; each unreadable one is reported with its reason."""

from __future__ import annotations

import json
from pathlib import Path

from hypothesis import given, settings
from hypothesis import strategies as st

from rasa_context_retrieval.knowledge.chunking import chunk_documents
from rasa_context_retrieval.knowledge.loader import Document, content_digest, load_knowledge_base


def write(folder: Path, name: str, content: str | bytes) -> None:
    path = folder / name
    path.parent.mkdir(parents=True, exist_ok=True)
    if isinstance(content, bytes):
        path.write_bytes(content)
    else:
        path.write_text(content, encoding="utf-8")


def test_good_files_load_and_bad_ones_are_reported_while_the_rest_still_loads(tmp_path: Path):
    write(
        tmp_path,
        "plans/premium.md",
        "---\nplan: [premium]\nupdated: 2024-03-01\n---\nQ: How much storage?\nA: 2 TB.\n",
    )
    write(tmp_path, "notes.txt", "Plain text without front matter.")
    write(
        tmp_path,
        "faq.jsonl",
        json.dumps({"text": "Q: Refunds?\nA: Within 14 days.", "metadata": {"region": ["eu"]}})
        + "\n{broken json\n"
        + json.dumps({"metadata": {}})
        + "\n",
    )
    write(tmp_path, "broken.md", "---\nplan: [premium\n---\nBody")
    write(tmp_path, "latin1.txt", "caf\xe9 au lait\nsecond line \xff".encode("latin-1"))
    write(tmp_path, "image.md", b"\x89PNG\r\n\x1a\n\0\0\0")
    write(tmp_path, "empty.md", "   \n")
    write(tmp_path, ".hidden/secret.md", "never indexed")

    knowledge = load_knowledge_base(tmp_path)

    sources = sorted(document.source for document in knowledge.documents)
    assert sources == ["faq.jsonl:1", "notes.txt", "plans/premium.md"]
    premium = next(d for d in knowledge.documents if d.source == "plans/premium.md")
    assert premium.metadata == {"plan": ["premium"], "updated": "2024-03-01"}
    problems = {(p.file, p.line): p.reason for p in knowledge.problems}
    assert "broken JSON" in problems[("faq.jsonl", 2)]
    assert '"text"' in problems[("faq.jsonl", 3)]
    assert "front matter" in problems[("broken.md", 2)]
    assert "UTF-8" in problems[("latin1.txt", 1)]
    assert "binary" in problems[("image.md", None)]
    assert "empty" in problems[("empty.md", None)]
    assert len(knowledge.problems) == 6


def test_qa_entries_become_one_chunk_each_with_the_answer_and_unchanged_metadata():
    document = Document(
        "plans.md",
        "Q: How much storage does Premium include?\nA: 2 TB of storage.\n\n"
        "Q: Can I share folders?\nA: Yes, with up to\n10 people.\n",
        {"plan": ["premium"], "category": "plans"},
    )
    chunks = chunk_documents([document], chunk_size=1000, chunk_overlap=100)
    assert [chunk.metadata["answer"] for chunk in chunks] == [
        "2 TB of storage.",
        "Yes, with up to\n10 people.",
    ]
    for chunk in chunks:
        assert chunk.metadata["plan"] == ["premium"]
        assert chunk.metadata["category"] == "plans"
        assert chunk.metadata["source"] == "plans.md"
        assert chunk.text.startswith("Q: ")


def test_the_headings_above_qa_entries_head_each_entry_and_are_no_chunk_of_their_own():
    """A heading alone matched a short reply ("plus") better than the entry that answers it, and
    ranked first its answer was the heading."""
    document = Document(
        "deposits-plus.md",
        "# Deposits for Plus members\n\nQ: How much is the deposit?\nA: £200 for groups A to D."
        "\n\n## Card holds\n\nQ: When is it released?\nA: Within 24 hours of the return.\n",
    )
    chunks = chunk_documents([document], chunk_size=1000, chunk_overlap=100)
    assert [chunk.text for chunk in chunks] == [
        "# Deposits for Plus members\n\nQ: How much is the deposit?\nA: £200 for groups A to D.",
        "# Deposits for Plus members\n\n## Card holds\n\n"
        "Q: When is it released?\nA: Within 24 hours of the return.",
    ]
    assert [chunk.metadata["answer"] for chunk in chunks] == [
        "£200 for groups A to D.",
        "Within 24 hours of the return.",
    ]


def test_every_prose_piece_is_headed_by_the_document_title():
    sections = "\n\n".join(f"## Part {n}\n\n" + "Offline files sync later. " * 12 for n in range(6))
    document = Document("guide.md", f"# Offline files on Android\n\n{sections}")
    chunks = chunk_documents([document], chunk_size=400, chunk_overlap=40)
    assert len(chunks) > 3
    for chunk in chunks:
        assert chunk.text.startswith("# Offline files on Android\n\n")
        assert len(chunk.metadata["answer"]) <= 400  # the title comes on top of a piece
    later = chunks[-1]
    assert later.metadata["answer"] == later.text.removeprefix("# Offline files on Android\n\n")


def test_long_prose_is_split_and_every_piece_keeps_the_document_metadata():
    text = "\n\n".join(f"Paragraph {n} about offline files and sync. " * 8 for n in range(30))
    chunks = chunk_documents(
        [Document("guide.md", text, {"region": ["eu"]})], chunk_size=400, chunk_overlap=40
    )
    assert len(chunks) > 10
    assert all(len(chunk.text) <= 400 for chunk in chunks)
    for chunk in chunks:
        assert chunk.metadata == {"region": ["eu"], "source": "guide.md", "answer": chunk.text}


def test_a_document_that_names_its_own_source_keeps_it():
    chunks = chunk_documents(
        [Document("a.md", "text", {"source": "https://example.org/a"})], 500, 0
    )
    assert chunks[0].metadata["source"] == "https://example.org/a"


def test_chunk_ids_are_stable_and_change_with_the_text():
    first = chunk_documents([Document("a.md", "Q: One?\nA: Yes.")], 500, 50)
    again = chunk_documents([Document("a.md", "Q: One?\nA: Yes.")], 500, 50)
    edited = chunk_documents([Document("a.md", "Q: One?\nA: No.")], 500, 50)
    assert first[0].chunk_id == again[0].chunk_id != edited[0].chunk_id


def test_content_digest_follows_content_not_timestamps(tmp_path: Path):
    write(tmp_path, "a.md", "one")
    before = content_digest(tmp_path)
    write(tmp_path, "a.md", "one")
    assert content_digest(tmp_path) == before
    write(tmp_path, "b.md", "two")
    assert content_digest(tmp_path) != before


@settings(max_examples=150, deadline=None)
@given(st.binary(max_size=400))
def test_no_file_content_can_break_loading(tmp_path_factory, content: bytes):
    folder = tmp_path_factory.mktemp("kb")
    write(folder, "random.md", content)
    write(folder, "random.jsonl", content)
    write(folder, "good.md", "Q: Still here?\nA: Yes.")
    knowledge = load_knowledge_base(folder)
    assert "good.md" in [document.source for document in knowledge.documents]
    reported = {problem.file for problem in knowledge.problems}
    loaded = {document.source.split(":")[0] for document in knowledge.documents}
    assert {"random.md", "random.jsonl"} <= reported | loaded
    chunk_documents(knowledge.documents, 300, 30)
