"""Fuzzing access control (about a thousand searches in the whole suite, about a hundred in the
fast subset): no crash, no result the user may not read.

See ``tests/access_fuzz.py`` for the cases and the independent oracle; ``bench/access_fuzz.py``
runs the long version on FAISS and on a real Milvus server.
"""

from __future__ import annotations

import asyncio
import tempfile
from collections.abc import Iterator
from pathlib import Path
from typing import Any

import pytest
from hypothesis import HealthCheck, given
from hypothesis import strategies as st

from rasa_context_retrieval.channels.entitled_rest import EntitledRestInput
from rasa_context_retrieval.config import StoreConfig
from tests.access_fuzz import (
    PLAN_ONLY,
    Case,
    ChannelRequest,
    DocumentFile,
    FileKnowledgeBase,
    HostileLLM,
    KnowledgeBase,
    Tally,
    build_index,
    cases,
    channel_conversations,
    check_case,
    check_channel_conversation,
    check_file_case,
    engine_for,
    entitled_cases,
    file_engine,
    file_knowledge_bases,
    fuzz_channel,
    knowledge_bases,
    plan_knowledge_bases,
    store_config,
)
from tests.property_runs import property_sizes, sized

EXAMPLES = 110
CASES_PER_KNOWLEDGE_BASE = 10
CHANNEL_EXAMPLES = 40
CHANNEL_CONVERSATIONS_PER_KNOWLEDGE_BASE = 3
FUZZ_SETTINGS: dict[str, Any] = {
    "deadline": None,
    "suppress_health_check": [HealthCheck.too_slow, HealthCheck.data_too_large],
}


@pytest.fixture(scope="module")
def config(tmp_path_factory: pytest.TempPathFactory) -> StoreConfig:
    return store_config(tmp_path_factory.mktemp("docs"))


@pytest.fixture(scope="module")
def loop() -> Iterator[asyncio.AbstractEventLoop]:
    loop = asyncio.new_event_loop()
    yield loop
    loop.close()


