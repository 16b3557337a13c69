"""ContextRetrieval as Rasa drives it: connect() before every search, then search(tracker_state)."""

from __future__ import annotations

import asyncio
import time
from pathlib import Path
from typing import Any
from unittest.mock import patch

import pytest
from hypothesis import HealthCheck, example, given, settings
from hypothesis import strategies as st
from rasa.core.information_retrieval import InformationRetrievalException
from rasa.utils.endpoints import EndpointConfig

from rasa_context_retrieval.config import ConfigurationError
from rasa_context_retrieval.engine.search import KnowledgeSearch
from rasa_context_retrieval.store import ContextRetrieval
from tests.store_support import CountingEmbedder, connected_store, tracker_state

PLANS = ("free", "plus", "premium", "business")
FIELDS = [
    {"name": "plan", "type": "list[string]", "values": list(PLANS)},
    {"name": "region", "type": "list[string]", "values": ["eu", "us", "apac"]},
    {"name": "price_per_month", "type": "float"},
]


def write_knowledge_base(folder: Path) -> Path:
    docs = folder / "docs"
    for plan, storage, price in zip(
        PLANS, ("5 GB", "200 GB", "2 TB", "5 TB"), (0, 3.99, 9.99, 14.99), strict=True
    ):
        (docs / "plans").mkdir(parents=True, exist_ok=True)
        (docs / "plans" / f"{plan}.md").write_text(
            f"---\nplan: [{plan}]\nregion: [eu, us, apac]\nprice_per_month: {price}\n---\n"
            f"Q: How much storage do I get?\nA: The {plan.title()} plan includes {storage}.\n\n"
            f"Q: How much does it cost?\nA: {plan.title()} costs ${price} a month.\n",
            encoding="utf-8",
        )
    for region, days in (("eu", 14), ("us", 30)):
        (docs / f"refunds-{region}.md").write_text(
            f"---\nplan: [{', '.join(PLANS)}]\nregion: [{region}]\n---\n"
            f"Q: Can I get a refund?\nA: In the {region.upper()} you can get a refund within "
            f"{days} days.\n",
            encoding="utf-8",
        )
    (docs / "offline.md").write_text(
        "---\nplan: [plus, premium, business]\nregion: [eu, us, apac]\n---\n"
        "Q: How do I enable offline files?\nA: Right-click a folder and choose Make available "
        "offline.\n",
        encoding="utf-8",
    )
    return docs


@pytest.fixture
def docs(tmp_path: Path) -> Path:
    return write_knowledge_base(tmp_path)


RASA_QUERIES = {"query_embedder": "rasa"}
"""For tests that count the texts the client embeds: the ONNX path's background self-check
would add its own, at a moment of its choosing."""


def endpoint(docs: Path, **overrides: Any) -> EndpointConfig:
    block = {
        "type": "rasa_context_retrieval.ContextRetrieval",
        "docs": str(docs),
        "index_path": str(docs.parent / "index"),
        "slot_filters": {"plan": "plan", "region": "region"},
        "metadata_fields": FIELDS,
        **overrides,
    }
    return EndpointConfig(**block)


state = tracker_state
"""The name the Milvus backend tests import from here."""


@pytest.fixture
def counting(embedder: Any) -> CountingEmbedder:
    return CountingEmbedder(embedder)


@pytest.fixture(scope="module")
def store(tmp_path_factory: pytest.TempPathFactory, embedder: Any) -> ContextRetrieval:
    """One store on the knowledge base for the tests that only search it (the tests that count
    embeddings or change documents build their own)."""
    return connected_store(embedder, endpoint(write_knowledge_base(tmp_path_factory.mktemp("kb"))))


async def test_results_carry_scores_metadata_and_the_search_explanation(store: ContextRetrieval):
    result = await store.search(
        "ignored", tracker_state(("user", "How much does Premium cost?")), 0.0
    )
    assert result.results, "expected results"
    assert all(0.0 <= r.score <= 1.0 for r in result.results)
    top = result.results[0]
    assert top.metadata["answer"] == "Premium costs $9.99 a month."
    assert top.metadata["source"] == "plans/premium.md"
    assert result.metadata["query"]
    assert "filter" in result.metadata


