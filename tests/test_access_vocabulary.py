"""The self-query offers a user only values of documents that user may read (or declared ones).

A restricted document's attribute values must not reach the LLM's prompt, nor be matched by the
rules, for a user without the entitlement: the prompt or the filter would disclose that such a
document exists and what it is about. An entitled user is offered them as before.
"""

from __future__ import annotations

from pathlib import Path
from typing import Any

import pytest
from rasa.utils.endpoints import EndpointConfig

from rasa_context_retrieval.conversation import Conversation
from rasa_context_retrieval.store import ContextRetrieval
from tests.fake_openai import FakeOpenAI, fake_openai_fixture  # noqa: F401
from tests.test_llm_end_to_end import constructor_answer

pytestmark = pytest.mark.asyncio(loop_scope="session")

RESTRICTED_PROJECT = "Nightingale"
"""The project only a premium document names."""

FIELDS = [
    {"name": "project", "type": "string", "description": "The project an article is about"},
    {"name": "plan", "type": "string", "description": "The plan", "values": ["free", "premium"]},
]


def write_docs(folder: Path) -> Path:
    docs = folder / "docs"
    docs.mkdir()
    articles = {
        "sparrow.md": ("", "Sparrow", "Sparrow syncs notes between devices."),
        "robin.md": ("plan: free\n", "Robin", "Robin exports reports as PDF."),
        "nightingale.md": (
            "plan: premium\n",
            RESTRICTED_PROJECT,
            f"{RESTRICTED_PROJECT} moves the company to a new data centre.",
        ),
    }
    for name, (plan, project, answer) in articles.items():
        (docs / name).write_text(
            f"---\n{plan}project: {project}\n---\nQ: What is {project}?\nA: {answer}\n",
            encoding="utf-8",
        )
    return docs


def connect(folder: Path, embedder: Any, **overrides: Any) -> ContextRetrieval:
    docs = write_docs(folder)
    store = ContextRetrieval(embeddings=embedder)
    block = {
        "type": "rasa_context_retrieval.ContextRetrieval",
        "docs": str(docs),
        "index_path": str(folder / "index"),
        "metadata_fields": FIELDS,
        "access_filters": {"plan": "plan"},
        **overrides,
    }
    store.connect(EndpointConfig(**block))
    return store


def state(*turns: tuple[str, str], plan: str | None = None) -> dict[str, Any]:
    events = [{"event": role, "text": text} for role, text in turns]
    latest = next(text for role, text in reversed(turns) if role == "user")
    metadata = {"plan": plan} if plan is not None else {}
    return {"events": events, "slots": {}, "latest_message": {"text": latest, "metadata": metadata}}


ASK = ("user", f"What is the {RESTRICTED_PROJECT} project about?")


# --- the LLM's prompt -----------------------------------------------------------------------------


@pytest.fixture
def llm_store(tmp_path: Path, embedder: Any, fake_openai: FakeOpenAI) -> ContextRetrieval:
    return connect(
        tmp_path,
        embedder,
        rewrite="llm",
        self_query="llm",
        llm=fake_openai.llm_config(timeout=5.0),
    )


async def test_the_prompt_never_shows_a_restricted_documents_value_to_a_user_without_access(
    llm_store: ContextRetrieval, fake_openai: FakeOpenAI
) -> None:
    fake_openai.reply(constructor_answer("what is it", f'eq("project", "{RESTRICTED_PROJECT}")'))

    found = await llm_store.search("", state(ASK, plan="free"), 0.0)

    prompt = fake_openai.prompts()[0]
    assert '\\"Robin\\"' in prompt and '\\"Sparrow\\"' in prompt
    assert '\\"free\\", \\"premium\\"' in prompt, "declared values are offered to everyone"
    assert RESTRICTED_PROJECT not in prompt.replace(ASK[1], "")
    # The LLM's guess is outside this user's catalogue, so it is dropped, not searched.
    assert found.metadata["extracted_filter"] is None


async def test_an_entitled_user_is_shown_the_value_in_the_prompt(
    llm_store: ContextRetrieval, fake_openai: FakeOpenAI
) -> None:
    fake_openai.reply(constructor_answer("what is it", f'eq("project", "{RESTRICTED_PROJECT}")'))

    found = await llm_store.search("", state(ASK, plan="premium"), 0.0)

    assert f'\\"{RESTRICTED_PROJECT}\\"' in fake_openai.prompts()[0]
    assert found.metadata["extracted_filter"] == f'eq("project", "{RESTRICTED_PROJECT}")'


async def test_the_conversation_prompt_of_a_follow_up_is_restricted_too(
    llm_store: ContextRetrieval, fake_openai: FakeOpenAI
) -> None:
    turns = (
        ("user", "What is Robin?"),
        ("bot", "Robin exports reports."),
        ("user", "and the rest?"),
    )
    fake_openai.reply(constructor_answer("other projects", "NO_FILTER"))
    fake_openai.reply(constructor_answer("other projects", "NO_FILTER"))

    await llm_store.search("", state(*turns, plan="free"), 0.0)
    await llm_store.search("", state(*turns, plan="premium"), 0.0)

    without, entitled = fake_openai.prompts()
    assert "Robin" in without and RESTRICTED_PROJECT not in without
    assert f'\\"{RESTRICTED_PROJECT}\\"' in entitled


# --- the rules ------------------------------------------------------------------------------------


@pytest.fixture
def rules_store(tmp_path: Path, embedder: Any) -> ContextRetrieval:
    return connect(tmp_path, embedder, self_query="rules")


def rules_filter(store: ContextRetrieval, plan: str) -> str:
    """The filter the rules read from the question, before any search (which could relax it)."""
    conversation = Conversation.from_tracker_state(state(ASK, plan=plan))
    return str(store.engine.planner.plan_here(conversation).filters.extracted)


async def test_the_rules_never_match_a_restricted_documents_value_for_a_user_without_access(
    rules_store: ContextRetrieval,
) -> None:
    assert rules_filter(rules_store, "free") == "None"


async def test_the_rules_match_it_for_an_entitled_user(rules_store: ContextRetrieval) -> None:
    assert RESTRICTED_PROJECT in rules_filter(rules_store, "premium")
    found = await rules_store.search("", state(ASK, plan="premium"), 0.0)
    assert found.metadata["extracted_filter"] == f'eq("project", "{RESTRICTED_PROJECT}")'


async def test_the_values_a_user_may_read_are_read_once_per_access_filter_and_index(
    rules_store: ContextRetrieval,
) -> None:
    live = rules_store.engine.live
    reads: list[Any] = []
    readable_values = live.backend.readable_values

    def counted(attributes: Any, access: Any) -> Any:
        reads.append(access.key)
        return readable_values(attributes, access)

    live.backend.readable_values = counted  # type: ignore[method-assign]
    for plan in ("free", "premium", "free", "premium", "free"):
        await rules_store.search("", state(ASK, plan=plan), 0.0)

    assert len(reads) == 2 and reads[0] != reads[1]
