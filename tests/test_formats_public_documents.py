"""With access_filters, the documents without an access attribute are counted at start-up and
listed by ``rasa-context-retrieval index --public``: a forgotten document is never served to
everyone unnoticed."""

from __future__ import annotations

from pathlib import Path
from typing import Any

import pytest
import structlog
import yaml
from structlog.testing import capture_logs

from rasa_context_retrieval.config import StoreConfig
from rasa_context_retrieval.console import main
from rasa_context_retrieval.engine.live_index import LiveIndex


@pytest.fixture(scope="module")
def docs(tmp_path_factory: pytest.TempPathFactory) -> Path:
    folder = tmp_path_factory.mktemp("public")
    (folder / "premium").mkdir()
    (folder / "premium/_attributes.yml").write_text("plan: premium\n")
    (folder / "premium/router.md").write_text("Reset the router by holding the button.\n")
    (folder / "free.md").write_text("---\nplan: free\n---\nThe free plan has 5 GB.\n")
    (folder / "hours.md").write_text("The front desk opens at eight.\n")
    (folder / "faq.jsonl").write_text(
        '{"text": "Q: Refunds?\\nA: Within 30 days."}\n'
        '{"text": "Q: Vault?\\nA: Staff only.", "metadata": {"plan": "staff"}}\n'
    )
    return folder


def open_index(docs: Path, tmp_path: Path, embedder: Any, **block: Any) -> tuple[LiveIndex, list]:
    config = StoreConfig.from_kwargs(
        {"docs": str(docs), "index_path": str(tmp_path / "index"), **block}
    )
    with capture_logs() as logs:
        live = LiveIndex.open(config, embedder, progress=False)
    return live, [log for log in logs if log["event"] == "knowledge_search.access.public_documents"]


def test_start_up_logs_how_many_documents_are_public(docs: Path, tmp_path: Path, embedder: Any):
    live, events = open_index(docs, tmp_path, embedder, access_filters={"plan": "plan"})

    assert live.public_sources() == ["faq.jsonl:1", "hours.md"]
    assert [(event["documents"], event["unattributed_documents"]) for event in events] == [
        (2, "public")
    ]
    assert "index --public" in events[0]["event_info"]


def test_nothing_is_logged_without_access_filters(docs: Path, tmp_path: Path, embedder: Any):
    live, events = open_index(docs, tmp_path, embedder)
    assert events == []
    assert live.public_sources() == []


def test_index_public_lists_them(
    docs: Path, tmp_path: Path, model_path: Path, capsys: pytest.CaptureFixture[str]
):
    policy = {
        "name": "EnterpriseSearchPolicy",
        "vector_store": {"type": "rasa_context_retrieval.ContextRetrieval"},
        "embeddings": {"provider": "huggingface_local", "model": str(model_path)},
    }
    (tmp_path / "config.yml").write_text(yaml.safe_dump({"policies": [policy]}))
    vector_store = {
        "type": "rasa_context_retrieval.ContextRetrieval",
        "docs": str(docs),
        "index_path": str(tmp_path / "index"),
        "access_filters": {"plan": "plan"},
    }
    (tmp_path / "endpoints.yml").write_text(yaml.safe_dump({"vector_store": vector_store}))
    files = [
        "--config",
        str(tmp_path / "config.yml"),
        "--endpoints",
        str(tmp_path / "endpoints.yml"),
    ]

    logging = structlog.get_config()  # the console configures logging for its own process
    try:
        assert main([*files, "index", "--public"]) == 0
    finally:
        structlog.configure(**logging)

    printed = capsys.readouterr().out
    assert "2 document(s) without an access attribute, served to every user:" in printed
    assert "\n  faq.jsonl:1\n  hours.md\n" in printed
    assert "premium/router.md" not in printed
