"""A large build on a CPU with native bfloat16 embeds its chunks in bfloat16, within cosine
0.9999 of Rasa's vectors, after a check on its own chunks; otherwise it stays on float32."""

from __future__ import annotations

from pathlib import Path
from typing import Any

import numpy as np
import psutil
import pytest
import structlog

from rasa_context_retrieval.config import StoreConfig
from rasa_context_retrieval.engine.live_index import index_settings
from rasa_context_retrieval.knowledge.embedding import embed_texts
from rasa_context_retrieval.query_embedding import bf16
from rasa_context_retrieval.query_embedding.bf16 import bf16_encoder
from rasa_context_retrieval.query_embedding.documents import embed_documents
from rasa_context_retrieval.query_embedding.embedder import checked_fp32_encoder

TOPICS = [
    "Lumen Drive keeps a copy of every file you mark for offline use on the device.",
    "Sharing a folder with up to 12 people is included in every plan.",
    "Data centres: Frankfurt (EU), Virginia (US) and Tokyo (JP).",
    "Q: How much does the premium plan cost?\nA: 12 euros a month, billed yearly.",
    "2FA",
]
TEXTS = [f"Part {n}. " + TOPICS[n % len(TOPICS)] * (1 + n % 4) for n in range(48)]
"""Distinct chunks from a few words to about a hundred tokens."""

native = pytest.mark.skipif(not bf16.native_bf16(), reason="this CPU has no native bfloat16")
slow = pytest.mark.slow  # starts a worker process that loads torch and the model


@pytest.fixture()
def small_builds_count(monkeypatch: pytest.MonkeyPatch) -> None:
    """These 48 chunks count as a large build (the real bar is 1,000: slow for a test)."""
    monkeypatch.setattr(bf16, "FROM_CHUNKS", len(TEXTS))


@pytest.fixture()
def model_calls(monkeypatch: pytest.MonkeyPatch) -> dict[str, int]:
    """Texts the build hands to the bfloat16 encoder (the check's sample is not among them)."""
    calls = {"bf16": 0}
    encode = bf16.Bf16Encoder.encode

    def counted(self: bf16.Bf16Encoder, texts: Any, *args: Any, **kwargs: Any) -> np.ndarray:
        calls["bf16"] += len(texts)
        return encode(self, texts, *args, **kwargs)

    monkeypatch.setattr(bf16.Bf16Encoder, "encode", counted)
    return calls


def worker_processes() -> set[int]:
    """The pool workers of this process: the children of its fork server (a kept server started
    by the first pool is not one)."""
    servers = psutil.Process().children()
    return {worker.pid for server in servers for worker in server.children(recursive=True)}


def rasa_vectors(client: Any) -> np.ndarray:
    return embed_texts(client, TEXTS, batch_size=len(TEXTS), progress=False)


@slow
@native
def test_a_large_build_embeds_in_bf16_with_rasas_vectors(
    embedder, query_model_cache: Path, small_builds_count, model_calls
):
    before = worker_processes()
    with structlog.testing.capture_logs() as logs:
        vectors = embed_documents(embedder, TEXTS, 16, query_model_cache, progress=False)
    assert model_calls["bf16"] == len(TEXTS)
    assert [log["event"] for log in logs if "bf16" in log["event"]] == ["knowledge.embedding.bf16"]
    cosines = np.sum(vectors * rasa_vectors(embedder), axis=1)
    assert float(cosines.min()) >= 0.9999
    assert float(cosines.min()) < 0.9999999  # reduced precision really ran
    assert worker_processes() <= before  # the model's processes stopped with the build


@slow
@native
def test_a_check_that_fails_keeps_the_build_on_float32(
    embedder, query_model_cache: Path, small_builds_count, model_calls, monkeypatch
):
    monkeypatch.setattr(bf16, "MIN_COSINE", 1.000001)  # no bfloat16 vector is that close
    with structlog.testing.capture_logs() as logs:
        vectors = embed_documents(embedder, TEXTS, 16, query_model_cache, progress=False)
    assert model_calls["bf16"] == 0  # the check, nothing more
    unused = [log for log in logs if log["event"] == "knowledge.embedding.bf16_unused"]
    assert len(unused) == 1 and "differ from float32" in unused[0]["reason"]
    full = embed_documents(embedder, TEXTS, 16, query_model_cache, bf16=False, progress=False)
    assert np.array_equal(vectors, full)


@slow
@native
def test_a_bf16_failure_after_the_check_hands_the_chunks_to_float32(
    embedder, query_model_cache: Path, small_builds_count, monkeypatch
):
    def fails(self: bf16.Bf16Encoder, *args: Any, **kwargs: Any) -> np.ndarray:
        raise RuntimeError("a worker process died")

    monkeypatch.setattr(bf16.Bf16Encoder, "encode", fails)
    with structlog.testing.capture_logs() as logs:
        vectors = embed_documents(embedder, TEXTS, 16, query_model_cache, progress=False)
    assert "knowledge.embedding.bf16_failed" in [log["event"] for log in logs]
    full = embed_documents(embedder, TEXTS, 16, query_model_cache, bf16=False, progress=False)
    assert np.array_equal(vectors, full)


def test_small_builds_and_fp32_never_load_the_bf16_model(
    embedder, query_model_cache: Path, monkeypatch
):
    started: list[int] = []
    monkeypatch.setattr(bf16, "processes_for_one_job", lambda *args: started.append(1))
    small = embed_documents(embedder, TEXTS, 16, query_model_cache, progress=False)
    monkeypatch.setattr(bf16, "FROM_CHUNKS", 1)
    full = embed_documents(embedder, TEXTS, 16, query_model_cache, bf16=False, progress=False)
    assert started == []
    assert np.array_equal(small, full)


def test_a_cpu_without_native_bf16_stays_on_float32(embedder, query_model_cache, monkeypatch):
    monkeypatch.setattr(bf16, "FROM_CHUNKS", 1)
    monkeypatch.setattr(bf16, "native_bf16", lambda: False)
    fp32 = checked_fp32_encoder(embedder, query_model_cache)
    assert fp32 is not None
    with bf16_encoder(fp32, TEXTS) as encoder:
        assert encoder is None


def test_document_precision_fp32_reaches_the_build(tmp_path: Path):
    (tmp_path / "docs").mkdir()
    settings = {"docs": str(tmp_path / "docs"), "index_path": str(tmp_path / "index")}
    assert index_settings(StoreConfig.model_validate(settings)).bf16
    fp32 = StoreConfig.model_validate({**settings, "document_precision": "fp32"})
    assert not index_settings(fp32).bf16
    with pytest.raises(ValueError, match="document_precision"):
        StoreConfig.model_validate({**settings, "document_precision": "fp16"})
