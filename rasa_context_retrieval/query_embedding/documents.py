"""Embedding a knowledge base's chunks: through the ONNX export of Rasa's local model, in groups of
similar length, when the export gives Rasa's vectors; through Rasa's client otherwise.

Embedding is most of a build (bench/results/build_speed.md). Rasa's client runs the model in
torch; the same weights in onnxruntime carry less overhead per call, and a model call is padded
to its longest text, so chunks are embedded in groups of similar token counts
(``length_groups``, as a query's texts are), each group on one core, the groups side by side
(``workers.side_by_side``). Chunks go through in windows of ``WINDOW_PER_CORE`` texts per core,
shortest first, so that no call holds the attention of thousands of texts in memory.

The export is used only after the self-check that also guards queries
(``query_embedding.embedder``): the vectors are Rasa's within cosine 0.9999, so an index built
either way keeps its vectors and its fingerprint, and one that mixes both serves the same
results. A large build on a CPU that computes in bfloat16 natively runs the same model in
bfloat16 instead, after a check of its own on the build's chunks (``query_embedding.bf16``).
Rasa's client replaces line breaks by spaces before embedding; so do these paths.

A text that occurs more than once (a disclaimer or a navigation block on every page, a section
shared by two documents) is embedded once and its vector given to every occurrence: the same text
always gets the same vector, so this changes no vector, only the work.
"""

from __future__ import annotations

import os
from collections.abc import Sequence
from pathlib import Path
from typing import Any

import numpy as np
import structlog
from tqdm import tqdm

from rasa_context_retrieval.knowledge.embedding import embed_texts, normalise
from rasa_context_retrieval.query_embedding.bf16 import Bf16Encoder, bf16_encoder
from rasa_context_retrieval.query_embedding.embedder import checked_fp32_encoder

logger = structlog.get_logger()

WINDOW_PER_CORE = 64
"""Chunks handed to the model at once per core: enough for groups of equal length to form,
few enough that one call's attention (texts x tokens² x heads) stays in the hundreds of MB."""


def embed_documents(
    client: Any,
    texts: Sequence[str],
    batch_size: int,
    export_folder: Path | None,
    *,
    bf16: bool = True,
    progress: bool = True,
) -> np.ndarray:
    """Normalised vectors of ``texts``, one row each, in order.

    ``export_folder``: where the ONNX export is cached (None: always Rasa's client, in batches
    of ``batch_size``). ``bf16``: a large build may use bfloat16 where its check holds
    (``query_embedding.bf16``). If a path fails half-way, the whole batch goes to the next one:
    bfloat16, then the export, then Rasa's client.
    """
    distinct = list(dict.fromkeys(texts))
    if len(distinct) == len(texts):
        return _embedded_once(client, texts, batch_size, export_folder, bf16, progress)
    row_of = {text: row for row, text in enumerate(distinct)}
    vectors = _embedded_once(client, distinct, batch_size, export_folder, bf16, progress)
    return vectors[[row_of[text] for text in texts]]


def _embedded_once(
    client: Any,
    texts: Sequence[str],
    batch_size: int,
    export_folder: Path | None,
    bf16: bool,
    progress: bool,
) -> np.ndarray:
    """``embed_documents`` of texts that are all distinct."""
    fp32 = checked_fp32_encoder(client, export_folder) if export_folder and texts else None
    if fp32 is not None and bf16:
        with bf16_encoder(fp32, _prepared(texts)) as fast:
            if fast is not None:
                try:
                    return _embedded_in_bf16(fast, texts, progress)
                except Exception as error:  # float32 below keeps the promise too, slower
                    logger.error(
                        "knowledge.embedding.bf16_failed",
                        error=str(error),
                        event_info="embedding the chunks in float32 instead",
                    )
    if fp32 is not None:
        try:
            return _embedded_with(fp32, texts, progress)
        except Exception as error:  # the client below gives the same vectors, slower
            logger.error(
                "knowledge.embedding.onnx_failed",
                error=str(error),
                event_info="embedding the chunks with Rasa's client instead",
            )
    return embed_texts(client, texts, batch_size, progress=progress)


def _embedded_with(encoder: Any, texts: Sequence[str], progress: bool) -> np.ndarray:
    """Texts in windows of similar length, each window split into groups across the cores."""
    cores = max(1, os.cpu_count() or 1)
    prepared = _prepared(texts)
    order = sorted(range(len(prepared)), key=lambda row: len(prepared[row]))
    window = WINDOW_PER_CORE * cores
    vectors = np.empty((len(prepared), 0), dtype=np.float32)
    with tqdm(total=len(texts), desc="Embedding chunks", unit="chunk", disable=not progress) as bar:
        for start in range(0, len(order), window):
            rows = order[start : start + window]
            found = encoder.encode([prepared[row] for row in rows], cores)
            if vectors.shape[1] == 0:
                vectors = np.empty((len(prepared), found.shape[1]), dtype=np.float32)
            vectors[rows] = found
            bar.update(len(rows))
    return normalise(vectors)


def _embedded_in_bf16(encoder: Bf16Encoder, texts: Sequence[str], progress: bool) -> np.ndarray:
    """All texts in one go: the encoder's calls hold 32 texts whatever it is given, and windows
    would make its worker processes wait for the slowest at each (one window of 10,000 chunks
    embedded 300 per second, windows of 2,048 of them 253)."""
    with tqdm(total=len(texts), desc="Embedding chunks", unit="chunk", disable=not progress) as bar:
        return normalise(encoder.encode(_prepared(texts), done=bar.update))


def _prepared(texts: Sequence[str]) -> list[str]:
    """Each text as Rasa's client embeds it: line breaks as spaces, an empty text as "."."""
    return [text.replace("\n", " ") if text.strip() else "." for text in texts]
