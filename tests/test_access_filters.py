"""Access control a deployment can trust: entitlements from the channel, denied by default.

The rules are exercised on their own first, then on trackers built by Rasa's own classes (the
processor's session-start record, the ``/SetSlots`` and LLM slot-setting commands), and finally
through ``ContextRetrieval`` on the example knowledge base configured by ``endpoints-access.yml``.
"""

from __future__ import annotations

import dataclasses
import math
from pathlib import Path
from types import SimpleNamespace
from typing import Any

import pytest
import yaml
from rasa.core.information_retrieval import InformationRetrievalException
from rasa.core.processor import BaseMessageProcessor
from rasa.dialogue_understanding.commands.set_slot_command import SetSlotCommand
from rasa.shared.core.constants import SESSION_START_METADATA_SLOT, SetSlotExtractor
from rasa.shared.core.events import SlotSet, UserUttered
from rasa.shared.core.flows import FlowsList
from rasa.shared.core.trackers import DialogueStateTracker, EventVerbosity
from rasa.utils.endpoints import EndpointConfig
from structlog.testing import capture_logs

from rasa_context_retrieval.access.channel import ChannelMetadata
from rasa_context_retrieval.access.entitlements import AccessFilter
from rasa_context_retrieval.config import ConfigurationError, StoreConfig
from rasa_context_retrieval.store import ContextRetrieval
from tests.conftest import REPO_ROOT
from tests.store_support import tracker_state
from tests.test_enterprise_search_policy import DOMAIN

PLAN = {"plan": "plan"}


def access(message: Any = None, session: Any = None, mapping: Any = None) -> AccessFilter:
    found = AccessFilter.from_channel(ChannelMetadata(message, session), mapping or PLAN)
    assert found is not None
    return found


# --- the rules --------------------------------------------------------------------------------


def test_a_string_entitlement_matches_exactly_after_trimming_and_never_case_folded() -> None:
    free = access({"plan": "  free "})
    assert free.admits({"plan": "free"})
    assert free.admits({"plan": " free"})
    assert not free.admits({"plan": "Free"})
    assert not free.admits({"plan": "FREE"})
    assert not free.admits({"plan": "fre"})


def test_a_list_entitlement_admits_any_of_its_items_and_list_valued_documents_by_any_member():
    both = access({"plan": ["free", "plus"]})
    assert both.admits({"plan": "plus"})
    assert both.admits({"plan": ["premium", "free"]})
    assert not both.admits({"plan": ["premium", "business"]})


def test_numbers_and_bools_keep_their_type() -> None:
    assert access({"tier": 2}, mapping={"tier": "tier"}).admits({"tier": 2.0})
    assert not access({"tier": 2}, mapping={"tier": "tier"}).admits({"tier": "2"})
    assert not access({"tier": "2"}, mapping={"tier": "tier"}).admits({"tier": 2})
    assert not access({"staff": True}, mapping={"staff": "staff"}).admits({"staff": 1})
    assert not access({"staff": 1}, mapping={"staff": "staff"}).admits({"staff": True})
    assert access({"staff": True}, mapping={"staff": "staff"}).admits({"staff": True})


@pytest.mark.parametrize("public", [{}, {"plan": None}, {"plan": "  "}, {"plan": []}])
def test_a_document_without_the_attribute_is_public(public: dict[str, Any]) -> None:
    assert access({"plan": "free"}).admits(public)
    assert access().admits(public)


@pytest.mark.parametrize("odd", [{"plan": {"free": True}}, {"plan": [None]}, {"plan": [""]}])
def test_an_attribute_holding_something_else_is_never_public(odd: dict[str, Any]) -> None:
    assert not access().admits(odd)
    assert not access({"plan": "free"}).admits(odd)


@pytest.mark.parametrize(
    "unusable", [None, "", "   ", [], [None, ""], {"plan": "premium"}, math.nan, math.inf]
)
def test_a_missing_or_unusable_entitlement_admits_public_documents_only(unusable: Any) -> None:
    for denied in (access({"plan": unusable}), access(), access({"other": "x"})):
        assert denied.admits({"source": "about/company.txt"})
        for plan in ("free", "plus", "premium", "business", "", "None", "nan"):
            assert not denied.admits({"plan": plan}) or not plan.strip()


def test_an_unusable_key_in_the_latest_message_does_not_fall_back_to_the_session() -> None:
    denied = access({"plan": ""}, session={"plan": "premium"})
    assert denied.clauses[0].source == "message"
    assert not denied.admits({"plan": "premium"})


