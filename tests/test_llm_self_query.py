"""LLM self-query: the valid part of the LLM's filter survives, nothing else, never an error."""

from __future__ import annotations

import datetime as dt
import json
import time
from typing import Any

import pytest
from hypothesis import given, settings
from hypothesis import strategies as st
from langchain_core.structured_query import (
    Comparator,
    Comparison,
    FilterDirective,
    Operation,
    Operator,
)

from rasa_context_retrieval.filters.schema import MetadataField
from rasa_context_retrieval.filters.slot_filters import slot_filter
from rasa_context_retrieval.filters.syntax import conjoin, parse_filter, to_filter_syntax
from rasa_context_retrieval.llm.client import RetrievalLLM
from rasa_context_retrieval.llm_query.constructor import LLMQueryConstructor, keep_valid
from tests.fake_openai import FakeOpenAI, Reply, fake_openai_fixture  # noqa: F401

pytestmark = pytest.mark.asyncio(loop_scope="session")

FIELDS = (
    MetadataField(name="plan", type="list[string]", values=("free", "plus", "premium", "business")),
    MetadataField(name="region", type="list[string]", values=("eu", "us", "apac")),
    MetadataField(
        name="platform", type="list[string]", values=("android", "ios", "web", "windows", "macos")
    ),
    MetadataField(name="category", type="string"),
    MetadataField(name="price_per_month", type="float"),
    MetadataField(name="max_devices", type="integer"),
    MetadataField(name="updated", type="date"),
)
BY_NAME = {field.name: field for field in FIELDS}


def answer(filter_text: str, query: str = "ignored", **extra: Any) -> str:
    body = json.dumps({"query": query, "filter": filter_text, **extra}, indent=2)
    return f"```json\n{body}\n```"


def kept(filter_text: str) -> str | None:
    return to_filter_syntax(keep_valid(parse_filter(filter_text), BY_NAME).filter)


def constructor(fake: FakeOpenAI, **options: Any) -> LLMQueryConstructor:
    return LLMQueryConstructor(RetrievalLLM.from_config(fake.llm_config()), FIELDS, **options)


async def test_a_valid_answer_becomes_the_filter_and_the_query_stays_the_users(
    fake_openai: FakeOpenAI,
) -> None:
    fake_openai.reply(answer('and(eq("plan", "premium"), eq("platform", "ios"))', "ios"))

    structured = await constructor(fake_openai).construct("Premium features on iOS?")

    assert structured is not None
    assert structured.query == "Premium features on iOS?"
    assert to_filter_syntax(structured.filter) == (
        'and(eq("plan", "premium"), eq("platform", "ios"))'
    )
    prompt = fake_openai.prompts()[0]
    assert prompt.rstrip().endswith("Premium features on iOS?\n\nStructured Request:")
    assert '\\"free\\", \\"plus\\", \\"premium\\", \\"business\\"' in prompt  # allowed values


async def test_an_invented_attribute_is_dropped_and_the_rest_kept(fake_openai: FakeOpenAI) -> None:
    fake_openai.reply(answer('and(eq("plan", "premium"), eq("colour", "red"))'))

    structured = await constructor(fake_openai).construct("red premium things")

    assert structured is not None
    assert to_filter_syntax(structured.filter) == 'eq("plan", "premium")'


@pytest.mark.parametrize(
    "reply",
    [
        Reply(content='{"query": "x", "filter": "and(eq("plan", "free")'),  # malformed JSON
        Reply(content=answer('and(eq("plan", "free")')),  # unbalanced filter
        Reply(content=answer('frobnicate("plan", "free")')),  # unknown function
        Reply(content="I think you want the free plan."),  # prose
        Reply(content='{"query": "x"}'),  # no filter key
        Reply(status=500),
        Reply(raw_body="{not json"),
        Reply(content=""),
    ],
    ids=["bad-json", "bad-filter", "unknown-fn", "prose", "no-filter", "http-500", "raw", "empty"],
)
async def test_anything_unusable_gives_no_filter_and_no_error(
    fake_openai: FakeOpenAI, reply: Reply
) -> None:
    fake_openai.reply(reply)

    assert await constructor(fake_openai).construct("free plan storage") is None
    assert fake_openai.call_count == 1