async def test_slots_become_the_filter_shown_in_langchain_syntax(store: ContextRetrieval):
    result = await store.search(
        "", tracker_state(("user", "Can I get a refund?"), region="eu"), 0.0
    )
    assert result.metadata["filter"] == 'eq("region", "eu")'
    assert result.results[0].metadata["answer"].startswith("In the EU")
    assert all("eu" in r.metadata["region"] for r in result.results)


async def test_a_follow_up_is_searched_as_a_standalone_query(store: ContextRetrieval):
    conversation = tracker_state(
        ("user", "How do I enable offline files?"),
        ("bot", "Right-click a folder and choose Make available offline."),
        ("user", "how much does it cost on the plus plan?"),
    )
    result = await store.search("", conversation, 0.0)
    assert result.results[0].metadata["answer"] == "Plus costs $3.99 a month."


async def test_threshold_drops_results_below_it(store: ContextRetrieval):
    question = tracker_state(("user", "How much storage do I get?"))
    everything = await store.search("", question, 0.0)
    cut = sorted(r.score for r in everything.results)[len(everything.results) // 2]
    kept = await store.search("", question, cut)
    assert kept.results and all(r.score >= cut for r in kept.results)
    assert len(kept.results) < len(everything.results)
    assert (await store.search("", question, 1.0)).results == []


async def test_repeat_connect_is_free_and_a_restart_does_not_re_embed(docs, counting):
    store = connected_store(counting, endpoint(docs, **RASA_QUERIES))
    embedded = counting.texts
    assert embedded > 0
    opened = store.engine
    with patch.object(KnowledgeSearch, "open", side_effect=AssertionError("opened again")):
        for _ in range(100):
            store.connect(endpoint(docs, **RASA_QUERIES))
    assert store.engine is opened, "an unchanged configuration must keep the open index"
    connected_store(counting, endpoint(docs, **RASA_QUERIES))  # a restart
    assert counting.texts == embedded, "an unchanged knowledge base must load without embedding"


async def test_a_changed_document_is_picked_up_and_only_its_chunks_are_embedded(docs, counting):
    connected_store(counting, endpoint(docs, **RASA_QUERIES))
    before = counting.texts
    (docs / "offline.md").write_text(
        "---\nplan: [plus]\nregion: [eu]\n---\nQ: How do I enable offline files?\n"
        "A: Offline files are switched on in Settings > Offline.\n",
        encoding="utf-8",
    )
    store = connected_store(counting, endpoint(docs, **RASA_QUERIES))
    assert counting.texts - before == 1
    result = await store.search("", tracker_state(("user", "enable offline files")), 0.0)
    assert "Settings > Offline" in result.results[0].metadata["answer"]


async def test_a_running_assistant_picks_up_edits_in_the_background(docs, counting):
    config = endpoint(docs, refresh_seconds=0.01)
    store = connected_store(counting, config)
    (docs / "new.md").write_text("Q: Is there a dark mode?\nA: Yes, under Settings > Look.\n")
    deadline = time.monotonic() + 20
    answer = None
    while time.monotonic() < deadline and answer != "Yes, under Settings > Look.":
        await asyncio.sleep(0.05)
        store.connect(config)
        result = await store.search("", tracker_state(("user", "Is there a dark mode?")), 0.0)
        answer = result.results[0].metadata.get("answer") if result.results else None
    assert answer == "Yes, under Settings > Look."


def test_a_misconfiguration_names_the_key(docs, counting):
    with pytest.raises(ConfigurationError, match="vector_store.top_k"):
        ContextRetrieval(embeddings=counting).connect(endpoint(docs, top_k="four"))


async def test_index_failures_become_information_retrieval_exceptions(docs, counting):
    store = connected_store(counting, endpoint(docs, query_embedder="rasa"))  # failing queries
    counting.fail = True
    with pytest.raises(InformationRetrievalException, match="unreachable"):
        await store.search("", tracker_state(("user", "a question nobody asked before")), 0.0)


async def test_search_before_connect_is_an_information_retrieval_exception(counting):
    with pytest.raises(InformationRetrievalException):
        await ContextRetrieval(embeddings=counting).search("q", {}, 0.0)


ODD_STATES: list[Any] = [
    None,
    {},
    {"events": None, "slots": None},
    {"events": [{"event": "user", "text": None}], "slots": {"plan": None}},
    {"events": [{"event": "bot", "text": "Hello!"}]},
    {"events": "not a list", "latest_message": "nope"},
    {"events": [{"event": "user"}, 5, None, {"event": "slot", "name": "plan"}]},
    {"latest_message": {"text": "refunds"}, "slots": {"plan": 3, "region": {"x": 1}}},
]


@pytest.mark.parametrize("odd", ODD_STATES)
async def test_odd_tracker_state_never_raises(store: ContextRetrieval, odd: Any):
    result = await store.search("How much storage?", odd, 0.0)
    assert isinstance(result.results, list)


async def test_concurrent_searches_agree_with_sequential_ones(store: ContextRetrieval):
    questions = [
        tracker_state(("user", q), plan=plan)
        for q in ("refund", "storage", "offline files", "price")
        for plan in PLANS
    ]
    sequential = [await store.search("", s, 0.0) for s in questions]
    concurrent = await asyncio.gather(*(store.search("", s, 0.0) for s in questions * 3))
    for index, result in enumerate(concurrent):
        expected = sequential[index % len(questions)]
        assert [r.text for r in result.results] == [r.text for r in expected.results]


slot_values = st.one_of(
    st.none(),
    st.sampled_from([*PLANS, "FREE", " premium ", "unknown"]),
    st.lists(st.sampled_from(PLANS), max_size=3),
    st.integers(),
    st.booleans(),
    st.text(max_size=12),
)


@settings(
    max_examples=40, deadline=None, suppress_health_check=[HealthCheck.function_scoped_fixture]
)
@given(plan=slot_values, region=st.one_of(st.none(), st.sampled_from(["eu", "us", "apac", "EU"])))
@example(plan=" ", region="eu")  # blank text is an unset slot, as "" is
@example(plan=[" ", "plus"], region=None)
async def test_no_result_ever_violates_a_slot_filter(
    store: ContextRetrieval, plan: Any, region: Any
):
    result = await store.search(
        "", tracker_state(("user", "how much storage and refunds"), plan=plan, region=region), 0.0
    )
    wanted_plans = _wanted(plan)
    wanted_regions = _wanted(region)
    for found in result.results:
        if wanted_plans is not None:
            assert {p.casefold() for p in found.metadata["plan"]} & wanted_plans
        if wanted_regions is not None:
            assert {r.casefold() for r in found.metadata["region"]} & wanted_regions


def _wanted(value: Any) -> set[str] | None:
    """The documented slot rule: None, blank text and empty lists (or lists of blanks) are unset."""
    values = value if isinstance(value, list) else [value]
    wanted = {str(v).strip().casefold() for v in values if v is not None and str(v).strip()}
    return wanted or None


async def test_an_attribute_no_document_has_does_not_rebuild_the_rules_each_search(
    docs: Path, embedder: Any
):
    """Planners rebuild their vocabulary when ``known_values`` is a new mapping: a declared
    attribute without values must not make every search look like a changed index."""
    fields = [*FIELDS, {"name": "audience", "type": "string"}]
    store = connected_store(embedder, endpoint(docs, metadata_fields=fields))
    first = store.engine.known_values()
    await store.search("", tracker_state(("user", "How much storage do I get?")), 0.0)
    assert store.engine.known_values() is first
    assert first["audience"] == frozenset()
    assert first["price_per_month"] == frozenset()  # numbers are not values to say
