"""Values that look equal but are not: the access rule decides the same on Milvus as on FAISS.

Each backend searches within the access directive, a case-insensitive superset, and the exact
rule (``access.entitlements``) checks every result. So the two backends return the same
documents exactly when neither backend's superset leaves out a document the rule admits. Here
every entitlement is tried against documents whose access attribute differs from it only by case,
Unicode normalisation, kinds of whitespace, type (a number as text, a bool as text) or float
precision, on a real Milvus server with the attribute in the JSON field and in a typed field.
"""

from __future__ import annotations

from collections.abc import Iterator
from typing import Any

import numpy as np
import pytest

from rasa_context_retrieval.access.channel import ChannelMetadata
from rasa_context_retrieval.access.entitlements import AccessFilter
from rasa_context_retrieval.filters.columns import MetadataColumns
from rasa_context_retrieval.filters.faiss_translator import FaissTranslator
from rasa_context_retrieval.filters.schema import MetadataField
from rasa_context_retrieval.knowledge.models import Chunk
from rasa_context_retrieval.milvus.store import MilvusChunkStore
from tests.milvus_server import milvus_uri  # noqa: F401
from tests.milvus_stores import hashed_embedder, synced_side_by_side

pytestmark = pytest.mark.milvus

DIMENSION = 8
LOOK_ALIKES: tuple[Any, ...] = (
    "premium",
    "Premium",
    " premium ",
    "premium\u3000",  # ideographic space
    "\u00a0premium",  # no-break space
    "premium\u200b",  # zero-width space: not whitespace
    "pr\u00e9mium",  # é composed
    "pre\u0301mium",  # e + combining acute
    "\uff50\uff52\uff45\uff4d\uff49\uff55\uff4d",  # fullwidth
    "Stra\u00dfe",
    "STRASSE",
    "1",
    1,
    1.0,
    "1.0",
    True,
    "true",
    2**53 + 1,
    2**53,
    float(2**53),
    ["premium", "other"],
    [" Premium"],
    [1, "x"],
    [True, "x"],
    [2.0, "y"],
    [2**53 + 1],
)
CHUNKS = [
    Chunk(f"c{number}", f"text {number}", {"plan": value})
    for number, value in enumerate(LOOK_ALIKES)
] + [Chunk("public", "public", {})]
ENTITLEMENTS = [value for value in LOOK_ALIKES if not isinstance(value, list)] + [
    2,
    2.0,
    ["Premium", "strasse"],
    [],
]
LAYOUTS = {
    "json_field": (),
    "typed_string": [MetadataField(name="plan", type="string")],
    "typed_list": [MetadataField(name="plan", type="list[string]")],
}


fake_embed = hashed_embedder(DIMENSION)


@pytest.fixture(scope="module")
def stores(milvus_uri: str) -> Iterator[dict[str, MilvusChunkStore]]:  # noqa: F811
    plans = {layout: (fields, CHUNKS) for layout, fields in LAYOUTS.items()}
    with synced_side_by_side(milvus_uri, "parity", plans, fake_embed) as stores:
        yield stores


@pytest.fixture(scope="module", params=list(LAYOUTS))
def store(stores: dict[str, MilvusChunkStore], request: pytest.FixtureRequest) -> MilvusChunkStore:
    return stores[request.param]


def admitted(access: AccessFilter, chunks: list[Chunk]) -> set[str]:
    return {chunk.chunk_id for chunk in chunks if access.admits(chunk.metadata)}


@pytest.mark.parametrize("entitlement", ENTITLEMENTS, ids=repr)
def test_both_backends_return_exactly_what_the_rule_admits(
    store: MilvusChunkStore, entitlement: Any
) -> None:
    access = AccessFilter.from_channel(ChannelMetadata({"plan": entitlement}), {"plan": "plan"})
    assert access is not None and access.directive is not None
    mask = access.directive.accept(FaissTranslator(MetadataColumns([c.metadata for c in CHUNKS])))
    on_faiss = [chunk for chunk, selected in zip(CHUNKS, mask, strict=True) if selected]
    hits = store.search(np.ones(DIMENSION), access.directive, k=len(CHUNKS))
    on_milvus = [hit.chunk for hit in hits]
    expected = admitted(access, CHUNKS)
    assert "public" in expected
    assert admitted(access, on_faiss) == expected
    assert admitted(access, on_milvus) == expected
