"""FAQ tables in CSV: one Q/A chunk per row with its answer, other columns as attributes."""

from __future__ import annotations

from pathlib import Path

from rasa_context_retrieval.knowledge.chunking import chunk_documents
from rasa_context_retrieval.knowledge.loader import load_knowledge_base

CSV = (".csv",)


def test_each_row_is_one_entry_with_its_answer_and_attributes(tmp_path: Path):
    (tmp_path / "faq.csv").write_text(
        "Question,Answer,plan\n"
        'How do I pause sync?,"Tap Pause, then confirm.",free\n'
        "Empty answer,,free\n"
        "Is =1+1 run?,=1+1,premium\n",
        encoding="utf-8",
    )
    assert load_knowledge_base(tmp_path).documents == []  # opt-in only

    knowledge = load_knowledge_base(tmp_path, extra_suffixes=CSV)
    chunks = chunk_documents(knowledge.documents, 500, 50)

    assert [(c.metadata["source"], c.metadata["answer"], c.metadata["plan"]) for c in chunks] == [
        ("faq.csv:2", "Tap Pause, then confirm.", "free"),
        ("faq.csv:4", "=1+1", "premium"),
    ]
    assert chunks[0].text == "Q: How do I pause sync?\nA: Tap Pause, then confirm."


def test_bad_tables_are_skipped_with_a_reason(tmp_path: Path):
    (tmp_path / "good.csv").write_text("question,answer\nRefunds?,Within 30 days.\n")
    (tmp_path / "columns.csv").write_text("q,a\nRefunds?,Within 30 days.\n")
    (tmp_path / "latin1.csv").write_bytes("question,answer\ncafé?,oui\n".encode("latin-1"))
    (tmp_path / "misspelled.csv").write_text("question,answer,Plan\nA?,B.,premium\n")

    knowledge = load_knowledge_base(tmp_path, ["plan"], extra_suffixes=CSV)
    reasons = {problem.file: problem.reason for problem in knowledge.problems}

    assert [d.source for d in knowledge.documents] == ["good.csv:2"]
    assert "no 'question' and no 'answer' column" in reasons["columns.csv"]
    assert "not UTF-8" in reasons["latin1.csv"]
    assert "'Plan' is not the access attribute 'plan'" in reasons["misspelled.csv"]
