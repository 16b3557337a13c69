"""Among the results, documents specific to what the user named come before general ones.

With ``absent_means_all`` (``filters.absence``) the search admits general documents,
which lack the attribute, next to the specific ones. "How do I enable offline files? And on
Android?" should then still be answered by the Android page when it is relevant, not by a
general plan page that merely mentions Android; but when the specific pages are off-topic (the
user's plan excludes the Android page), the general answer must win.

So the final ``top_k`` (already the most relevant chunks the widened filter allows) is
partitioned, stably: chunks that also satisfy the filter *as written* (the user's words taken
strictly) first, then the general ones. A specific chunk too weak to reach the ``top_k`` is
never promoted, and with nothing specific there the order is unchanged. No tuning constant: the
only cut is ``top_k``, which the developer chose.
"""

from __future__ import annotations

from collections.abc import Sequence

from langchain_core.structured_query import FilterDirective

from rasa_context_retrieval.filters.columns import MetadataColumns
from rasa_context_retrieval.filters.faiss_translator import FaissTranslator
from rasa_context_retrieval.knowledge.models import ScoredChunk


def specific_first(
    results: Sequence[ScoredChunk], strict_filter: FilterDirective | None
) -> list[ScoredChunk]:
    """``results`` with those satisfying ``strict_filter`` first, each group in its order."""
    if strict_filter is None or len(results) < 2:
        return list(results)
    # The filter is evaluated row by row, so the result chunks alone give the same answer as
    # the whole index would, for a handful of rows instead of every chunk.
    columns = MetadataColumns([result.chunk.metadata for result in results])
    specific = strict_filter.accept(FaissTranslator(columns))
    return [r for r, s in zip(results, specific, strict=True) if s] + [
        r for r, s in zip(results, specific, strict=True) if not s
    ]
