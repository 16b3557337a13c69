"""Chunks in a Milvus collection: incremental sync, exact filtered search, attribute values.

One row per chunk, keyed by the stable ``chunk_id``, holding the chunk's text, its metadata as
given (``metadata``), the normal form filters run on (typed fields for the declared attributes,
``filterable`` JSON for the others, ``overflow`` JSON for values typed fields cannot hold; see
``milvus.layout``), the document it came from (``source``), a hash of what was embedded
(``content_hash``) and the embedding. ``sync`` compares ids and hashes with what the collection
already holds, so a restart embeds nothing and an edit re-embeds only the chunks that changed; it
runs under a lease held in Milvus (``lease.py``) so that replicas starting together ingest once.
Rows whose chunk changed or went away are deleted first, from every version a replica may search,
and ``sync`` waits until Milvus no longer finds them: no replica serves a chunk with its old text
or attributes while the new rows are embedded and written (``withhold`` does that alone, at once,
when a writer's refresh sees a change). A sync that changed rows leaves a new sync mark beside the
version pointer, from which replicas learn to read the attribute values again.
When the layout the declared attributes need differs from the served version's, ``sync`` fills a
new version and publishes it (``milvus.versions``); searches keep using the old one until then.
``search`` ranks by cosine similarity (``COSINE`` metric) within the filter, evaluated on the
server; with the default ``FLAT`` index it is exact.
"""

from __future__ import annotations

import threading
import time
from collections.abc import Callable, Collection, Iterator, Mapping, Sequence
from dataclasses import dataclass
from typing import Any

import numpy as np
import structlog
from langchain_core.structured_query import FilterDirective
from numpy.typing import NDArray
from pymilvus import DataType, MilvusClient
from pymilvus.client.types import LoadState

from rasa_context_retrieval.errors import ContextRetrievalError
from rasa_context_retrieval.filters.absence import HasAttribute
from rasa_context_retrieval.filters.schema import MetadataField
from rasa_context_retrieval.filters.values import normalise_text
from rasa_context_retrieval.knowledge.models import Chunk, ScoredChunk
from rasa_context_retrieval.milvus.attribute_values import AttributeValues
from rasa_context_retrieval.milvus.config import MilvusConfig
from rasa_context_retrieval.milvus.expression import MilvusExpressionTranslator, string_literal
from rasa_context_retrieval.milvus.layout import (
    LAYOUT_FORMAT,
    SCALAR_INDEXES,
    CollectionLayout,
)
from rasa_context_retrieval.milvus.lease import SyncLease
from rasa_context_retrieval.milvus.normal_form import (
    CHUNK_ID_FIELD,
    FILTERABLE_FIELD,
    MEMBERS,
    OVERFLOW_FIELD,
    TEXT,
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
    ChunkTooLarge,
    check_sizes,
    checked_vectors,
    chunk_row,
    content_hash,
    facet_keys,
)
from rasa_context_retrieval.milvus.versions import POINTER_TTL_S, VersionPointer

logger = structlog.get_logger(__name__)

__all__ = ["ChunkTooLarge", "MilvusChunkStore", "content_hash"]

Embed = Callable[[list[str]], NDArray[np.floating[Any]]]

METRIC = "COSINE"

MAX_TOP_K = 16_384
"""Milvus' limit for ``limit`` in one search."""
MAX_MATCHED = 16_384
"""Most chunks ``matching`` returns (Milvus' limit for one query)."""
EMBED_BATCH = 256
"""Chunks embedded and upserted per round trip."""
SCAN_BATCH = 4_096
DELETE_BATCH = 1_000
INDEX_WAIT_S = 300.0
"""Longest wait for a new version's indexes before it is published."""
INDEX_POLL_S = 0.5


class MilvusCollectionMissing(ContextRetrievalError, RuntimeError):
    """The collection does not exist yet (nothing was ingested)."""


@dataclass(frozen=True)
class SyncReport:
    """What one ``sync`` did."""

    embedded: int
    """Chunks embedded and written (new or changed)."""
    unchanged: int
    deleted: int
    """Chunks removed: of removed documents, or dropped from a changed document."""
    removed_sources: tuple[str, ...]
    seconds: float


