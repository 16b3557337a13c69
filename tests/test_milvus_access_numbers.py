"""Numeric entitlements on Milvus: the same documents as on FAISS for 64-bit ids.

``tests/test_access_numbers.py`` shows the rule and the channel on FAISS; here the same
knowledge base is served from a real Milvus server, where integers above 2**53 do not fit the
typed field and are kept in the overflow JSON.
"""

from __future__ import annotations

import uuid
from pathlib import Path
from typing import Any

import pytest

from rasa_context_retrieval.store import ContextRetrieval
from tests.milvus_server import milvus_uri  # noqa: F401
from tests.test_access_numbers import OURS, PARTNER, THEIRS, connected, docs, store  # noqa: F401


@pytest.fixture(scope="module")
def milvus_store(
    embedder: Any,
    docs: Path,  # noqa: F811
    tmp_path_factory: pytest.TempPathFactory,
    milvus_uri: str,  # noqa: F811
) -> ContextRetrieval:
    """One Milvus collection for every id: building one takes seconds, searching it does not."""
    return connected(
        embedder,
        docs,
        tmp_path_factory.mktemp("milvus-index"),
        backend="milvus",
        milvus={"uri": milvus_uri, "collection": f"org_ids_{uuid.uuid4().hex[:8]}"},
    )


@pytest.mark.milvus
@pytest.mark.parametrize(
    ("org", "readable"),
    [
        (OURS, ["ours.md", "shared.md"]),
        (THEIRS, ["theirs.md"]),
        (PARTNER, ["shared.md"]),
    ],
)
async def test_milvus_finds_what_faiss_finds_for_a_64_bit_id(
    store: ContextRetrieval,  # noqa: F811
    milvus_store: ContextRetrieval,
    org: int,
    readable: list[str],
) -> None:
    """Both backends over the same documents: each organisation reads its own document and the
    public one, on Milvus as on FAISS."""
    state = {"latest_message": {"text": "How much storage?", "metadata": {"org": org}}}
    found = {}
    for backend, searched in (("faiss", store), ("milvus", milvus_store)):
        results = await searched.search("", state, 0.0)
        found[backend] = sorted(result.metadata["source"] for result in results.results)
    assert found["faiss"] == sorted([*readable, "help.md"])
    assert found["milvus"] == found["faiss"]
