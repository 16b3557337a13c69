"""What each result carries into Rasa's generative prompt, through the real EnterpriseSearchPolicy.

The policy is created, trained and loaded with ``vector_store.type`` naming ContextRetrieval and
``use_generative_llm: true``, ``citation_enabled: true``; its LLM is the local OpenAI-compatible
server of tests/fake_openai.py, reached over HTTP through Rasa's own client. The server answers
like an LLM that follows the citation prompt: it cites the ``source`` of the first document it
was given. So the tests see the prompt exactly as the LLM receives it, and the citation block
that reaches the user after the policy's own post-processing.
"""

from __future__ import annotations

import re
from collections.abc import Iterator
from pathlib import Path
from typing import Any

import pytest
import yaml
from hypothesis import given, settings
from hypothesis import strategies as st
from rasa.core.config.available_endpoints import AvailableEndpoints
from rasa.core.policies.enterprise_search_policy import EnterpriseSearchPolicy
from rasa.core.policies.policy import PolicyPrediction
from rasa.engine.graph import ExecutionContext, GraphSchema
from rasa.engine.storage.local_model_storage import LocalModelStorage
from rasa.engine.storage.resource import Resource
from rasa.shared.core.trackers import DialogueStateTracker
from rasa.shared.nlu.training_data.training_data import TrainingData
from rasa.utils.endpoints import EndpointConfig
from structlog.testing import capture_logs

from rasa_context_retrieval.config import ConfigurationError, StoreConfig
from rasa_context_retrieval.knowledge.chunking import chunk_documents
from rasa_context_retrieval.knowledge.loader import Document
from rasa_context_retrieval.knowledge.models import Chunk
from rasa_context_retrieval.result_metadata import citable_source, prompt_metadata
from tests.conftest import REPO_ROOT
from tests.fake_openai import FAKE_API_KEY, FakeOpenAI, Reply
from tests.store_support import connected_store
from tests.test_enterprise_search_policy import DOMAIN, tracker_for

ON_ONE_LOOP = pytest.mark.asyncio(loop_scope="session")
"""Rasa's LLM client caches HTTP clients per event loop; an application has one loop."""

PREMIUM_URL = "https://help.lumen.example/plans/premium"
EU_REFUND_TITLE = "Refunds in the European Union"
PREMIUM_STORAGE = "The Premium plan includes 2 TB of storage."
EU_REFUND = "In the EU you can get a refund within 14 days of any payment."
US_REFUND = "In the US you can get a refund within 30 days of your first payment."
SYNC_PROSE = (
    "Lumen Drive uploads every file you put in its folder and copies it to your other devices. "
    "Only the changed parts of a file are uploaded again."
)
INTERNAL_ATTRIBUTES = ("'plan'", "'region'", "'price_per_month'", "'updated'", "'question'")
CITED_SOURCE = re.compile(r"'source': '([^']*)'")


def write_cited_knowledge_base(folder: Path) -> Path:
    """A document with a url, one with a title, one with neither, and one of plain prose."""
    docs = folder / "docs"
    (docs / "plans").mkdir(parents=True)
    (docs / "plans" / "premium.md").write_text(
        f"---\nurl: {PREMIUM_URL}\ntitle: Premium plan\nplan: [premium]\nregion: [eu, us]\n"
        "price_per_month: 9.99\nupdated: 2025-09-02\n---\n"
        f"Q: How much storage do I get with Premium?\nA: {PREMIUM_STORAGE}\n",
        encoding="utf-8",
    )
    (docs / "refunds-eu.md").write_text(
        f"---\ntitle: {EU_REFUND_TITLE}\nplan: [free, premium]\nregion: [eu]\n---\n"
        f"Q: Can I get a refund?\nA: {EU_REFUND}\n",
        encoding="utf-8",
    )
    (docs / "refunds-us.md").write_text(
        f"---\nplan: [free, premium]\nregion: [us]\n---\nQ: Can I get a refund?\nA: {US_REFUND}\n",
        encoding="utf-8",
    )
    (docs / "how-sync-works.md").write_text(
        f"---\nplan: [free, premium]\nregion: [eu, us]\n---\n{SYNC_PROSE}\n", encoding="utf-8"
    )
    return docs


