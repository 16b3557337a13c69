"""search() as newer Rasa calls it: ``k=``, an empty tracker_state, keywords not known today."""

from __future__ import annotations

import json
from pathlib import Path
from typing import Any

import pytest
from structlog.testing import capture_logs

from rasa_context_retrieval.config import StoreConfig
from rasa_context_retrieval.conversation import Conversation
from rasa_context_retrieval.engine.search import KnowledgeSearch
from rasa_context_retrieval.llm.client import RetrievalLLM
from rasa_context_retrieval.llm_query.constructor import LLMQueryConstructor
from rasa_context_retrieval.planning.llm_planner import LLMQueryPlanner
from rasa_context_retrieval.store import ContextRetrieval
from tests.fake_openai import FakeOpenAI, fake_openai_fixture  # noqa: F401
from tests.store_support import connected_store, tracker_state
from tests.test_context_retrieval import FIELDS, endpoint, write_knowledge_base

pytestmark = pytest.mark.asyncio(loop_scope="session")

FOLLOW_UP = (
    ("user", "How do I enable offline files?"),
    ("bot", "Right-click a folder and choose Make available offline."),
    ("user", "how much does it cost on the plus plan?"),
)
STORAGE = tracker_state(("user", "How much storage do I get?"))


@pytest.fixture
def docs(tmp_path: Path) -> Path:
    return write_knowledge_base(tmp_path)


@pytest.fixture
def store(docs: Path, embedder: Any) -> ContextRetrieval:
    store = connected_store(embedder, endpoint(docs, top_k=4, candidates=6))
    return store


async def test_k_replaces_top_k_for_that_call(store: ContextRetrieval):
    assert len((await store.search("", STORAGE, 0.0)).results) == 4
    assert len((await store.search("", STORAGE, 0.0, k=2)).results) == 2
    assert len((await store.search("", STORAGE, 0.0, k=5)).results) == 5


async def test_k_is_capped_at_the_configured_candidates(store: ContextRetrieval):
    assert len((await store.search("", STORAGE, 0.0, k=50)).results) == 6


async def test_with_k_a_full_tracker_state_still_goes_through_the_context_model(
    store: ContextRetrieval,
):
    result = await store.search("ignored", tracker_state(*FOLLOW_UP), 0.0, k=1)
    assert result.metadata["standalone_query"] != FOLLOW_UP[-1][1]
    assert [r.metadata["answer"] for r in result.results] == ["Plus costs $3.99 a month."]


async def test_an_empty_tracker_state_searches_the_given_query(store: ContextRetrieval):
    result = await store.search("How much does Premium cost?", {}, 0.0, k=1)
    assert [r.metadata["answer"] for r in result.results] == ["Premium costs $9.99 a month."]


async def test_unknown_keywords_are_accepted_and_reported_as_a_debug_event(store: ContextRetrieval):
    with capture_logs() as events:
        result = await store.search("", STORAGE, 0.0, k=3, rerank=True, trace_id="abc")
    assert len(result.results) == 3
    ignored = [e for e in events if e["event"] == "context_retrieval.search.ignored_arguments"]
    assert [(e["log_level"], e["arguments"]) for e in ignored] == [
        ("debug", ["rerank", "trace_id"])
    ]


@pytest.mark.parametrize("bad_k", [0, -2, "three", 2.5, True])
async def test_an_unusable_k_keeps_top_k_and_warns(store: ContextRetrieval, bad_k: Any):
    with capture_logs() as events:
        result = await store.search("", STORAGE, 0.0, k=bad_k)
    assert len(result.results) == 4
    assert any(e["event"] == "context_retrieval.search.invalid_k" for e in events)


async def test_a_smaller_limit_from_the_users_words_still_applies(
    docs: Path, embedder: Any, fake_openai: FakeOpenAI
):
    config = StoreConfig.from_kwargs(
        {
            "docs": str(docs),
            "index_path": str(docs.parent / "index"),
            "metadata_fields": FIELDS,
            "self_query": "llm",
            "llm": fake_openai.llm_config(timeout=2.0),
        }
    )
    llm = RetrievalLLM.from_config(fake_openai.llm_config())
    constructor = LLMQueryConstructor(llm, config.metadata_fields, enable_limit=True)
    search = KnowledgeSearch.open(config, embedder, LLMQueryPlanner(llm, constructor))
    fake_openai.reply(_constructor_answer("storage", limit=3))
    conversation = Conversation.from_tracker_state(
        tracker_state(("user", "show me the top 3 answers about storage")), fallback_query=""
    )

    outcome = await search.search(conversation, 0.0, top_k=6)

    assert outcome.plan.limit == 3
    assert len(outcome.results) == 3


def _constructor_answer(query: str, **extra: Any) -> str:
    body = json.dumps({"query": query, "filter": "NO_FILTER", **extra})
    return f"```json\n{body}\n```"
