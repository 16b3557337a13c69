"""Start-up never blocks the event loop: connect() returns at once, searches wait for the index.

Rasa calls ``connect()`` synchronously inside its async ``predict``; a build from ``docs`` there
would freeze every conversation for as long as embedding takes. These tests hold the build at a
gate (an embedder that waits for an event) instead of timing it.
"""

from __future__ import annotations

import asyncio
import os
import subprocess
import sys
import threading
from pathlib import Path
from types import SimpleNamespace

import pytest
from rasa.core.information_retrieval import InformationRetrievalException
from rasa.utils.endpoints import EndpointConfig
from structlog.testing import capture_logs

from rasa_context_retrieval.config import ConfigurationError
from rasa_context_retrieval.store import ContextRetrieval
from tests.test_index_persistence import HashingEmbedder, make_docs

GATE_TIMEOUT_SECONDS = 60.0
"""How long the gated build waits to be let through before it fails the test (a connect()
that waits for the build would otherwise wait forever)."""


class GatedEmbedder(HashingEmbedder):
    """Embeds only once ``gate`` is set; ``entered`` says the build has reached the embedder."""

    def __init__(self) -> None:
        super().__init__()
        self.gate = threading.Event()
        self.entered = threading.Event()
        self.fail: Exception | None = None

    def embed(self, texts: list[str]) -> SimpleNamespace:
        self.entered.set()
        if not self.gate.wait(GATE_TIMEOUT_SECONDS):
            raise TimeoutError("the build was never let through")
        if self.fail is not None:
            raise self.fail
        return super().embed(texts)


def endpoint(docs: Path, **overrides: object) -> EndpointConfig:
    return EndpointConfig(
        docs=str(docs),
        index_path=str(docs.parent / "index"),
        query_embedder="rasa",
        refresh_seconds=0,
        **overrides,
    )


def state(text: str) -> dict[str, object]:
    return {"events": [{"event": "user", "text": text}], "latest_message": {"text": text}}


async def entered(embedder: GatedEmbedder) -> None:
    """Until the build reaches the embedder (waited for off the loop)."""
    assert await asyncio.to_thread(embedder.entered.wait, GATE_TIMEOUT_SECONDS)


async def test_connect_returns_while_the_first_build_is_still_running(tmp_path: Path):
    embedder = GatedEmbedder()
    store = ContextRetrieval(embeddings=embedder)
    store.connect(endpoint(make_docs(tmp_path, 5)))  # the gate is shut: a blocking build hangs
    await entered(embedder)
    assert not embedder.gate.is_set()
    embedder.gate.set()
    assert len(await asyncio.to_thread(lambda: store.engine.live)) == 5


async def test_a_search_during_the_build_waits_for_it_and_answers(tmp_path: Path):
    embedder = GatedEmbedder()
    store = ContextRetrieval(embeddings=embedder)
    store.connect(endpoint(make_docs(tmp_path, 5), startup_wait_seconds=120))
    search = asyncio.create_task(store.search("", state("Question 3 v1?"), 0.0))
    await entered(embedder)
    ticks = 0
    for _ in range(5):  # the loop keeps running other work while the search waits
        await asyncio.sleep(0)
        ticks += 1
    assert not search.done() and ticks == 5
    embedder.gate.set()
    result = await search
    assert result.results and result.results[0].metadata["source"] == "doc3.md"


async def test_a_search_past_the_bound_answers_nothing_and_says_why(tmp_path: Path):
    embedder = GatedEmbedder()
    store = ContextRetrieval(embeddings=embedder)
    store.connect(endpoint(make_docs(tmp_path, 5), startup_wait_seconds=0.05))
    try:
        with capture_logs() as logs:
            result = await store.search("", state("Question 3 v1?"), 0.0)
        assert result.results == []
        [line] = [log for log in logs if log["event"] == "context_retrieval.search.index_not_ready"]
        assert (
            line["log_level"] == "warning" and "rasa-context-retrieval index" in line["event_info"]
        )
    finally:
        embedder.gate.set()
    await asyncio.to_thread(lambda: store.engine)  # the build went on
    answered = await store.search("", state("Question 3 v1?"), 0.0)
    assert answered.results[0].metadata["source"] == "doc3.md"


async def test_a_build_error_still_surfaces_at_the_search_and_in_the_log(tmp_path: Path):
    embedder = GatedEmbedder()
    embedder.fail = ConnectionError("embedding service unreachable")
    embedder.gate.set()
    store = ContextRetrieval(embeddings=embedder)
    with capture_logs() as logs:
        store.connect(endpoint(make_docs(tmp_path, 5)))
        with pytest.raises(InformationRetrievalException, match="unreachable"):
            await store.search("", state("Question 3 v1?"), 0.0)
    assert any(
        log["event"] == "context_retrieval.connect.failed" and "unreachable" in log["error"]
        for log in logs
    )
    embedder.fail = None  # the next connect() tries again
    store.connect(endpoint(make_docs(tmp_path, 5)))
    result = await store.search("", state("Question 3 v1?"), 0.0)
    assert result.results[0].metadata["source"] == "doc3.md"


def test_a_bad_wait_bound_fails_connect_and_names_the_key(tmp_path: Path):
    with pytest.raises(
        ConfigurationError, match="vector_store.startup_wait_seconds: Input should be greater"
    ):
        ContextRetrieval(embeddings=HashingEmbedder()).connect(
            endpoint(make_docs(tmp_path, 1), startup_wait_seconds=-1)
        )


def test_the_build_imports_nothing_the_store_did_not_import_already():
    """The chunker's text splitter (about a second of LangChain imports) is loaded with the store,
    before any conversation: imported on the build thread, it stalled the event loop 1.3 s."""
    probe = (
        "import sys; import rasa_context_retrieval.store; "
        "print('langchain_text_splitters' in sys.modules)"
    )
    root = Path(__file__).resolve().parent.parent
    done = subprocess.run(
        [sys.executable, "-c", probe],
        capture_output=True,
        text=True,
        cwd=root,
        env={**os.environ, "PYTHONPATH": str(root)},
        check=True,
    )
    assert done.stdout.strip() == "True"
