"""Query vectors by text, remembered across searches, embedded one search at a time.

A follow-up's query vector mixes several texts (the message, earlier questions, the last bot
reply). Embedding them one call each would multiply the per-call overhead that dominates a
query's cost, so the texts a search still lacks are embedded together in one call. Vectors are
read-only and shared: a repeated question or an earlier turn costs nothing the next time.
"""

from __future__ import annotations

import threading
from collections.abc import Sequence

import numpy as np
from cachetools import LRUCache

from rasa_context_retrieval.query_embedding.embedder import QueryEmbedder


class QueryVectors:
    """``vectors(texts)`` in order; missing ones embedded in one call, then remembered."""

    def __init__(self, embedder: QueryEmbedder, size: int) -> None:
        self._embedder = embedder
        self._cache: LRUCache[str, np.ndarray] = LRUCache(maxsize=size)
        self._lock = threading.Lock()

    def vectors(self, texts: Sequence[str]) -> list[np.ndarray]:
        with self._lock:
            known = {text: self._cache[text] for text in texts if text in self._cache}
        missing = [text for text in dict.fromkeys(texts) if text not in known]
        if missing:
            for text, vector in zip(missing, self._embedder.embed_many(missing), strict=True):
                vector = np.asarray(vector)
                vector.setflags(write=False)
                known[text] = vector
            with self._lock:
                for text in missing:
                    self._cache[text] = known[text]
        return [known[text] for text in texts]

    def clear(self) -> None:
        with self._lock:
            self._cache.clear()
