"""Multi-query: N clean, distinct paraphrases from one LLM call, or none at all."""

from __future__ import annotations

import pytest

from rasa_context_retrieval.llm.client import RetrievalLLM
from rasa_context_retrieval.rewrite.multi_query import paraphrases, parse_paraphrases
from tests.fake_openai import FakeOpenAI, Reply, fake_openai_fixture  # noqa: F401

pytestmark = pytest.mark.asyncio(loop_scope="session")

QUERY = "How do I cancel my premium subscription?"


async def test_n_paraphrases_come_from_one_call(fake_openai: FakeOpenAI) -> None:
    fake_openai.reply(
        "1. Downgrade from premium to the free plan\n"
        "2. Stop the premium plan renewal\n"
        "3. End a premium subscription\n"
    )
    llm = RetrievalLLM.from_config(fake_openai.llm_config())

    found = await paraphrases(llm, QUERY, 2)

    assert found == ["Downgrade from premium to the free plan", "Stop the premium plan renewal"]
    assert fake_openai.call_count == 1
    assert "Write 2 different search queries" in fake_openai.prompts()[0]
    assert QUERY in fake_openai.prompts()[0]


def test_garbage_empty_and_duplicate_lines_are_dropped() -> None:
    answer = (
        "Here are three alternative queries:\n"
        "\n"
        "- Cancel premium subscription\n"
        "* cancel PREMIUM subscription!\n"
        '"How do I cancel my premium subscription?"\n'
        "2) ---\n"
        f"{'very long ' * 40}\n"
        "3. Turn off automatic renewal of premium\n"
    )

    assert parse_paraphrases(answer, QUERY) == [
        "Cancel premium subscription",
        "Turn off automatic renewal of premium",
    ]


@pytest.mark.parametrize(
    "reply",
    [Reply(content=""), Reply(status=500), Reply(content="Sure:\n\n---"), Reply(delay=1)],
    ids=["empty", "http-500", "nothing-usable", "too-slow"],
)
async def test_any_failure_gives_no_paraphrases(fake_openai: FakeOpenAI, reply: Reply) -> None:
    fake_openai.reply(reply)
    llm = RetrievalLLM.from_config(fake_openai.llm_config())

    assert await paraphrases(llm, QUERY, 3, timeout=0.3) == []


async def test_zero_paraphrases_or_an_empty_query_cost_no_call(fake_openai: FakeOpenAI) -> None:
    llm = RetrievalLLM.from_config(fake_openai.llm_config())

    assert await paraphrases(llm, QUERY, 0) == []
    assert await paraphrases(llm, "   ", 3) == []
    assert fake_openai.call_count == 0