@dataclass
class CollectionVersion:
    """One physical collection of the knowledge base and how it is laid out."""

    name: str
    layout: CollectionLayout
    translator: MilvusExpressionTranslator
    dimension: int | None = None


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
        self._pointer = VersionPointer(client, config.collection)
        self._version_lock = threading.Lock()
        self._version: CollectionVersion | None = None
        self._version_read_at = -POINTER_TTL_S
        self._version_refreshing = False
        self._published = 0
        """Versions this store published; a pointer read that began before one is discarded."""
        self._closed = threading.Event()
        self._values = AttributeValues(self._read_spellings, config.collection, self._closed)

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

    # ----------------------------------------------------------------------------- sync

    def sync(
        self, chunks: Sequence[Chunk], embed: Embed, *, embedding_model: str = ""
    ) -> SyncReport:
        """Make the collection hold exactly ``chunks``, embedding only new or changed ones.

        ``embedding_model`` is part of each chunk's content hash: changing the model re-embeds.
        Blocks while another replica syncs the same collection, then finds its work done.
        """
        started = time.perf_counter()
        check_sizes(chunks)
        wanted = {chunk.chunk_id: chunk for chunk in chunks}
        hashes = {chunk.chunk_id: content_hash(chunk, embedding_model) for chunk in chunks}
        with SyncLease(self._client, self.collection, ttl_s=self.config.lease_ttl_s):
            current = self.read_version()
            held = self._stored_hashes_and_sources(current)
            outdated = _outdated(held, hashes)
            self.withhold(outdated)  # before anything is embedded or written
            stale = sorted(set(held) - set(wanted))
            changed = [wanted[i] for i, h in hashes.items() if held.get(i, ("", ""))[0] != h]
            target = self._target_version(current, chunks, changed)
            if target is not current:
                stored = self._stored_hashes_and_sources(target)
                changed = [wanted[i] for i, h in hashes.items() if stored.get(i, ("", ""))[0] != h]
                self._delete(target.name, sorted(set(stored) - set(wanted)))
            # No flush: Strong and Session reads see unflushed rows, and Milvus seals segments
            # (and builds their index) by itself; a flush would add seconds to every sync.
            self._write(target, changed, hashes, embed)
            if target is not current:
                self._publish(target, current)
            if changed or outdated:
                self._pointer.mark_synced()
        kept_sources = {str(chunk.metadata.get("source", "")) for chunk in chunks}
        removed = {held[i][1] for i in stale} - kept_sources
        self._values.forget()
        report = SyncReport(
            embedded=len(changed),
            unchanged=len(wanted) - len(changed),
            deleted=len(stale),
            removed_sources=tuple(sorted(removed)),
            seconds=time.perf_counter() - started,
        )
        logger.info("milvus.sync.done", collection=self.collection, **report.__dict__)
        return report

    def withhold(self, chunk_ids: Collection[str]) -> None:
        """Make ``chunk_ids`` unsearchable for every replica: delete their rows from every
        version a replica may search, then wait until a ``Strong`` read no longer finds them (a
        replica's later search, whatever its consistency level, runs after that read).

        Needs no lease: it only removes rows, which a sync writes again from the documents.
        """
        if not chunk_ids:
            return
        ids = sorted(chunk_ids)
        for name in self._searchable_versions():
            self._delete(name, ids)
            if self._client.get_load_state(name).get("state") == LoadState.Loaded:
                self._wait_until_gone(name, ids)  # one not loaded is searched by nobody
        logger.info("milvus.sync.withheld", collection=self.collection, chunks=len(ids))

    def withhold_outdated(self, chunks: Sequence[Chunk], *, embedding_model: str = "") -> None:
        """``withhold`` every row that is not one of ``chunks`` as it is now (text, attributes,
        embedding model): what a writer starting on changed documents does before embedding."""
        hashes = {chunk.chunk_id: content_hash(chunk, embedding_model) for chunk in chunks}
        self.withhold(_outdated(self._stored_hashes_and_sources(self.read_version()), hashes))

    def _searchable_versions(self) -> list[str]:
        """Every version a replica may be searching: those kept, and the previous release's."""
        names = self._pointer.versions()
        if self._client.has_collection(self.collection):
            names.append(self.collection)
        return names

    def _wait_until_gone(self, collection: str, chunk_ids: Sequence[str]) -> None:
        for start in range(0, len(chunk_ids), DELETE_BATCH):
            literals = ", ".join(string_literal(i) for i in chunk_ids[start : start + DELETE_BATCH])
            left = self._client.query(
                collection,
                filter=f"{CHUNK_ID_FIELD} in [{literals}]",
                output_fields=[CHUNK_ID_FIELD],
                consistency_level="Strong",
            )
            if left:  # Milvus applies a delete before a later Strong read; never seen otherwise
                raise RuntimeError(f"{len(left)} deleted rows still found in {collection}")

    def _stored_hashes_and_sources(
        self, version: CollectionVersion | None
    ) -> dict[str, tuple[str, str]]:
        if version is None or not self._client.has_collection(version.name):
            return {}
        rows = self._scan(version.name, [CHUNK_ID_FIELD, HASH_FIELD, SOURCE_FIELD])
        return {row[CHUNK_ID_FIELD]: (row[HASH_FIELD], row[SOURCE_FIELD]) for row in rows}

    def _target_version(
        self,
        current: CollectionVersion | None,
        chunks: Sequence[Chunk],
        changed: Sequence[Chunk],
    ) -> CollectionVersion:
        """The served version when its layout holds these chunks' values, else a new one.

        The unchanged chunks are in ``current`` already, so when it has the planned typed
        fields only the changed ones can need more overflow than it admits.
        """
        if current is not None and current.layout.serves(self.planned):
            needed = self.planned.needed_overflow([chunk.metadata for chunk in changed])
            if current.layout.serves(self.planned.with_overflow(needed)):
                return current
        needed = self.planned.needed_overflow([chunk.metadata for chunk in chunks])
        wanted = self.planned.with_overflow(needed)
        version = self._version_of(wanted.version_name(self.collection), wanted)
        logger.info(
            "milvus.version.building",
            collection=self.collection,
            version=version.name,
            serving=current.name if current else None,
            typed=sorted(wanted.typed_names),
            overflow=sorted(needed),
        )
        if current is not None and not chunks:  # nothing will tell the dimension
            self._ensure_collection(version, self._dimension_of(current))
        return version

    def _publish(self, version: CollectionVersion, previous: CollectionVersion | None) -> None:
        """Serve ``version`` here and on every replica; the previous version stays for replicas
        still searching it, older ones are dropped."""
        if not self._client.has_collection(version.name):
            return  # nothing was ever written: there is nothing to serve yet
        # A new version is searched from now on: flush once, so its rows are in sealed,
        # indexed segments rather than growing ones (bench/results/milvus.md).
        self._client.flush(version.name)
        self._wait_for_indexes(version.name)
        self._pointer.publish(version.name)
        kept = {version.name} | ({previous.name} if previous else set())
        self._pointer.drop_all_but(kept)
        with self._version_lock:
            self._version, self._version_read_at = version, time.monotonic()
            self._published += 1
        self._values.forget()

    def _wait_for_indexes(self, collection: str) -> None:
        """Let Milvus index the flushed segments before replicas switch (searches would work
        meanwhile, but scan raw data); at most ``INDEX_WAIT_S``, then publish anyway."""
        deadline = time.monotonic() + INDEX_WAIT_S
        for index in self._client.list_indexes(collection):
            while self._client.describe_index(collection, index).get("pending_index_rows", 0):
                if time.monotonic() > deadline:
                    logger.warning("milvus.version.index_pending", version=collection, index=index)
                    return
                time.sleep(INDEX_POLL_S)

    def _write(
        self,
        version: CollectionVersion,
        chunks: Sequence[Chunk],
        hashes: Mapping[str, str],
        embed: Embed,
    ) -> None:
        for start in range(0, len(chunks), EMBED_BATCH):
            batch = chunks[start : start + EMBED_BATCH]
            vectors = checked_vectors(embed([chunk.text for chunk in batch]), len(batch))
            self._ensure_collection(version, vectors.shape[1])
            rows = [
                chunk_row(chunk, hashes[chunk.chunk_id], vector, version.layout)
                for chunk, vector in zip(batch, vectors, strict=True)
            ]
            self._client.upsert(version.name, rows)
            logger.debug("milvus.sync.batch_written", collection=version.name, rows=len(rows))

    def _delete(self, collection: str, chunk_ids: Sequence[str]) -> None:
        for start in range(0, len(chunk_ids), DELETE_BATCH):
            batch = chunk_ids[start : start + DELETE_BATCH]
            literals = ", ".join(string_literal(chunk_id) for chunk_id in batch)
            self._client.delete(collection, filter=f"{CHUNK_ID_FIELD} in [{literals}]")

    def _ensure_collection(self, version: CollectionVersion, dimension: int) -> None:
        if self._client.has_collection(version.name):
            self._check_dimension(version, dimension)
            return
        layout = version.layout
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
        self._client.create_collection(
            version.name, schema=schema, consistency_level=self.config.consistency_level
        )
        # pymilvus would wait for each index in turn (half-second polls, about a second per
        # index on an empty collection); the indexes of rows written later are awaited once,
        # together, before the version is published (``_wait_for_indexes``).
        self._client.create_index(version.name, index_params, sync=False)
        self._client.load_collection(version.name)
        version.dimension = dimension
        logger.info("milvus.collection.created", collection=version.name, dimension=dimension)

    # ------------------------------------------------------------------------- versions

    def served(self) -> CollectionVersion | None:
        """The version searches use. Once ``POINTER_TTL_S`` old, the pointer is read again in
        the background while the version read last keeps serving."""
        with self._version_lock:
            version = self._version
            due = time.monotonic() - self._version_read_at >= POINTER_TTL_S
            closed = self._closed.is_set()
            if due and version is not None and not self._version_refreshing and not closed:
                self._version_refreshing = True
                threading.Thread(target=self._refresh_version, daemon=True).start()
        if version is None and due:  # nothing served yet: nothing to keep serving meanwhile
            return self.read_version()
        return version

    def _refresh_version(self) -> None:
        try:
            self.read_version()
        except Exception as error:  # keep searching the version read last; retry after the TTL
            if not self._closed.is_set():
                logger.warning(
                    "milvus.version.read_failed", collection=self.collection, error=str(error)
                )
            with self._version_lock:
                self._version_read_at = time.monotonic()
        finally:
            with self._version_lock:
                self._version_refreshing = False

    def read_version(self) -> CollectionVersion | None:
        """Read the pointer now (``Strong``) and serve the version it names."""
        with self._version_lock:
            published = self._published  # a publication meanwhile outdates what is read here
        pointer = self._pointer.read()
        self._values.note_sync_mark(pointer.synced)
        name = pointer.version
        if name is None and self._client.has_collection(self.collection):
            name = self.collection  # the previous release's collection
        with self._version_lock:
            self._version_read_at = time.monotonic()
            if published != self._published or (
                self._version is not None and self._version.name == name
            ):
                return self._version
            if name is None:
                self._version = None
                return None
        description = self._client.describe_collection(name).get("description", "")
        version = self._version_of(name, CollectionLayout.described(description))
        with self._version_lock:
            if published != self._published:
                return self._version
            self._version = version
        self._values.forget()
        logger.info(
            "milvus.version.serving",
            collection=self.collection,
            version=name,
            typed=sorted(version.layout.typed_names),
            previous_release=version.layout.format < LAYOUT_FORMAT,
        )
        return version

    def _version_of(self, name: str, layout: CollectionLayout) -> CollectionVersion:
        return CollectionVersion(name, layout, MilvusExpressionTranslator(self._vocabulary, layout))

    def _served_or_raise(self) -> CollectionVersion:
        version = self.served()
        if version is None:
            raise MilvusCollectionMissing(
                f"Milvus collection {self.collection!r} does not exist at {self.config.uri}. "
                "Ingest first: start an assistant with milvus.ingest: auto, or run the console's "
                "`index` command (milvus.ingest: console_only)."
            )
        return version

    # --------------------------------------------------------------------------- search

    def search(
        self, query_vector: NDArray[np.floating[Any]], filter: FilterDirective | None, k: int
    ) -> list[ScoredChunk]:
        """The ``k`` chunks most similar to ``query_vector`` among those ``filter`` allows.

        ``relevance`` is the cosine similarity clipped to [0, 1].
        """
        if not 1 <= k <= MAX_TOP_K:
            raise ValueError(f"k must be between 1 and {MAX_TOP_K}, got {k}.")
        started = time.perf_counter()
        version = self._served_or_raise()
        vector = np.asarray(query_vector, dtype=np.float32).reshape(-1)
        self._check_dimension(version, len(vector))
        expression = "" if filter is None else filter.accept(version.translator)
        hits = self._client.search(
            version.name,
            data=[vector.tolist()],
            filter=expression,
            limit=k,
            output_fields=[TEXT_FIELD, METADATA_FIELD],
            search_params={"metric_type": METRIC, "params": dict(self.config.search_params)},
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
        literals = ", ".join(string_literal(chunk_id) for chunk_id in chunk_ids)
        hits = self._client.search(
            self._served_or_raise().name,
            data=[np.asarray(query_vector, dtype=np.float32).reshape(-1).tolist()],
            filter=f"{CHUNK_ID_FIELD} in [{literals}]",
            limit=len(chunk_ids),
            output_fields=[],
            search_params={"metric_type": METRIC, "params": dict(self.config.search_params)},
        )[0]
        return {str(hit["id"]): _clipped(hit["distance"]) for hit in hits}

    def matching(self, filter: FilterDirective | None) -> list[Chunk]:
        """Up to ``MAX_MATCHED`` chunks ``filter`` admits, with their metadata (no text)."""
        version = self._served_or_raise()
        rows = self._client.query(
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
        version = self.served()
        if not attribute or version is None:
            return False
        expression = HasAttribute(attribute=attribute).accept(version.translator)
        return bool(self._client.query(version.name, filter=expression, limit=1))

    def expression(self, filter: FilterDirective | None) -> str:
        """The Milvus expression a filter becomes on the served version ("" = no filter); for
        logs and debugging."""
        version = self.served()
        translator = (
            version.translator if version else self._version_of("", self.planned).translator
        )
        return "" if filter is None else filter.accept(translator)

    def count(self) -> int:
        """Number of chunks in the served version (0 if there is none)."""
        version = self.served()
        if version is None:
            return 0
        rows = self._client.query(
            version.name, filter="", output_fields=["count(*)"], consistency_level="Strong"
        )
        return int(rows[0]["count(*)"])

    # --------------------------------------------------------------------------- values

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

    def _vocabulary(self, attribute: str) -> Collection[str]:
        return {normalise_text(spelling) for spelling in self.values_of(attribute)}

    def _read_spellings(self) -> dict[str, frozenset[str]]:
        version = self.served()
        if version is None:
            return {}
        layout = version.layout
        fields = [METADATA_FIELD, FILTERABLE_FIELD]
        if layout.format == LAYOUT_FORMAT:
            fields.append(OVERFLOW_FIELD)
        for typed in layout.typed:
            fields += [typed.presence] + [
                typed.field(f) for f in (TEXT, MEMBERS) if f in typed.facets
            ]
        spellings: dict[str, set[str]] = {}
        for row in self._scan(version.name, fields):
            metadata, form = row[METADATA_FIELD] or {}, facet_keys(row, layout)
            for attribute, facets in form.items():
                found = spellings.setdefault(attribute, set())
                value = metadata.get(attribute)
                if TEXT in facets and isinstance(value, str):
                    found.add(value.strip())
                elif MEMBERS in facets and isinstance(value, list):
                    found.update(_member_spellings(value))
        return {attribute: frozenset(values) for attribute, values in spellings.items()}

    # -------------------------------------------------------------------------- helpers

    def _scan(self, collection: str, fields: list[str]) -> Iterator[dict[str, Any]]:
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

    def _dimension_of(self, version: CollectionVersion) -> int:
        if version.dimension is None:
            description = self._client.describe_collection(version.name)
            field = next(f for f in description["fields"] if f["name"] == VECTOR_FIELD)
            version.dimension = int(field["params"]["dim"])
        return version.dimension

    def _check_dimension(self, version: CollectionVersion, dimension: int) -> None:
        held = self._dimension_of(version)
        if dimension != held:
            raise ValueError(
                f"Vectors have {dimension} dimensions but collection {self.collection!r} holds "
                f"{held}. The embedding model changed: set milvus.collection to a new "
                "name (or drop the old collection) and sync again."
            )


def _outdated(held: Mapping[str, tuple[str, str]], hashes: Mapping[str, str]) -> list[str]:
    """Ids of stored rows (id -> hash, source) whose chunk changed or went away."""
    return [chunk_id for chunk_id, (digest, _) in held.items() if hashes.get(chunk_id) != digest]


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


def _member_spellings(members: list[Any]) -> set[str]:
    spellings = set()
    for member in members:
        if isinstance(member, bool):
            member = "true" if member else "false"
        if isinstance(member, str | int | float) and str(member).strip():
            spellings.add(str(member).strip())
    return spellings