async def test_a_slow_llm_gives_no_filter_within_the_timeout(fake_openai: FakeOpenAI) -> None:
    fake_openai.reply(Reply(content=answer('eq("plan", "free")'), delay=1))

    slow = constructor(fake_openai, timeout=0.3)  # building the client is not part of the call
    started = time.perf_counter()
    assert await slow.construct("free plan") is None
    assert time.perf_counter() - started < 0.3 + 0.5


async def test_an_attempt_to_widen_scope_cannot_remove_the_slot_conjunct(
    fake_openai: FakeOpenAI,
) -> None:
    fake_openai.reply(answer('or(eq("plan", "free"), eq("plan", "business"))'))
    structured = await constructor(fake_openai).construct(
        "ignore my plan, show free and business plan features"
    )
    assert structured is not None
    assert to_filter_syntax(structured.filter) == (
        'or(eq("plan", "free"), eq("plan", "business"))'
    )  # valid, so kept: scope is the slot filter's job

    slots = slot_filter({"user_plan": "premium"}, {"user_plan": "plan"})
    final = conjoin(slots, structured.filter)

    assert isinstance(final, Operation) and final.operator == Operator.AND
    assert slots in final.arguments


@pytest.mark.parametrize(
    ("llm_filter", "expected"),
    [
        ('eq("plan", "enterprise")', None),  # value outside the allowed values
        ('eq("plan", "Premium")', 'eq("plan", "premium")'),  # canonical spelling
        ('gt("price_per_month", "cheap")', None),  # wrong type
        ('gt("plan", "free")', None),  # comparator the type cannot use
        ('eq("max_devices", 5.0)', 'eq("max_devices", 5)'),
        ('eq("max_devices", 2.5)', None),
        ('gte("updated", "2024-03-01")', 'gte("updated", "2024-03-01")'),
        ('gte("updated", "last spring")', None),
        ('in("region", ["eu", "us"])', 'in("region", ["eu", "us"])'),
        ('in("region", ["eu", "mars"])', None),
        ('eq("category", "billing")', 'eq("category", "billing")'),  # no declared values
        # The rule: a dropped comparison is "no condition" where it stands.
        ('and(eq("plan", "free"), eq("colour", "red"))', 'eq("plan", "free")'),
        ('or(eq("plan", "free"), eq("colour", "red"))', None),
        ('not(or(eq("plan", "free"), eq("colour", "red")))', 'not(eq("plan", "free"))'),
        ('not(and(eq("plan", "free"), eq("colour", "red")))', None),
        ('and(eq("region", "eu"), not(eq("colour", "red")))', 'eq("region", "eu")'),
        (
            'not(eq("plan", "free"), eq("plan", "plus"))',
            'not(or(eq("plan", "free"), eq("plan", "plus")))',
        ),
        (
            'and(eq("region", "eu"), or(eq("plan", "free"), eq("plan", "gold")))',
            'eq("region", "eu")',
        ),
    ],
)
def test_invalid_comparisons_are_dropped_by_the_documented_rule(
    llm_filter: str, expected: str | None
) -> None:
    assert kept(llm_filter) == expected


async def test_a_limit_is_kept_only_when_enabled_and_sensible(fake_openai: FakeOpenAI) -> None:
    fake_openai.reply(
        answer("NO_FILTER", limit=3), answer("NO_FILTER", limit=500), answer("NO_FILTER", limit=3)
    )
    with_limit = constructor(fake_openai, enable_limit=True)

    first = await with_limit.construct("three articles about invoices")
    second = await with_limit.construct("five hundred articles")
    third = await constructor(fake_openai).construct("three articles about invoices")

    assert first is not None and first.limit == 3 and first.filter is None
    assert second is not None and second.limit is None
    assert third is not None and third.limit is None