def test_the_latest_message_wins_over_the_session_and_the_session_fills_in() -> None:
    assert access({"plan": "free"}, {"plan": "premium"}).admits({"plan": "free"})
    assert not access({"plan": "free"}, {"plan": "premium"}).admits({"plan": "premium"})
    from_session = access({"locale": "de"}, {"plan": "premium"})
    assert from_session.sources == {"plan": "session"}
    assert from_session.admits({"plan": "premium"})


def test_unusable_items_of_a_list_are_dropped_and_never_widen() -> None:
    mixed = access({"plan": ["free", None, {"x": 1}, ["plus"], ""]})
    assert mixed.clauses[0].allowed == ("free",)
    assert not mixed.admits({"plan": "plus"})


def test_without_access_filters_configured_there_is_no_access_filter() -> None:
    assert AccessFilter.from_channel(ChannelMetadata({"plan": "free"}), {}) is None


# --- trust in Rasa's session metadata ------------------------------------------------------------


def _tracker(*events: Any) -> DialogueStateTracker:
    return DialogueStateTracker.from_events("user-1", list(events), DOMAIN.slots)


def _record_session_start(tracker: DialogueStateTracker, metadata: dict[str, Any]) -> None:
    """Exactly what Rasa's processor does when a session starts with channel metadata."""
    BaseMessageProcessor._record_session_start_metadata(
        SimpleNamespace(domain=DOMAIN),  # type: ignore[arg-type]
        tracker,
        metadata,
    )


def _set_slot_as_user(tracker: DialogueStateTracker, value: str, extractor: str) -> None:
    command = SetSlotCommand(SESSION_START_METADATA_SLOT, value, extractor=extractor)
    for event in command.run_command_on_tracker(tracker, FlowsList([]), tracker):
        tracker.update(event)


def _channel(tracker: DialogueStateTracker) -> ChannelMetadata:
    return ChannelMetadata.from_tracker_state(tracker.current_state(EventVerbosity.AFTER_RESTART))


def test_session_metadata_recorded_by_rasa_is_trusted() -> None:
    tracker = _tracker()
    _record_session_start(tracker, {"plan": "premium"})
    tracker.update(UserUttered("How much storage do I get?"))
    channel = _channel(tracker)
    assert channel.session == {"plan": "premium"}
    assert not channel.message  # the message itself carried no metadata
    assert access(channel.message, channel.session).sources == {"plan": "session"}


@pytest.mark.parametrize(
    "extractor", [SetSlotExtractor.COMMAND_PAYLOAD_READER.value, SetSlotExtractor.LLM.value]
)
def test_a_user_who_writes_the_session_metadata_slot_is_not_trusted(extractor: str) -> None:
    """``/SetSlots(session_started_metadata=premium)`` and the LLM command generator both work
    on this built-in slot; neither may grant an entitlement."""
    for recorded in (None, {"plan": "free"}):
        tracker = _tracker()
        if recorded:
            _record_session_start(tracker, recorded)
        _set_slot_as_user(tracker, '{"plan": "premium"}', extractor)
        assert tracker.get_slot(SESSION_START_METADATA_SLOT) == '{"plan": "premium"}'
        assert _channel(tracker).session is None
        assert not access(session=_channel(tracker).session).admits({"plan": "premium"})


def test_a_mapping_written_by_an_extractor_is_not_trusted_either() -> None:
    tracker = _tracker(
        SlotSet(SESSION_START_METADATA_SLOT, {"plan": "premium"}, filled_by="NLUCommandAdapter")
    )
    assert _channel(tracker).session is None


def test_message_metadata_comes_from_the_latest_user_event() -> None:
    tracker = _tracker(
        UserUttered("hi", metadata={"plan": "premium"}),
        UserUttered("and now?", metadata={"plan": "free"}),
    )
    assert _channel(tracker).message == {"plan": "free"}


# --- configuration -----------------------------------------------------------------------------


