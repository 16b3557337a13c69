"""What ``ask`` shows a new user once the setup is right: why nothing was found, which file
answered, and a filter stated once (these load the embedding model, once for the module)."""

from __future__ import annotations

from pathlib import Path

import pytest

from rasa_context_retrieval.console import main
from tests.test_preflight_check import DOCUMENTS, write_assistant

CARD_URL = "https://bank.example/cards/fees"


@pytest.fixture(scope="module")
def assistant(tmp_path_factory: pytest.TempPathFactory, model_path: Path) -> Path:
    folder = tmp_path_factory.mktemp("bank")
    documents = {
        **DOCUMENTS,
        "cards/credit-card-fees.md": f"---\nproduct: credit_card\nurl: {CARD_URL}\n---\n"
        "Q: What fees does the credit card have?\nA: No annual fee; 2% abroad.",
    }
    embeddings = {"provider": "huggingface_local", "model": str(model_path)}
    return write_assistant(folder, policy={"embeddings": embeddings}, documents=documents)


def ask(assistant: Path, capsys: pytest.CaptureFixture[str], *arguments: str) -> str:
    config, endpoints = str(assistant / "config.yml"), str(assistant / "endpoints.yml")
    assert main(["--config", config, "--endpoints", endpoints, "ask", *arguments]) == 0
    return capsys.readouterr().out


def test_a_slot_value_no_document_has_is_told_apart_from_a_weak_match(assistant, capsys):
    output = ask(assistant, capsys, "What fees does the card have?", "--slot", "product=saving")
    assert "the slot filter matches no document" in output
    assert "none above the threshold" not in output


def test_a_document_cited_by_its_url_shows_its_file_too(assistant, capsys):
    output = ask(assistant, capsys, "What fees does the credit card have?")
    assert f"cards/credit-card-fees.md ({CARD_URL})" in output


def test_a_slot_and_an_earlier_turn_that_agree_print_the_condition_once(assistant, capsys):
    output = ask(
        assistant,
        capsys,
        "and abroad?",
        "--history",
        "user:What fees does the credit_card have?",
        "--slot",
        "product=credit_card",
    )
    filter_line = next(line for line in output.splitlines() if line.startswith("filter"))
    assert filter_line.count('"credit_card"') == 1, output
