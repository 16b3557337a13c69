"""What a search asks of a backend, whichever backend it is.

One request type for every backend (FAISS in ``faiss/``, Milvus in ``milvus/``), so that the
engine builds a search once and each backend only decides how to run it.
"""

from __future__ import annotations

from collections.abc import Sequence
from dataclasses import dataclass

import numpy as np
from langchain_core.structured_query import FilterDirective


@dataclass(frozen=True)
class RetrievalRequest:
    """What to retrieve: the searched text (BM25 matches the first), and one vector per view of
    the query and per paraphrase (the first, the leading view, scores relevance)."""

    texts: Sequence[str]
    vectors: Sequence[np.ndarray]
    filter: FilterDirective | None
    top_k: int
    threshold: float
    candidates: int
    hybrid: bool
