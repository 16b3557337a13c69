"""The last gate before results leave the plugin: does each chunk satisfy the filter asked?

Backends search within the filter, but a backend can be wrong about a chunk: a Milvus collection
that was not re-synced still filters on a document's old metadata, and access filters are pushed
down as a case-insensitive superset. So every result is checked again, on the metadata that will
be returned, with the same semantics the FAISS mask translator defines (evaluated over a
``MetadataColumns`` of just these chunks) and, for access, with the exact entitlement rule.
"""

from __future__ import annotations

from collections.abc import Sequence

from langchain_core.structured_query import FilterDirective

from rasa_context_retrieval.access.entitlements import AccessFilter
from rasa_context_retrieval.filters.columns import MetadataColumns
from rasa_context_retrieval.filters.faiss_translator import FaissTranslator
from rasa_context_retrieval.knowledge.models import Chunk


def conforming(
    chunks: Sequence[Chunk], directive: FilterDirective | None, access: AccessFilter | None
) -> tuple[list[bool], int]:
    """For each chunk, whether it satisfies ``directive`` and ``access``; and how many ``access``
    alone rejected."""
    if not chunks:
        return [], 0
    if directive is None:
        by_filter = [True] * len(chunks)
    else:
        columns = MetadataColumns([chunk.metadata for chunk in chunks])
        by_filter = [bool(ok) for ok in directive.accept(FaissTranslator(columns))]
    by_access = [access is None or access.admits(chunk.metadata) for chunk in chunks]
    rejected_by_access = sum(not ok for ok in by_access)
    return [a and b for a, b in zip(by_filter, by_access, strict=True)], rejected_by_access
