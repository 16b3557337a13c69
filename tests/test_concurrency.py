"""One event loop serves every conversation: a search must not stall it, and searches that run
while the index is being replaced must each see one whole index, never a mix or an error.
"""

from __future__ import annotations

import asyncio
import gc
import threading
import time
from pathlib import Path
from typing import Any

import pytest
from rasa.utils.endpoints import EndpointConfig

from rasa_context_retrieval import long_lived
from rasa_context_retrieval.config import StoreConfig
from rasa_context_retrieval.conversation import Conversation, Turn
from rasa_context_retrieval.engine.search import KnowledgeSearch
from tests.store_support import connected_store, tracker_state

PLANS = ("free", "premium")
BLOCKING_EMBED_SECONDS = 0.05
QUESTIONS = ("refund", "storage", "offline files", "reset password", "price", "devices")


class SlowEmbedder:
    """The real embedder behind a blocking delay, like a remote embedding API or a big model."""

    def __init__(self, inner: Any, delay: float) -> None:
        self.inner, self.delay = inner, delay
        self.model, self.config = inner.model, inner.config
        self.threads: list[int] = []
        """The thread of each embedding call."""

    def embed(self, texts: list[str]) -> Any:
        self.threads.append(threading.get_ident())
        time.sleep(self.delay)
        return self.inner.embed(texts)


def write_docs(folder: Path, version: str) -> Path:
    docs = folder / "docs"
    docs.mkdir(parents=True, exist_ok=True)
    for plan in PLANS:
        for question in QUESTIONS:
            (docs / f"{plan}-{question.replace(' ', '-')}.md").write_text(
                f"---\nplan: [{plan}]\n---\nQ: {question}?\nA: {version} answer about "
                f"{question} for {plan}.\n",
                encoding="utf-8",
            )
    return docs


def endpoint(docs: Path, **overrides: Any) -> EndpointConfig:
    return EndpointConfig(
        docs=str(docs),
        index_path=str(docs.parent / "index"),
        slot_filters={"plan": "plan"},
        metadata_fields=[{"name": "plan", "type": "list[string]", "values": list(PLANS)}],
        **overrides,
    )


async def test_searches_embed_off_the_event_loop_so_it_keeps_serving(tmp_path: Path, embedder: Any):
    """A blocking embedding call (a remote API, a big model) runs on a worker thread, never on
    the loop that serves every conversation. (The loop's lag is measured by bench/loop_lag.py.)"""
    slow = SlowEmbedder(embedder, 0.0)
    # query_embedder rasa: the slow client embeds the queries too
    docs = write_docs(tmp_path, "v1")
    store = connected_store(slow, endpoint(docs, refresh_seconds=0, query_embedder="rasa"))
    slow.delay = BLOCKING_EMBED_SECONDS
    slow.threads.clear()
    results = await asyncio.gather(
        *(
            store.search("", tracker_state(("user", f"{q} question {n}"), plan="free"), 0.0)
            for n, q in enumerate(QUESTIONS)
        )
    )
    assert all(result.results for result in results)
    assert len(slow.threads) >= len(QUESTIONS), "each search embedded a new query"
    assert threading.get_ident() not in slow.threads, "an embedding call ran on the event loop"


class RecordingState(dict[str, Any]):
    """A tracker state that records the thread of each read."""

    threads: list[int]

    def get(self, key: str, default: Any = None) -> Any:
        self.threads.append(threading.get_ident())
        return super().get(key, default)


async def test_the_tracker_state_is_read_off_the_event_loop(tmp_path: Path, embedder: Any):
    """A tracker may hold hundreds of events; 200 conversations asking at once would read them
    all on the loop, back to back."""
    store = connected_store(embedder, endpoint(write_docs(tmp_path, "v1"), refresh_seconds=0))
    state = RecordingState(tracker_state(("user", "refund question"), plan="free"))
    state.threads = []

    result = await store.search("", state, 0.0)

    assert result.results
    assert state.threads, "the state was read"
    assert threading.get_ident() not in state.threads


async def test_a_block_changed_in_place_between_connects_is_a_new_configuration(
    tmp_path: Path, embedder: Any
):
    config = endpoint(write_docs(tmp_path, "v1"), refresh_seconds=0)
    store = connected_store(embedder, config)
    assert store.engine.config.top_k == 4

    config.kwargs["top_k"] = 2  # the same dict, changed
    store.connect(config)

    assert store.engine.config.top_k == 2


