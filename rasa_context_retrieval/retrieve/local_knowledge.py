"""What a backend may read from the knowledge this process built: rows, vectors, BM25, masks.

Ingestion builds one local index of the documents (``faiss.index.KnowledgeIndex`` today); the
FAISS backend serves it, the Milvus writer syncs its collection from it and keeps it for BM25 and
for the values its readers may see. Both read it through ``LocalKnowledge``, so a backend never
imports another backend's folder. The row rules here (which rows a filter allows, which values a
reader may see) are written once and used by every backend that keeps local rows.
"""

from __future__ import annotations

from collections.abc import Iterable, Mapping, Sequence
from typing import Any, Protocol

import numpy as np
from langchain_core.structured_query import FilterDirective

from rasa_context_retrieval.access.entitlements import AccessFilter
from rasa_context_retrieval.filters.columns import MetadataColumns
from rasa_context_retrieval.knowledge.models import Chunk
from rasa_context_retrieval.retrieve.lexical import LexicalIndex


class RowMasks(Protocol):
    """The rows each filter allows, computed once per filter."""

    def mask(self, directive: FilterDirective) -> np.ndarray: ...


class LocalKnowledge(Protocol):
    """The knowledge base as built in this process: row ``i`` of every member is one chunk."""

    @property
    def chunks(self) -> Sequence[Chunk]: ...

    @property
    def vectors(self) -> np.ndarray: ...

    @property
    def lexical(self) -> LexicalIndex: ...

    @property
    def columns(self) -> MetadataColumns: ...

    @property
    def masks(self) -> RowMasks: ...

    def __len__(self) -> int: ...


def filter_mask(knowledge: LocalKnowledge, directive: FilterDirective | None) -> np.ndarray | None:
    """The rows a filter allows (read-only, kept with the index); None when there is no filter."""
    if directive is None:
        return None
    return knowledge.masks.mask(directive)


def served_mask(
    knowledge: LocalKnowledge, directive: FilterDirective | None, withheld: np.ndarray | None
) -> np.ndarray | None:
    """The rows a filter allows minus the ``withheld`` rows (None: every row)."""
    mask = filter_mask(knowledge, directive)
    if withheld is None:
        return mask
    return ~withheld if mask is None else mask & ~withheld


def readable_values(
    knowledge: LocalKnowledge,
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
