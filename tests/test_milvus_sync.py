"""A document re-scoped on disk stops reaching users who lost access: on the writer that saw the
change, on every replica, and on a replica started afterwards (a real Milvus server).

The writer withholds the changed document's chunks as soon as its refresh sees the change, before
rebuilding and syncing; the document comes back, with its new text and attributes, once the sync
is done. The rebuild is held here (by the embedding model, or by another writer holding the sync
lease) so that the moment between seeing the change and publishing it can be looked at.
"""

from __future__ import annotations

import asyncio
import threading
import time
import uuid
from collections.abc import Awaitable, Callable, Iterator
from dataclasses import dataclass
from pathlib import Path
from typing import Any

import pytest
from pymilvus import MilvusClient
from rasa.utils.endpoints import EndpointConfig

from rasa_context_retrieval.milvus.lease import SyncLease
from rasa_context_retrieval.store import ContextRetrieval
from tests.milvus_server import milvus_uri  # noqa: F401
from tests.test_context_retrieval import state

pytestmark = [pytest.mark.milvus, pytest.mark.asyncio(loop_scope="session")]

WAIT_SECONDS = 30
QUESTION = "Can I use offline files?"
OLD_TEXT = "Q: Can I use offline files?\nA: Yes, offline files work on every device.\n"
NEW_TEXT = "Q: Can I use offline files?\nA: Yes, on the Premium plan, on every device.\n"
HELD_TEXT = "on the Premium plan"


class HeldEmbedder:
    """The real embedding model, except that a text containing ``HELD_TEXT`` waits for
    ``release``: a rebuild that has to embed the new text stays under way until then."""

    def __init__(self, inner: Any) -> None:
        self.inner = inner
        self.entered = threading.Event()
        self.release = threading.Event()

    @property
    def model(self) -> str:
        return self.inner.model

    @property
    def config(self) -> dict:
        return self.inner.config

    def embed(self, texts: list[str]) -> Any:
        if any(HELD_TEXT in text for text in texts):
            self.entered.set()
            self.release.wait(WAIT_SECONDS)
        return self.inner.embed(texts)


@pytest.fixture
def docs(tmp_path: Path) -> Path:
    folder = tmp_path / "docs"
    folder.mkdir()
    (folder / "offline.md").write_text(OLD_TEXT, encoding="utf-8")  # public: no plan
    (folder / "storage.md").write_text(
        "---\nplan: [free]\n---\nQ: How much storage do I get?\nA: 5 GB on the Free plan.\n",
        encoding="utf-8",
    )
    return folder


@pytest.fixture
def collection() -> str:
    return f"kb_{uuid.uuid4().hex[:8]}"


@dataclass
class Assistant:
    """One assistant's store and the ``vector_store:`` block Rasa connects it with."""

    store: ContextRetrieval
    endpoint: EndpointConfig


@pytest.fixture
def connect(
    tmp_path: Path,
    docs: Path,
    collection: str,
    milvus_uri: str,  # noqa: F811
) -> Iterator[Callable[[Any, str], Assistant]]:
    """``connect(embedder, ingest)``: a writer (``auto``, refreshing) or a replica
    (``console_only``, no documents), each with its own index folder."""
    opened: list[Assistant] = []

    def open_assistant(embedder: Any, ingest: str) -> Assistant:
        endpoint = block(docs, tmp_path / f"index-{len(opened)}", collection, milvus_uri, ingest)
        store = ContextRetrieval(embeddings=embedder)
        store.connect(endpoint)
        store.engine  # noqa: B018 (connect() returns at once; a writer's build creates the collection)
        opened.append(Assistant(store, endpoint))
        return opened[-1]

    yield open_assistant
    for assistant in opened:
        assistant.store.engine.live.close()


def block(docs: Path, index_path: Path, collection: str, uri: str, ingest: str) -> EndpointConfig:
    return EndpointConfig(
        type="rasa_context_retrieval.ContextRetrieval",
        docs=str(docs if ingest == "auto" else index_path / "no-docs"),
        index_path=str(index_path),
        access_filters={"tier": "plan"},
        metadata_fields=[{"name": "plan", "type": "list[string]"}],
        refresh_seconds=0.01,
        backend="milvus",
        milvus={"uri": uri, "collection": collection, "ingest": ingest},
        # documents are embedded by the client the tests hold, count or make fail
        query_embedder="rasa",
    )


async def found(assistant: Assistant, tier: str, question: str = QUESTION) -> dict[str, Any]:
    """source -> (text, metadata) of what a user entitled to ``tier`` is given; connecting
    first as Rasa does before each search, so that a writer looks for changed documents."""
    assistant.store.connect(assistant.endpoint)
    conversation = state(("user", question))
    conversation["latest_message"]["metadata"] = {"tier": tier}
    result = await assistant.store.search("", conversation, 0.0)
    return {r.metadata["source"]: (r.text, r.metadata) for r in result.results}


