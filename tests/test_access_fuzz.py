"""Fuzzing access control (about a thousand searches): no crash, no result the user may not read.

See ``tests/access_fuzz.py`` for the cases and the independent oracle; ``bench/access_fuzz.py``
runs the long version on FAISS and on a real Milvus server.
"""

from __future__ import annotations

import asyncio
from collections.abc import Iterator

import pytest
from hypothesis import HealthCheck, given, settings
from hypothesis import strategies as st

from rasa_context_retrieval.config import StoreConfig
from tests.access_fuzz import (
    Case,
    HostileLLM,
    KnowledgeBase,
    Tally,
    build_index,
    cases,
    check_case,
    engine_for,
    knowledge_bases,
    store_config,
)

EXAMPLES = 110
CASES_PER_KNOWLEDGE_BASE = 10


@pytest.fixture(scope="module")
def config(tmp_path_factory: pytest.TempPathFactory) -> StoreConfig:
    return store_config(tmp_path_factory.mktemp("docs"))


@pytest.fixture(scope="module")
def loop() -> Iterator[asyncio.AbstractEventLoop]:
    loop = asyncio.new_event_loop()
    yield loop
    loop.close()


@settings(
    max_examples=EXAMPLES,
    deadline=None,
    suppress_health_check=[HealthCheck.too_slow, HealthCheck.data_too_large],
)
@given(
    knowledge_base=knowledge_bases(),
    conversations=st.lists(
        cases(), min_size=CASES_PER_KNOWLEDGE_BASE, max_size=CASES_PER_KNOWLEDGE_BASE
    ),
)
def test_no_search_crashes_or_returns_a_document_the_user_may_not_read(
    config: StoreConfig,
    loop: asyncio.AbstractEventLoop,
    knowledge_base: KnowledgeBase,
    conversations: list[Case],
) -> None:
    llm = HostileLLM()
    engine = engine_for(config, build_index(knowledge_base), llm)
    tally = Tally()
    for case in conversations:
        loop.run_until_complete(check_case(engine, llm, case, tally))
    assert tally.crashes == []
    assert tally.leaks == []
    assert tally.cases == CASES_PER_KNOWLEDGE_BASE


def test_the_fuzz_can_fail(config: StoreConfig, loop: asyncio.AbstractEventLoop) -> None:
    """With the access filter switched off, a premium document reaches a free user: a leak."""
    knowledge_base = KnowledgeBase(({"source": "a.md", "plan": "premium"},))
    llm = HostileLLM()
    unprotected = config.model_copy(update={"access_filters": {}})
    engine = engine_for(unprotected, build_index(knowledge_base), llm)
    tally = Tally()
    case = Case({"plan": "free"}, None, None, None, None)
    loop.run_until_complete(check_case(engine, llm, case, tally, config.access_filters))
    assert tally.results == 1
    assert len(tally.leaks) == 1 and tally.leaks[0].startswith("access leak on plan")
