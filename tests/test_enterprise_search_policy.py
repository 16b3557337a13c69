"""Through Rasa's real EnterpriseSearchPolicy: the custom store answers follow-ups within the slots.

The policy is created, trained and loaded with ``vector_store.type`` pointing at ContextRetrieval,
exactly as ``rasa train`` and ``rasa run`` would, and predicts on a real DialogueStateTracker whose
dialogue stack holds a SearchStackFrame. Extractive mode answers with the top result's answer.
"""

from __future__ import annotations

from pathlib import Path
from typing import Any

import pytest
from rasa.core.config.available_endpoints import AvailableEndpoints
from rasa.core.policies.enterprise_search_policy import EnterpriseSearchPolicy
from rasa.dialogue_understanding.stack.dialogue_stack import DialogueStack
from rasa.dialogue_understanding.stack.frames.search_frame import SearchStackFrame
from rasa.engine.graph import ExecutionContext, GraphSchema
from rasa.engine.storage.local_model_storage import LocalModelStorage
from rasa.engine.storage.resource import Resource
from rasa.shared.core.domain import Domain
from rasa.shared.core.events import BotUttered, SlotSet, UserUttered
from rasa.shared.core.trackers import DialogueStateTracker
from rasa.shared.nlu.training_data.training_data import TrainingData
from rasa.utils.endpoints import EndpointConfig

from tests.conftest import REPO_ROOT

DOMAIN = Domain.from_yaml(
    """
version: "3.1"
slots:
  plan:
    type: categorical
    values: [free, plus, premium, business]
    mappings: [{type: from_llm}]
  region:
    type: categorical
    values: [eu, us, apac]
    mappings: [{type: from_llm}]
"""
)


@pytest.fixture(scope="module")
def policy(tmp_path_factory: pytest.TempPathFactory, model_path: Path) -> EnterpriseSearchPolicy:
    config = {
        "vector_store": {"type": "rasa_context_retrieval.ContextRetrieval"},
        "use_generative_llm": False,
        "embeddings": {"provider": "huggingface_local", "model": str(model_path)},
    }
    storage = LocalModelStorage(tmp_path_factory.mktemp("model"))
    resource = Resource("enterprise_search")
    context = ExecutionContext(GraphSchema({}), "test")
    trained = EnterpriseSearchPolicy.create(config, storage, resource, context)
    trained.train([], DOMAIN, None, None, TrainingData())
    return EnterpriseSearchPolicy.load(config, storage, resource, context)


@pytest.fixture(scope="module")
def endpoints(example_index_path: Path) -> AvailableEndpoints:
    return AvailableEndpoints(
        vector_store=EndpointConfig(
            type="rasa_context_retrieval.ContextRetrieval",
            docs=str(REPO_ROOT / "docs"),
            index_path=str(example_index_path),
            top_k=4,
            slot_filters={"plan": "plan", "region": "region"},
        )
    )


def tracker_for(turns: list[tuple[str, str]], **slots: Any) -> DialogueStateTracker:
    events: list[Any] = [SlotSet(name, value) for name, value in slots.items()]
    for role, text in turns:
        events.append(UserUttered(text) if role == "user" else BotUttered(text))
    tracker = DialogueStateTracker.from_events("test-user", events, DOMAIN.slots)
    tracker.update_stack(DialogueStack(frames=[SearchStackFrame()]))
    return tracker


async def predicted_answer(
    policy: EnterpriseSearchPolicy, endpoints: AvailableEndpoints, tracker: DialogueStateTracker
) -> str:
    prediction = await policy.predict_action_probabilities(tracker, DOMAIN, endpoints=endpoints)
    message = prediction.action_metadata["message"]
    return message["text"]


FOLLOW_UP = [
    ("user", "How do I enable offline files?"),
    ("bot", "Right-click a file or folder and choose Make available offline."),
    ("user", "and on Android?"),
]


async def test_a_follow_up_is_answered_from_the_document_it_is_about(policy, endpoints):
    answer = await predicted_answer(policy, endpoints, tracker_for(FOLLOW_UP, plan="premium"))
    assert "In the Android app" in answer


async def test_the_same_follow_up_on_the_free_plan_is_answered_from_the_free_plan(
    policy, endpoints
):
    answer = await predicted_answer(policy, endpoints, tracker_for(FOLLOW_UP, plan="free"))
    assert "not available on the Free plan" in answer


async def test_a_region_slot_selects_the_regional_refund_policy(policy, endpoints):
    turns = [("user", "Can I get a refund?")]
    eu = await predicted_answer(policy, endpoints, tracker_for(turns, region="eu"))
    us = await predicted_answer(policy, endpoints, tracker_for(turns, region="us"))
    assert "In the EU" in eu or "billing-eu@" in eu
    assert "In the US" in us or "billing-us@" in us


@pytest.fixture(scope="module")
def access_endpoints(example_index_path: Path) -> AvailableEndpoints:
    """endpoints-access.yml: the plan is an entitlement from channel metadata."""
    return AvailableEndpoints(
        vector_store=EndpointConfig(
            type="rasa_context_retrieval.ContextRetrieval",
            docs=str(REPO_ROOT / "docs"),
            index_path=str(example_index_path),
            top_k=4,
            access_filters={"plan": "plan"},
            slot_filters={"region": "region"},
        )
    )


def tracker_with_metadata(
    question: str, message_metadata: dict[str, Any] | None, session_metadata: dict[str, Any] | None
) -> DialogueStateTracker:
    tracker = DialogueStateTracker.from_events("test-user", [], DOMAIN.slots)
    if session_metadata:
        # What Rasa's processor records when a session starts with channel metadata.
        tracker.update(SlotSet("session_started_metadata", session_metadata), DOMAIN)
    tracker.update(UserUttered(question, metadata=message_metadata))
    tracker.update_stack(DialogueStack(frames=[SearchStackFrame()]))
    return tracker


async def test_the_entitlement_on_the_user_message_decides_the_answer(policy, access_endpoints):
    question = "How much storage do I get?"
    free = tracker_with_metadata(question, {"plan": "free"}, None)
    premium = tracker_with_metadata(question, {"plan": "premium"}, None)
    assert "5 GB" in await predicted_answer(policy, access_endpoints, free)
    assert "2 TB" in await predicted_answer(policy, access_endpoints, premium)


async def test_the_entitlement_recorded_at_session_start_decides_the_answer(
    policy, access_endpoints
):
    tracker = tracker_with_metadata("Can I use offline files?", None, {"plan": "free"})
    answer = await predicted_answer(policy, access_endpoints, tracker)
    assert "not available on the Free plan" in answer


async def test_a_plan_slot_the_user_filled_is_no_entitlement(policy, access_endpoints):
    tracker = tracker_with_metadata("How much storage do I get?", {"plan": "free"}, None)
    tracker.update(SlotSet("plan", "premium"), DOMAIN)
    assert "5 GB" in await predicted_answer(policy, access_endpoints, tracker)