@given(
    knowledge_base=knowledge_bases(),
    conversations=st.lists(
        cases(), min_size=CASES_PER_KNOWLEDGE_BASE, max_size=CASES_PER_KNOWLEDGE_BASE
    ),
)
def no_search_crashes_or_returns_a_document_the_user_may_not_read(
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


@property_sizes(full=EXAMPLES)
def test_no_search_crashes_or_returns_a_document_the_user_may_not_read(
    config: StoreConfig, loop: asyncio.AbstractEventLoop, examples: int
) -> None:
    prop = no_search_crashes_or_returns_a_document_the_user_may_not_read
    sized(prop, examples, **FUZZ_SETTINGS)(config=config, loop=loop)


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


# --- conversations through the entitled REST channel -------------------------------------------


@given(
    knowledge_base=knowledge_bases(),
    conversations=st.lists(
        channel_conversations(),
        min_size=CHANNEL_CONVERSATIONS_PER_KNOWLEDGE_BASE,
        max_size=CHANNEL_CONVERSATIONS_PER_KNOWLEDGE_BASE,
    ),
    entitlement_keys=st.sampled_from((("plan", "tier"), ("plan",))),
)
def no_channel_request_reads_beyond_its_own_token_or_joins_anothers_conversation(
    config: StoreConfig,
    loop: asyncio.AbstractEventLoop,
    knowledge_base: KnowledgeBase,
    conversations: list[list[ChannelRequest]],
    entitlement_keys: tuple[str, ...],
) -> None:
    llm = HostileLLM()
    engine = engine_for(config, build_index(knowledge_base), llm)
    channel = fuzz_channel(entitlement_keys)
    tally = Tally()
    for requests in conversations:
        loop.run_until_complete(check_channel_conversation(engine, llm, channel, requests, tally))
    assert tally.crashes == []
    assert tally.leaks == []
    assert tally.cases == sum(len(requests) for requests in conversations)


@property_sizes(full=CHANNEL_EXAMPLES)
def test_no_channel_request_reads_beyond_its_own_token_or_joins_anothers_conversation(
    config: StoreConfig, loop: asyncio.AbstractEventLoop, examples: int
) -> None:
    prop = no_channel_request_reads_beyond_its_own_token_or_joins_anothers_conversation
    sized(prop, examples, **FUZZ_SETTINGS)(config=config, loop=loop)


class BodySenderChannel(EntitledRestInput):
    """The flaw the channel fuzz must catch: the body names the conversation, and a request
    without a valid token carries no entitlement keys (so the store reads the recorded ones)."""

    def sender_id(self, request: Any) -> str:
        return str(request.json["sender"])

    def get_metadata(self, request: Any) -> dict[str, Any]:
        return {key: value for key, value in super().get_metadata(request).items() if value != []}


def test_the_channel_fuzz_can_fail(config: StoreConfig, loop: asyncio.AbstractEventLoop) -> None:
    knowledge_base = KnowledgeBase(({"source": "a.md", "plan": "premium"},))
    llm = HostileLLM()
    engine = engine_for(config, build_index(knowledge_base), llm)
    flawed = BodySenderChannel(fuzz_channel().settings)
    victim = ChannelRequest("valid", "victim-42", {"plan": "premium"}, "victim-42", None)
    intruder = ChannelRequest("absent", "victim-42", None, "victim-42", None)
    tally = Tally()
    loop.run_until_complete(
        check_channel_conversation(engine, llm, flawed, [victim, intruder], tally)
    )
    assert tally.results == 2
    assert any(problem.startswith("channel leak on plan") for problem in tally.leaks)
    assert any(problem.startswith("conversation 'victim-42'") for problem in tally.leaks)


# --- unattributed documents private, and knowledge bases written as files ----------------------

FILE_EXAMPLES = 40
CASES_PER_FILE_KNOWLEDGE_BASE = 5


@given(
    knowledge_base=plan_knowledge_bases(),
    conversations=st.lists(
        entitled_cases(), min_size=CASES_PER_KNOWLEDGE_BASE, max_size=CASES_PER_KNOWLEDGE_BASE
    ),
)
def with_unattributed_documents_private_no_search_returns_one(
    config: StoreConfig,
    loop: asyncio.AbstractEventLoop,
    knowledge_base: KnowledgeBase,
    conversations: list[Case],
) -> None:
    private = config.model_copy(
        update={"access_filters": PLAN_ONLY, "unattributed_documents": "private"}
    )
    llm = HostileLLM()
    engine = engine_for(private, build_index(knowledge_base), llm)
    tally = Tally()
    for case in conversations:
        loop.run_until_complete(check_case(engine, llm, case, tally))
    assert tally.crashes == []
    assert tally.leaks == []


@property_sizes(full=EXAMPLES // 2)
def test_with_unattributed_documents_private_no_search_returns_one(
    config: StoreConfig, loop: asyncio.AbstractEventLoop, examples: int
) -> None:
    prop = with_unattributed_documents_private_no_search_returns_one
    sized(prop, examples, **FUZZ_SETTINGS)(config=config, loop=loop)


@given(
    knowledge_base=file_knowledge_bases(),
    conversations=st.lists(
        entitled_cases(),
        min_size=CASES_PER_FILE_KNOWLEDGE_BASE,
        max_size=CASES_PER_FILE_KNOWLEDGE_BASE,
    ),
)
def no_file_is_served_otherwise_than_its_author_meant(
    loop: asyncio.AbstractEventLoop,
    knowledge_base: FileKnowledgeBase,
    conversations: list[Case],
) -> None:
    """Front matter in every shape people write, read or refused by the real loader; a file
    that cannot be read exactly is never served, a readable one only as its author meant."""
    llm = HostileLLM()
    with tempfile.TemporaryDirectory() as folder:
        engine = file_engine(knowledge_base, Path(folder), llm)
    refused = {file.name for file in knowledge_base.files if file.intended is None}
    assert {problem.file for problem in engine.live.problems} == refused
    tally = Tally()
    for case in conversations:
        loop.run_until_complete(check_file_case(engine, llm, case, tally, knowledge_base))
    assert tally.crashes == []
    assert tally.leaks == []


@property_sizes(full=FILE_EXAMPLES)
def test_no_file_is_served_otherwise_than_its_author_meant(
    loop: asyncio.AbstractEventLoop, examples: int
) -> None:
    prop = no_file_is_served_otherwise_than_its_author_meant
    sized(prop, examples, **FUZZ_SETTINGS)(loop=loop)


def test_the_file_fuzz_can_fail(loop: asyncio.AbstractEventLoop, tmp_path: Path) -> None:
    """A readable file the oracle takes for unreadable, and an unattributed one it holds private
    while the engine serves it as public, are both reported as leaks."""
    files = (
        DocumentFile("a.md", "---\nplan: free\n---\nstorage document", None),
        DocumentFile("b.md", "storage document b", {}),
    )
    served_public = FileKnowledgeBase(files, "public")
    llm = HostileLLM()
    engine = file_engine(served_public, tmp_path, llm)
    tally = Tally()
    case = Case({"plan": "free"}, None, None, None, None, question="storage document")
    held_private = FileKnowledgeBase(files, "private")
    loop.run_until_complete(check_file_case(engine, llm, case, tally, held_private))
    assert tally.results == 2
    assert sorted(leak.split(":")[0] for leak in tally.leaks) == [
        "access leak on plan",
        "unreadable file served",
    ]
