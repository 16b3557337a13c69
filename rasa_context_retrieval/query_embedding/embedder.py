"""Which code turns a query into a vector: Rasa's embedding client, or its ONNX twin.

When the client is Rasa's ``huggingface_local`` provider on a local sentence-transformers
folder, an ONNX export of the same model is used instead (``vector_store.query_embedder``:
``auto``, the default; ``int8`` for the quantized export; ``rasa`` turns it off). It is used only
after a self-check on fixed texts gives Rasa's vectors; whenever anything on this path fails, the
reason is logged once and Rasa's client embeds the queries. Preparing it (export, session,
self-check) runs in a background thread, so start-up is not slower: until it is ready, Rasa's
client embeds the queries, with the same vectors. A build embeds the chunks through the same
checked export (``query_embedding.documents``), and through Rasa's client otherwise.
"""

from __future__ import annotations

import os
import threading
from collections.abc import Callable, Sequence
from pathlib import Path
from typing import Any, Protocol

import numpy as np
import structlog

from rasa_context_retrieval.knowledge.embedding import (
    embed_queries,
    embed_query,
    embedder_identity,
    normalise,
)
from rasa_context_retrieval.knowledge.model_integrity import file_sha256
from rasa_context_retrieval.query_embedding.modes import QueryEmbedderMode

logger = structlog.get_logger()

_OPENED: dict[tuple[str, bool, str], tuple[Any, float]] = {}
_OPENED_LOCK = threading.Lock()

LOCAL_PROVIDER = "huggingface_local"
MIN_COSINE = 0.9999
"""The fp32 export must give Rasa's vectors on every self-check text."""
INT8_MIN_COSINE = 0.85
"""int8 vectors move (bench/results/query_embedding.md); below this the export is broken."""
SELF_CHECK_TEXTS = (
    "How much does the premium plan cost?",
    "and how many devices can I connect?",
    "  Mein Passwort funktioniert nicht, was kann ich tun?  ",
    "東京のデータセンターはどこですか",
    "ERROR 0x80070005: access denied while syncing C:\\Users\\me\\Documents",
    ".",
    "a",
)
LONG_SELF_CHECK_TEXT = " ".join(["a question longer than the model's maximum length"] * 30)
"""Checked in a batch of its own, so that the short texts are not padded to its length."""


class QueryEmbedder(Protocol):
    """Turns one query text into one normalised vector."""

    def embed(self, text: str) -> np.ndarray: ...

    def embed_many(self, texts: Sequence[str]) -> Sequence[np.ndarray]:
        """The texts of one search in one call: per-call overhead is what a query pays."""
        ...


class RasaQueryEmbedder:
    """Queries through Rasa's embedding client, exactly like the documents."""

    def __init__(self, client: Any) -> None:
        self.client = client

    def embed(self, text: str) -> np.ndarray:
        return embed_query(self.client, text)

    def embed_many(self, texts: Sequence[str]) -> Sequence[np.ndarray]:
        return list(embed_queries(self.client, texts))


class OnnxQueryEmbedder:
    """Queries through the ONNX export, batched across concurrent searches.

    If onnxruntime ever fails on a query, that query and all later ones go to Rasa's client;
    the failure is logged once.
    """

    def __init__(self, encoder: Any, fallback: RasaQueryEmbedder) -> None:
        from rasa_context_retrieval.query_embedding.batcher import QueryBatcher

        self.encoder = encoder
        self.fallback = fallback
        self.batcher = QueryBatcher(self.encode)
        self._failed = threading.Event()

    def encode(self, texts: Sequence[str], cores: int = 1) -> np.ndarray:
        return normalise(self.encoder.encode([text or "." for text in texts], cores))

    def embed(self, text: str) -> np.ndarray:
        return self.embed_many([text])[0]

    def embed_many(self, texts: Sequence[str]) -> Sequence[np.ndarray]:
        if not self._failed.is_set():
            try:
                return self.batcher.embed_many(texts)
            except Exception as error:
                if not self._failed.is_set():
                    self._failed.set()
                    logger.error(
                        "query_embedder.onnx.failed",
                        error=str(error),
                        event_info="embedding queries with Rasa's client from now on",
                    )
        return self.fallback.embed_many(texts)


def open_query_embedder(
    mode: QueryEmbedderMode, client: Any, cache_dir: Path, *, background: bool = True
) -> QueryEmbedder:
    """The fastest embedder that gives Rasa's vectors for ``client``; Rasa's client otherwise.

    With ``background`` the ONNX embedder is prepared in a thread (export on first use, session,
    self-check: seconds) while Rasa's client embeds the queries, so start-up takes no longer.
    """
    rasa = RasaQueryEmbedder(client)
    model_dir = local_model_folder(client) if mode != "rasa" else None
    if model_dir is None:
        return rasa  # other providers are untouched, silently: nothing to speed up there
    if background:
        return PreparingQueryEmbedder(rasa, lambda: _prepared(mode, rasa, model_dir, cache_dir))
    return _prepared(mode, rasa, model_dir, cache_dir)


class PreparingQueryEmbedder:
    """Rasa's client until the ONNX embedder is prepared and checked, then the ONNX embedder.

    Both give the same vectors (that is what the self-check establishes), so the switch changes
    no result, only the time a query takes.
    """

    def __init__(self, rasa: RasaQueryEmbedder, prepare: Callable[[], QueryEmbedder]) -> None:
        self.current: QueryEmbedder = rasa
        self.ready = threading.Event()
        """Set once preparation ended, whichever embedder it chose."""
        # Not a daemon: a process that exits while torch exports the model would abort in C++
        # ("terminate called without an active exception"); exit waits for the thread instead.
        threading.Thread(
            target=self._prepare, args=(prepare,), name="query-embedder-prepare", daemon=False
        ).start()

    def _prepare(self, prepare: Callable[[], QueryEmbedder]) -> None:
        try:
            self.current = prepare()
        finally:
            self.ready.set()

    def embed(self, text: str) -> np.ndarray:
        return self.current.embed(text)

    def embed_many(self, texts: Sequence[str]) -> Sequence[np.ndarray]:
        return self.current.embed_many(texts)


