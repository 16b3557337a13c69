"""A store builds the HTTP client of its LLM once per ``llm:`` block, not per search or connect.

Rasa calls ``connect()`` before every search. While the index cannot be opened (an unreachable
embedding service), every such connect tries again; each attempt used to build a new LLM, with
a new HTTP client (a TLS context, about 30 ms of CPU, and a pool of connections that was never
closed). These tests count the clients built and check that a replaced one is closed, but
only once the searches that started on it (other conversations, run concurrently) are done:
they complete with its answers instead of falling back.
"""

from __future__ import annotations

import asyncio
import threading
import time
from pathlib import Path
from types import SimpleNamespace
from typing import Any

import pytest
from rasa.core.information_retrieval import InformationRetrievalException

from rasa_context_retrieval.conversation import Conversation
from rasa_context_retrieval.llm import client as llm_client
from rasa_context_retrieval.llm.client import LLMUnavailable, RetrievalLLM
from rasa_context_retrieval.store import ContextRetrieval
from tests.fake_openai import FakeOpenAI, Reply, fake_openai_fixture  # noqa: F401
from tests.test_index_persistence import HashingEmbedder, make_docs
from tests.test_startup import endpoint, state

# One event loop for all LLM tests, as in an application: litellm caches HTTP clients per loop.
pytestmark = pytest.mark.asyncio(loop_scope="session")

SEARCHES = 5
CLOSE_WAIT_SECONDS = 10.0
"""How long a test waits for a client to be closed on the LLM loop (it takes milliseconds)."""
IN_FLIGHT_SECONDS = 1.0
"""How long the LLM takes to answer a search that is in flight while the block changes."""


class UnreachableEmbedder(HashingEmbedder):
    """An embedding service that is down until ``up`` is set."""

    up = False

    def embed(self, texts: list[str]) -> SimpleNamespace:
        if not self.up:
            raise ConnectionError("embedding service unreachable")
        return super().embed(texts)


@pytest.fixture
def built_clients(monkeypatch: pytest.MonkeyPatch) -> list[Any]:
    """Every capped HTTP client the LLMs build, in order."""
    built: list[Any] = []
    real = llm_client.capped_openai_client

    def counted(*args: Any, **kwargs: Any) -> Any:
        built.append(real(*args, **kwargs))
        return built[-1]

    monkeypatch.setattr(llm_client, "capped_openai_client", counted)
    return built


def llm_endpoint(docs: Path, fake: FakeOpenAI, **llm: Any) -> Any:
    return endpoint(docs, rewrite="llm", llm=fake.llm_config(**llm))


def wait_until_closed(client: Any) -> bool:
    deadline = time.monotonic() + CLOSE_WAIT_SECONDS
    while not client.is_closed() and time.monotonic() < deadline:
        time.sleep(0.01)
    return client.is_closed()


async def test_searches_while_the_index_cannot_open_build_one_llm_client(
    tmp_path: Path, fake_openai: FakeOpenAI, built_clients: list[Any]
) -> None:
    embedder = UnreachableEmbedder()
    docs = make_docs(tmp_path, 3)
    store = ContextRetrieval(embeddings=embedder)
    for _ in range(SEARCHES):
        store.connect(llm_endpoint(docs, fake_openai))  # as Rasa does before every search
        with pytest.raises(InformationRetrievalException):
            await store.search("", state("Question 1 v1?"), 0.0)

    embedder.up = True
    store.connect(llm_endpoint(docs, fake_openai))
    fake_openai.reply("Question 1 v1")
    conversation = state("and the answer?")
    conversation["events"].insert(0, {"event": "user", "text": "Question 1 v1?"})
    for _ in range(SEARCHES):
        store.connect(llm_endpoint(docs, fake_openai))
        result = await store.search("", conversation, 0.0)
        assert result.results

    assert fake_openai.call_count >= 1, "the follow-up was rewritten by the LLM"
    assert len(built_clients) == 1
    assert not built_clients[0].is_closed()


async def test_a_new_llm_block_closes_the_client_of_the_one_it_replaces(
    tmp_path: Path, fake_openai: FakeOpenAI, built_clients: list[Any]
) -> None:
    embedder = UnreachableEmbedder()
    embedder.up = True
    docs = make_docs(tmp_path, 3)
    store = ContextRetrieval(embeddings=embedder)
    store.connect(llm_endpoint(docs, fake_openai))
    store.connect(llm_endpoint(docs, fake_openai, timeout=5))

    assert len(built_clients) == 2
    assert wait_until_closed(built_clients[0]), "the replaced block's connections are closed"
    assert not built_clients[1].is_closed()

    store.connect(endpoint(docs))  # no llm: block any more
    assert wait_until_closed(built_clients[1])


