"""Chunks, the unit that is embedded, indexed, filtered and returned."""

from __future__ import annotations

from dataclasses import dataclass, field
from typing import Any


@dataclass(frozen=True)
class Chunk:
    """A piece of one document, carrying that document's metadata unchanged plus ``source``.

    ``chunk_id`` is stable across restarts (document path + ordinal + text hash), so a backend
    can upsert it and tell unchanged chunks from changed ones.
    """

    chunk_id: str
    text: str
    metadata: dict[str, Any] = field(default_factory=dict)


@dataclass(frozen=True)
class ScoredChunk:
    """A retrieved chunk with its relevance.

    ``relevance`` is the cosine similarity between the query embedding and the chunk embedding,
    clipped to [0, 1]: 1 means the same direction, 0 means unrelated or opposite. It has this one
    meaning whatever the backend or the fusion used to rank.
    """

    chunk: Chunk
    relevance: float
