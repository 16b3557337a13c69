"""A build embeds chunks through the checked ONNX export, in groups of similar length, with
Rasa's vectors; without a passing self-check, Rasa's client embeds them."""

from __future__ import annotations

from pathlib import Path
from typing import Any

import numpy as np
import pytest

from rasa_context_retrieval.knowledge.embedding import embed_texts, normalise
from rasa_context_retrieval.query_embedding import documents as documents_module
from rasa_context_retrieval.query_embedding import embedder as query_embedder_module
from rasa_context_retrieval.query_embedding.documents import embed_documents
from rasa_context_retrieval.query_embedding.embedder import SELF_CHECK_TEXTS, checked_fp32_encoder
from rasa_context_retrieval.query_embedding.onnx import OnnxQueryEncoder
from tests.store_support import CountingEmbedder

CHUNKS = [
    "Q: How much does the premium plan cost?\nA: 12 euros a month, billed yearly.",
    "Offline files",
    "Lumen Drive keeps a copy of every file you mark for offline use on the device. "
    "Changes made offline are uploaded the next time the device connects.\n\n" * 6,
    "   ",
    "Sharing a folder with up to 12 people is included in every plan; larger teams need the "
    "business plan, which also adds audit logs.",
    "2FA",
    "Data centres: Frankfurt (EU), Virginia (US) and Tokyo (JP).\nYour region decides where "
    "your files are stored.",
]
SELF_CHECK_CALL_TEXTS = len(SELF_CHECK_TEXTS) + 1  # and the long text, in a call of its own


@pytest.fixture(scope="module")
def export_folder(embedder: Any, query_model_cache: Path) -> Path:
    """The folder of the model's export, made once and kept between runs (``conftest.py``):
    these tests embed through it and never change it; the export itself is
    ``test_query_embedder.py``'s subject."""
    return query_model_cache


def rasa_vectors(client: Any, texts: list[str]) -> np.ndarray:
    return embed_texts(client, texts, batch_size=len(texts), progress=False)


def test_chunks_get_rasas_vectors_without_rasas_client(embedder, export_folder, monkeypatch):
    monkeypatch.setattr(query_embedder_module, "_OPENED", {})  # not opened by an earlier test
    counting = CountingEmbedder(embedder)
    vectors = embed_documents(counting, CHUNKS * 20, 4, export_folder, progress=False)
    assert counting.texts == SELF_CHECK_CALL_TEXTS  # the self-check only, no chunk
    expected = np.tile(rasa_vectors(embedder, CHUNKS), (20, 1))  # Rasa's vector of each copy
    assert vectors.shape == expected.shape
    assert float(np.min(np.sum(vectors * expected, axis=1))) >= 0.9999


def test_without_a_passing_self_check_rasas_client_embeds_the_chunks(
    embedder, export_folder, monkeypatch
):
    monkeypatch.setattr(query_embedder_module, "_OPENED", {})  # checked afresh
    monkeypatch.setattr(query_embedder_module, "self_check", lambda encoder, client: 0.98)
    counting = CountingEmbedder(embedder)
    assert checked_fp32_encoder(counting, export_folder) is None
    vectors = embed_documents(counting, CHUNKS, 4, export_folder, progress=False)
    assert counting.texts == len(CHUNKS)
    assert np.allclose(vectors, rasa_vectors(embedder, CHUNKS), atol=1e-5)


def test_a_failing_onnx_run_hands_the_chunks_to_rasas_client(embedder, export_folder, monkeypatch):
    monkeypatch.setattr(query_embedder_module, "_OPENED", {})  # not opened by an earlier test
    counting = CountingEmbedder(embedder)
    encoder = checked_fp32_encoder(counting, export_folder)
    assert encoder is not None
    checked = counting.texts  # the self-check's

    def fails(*args: Any, **kwargs: Any) -> Any:
        raise RuntimeError("onnxruntime: out of memory")

    monkeypatch.setattr(encoder, "encode", fails)
    vectors = embed_documents(counting, CHUNKS, 4, export_folder, progress=False)
    assert counting.texts - checked == len(CHUNKS)
    assert np.allclose(vectors, rasa_vectors(embedder, CHUNKS), atol=1e-5)