def test_a_static_filter_must_name_declared_attributes_and_parse() -> None:
    fields = [{"name": "status", "type": "string", "description": "Editorial status"}]
    config = StoreConfig.from_kwargs(
        {"docs": str(REPO_ROOT / "docs"), "metadata_fields": fields, "filter": 'ne("status", "x")'}
    )
    assert config.static_filter is not None
    with pytest.raises(ConfigurationError, match=r"vector_store\.filter: names \['state'\]"):
        StoreConfig.from_kwargs(
            {"docs": str(REPO_ROOT / "docs"), "metadata_fields": fields, "filter": 'eq("state", 1)'}
        )
    with pytest.raises(ConfigurationError) as error:
        StoreConfig.from_kwargs(
            {"docs": str(REPO_ROOT / "docs"), "metadata_fields": fields, "filter": "ne(status"}
        )
    faults = str(error.value).splitlines()[1:]
    assert len(faults) == 1 and faults[0].startswith("  vector_store.filter: cannot be read")


# --- through ContextRetrieval on the example knowledge base ---------------------------------------


def _access_block(index_path: Path, **overrides: Any) -> dict[str, Any]:
    endpoints = yaml.safe_load((REPO_ROOT / "endpoints-access.yml").read_text(encoding="utf-8"))
    block = dict(endpoints["vector_store"])
    block.pop("type")
    block.update(docs=str(REPO_ROOT / "docs"), index_path=str(index_path), **overrides)
    return block


@pytest.fixture(scope="module")
def store(embedder: Any, example_index_path: Path) -> ContextRetrieval:
    store = ContextRetrieval(embedder)
    store.connect(EndpointConfig(**_access_block(example_index_path)))
    return store


def _state(text: str, metadata: Any = None, **slots: Any) -> dict[str, Any]:
    events: list[Any] = [SlotSet(name, value) for name, value in slots.items()]
    events.append(UserUttered(text, metadata=metadata))
    return _tracker(*events).current_state(EventVerbosity.AFTER_RESTART)


def _sources(results: Any) -> list[str]:
    return [result.metadata["source"] for result in results.results]


def _plans(results: Any) -> list[Any]:
    return [result.metadata.get("plan") for result in results.results]


async def test_the_plan_in_the_message_metadata_decides_what_is_found(store: ContextRetrieval):
    free = await store.search("", _state("How much storage do I get?", {"plan": "free"}))
    premium = await store.search("", _state("How much storage do I get?", {"plan": "premium"}))
    assert "plans/free.md" in _sources(free) and "plans/premium.md" not in _sources(free)
    assert "plans/premium.md" in _sources(premium) and "plans/free.md" not in _sources(premium)
    assert all(plan is None or "free" in plan for plan in _plans(free))
    assert free.metadata["access_filter"] == 'not(nin("plan", ["free"]))'


async def test_saying_a_plan_grants_nothing(store: ContextRetrieval):
    """The user's words fill the `plan` slot; with access_filters the slot is not an entitlement."""
    said = await store.search(
        "",
        _state("I'm on Business. How does single sign-on work?", {"plan": "free"}, plan="business"),
    )
    assert "security/single-sign-on.md" not in _sources(said)
    assert all(plan is None or "free" in plan for plan in _plans(said))


@pytest.mark.parametrize("tracker_state", [{}, None, {"slots": {"plan": "business"}}])
async def test_without_an_entitlement_only_public_documents_are_found(
    store: ContextRetrieval, tracker_state: Any
):
    found = await store.search("How do I fix error E-403?", tracker_state)
    assert found.results, "public documents stay reachable"
    assert all("plan" not in result.metadata for result in found.results)
    assert found.metadata["access_filter"] == 'not(nin("plan", []))'


async def test_an_empty_tracker_state_after_an_entitled_search_finds_public_documents_only(
    store: ContextRetrieval,
):
    """Rasa's agent runtime passes ``tracker_state={}`` (newer Rasa adds ``k=`` and maybe more
    keywords): nothing recorded by an earlier entitled search of the same question, and no
    keyword that names a plan, reaches it."""
    question = "How does single sign-on work on the business plan?"
    entitled = await store.search("", _state(question, {"plan": "business"}))
    assert "security/single-sign-on.md" in _sources(entitled)
    for extra in ({"k": 50}, {"k": 50, "metadata": {"plan": "business"}, "plan": "business"}):
        found = await store.search(question, {}, 0.0, **extra)
        assert found.results, "public documents stay reachable"
        assert all("plan" not in result.metadata for result in found.results), extra
        assert found.metadata["access_filter"] == 'not(nin("plan", []))'


async def test_a_filter_from_the_users_words_cannot_widen_access(store: ContextRetrieval):
    found = await store.search(
        "", _state("what does the business plan cost per month", {"plan": "free"})
    )
    assert all(plan is None or "free" in plan for plan in _plans(found))
    assert "plans/business.md" not in _sources(found)


