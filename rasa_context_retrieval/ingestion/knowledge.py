"""What ingestion hands every backend: chunks, their vectors, BM25 and metadata columns.

``EmbeddedKnowledge`` is the one input of ``SearchBackend.publish``: the FAISS backend builds (or
finds) its dense index over its vectors, the Milvus writer writes its chunks and vectors as rows
and keeps it for BM25 and for the values a reader may see. It is made once per change of the
documents (``ingestion.build``, or read back from the published index folder by ``faiss.index``)
and never changes afterwards; a refresh makes a new one. A backend therefore needs nothing from
another backend's folder, and a new backend is one folder that reads this type.

The row rules here (which rows a filter allows, which values a reader may see) are written once
and used by every backend that keeps the rows in this process.
"""

from __future__ import annotations

from collections.abc import Iterable, Mapping, Sequence
from dataclasses import dataclass, field
from functools import cached_property
from typing import Any

import numpy as np
from langchain_core.structured_query import FilterDirective

from rasa_context_retrieval.access.entitlements import AccessFilter
from rasa_context_retrieval.filters.columns import MetadataColumns
from rasa_context_retrieval.filters.masks import FilterMasks
from rasa_context_retrieval.knowledge.loader import IngestProblem
from rasa_context_retrieval.knowledge.models import Chunk
from rasa_context_retrieval.retrieve.languages import DEFAULT_LANGUAGE
from rasa_context_retrieval.retrieve.lexical import LexicalIndex, LexicalSettings


@dataclass(frozen=True, eq=False)
class EmbeddedKnowledge:
    """The knowledge base as ingested: row ``i`` of every member is one chunk.

    Compared by identity: a backend may keep what it derived from one instance (its masks, a
    FAISS index) for exactly that instance.
    """

    fingerprint: str
    """Of the documents and settings it was made from (``ingestion.settings``)."""
    embedder: str
    """Identity of the embedding model that made ``vectors``."""
    chunks: Sequence[Chunk]
    vectors: np.ndarray
    """Normalised float32 chunk vectors, read-only (memory-mapped when read from disk)."""
    lexical: LexicalIndex
    columns: MetadataColumns
    problems: Sequence[IngestProblem] = field(default=())
    """Files ingestion skipped, and why."""

    @classmethod
    def of(
        cls,
        fingerprint: str,
        embedder: str,
        chunks: Sequence[Chunk],
        vectors: np.ndarray,
        problems: Sequence[IngestProblem] = (),
        language: str = DEFAULT_LANGUAGE,
    ) -> EmbeddedKnowledge:
        """Chunks and their vectors, with BM25 (in ``language``) and columns built over them."""
        return cls(
            fingerprint=fingerprint,
            embedder=embedder,
            chunks=chunks,
            vectors=vectors,
            lexical=LexicalIndex.build(
                [chunk.text for chunk in chunks], LexicalSettings(language=language)
            ),
            columns=MetadataColumns([chunk.metadata for chunk in chunks]),
            problems=tuple(problems),
        )

    def __len__(self) -> int:
        return len(self.chunks)

    @cached_property
    def masks(self) -> FilterMasks:
        """Masks of recent filters over these rows (they go with this knowledge)."""
        return FilterMasks(self.columns)

    @cached_property
    def row_of(self) -> dict[str, int]:
        """Row of each chunk id (built on first use: it reads every chunk)."""
        return {chunk.chunk_id: row for row, chunk in enumerate(self.chunks)}

    def vectors_by_chunk_id(self) -> dict[str, np.ndarray]:
        """Vectors by chunk id, so that a rebuild embeds only chunks with new text."""
        vectors = np.array(self.vectors)  # a copy: the storage may die with this knowledge
        return {chunk.chunk_id: vectors[row] for row, chunk in enumerate(self.chunks)}


def filter_mask(
    knowledge: EmbeddedKnowledge, directive: FilterDirective | None
) -> np.ndarray | None:
    """The rows a filter allows (read-only, kept with the knowledge); None without a filter."""
    if directive is None:
        return None
    return knowledge.masks.mask(directive)


def served_mask(
    knowledge: EmbeddedKnowledge, directive: FilterDirective | None, withheld: np.ndarray | None
) -> np.ndarray | None:
    """The rows a filter allows minus the ``withheld`` rows (None: every row)."""
    mask = filter_mask(knowledge, directive)
    if withheld is None:
        return mask
    return ~withheld if mask is None else mask & ~withheld


def readable_values(
    knowledge: EmbeddedKnowledge,
    attributes: Sequence[str],
    access: AccessFilter,
    withheld: np.ndarray | None = None,
) -> dict[str, frozenset[str]]:
    """Values of the rows ``access`` admits and nothing withholds: its directive's (cached) mask
    narrows the rows, the exact rule decides."""
    mask = served_mask(knowledge, access.directive, withheld)
    rows = range(len(knowledge)) if mask is None else np.flatnonzero(mask)
    return values_admitted((knowledge.chunks[row].metadata for row in rows), attributes, access)


def values_admitted(
    metadatas: Iterable[Mapping[str, Any]], attributes: Sequence[str], access: AccessFilter
) -> dict[str, frozenset[str]]:
    """The distinct values (as ``values_of`` reads them) of the metadata ``access`` admits."""
    columns = MetadataColumns([metadata for metadata in metadatas if access.admits(metadata)])
    return {attribute: columns.values_of(attribute) for attribute in attributes}
