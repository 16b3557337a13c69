"""One physical collection of a knowledge base (a version): its schema, dimension and row chores.

A version is created with the fields every row has (``milvus.rows``), the typed fields its layout
declares (``milvus.layout``) and the vector index the ``milvus:`` block names; its indexes are
built in the background and awaited once, before the version is published (``milvus.sync``).
Whatever reads or removes rows by id, or walks every row, does it here in batches Milvus
accepts, so the sync and the search modules never spell a batch or an id list themselves.
"""

from __future__ import annotations

from collections.abc import Iterator, Sequence
from dataclasses import dataclass
from typing import Any

import structlog
from pymilvus import DataType, MilvusClient

from rasa_context_retrieval.milvus.config import MilvusConfig
from rasa_context_retrieval.milvus.expression import MilvusExpressionTranslator, string_literal
from rasa_context_retrieval.milvus.layout import SCALAR_INDEXES, CollectionLayout
from rasa_context_retrieval.milvus.normal_form import (
    CHUNK_ID_FIELD,
    FILTERABLE_FIELD,
    OVERFLOW_FIELD,
)
from rasa_context_retrieval.milvus.rows import (
    HASH_FIELD,
    MAX_ID_BYTES,
    MAX_SOURCE_BYTES,
    MAX_VARCHAR_BYTES,
    METADATA_FIELD,
    SOURCE_FIELD,
    TEXT_FIELD,
    VECTOR_FIELD,
)

logger = structlog.get_logger(__name__)

METRIC = "COSINE"
SCAN_BATCH = 4_096
DELETE_BATCH = 1_000


@dataclass
class CollectionVersion:
    """One physical collection of the knowledge base and how it is laid out."""

    name: str
    layout: CollectionLayout
    translator: MilvusExpressionTranslator
    dimension: int | None = None


def ids_expression(chunk_ids: Sequence[str]) -> str:
    """The expression that selects exactly ``chunk_ids``' rows."""
    literals = ", ".join(string_literal(chunk_id) for chunk_id in chunk_ids)
    return f"{CHUNK_ID_FIELD} in [{literals}]"


class Collections:
    """Creating versions and the row chores every part of the store shares."""

    def __init__(self, client: MilvusClient, config: MilvusConfig) -> None:
        self._client = client
        self.config = config

    def scan(self, collection: str, fields: list[str]) -> Iterator[dict[str, Any]]:
        """Every row of ``collection`` (a ``Strong`` read), ``fields`` of each."""
        iterator = self._client.query_iterator(
            collection,
            batch_size=SCAN_BATCH,
            filter="",
            output_fields=fields,
            consistency_level="Strong",
        )
        try:
            while batch := iterator.next():
                yield from batch
        finally:
            iterator.close()

    def delete(self, collection: str, chunk_ids: Sequence[str]) -> None:
        for start in range(0, len(chunk_ids), DELETE_BATCH):
            batch = chunk_ids[start : start + DELETE_BATCH]
            self._client.delete(collection, filter=ids_expression(batch))

    def wait_until_gone(self, collection: str, chunk_ids: Sequence[str]) -> None:
        """Raise unless a ``Strong`` read no longer finds any of ``chunk_ids``."""
        for start in range(0, len(chunk_ids), DELETE_BATCH):
            left = self._client.query(
                collection,
                filter=ids_expression(chunk_ids[start : start + DELETE_BATCH]),
                output_fields=[CHUNK_ID_FIELD],
                consistency_level="Strong",
            )
            if left:  # Milvus applies a delete before a later Strong read; never seen otherwise
                raise RuntimeError(f"{len(left)} deleted rows still found in {collection}")

    def dimension_of(self, version: CollectionVersion) -> int:
        if version.dimension is None:
            description = self._client.describe_collection(version.name)
            field = next(f for f in description["fields"] if f["name"] == VECTOR_FIELD)
            version.dimension = int(field["params"]["dim"])
        return version.dimension

    def check_dimension(self, version: CollectionVersion, dimension: int) -> None:
        held = self.dimension_of(version)
        if dimension != held:
            raise ValueError(
                f"Vectors have {dimension} dimensions but collection {self.config.collection!r} "
                f"holds {held}. The embedding model changed: set milvus.collection to a new "
                "name (or drop the old collection) and sync again."
            )

    def ensure(self, version: CollectionVersion, dimension: int) -> None:
        """Create ``version`` for vectors of ``dimension`` unless it exists (then check it)."""
        if self._client.has_collection(version.name):
            self.check_dimension(version, dimension)
            return
        schema, index_params = self._schema(version.layout, dimension)
        self._client.create_collection(
            version.name, schema=schema, consistency_level=self.config.consistency_level
        )
        # pymilvus would wait for each index in turn (half-second polls, about a second per
        # index on an empty collection); the indexes of rows written later are awaited once,
        # together, before the version is published (``milvus.sync``).
        self._client.create_index(version.name, index_params, sync=False)
        self._client.load_collection(version.name)
        version.dimension = dimension
        logger.info("milvus.collection.created", collection=version.name, dimension=dimension)

    def _schema(self, layout: CollectionLayout, dimension: int) -> tuple[Any, Any]:
        schema = MilvusClient.create_schema(
            auto_id=False, enable_dynamic_field=False, description=layout.description()
        )
        schema.add_field(CHUNK_ID_FIELD, DataType.VARCHAR, max_length=MAX_ID_BYTES, is_primary=True)
        schema.add_field(SOURCE_FIELD, DataType.VARCHAR, max_length=MAX_SOURCE_BYTES)
        schema.add_field(HASH_FIELD, DataType.VARCHAR, max_length=64)
        schema.add_field(TEXT_FIELD, DataType.VARCHAR, max_length=MAX_VARCHAR_BYTES)
        schema.add_field(METADATA_FIELD, DataType.JSON)
        schema.add_field(FILTERABLE_FIELD, DataType.JSON)
        schema.add_field(OVERFLOW_FIELD, DataType.JSON)
        index_params = self._client.prepare_index_params()
        for typed in layout.typed:
            for name, data_type, parameters in typed.schema_fields():
                schema.add_field(name, data_type, **parameters)
                if data_type in SCALAR_INDEXES:
                    index_params.add_index(name, index_type=SCALAR_INDEXES[data_type])
        schema.add_field(VECTOR_FIELD, DataType.FLOAT_VECTOR, dim=dimension)
        index_params.add_index(
            VECTOR_FIELD,
            index_type=self.config.index_type,
            metric_type=METRIC,
            params=dict(self.config.index_params),
        )
        return schema, index_params
