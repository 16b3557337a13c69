"""The LLM self-query knows the values documents actually carry, and cannot filter on others."""

from __future__ import annotations

import json
from collections.abc import Mapping

import pytest

from rasa_context_retrieval.filters.schema import MetadataField
from rasa_context_retrieval.filters.syntax import to_filter_syntax
from rasa_context_retrieval.llm.client import RetrievalLLM
from rasa_context_retrieval.llm_query.constructor import LLMQueryConstructor
from tests.fake_openai import FakeOpenAI, fake_openai_fixture  # noqa: F401

pytestmark = pytest.mark.asyncio(loop_scope="session")

FIELDS = (
    MetadataField(name="director", type="string", description="The name of the movie director"),
    MetadataField(
        name="region",
        type="list[string]",
        values=("eu", "us"),
        aliases={"eu": ["Europe", "Germany"]},
    ),
)


def answer(filter_text: str) -> str:
    return "```json\n" + json.dumps({"query": "q", "filter": filter_text}) + "\n```"


def constructor(
    fake: FakeOpenAI, index: dict[str, Mapping[str, frozenset[str]]]
) -> LLMQueryConstructor:
    llm = RetrievalLLM.from_config(fake.llm_config())
    return LLMQueryConstructor(llm, FIELDS, known_values=lambda: index["values"])


async def test_the_prompt_lists_the_values_the_index_holds_and_the_aliases(
    fake_openai: FakeOpenAI,
) -> None:
    index = {"values": {"director": frozenset(["Greta Gerwig", "Satoshi Kon"])}}
    fake_openai.reply(answer('eq("director", "Greta Gerwig")'))

    structured = await constructor(fake_openai, index).construct("films by Gerwig")

    assert structured is not None
    assert to_filter_syntax(structured.filter) == 'eq("director", "Greta Gerwig")'
    prompt = fake_openai.prompts()[0]
    assert '\\"Greta Gerwig\\", \\"Satoshi Kon\\"' in prompt
    assert '\\"eu\\" is also called Europe, Germany' in prompt


async def test_a_spelling_no_document_has_is_dropped_and_an_alias_becomes_its_value(
    fake_openai: FakeOpenAI,
) -> None:
    index = {"values": {"director": frozenset(["Greta Gerwig"])}}
    fake_openai.reply(answer('and(eq("director", "G. Gerwig"), eq("region", "Germany"))'))

    structured = await constructor(fake_openai, index).construct("Gerwig films in Germany")

    assert structured is not None
    assert to_filter_syntax(structured.filter) == 'eq("region", "eu")'


async def test_the_catalogue_follows_the_index(fake_openai: FakeOpenAI) -> None:
    index = {"values": {"director": frozenset(["Greta Gerwig"])}}
    built = constructor(fake_openai, index)
    fake_openai.reply(
        answer('eq("director", "Satoshi Kon")'), answer('eq("director", "Satoshi Kon")')
    )

    before = await built.construct("films by Kon")
    index["values"] = {"director": frozenset(["Greta Gerwig", "Satoshi Kon"])}
    after = await built.construct("films by Kon")

    assert before is not None and before.filter is None
    assert after is not None and to_filter_syntax(after.filter) == 'eq("director", "Satoshi Kon")'
    assert "Satoshi Kon" in fake_openai.prompts()[1].split("<< Example 1. >>")[0]
