"""Writing a knowledge base into Milvus: incremental sync, withholding, publishing a new version.

``sync`` compares ids and content hashes (``milvus.rows``) with what the collection already
holds, so a restart embeds nothing and an edit re-embeds only the chunks that changed; it runs
under a lease held in Milvus (``milvus.lease``) so that replicas starting together ingest once.
Rows whose chunk changed or went away are deleted first, from every version a replica may search,
and ``sync`` waits until Milvus no longer finds them: no replica serves a chunk with its old text
or attributes while the new rows are embedded and written (``withhold`` does that alone, at once,
when a writer's refresh sees a change). A sync that changed rows leaves a new sync mark beside the
version pointer, from which replicas learn to read the attribute values again.
When the layout the declared attributes need differs from the served version's, ``sync`` fills a
new version and publishes it (``milvus.versions``); searches keep using the old one until then.
"""

from __future__ import annotations

import time
from collections.abc import Callable, Collection, Mapping, Sequence
from dataclasses import dataclass
from typing import Any

import numpy as np
import structlog
from numpy.typing import NDArray
from pymilvus import MilvusClient
from pymilvus.client.types import LoadState

from rasa_context_retrieval.knowledge.models import Chunk
from rasa_context_retrieval.milvus.attribute_values import AttributeValues
from rasa_context_retrieval.milvus.collection import Collections, CollectionVersion
from rasa_context_retrieval.milvus.config import MilvusConfig
from rasa_context_retrieval.milvus.layout import CollectionLayout
from rasa_context_retrieval.milvus.lease import SyncLease
from rasa_context_retrieval.milvus.normal_form import CHUNK_ID_FIELD
from rasa_context_retrieval.milvus.rows import (
    HASH_FIELD,
    SOURCE_FIELD,
    check_sizes,
    checked_vectors,
    chunk_row,
    content_hash,
)
from rasa_context_retrieval.milvus.serving import ServedVersion
from rasa_context_retrieval.milvus.versions import VersionPointer

logger = structlog.get_logger(__name__)

Embed = Callable[[list[str]], NDArray[np.floating[Any]]]

EMBED_BATCH = 256
"""Chunks embedded and upserted per round trip."""
INDEX_WAIT_S = 300.0
"""Longest wait for a new version's indexes before it is published."""
INDEX_POLL_S = 0.5


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


