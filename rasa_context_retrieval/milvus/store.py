"""Chunks in a Milvus collection: incremental sync, exact filtered search, attribute values.

One row per chunk, keyed by the stable ``chunk_id``, holding the chunk's text, its metadata as
given (``metadata``), the normal form filters run on (``filterable``), the document it came from
(``source``), a hash of what was embedded (``content_hash``) and the embedding. ``sync`` compares
ids and hashes with what the collection already holds, so a restart embeds nothing and an edit
re-embeds only the chunks that changed; it runs under a lease held in Milvus (``lease.py``) so that
replicas starting together ingest once. ``search`` ranks by cosine similarity (``COSINE`` metric)
within the filter, evaluated on the server; with the default ``FLAT`` index it is exact.
"""

from __future__ import annotations

import datetime as dt
import hashlib
import json
import threading
import time
from collections.abc import Callable, Collection, Iterator, Mapping, Sequence
from concurrent.futures import Future
from dataclasses import dataclass
from typing import Any

import numpy as np
import structlog
from langchain_core.structured_query import FilterDirective
from numpy.typing import NDArray
from pymilvus import DataType, MilvusClient

from rasa_context_retrieval.filters.absence import HasAttribute
from rasa_context_retrieval.filters.values import normalise_text
from rasa_context_retrieval.knowledge.models import Chunk, ScoredChunk
from rasa_context_retrieval.milvus.config import MilvusConfig
from rasa_context_retrieval.milvus.expression import MilvusExpressionTranslator, string_literal
from rasa_context_retrieval.milvus.lease import SyncLease
from rasa_context_retrieval.milvus.normal_form import (
    CHUNK_ID_FIELD,
    FILTERABLE_FIELD,
    MEMBERS,
    TEXT,
    normal_form,
)

logger = structlog.get_logger(__name__)

Embed = Callable[[list[str]], NDArray[np.floating[Any]]]

TEXT_FIELD = "text"
SOURCE_FIELD = "source"
HASH_FIELD = "content_hash"
METADATA_FIELD = "metadata"
VECTOR_FIELD = "embedding"
METRIC = "COSINE"

MAX_VARCHAR_BYTES = 65_535
"""Milvus' limit for one VARCHAR value; a longer chunk is refused with a clear error."""
MAX_ID_BYTES = 1_024
MAX_SOURCE_BYTES = 4_096
MAX_TOP_K = 16_384
"""Milvus' limit for ``limit`` in one search."""
MAX_MATCHED = 16_384
"""Most chunks ``matching`` returns (Milvus' limit for one query)."""
EMBED_BATCH = 256
"""Chunks embedded and upserted per round trip."""
SCAN_BATCH = 4_096
DELETE_BATCH = 1_000
VOCABULARY_TTL_S = 300.0
"""How long attribute values are served before they are read again (in the background, while
the old ones keep serving); another writer's sync shows up after at most this plus one scan."""


class MilvusCollectionMissing(RuntimeError):
    """The collection does not exist yet (nothing was ingested)."""


class ChunkTooLarge(ValueError):
    """A chunk's text, id or source exceeds what a Milvus VARCHAR field holds."""


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


