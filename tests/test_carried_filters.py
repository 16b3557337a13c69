"""A scope the user stated earlier ("I live in Germany") keeps filtering the follow-ups of the
same subject, is replaced when the user names another value, and is gone with a new subject."""

from __future__ import annotations

from pathlib import Path
from typing import Any

import pytest
import yaml
from rasa.shared.core.events import ActionExecuted, BotUttered, SessionStarted, UserUttered
from rasa.shared.core.trackers import DialogueStateTracker, EventVerbosity

from rasa_context_retrieval.config import StoreConfig
from rasa_context_retrieval.conversation import Conversation, Turn
from rasa_context_retrieval.filters.syntax import to_filter_syntax
from rasa_context_retrieval.planning.carried_filters import is_follow_up
from rasa_context_retrieval.planning.plan import Planner
from tests.store_support import connected_store, tracker_state

REPO_ROOT = Path(__file__).resolve().parent.parent
GERMANY = "I live in Germany. Can I get my money back if I cancel?"
EU_REFUND = "Yes. In the EU you get a full refund if you cancel within 14 days of purchase."


def example_block(**overrides: Any) -> dict[str, Any]:
    endpoints = yaml.safe_load((REPO_ROOT / "endpoints.yml").read_text(encoding="utf-8"))
    block = dict(endpoints["vector_store"])
    block["docs"] = str(REPO_ROOT / "docs")
    return block | overrides


def planner(**overrides: Any) -> Planner:
    block = {key: value for key, value in example_block(**overrides).items() if key != "type"}
    return Planner(StoreConfig.from_kwargs(block), lambda: {})


def conversation(*texts: str, **slots: Any) -> Conversation:
    roles = ["user", "bot"]
    turns = tuple(Turn(roles[position % 2], text) for position, text in enumerate(texts))  # type: ignore[arg-type]
    return Conversation(turns, slots)


async def filters_of(*texts: str, **slots: Any) -> tuple[str | None, str | None, str | None]:
    plan = await planner().plan(conversation(*texts, **slots))
    return (
        to_filter_syntax(plan.filters.extracted),
        to_filter_syntax(plan.filters.carried),
        to_filter_syntax(plan.filters.as_written),
    )


async def test_a_follow_up_keeps_the_region_the_user_lives_in() -> None:
    extracted, carried, _ = await filters_of(GERMANY, EU_REFUND, "and how long does it take?")
    assert (extracted, carried) == (None, 'eq("region", "eu")')


async def test_another_value_for_the_attribute_replaces_the_carried_one() -> None:
    extracted, carried, _ = await filters_of(GERMANY, EU_REFUND, "and in the US?")
    assert (extracted, carried) == ('eq("region", "us")', None)


async def test_a_new_subject_carries_nothing() -> None:
    extracted, carried, _ = await filters_of(
        GERMANY, EU_REFUND, "How do I share a folder with other people?"
    )
    assert (extracted, carried) == (None, None)


async def test_a_complete_question_that_names_few_long_words_starts_fresh() -> None:
    extracted, carried, _ = await filters_of(
        "offline files on Android",
        "Open the file's menu and choose Make available offline.",
        "What is the UK VAT rate?",
    )
    assert (extracted, carried) == (None, None)


async def test_the_newest_statement_of_a_chain_of_follow_ups_is_carried() -> None:
    _, carried, _ = await filters_of(
        "offline files on Android",
        "Open the file's menu and choose Make available offline.",
        "and on iOS?",
        "Tap the file, then Make available offline.",
        "do I need a paid plan for it?",
    )
    assert carried == 'eq("platform", "ios")'


async def test_a_carried_filter_is_only_ever_added_to_the_slot_filter() -> None:
    _, carried, final = await filters_of(GERMANY, EU_REFUND, "how long?", region="us")
    assert carried == 'eq("region", "eu")'
    assert final == 'and(eq("region", "us"), eq("region", "eu"))'


async def test_carrying_can_be_switched_off() -> None:
    plan = await planner(carry_filters=False).plan(
        conversation(GERMANY, EU_REFUND, "and how long does it take?")
    )
    assert plan.filters.carried is None


