"""The attribute values a Milvus collection holds, read in one scan and served from a cache.

Values (as written, trimmed, list members included) feed the self-query vocabulary and the
values a reader may see. Reading them scans the whole collection, so they are read once, in the
background, and served for ``VOCABULARY_TTL_S``; a stale read is refreshed while the old values
keep serving, and a new sync mark (another writer synced) makes them stale at once. The scan
(``read_spellings``) reads each row's metadata as written and its normal form, which says which
attributes hold a string or a list there.
"""

from __future__ import annotations

import threading
import time
from collections.abc import Callable
from concurrent.futures import Future
from typing import Any

import structlog

from rasa_context_retrieval.milvus.collection import Collections, CollectionVersion
from rasa_context_retrieval.milvus.layout import LAYOUT_FORMAT
from rasa_context_retrieval.milvus.normal_form import (
    FILTERABLE_FIELD,
    MEMBERS,
    OVERFLOW_FIELD,
    TEXT,
)
from rasa_context_retrieval.milvus.rows import METADATA_FIELD, facet_keys

logger = structlog.get_logger(__name__)

VOCABULARY_TTL_S = 300.0
"""How long attribute values are served before they are read again (in the background, while
the old ones keep serving); another writer's sync shows up after at most this plus one scan."""

Spellings = dict[str, frozenset[str]]


class AttributeValues:
    """A cache of one collection's attribute values; ``read`` scans the collection."""

    def __init__(
        self, read: Callable[[], Spellings], collection: str, closed: threading.Event
    ) -> None:
        self._read = read
        self._collection = collection
        self._closed = closed
        self._lock = threading.Lock()
        self._spellings: Spellings | None = None
        self._read_at = 0.0
        self._reading: Future[Spellings] | None = None
        self._synced: str | None = None
        """The sync mark seen last (``milvus.versions``)."""
        self._mark_seen = False

    def all(self) -> Spellings:
        """The values read last; the first call waits for the scan, a stale read refreshes."""
        with self._lock:
            current = self._spellings
            stale = time.monotonic() - self._read_at >= VOCABULARY_TTL_S
            reading = self._read_in_background() if current is None or stale else None
        if current is not None:
            return current
        assert reading is not None
        return reading.result()

    def prefetch(self) -> None:
        """Start reading in the background unless values were read already."""
        with self._lock:
            if self._spellings is None:
                self._read_in_background()

    def forget(self) -> None:
        """This process changed the rows: the next call waits for a fresh scan."""
        with self._lock:
            self._spellings, self._reading = None, None

    def note_sync_mark(self, synced: str | None) -> None:
        """A new sync mark outdates the values read: they are read again in the background
        (the old ones serve meanwhile, as after ``VOCABULARY_TTL_S``)."""
        with self._lock:
            seen, self._synced = self._synced, synced
            if self._mark_seen and seen != synced:
                self._read_at = -VOCABULARY_TTL_S
            self._mark_seen = True

    def _read_in_background(self) -> Future[Spellings]:
        """The scan under way, or a new one; call with ``_lock`` held."""
        if self._reading is None or self._reading.done():
            reading: Future[Spellings] = Future()
            self._reading = reading
            threading.Thread(target=self._read_into, args=(reading,), daemon=True).start()
        return self._reading

    def _read_into(self, reading: Future[Spellings]) -> None:
        started = time.perf_counter()
        try:
            spellings = self._read()
        except Exception as error:  # a later call tries again; the first caller sees the error
            if self._closed.is_set():  # the store closed under the scan: nothing went wrong
                logger.debug("milvus.values.read_stopped", collection=self._collection)
            else:
                logger.error(
                    "milvus.values.read_failed", collection=self._collection, error=str(error)
                )
            with self._lock:  # keep serving the old values; try again after the TTL
                if self._spellings is not None:
                    self._read_at = time.monotonic()
            reading.set_exception(error)
            return
        with self._lock:
            if self._reading is reading:  # not forgotten by a sync meanwhile
                self._spellings, self._read_at = spellings, time.monotonic()
        logger.info(
            "milvus.values.read",
            collection=self._collection,
            attributes=len(spellings),
            seconds=round(time.perf_counter() - started, 2),
        )
        reading.set_result(spellings)


def read_spellings(collections: Collections, version: CollectionVersion | None) -> Spellings:
    """Every attribute's values in ``version``, in one scan (none without a version)."""
    if version is None:
        return {}
    layout = version.layout
    fields = [METADATA_FIELD, FILTERABLE_FIELD]
    if layout.format == LAYOUT_FORMAT:
        fields.append(OVERFLOW_FIELD)
    for typed in layout.typed:
        fields += [typed.presence] + [typed.field(f) for f in (TEXT, MEMBERS) if f in typed.facets]
    spellings: dict[str, set[str]] = {}
    for row in collections.scan(version.name, fields):
        metadata, form = row[METADATA_FIELD] or {}, facet_keys(row, layout)
        for attribute, facets in form.items():
            found = spellings.setdefault(attribute, set())
            value = metadata.get(attribute)
            if TEXT in facets and isinstance(value, str):
                found.add(value.strip())
            elif MEMBERS in facets and isinstance(value, list):
                found.update(_member_spellings(value))
    return {attribute: frozenset(values) for attribute, values in spellings.items()}


def _member_spellings(members: list[Any]) -> set[str]:
    spellings = set()
    for member in members:
        if isinstance(member, bool):
            member = "true" if member else "false"
        if isinstance(member, str | int | float) and str(member).strip():
            spellings.add(str(member).strip())
    return spellings
