"""The Milvus chunk store against a real server: incremental sync, replicas, scored search."""

from __future__ import annotations

import hashlib
import threading
import time
import uuid
from collections.abc import Iterator

import numpy as np
import pytest
from langchain_core.structured_query import Comparator, Comparison

from rasa_context_retrieval.knowledge.models import Chunk
from rasa_context_retrieval.milvus.config import MilvusConfig
from rasa_context_retrieval.milvus.lease import SyncLease
from rasa_context_retrieval.milvus.store import MilvusChunkStore, MilvusCollectionMissing
from tests.milvus_server import milvus_uri  # noqa: F401

pytestmark = pytest.mark.milvus

DIMENSION = 16


class CountingEmbedder:
    """Deterministic vectors from the text; counts how many texts it was asked to embed."""

    def __init__(self, delay_s: float = 0.0) -> None:
        self.embedded = 0
        self.delay_s = delay_s
        self._lock = threading.Lock()

    def __call__(self, texts: list[str]) -> np.ndarray:
        with self._lock:
            self.embedded += len(texts)
        time.sleep(self.delay_s)
        return np.stack([vector_of(text) for text in texts])


def vector_of(text: str) -> np.ndarray:
    seed = int.from_bytes(hashlib.sha256(text.encode()).digest()[:8], "little")
    return np.random.default_rng(seed).normal(size=DIMENSION)


def knowledge_base(documents: int = 4, chunks_per_document: int = 5) -> list[Chunk]:
    return [
        Chunk(
            chunk_id=f"doc{d}.md#{c}",
            text=f"Document {d}, part {c}: how to sync folder {c} on plan {d % 2}.",
            metadata={"source": f"doc{d}.md", "plan": ["Basic", "Premium"][d % 2]},
        )
        for d in range(documents)
        for c in range(chunks_per_document)
    ]


@pytest.fixture(scope="module")
def config(milvus_uri: str) -> MilvusConfig:  # noqa: F811
    # One collection for the module: creating and loading one takes seconds on Milvus 2.3.
    return MilvusConfig(uri=milvus_uri, collection=f"kb_{uuid.uuid4().hex[:10]}")


@pytest.fixture
def store(config: MilvusConfig) -> Iterator[MilvusChunkStore]:
    """A store on the module's collection, emptied first (a sync of nothing deletes all)."""
    store = MilvusChunkStore.connect(config)
    store.sync([], CountingEmbedder())
    assert store.count() == 0
    yield store
    store.close()


def test_a_second_sync_of_the_same_knowledge_base_embeds_nothing(store: MilvusChunkStore) -> None:
    chunks = knowledge_base()
    embedder = CountingEmbedder()
    first = store.sync(chunks, embedder)
    second = store.sync(chunks, embedder)
    assert (first.embedded, first.unchanged) == (len(chunks), 0)
    assert (second.embedded, second.unchanged, second.deleted) == (0, len(chunks), 0)
    assert embedder.embedded == len(chunks)
    assert store.count() == len(chunks)


def test_an_edited_chunk_is_the_only_one_embedded_again(store: MilvusChunkStore) -> None:
    chunks = knowledge_base()
    store.sync(chunks, CountingEmbedder())
    edited = [*chunks[:-1], Chunk(chunks[-1].chunk_id, "A new answer.", chunks[-1].metadata)]
    embedder = CountingEmbedder()
    report = store.sync(edited, embedder)
    assert (report.embedded, embedder.embedded) == (1, 1)
    best = store.search(vector_of("A new answer."), None, k=1)[0]
    assert (best.chunk.chunk_id, best.chunk.text) == (chunks[-1].chunk_id, "A new answer.")


def test_chunks_of_a_removed_document_are_deleted(store: MilvusChunkStore) -> None:
    chunks = knowledge_base()
    store.sync(chunks, CountingEmbedder())
    remaining = [chunk for chunk in chunks if chunk.metadata["source"] != "doc2.md"]
    report = store.sync(remaining, CountingEmbedder())
    assert report.removed_sources == ("doc2.md",)
    assert report.deleted == len(chunks) - len(remaining)
    assert store.count() == len(remaining)
    found = store.search(vector_of(chunks[10].text), None, k=len(chunks))
    assert {hit.chunk.metadata["source"] for hit in found} == {"doc0.md", "doc1.md", "doc3.md"}