def citing_llm(body: dict[str, Any]) -> Reply:
    """Answers like an LLM following Rasa's citation prompt: it cites the first document."""
    prompt = body["messages"][-1]["content"]
    sources = CITED_SOURCE.findall(prompt)
    cited = sources[0] if sources else "No relevant sources"
    return Reply(f"Here is what the documents say. [1]\nSources:\n[1] {cited}")


@pytest.fixture(scope="module")
def llm_server() -> Iterator[FakeOpenAI]:
    with pytest.MonkeyPatch.context() as patch:
        patch.setenv("OPENAI_API_KEY", FAKE_API_KEY)
        server = FakeOpenAI()
        server.start()
        try:
            yield server
        finally:
            server.stop()


@pytest.fixture
def llm(llm_server: FakeOpenAI) -> Iterator[FakeOpenAI]:
    llm_server.reset()
    llm_server.responder = citing_llm
    yield llm_server


def search_policy(
    storage_folder: Path, model_path: Path, **settings: Any
) -> EnterpriseSearchPolicy:
    config = {
        "vector_store": {"type": "rasa_context_retrieval.ContextRetrieval"},
        "embeddings": {"provider": "huggingface_local", "model": str(model_path)},
        **settings,
    }
    storage = LocalModelStorage(storage_folder)
    resource = Resource("enterprise_search")
    context = ExecutionContext(GraphSchema({}), "test")
    trained = EnterpriseSearchPolicy.create(config, storage, resource, context)
    trained.train([], DOMAIN, None, None, TrainingData())
    return EnterpriseSearchPolicy.load(config, storage, resource, context)


@pytest.fixture(scope="module")
def generative_policy(
    tmp_path_factory: pytest.TempPathFactory, model_path: Path, llm_server: FakeOpenAI
) -> EnterpriseSearchPolicy:
    return search_policy(
        tmp_path_factory.mktemp("generative"),
        model_path,
        use_generative_llm=True,
        citation_enabled=True,
        llm=llm_server.llm_config(),
    )


@pytest.fixture(scope="module")
def knowledge(tmp_path_factory: pytest.TempPathFactory) -> tuple[Path, Path]:
    folder = tmp_path_factory.mktemp("knowledge")
    return write_cited_knowledge_base(folder), folder / "index"


def endpoints(knowledge: tuple[Path, Path], **settings: Any) -> AvailableEndpoints:
    docs, index = knowledge
    return AvailableEndpoints(
        vector_store=EndpointConfig(
            type="rasa_context_retrieval.ContextRetrieval",
            docs=str(docs),
            index_path=str(index),
            top_k=4,
            slot_filters={"plan": "plan", "region": "region"},
            **settings,
        )
    )


async def predict(
    policy: EnterpriseSearchPolicy, where: AvailableEndpoints, question: str, **slots: Any
) -> tuple[PolicyPrediction, DialogueStateTracker]:
    tracker = tracker_for([("user", question)], **slots)
    prediction = await policy.predict_action_probabilities(tracker, DOMAIN, endpoints=where)
    return prediction, tracker


async def ask(
    policy: EnterpriseSearchPolicy, where: AvailableEndpoints, question: str, **slots: Any
) -> str:
    prediction, _ = await predict(policy, where, question, **slots)
    assert prediction.action_metadata, "the policy answered with a pattern, not a message"
    return str(prediction.action_metadata["message"]["text"])


def documents_section(prompt: str) -> str:
    """The part of Rasa's prompt that lists the retrieved documents."""
    return prompt.split("### Relevant Documents", 1)[1].split("### Citing Sources", 1)[0]