def test_other_clients_are_never_run_through_the_export(export_folder):
    from tests.test_index_persistence import HashingEmbedder

    hashing = HashingEmbedder()
    vectors = embed_documents(hashing, CHUNKS, 4, export_folder, progress=False)
    assert np.allclose(vectors, rasa_vectors(hashing, CHUNKS))


def test_grouping_embeds_each_chunk_once_with_the_ungrouped_vectors(
    embedder, export_folder, monkeypatch
):
    encoder = checked_fp32_encoder(embedder, export_folder)
    assert isinstance(encoder, OnnxQueryEncoder)
    calls: list[int] = []
    run = encoder._run

    def counted(encodings: Any) -> np.ndarray:
        calls.append(len(encodings))
        return run(encodings)

    monkeypatch.setattr(encoder, "_run", counted)
    # windows of 8 texts a core: several windows, as in a large build, from 70 texts
    monkeypatch.setattr(documents_module, "WINDOW_PER_CORE", 8)
    texts = [f"Part {n}. {text}" for n, text in enumerate(CHUNKS * 10)]  # all distinct
    grouped = embed_documents(embedder, texts, 4, export_folder, progress=False)
    assert sum(calls) == len(texts)  # every chunk in exactly one model call
    assert len(calls) > 1
    calls.clear()
    prepared = [text.replace("\n", " ") if text.strip() else "." for text in texts]
    ungrouped = normalise(np.vstack([run(encoder.tokens([t])) for t in prepared]))
    assert np.abs(grouped - ungrouped).max() <= 1e-5


def test_a_text_repeated_across_chunks_is_embedded_once_and_every_copy_gets_its_vector():
    from tests.test_index_persistence import HashingEmbedder

    counting = CountingEmbedder(HashingEmbedder())
    texts = ["Contact support at any time.", *CHUNKS[:3], "Contact support at any time."] * 3
    vectors = embed_documents(counting, texts, 4, None, progress=False)
    assert counting.texts == len(set(texts))
    assert np.allclose(vectors, rasa_vectors(HashingEmbedder(), texts))


def test_a_new_export_format_reuses_the_built_index_without_embedding_a_chunk(
    embedder, model_path, tmp_path, monkeypatch
):
    from rasa_context_retrieval.faiss.builder import ensure_index
    from rasa_context_retrieval.ingestion import build as build_module
    from rasa_context_retrieval.ingestion.settings import IndexSettings
    from rasa_context_retrieval.query_embedding import onnx

    docs = tmp_path / "docs"
    docs.mkdir()
    (docs / "plans.md").write_text("# Plans\n\n" + "\n\n".join(CHUNKS[:3]), encoding="utf-8")
    export = tmp_path / "index" / "query-model"  # gets a link to the export checked already
    settings = IndexSettings(docs, tmp_path / "index", 400, 40, 16, 200_000, onnx_export=export)
    built = ensure_index(settings, embedder, progress=False)
    monkeypatch.setattr(onnx, "EXPORT_FORMAT", onnx.EXPORT_FORMAT + 1)  # a later release's export
    embedded: list[int] = []

    def counted(client: Any, texts: Any, *args: Any, **kwargs: Any) -> np.ndarray:
        embedded.append(len(texts))
        return embed_documents(client, texts, *args, **kwargs)

    monkeypatch.setattr(build_module, "embed_documents", counted)
    reopened = ensure_index(settings, embedder, progress=False)
    assert embedded == []  # not a chunk embedded again
    assert np.array_equal(reopened.knowledge.vectors, built.knowledge.vectors)