def test_replicas_syncing_at_once_ingest_the_knowledge_base_once(
    store: MilvusChunkStore, config: MilvusConfig
) -> None:
    chunks = knowledge_base(documents=6)
    embedder = CountingEmbedder(delay_s=0.2)  # long enough for the syncs to overlap
    stores = [MilvusChunkStore.connect(config) for _ in range(2)]
    errors: list[BaseException] = []

    def replica(store: MilvusChunkStore) -> None:
        try:
            store.sync(chunks, embedder)
        except BaseException as error:  # noqa: BLE001 - reported by the assertion below
            errors.append(error)

    threads = [threading.Thread(target=replica, args=(store,)) for store in stores]
    for thread in threads:
        thread.start()
    for thread in threads:
        thread.join(timeout=120)
    assert errors == []
    assert embedder.embedded == len(chunks)
    assert stores[0].count() == len(chunks)
    for store in stores:
        store.close()


def test_the_sync_lease_is_held_by_one_owner_at_a_time(store: MilvusChunkStore) -> None:
    held: list[tuple[float, float]] = []

    def contender() -> None:
        with SyncLease(store._client, store.collection, ttl_s=10, wait_s=60):
            entered = time.monotonic()
            time.sleep(0.3)
            held.append((entered, time.monotonic()))

    threads = [threading.Thread(target=contender) for _ in range(3)]
    for thread in threads:
        thread.start()
    for thread in threads:
        thread.join(timeout=90)
    assert len(held) == 3
    spans = sorted(held)
    assert all(left[1] <= right[0] for left, right in zip(spans, spans[1:], strict=False))


def test_search_ranks_by_cosine_relevance_within_the_filter(store: MilvusChunkStore) -> None:
    chunks = knowledge_base()
    store.sync(chunks, CountingEmbedder())
    target = chunks[7]  # a Premium chunk
    premium = Comparison(comparator=Comparator.EQ, attribute="plan", value="premium")
    hits = store.search(vector_of(target.text), premium, k=8)
    assert hits[0].chunk.chunk_id == target.chunk_id
    assert hits[0].relevance == pytest.approx(1.0, abs=1e-4)
    assert all(0.0 <= hit.relevance <= 1.0 for hit in hits)
    assert [hit.relevance for hit in hits] == sorted((hit.relevance for hit in hits), reverse=True)
    assert {hit.chunk.metadata["plan"] for hit in hits} == {"Premium"}
    assert len(hits) == 8


def test_values_of_lists_attribute_values_as_written(store: MilvusChunkStore) -> None:
    store.sync(knowledge_base(), CountingEmbedder())
    assert store.values_of("plan") == {"Basic", "Premium"}
    assert store.values_of("unknown") == frozenset()


def test_a_replica_serves_its_vocabulary_while_a_stale_one_is_read_again(
    store: MilvusChunkStore, config: MilvusConfig, monkeypatch: pytest.MonkeyPatch
) -> None:
    """Another writer's new value reaches a replica's vocabulary after the TTL, read in the
    background: the call that finds it stale still answers at once, with the values it had."""
    store.sync(knowledge_base(), CountingEmbedder())
    replica = MilvusChunkStore.connect(config)
    replica.prefetch_values()
    assert replica.values_of("plan") == {"Basic", "Premium"}
    business = Chunk("new.md#0", "Business plan text.", {"source": "new.md", "plan": "Business"})
    store.sync([*knowledge_base(), business], CountingEmbedder())
    assert replica.values_of("plan") == {"Basic", "Premium"}  # within the TTL
    monkeypatch.setattr("rasa_context_retrieval.milvus.attribute_values.VOCABULARY_TTL_S", 0.0)
    assert replica.values_of("plan") == {"Basic", "Premium"}  # stale: served, read again
    deadline = time.monotonic() + 30
    while "Business" not in replica.values_of("plan") and time.monotonic() < deadline:
        time.sleep(0.1)
    assert replica.values_of("plan") == {"Basic", "Premium", "Business"}
    replica.close()


def test_searching_before_anything_was_ingested_says_how_to_ingest(milvus_uri: str) -> None:  # noqa: F811
    fresh = MilvusConfig(uri=milvus_uri, collection=f"never_{uuid.uuid4().hex[:10]}")
    store = MilvusChunkStore.connect(fresh)
    with pytest.raises(MilvusCollectionMissing, match="index"):
        store.search(np.ones(DIMENSION), None, k=3)
    store.close()


def test_a_query_vector_from_another_model_is_refused(store: MilvusChunkStore) -> None:
    store.sync(knowledge_base(), CountingEmbedder())
    with pytest.raises(ValueError, match="embedding model changed"):
        store.search(np.ones(DIMENSION + 1), None, k=3)
