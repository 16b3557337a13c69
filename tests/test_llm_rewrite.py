"""LLM rewriting: follow-ups become standalone queries; slow or silly LLMs fall back; one call."""

from __future__ import annotations

import datetime as dt
import json
import time
from pathlib import Path

import pytest

from rasa_context_retrieval.config import StoreConfig
from rasa_context_retrieval.conversation import Conversation, Turn
from rasa_context_retrieval.filters.schema import MetadataField
from rasa_context_retrieval.filters.syntax import to_filter_syntax
from rasa_context_retrieval.llm.client import RetrievalLLM
from rasa_context_retrieval.llm_query.constructor import LLMQueryConstructor
from rasa_context_retrieval.planning.llm_planner import build_llm_planner, time_budget
from rasa_context_retrieval.planning.plan import LLMPlanner, Planner
from rasa_context_retrieval.rewrite.llm_rewrite import (
    LLMRewriteAndFilter,
    LLMRewriter,
    RewriteLLM,
    clean_query,
)
from tests.fake_openai import FakeOpenAI, Reply, fake_openai_fixture  # noqa: F401

pytestmark = pytest.mark.asyncio(loop_scope="session")

FIELDS = (
    MetadataField(name="plan", type="list[string]", values=("free", "plus", "premium", "business")),
    MetadataField(
        name="platform", type="list[string]", values=("android", "ios", "web", "windows", "macos")
    ),
)
FOLLOW_UP = Conversation(
    turns=(
        Turn("user", "What does the premium plan cost?"),
        Turn("bot", "Premium costs 9.99 a month."),
        Turn("user", "does it work on android?"),
    ),
    slots={"region": "eu", "requested_slot": None},
)
FIRST_MESSAGE = Conversation(turns=(Turn("user", "How do I share a folder?"),))


def heuristic(conversation: Conversation) -> str:
    return f"heuristic: {conversation.latest_user_text}"


def rewriter(fake: FakeOpenAI, timeout: float = 2.0) -> LLMRewriter:
    llm = RetrievalLLM.from_config(fake.llm_config())
    return LLMRewriter(RewriteLLM(llm, heuristic, timeout))


def combined(fake: FakeOpenAI) -> LLMRewriteAndFilter:
    llm = RetrievalLLM.from_config(fake.llm_config())
    return LLMRewriteAndFilter(LLMQueryConstructor(llm, FIELDS), RewriteLLM(llm, heuristic))


def structured_answer(query: str, filter_text: str) -> str:
    return "```json\n" + json.dumps({"query": query, "filter": filter_text}) + "\n```"


async def test_a_follow_up_is_rewritten_from_history_and_slots(fake_openai: FakeOpenAI) -> None:
    fake_openai.reply("Does the premium plan work on Android?")

    query = await rewriter(fake_openai).standalone_query(FOLLOW_UP)

    assert query == "Does the premium plan work on Android?"
    prompt = fake_openai.prompts()[0]
    assert "Known facts: region = eu\n" in prompt
    assert "USER: What does the premium plan cost?\nAI: Premium costs 9.99 a month." in prompt
    assert "Latest message: does it work on android?" in prompt
    assert "requested_slot" not in prompt


async def test_a_first_message_is_not_sent_to_the_llm(fake_openai: FakeOpenAI) -> None:
    assert await rewriter(fake_openai).standalone_query(FIRST_MESSAGE) == (
        "heuristic: How do I share a folder?"
    )
    assert fake_openai.call_count == 0


async def test_a_slow_llm_falls_back_to_the_heuristic_within_the_timeout(
    fake_openai: FakeOpenAI,
) -> None:
    fake_openai.reply(Reply(content="too late", delay=1))

    slow = rewriter(fake_openai, timeout=0.3)  # building the client is not part of the call
    started = time.perf_counter()
    query = await slow.standalone_query(FOLLOW_UP)

    assert query == "heuristic: does it work on android?"
    assert time.perf_counter() - started < 0.3 + 0.5


@pytest.mark.parametrize(
    "reply",
    [Reply(content=""), Reply(content="```\n```"), Reply(content="x" * 400), Reply(status=500)],
    ids=["empty", "empty-fence", "essay", "http-500"],
)
async def test_an_unusable_answer_falls_back_to_the_heuristic(
    fake_openai: FakeOpenAI, reply: Reply
) -> None:
    fake_openai.reply(reply)

    assert await rewriter(fake_openai).standalone_query(FOLLOW_UP) == (
        "heuristic: does it work on android?"
    )


@pytest.mark.parametrize(
    ("answer", "query"),
    [
        ('Standalone search query: "premium plan on Android"', "premium plan on Android"),
        ("`premium   plan android`\nBecause the user asked...", "premium plan android"),
        ("\n\n  Query: refund time  \n", "refund time"),
    ],
)
def test_answers_are_cleaned_to_one_query(answer: str, query: str) -> None:
    assert clean_query(answer) == query


