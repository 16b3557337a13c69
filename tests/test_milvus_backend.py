"""``backend: milvus`` gives the same answers as the FAISS backend, on a real Milvus server."""

from __future__ import annotations

import uuid
from pathlib import Path
from typing import Any

import pytest
from pymilvus import MilvusClient
from rasa.utils.endpoints import EndpointConfig

from rasa_context_retrieval.engine.search import QUERY_MODEL_FOLDER
from rasa_context_retrieval.store import ContextRetrieval
from tests.conftest import REPO_ROOT
from tests.milvus_server import milvus_uri  # noqa: F401
from tests.test_context_retrieval import state

pytestmark = pytest.mark.milvus

CONVERSATIONS = [
    state(("user", "Can I get a refund?"), region="eu"),
    state(("user", "Can I get a refund?"), region="us"),
    state(
        ("user", "How do I enable offline files?"),
        ("bot", "Right-click a file and choose Make available offline."),
        ("user", "and on Android?"),
        plan="premium",
    ),
    state(("user", "How much storage do I get?"), plan="free"),
    state(("user", "Which plans cost less than $10 a month?")),
    state(("user", "Is my data stored in Europe?"), plan=["plus", "premium"]),
    state(("user", "What changed after 2025?")),
    state(("user", "how do I share a folder, not on the web")),
]


SLOT_FILTERS = {"plan": "plan", "region": "region"}
DECLARED_FIELDS = [
    {"name": "plan", "type": "list[string]"},
    {"name": "region", "type": "list[string]"},
    {"name": "platform", "type": "list[string]"},
    {"name": "price_per_month", "type": "float"},
    {"name": "updated", "type": "date"},
]
"""The writer's and the replica's declarations: all writers and replicas of one collection
declare the same attributes (the layout of its versions depends on them)."""


def store_for(embedder: Any, index_path: Path, **block: Any) -> ContextRetrieval:
    store = ContextRetrieval(embeddings=embedder)
    store.connect(
        EndpointConfig(
            type="rasa_context_retrieval.ContextRetrieval",
            docs=str(REPO_ROOT / "docs"),
            index_path=str(index_path),
            slot_filters=SLOT_FILTERS,
            metadata_fields=DECLARED_FIELDS,
            **block,
        )
    )
    return store


@pytest.fixture(scope="module")
def collection() -> str:
    return f"kb_{uuid.uuid4().hex[:8]}"


@pytest.fixture(scope="module")
def stores(
    tmp_path_factory: pytest.TempPathFactory,
    embedder: Any,
    milvus_uri: str,  # noqa: F811
    collection: str,
) -> tuple[ContextRetrieval, ContextRetrieval]:
    index_path = tmp_path_factory.mktemp("index")
    # Milvus searches dense only by default, FAISS fuses BM25 in: compared like for like here,
    # and with BM25 on both in the hybrid test below.
    faiss_store = store_for(embedder, index_path, hybrid=False)
    milvus_store = store_for(
        embedder,
        index_path,
        backend="milvus",
        milvus={"uri": milvus_uri, "collection": collection},
    )
    return faiss_store, milvus_store


@pytest.fixture(scope="module")
def replica(
    tmp_path_factory: pytest.TempPathFactory,
    embedder: Any,
    milvus_uri: str,  # noqa: F811
    collection: str,
    stores: tuple[ContextRetrieval, ContextRetrieval],
) -> tuple[ContextRetrieval, Path]:
    """An assistant replica with only its configuration: ``docs`` names no folder."""
    index_path = tmp_path_factory.mktemp("replica")
    store = ContextRetrieval(embeddings=embedder)
    store.connect(
        EndpointConfig(
            type="rasa_context_retrieval.ContextRetrieval",
            docs=str(index_path / "no-such-folder"),
            index_path=str(index_path),
            slot_filters=SLOT_FILTERS,
            metadata_fields=DECLARED_FIELDS,
            backend="milvus",
            milvus={"uri": milvus_uri, "collection": collection, "ingest": "console_only"},
        )
    )
    return store, index_path


@pytest.mark.parametrize("conversation", CONVERSATIONS)
async def test_both_backends_return_the_same_documents_in_the_same_order(stores, conversation):
    faiss_store, milvus_store = stores
    on_faiss = await faiss_store.search("", conversation, 0.0)
    on_milvus = await milvus_store.search("", conversation, 0.0)
    assert on_faiss.metadata["filter"] == on_milvus.metadata["filter"]
    assert [r.metadata["source"] for r in on_milvus.results] == [
        r.metadata["source"] for r in on_faiss.results
    ]
    assert [r.text for r in on_milvus.results] == [r.text for r in on_faiss.results]
    for mine, theirs in zip(on_milvus.results, on_faiss.results, strict=True):
        assert mine.score == pytest.approx(theirs.score, abs=1e-5)
        assert 0.0 <= mine.score <= 1.0


@pytest.mark.parametrize("conversation", CONVERSATIONS)
async def test_a_replica_without_documents_answers_as_the_writer_does(
    stores, replica, conversation
):
    _, writer = stores
    on_writer = await writer.search("", conversation, 0.0)
    on_replica = await replica[0].search("", conversation, 0.0)
    assert on_replica.metadata["filter"] == on_writer.metadata["filter"]
    assert [r.text for r in on_replica.results] == [r.text for r in on_writer.results]
    assert [r.metadata for r in on_replica.results] == [r.metadata for r in on_writer.results]
    for mine, theirs in zip(on_replica.results, on_writer.results, strict=True):
        assert mine.score == pytest.approx(theirs.score, abs=1e-6)