@pytest.mark.parametrize(
    ("message", "follows"),
    [
        ("and how long does it take?", True),
        ("what about refunds?", True),
        ("is it encrypted there?", True),
        ("Can I get my money back if I cancel?", True),
        ("How do I share a folder with other people?", False),
        ("Which browsers does the web app support?", False),
    ],
)
def test_the_follow_up_detector_reads_continuations_pointers_and_thin_messages(
    message: str, follows: bool
) -> None:
    assert is_follow_up(message) is follows


async def test_the_example_assistant_answers_the_follow_up_from_the_eu_refund_page(
    example_index_path: Path, embedder: Any
) -> None:
    store = connected_store(embedder, example_block(index_path=str(example_index_path)))
    tracker = tracker_state(
        ("user", GERMANY), ("bot", EU_REFUND), ("user", "and how long does it take?")
    )

    result = await store.search("and how long does it take?", tracker, 0.0)

    assert result.metadata["carried_filter"] == 'eq("region", "eu")'
    assert result.results[0].metadata["source"] == "billing/refunds-eu.md"
    assert all("eu" in hit.metadata["region"] for hit in result.results)


def tracker_state_across_sessions(*sessions: tuple[str, ...]) -> dict[str, Any]:
    """The state EnterpriseSearchPolicy hands over after Rasa started a new session."""
    tracker = DialogueStateTracker("a-returning-user", [])
    for texts in sessions:
        tracker.update(ActionExecuted("action_session_start"))
        tracker.update(SessionStarted())
        tracker.update(ActionExecuted("action_listen"))
        for position, text in enumerate(texts):
            tracker.update(UserUttered(text) if position % 2 == 0 else BotUttered(text))
    return tracker.current_state(EventVerbosity.AFTER_RESTART)


async def test_a_new_session_starts_fresh() -> None:
    state = tracker_state_across_sessions((GERMANY, EU_REFUND), ("and how long does it take?",))
    read = Conversation.from_tracker_state(state)
    assert [turn.text for turn in read.turns] == ["and how long does it take?"]
    plan = await planner().plan(read)
    assert plan.filters.carried is None


def block_without_absent_means_all(index_path: Path) -> dict[str, Any]:
    """The example assistant as a new user might set it up: a document without a ``platform``
    attribute (the contact pages) does not hold for every app."""
    block = example_block(index_path=str(index_path))
    block["metadata_fields"] = [
        {key: value for key, value in field.items() if key != "absent_means_all"}
        for field in block["metadata_fields"]
    ]
    return block


ANDROID_OFFLINE = "Can I use offline files on Android?"
ANDROID_ANSWER = (
    "In the Android app, tap the three dots next to a file and turn on Available offline."
)


@pytest.fixture(scope="module")
def strict_platform_store(example_index_path: Path, embedder: Any) -> Any:
    """``absent_means_all`` applies at search time, not in the index: the shared one serves."""
    return connected_store(embedder, block_without_absent_means_all(example_index_path))


async def test_a_change_of_subject_is_not_hidden_by_the_carried_platform(
    strict_platform_store: Any,
) -> None:
    latest = "how do I contact support?"
    tracker = tracker_state(("user", ANDROID_OFFLINE), ("bot", ANDROID_ANSWER), ("user", latest))

    result = await strict_platform_store.search(latest, tracker, 0.0)

    assert result.metadata["carried_filter"] is None
    assert result.metadata["carried_filter_dropped"] == 'eq("platform", "android")'
    assert any("carried from earlier turns" in note for note in result.metadata["notes"])
    assert result.results[0].metadata["source"].startswith("account/support-")


async def test_a_real_follow_up_still_carries_or_replaces_the_platform(
    strict_platform_store: Any,
) -> None:
    on_ios = "and on iOS?"
    replaced = await strict_platform_store.search(
        on_ios,
        tracker_state(("user", ANDROID_OFFLINE), ("bot", ANDROID_ANSWER), ("user", on_ios)),
        0.0,
    )
    assert replaced.metadata["extracted_filter"] == 'eq("platform", "ios")'
    assert replaced.results[0].metadata["source"] == "sync/offline-files-ios.md"

    more = "why do they not update?"
    kept = await strict_platform_store.search(
        more, tracker_state(("user", ANDROID_OFFLINE), ("bot", ANDROID_ANSWER), ("user", more)), 0.0
    )
    assert kept.metadata["carried_filter"] == 'eq("platform", "android")'
    assert kept.metadata["carried_filter_dropped"] is None
    assert kept.results[0].metadata["source"] == "sync/offline-files-android.md"