async def eventually(check: Callable[[], Awaitable[bool]]) -> bool:
    deadline = time.monotonic() + WAIT_SECONDS
    while time.monotonic() < deadline:
        if await check():
            return True
        await asyncio.sleep(0.1)
    return False


async def assert_served_as_now(assistants: list[Assistant]) -> None:
    """Premium users get the new text with the new attributes, free users nothing of it."""
    for assistant in assistants:

        async def new_version(assistant: Assistant = assistant) -> bool:
            served = (await found(assistant, "premium")).get("offline.md")
            return served is not None and served[1].get("plan") == ["premium"]

        assert await eventually(new_version), "the synced document never came back"
        text, metadata = (await found(assistant, "premium"))["offline.md"]
        assert "Premium plan" in text and metadata["plan"] == ["premium"]
        assert "offline.md" not in await found(assistant, "free")


async def test_a_document_re_scoped_on_disk_is_withheld_everywhere_until_synced(
    connect: Callable[[Any, str], Assistant], docs: Path, embedder: Any
):
    held = HeldEmbedder(embedder)
    held.release.set()  # the first build goes through
    writer = connect(held, "auto")
    replica = connect(embedder, "console_only")
    for assistant in (writer, replica):
        assert "offline.md" in await found(assistant, "free")
    assert replica.store.engine.known_values()["plan"] == {"free"}

    held.release.clear()
    (docs / "offline.md").write_text("---\nplan: [premium]\n---\n" + NEW_TEXT, encoding="utf-8")
    await found(writer, "free")  # the writer's refresh sees the change
    assert await asyncio.to_thread(held.entered.wait, WAIT_SECONDS), "no rebuild started"
    started_after = connect(embedder, "console_only")
    try:
        for assistant in (writer, replica, started_after):
            for tier in ("free", "premium"):  # neither the old version nor the new one yet
                assert "offline.md" not in await found(assistant, tier)
            assert "storage.md" in await found(assistant, "free", "How much storage do I get?")
    finally:
        held.release.set()

    await assert_served_as_now([writer, replica, started_after])

    async def values_read_again() -> bool:
        await found(replica, "premium")
        return "premium" in replica.store.engine.known_values()["plan"]

    assert await eventually(values_read_again), "the replica kept its old attribute values"


async def test_an_attribute_only_change_is_withheld_while_another_writer_syncs_then_synced(
    connect: Callable[[Any, str], Assistant],
    docs: Path,
    embedder: Any,
    collection: str,
    milvus_uri: str,  # noqa: F811
):
    writer = connect(embedder, "auto")
    replica = connect(embedder, "console_only")
    assert "offline.md" in await found(replica, "free")

    client = MilvusClient(uri=milvus_uri)
    rival = SyncLease(client, collection, ttl_s=60)
    rival.acquire()  # another writer's sync: this writer's sync waits for it
    try:
        # The same text: the chunk keeps its id and vector, only its attributes change.
        (docs / "offline.md").write_text("---\nplan: [premium]\n---\n" + OLD_TEXT, "utf-8")

        async def withheld() -> bool:
            return "offline.md" not in await found(writer, "free")

        assert await eventually(withheld), "the writer kept serving the re-scoped document"
        for tier in ("free", "premium"):
            assert "offline.md" not in await found(replica, tier)
        assert "offline.md" not in await found(connect(embedder, "console_only"), "free")
    finally:
        rival.release()
        client.close()

    for assistant in (writer, replica):

        async def re_scoped(assistant: Assistant = assistant) -> bool:
            served = (await found(assistant, "premium")).get("offline.md")
            return served is not None and served[1].get("plan") == ["premium"]

        assert await eventually(re_scoped), "the attribute change was never synced"
        assert "offline.md" not in await found(assistant, "free")


async def test_a_writer_starting_on_a_re_scoped_document_withholds_it_before_embedding(
    connect: Callable[[Any, str], Assistant], docs: Path, embedder: Any
):
    """A writer restarted after the edit: replicas stop serving the old version while it
    builds (embeds) the new one, not only once it syncs."""
    unheld = HeldEmbedder(embedder)
    unheld.release.set()
    connect(unheld, "auto")
    replica = connect(embedder, "console_only")
    assert "offline.md" in await found(replica, "free")

    (docs / "offline.md").write_text("---\nplan: [premium]\n---\n" + NEW_TEXT, encoding="utf-8")
    held = HeldEmbedder(embedder)
    restarted = asyncio.create_task(asyncio.to_thread(connect, held, "auto"))
    try:
        assert await asyncio.to_thread(held.entered.wait, WAIT_SECONDS), "no build started"
        for tier in ("free", "premium"):
            assert "offline.md" not in await found(replica, tier)
        assert "storage.md" in await found(replica, "free", "How much storage do I get?")
    finally:
        held.release.set()
    writer = await restarted
    await assert_served_as_now([writer, replica])