class MilvusChunkStore:
    """The chunks of one knowledge base in one Milvus collection."""

    def __init__(self, client: MilvusClient, config: MilvusConfig) -> None:
        self._client = client
        self.config = config
        self.collection = config.collection
        self._translator = MilvusExpressionTranslator(vocabulary=self._vocabulary)
        self._values_lock = threading.Lock()
        self._closed = threading.Event()
        self._spellings: dict[str, frozenset[str]] | None = None
        self._spellings_read_at = 0.0
        self._reading: Future[dict[str, frozenset[str]]] | None = None
        self._dimension: int | None = None

    @classmethod
    def connect(cls, config: MilvusConfig) -> MilvusChunkStore:
        """Open a client from a validated ``milvus:`` block (secrets read from the environment)."""
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
        store = cls(client, config)
        if client.has_collection(store.collection):
            client.load_collection(store.collection)
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
        _check_sizes(chunks)
        wanted = {chunk.chunk_id: chunk for chunk in chunks}
        hashes = {chunk.chunk_id: content_hash(chunk, embedding_model) for chunk in chunks}
        with SyncLease(self._client, self.collection, ttl_s=self.config.lease_ttl_s):
            stored = self._stored_hashes_and_sources()
            changed = [wanted[i] for i, h in hashes.items() if stored.get(i, ("", ""))[0] != h]
            stale = sorted(set(stored) - set(wanted))
            # No flush: Strong and Session reads see unflushed rows, and Milvus seals segments
            # (and builds their index) by itself; a flush would add seconds to every sync.
            self._write(changed, hashes, embed)
            self._delete(stale)
        kept_sources = {str(chunk.metadata.get("source", "")) for chunk in chunks}
        removed = {stored[i][1] for i in stale} - kept_sources
        self._forget_values()
        report = SyncReport(
            embedded=len(changed),
            unchanged=len(wanted) - len(changed),
            deleted=len(stale),
            removed_sources=tuple(sorted(removed)),
            seconds=time.perf_counter() - started,
        )
        logger.info("milvus.sync.done", collection=self.collection, **report.__dict__)
        return report

    def _stored_hashes_and_sources(self) -> dict[str, tuple[str, str]]:
        if not self._client.has_collection(self.collection):
            return {}
        rows = self._scan([CHUNK_ID_FIELD, HASH_FIELD, SOURCE_FIELD])
        return {row[CHUNK_ID_FIELD]: (row[HASH_FIELD], row[SOURCE_FIELD]) for row in rows}

    def _write(self, chunks: Sequence[Chunk], hashes: Mapping[str, str], embed: Embed) -> None:
        for start in range(0, len(chunks), EMBED_BATCH):
            batch = chunks[start : start + EMBED_BATCH]
            vectors = _checked_vectors(embed([chunk.text for chunk in batch]), len(batch))
            self._ensure_collection(vectors.shape[1])
            rows = [
                _row(chunk, hashes[chunk.chunk_id], vector)
                for chunk, vector in zip(batch, vectors, strict=True)
            ]
            self._client.upsert(self.collection, rows)
            logger.debug("milvus.sync.batch_written", collection=self.collection, rows=len(rows))

    def _delete(self, chunk_ids: Sequence[str]) -> None:
        for start in range(0, len(chunk_ids), DELETE_BATCH):
            batch = chunk_ids[start : start + DELETE_BATCH]
            literals = ", ".join(string_literal(chunk_id) for chunk_id in batch)
            self._client.delete(self.collection, filter=f"{CHUNK_ID_FIELD} in [{literals}]")

    def _ensure_collection(self, dimension: int) -> None:
        if self._client.has_collection(self.collection):
            self._check_dimension(dimension)
            return
        schema = MilvusClient.create_schema(auto_id=False, enable_dynamic_field=False)
        schema.add_field(CHUNK_ID_FIELD, DataType.VARCHAR, max_length=MAX_ID_BYTES, is_primary=True)
        schema.add_field(SOURCE_FIELD, DataType.VARCHAR, max_length=MAX_SOURCE_BYTES)
        schema.add_field(HASH_FIELD, DataType.VARCHAR, max_length=64)
        schema.add_field(TEXT_FIELD, DataType.VARCHAR, max_length=MAX_VARCHAR_BYTES)
        schema.add_field(METADATA_FIELD, DataType.JSON)
        schema.add_field(FILTERABLE_FIELD, DataType.JSON)
        schema.add_field(VECTOR_FIELD, DataType.FLOAT_VECTOR, dim=dimension)
        index_params = self._client.prepare_index_params()
        index_params.add_index(
            VECTOR_FIELD,
            index_type=self.config.index_type,
            metric_type=METRIC,
            params=dict(self.config.index_params),
        )
        self._client.create_collection(
            self.collection,
            schema=schema,
            index_params=index_params,
            consistency_level=self.config.consistency_level,
        )
        self._dimension = dimension
        logger.info("milvus.collection.created", collection=self.collection, dimension=dimension)

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
        self._require_collection()
        vector = np.asarray(query_vector, dtype=np.float32).reshape(-1)
        self._check_dimension(len(vector))
        expression = self.expression(filter)
        hits = self._client.search(
            self.collection,
            data=[vector.tolist()],
            filter=expression,
            limit=k,
            output_fields=[TEXT_FIELD, METADATA_FIELD],
            search_params={"metric_type": METRIC, "params": dict(self.config.search_params)},
        )[0]
        results = [_scored(hit) for hit in hits]
        logger.debug(
            "milvus.search.done",
            collection=self.collection,
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
            self.collection,
            data=[np.asarray(query_vector, dtype=np.float32).reshape(-1).tolist()],
            filter=f"{CHUNK_ID_FIELD} in [{literals}]",
            limit=len(chunk_ids),
            output_fields=[],
            search_params={"metric_type": METRIC, "params": dict(self.config.search_params)},
        )[0]
        return {str(hit["id"]): _clipped(hit["distance"]) for hit in hits}

    def matching(self, filter: FilterDirective | None) -> list[Chunk]:
        """Up to ``MAX_MATCHED`` chunks ``filter`` admits, with their metadata (no text)."""
        self._require_collection()
        rows = self._client.query(
            self.collection,
            filter=self.expression(filter),
            output_fields=[METADATA_FIELD],
            limit=MAX_MATCHED,
        )
        return [
            Chunk(chunk_id=str(row[CHUNK_ID_FIELD]), text="", metadata=row[METADATA_FIELD] or {})
            for row in rows
        ]

    def has_attribute(self, attribute: str) -> bool:
        """Whether some chunk has ``attribute`` (a query that stops at the first one)."""
        if not attribute or not self._client.has_collection(self.collection):
            return False
        expression = HasAttribute(attribute=attribute).accept(self._translator)
        return bool(self._client.query(self.collection, filter=expression, limit=1))

    def expression(self, filter: FilterDirective | None) -> str:
        """The Milvus expression a filter becomes ("" = no filter); for logs and debugging."""
        return "" if filter is None else filter.accept(self._translator)

    def count(self) -> int:
        """Number of chunks in the collection (0 if it does not exist)."""
        if not self._client.has_collection(self.collection):
            return 0
        rows = self._client.query(
            self.collection, filter="", output_fields=["count(*)"], consistency_level="Strong"
        )
        return int(rows[0]["count(*)"])

    # --------------------------------------------------------------------------- values

    def values_of(self, attribute: str) -> frozenset[str]:
        """Distinct string values of an attribute as written (trimmed), list members included.

        Read in one scan of the collection's metadata. The first call waits for that scan (or for
        the one ``prefetch_values`` started); later ones get the values read last while a stale
        read (``VOCABULARY_TTL_S``) is refreshed in the background.
        """
        return self._all_spellings().get(attribute, frozenset())

    def prefetch_values(self) -> None:
        """Start reading attribute values in the background (a replica starting up)."""
        with self._values_lock:
            if self._spellings is None:
                self._read_in_background()

    def _vocabulary(self, attribute: str) -> Collection[str]:
        return {normalise_text(spelling) for spelling in self.values_of(attribute)}

    def _all_spellings(self) -> dict[str, frozenset[str]]:
        with self._values_lock:
            current = self._spellings
            stale = time.monotonic() - self._spellings_read_at >= VOCABULARY_TTL_S
            reading = self._read_in_background() if current is None or stale else None
        if current is not None:
            return current
        assert reading is not None
        return reading.result()

    def _read_in_background(self) -> Future[dict[str, frozenset[str]]]:
        """The scan under way, or a new one; call with ``_values_lock`` held."""
        if self._reading is None or self._reading.done():
            reading: Future[dict[str, frozenset[str]]] = Future()
            self._reading = reading
            threading.Thread(target=self._read_into, args=(reading,), daemon=True).start()
        return self._reading

    def _read_into(self, reading: Future[dict[str, frozenset[str]]]) -> None:
        started = time.perf_counter()
        try:
            spellings = self._read_spellings()
        except Exception as error:  # a later call tries again; the first caller sees the error
            if self._closed.is_set():  # the store closed under the scan: nothing went wrong
                logger.debug("milvus.values.read_stopped", collection=self.collection)
            else:
                logger.error(
                    "milvus.values.read_failed", collection=self.collection, error=str(error)
                )
            with self._values_lock:  # keep serving the old values; try again after the TTL
                if self._spellings is not None:
                    self._spellings_read_at = time.monotonic()
            reading.set_exception(error)
            return
        with self._values_lock:
            if self._reading is reading:  # not forgotten by a sync meanwhile
                self._spellings, self._spellings_read_at = spellings, time.monotonic()
        logger.info(
            "milvus.values.read",
            collection=self.collection,
            attributes=len(spellings),
            seconds=round(time.perf_counter() - started, 2),
        )
        reading.set_result(spellings)

    def _forget_values(self) -> None:
        with self._values_lock:
            self._spellings, self._reading = None, None

    def _read_spellings(self) -> dict[str, frozenset[str]]:
        if not self._client.has_collection(self.collection):
            return {}
        spellings: dict[str, set[str]] = {}
        for row in self._scan([METADATA_FIELD, FILTERABLE_FIELD]):
            metadata, form = row[METADATA_FIELD] or {}, row[FILTERABLE_FIELD] or {}
            for attribute, facets in form.items():
                found = spellings.setdefault(attribute, set())
                value = metadata.get(attribute)
                if TEXT in facets and isinstance(value, str):
                    found.add(value.strip())
                elif MEMBERS in facets and isinstance(value, list):
                    found.update(_member_spellings(value))
        return {attribute: frozenset(values) for attribute, values in spellings.items()}

    # -------------------------------------------------------------------------- helpers

    def _scan(self, fields: list[str]) -> Iterator[dict[str, Any]]:
        iterator = self._client.query_iterator(
            self.collection,
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

    def _require_collection(self) -> None:
        if self._dimension is None and not self._client.has_collection(self.collection):
            raise MilvusCollectionMissing(
                f"Milvus collection {self.collection!r} does not exist at {self.config.uri}. "
                "Ingest first: start an assistant with milvus.ingest: auto, or run the console's "
                "`index` command (milvus.ingest: console_only)."
            )

    def _check_dimension(self, dimension: int) -> None:
        if self._dimension is None:
            description = self._client.describe_collection(self.collection)
            field = next(f for f in description["fields"] if f["name"] == VECTOR_FIELD)
            self._dimension = int(field["params"]["dim"])
        if dimension != self._dimension:
            raise ValueError(
                f"Vectors have {dimension} dimensions but collection {self.collection!r} holds "
                f"{self._dimension}. The embedding model changed: set milvus.collection to a new "
                "name (or drop the old collection) and sync again."
            )


def content_hash(chunk: Chunk, embedding_model: str = "") -> str:
    """SHA-256 of what a chunk's row is made of; equal hashes mean nothing to re-embed."""
    payload = json.dumps(
        [embedding_model, chunk.text, _json_safe(chunk.metadata)], sort_keys=True, default=str
    )
    return hashlib.sha256(payload.encode("utf-8")).hexdigest()


def _row(chunk: Chunk, digest: str, vector: NDArray[np.float32]) -> dict[str, Any]:
    return {
        CHUNK_ID_FIELD: chunk.chunk_id,
        SOURCE_FIELD: str(chunk.metadata.get("source", "")),
        HASH_FIELD: digest,
        TEXT_FIELD: chunk.text,
        METADATA_FIELD: _json_safe(chunk.metadata),
        FILTERABLE_FIELD: normal_form(chunk.metadata),
        VECTOR_FIELD: vector,
    }


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


def _checked_vectors(vectors: Any, expected_rows: int) -> NDArray[np.float32]:
    array = np.asarray(vectors, dtype=np.float32)
    if array.ndim != 2 or array.shape[0] != expected_rows:
        raise ValueError(
            f"embed() returned shape {array.shape}; expected ({expected_rows}, dimension)."
        )
    if not np.isfinite(array).all():
        raise ValueError("embed() returned NaN or infinite values.")
    return array


def _check_sizes(chunks: Sequence[Chunk]) -> None:
    limits = ((TEXT_FIELD, MAX_VARCHAR_BYTES), ("chunk_id", MAX_ID_BYTES))
    for chunk in chunks:
        for name, limit in limits:
            value = chunk.text if name == TEXT_FIELD else chunk.chunk_id
            if len(value.encode("utf-8")) > limit:
                raise ChunkTooLarge(
                    f"Chunk {chunk.chunk_id[:80]!r}: its {name} exceeds {limit} bytes, the Milvus "
                    "limit. Lower the chunk size in the ingestion settings."
                )
        if len(str(chunk.metadata.get("source", "")).encode("utf-8")) > MAX_SOURCE_BYTES:
            raise ChunkTooLarge(f"Chunk {chunk.chunk_id[:80]!r}: source path too long.")


def _json_safe(value: Any) -> Any:
    """Metadata as JSON Milvus can store: dates as ISO strings, tuples and sets as lists."""
    if isinstance(value, Mapping):
        return {str(key): _json_safe(item) for key, item in value.items()}
    if isinstance(value, list | tuple):
        return [_json_safe(item) for item in value]
    if isinstance(value, set | frozenset):
        return sorted((_json_safe(item) for item in value), key=str)
    if isinstance(value, dt.date):
        return value.isoformat()
    if isinstance(value, float) and not np.isfinite(value):
        return None
    if value is None or isinstance(value, str | int | float | bool):
        return value
    return str(value)


def _member_spellings(members: list[Any]) -> set[str]:
    spellings = set()
    for member in members:
        if isinstance(member, bool):
            member = "true" if member else "false"
        if isinstance(member, str | int | float) and str(member).strip():
            spellings.add(str(member).strip())
    return spellings
