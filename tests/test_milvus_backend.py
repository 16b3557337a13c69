"""``backend: milvus`` gives the same answers as the FAISS backend, on a real Milvus server."""

from __future__ import annotations

import uuid
from pathlib import Path
from typing import Any

import pytest
from pymilvus import MilvusClient
from rasa.utils.endpoints import EndpointConfig

from rasa_context_retrieval.store import ContextRetrieval
from tests.conftest import REPO_ROOT
from tests.milvus_server import milvus_uri  # noqa: F401
from tests.test_context_retrieval import state

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


def store_for(embedder: Any, index_path: Path, **block: Any) -> ContextRetrieval:
    store = ContextRetrieval(embeddings=embedder)
    store.connect(
        EndpointConfig(
            type="rasa_context_retrieval.ContextRetrieval",
            docs=str(REPO_ROOT / "docs"),
            index_path=str(index_path),
            slot_filters={"plan": "plan", "region": "region"},
            metadata_fields=[
                {"name": "plan", "type": "list[string]"},
                {"name": "region", "type": "list[string]"},
                {"name": "platform", "type": "list[string]"},
                {"name": "price_per_month", "type": "float"},
                {"name": "updated", "type": "date"},
            ],
            **block,
        )
    )
    return store


@pytest.fixture(scope="module")
def stores(
    tmp_path_factory: pytest.TempPathFactory,
    embedder: Any,
    milvus_uri: str,  # noqa: F811
) -> tuple[ContextRetrieval, ContextRetrieval]:
    index_path = tmp_path_factory.mktemp("index")
    faiss_store = store_for(embedder, index_path)
    milvus_store = store_for(
        embedder,
        index_path,
        backend="milvus",
        milvus={"uri": milvus_uri, "collection": f"kb_{uuid.uuid4().hex[:8]}"},
    )
    return faiss_store, milvus_store


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
    """Milvus filters on the normal form; a row whose normal form still says basic while its
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
    [row] = client.query(collection, filter='source == "offline.md"', output_fields=["*"])
    row["metadata"] = {**row["metadata"], "plan": ["premium"]}  # filterable still says basic
    client.upsert(collection, [row])
    client.close()
    after = await writer.search("", question, 0.0)
    assert [r.metadata["source"] for r in after.results] == ["storage.md"]
    assert all(r.metadata["plan"] == ["basic"] for r in after.results)