@ON_ONE_LOOP
async def test_lean_results_give_the_llm_each_text_once_and_no_internal_attributes(
    generative_policy, llm, knowledge
):
    await ask(generative_policy, endpoints(knowledge, result_metadata="lean"), "refund?")

    documents = documents_section(llm.prompts()[-1])
    assert documents.count(EU_REFUND) == 1
    assert documents.count(SYNC_PROSE) == 1, "a prose chunk's text is not repeated as `answer`"
    assert "'answer'" not in documents
    for attribute in INTERNAL_ATTRIBUTES:
        assert attribute not in documents


@ON_ONE_LOOP
async def test_full_results_repeat_every_answer_in_the_prompt(generative_policy, llm, knowledge):
    await ask(generative_policy, endpoints(knowledge, result_metadata="full"), "refund?")

    documents = documents_section(llm.prompts()[-1])
    assert documents.count(SYNC_PROSE) == 2
    assert documents.count(EU_REFUND) == 2
    assert "'region'" in documents


@ON_ONE_LOOP
async def test_lean_prompts_are_shorter_than_full_prompts(generative_policy, llm, knowledge):
    for choice in ("full", "lean"):
        await ask(generative_policy, endpoints(knowledge, result_metadata=choice), "refund?")
    full, lean = (len(documents_section(prompt)) for prompt in llm.prompts())
    assert lean < full * 0.7


@ON_ONE_LOOP
async def test_a_declared_url_is_what_the_answer_cites(generative_policy, llm, knowledge):
    answer = await ask(
        generative_policy,
        endpoints(knowledge, result_metadata="lean"),
        "How much storage does Premium include?",
    )

    assert f"'source': '{PREMIUM_URL}', 'title': 'Premium plan'" in llm.prompts()[-1]
    assert answer.endswith(f"Sources:\n[1] {PREMIUM_URL}")


@ON_ONE_LOOP
async def test_a_declared_title_is_cited_and_the_region_slot_still_filters(
    generative_policy, llm, knowledge
):
    answer = await ask(
        generative_policy,
        endpoints(knowledge, result_metadata="lean"),
        "Can I get a refund?",
        region="eu",
    )

    prompt = llm.prompts()[-1]
    assert US_REFUND not in prompt, "trimmed metadata must not loosen the access filter"
    assert "'region'" not in documents_section(prompt)
    assert answer.endswith(f"Sources:\n[1] {EU_REFUND_TITLE}")


@ON_ONE_LOOP
async def test_without_url_or_title_the_path_is_cited(generative_policy, llm, knowledge):
    answer = await ask(
        generative_policy,
        endpoints(knowledge, result_metadata=["plan"]),
        "Can I get a refund?",
        region="us",
    )

    assert "{'plan': ['free', 'premium'], 'source': 'refunds-us.md'}" in llm.prompts()[-1]
    assert answer.endswith("Sources:\n[1] refunds-us.md")


@ON_ONE_LOOP
async def test_the_default_keeps_extractive_answers_working(
    tmp_path: Path, model_path: Path, knowledge
):
    policy = search_policy(tmp_path, model_path, use_generative_llm=False)
    answer = await ask(policy, endpoints(knowledge), "Can I get a refund?", region="eu")
    assert answer == EU_REFUND


@ON_ONE_LOOP
async def test_lean_results_in_extractive_mode_are_flagged_with_the_fix(
    tmp_path: Path, model_path: Path
):
    # A knowledge base of its own: the notice is given once per knowledge base and choice.
    own_knowledge = (write_cited_knowledge_base(tmp_path), tmp_path / "index")
    (tmp_path / "model").mkdir()
    policy = search_policy(tmp_path / "model", model_path, use_generative_llm=False)
    lean = endpoints(own_knowledge, result_metadata="lean")
    with capture_logs() as events:
        for _ in range(2):
            prediction, tracker = await predict(policy, lean, "Can I get a refund?", region="eu")
            tracker.update_with_events(prediction.events)
            assert tracker.stack.top().flow_id == "pattern_internal_error"

    names = [event["event"] for event in events]
    assert "enterprise_search_policy._return_static_response.answer_key_missing_in_metadata" in (
        names
    )
    notices = [e for e in events if e["event"] == "context_retrieval.result_metadata.no_answer"]
    assert len(notices) == 1, "said once, not at every search"
    assert "result_metadata: full" in notices[0]["note"]


