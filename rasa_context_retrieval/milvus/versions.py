"""Which version of a knowledge base's collection replicas search: a pointer held in Milvus.

A layout change (a newly declared attribute, a first value that needs the overflow field) cannot
be applied to a Milvus 2.3 collection in place: fields cannot be added. So the writer builds a
new collection, ``<collection>__v<layout digest>``, fills it while replicas keep searching the
old one, and then publishes its name here, in ``<collection>__current`` (one row). Replicas read
the pointer again (in the background) every ``POINTER_TTL_S`` and switch; the version they leave
stays in place until the one after it is published, so a search under way finishes on it.

A Milvus alias would switch every replica at once, but a replica builds its expressions from
the layout of the version it searches (``milvus.layout``); with an alias the version behind the
name could change between reading the layout and searching, and an expression written for one
layout can misread another. A replica therefore always searches the version it read.

Beside the version, the pointer holds a sync mark: a new random value each time a sync changes
what the collection holds. Replicas read it with the pointer and, when it changed, read the
attribute values again (``MilvusChunkStore.values_of``) instead of waiting for their time to live.

Without a pointer, a collection named ``<collection>`` itself is the previous release's
(JSON-only) collection: it is searched as such until the first writer of this release publishes
a version (the previous collection is left in place for replicas not yet upgraded).
"""

from __future__ import annotations

import uuid
from dataclasses import dataclass

import structlog
from pymilvus import DataType, MilvusClient

from rasa_context_retrieval.milvus.layout import VERSION_INFIX

logger = structlog.get_logger(__name__)

POINTER_SUFFIX = "__current"
POINTER_TTL_S = 5.0
"""How long a replica searches a version before it reads the pointer again."""
_KEY_FIELD = "key"
_VERSION_FIELD = "version"
_KEY = "current"
_SYNCED_KEY = "synced"
_PLACEHOLDER_VECTOR = "placeholder_vector"  # Milvus 2.3 requires a vector field in a collection.
_PLACEHOLDER_DIMENSION = 2
_MAX_NAME = 255


@dataclass(frozen=True)
class PointerState:
    """What the pointer says: the published version, and the mark of the last sync."""

    version: str | None
    """The published version's collection name; ``None`` before the first publication."""
    synced: str | None
    """Changes with every sync that changed rows; ``None`` before the first such sync."""


class VersionPointer:
    """The ``<collection>__current`` pointer of one knowledge base."""

    def __init__(self, client: MilvusClient, collection: str) -> None:
        self._client = client
        self.collection = collection
        self._name = collection + POINTER_SUFFIX

    def read(self) -> PointerState:
        """The published version and the sync mark, read ``Strong``."""
        if not self._client.has_collection(self._name):
            return PointerState(None, None)
        rows = self._client.query(
            self._name,
            filter=f'{_KEY_FIELD} in ["{_KEY}", "{_SYNCED_KEY}"]',
            output_fields=[_KEY_FIELD, _VERSION_FIELD],
            consistency_level="Strong",
        )
        values = {str(row[_KEY_FIELD]): str(row[_VERSION_FIELD]) for row in rows}
        return PointerState(values.get(_KEY), values.get(_SYNCED_KEY))

    def publish(self, version: str) -> None:
        """Point replicas at ``version`` (a collection that exists and is loaded)."""
        self._write(_KEY, version)
        logger.info("milvus.version.published", collection=self.collection, version=version)

    def mark_synced(self) -> None:
        """Tell replicas that the served rows changed (their cached values are outdated)."""
        self._write(_SYNCED_KEY, uuid.uuid4().hex)

    def _write(self, key: str, value: str) -> None:
        self._ensure_collection()
        row = {
            _KEY_FIELD: key,
            _VERSION_FIELD: value,
            _PLACEHOLDER_VECTOR: [0.0] * _PLACEHOLDER_DIMENSION,
        }
        self._client.upsert(self._name, [row])

    def versions(self) -> list[str]:
        """Every version collection of this knowledge base (not the previous release's)."""
        prefix = self.collection + VERSION_INFIX
        return sorted(name for name in self._client.list_collections() if name.startswith(prefix))

    def drop_all_but(self, keep: set[str]) -> None:
        """Drop the version collections not in ``keep``: no replica can still search them."""
        for version in self.versions():
            if version not in keep:
                self._client.drop_collection(version)
                logger.info("milvus.version.dropped", collection=self.collection, version=version)

    def _ensure_collection(self) -> None:
        if self._client.has_collection(self._name):
            return
        schema = MilvusClient.create_schema(auto_id=False, enable_dynamic_field=False)
        schema.add_field(_KEY_FIELD, DataType.VARCHAR, max_length=16, is_primary=True)
        schema.add_field(_VERSION_FIELD, DataType.VARCHAR, max_length=_MAX_NAME)
        schema.add_field(_PLACEHOLDER_VECTOR, DataType.FLOAT_VECTOR, dim=_PLACEHOLDER_DIMENSION)
        index_params = self._client.prepare_index_params()
        index_params.add_index(_PLACEHOLDER_VECTOR, index_type="FLAT", metric_type="L2")
        self._client.create_collection(
            self._name, schema=schema, index_params=index_params, consistency_level="Strong"
        )
        self._client.load_collection(self._name)