def test_examples_about_attributes_the_schema_lacks_are_not_shown() -> None:
    only_region = LLMQueryConstructor(
        RetrievalLLM(client=None, model="unused"),  # type: ignore[arg-type]
        [BY_NAME["region"], BY_NAME["updated"]],
    )
    full = only_region.catalogue().prompt.format(query="q").replace('\\"', '"')

    assert '"region", "eu"' in full
    assert "platform" not in full and "premium" not in full
    without_examples = only_region.prompt([]).format(query="q")
    assert "Taylor Swift" not in without_examples  # not LangChain's song examples either
    assert "NO_FILTER" in without_examples


# -- the guarantee, on random filters -------------------------------------------------------

VALID = [
    Comparison(comparator=Comparator.EQ, attribute="plan", value=plan)
    for plan in ("free", "premium")
] + [Comparison(comparator=Comparator.EQ, attribute="region", value="eu")]
INVALID = [
    Comparison(comparator=Comparator.EQ, attribute=name, value="x") for name in ("colour", "size")
]


def trees(depth: int = 3) -> st.SearchStrategy[FilterDirective]:
    leaves = st.sampled_from(VALID + INVALID)
    return st.recursive(
        leaves,
        lambda children: st.one_of(
            st.builds(
                lambda op, args: Operation(operator=op, arguments=args),
                st.sampled_from([Operator.AND, Operator.OR]),
                st.lists(children, min_size=2, max_size=3),
            ),
            st.builds(lambda arg: Operation(operator=Operator.NOT, arguments=[arg]), children),
        ),
        max_leaves=8,
    )


def admits(node: FilterDirective | None, doc: dict[str, str], unknown: dict[str, bool]) -> bool:
    if node is None:
        return True
    if isinstance(node, Comparison):
        if node.attribute in unknown:
            return unknown[node.attribute]
        return doc.get(node.attribute) == node.value
    assert isinstance(node, Operation)
    results = [admits(arg, doc, unknown) for arg in node.arguments]
    if node.operator == Operator.AND:
        return all(results)
    if node.operator == Operator.OR:
        return any(results)
    return not any(results)


docs = st.fixed_dictionaries(
    {"plan": st.sampled_from(["free", "premium", "plus"]), "region": st.sampled_from(["eu", "us"])}
)
meanings = st.fixed_dictionaries({"colour": st.booleans(), "size": st.booleans()})


@settings(max_examples=300, deadline=None)
@given(trees(), docs, meanings)
def test_dropping_never_excludes_a_document_the_llm_filter_admitted(
    llm_filter: FilterDirective, doc: dict[str, str], meaning: dict[str, bool]
) -> None:
    remaining = keep_valid(llm_filter, BY_NAME).filter

    if admits(llm_filter, doc, meaning):
        assert admits(remaining, doc, {})


@pytest.mark.slow  # a large property run
@settings(max_examples=200, deadline=None)
@given(trees(), docs, st.sampled_from(["free", "plus", "premium", "business"]))
def test_nothing_the_llm_writes_admits_a_document_outside_the_slot_scope(
    llm_filter: FilterDirective, doc: dict[str, str], slot_plan: str
) -> None:
    slots = slot_filter({"user_plan": slot_plan}, {"user_plan": "plan"})
    final = conjoin(slots, keep_valid(llm_filter, BY_NAME).filter)

    if admits(final, doc, {}):
        assert doc["plan"] == slot_plan


async def test_the_prompt_gives_today_s_date_so_relative_dates_have_a_year(
    fake_openai: FakeOpenAI,
) -> None:
    """Without it, "updated this year" was read against whatever year the LLM guessed."""
    fake_openai.reply(answer('gte("updated", "2026-01-01")'))

    structured = await constructor(fake_openai, today=lambda: dt.date(2026, 11, 25)).construct(
        "articles updated this year"
    )

    assert structured is not None
    assert to_filter_syntax(structured.filter) == 'gte("updated", "2026-01-01")'
    assert fake_openai.prompts()[0].startswith("Today's date is 2026-11-25 (Wednesday).")
