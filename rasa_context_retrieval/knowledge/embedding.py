"""Embedding chunks and queries with the Rasa ``EmbeddingClient`` that EnterpriseSearchPolicy built.

The policy builds the client from its ``embeddings:`` config (any provider Rasa supports), so the
plugin never configures a second model. Vectors are L2-normalised here, once: inner product is then
cosine similarity for every backend, which is what gives ``relevance`` its single meaning.
"""

from __future__ import annotations

from collections.abc import Sequence
from typing import Any

import numpy as np
from tqdm import tqdm

from rasa_context_retrieval.errors import ContextRetrievalError
from rasa_context_retrieval.knowledge.fingerprints import settings_fingerprint


class EmbeddingError(ContextRetrievalError, RuntimeError):
    """The embedding client failed or returned something unusable."""


def embedder_identity(client: Any) -> str:
    """A stable id of the embedding model: part of the index fingerprint.

    Only the model-defining keys count (provider, model, deployment, dimensions), never secrets or
    timeouts, so rotating an API key does not trigger a re-index.
    """
    config = getattr(client, "config", None)
    config = config if isinstance(config, dict) else {}
    keys = ("provider", "model", "deployment", "dimensions", "api_type")
    picked = {key: str(config[key]) for key in keys if config.get(key) is not None}
    picked.setdefault("model", str(getattr(client, "model", type(client).__name__)))
    picked["client"] = type(client).__name__
    return settings_fingerprint(picked, length=16)


def normalise(vectors: np.ndarray) -> np.ndarray:
    vectors = np.ascontiguousarray(vectors, dtype=np.float32)
    norms = np.linalg.norm(vectors, axis=1, keepdims=True)
    return vectors / np.where(norms == 0, 1.0, norms)


def embed_texts(
    client: Any, texts: Sequence[str], batch_size: int, *, progress: bool = True
) -> np.ndarray:
    """Embed in batches (API token limits), with one progress bar for the whole knowledge base."""
    batches = []
    with tqdm(total=len(texts), desc="Embedding chunks", unit="chunk", disable=not progress) as bar:
        for start in range(0, len(texts), batch_size):
            batch = [text if text.strip() else "." for text in texts[start : start + batch_size]]
            batches.append(_embed(client, batch))
            bar.update(len(batch))
    if not batches:
        return np.zeros((0, 0), dtype=np.float32)
    return normalise(np.vstack(batches))


def embed_query(client: Any, text: str) -> np.ndarray:
    """One normalised query vector."""
    return embed_queries(client, [text])[0]


def embed_queries(client: Any, texts: Sequence[str]) -> np.ndarray:
    """Normalised query vectors in one call (the texts that form one search's query vector)."""
    return normalise(_embed(client, [text or "." for text in texts]))


def _embed(client: Any, texts: list[str]) -> np.ndarray:
    try:
        response = client.embed(texts)
    except Exception as error:  # any provider error: the caller decides how to surface it
        raise EmbeddingError(f"embedding {len(texts)} text(s) failed: {error}") from error
    data = getattr(response, "data", response)
    vectors = np.asarray(data, dtype=np.float32)
    if vectors.ndim != 2 or vectors.shape[0] != len(texts) or vectors.shape[1] == 0:
        raise EmbeddingError(
            f"embedding client returned shape {vectors.shape} for {len(texts)} texts"
        )
    return vectors
