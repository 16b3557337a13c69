"""One chunk as a row of the Milvus collection: its fields, its content hash, size limits.

What a row holds is decided here once; writing (``milvus.sync``) builds rows with ``chunk_row``
and reading values (``milvus.attribute_values``) reads facets back with ``facet_keys``. The
content hash says whether a stored row is still the chunk as the documents say now, so a sync
re-embeds only what changed.
"""

from __future__ import annotations

import datetime as dt
import hashlib
import json
import numbers
from collections.abc import Mapping, Sequence
from typing import Any

import numpy as np
from numpy.typing import NDArray

from rasa_context_retrieval.errors import ContextRetrievalError
from rasa_context_retrieval.filters.values import FLOAT_EXACT_LIMIT
from rasa_context_retrieval.knowledge.models import Chunk
from rasa_context_retrieval.milvus.layout import OVERFLOW, TYPED, CollectionLayout
from rasa_context_retrieval.milvus.normal_form import (
    CHUNK_ID_FIELD,
    FILTERABLE_FIELD,
    MEMBERS,
    OVERFLOW_FIELD,
    TEXT,
    attribute_facets,
    normal_form,
)

TEXT_FIELD = "text"
SOURCE_FIELD = "source"
HASH_FIELD = "content_hash"
METADATA_FIELD = "metadata"
VECTOR_FIELD = "embedding"
MAX_VARCHAR_BYTES = 65_535
"""Milvus' limit for one VARCHAR value; a longer chunk is refused with a clear error."""
MAX_ID_BYTES = 1_024
MAX_SOURCE_BYTES = 4_096


class ChunkTooLarge(ContextRetrievalError, ValueError):
    """A chunk's text, id or source exceeds what a Milvus VARCHAR field holds, or its metadata
    an integer beyond what a Milvus JSON field holds."""


JSON_INTEGERS = range(-(2**63), 2**64)
"""The integers a Milvus JSON field stores (signed and unsigned 64-bit); Milvus refuses others."""


EXACT_INTEGERS = "exact integers"
"""Part of the hash of a row that keeps an integer's exact remainder ``r`` (``normal_form``)."""


def content_hash(chunk: Chunk, embedding_model: str = "") -> str:
    """SHA-256 of what a chunk's row is made of; equal hashes mean nothing to re-embed.

    Rows written before integers of 2**53 and beyond kept their exact remainder lack it, and
    Milvus would compare such an id as its neighbours' float: the hash of a row that holds a
    remainder says so, so the first sync after an upgrade rewrites exactly those rows and
    leaves every other row's hash, and vectors, as they were.
    """
    parts = [embedding_model, chunk.text, json_safe(chunk.metadata)]
    if _keeps_remainders(chunk.metadata):
        parts.append(EXACT_INTEGERS)
    payload = json.dumps(parts, sort_keys=True, default=str)
    return hashlib.sha256(payload.encode("utf-8")).hexdigest()


def _keeps_remainders(metadata: Mapping[str, Any]) -> bool:
    """Whether a value is stored with a remainder; every chunk is hashed at every sync, so only
    a value that can be that large (an integer of 2**53 or more, or a long text of digits) is
    read into its facets."""
    return any(
        _may_be_large(value) and "r" in attribute_facets(value) for value in metadata.values()
    )


def _may_be_large(value: Any) -> bool:
    if isinstance(value, numbers.Integral) and not isinstance(value, bool):
        return abs(int(value)) >= FLOAT_EXACT_LIMIT
    return isinstance(value, str) and len(value) >= len(str(FLOAT_EXACT_LIMIT))


def chunk_row(
    chunk: Chunk, digest: str, vector: NDArray[np.float32], layout: CollectionLayout
) -> dict[str, Any]:
    typed, overflow = layout.encode(chunk.metadata)
    return {
        CHUNK_ID_FIELD: chunk.chunk_id,
        SOURCE_FIELD: str(chunk.metadata.get("source", "")),
        HASH_FIELD: digest,
        TEXT_FIELD: chunk.text,
        METADATA_FIELD: json_safe(chunk.metadata),
        FILTERABLE_FIELD: normal_form(chunk.metadata, typed=layout.typed_names),
        OVERFLOW_FIELD: overflow,
        **typed,
        VECTOR_FIELD: vector,
    }


def facet_keys(row: Mapping[str, Any], layout: CollectionLayout) -> dict[str, Any]:
    """attribute -> its facets (the keys are what matters) from a row's JSON and typed fields."""
    form = dict(row[FILTERABLE_FIELD] or {})
    for typed in layout.typed:
        presence = row[typed.presence]
        if presence == OVERFLOW:
            form[typed.attribute] = (row[OVERFLOW_FIELD] or {}).get(typed.attribute, {})
        elif presence == TYPED:
            form[typed.attribute] = {
                facet: True for facet in (TEXT, MEMBERS) if row.get(typed.field(facet))
            }
    return form


def checked_vectors(vectors: Any, expected_rows: int) -> NDArray[np.float32]:
    array = np.asarray(vectors, dtype=np.float32)
    if array.ndim != 2 or array.shape[0] != expected_rows:
        raise ValueError(
            f"embed() returned shape {array.shape}; expected ({expected_rows}, dimension)."
        )
    if not np.isfinite(array).all():
        raise ValueError("embed() returned NaN or infinite values.")
    return array


def check_sizes(chunks: Sequence[Chunk]) -> None:
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
        for attribute, value in chunk.metadata.items():
            if _holds_wide_integer(value):
                raise ChunkTooLarge(
                    f"Chunk {chunk.chunk_id[:80]!r}: its attribute {str(attribute)[:80]!r} holds "
                    "an integer beyond 64 bits, which Milvus cannot store. Quote it in the front "
                    "matter (it is then compared by its digits, as on FAISS)."
                )


def _holds_wide_integer(value: Any) -> bool:
    if isinstance(value, int) and not isinstance(value, bool):
        return value not in JSON_INTEGERS
    if isinstance(value, list | tuple | set | frozenset):
        return any(_holds_wide_integer(item) for item in value)
    if isinstance(value, Mapping):
        return any(_holds_wide_integer(item) for item in value.values())
    return False


def json_safe(value: Any) -> Any:
    """Metadata as JSON Milvus can store: dates as ISO strings, tuples and sets as lists."""
    if isinstance(value, Mapping):
        return {str(key): json_safe(item) for key, item in value.items()}
    if isinstance(value, list | tuple):
        return [json_safe(item) for item in value]
    if isinstance(value, set | frozenset):
        return sorted((json_safe(item) for item in value), key=str)
    if isinstance(value, dt.date):
        return value.isoformat()
    if isinstance(value, float) and not np.isfinite(value):
        return None
    if value is None or isinstance(value, str | int | float | bool):
        return value
    return str(value)
