"""Whatever an LLM answers, a search still answers, and never outside the slot scope.

LLM answers are untrusted text: prose, half JSON, filters on invented attributes, values of the
wrong type, HTTP errors. The parsers must turn any of it into "no filter" or a valid filter, and
the whole store (LLM rewrite + LLM self-query + paraphrases, through the fake OpenAI-compatible
server) must keep answering within the slot filter.
"""

from __future__ import annotations

import asyncio
import concurrent.futures
import contextlib
import json
from pathlib import Path
from typing import Any, cast

import pytest
from hypothesis import HealthCheck, given, settings
from hypothesis import strategies as st
from rasa.utils.endpoints import EndpointConfig

from rasa_context_retrieval.filters.schema import MetadataField
from rasa_context_retrieval.filters.syntax import parse_filter
from rasa_context_retrieval.llm_query.constructor import LLMQueryConstructor
from rasa_context_retrieval.rewrite.llm_rewrite import MAX_QUERY_CHARS, clean_query
from tests.fake_openai import FakeOpenAI, Reply, fake_openai_fixture  # noqa: F401
from tests.store_support import connected_store

pytestmark = pytest.mark.asyncio(loop_scope="session")

PLANS = ("free", "plus", "premium", "business")
FIELDS = (
    MetadataField(name="plan", type="list[string]", values=PLANS),
    MetadataField(name="price_per_month", type="float"),
    MetadataField(name="updated", type="date"),
)
FRAGMENTS = [
    "eq", "ne", "gt", "lte", "in", "nin", "like", "contain", "and", "or", "not", "(", ")", ",",
    '"plan"', '"price_per_month"', '"updated"', '"secret"', '"premium"', "9.99", "-1", "1e309",
    '"2024-13-45"', '"2024-03-01"', "[", "]", "true", "NO_FILTER", "'", '"', " ",
]  # fmt: skip
filter_texts = st.one_of(
    st.text(max_size=60), st.lists(st.sampled_from(FRAGMENTS), max_size=14).map("".join)
)
json_values = st.recursive(
    st.none() | st.booleans() | st.integers() | st.floats() | st.text(max_size=20) | filter_texts,
    lambda inner: st.lists(inner, max_size=3) | st.dictionaries(st.text(max_size=6), inner),
    max_leaves=6,
)
answers = st.one_of(
    st.text(max_size=200),
    st.fixed_dictionaries(
        {}, optional={"query": json_values, "filter": json_values, "limit": json_values}
    ).map(lambda answer: "```json\n" + json.dumps(answer) + "\n```"),
    st.builds(
        lambda query, text: json.dumps({"query": query, "filter": text}),
        st.text(max_size=30),
        filter_texts,
    ),
)
PROPERTY = settings(
    max_examples=300,
    deadline=None,
    suppress_health_check=[HealthCheck.function_scoped_fixture, HealthCheck.too_slow],
)


@PROPERTY
@given(filter_texts)
def test_parse_filter_accepts_or_raises_value_error_only(text: str):
    with contextlib.suppress(ValueError):
        parse_filter(text)


@settings(PROPERTY, max_examples=150)
@given(answers)
def test_any_llm_answer_parses_to_none_or_a_valid_structured_query(answer: str):
    constructor = LLMQueryConstructor(cast(Any, None), FIELDS, enable_limit=True)
    structured = constructor.parse_answer(answer)
    if structured is not None:
        assert isinstance(structured.query, str)
        assert structured.limit is None or isinstance(structured.limit, int)


@PROPERTY
@given(st.text(max_size=400))
def test_any_rewrite_answer_cleans_to_one_short_line(answer: str):
    query = clean_query(answer)
    assert isinstance(query, str) and "\n" not in query and len(query) <= MAX_QUERY_CHARS


replies = st.one_of(
    answers.map(Reply),
    st.sampled_from(
        [Reply(status=500), Reply(status=429), Reply(raw_body="{not json"), Reply(content=None)]
    ),
)


async def test_the_store_answers_within_the_slot_scope_whatever_the_llm_says(
    fake_openai: FakeOpenAI, embedder: Any, tmp_path: Path
):
    docs = tmp_path / "docs"
    docs.mkdir()
    for plan in PLANS:
        (docs / f"{plan}.md").write_text(
            f"---\nplan: [{plan}]\nprice_per_month: 9.99\nupdated: 2024-03-01\n---\n"
            f"Q: What does {plan} include?\nA: Storage for {plan}.\n",
            encoding="utf-8",
        )
    store = connected_store(
        embedder,
        EndpointConfig(
            docs=str(docs),
            index_path=str(tmp_path / "index"),
            slot_filters={"plan": "plan"},
            metadata_fields=[field.model_dump() for field in FIELDS],
            rewrite="llm",
            self_query="llm",
            multi_query=2,
            llm={**fake_openai.llm_config(), "timeout": 2},
        ),
    )
    tried = 0

    @settings(max_examples=25, deadline=None, suppress_health_check=list(HealthCheck))
    @given(st.lists(replies, min_size=3, max_size=3), st.sampled_from(PLANS), st.integers(0, 99))
    def one_case(script: list[Reply], plan: str, salt: int) -> None:
        nonlocal tried
        tried += 1
        fake_openai.reset()
        fake_openai.reply(*script)
        fake_openai.responder = lambda body: Reply(status=500)
        state = {
            "events": [
                {"event": "user", "text": "what is included?"},
                {"event": "bot", "text": "Storage."},
                {"event": "user", "text": f"and on the premium plan, question {salt}?"},
            ],
            "slots": {"plan": plan},
        }
        result = run(store.search("", state, 0.0))
        assert all(found.metadata["plan"] == [plan] for found in result.results)

    loop = asyncio.get_running_loop()

    def run(coroutine: Any) -> Any:
        return asyncio.run_coroutine_threadsafe(coroutine, loop).result(timeout=60)

    with concurrent.futures.ThreadPoolExecutor(1) as pool:
        await loop.run_in_executor(pool, one_case)
    assert tried >= 10
