"""A running assistant serves what the documents say now, not what they said at start-up.

Change detection looks at content, not names, sizes and modification times, and a document that
changed but cannot be read any more is withdrawn, even when the rebuild as a whole fails.
"""

from __future__ import annotations

import asyncio
import os
import time
from pathlib import Path
from typing import Any

import pytest
from rasa.utils.endpoints import EndpointConfig

from rasa_context_retrieval.faiss.index import IndexDirectory
from rasa_context_retrieval.store import ContextRetrieval
from tests.store_support import CountingEmbedder, connected_store, tracker_state

pytestmark = pytest.mark.asyncio(loop_scope="session")

REFRESH_WAIT_SECONDS = 20


def write(path: Path, text: str) -> None:
    path.write_text(text, encoding="utf-8")


def endpoint(docs: Path, **settings: Any) -> EndpointConfig:
    return EndpointConfig(
        docs=str(docs),
        index_path=str(docs.parent / "index"),
        slot_filters={"plan": "plan"},
        refresh_seconds=0.01,
        **settings,
    )


async def sources(store: ContextRetrieval, config: EndpointConfig, question: str, plan: str) -> set:
    store.connect(config)
    result = await store.search("", tracker_state(("user", question), plan=plan), 0.0)
    return {found.metadata["source"] for found in result.results}


async def wait_until(check: Any) -> bool:
    deadline = time.monotonic() + REFRESH_WAIT_SECONDS
    while time.monotonic() < deadline:
        if await check():
            return True
        await asyncio.sleep(0.05)
    return False


@pytest.fixture
def docs(tmp_path: Path) -> Path:
    folder = tmp_path / "docs"
    folder.mkdir()
    write(folder / "sync.md", "---\nplan: free\n---\nQ: How does sync work?\nA: Automatically.\n")
    write(folder / "refunds.md", "---\nplan: free\n---\nQ: Can I get a refund?\nA: Yes, 14 days.\n")
    return folder


async def test_a_same_size_edit_with_its_mtime_restored_is_picked_up(docs: Path, embedder: Any):
    config = endpoint(docs)
    store = connected_store(embedder, config)
    assert "sync.md" in await sources(store, config, "how does sync work", "free")
    path = docs / "sync.md"
    before = path.stat()
    write(path, path.read_text(encoding="utf-8").replace("plan: free", "plan: plus"))
    os.utime(path, ns=(before.st_atime_ns, before.st_mtime_ns))
    assert path.stat().st_size == before.st_size

    async def rescoped() -> bool:
        return "sync.md" in await sources(store, config, "how does sync work", "plus")

    assert await wait_until(rescoped), "the edit was never picked up"
    assert "sync.md" not in await sources(store, config, "how does sync work", "free")


async def test_a_document_that_becomes_unreadable_is_withdrawn(docs: Path, embedder: Any):
    config = endpoint(docs)
    store = connected_store(embedder, config)
    (docs / "sync.md").write_bytes(b"\xff\xfe not UTF-8 any more")

    async def reported() -> bool:
        await sources(store, config, "how does sync work", "free")
        return "sync.md" in {problem.file for problem in store.engine.live.problems}

    assert await wait_until(reported)
    assert "sync.md" not in await sources(store, config, "how does sync work", "free")
    assert "refunds.md" in await sources(store, config, "can I get a refund", "free")


async def test_when_the_rebuild_fails_changed_documents_are_withdrawn_and_the_rest_served(
    docs: Path, embedder: Any
):
    counting = CountingEmbedder(embedder)
    config = endpoint(docs, query_embedder="rasa")  # Rasa's client embeds documents too
    store = connected_store(counting, config)
    assert "sync.md" in await sources(store, config, "how does sync work", "free")
    await sources(store, config, "can I get a refund", "free")  # cache the query vectors
    counting.fail = True  # the rebuild cannot embed the edited text
    write(docs / "sync.md", "---\nplan: free\n---\nQ: How does sync work?\nA: It is paused.\n")

    async def withdrawn() -> bool:
        return "sync.md" not in await sources(store, config, "how does sync work", "free")

    assert await wait_until(withdrawn), "the edited document kept being served"
    assert "refunds.md" in await sources(store, config, "can I get a refund", "free")


async def test_when_nothing_readable_is_left_nothing_is_served(tmp_path: Path, embedder: Any):
    docs = tmp_path / "docs"
    docs.mkdir()
    write(docs / "only.md", "---\nplan: free\n---\nQ: How does sync work?\nA: Automatically.\n")
    config = endpoint(docs)
    store = connected_store(embedder, config)
    (docs / "only.md").write_bytes(b"\0binary now")

    async def empty() -> bool:
        return not await sources(store, config, "how does sync work", "free")

    assert await wait_until(empty)


async def test_a_same_size_edit_is_withheld_from_the_moment_it_is_seen_until_rebuilt(
    docs: Path, embedder: Any
):
    """The rebuild waits here for the build lock (another process building the same index): the
    edited document is served neither with its old attributes nor its new ones meanwhile."""
    store = ContextRetrieval(embeddings=embedder)
    config = endpoint(docs)
    assert "sync.md" in await sources(store, config, "how does sync work", "free")
    path = docs / "sync.md"
    before = path.stat()
    write(path, path.read_text(encoding="utf-8").replace("plan: free", "plan: plus"))
    os.utime(path, ns=(before.st_atime_ns, before.st_mtime_ns))
    with IndexDirectory(docs.parent / "index").lock():

        async def withheld() -> bool:
            return "sync.md" not in await sources(store, config, "how does sync work", "free")

        assert await wait_until(withheld), "the edited document kept being served as it was"
        for _ in range(20):  # and it stays withheld while the rebuild waits
            for plan in ("free", "plus"):
                assert "sync.md" not in await sources(store, config, "how does sync work", plan)
        assert "refunds.md" in await sources(store, config, "can I get a refund", "free")

    async def rebuilt() -> bool:
        return "sync.md" in await sources(store, config, "how does sync work", "plus")

    assert await wait_until(rebuilt), "the edit was never published"
    assert "sync.md" not in await sources(store, config, "how does sync work", "free")