async def test_the_same_history_and_slots_never_call_the_llm_twice(
    fake_openai: FakeOpenAI,
) -> None:
    fake_openai.responder = lambda _: "premium plan on Android"
    rewrite = rewriter(fake_openai)

    await rewrite.standalone_query(FOLLOW_UP)
    await rewrite.standalone_query(Conversation(FOLLOW_UP.turns, dict(FOLLOW_UP.slots)))
    assert fake_openai.call_count == 1

    await rewrite.standalone_query(Conversation(FOLLOW_UP.turns, {"region": "us"}))
    assert fake_openai.call_count == 2


async def test_a_failure_is_not_cached(fake_openai: FakeOpenAI) -> None:
    fake_openai.reply(Reply(status=500), "premium plan on Android")
    rewrite = rewriter(fake_openai)

    assert (await rewrite.standalone_query(FOLLOW_UP)).startswith("heuristic")
    assert await rewrite.standalone_query(FOLLOW_UP) == "premium plan on Android"
    assert fake_openai.call_count == 2


async def test_query_and_filter_come_from_one_call(fake_openai: FakeOpenAI) -> None:
    fake_openai.reply(
        structured_answer(
            "Does the premium plan work on Android?",
            'and(eq("plan", "premium"), eq("platform", "android"), eq("colour", "red"))',
        )
    )

    standalone, structured = await combined(fake_openai).rewrite_and_structure(FOLLOW_UP)

    assert standalone == "Does the premium plan work on Android?"
    assert structured is not None and structured.query == standalone
    assert to_filter_syntax(structured.filter) == (
        'and(eq("plan", "premium"), eq("platform", "android"))'
    )
    assert fake_openai.call_count == 1
    prompt = fake_openai.prompts()[0]
    assert (
        "standalone search query" in prompt and "Latest message: does it work on android?" in prompt
    )


async def test_the_combined_call_is_cached_and_falls_back_on_garbage(
    fake_openai: FakeOpenAI,
) -> None:
    fake_openai.reply("not json at all", structured_answer("premium on android", "NO_FILTER"))
    both = combined(fake_openai)

    assert await both.rewrite_and_structure(FOLLOW_UP) == (
        "heuristic: does it work on android?",
        None,
    )
    first = await both.rewrite_and_structure(FOLLOW_UP)
    again = await both.rewrite_and_structure(FOLLOW_UP)

    assert first == again and first[0] == "premium on android"
    assert fake_openai.call_count == 2


async def test_without_history_only_the_filter_is_asked_for(fake_openai: FakeOpenAI) -> None:
    fake_openai.reply(structured_answer("share folder", 'eq("platform", "web")'))

    standalone, structured = await combined(fake_openai).rewrite_and_structure(FIRST_MESSAGE)

    assert standalone == "heuristic: How do I share a folder?"
    assert structured is not None and to_filter_syntax(structured.filter) == 'eq("platform", "web")'
    assert fake_openai.call_count == 1


async def test_the_planner_ands_the_llm_filter_with_the_slot_filter(
    fake_openai: FakeOpenAI, tmp_path: Path
) -> None:
    config = StoreConfig.model_validate(
        {
            "docs": tmp_path,
            "metadata_fields": FIELDS,
            "slot_filters": {"user_plan": "plan"},
            "rewrite": "llm",
            "self_query": "llm",
            "multi_query": 2,
            "llm": fake_openai.llm_config(),
        }
    )
    llm_planner: LLMPlanner = build_llm_planner(config)
    fake_openai.reply(
        structured_answer(
            "free and business features", 'or(eq("plan", "free"), eq("plan", "business"))'
        ),
        "features of the free and business plans\nfree vs business plan features",
    )
    conversation = Conversation(FOLLOW_UP.turns, {"user_plan": "premium"})

    plan = await Planner(config, dict, llm_planner).plan(conversation)

    assert to_filter_syntax(plan.filters.as_written) == (
        'and(eq("plan", "premium"), or(eq("plan", "free"), eq("plan", "business")))'
    )
    assert plan.paraphrases == (
        "features of the free and business plans",
        "free vs business plan features",
    )
    assert fake_openai.call_count == 2  # one combined call, one paraphrase call


@pytest.mark.parametrize(
    ("llm_config", "budget"),
    [({"timeout": 0.5}, 0.5), ({"timeout": 3}, 3.0), ({}, 2.0), ({"timeout": "soon"}, 2.0)],
)
def test_the_llm_blocks_timeout_is_the_wall_time_budget_of_each_step(
    llm_config: dict[str, object], budget: float
) -> None:
    assert time_budget(llm_config) == budget


async def test_the_combined_prompt_gives_today_s_date(fake_openai: FakeOpenAI) -> None:
    llm = RetrievalLLM.from_config(fake_openai.llm_config())
    dated = LLMQueryConstructor(llm, FIELDS, today=lambda: dt.date(2026, 11, 25))
    fake_openai.reply(structured_answer("premium on Android", "NO_FILTER"))

    await LLMRewriteAndFilter(dated, RewriteLLM(llm, heuristic)).rewrite_and_structure(FOLLOW_UP)

    assert fake_openai.prompts()[0].startswith("Today's date is 2026-11-25 (Wednesday).")