async def test_a_closed_llm_falls_back_instead_of_sending(
    fake_openai: FakeOpenAI, built_clients: list[Any]
) -> None:
    llm = RetrievalLLM.from_config(fake_openai.llm_config())
    fake_openai.reply("ok")
    assert await llm.complete("hi", timeout=5) == "ok"
    llm.close()
    assert wait_until_closed(built_clients[0])

    with pytest.raises(LLMUnavailable):
        await llm.complete("hi again", timeout=5)
    assert fake_openai.call_count == 1


async def search_while_the_block_changes(
    tmp_path: Path, fake: FakeOpenAI, **llm_features: Any
) -> Any:
    """The result of a follow-up searched while its first LLM call is out and another
    conversation's ``connect()`` changes the ``llm:`` block meanwhile."""
    docs = make_docs(tmp_path, 3)
    store = ContextRetrieval(embeddings=HashingEmbedder())
    store.connect(endpoint(docs, rewrite="llm", llm=fake.llm_config(), **llm_features))
    await store.search("", state("Question 1 v1?"), 0.0)  # the index is open
    fake.reset()
    fake.reply(Reply("Question 2 v1", delay=IN_FLIGHT_SECONDS), "refund rules")
    conversation = state("and the answer?")
    conversation["events"].insert(0, {"event": "user", "text": "Question 1 v1?"})

    in_flight = asyncio.create_task(store.search("", conversation, 0.0))
    while fake.call_count == 0:  # the search now waits for the LLM's answer
        await asyncio.sleep(0.01)
    changed = fake.llm_config(timeout=5)
    store.connect(endpoint(docs, rewrite="llm", llm=changed, **llm_features))
    return await in_flight


async def test_a_search_waiting_for_the_llm_completes_when_the_block_changes(
    tmp_path: Path, fake_openai: FakeOpenAI, built_clients: list[Any]
) -> None:
    result = await search_while_the_block_changes(tmp_path, fake_openai)

    assert result.metadata["standalone_query"] == "Question 2 v1", "the LLM's answer was used"
    assert wait_until_closed(built_clients[0]), "the replaced client is closed once unused"
    assert not built_clients[1].is_closed()


async def test_a_search_keeps_the_replaced_llm_for_every_call_of_its_plan(
    tmp_path: Path, fake_openai: FakeOpenAI, built_clients: list[Any]
) -> None:
    result = await search_while_the_block_changes(tmp_path, fake_openai, multi_query=1)

    assert result.metadata["standalone_query"] == "Question 2 v1"
    assert result.metadata["paraphrases"] == ["refund rules"], "asked after the block changed"
    assert fake_openai.call_count == 2
    assert wait_until_closed(built_clients[0])


async def test_a_search_that_started_before_the_block_changed_plans_on_its_own_llm(
    tmp_path: Path,
    fake_openai: FakeOpenAI,
    built_clients: list[Any],
    monkeypatch: pytest.MonkeyPatch,
) -> None:
    """The block changes while the search still reads its tracker, before any LLM call."""
    docs = make_docs(tmp_path, 3)
    store = ContextRetrieval(embeddings=HashingEmbedder())
    store.connect(llm_endpoint(docs, fake_openai))
    await store.search("", state("Question 1 v1?"), 0.0)  # the index is open
    fake_openai.reset()
    fake_openai.reply("Question 2 v1")
    reading, resume = threading.Event(), threading.Event()
    read_tracker = Conversation.from_tracker_state

    def paused(*args: Any, **kwargs: Any) -> Conversation:
        reading.set()
        resume.wait(CLOSE_WAIT_SECONDS)
        return read_tracker(*args, **kwargs)

    monkeypatch.setattr(Conversation, "from_tracker_state", paused)
    conversation = state("and the answer?")
    conversation["events"].insert(0, {"event": "user", "text": "Question 1 v1?"})

    in_flight = asyncio.create_task(store.search("", conversation, 0.0))
    assert await asyncio.to_thread(reading.wait, CLOSE_WAIT_SECONDS)
    store.connect(llm_endpoint(docs, fake_openai, timeout=5))
    resume.set()
    result = await in_flight

    assert result.metadata["standalone_query"] == "Question 2 v1", "the LLM's answer was used"
    assert wait_until_closed(built_clients[0])
