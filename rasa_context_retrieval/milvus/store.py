"""Chunks of one knowledge base in Milvus: the small store that ties its parts together.

One row per chunk, keyed by the stable ``chunk_id``, holding the chunk's text, its metadata as
given, the normal form filters run on, the document it came from, a hash of what was embedded and
the embedding (``milvus.rows``, laid out by ``milvus.layout``). Each job has its module:

* ``milvus.collection``: creating a version (schema, indexes), its dimension, row chores;
* ``milvus.serving``: which version this process searches, read from the version pointer;
* ``milvus.sync``: incremental sync under the lease, withholding, publishing a new version;
* ``milvus.search``: exact filtered rankings, relevance, matching chunks, counts;
* ``milvus.attribute_values``: the attribute values a replica offers, read in one scan.

``MilvusChunkStore`` opens the client, builds these parts over it and answers for them, so the
backend (``milvus.backend``) and the console talk to one object.
"""

from __future__ import annotations

import threading
from collections.abc import Collection, Sequence
from typing import Any

import numpy as np
import structlog
from langchain_core.structured_query import FilterDirective
from numpy.typing import NDArray
from pymilvus import MilvusClient

from rasa_context_retrieval.filters.schema import MetadataField
from rasa_context_retrieval.knowledge.models import Chunk, ScoredChunk
from rasa_context_retrieval.milvus.attribute_values import AttributeValues, read_spellings
from rasa_context_retrieval.milvus.collection import Collections, CollectionVersion
from rasa_context_retrieval.milvus.config import MilvusConfig
from rasa_context_retrieval.milvus.layout import CollectionLayout
from rasa_context_retrieval.milvus.rows import ChunkTooLarge, content_hash
from rasa_context_retrieval.milvus.search import MAX_MATCHED, CollectionSearch
from rasa_context_retrieval.milvus.serving import MilvusCollectionMissing, ServedVersion
from rasa_context_retrieval.milvus.sync import CollectionSync, Embed, SyncReport
from rasa_context_retrieval.milvus.versions import VersionPointer

logger = structlog.get_logger(__name__)

__all__ = [
    "MAX_MATCHED",
    "ChunkTooLarge",
    "MilvusChunkStore",
    "MilvusCollectionMissing",
    "SyncReport",
    "content_hash",
]


class MilvusChunkStore:
    """The chunks of one knowledge base in Milvus: the version its pointer names."""

    def __init__(
        self,
        client: MilvusClient,
        config: MilvusConfig,
        fields: Sequence[MetadataField] = (),
    ) -> None:
        self._client = client
        self.config = config
        self.collection = config.collection
        """The configured name: of the pointer, the lease and the versions (``milvus.versions``)."""
        self.planned = CollectionLayout.planned(fields)
        """The layout this store writes (its overflow attributes are added per sync)."""
        self._closed = threading.Event()
        collections = Collections(client, config)
        pointer = VersionPointer(client, config.collection)
        self._values = AttributeValues(
            lambda: read_spellings(collections, self._served.served()),
            config.collection,
            self._closed,
        )
        self._served = ServedVersion(client, config, pointer, self._values, self._closed)
        self._search = CollectionSearch(client, config, self._served, collections, self.planned)
        self._sync = CollectionSync(
            client=client,
            config=config,
            pointer=pointer,
            served=self._served,
            collections=collections,
            values=self._values,
            planned=self.planned,
        )

    @classmethod
    def connect(
        cls, config: MilvusConfig, fields: Sequence[MetadataField] = ()
    ) -> MilvusChunkStore:
        """Open a client from a validated ``milvus:`` block (secrets read from the environment);
        ``fields`` are the declared attributes, which a writer stores in typed fields."""
        arguments = config.client_arguments()
        if ("token" in arguments or "password" in arguments) and not (
            config.uses_tls or config.is_loopback
        ):
            logger.warning(
                "milvus.connect.plaintext_credentials",
                uri=config.uri,
                fix="use an https:// uri or secure: true so credentials are not sent in clear",
            )
        client = MilvusClient(**arguments)
        store = cls(client, config, fields)
        version = store.served()
        if version is not None:
            client.load_collection(version.name)
        logger.info("milvus.connect.done", uri=config.uri, collection=store.collection)
        return store

    def close(self) -> None:
        self._closed.set()
        self._client.close()

    # writing (milvus.sync)

    def sync(
        self, chunks: Sequence[Chunk], embed: Embed, *, embedding_model: str = ""
    ) -> SyncReport:
        """Make the collection hold exactly ``chunks``, embedding only new or changed ones."""
        return self._sync.sync(chunks, embed, embedding_model=embedding_model)

    def withhold(self, chunk_ids: Collection[str]) -> None:
        """Make ``chunk_ids`` unsearchable for every replica before this returns."""
        self._sync.withhold(chunk_ids)

    def withhold_outdated(self, chunks: Sequence[Chunk], *, embedding_model: str = "") -> None:
        """``withhold`` every row that is not one of ``chunks`` as it is now."""
        self._sync.withhold_outdated(chunks, embedding_model=embedding_model)

    # the served version (milvus.serving)

    def served(self) -> CollectionVersion | None:
        """The version searches use (the pointer is re-read in the background when due)."""
        return self._served.served()

    def read_version(self) -> CollectionVersion | None:
        """Read the pointer now (``Strong``) and serve the version it names."""
        return self._served.read()

    # reading (milvus.search, milvus.attribute_values)

    def search(
        self, query_vector: NDArray[np.floating[Any]], filter: FilterDirective | None, k: int
    ) -> list[ScoredChunk]:
        """The ``k`` chunks most similar to ``query_vector`` among those ``filter`` allows."""
        return self._search.search(query_vector, filter, k)

    def relevance(
        self, query_vector: NDArray[np.floating[Any]], chunk_ids: Sequence[str]
    ) -> dict[str, float]:
        """Cosine similarity (clipped to [0, 1]) of ``query_vector`` to each of ``chunk_ids``."""
        return self._search.relevance(query_vector, chunk_ids)

    def matching(self, filter: FilterDirective | None) -> list[Chunk]:
        """Up to ``MAX_MATCHED`` chunks ``filter`` admits, with their metadata (no text)."""
        return self._search.matching(filter)

    def has_attribute(self, attribute: str) -> bool:
        """Whether some chunk has ``attribute``."""
        return self._search.has_attribute(attribute)

    def expression(self, filter: FilterDirective | None) -> str:
        """The Milvus expression a filter becomes on the served version ("" = no filter)."""
        return self._search.expression(filter)

    def count(self) -> int:
        """Number of chunks in the served version (0 if there is none)."""
        return self._search.count()

    def values_of(self, attribute: str) -> frozenset[str]:
        """Distinct string values of an attribute as written (trimmed), list members included.

        Read in one scan of the collection's metadata. The first call waits for that scan (or for
        the one ``prefetch_values`` started); later ones get the values read last while a stale
        read (``VOCABULARY_TTL_S``) is refreshed in the background.
        """
        return self._values.all().get(attribute, frozenset())

    def prefetch_values(self) -> None:
        """Start reading attribute values in the background (a replica starting up)."""
        self._values.prefetch()