async def test_dropping_a_carried_filter_embeds_nothing_more_and_searches_once_more(
    example_index_path: Path, embedder: Any, monkeypatch: pytest.MonkeyPatch
) -> None:
    # The shared index, built with this client, whose texts are counted from here on.
    embedded: list[int] = []
    embed = embedder.embed

    def counted_embed(texts: list[str]) -> Any:
        embedded.append(len(texts))
        return embed(texts)

    monkeypatch.setattr(embedder, "embed", counted_embed)
    block = block_without_absent_means_all(example_index_path)
    # the client embeds the queries, so it counts them (not the ONNX export, once checked)
    store = connected_store(embedder, block | {"query_embedder": "rasa"})
    engine = store.engine
    searches: list[Any] = []
    run = engine._run

    def counted_run(*args: Any, **kwargs: Any) -> Any:
        searches.append(args[1])
        return run(*args, **kwargs)

    engine._run = counted_run  # type: ignore[method-assign]
    latest = "how do I contact support?"
    turns = (("user", ANDROID_OFFLINE), ("bot", ANDROID_ANSWER), ("user", latest))
    engine.clear_query_cache()
    before = sum(embedded)

    result = await store.search(latest, tracker_state(*turns), 0.0)

    texts = {part["text"] for part in result.metadata["query_texts"]}
    assert sum(embedded) - before == len(texts)
    assert len(searches) == 2
    assert searches[0].filters.carried is not None and searches[1].filters.carried is None


def test_a_follow_up_reads_no_message_twice(monkeypatch: pytest.MonkeyPatch) -> None:
    """The carried filter reads the earlier user turns again on every follow-up, and the
    latest message is read for its conditions and for its search text: each message's
    conditions are read once, then kept (about a millisecond a search)."""
    from rasa_context_retrieval.self_query.dates import DatePhrases

    read: list[str] = []
    find = DatePhrases.find

    def counted(self: DatePhrases, text: str, *args: Any, **kwargs: Any) -> Any:
        read.append(text)
        return find(self, text, *args, **kwargs)

    monkeypatch.setattr(DatePhrases, "find", counted)
    block = {key: value for key, value in example_block().items() if key != "type"}
    known: dict[str, frozenset[str]] = {}  # the index's values, the same while it is served
    searches = Planner(StoreConfig.from_kwargs(block), lambda: known)
    turns = [GERMANY, EU_REFUND, "and how long does it take?", "Usually 5 days.", "and on iOS?"]
    first = searches.plan_here(conversation(*turns[:3]))
    again = searches.plan_here(conversation(*turns))

    assert read.count(GERMANY) == read.count("and on iOS?") == 1
    assert len(read) == len(set(read))
    assert to_filter_syntax(first.filters.carried) == 'eq("region", "eu")'
    assert to_filter_syntax(again.filters.carried) == 'eq("region", "eu")'


def test_a_kept_reading_is_not_changed_by_what_a_caller_does_with_it() -> None:
    rules = planner()._rule_constructor({})
    said = rules.constraints(GERMANY)
    said.clear()

    assert [c.value for c in rules.constraints(GERMANY)] == ["eu"]


def test_whether_a_message_follows_up_is_decided_once(monkeypatch: pytest.MonkeyPatch) -> None:
    """The rewrite, the context model and the carried filters each ask about the latest
    message, and again about the earlier user turns on every later search: the answer depends
    on the message alone and is kept."""
    from rasa_context_retrieval import follow_up

    read: list[str] = []
    leans = follow_up._leans_on_earlier_turns  # read once per stage that asks

    def counted(message: str) -> bool:
        read.append(message)
        return leans(message)

    monkeypatch.setattr(follow_up, "_leans_on_earlier_turns", counted)
    follow_up.follows_up.cache_clear()
    searches = planner()
    turns = [GERMANY, EU_REFUND, "and how long does it take?", "Usually 5 days.", "and on iOS?"]
    for latest in (1, 3, 5):  # the user's turns, each searched when it was said
        searches.plan_here(conversation(*turns[:latest]))
    follow_up.follows_up.cache_clear()

    assert read.count(GERMANY) <= len(follow_up.Stage)
    assert read.count("and how long does it take?") <= len(follow_up.Stage)
