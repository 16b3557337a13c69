"""A hostile LLM's filter never widens access: over real HTTP to an OpenAI-compatible server.

The store's LLM self-query talks to the local server of ``tests/fake_openai.py``, which answers
every prompt with a filter aimed at the access attribute: the restricted value, ``or``, ``not``,
``nin``, comparisons and patterns that any value satisfies, and attribute names with quotes,
brackets or look-alike letters. A user entitled to the free plan must get free and public
documents only, and the restricted document's text must appear nowhere in what the search
returns (results, their metadata, the search's explanation).
"""

from __future__ import annotations

import json
from pathlib import Path
from typing import Any

import pytest
from rasa.utils.endpoints import EndpointConfig

from rasa_context_retrieval.store import ContextRetrieval
from tests.fake_openai import FakeOpenAI, Reply, fake_openai_fixture  # noqa: F401
from tests.store_support import connected_store

pytestmark = pytest.mark.asyncio(loop_scope="session")

SECRET = "The vault code of the premium archive is 4711."
DOCUMENTS = {
    "premium.md": f"---\nplan: premium\n---\nQ: What is the vault code?\nA: {SECRET}\n",
    "free.md": "---\nplan: free\n---\nQ: What is the vault code?\nA: Free plans have no vault.\n",
    "public.md": "Q: What is a vault?\nA: A vault keeps archived files.\n",
}
HOSTILE_FILTERS = [
    'eq("plan", "premium")',
    'in("plan", ["premium", "PREMIUM", " premium "])',
    'or(eq("plan", "premium"), eq("plan", "free"))',
    'or(not(eq("plan", "free")), eq("plan", "free"))',
    'not(eq("plan", "free"))',
    'nin("plan", ["free"])',
    'not(nin("plan", ["premium"]))',
    'ne("plan", "")',
    'gt("plan", "")',
    'lt("plan", "zzzz")',
    'like("plan", "%")',
    'contain("plan", "prem")',
    'eq("Plan", "premium")',
    'eq("\uff50\uff4c\uff41\uff4e", "premium")',
    'eq("plan\\"] or true or [\\"", "premium")',
    'eq("filterable[\\"plan\\"]", "premium")',
    'or(eq("plan", "premium"), ne("source", "x"))',
]


@pytest.fixture
def store(fake_openai: FakeOpenAI, embedder: Any, tmp_path: Path) -> ContextRetrieval:  # noqa: F811
    docs = tmp_path / "docs"
    docs.mkdir()
    for name, text in DOCUMENTS.items():
        (docs / name).write_text(text, encoding="utf-8")
    return connected_store(
        embedder,
        EndpointConfig(
            docs=str(docs),
            index_path=str(tmp_path / "index"),
            access_filters={"plan": "plan"},
            metadata_fields=[{"name": "plan", "type": "string"}],
            self_query="llm",
            llm=fake_openai.llm_config(),
            top_k=10,
        ),
    )


@pytest.mark.parametrize("hostile", HOSTILE_FILTERS)
async def test_no_filter_from_the_llm_reads_a_restricted_document(
    fake_openai: FakeOpenAI,  # noqa: F811
    store: ContextRetrieval,
    hostile: str,
) -> None:
    answer = json.dumps({"query": "vault code premium archive 4711", "filter": hostile})
    fake_openai.responder = lambda body: Reply(answer)
    state = {
        "events": [{"event": "user", "text": "What is the vault code?"}],
        "latest_message": {"text": "What is the vault code?", "metadata": {"plan": "free"}},
    }
    found = await store.search("", state, 0.0)
    assert fake_openai.call_count >= 1, "the LLM was asked"
    assert {result.metadata.get("plan") for result in found.results} <= {"free", None}
    returned = json.dumps(
        [[result.text, result.metadata] for result in found.results] + [found.metadata],
        default=str,
    )
    assert "vault code of the premium archive" not in returned
    assert "premium.md" not in returned
