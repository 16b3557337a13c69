"""The console's session reads the assistant it is pointed at, even beside another one.

``eval`` over several knowledge bases, or a notebook that opens two assistants, runs in one
process; each folder's ``endpoints.yml`` must give its own ``vector_store`` block.
"""

from __future__ import annotations

from pathlib import Path

import pytest

from rasa_context_retrieval.assistant import ConsoleSession
from tests.test_preflight_check import write_assistant


def test_two_assistants_with_the_same_endpoints_file_name_each_get_their_own_settings(
    tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    monkeypatch.setenv("OPENAI_API_KEY", "never-called")  # the default embedder is only built
    sessions = {}
    for top_k in (3, 7):
        folder = tmp_path / f"assistant-{top_k}"
        folder.mkdir()
        write_assistant(folder, store={"top_k": top_k})
        monkeypatch.chdir(folder)
        sessions[top_k] = ConsoleSession("config.yml", "endpoints.yml")

    assert sessions[3].endpoint.kwargs["top_k"] == 3
    assert sessions[7].endpoint.kwargs["top_k"] == 7
    assert sessions[7].endpoint.kwargs["docs"] == str(tmp_path / "assistant-7" / "docs")


def test_an_endpoints_file_without_a_vector_store_block_is_refused(
    tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    monkeypatch.setenv("OPENAI_API_KEY", "never-called")
    write_assistant(tmp_path)
    (tmp_path / "endpoints.yml").write_text("action_endpoint:\n  url: http://localhost:5055\n")
    monkeypatch.chdir(tmp_path)

    with pytest.raises(ValueError, match="has no vector_store: block"):
        ConsoleSession("config.yml", "endpoints.yml")