def _prepared(
    mode: QueryEmbedderMode, rasa: RasaQueryEmbedder, model_dir: Path, cache_dir: Path
) -> QueryEmbedder:
    try:
        encoder, worst = _checked_encoder(model_dir, cache_dir, rasa.client, int8=mode == "int8")
    except Exception as error:  # any failure of this optional path: say why, keep working
        _fall_back(f"the ONNX export could not be used: {error}")
        return rasa
    minimum = INT8_MIN_COSINE if mode == "int8" else MIN_COSINE
    if worst < minimum:
        _fall_back(f"the ONNX export's vectors differ from Rasa's (cosine {worst:.6f} < {minimum})")
        return rasa
    logger.info(
        "query_embedder.onnx.ready", model=str(model_dir), export=str(encoder.path), cosine=worst
    )
    return OnnxQueryEmbedder(encoder, rasa)


def checked_fp32_encoder(client: Any, cache_dir: Path) -> Any | None:
    """The fp32 ONNX encoder of ``client``'s local model, if it has one whose self-check gives
    Rasa's vectors (``query_embedding.documents`` embeds chunks with it); None otherwise, with
    the reason logged."""
    model_dir = local_model_folder(client)
    if model_dir is None:
        return None
    try:
        encoder, worst = _checked_encoder(model_dir, cache_dir, client, int8=False)
    except Exception as error:  # any failure of this optional path: say why, keep working
        _fall_back(f"the ONNX export could not be used: {error}", "chunks")
        return None
    if worst < MIN_COSINE:
        _fall_back(f"the ONNX export's vectors differ from Rasa's (cosine {worst:.6f})", "chunks")
        return None
    return encoder


def local_model_folder(client: Any) -> Path | None:
    """The model folder when ``client`` is Rasa's local sentence-transformers client."""
    config = getattr(client, "config", None)
    if not isinstance(config, dict) or config.get("provider") != LOCAL_PROVIDER:
        return None
    folder = Path(str(config.get("model") or ""))
    return folder if (folder / "modules.json").is_file() else None


def self_check(encoder: Any, client: Any) -> float:
    """The smallest cosine between the encoder's and Rasa's vectors on the fixed texts."""
    from rasa_context_retrieval.knowledge.embedding import embed_texts

    worst = 1.0
    for texts in (list(SELF_CHECK_TEXTS), [LONG_SELF_CHECK_TEXT]):
        expected = embed_texts(client, texts, batch_size=len(texts), progress=False)
        actual = normalise(encoder.encode(texts))
        worst = min(worst, float(np.min(np.sum(expected * actual, axis=1))))
    return worst


def _checked_encoder(
    model_dir: Path, cache_dir: Path, client: Any, *, int8: bool
) -> tuple[Any, float]:
    """The encoder and its self-check result, once per export and embedding model in a process.

    A process that opens several stores on one model (tests, benchmarks, a reconnect with a new
    configuration) shares the session; each ``cache_dir`` still holds the export (a hard link).
    """
    from rasa_context_retrieval.query_embedding.onnx import (
        LocalModel,
        OnnxQueryEncoder,
        cached_export,
    )

    model = LocalModel.describe(model_dir)
    key = (model.fingerprint(), int8, embedder_identity(client))
    with _OPENED_LOCK:
        known = _OPENED.get(key)
        if known is not None and _holds_same_export(known[0].path, model, cache_dir, int8=int8):
            return known
        encoder = _opened_export(key, model, cache_dir, int8=int8)
        if encoder is None:
            encoder = OnnxQueryEncoder(model, cached_export(model, cache_dir, int8=int8))
        _OPENED[key] = (encoder, self_check(encoder, client))
        return _OPENED[key]


def _opened_export(
    key: tuple[str, bool, str], model: Any, cache_dir: Path, *, int8: bool
) -> Any | None:
    """An encoder this process already opened on the same export for another client (the export
    depends on the model files only; the self-check, which depends on the client, still runs),
    once ``cache_dir`` holds that export. None when there is none: export (seconds of a child
    process) or load from ``cache_dir``."""
    for (fingerprint, quantized, _), (encoder, _) in _OPENED.items():
        if (fingerprint, quantized) == key[:2] and _holds_same_export(
            encoder.path, model, cache_dir, int8=int8
        ):
            return encoder
    return None


def _holds_same_export(checked: Path, model: Any, cache_dir: Path, *, int8: bool) -> bool:
    """Whether ``cache_dir`` holds (or now, as a copy, holds) the export already checked."""
    from rasa_context_retrieval.query_embedding.onnx import cached_export, export_file

    if not checked.is_file():  # its folder was removed: check a new export
        return False
    target = export_file(cache_dir, model.fingerprint(), int8=int8)
    if not target.is_file():
        cached_export(model, cache_dir, int8=int8, source=checked)
        return True
    # A link to the checked export (what cached_export makes) is the same file: no digest needed.
    return os.path.samefile(target, checked) or file_sha256(target) == file_sha256(checked)


def _fall_back(reason: str, texts: str = "queries") -> None:
    logger.warning(
        "query_embedder.onnx.unused",
        reason=reason,
        event_info=f"{texts} are embedded with Rasa's client (same vectors, slower); "
        "set `query_embedder: rasa` in the vector_store block to silence this",
    )
