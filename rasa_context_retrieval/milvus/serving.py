"""Which version this process searches: read from the version pointer, kept while a re-read runs.

The pointer (``milvus.versions``) names the version replicas search. This process reads it when
it first needs a version and again, in the background, once what it read is ``POINTER_TTL_S``
old, so a search never waits on the pointer. A version this process publishes itself is served
at once, and a pointer read that began before that publication is discarded. Every expression a
search sends is written for the layout of the version it searches (``milvus.expression``).
"""

from __future__ import annotations

import threading
import time
from collections.abc import Collection

import structlog
from pymilvus import MilvusClient

from rasa_context_retrieval.errors import ContextRetrievalError
from rasa_context_retrieval.filters.values import normalise_text
from rasa_context_retrieval.milvus.attribute_values import AttributeValues
from rasa_context_retrieval.milvus.collection import CollectionVersion
from rasa_context_retrieval.milvus.config import MilvusConfig
from rasa_context_retrieval.milvus.expression import MilvusExpressionTranslator
from rasa_context_retrieval.milvus.layout import LAYOUT_FORMAT, CollectionLayout
from rasa_context_retrieval.milvus.versions import POINTER_TTL_S, VersionPointer

logger = structlog.get_logger(__name__)

__all__ = ["POINTER_TTL_S", "MilvusCollectionMissing", "ServedVersion"]


class MilvusCollectionMissing(ContextRetrievalError, RuntimeError):
    """The collection does not exist yet (nothing was ingested)."""


class ServedVersion:
    """The version searches use, the pointer it was read from, and its background re-read."""

    def __init__(
        self,
        client: MilvusClient,
        config: MilvusConfig,
        pointer: VersionPointer,
        values: AttributeValues,
        closed: threading.Event,
    ) -> None:
        self._client = client
        self._config = config
        self.collection = config.collection
        self._pointer = pointer
        self._values = values
        """Told when the version changes or another writer synced (its sync mark)."""
        self._closed = closed
        self._lock = threading.Lock()
        self._version: CollectionVersion | None = None
        self._read_at = -POINTER_TTL_S
        self._refreshing = False
        self._published = 0
        """Versions this process published; a pointer read that began before one is discarded."""

    def served(self) -> CollectionVersion | None:
        """The version searches use. Once ``POINTER_TTL_S`` old, the pointer is read again in
        the background while the version read last keeps serving."""
        with self._lock:
            version = self._version
            due = time.monotonic() - self._read_at >= POINTER_TTL_S
            closed = self._closed.is_set()
            if due and version is not None and not self._refreshing and not closed:
                self._refreshing = True
                threading.Thread(target=self._refresh, daemon=True).start()
        if version is None and due:  # nothing served yet: nothing to keep serving meanwhile
            return self.read()
        return version

    def served_or_raise(self) -> CollectionVersion:
        version = self.served()
        if version is None:
            raise MilvusCollectionMissing(
                f"Milvus collection {self.collection!r} does not exist at {self._config.uri}. "
                "Ingest first: start an assistant with milvus.ingest: auto, or run the console's "
                "`index` command (milvus.ingest: console_only)."
            )
        return version

    def read(self) -> CollectionVersion | None:
        """Read the pointer now (``Strong``) and serve the version it names."""
        with self._lock:
            published = self._published  # a publication meanwhile outdates what is read here
        pointer = self._pointer.read()
        self._values.note_sync_mark(pointer.synced)
        name = pointer.version
        if name is None and self._client.has_collection(self.collection):
            name = self.collection  # the previous release's collection
        with self._lock:
            self._read_at = time.monotonic()
            if published != self._published or (
                self._version is not None and self._version.name == name
            ):
                return self._version
            if name is None:
                self._version = None
                return None
        description = self._client.describe_collection(name).get("description", "")
        version = self.version_of(name, CollectionLayout.described(description))
        with self._lock:
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

    def adopt(self, version: CollectionVersion) -> None:
        """Serve ``version``, which this process has just published."""
        with self._lock:
            self._version, self._read_at = version, time.monotonic()
            self._published += 1
        self._values.forget()

    def version_of(self, name: str, layout: CollectionLayout) -> CollectionVersion:
        """The version called ``name``, laid out as ``layout``, with its expression translator."""
        return CollectionVersion(name, layout, MilvusExpressionTranslator(self._vocabulary, layout))

    def _vocabulary(self, attribute: str) -> Collection[str]:
        return {normalise_text(spelling) for spelling in self._values.all().get(attribute, ())}

    def _refresh(self) -> None:
        try:
            self.read()
        except Exception as error:  # keep searching the version read last; retry after the TTL
            if not self._closed.is_set():
                logger.warning(
                    "milvus.version.read_failed", collection=self.collection, error=str(error)
                )
            with self._lock:
                self._read_at = time.monotonic()
        finally:
            with self._lock:
                self._refreshing = False
