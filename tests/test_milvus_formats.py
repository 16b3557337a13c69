"""A knowledge base of PDF, Word and HTML files gives the same answers on Milvus as on FAISS:
converted documents reach both backends through the same ingest path, with their pages, anchors
and sidecar attributes."""

from __future__ import annotations

import shutil
import uuid
from pathlib import Path
from typing import Any

import pytest
from rasa.utils.endpoints import EndpointConfig

from rasa_context_retrieval.store import ContextRetrieval
from tests.conftest import REPO_ROOT
from tests.milvus_server import milvus_uri  # noqa: F401
from tests.test_context_retrieval import state
from tests.test_milvus_backend import CONVERSATIONS, DECLARED_FIELDS, SLOT_FILTERS

pytest.importorskip("fpdf")
pytest.importorskip("docx")
pytest.importorskip("matplotlib")  # the PDF converter's Unicode font
from bench.knowledge_conversion import convert_knowledge_base  # noqa: E402

pytestmark = pytest.mark.milvus

FORMAT_OF_FOLDER = {
    "about": "html",
    "account": "docx",
    "billing": "pdf",
    "plans": "docx",
    "privacy": "html",
    "security": "pdf",
    "sharing": "html",
    "sync": "pdf",
    "troubleshooting": "docx",
}
"""Each folder of the example knowledge base in one of the three formats."""
MORE_CONVERSATIONS = [
    state(("user", "How do I turn on two-step verification?")),
    state(("user", "Can I get a refund?"), plan="premium", region="eu"),
    state(("user", "Which browsers does the web app support?")),
]


def store_for(embedder: Any, docs: Path, index_path: Path, **block: Any) -> ContextRetrieval:
    store = ContextRetrieval(embeddings=embedder)
    store.connect(
        EndpointConfig(
            type="rasa_context_retrieval.ContextRetrieval",
            docs=str(docs),
            index_path=str(index_path),
            slot_filters=SLOT_FILTERS,
            metadata_fields=DECLARED_FIELDS,
            document_formats=["pdf", "docx", "html"],
            **block,
        )
    )
    store.engine  # noqa: B018 (waits for the index)
    return store


def mixed_knowledge_base(folder: Path) -> Path:
    """The example's documents as PDF, Word and HTML (front matter in sidecars), side by side."""
    docs = folder / "docs"
    for format_ in sorted(set(FORMAT_OF_FOLDER.values())):
        convert_knowledge_base(REPO_ROOT / "docs", folder / format_, format_)
    for name, format_ in FORMAT_OF_FOLDER.items():
        shutil.copytree(folder / format_ / name, docs / name)
    return docs


@pytest.fixture(scope="module")
def stores(
    tmp_path_factory: pytest.TempPathFactory,
    embedder: Any,
    milvus_uri: str,  # noqa: F811
) -> tuple[ContextRetrieval, ContextRetrieval]:
    docs = mixed_knowledge_base(tmp_path_factory.mktemp("converted"))
    index_path = tmp_path_factory.mktemp("index")
    faiss_store = store_for(embedder, docs, index_path, hybrid=False)  # as Milvus by default
    milvus_store = store_for(
        embedder,
        docs,
        index_path,
        backend="milvus",
        milvus={"uri": milvus_uri, "collection": f"formats_{uuid.uuid4().hex[:8]}"},
    )
    return faiss_store, milvus_store


@pytest.mark.parametrize("conversation", CONVERSATIONS + MORE_CONVERSATIONS)
async def test_converted_documents_come_back_alike_from_both_backends(stores, conversation):
    faiss_store, milvus_store = stores
    on_faiss = await faiss_store.search("", conversation, 0.0)
    on_milvus = await milvus_store.search("", conversation, 0.0)

    assert on_milvus.metadata["filter"] == on_faiss.metadata["filter"]
    assert [r.text for r in on_milvus.results] == [r.text for r in on_faiss.results]
    assert [r.metadata for r in on_milvus.results] == [r.metadata for r in on_faiss.results]
    for mine, theirs in zip(on_milvus.results, on_faiss.results, strict=True):
        assert mine.score == pytest.approx(theirs.score, abs=1e-5)


async def test_the_answers_cite_pdf_pages_word_files_and_web_pages(stores):
    """Citations show a converted file's title (and a PDF's page), never a Markdown file."""
    _, milvus_store = stores
    cited = []
    for conversation in CONVERSATIONS + MORE_CONVERSATIONS:
        found = await milvus_store.search("", conversation, 0.0)
        cited += [r.metadata for r in found.results]
    sources = {str(metadata["source"]) for metadata in cited}
    word_titles = {
        path.stem.replace("-", " ").capitalize()
        for folder, format_ in FORMAT_OF_FOLDER.items()
        if format_ == "docx"
        for path in (REPO_ROOT / "docs" / folder).glob("*.md")
    }

    assert any(m.get("page") == 1 and str(m["source"]).endswith(", page 1") for m in cited)
    assert any(source.endswith(" | Lumen Drive help") for source in sources)  # web pages
    assert sources & word_titles  # Word files, by their core-property title
    assert not any(source.endswith(".md") for source in sources)


async def test_sidecar_attributes_filter_on_milvus(stores):
    """The plan and region of a converted refund policy come from its sidecar."""
    faiss_store, milvus_store = stores
    question = state(("user", "Can I get a refund?"), plan="premium", region="eu")
    on_milvus = await milvus_store.search("", question, 0.0)
    on_faiss = await faiss_store.search("", question, 0.0)

    assert on_milvus.results
    assert on_milvus.results[0].metadata["source"] == "Refunds eu, page 1"
    assert [r.metadata for r in on_milvus.results] == [r.metadata for r in on_faiss.results]