def test_what_start_up_loaded_is_frozen_once_on_the_opening_thread(
    tmp_path: Path, embedder: Any, monkeypatch: pytest.MonkeyPatch
):
    """The garbage collector's full collections skip what was alive when the first index
    opened (modules, models, the index): visiting them all held the event loop for up to 1.5 s
    under a burst of searches. It happens once per process, before the first search, on the
    thread that opened the index."""
    freezes: list[str] = []
    monkeypatch.setattr(long_lived, "_frozen", False)
    monkeypatch.setattr(gc, "freeze", lambda: freezes.append(threading.current_thread().name))
    docs = write_docs(tmp_path, "v1")

    connected_store(embedder, endpoint(docs, refresh_seconds=0))
    assert freezes == ["knowledge-open"], "frozen by the time the first search can run"
    connected_store(embedder, endpoint(docs, refresh_seconds=0))
    assert freezes == ["knowledge-open"], "a second store in the same process freezes nothing"


def conversation(text: str, plan: str) -> Conversation:
    return Conversation(turns=(Turn("user", text),), slots={"plan": plan})


async def test_searches_during_index_swaps_each_see_one_whole_index(tmp_path: Path, embedder: Any):
    config_v1 = StoreConfig.model_validate(
        {
            "docs": write_docs(tmp_path / "v1", "v1"),
            "index_path": tmp_path / "i1",
            "slot_filters": {"plan": "plan"},
        }
    )
    config_v2 = StoreConfig.model_validate(
        {"docs": write_docs(tmp_path / "v2", "v2"), "index_path": tmp_path / "i2"}
    )
    search = KnowledgeSearch.open(config_v1, embedder, progress=False)
    index_v1 = search.live.knowledge
    index_v2 = KnowledgeSearch.open(config_v2, embedder, progress=False).live.knowledge
    questions = [(q, plan) for q in QUESTIONS for plan in PLANS]
    expected = {}
    for index, version in ((index_v1, "v1"), (index_v2, "v2")):
        search.live.swap(index)
        for q, plan in questions:
            outcome = await search.search(conversation(q, plan))
            expected[(q, plan, version)] = [found.chunk.text for found in outcome.results]

    swapping = threading.Event()

    def swap_forever() -> None:
        while not swapping.is_set():
            search.live.swap(index_v2 if search.live.knowledge is index_v1 else index_v1)
            time.sleep(0.0005)

    swapper = threading.Thread(target=swap_forever, daemon=True)
    swapper.start()
    try:
        outcomes = await asyncio.gather(
            *(search.search(conversation(q, plan)) for q, plan in questions * 8)
        )
    finally:
        swapping.set()
        swapper.join()
    for (q, plan), outcome in zip(questions * 8, outcomes, strict=True):
        texts = [found.chunk.text for found in outcome.results]
        version = "v2" if texts and " v2 answer" in texts[0] else "v1"
        assert texts == expected[(q, plan, version)], "a search mixed two indexes"
        assert all(f"for {plan}." in text for text in texts), "a result escaped the slot filter"


async def test_many_concurrent_searches_while_a_background_refresh_publishes(
    tmp_path: Path, embedder: Any
):
    docs = write_docs(tmp_path, "v1")
    config = endpoint(docs, refresh_seconds=0.01)
    store = connected_store(embedder, config)
    edited = False
    seen_v2 = False
    failures: list[BaseException] = []

    async def conversation_loop(n: int) -> None:
        nonlocal seen_v2
        plan = PLANS[n % 2]
        for turn in range(12):
            store.connect(config)  # Rasa calls connect() before every search
            question = QUESTIONS[(n + turn) % len(QUESTIONS)]
            try:
                result = await store.search("", tracker_state(("user", question), plan=plan), 0.0)
            except Exception as error:  # collected: every search must succeed
                failures.append(error)
                continue
            assert all(r.metadata["plan"] == [plan] for r in result.results)
            seen_v2 |= any(" v2 answer" in r.text for r in result.results)
            await asyncio.sleep(0.02)

    async def editor() -> None:
        nonlocal edited
        await asyncio.sleep(0.1)
        write_docs(tmp_path, "v2")
        edited = True

    await asyncio.gather(editor(), *(conversation_loop(n) for n in range(30)))
    assert edited and not failures
    deadline = time.monotonic() + 30
    while not seen_v2 and time.monotonic() < deadline:
        store.connect(config)
        result = await store.search("", tracker_state(("user", "refund"), plan="free"), 0.0)
        seen_v2 = any(" v2 answer" in r.text for r in result.results)
        await asyncio.sleep(0.05)
    assert seen_v2, "the refreshed index was never picked up"