@ON_ONE_LOOP
async def test_a_listed_answer_keeps_extractive_answers_and_drops_the_rest(
    embedder: Any, knowledge
):
    store = connected_store(embedder, endpoints(knowledge, result_metadata=["answer"]).vector_store)
    results = await store.search("Can I get a refund?", {}, 0.0)
    assert results.results
    for result in results.results:
        assert set(result.metadata) == {"answer", "source"}
        assert result.metadata["answer"] in result.text


@pytest.mark.parametrize("wrong", ["short", [], ["source", "source"], [""], 3])
def test_a_wrong_result_metadata_names_the_key_and_the_choices(wrong: Any, tmp_path: Path):
    with pytest.raises(ConfigurationError) as error:
        StoreConfig.from_kwargs({"docs": str(tmp_path), "result_metadata": wrong})
    message = str(error.value)
    assert "vector_store.result_metadata:" in message
    assert message.count("\n") == 1, "one line for the one faulty key"


@pytest.mark.parametrize(
    ("config", "endpoints_file", "expected"),
    [("config.yml", "endpoints.yml", "full"), ("config-llm.yml", "endpoints-llm.yml", "lean")],
)
def test_the_example_assistant_sends_lean_results_only_to_a_generative_policy(
    config: str, endpoints_file: str, expected: str
):
    policies = yaml.safe_load((REPO_ROOT / config).read_text(encoding="utf-8"))["policies"]
    search = next(p for p in policies if p["name"] == "EnterpriseSearchPolicy")
    block = yaml.safe_load((REPO_ROOT / endpoints_file).read_text(encoding="utf-8"))
    chosen = block["vector_store"].get("result_metadata", "full")
    assert chosen == expected
    assert search["use_generative_llm"] is (chosen == "lean")


def chunks_of(document: Document) -> list[Chunk]:
    return chunk_documents([document], chunk_size=1000, chunk_overlap=100)


def test_a_json_lines_url_is_cited_and_an_unusable_title_is_ignored():
    line = Document(
        "faq.jsonl:3",
        "Q: Where is my invoice?\nA: Under Settings > Billing.",
        {"url": "  ", "title": ["not", "a", "title"], "plan": ["free"]},
    )
    (chunk,) = chunks_of(line)
    assert prompt_metadata(chunk, "lean") == {"source": "faq.jsonl:3"}
    cited = Document("faq.jsonl:4", "Invoices are e-mailed.", {"url": "https://x.example/inv"})
    assert citable_source(chunks_of(cited)[0].metadata) == "https://x.example/inv"


@settings(max_examples=60, deadline=None)
@given(
    text=st.text(min_size=1, max_size=300).filter(str.strip),
    attributes=st.dictionaries(
        st.sampled_from(["plan", "region", "url", "title", "answer", "question", "price"]),
        st.one_of(st.text(max_size=20), st.integers(), st.lists(st.text(max_size=5))),
    ),
)
def test_lean_results_carry_a_source_and_never_repeat_the_text(text: str, attributes: dict):
    for chunk in chunks_of(Document("doc.md", text, attributes)):
        lean = prompt_metadata(chunk, "lean")
        assert set(lean) <= {"source", "title", "answer"}
        assert lean["source"].strip()
        assert "answer" not in lean, "a chunk's answer is always part of its text"
        full = prompt_metadata(chunk, "full")
        assert full["source"] == lean["source"]
        assert set(full) - {"source"} == set(chunk.metadata) - {"source"}
