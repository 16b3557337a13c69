"""Upgrading to exact whole numbers rewrites exactly the Milvus rows that hold a large integer.

Rows synced before integers of 2**53 and beyond kept their exact remainder lack it, so Milvus
compared such an id as its neighbours' shared float. A sync re-embeds a chunk whose content hash
changed and nothing else, so the hash of a row holding a remainder differs from the one the
earlier release wrote, while every other row keeps its hash (and its vectors).
"""

from __future__ import annotations

import datetime as dt
import hashlib
import json
from typing import Any

import pytest

from rasa_context_retrieval.knowledge.models import Chunk
from rasa_context_retrieval.milvus.rows import content_hash, json_safe

MODEL = "sentence-transformers/all-MiniLM-L6-v2"


def earlier_release_hash(chunk: Chunk) -> str:
    """The content hash as the release before exact whole numbers wrote it."""
    payload = json.dumps(
        [MODEL, chunk.text, json_safe(chunk.metadata)], sort_keys=True, default=str
    )
    return hashlib.sha256(payload.encode("utf-8")).hexdigest()


@pytest.mark.parametrize(
    "account",
    [2**53 + 1, -(2**53) - 3, 2**63 - 1, str(2**53 + 1)],
    ids=["2**53+1", "-(2**53)-3", "2**63-1", "2**53+1 as text"],
)
def test_a_row_holding_an_integer_beyond_2_53_is_rewritten(account: Any) -> None:
    chunk = Chunk("billing#1", "Invoices are sent monthly.", {"account": account, "plan": "pro"})
    assert content_hash(chunk, MODEL) != earlier_release_hash(chunk)


@pytest.mark.parametrize(
    "metadata",
    [
        {"account": 2**53 - 1, "plan": "pro"},
        {"account": float(2**60)},
        {"price": 19.99, "plan": ["free", "premium"], "active": True},
        {"updated": dt.date(2024, 3, 1), "source": "docs/billing/how-to-pay-an-invoice.md"},
        {"title": "A title much longer than sixteen characters", "code": "AB-1234567890123456"},
        {},
    ],
    ids=["below 2**53", "a float", "prices, lists, bools", "dates, paths", "long texts", "none"],
)
def test_every_other_row_keeps_its_hash(metadata: dict[str, Any]) -> None:
    chunk = Chunk("billing#1", "Invoices are sent monthly.", metadata)
    assert content_hash(chunk, MODEL) == earlier_release_hash(chunk)