async def test_a_replica_keeps_nothing_per_chunk(replica):
    store, index_path = replica
    assert store.engine.live.knowledge is None
    assert len(store.engine.live) > 0  # the chunks are in Milvus
    kept = [p.relative_to(index_path) for p in index_path.rglob("*") if p.is_file()]
    assert all(path.parts[0] == QUERY_MODEL_FOLDER for path in kept), kept


async def test_a_replica_reads_the_filter_vocabulary_from_milvus(stores, replica):
    _, writer = stores
    from_milvus = replica[0].engine.known_values()
    assert from_milvus["plan"] >= {"free", "plus", "premium"}
    assert from_milvus == writer.engine.known_values()


async def test_fused_rankings_are_scored_by_milvus_as_faiss_scores_them(
    tmp_path: Path,
    embedder: Any,
    milvus_uri: str,  # noqa: F811
    collection: str,
    stores: tuple[ContextRetrieval, ContextRetrieval],
    monkeypatch: pytest.MonkeyPatch,
):
    """With hybrid on, chunks only BM25 found get their cosine relevance from Milvus."""
    shallow = {"hybrid": True, "candidates": 4}  # BM25 then finds chunks dense search did not
    faiss_store = store_for(embedder, tmp_path / "faiss", **shallow)
    writer = store_for(
        embedder,
        tmp_path / "writer",
        **shallow,
        backend="milvus",
        milvus={"uri": milvus_uri, "collection": collection},
    )
    milvus = writer.engine.live.backend.store
    scored_by_milvus: list[int] = []

    def relevance(vector: Any, chunk_ids: Any) -> dict[str, float]:
        scored_by_milvus.append(len(chunk_ids))
        return original(vector, chunk_ids)

    original = milvus.relevance
    monkeypatch.setattr(milvus, "relevance", relevance)
    for conversation in CONVERSATIONS:
        on_faiss = await faiss_store.search("", conversation, 0.0)
        on_milvus = await writer.search("", conversation, 0.0)
        assert [r.text for r in on_milvus.results] == [r.text for r in on_faiss.results]
        for mine, theirs in zip(on_milvus.results, on_faiss.results, strict=True):
            assert mine.score == pytest.approx(theirs.score, abs=1e-5)
    assert scored_by_milvus


async def test_thresholds_work_the_same_on_milvus(stores):
    faiss_store, milvus_store = stores
    question = state(("user", "How much storage do I get?"))
    for threshold in (0.3, 0.5, 0.7):
        on_faiss = await faiss_store.search("", question, threshold)
        on_milvus = await milvus_store.search("", question, threshold)
        assert [r.text for r in on_milvus.results] == [r.text for r in on_faiss.results]
        assert all(r.score >= threshold for r in on_milvus.results)


def _write_docs(docs: Path, offline_plan: str) -> None:
    docs.mkdir(parents=True, exist_ok=True)
    (docs / "offline.md").write_text(
        # Only the front matter changes: the chunk keeps its id, so Milvus still knows it.
        f"---\nplan: [{offline_plan}]\n---\nQ: Can I use offline files?\n"
        "A: Yes, offline files work on every device.\n",
        encoding="utf-8",
    )
    (docs / "storage.md").write_text(
        "---\nplan: [basic]\n---\nQ: How much storage do I get?\nA: The Basic plan has 5 GB.\n",
        encoding="utf-8",
    )


async def test_a_chunk_whose_filter_fields_disagree_with_its_metadata_is_never_returned(
    tmp_path: Path,
    embedder: Any,
    milvus_uri: str,  # noqa: F811
):
    """Milvus filters on the normal form; a row whose typed fields still say basic while its
    metadata says premium (a stale or damaged row) is selected by Milvus, but what search()
    returns is checked again on the metadata Milvus returns, so it never leaves the plugin."""
    collection = f"kb_{uuid.uuid4().hex[:8]}"
    docs = tmp_path / "docs"
    _write_docs(docs, "basic")
    block: dict[str, Any] = {
        "type": "rasa_context_retrieval.ContextRetrieval",
        "docs": str(docs),
        "slot_filters": {"plan": "plan"},
        "access_filters": {"tier": "plan"},
        "metadata_fields": [{"name": "plan", "type": "list[string]"}],
        "backend": "milvus",
    }
    writer = ContextRetrieval(embeddings=embedder)
    writer.connect(
        EndpointConfig(
            **block,
            index_path=str(tmp_path / "writer"),
            milvus={"uri": milvus_uri, "collection": collection},
        )
    )
    question = state(("user", "Can I use offline files?"), plan="basic")
    question["latest_message"]["metadata"] = {"tier": "basic"}
    before = await writer.search("", question, 0.0)
    assert "offline.md" in [r.metadata["source"] for r in before.results]

    client = MilvusClient(uri=milvus_uri)
    [version] = [name for name in client.list_collections() if name.startswith(collection + "__v")]
    [row] = client.query(version, filter='source == "offline.md"', output_fields=["*"])
    row["metadata"] = {**row["metadata"], "plan": ["premium"]}  # the typed fields say basic
    client.upsert(version, [row])
    client.close()
    after = await writer.search("", question, 0.0)
    assert [r.metadata["source"] for r in after.results] == ["storage.md"]
    assert all(r.metadata["plan"] == ["basic"] for r in after.results)
