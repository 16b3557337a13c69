"""Reading the served version: exact filtered rankings, relevance, matching chunks, counts.

``search`` ranks by cosine similarity (``COSINE`` metric) within the filter, evaluated on the
server; with the default ``FLAT`` index it is exact. Every filter becomes an expression written
for the layout of the version searched (``milvus.serving``), and every relevance is the cosine
similarity clipped to [0, 1], as on FAISS.
"""

from __future__ import annotations

import time
from collections.abc import Mapping, Sequence
from dataclasses import dataclass
from typing import Any

import numpy as np
import structlog
from langchain_core.structured_query import FilterDirective
from numpy.typing import NDArray
from pymilvus import MilvusClient

from rasa_context_retrieval.filters.absence import HasAttribute
from rasa_context_retrieval.knowledge.models import Chunk, ScoredChunk
from rasa_context_retrieval.milvus.collection import METRIC, Collections, ids_expression
from rasa_context_retrieval.milvus.config import MilvusConfig
from rasa_context_retrieval.milvus.layout import CollectionLayout
from rasa_context_retrieval.milvus.normal_form import CHUNK_ID_FIELD
from rasa_context_retrieval.milvus.rows import METADATA_FIELD, TEXT_FIELD
from rasa_context_retrieval.milvus.serving import ServedVersion

logger = structlog.get_logger(__name__)

MAX_TOP_K = 16_384
"""Milvus' limit for ``limit`` in one search."""
MAX_MATCHED = 16_384
"""Most chunks ``matching`` returns (Milvus' limit for one query)."""


@dataclass(frozen=True)
class CollectionSearch:
    """Searches and queries on the version ``served`` names."""

    client: MilvusClient
    config: MilvusConfig
    served: ServedVersion
    collections: Collections
    planned: CollectionLayout

    def search(
        self, query_vector: NDArray[np.floating[Any]], filter: FilterDirective | None, k: int
    ) -> list[ScoredChunk]:
        """The ``k`` chunks most similar to ``query_vector`` among those ``filter`` allows.

        ``relevance`` is the cosine similarity clipped to [0, 1].
        """
        if not 1 <= k <= MAX_TOP_K:
            raise ValueError(f"k must be between 1 and {MAX_TOP_K}, got {k}.")
        started = time.perf_counter()
        version = self.served.served_or_raise()
        vector = np.asarray(query_vector, dtype=np.float32).reshape(-1)
        self.collections.check_dimension(version, len(vector))
        expression = "" if filter is None else filter.accept(version.translator)
        hits = self.client.search(
            version.name,
            data=[vector.tolist()],
            filter=expression,
            limit=k,
            output_fields=[TEXT_FIELD, METADATA_FIELD],
            search_params=self._search_params(),
        )[0]
        results = [_scored(hit) for hit in hits]
        logger.debug(
            "milvus.search.done",
            collection=version.name,
            filter=expression,
            k=k,
            hits=len(results),
            ms=round((time.perf_counter() - started) * 1000, 2),
        )
        return results

    def relevance(
        self, query_vector: NDArray[np.floating[Any]], chunk_ids: Sequence[str]
    ) -> dict[str, float]:
        """Cosine similarity (clipped to [0, 1]) of ``query_vector`` to each of ``chunk_ids``
        that the collection holds, computed by Milvus: no vector leaves the server."""
        if not 1 <= len(chunk_ids) <= MAX_TOP_K:
            raise ValueError(f"between 1 and {MAX_TOP_K} chunk ids, got {len(chunk_ids)}")
        hits = self.client.search(
            self.served.served_or_raise().name,
            data=[np.asarray(query_vector, dtype=np.float32).reshape(-1).tolist()],
            filter=ids_expression(chunk_ids),
            limit=len(chunk_ids),
            output_fields=[],
            search_params=self._search_params(),
        )[0]
        return {str(hit["id"]): _clipped(hit["distance"]) for hit in hits}

    def matching(self, filter: FilterDirective | None) -> list[Chunk]:
        """Up to ``MAX_MATCHED`` chunks ``filter`` admits, with their metadata (no text)."""
        version = self.served.served_or_raise()
        rows = self.client.query(
            version.name,
            filter="" if filter is None else filter.accept(version.translator),
            output_fields=[METADATA_FIELD],
            limit=MAX_MATCHED,
        )
        return [
            Chunk(chunk_id=str(row[CHUNK_ID_FIELD]), text="", metadata=row[METADATA_FIELD] or {})
            for row in rows
        ]

    def has_attribute(self, attribute: str) -> bool:
        """Whether some chunk has ``attribute`` (a query that stops at the first one)."""
        version = self.served.served()
        if not attribute or version is None:
            return False
        expression = HasAttribute(attribute=attribute).accept(version.translator)
        return bool(self.client.query(version.name, filter=expression, limit=1))

    def expression(self, filter: FilterDirective | None) -> str:
        """The Milvus expression a filter becomes on the served version ("" = no filter); for
        logs and debugging."""
        version = self.served.served() or self.served.version_of("", self.planned)
        return "" if filter is None else filter.accept(version.translator)

    def count(self) -> int:
        """Number of chunks in the served version (0 if there is none)."""
        version = self.served.served()
        if version is None:
            return 0
        rows = self.client.query(
            version.name, filter="", output_fields=["count(*)"], consistency_level="Strong"
        )
        return int(rows[0]["count(*)"])

    def _search_params(self) -> dict[str, Any]:
        return {"metric_type": METRIC, "params": dict(self.config.search_params)}


def _scored(hit: Mapping[str, Any]) -> ScoredChunk:
    entity = hit["entity"]
    chunk = Chunk(
        chunk_id=str(hit["id"]),
        text=entity[TEXT_FIELD],
        metadata=dict(entity[METADATA_FIELD] or {}),
    )
    return ScoredChunk(chunk=chunk, relevance=_clipped(hit["distance"]))


def _clipped(distance: float) -> float:
    return float(np.clip(distance, 0.0, 1.0))