@dataclass(frozen=True, kw_only=True)
class CollectionSync:
    """The writer's side of one knowledge base in Milvus."""

    client: MilvusClient
    config: MilvusConfig
    pointer: VersionPointer
    served: ServedVersion
    collections: Collections
    values: AttributeValues
    """Forgotten after a sync: this process changed the rows."""
    planned: CollectionLayout

    @property
    def collection(self) -> str:
        """The configured name: of the pointer, the lease and the versions."""
        return self.config.collection

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
        with SyncLease(self.client, self.collection, ttl_s=self.config.lease_ttl_s):
            current = self.served.read()
            held = self._stored_hashes_and_sources(current)
            outdated = _outdated(held, hashes)
            self.withhold(outdated)  # before anything is embedded or written
            stale = sorted(set(held) - set(wanted))
            changed = [wanted[i] for i, h in hashes.items() if held.get(i, ("", ""))[0] != h]
            target = self._target_version(current, chunks, changed)
            if target is not current:
                stored = self._stored_hashes_and_sources(target)
                changed = [wanted[i] for i, h in hashes.items() if stored.get(i, ("", ""))[0] != h]
                self.collections.delete(target.name, sorted(set(stored) - set(wanted)))
            # No flush: Strong and Session reads see unflushed rows, and Milvus seals segments
            # (and builds their index) by itself; a flush would add seconds to every sync.
            self._write(target, changed, hashes, embed)
            if target is not current:
                self._publish(target, current)
            if changed or outdated:
                self.pointer.mark_synced()
        kept_sources = {str(chunk.metadata.get("source", "")) for chunk in chunks}
        removed = {held[i][1] for i in stale} - kept_sources
        self.values.forget()
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
            self.collections.delete(name, ids)
            if self.client.get_load_state(name).get("state") == LoadState.Loaded:
                self.collections.wait_until_gone(name, ids)  # one not loaded: nobody searches
        logger.info("milvus.sync.withheld", collection=self.collection, chunks=len(ids))

    def withhold_outdated(self, chunks: Sequence[Chunk], *, embedding_model: str = "") -> None:
        """``withhold`` every row that is not one of ``chunks`` as it is now (text, attributes,
        embedding model): what a writer starting on changed documents does before embedding."""
        hashes = {chunk.chunk_id: content_hash(chunk, embedding_model) for chunk in chunks}
        self.withhold(_outdated(self._stored_hashes_and_sources(self.served.read()), hashes))

    def _searchable_versions(self) -> list[str]:
        """Every version a replica may be searching: those kept, and the previous release's."""
        names = self.pointer.versions()
        if self.client.has_collection(self.collection):
            names.append(self.collection)
        return names

    def _stored_hashes_and_sources(
        self, version: CollectionVersion | None
    ) -> dict[str, tuple[str, str]]:
        if version is None or not self.client.has_collection(version.name):
            return {}
        rows = self.collections.scan(version.name, [CHUNK_ID_FIELD, HASH_FIELD, SOURCE_FIELD])
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
        planned = self.planned
        if current is not None and current.layout.serves(planned):
            needed = planned.needed_overflow([chunk.metadata for chunk in changed])
            if current.layout.serves(planned.with_overflow(needed)):
                return current
        needed = planned.needed_overflow([chunk.metadata for chunk in chunks])
        wanted = planned.with_overflow(needed)
        version = self.served.version_of(wanted.version_name(self.collection), wanted)
        logger.info(
            "milvus.version.building",
            collection=self.collection,
            version=version.name,
            serving=current.name if current else None,
            typed=sorted(wanted.typed_names),
            overflow=sorted(needed),
        )
        if current is not None and not chunks:  # nothing will tell the dimension
            self.collections.ensure(version, self.collections.dimension_of(current))
        return version

    def _publish(self, version: CollectionVersion, previous: CollectionVersion | None) -> None:
        """Serve ``version`` here and on every replica; the previous version stays for replicas
        still searching it, older ones are dropped."""
        if not self.client.has_collection(version.name):
            return  # nothing was ever written: there is nothing to serve yet
        # A new version is searched from now on: flush once, so its rows are in sealed,
        # indexed segments rather than growing ones (bench/results/milvus.md).
        self.client.flush(version.name)
        self._wait_for_indexes(version.name)
        self.pointer.publish(version.name)
        kept = {version.name} | ({previous.name} if previous else set())
        self.pointer.drop_all_but(kept)
        self.served.adopt(version)

    def _wait_for_indexes(self, collection: str) -> None:
        """Let Milvus index the flushed segments before replicas switch (searches would work
        meanwhile, but scan raw data); at most ``INDEX_WAIT_S``, then publish anyway."""
        deadline = time.monotonic() + INDEX_WAIT_S
        for index in self.client.list_indexes(collection):
            while self.client.describe_index(collection, index).get("pending_index_rows", 0):
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
            self.collections.ensure(version, vectors.shape[1])
            rows = [
                chunk_row(chunk, hashes[chunk.chunk_id], vector, version.layout)
                for chunk, vector in zip(batch, vectors, strict=True)
            ]
            self.client.upsert(version.name, rows)
            logger.debug("milvus.sync.batch_written", collection=version.name, rows=len(rows))


def _outdated(held: Mapping[str, tuple[str, str]], hashes: Mapping[str, str]) -> list[str]:
    """Ids of stored rows (id -> hash, source) whose chunk changed or went away."""
    return [chunk_id for chunk_id, (digest, _) in held.items() if hashes.get(chunk_id) != digest]