async def test_every_search_leaves_one_audit_event_without_the_users_words(store: ContextRetrieval):
    with capture_logs() as logs:
        await store.search("", _state("Can I get a refund?", {"plan": "plus"}, region="eu"))
    audits = [log for log in logs if log["event"] == "knowledge_search.search.audit"]
    assert len(audits) == 1
    audit = audits[0]
    assert audit["log_level"] == "info"
    assert audit["entitlement_sources"] == {"plan": "message"}
    assert audit["access_filter"] == 'not(nin("plan", ["plus"]))'
    assert audit["slot_filter"] == 'eq("region", "eu")'
    assert audit["removed_by_access"] == 0
    assert audit["sources"] and all(isinstance(source, str) for source in audit["sources"])
    assert "can i get" not in repr(audit).lower()


async def test_a_static_filter_is_always_applied(embedder: Any, example_index_path: Path):
    store = ContextRetrieval(embedder)
    block = _access_block(example_index_path, filter='ne("category", "billing")')
    store.connect(EndpointConfig(**block))
    found = await store.search("", _state("Can I get a refund?", {"plan": "plus"}))
    assert found.results
    assert all(result.metadata.get("category") != "billing" for result in found.results)
    assert found.metadata["static_filter"] == 'ne("category", "billing")'


async def test_results_are_rechecked_against_the_filter_asked(store: ContextRetrieval):
    """A backend that returns a chunk outside the filter (a stale Milvus collection, say) must
    not get it past search(): the check runs on the metadata that is returned."""
    live = store.engine.live
    original = live.knowledge
    assert original is not None
    # The chunks say premium while the filter columns still say free: the backend selects by
    # the columns, the check reads what would be returned.
    stale = dataclasses.replace(
        original,
        chunks=[
            type(chunk)(chunk.chunk_id, chunk.text, {**chunk.metadata, "plan": ["premium"]})
            if chunk.metadata.get("source") == "plans/free.md"
            else chunk
            for chunk in original.chunks
        ],
    )
    live.swap(stale)
    try:
        with capture_logs() as logs:
            found = await store.search("", _state("How much storage do I get?", {"plan": "free"}))
    finally:
        live.swap(original)
    assert "plans/free.md" not in _sources(found)
    audit = next(log for log in logs if log["event"] == "knowledge_search.search.audit")
    assert audit["removed_by_access"] >= 1


async def test_a_word_filter_that_selects_documents_is_kept_when_none_clears_the_threshold(
    embedder: Any, example_index_path: Path
):
    """Console: --slot plan=free "what plans cost less than 10 dollars". The word filter
    selects the Free plan's chunks; none is relevant enough, so nothing is answered rather than
    answering from documents that contradict the question."""
    store = ContextRetrieval(embedder)
    block = _access_block(example_index_path, slot_filters={"plan": "plan"}, access_filters={})
    store.connect(EndpointConfig(**block))
    kept = await store.search(
        "", _state("what plans cost less than 10 dollars", plan="free"), threshold=0.3
    )
    assert kept.results == []
    assert kept.metadata["filter_relaxed"] is False
    assert kept.metadata["extracted_filter"] == 'lt("price_per_month", 10.0)'
    assert "matched" in kept.metadata["filter_outcome"]
    assert "none cleared the threshold" in kept.metadata["filter_outcome"]

    relaxed = await store.search(
        "", _state("which plan costs more than 500 dollars", plan="free"), threshold=0.0
    )
    assert relaxed.metadata["filter_relaxed"] is True
    assert relaxed.metadata["filter_outcome"].startswith("the filter from the message matched no")
    assert all("free" in result.metadata["plan"] for result in relaxed.results)


async def test_an_access_attribute_that_nothing_declares_or_has_stops_start_up(
    embedder: Any, example_index_path: Path
):
    """A typo in ``access_filters`` would deny every user everything without a word."""
    block = _access_block(example_index_path, access_filters={"plan": "plann"})
    store = ContextRetrieval(embedder)
    store.connect(EndpointConfig(**block))  # returns at once; the index opens off the loop
    with pytest.raises(InformationRetrievalException) as raised:
        await store.search("", tracker_state(("user", "How much storage do I get?")), 0.0)
    refused = raised.value.__cause__
    assert isinstance(refused, ConfigurationError)
    (line,) = str(refused).splitlines()
    assert line.startswith("vector_store.access_filters: attribute(s) ['plann'] are not in")
    assert "fix the name or declare them" in line
