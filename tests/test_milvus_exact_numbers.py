"""Whole numbers compare exactly on a real Milvus server, as on FAISS and in the result check.

The documents and filters of ``tests/test_filter_exact_numbers.py`` (ids 2**53+1 and 2**53+2,
the ends of int64, the number one spelled as ``1``, ``1.0``, ``"1"`` and ``True``) are synced to
Milvus in three layouts: every attribute in the JSON field, ``account`` declared as an integer
(an INT64 field holds ids up to 2**53, the larger ones go to the overflow JSON) and as a float.
Each comparator selects the same documents on Milvus as the exact rule and the FAISS mask, and
an account number said in a message (the rules self-query) selects that account only.
"""

from __future__ import annotations

from collections.abc import Iterator

import numpy as np
import pytest
from langchain_core.structured_query import Comparator, Comparison

from rasa_context_retrieval.filters.schema import MetadataField
from rasa_context_retrieval.knowledge.models import Chunk
from rasa_context_retrieval.milvus.rows import ChunkTooLarge
from rasa_context_retrieval.milvus.store import MilvusChunkStore
from tests.milvus_server import milvus_uri  # noqa: F401
from tests.milvus_stores import hashed_embedder, synced_side_by_side
from tests.self_query_support import rules_on
from tests.test_filter_exact_numbers import CHUNKS, COMPARISONS, exact, faiss_ids

STORABLE = [chunk for chunk in CHUNKS if chunk.metadata["account"] != 2**70]
"""Every document but the one holding 2**70, which Milvus refuses (see the last test)."""

pytestmark = pytest.mark.milvus

DIMENSION = 8
LAYOUTS = {
    "json_fields": [],
    "integer_field": [MetadataField(name="account", type="integer")],
    "float_field": [MetadataField(name="account", type="float")],
}


fake_embed = hashed_embedder(DIMENSION)


@pytest.fixture(scope="module")
def stores(milvus_uri: str) -> Iterator[dict[str, MilvusChunkStore]]:  # noqa: F811
    plans = {layout: (fields, STORABLE) for layout, fields in LAYOUTS.items()}
    with synced_side_by_side(milvus_uri, "exact_ids", plans, fake_embed) as stores:
        yield stores


@pytest.fixture(scope="module", params=list(LAYOUTS))
def store(stores: dict[str, MilvusChunkStore], request: pytest.FixtureRequest) -> MilvusChunkStore:
    return stores[request.param]


@pytest.mark.parametrize("comparison", COMPARISONS, ids=str)
def test_milvus_selects_exactly_what_faiss_and_the_rule_select(
    store: MilvusChunkStore, comparison: Comparison
) -> None:
    hits = store.search(np.ones(DIMENSION), comparison, k=len(CHUNKS))
    found = {hit.chunk.chunk_id for hit in hits}
    assert faiss_ids(comparison) == exact(comparison)
    assert found == exact(comparison) - {"c11"}, store.expression(comparison)


def test_an_integer_milvus_cannot_store_is_refused_with_a_clear_error(
    store: MilvusChunkStore,
) -> None:
    """Milvus stores no integer beyond 64 bits: syncing one fails and names the attribute."""
    wide = Chunk("wide", "wide", {"source": "ids.md", "account": [7, 2**70]})
    with pytest.raises(ChunkTooLarge, match="'account' holds an integer beyond 64 bits"):
        store.sync([*STORABLE, wide], fake_embed)


def test_an_account_number_said_in_a_message_selects_that_account_on_milvus(
    store: MilvusChunkStore,
) -> None:
    """The rules self-query keeps the number said exact, and Milvus compares it exactly: the
    account said (held as a number and as text), never 2**53 next to it."""
    account = MetadataField(name="account", type="integer", description="Account number")
    said = rules_on([account]).construct(f"account number exactly {2**53 + 1}").filter
    assert said is not None
    hits = store.search(np.ones(DIMENSION), said, k=len(CHUNKS))
    assert {hit.chunk.chunk_id for hit in hits} == {"c0", "c9"}, store.expression(said)
    assert said == Comparison(comparator=Comparator.EQ, attribute="account", value=2**53 + 1)
