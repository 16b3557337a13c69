"""Whatever Rasa hands ``search()``, it answers: no exception, and never outside the slot scope.

``tracker_state`` comes from a tracker store that other code (custom actions, channels, older
Rasa versions) writes to, so any part may be missing, mistyped or huge. Slots hold whatever an
action set. These properties run the real store (real embedder, real index) over random states.
"""

from __future__ import annotations

import math
from pathlib import Path
from typing import Any

import pytest
from hypothesis import HealthCheck, given, settings
from hypothesis import strategies as st
from rasa.core.information_retrieval import InformationRetrievalException
from rasa.utils.endpoints import EndpointConfig
from structlog.testing import capture_logs

from rasa_context_retrieval.conversation import (
    MAX_CONVERSATION_CHARS,
    MAX_TURN_CHARS,
    Conversation,
    HistoryCaps,
)
from rasa_context_retrieval.self_query.glosses import GlossPhrases
from rasa_context_retrieval.self_query.limits import LimitPhrases
from rasa_context_retrieval.self_query.rules import MAX_SCANNED_CHARS
from rasa_context_retrieval.store import ContextRetrieval
from tests.store_support import connected_store

PLANS = ("free", "plus", "premium", "business")
REGIONS = ("eu", "us", "apac")
PROFILES = settings(
    deadline=None,
    suppress_health_check=[HealthCheck.function_scoped_fixture, HealthCheck.too_slow],
)


def write_docs(folder: Path) -> Path:
    docs = folder / "docs"
    docs.mkdir()
    for plan in PLANS:
        for region in REGIONS:
            (docs / f"{plan}-{region}.md").write_text(
                f"---\nplan: [{plan}]\nregion: [{region}]\nprice_per_month: 9.99\n---\n"
                f"Q: What does {plan} include in {region}?\nA: Storage and refunds for {plan}.\n",
                encoding="utf-8",
            )
    (docs / "everyone.md").write_text(
        "---\nplan: [free, plus, premium, business]\nregion: [eu, us, apac]\n---\n"
        "Q: How do I reset my password?\nA: Use the reset link.\n",
        encoding="utf-8",
    )
    return docs


@pytest.fixture(scope="module")
def store(tmp_path_factory: pytest.TempPathFactory, embedder: Any) -> ContextRetrieval:
    docs = write_docs(tmp_path_factory.mktemp("kb"))
    store = connected_store(
        embedder,
        EndpointConfig(
            docs=str(docs),
            index_path=str(docs.parent / "index"),
            slot_filters={"plan": "plan", "region": "region", "tier": "plan"},
            metadata_fields=[
                {"name": "plan", "type": "list[string]", "values": list(PLANS)},
                {"name": "region", "type": "list[string]", "values": list(REGIONS)},
                {"name": "price_per_month", "type": "float"},
            ],
            refresh_seconds=0,
        ),
    )
    return store


json_scalars = st.one_of(
    st.none(),
    st.booleans(),
    st.integers(min_value=-(2**70), max_value=2**70),
    st.floats(allow_nan=True, allow_infinity=True),
    st.text(max_size=30),
    st.sampled_from([*PLANS, *REGIONS, "PREMIUM", " eu ", "", "  ", "2024-03-01", "9.99"]),
)
json_values = st.recursive(
    json_scalars,
    lambda inner: (
        st.lists(inner, max_size=4) | st.dictionaries(st.text(max_size=8), inner, max_size=3)
    ),
    max_leaves=8,
)
texts = st.one_of(
    st.text(max_size=200),
    st.sampled_from(["refund", "how much storage on premium in the eu?", "and on android?"]),
)
events = st.one_of(
    st.fixed_dictionaries(
        {"event": st.sampled_from(["user", "bot"]), "text": st.one_of(texts, json_values)}
    ),
    st.dictionaries(st.sampled_from(["event", "text", "name", "value"]), json_values, max_size=4),
    json_values,
)
tracker_states = st.one_of(
    json_values,
    st.fixed_dictionaries(
        {},
        optional={
            "events": st.one_of(st.lists(events, max_size=8), json_values),
            "slots": st.one_of(st.dictionaries(st.text(max_size=8), json_values), json_values),
            "latest_message": st.one_of(st.fixed_dictionaries({"text": texts}), json_values),
            "sender_id": json_values,
        },
    ),
)


def allowed(value: Any, universe: tuple[str, ...]) -> set[str] | None:
    """Values a slot lets through, None when it does not restrict (unset)."""
    if value is None or (isinstance(value, str) and not value.strip()):
        return None
    collection = isinstance(value, list | tuple | set | frozenset)
    items = list(value) if collection else [value]
    items = [
        item for item in items if not (item is None or (isinstance(item, str) and not item.strip()))
    ]
    if collection and not items:
        return None
    wanted = {str(item).strip().casefold() for item in items if isinstance(item, str)}
    return wanted & set(universe)


def assert_within_slot_scope(result: Any, slots: Any) -> None:
    if not isinstance(slots, dict):
        return
    for slot, attribute, universe in (
        ("plan", "plan", PLANS),
        ("tier", "plan", PLANS),
        ("region", "region", REGIONS),
    ):
        wanted = allowed(slots.get(slot), universe)
        if wanted is None:
            continue
        for found in result.results:
            assert set(found.metadata[attribute]) & wanted, (slot, slots.get(slot), found.metadata)


@PROFILES
@given(state=tracker_states, query=st.one_of(st.none(), texts))
async def test_any_tracker_state_gives_results_and_never_raises(
    store: ContextRetrieval, state: Any, query: Any
):
    result = await store.search(query, state, 0.0)
    assert isinstance(result.results, list)
    assert all(0.0 <= found.score <= 1.0 for found in result.results)
    assert_within_slot_scope(result, state.get("slots") if isinstance(state, dict) else None)


slot_values = st.one_of(
    json_values,
    st.lists(st.sampled_from([*PLANS, *REGIONS, "PLUS", None, ""]), max_size=4),
    st.sets(st.sampled_from(PLANS), max_size=3),
    st.tuples(st.sampled_from(PLANS), json_scalars),
)


@PROFILES
@given(plan=slot_values, region=slot_values, tier=slot_values, text=texts)
async def test_slot_values_of_every_type_never_widen_the_scope(
    store: ContextRetrieval, plan: Any, region: Any, tier: Any, text: str
):
    slots = {"plan": plan, "region": region, "tier": tier}
    state = {"events": [{"event": "user", "text": text or "storage"}], "slots": slots}
    result = await store.search("", state, 0.0)
    assert_within_slot_scope(result, slots)


@pytest.mark.parametrize(
    "value", [math.nan, math.inf, -math.inf, 2**80, [["premium"]], [[]], {}, 'it\'s "premium"']
)
async def test_unusable_slot_values_restrict_to_nothing_instead_of_failing(
    store: ContextRetrieval, value: Any
):
    state = {"events": [{"event": "user", "text": "storage and refunds"}], "slots": {"plan": value}}
    result = await store.search("", state, 0.0)
    assert result.results == []


async def test_a_huge_message_is_answered_and_only_its_start_is_scanned_for_filters(
    store: ContextRetrieval, monkeypatch: pytest.MonkeyPatch
):
    """The rules read phrases with many patterns each; a pasted 1.1 MB log must cost them no
    more than an ordinary message. (Its wall time is measured by bench/huge_message.py.)"""
    scanned: list[int] = []
    for phrases in (GlossPhrases, LimitPhrases):
        monkeypatch.setattr(phrases, "find", scanning(phrases.find, scanned))
    message = "how do I get a refund on premium in the eu? " * 25_000  # ~1.1 MB
    result = await store.search("", {"events": [{"event": "user", "text": message}]}, 0.0)
    assert result.results
    assert scanned, "the self-query rules read the message"
    assert max(scanned) <= MAX_SCANNED_CHARS


def scanning(find: Any, scanned: list[int]) -> Any:
    """``find`` of a phrase reader, noting the length of each text it is given."""

    def noted(self: Any, text: str, *args: Any, **kwargs: Any) -> Any:
        scanned.append(len(text))
        return find(self, text, *args, **kwargs)

    return noted


@pytest.mark.parametrize("threshold", [math.nan, "nan", -math.nan])
async def test_a_nan_threshold_is_a_clear_error_not_silence(
    store: ContextRetrieval, threshold: Any
):
    state = {"events": [{"event": "user", "text": "storage and refunds"}]}
    with capture_logs() as logs, pytest.raises(InformationRetrievalException) as raised:
        await store.search("", state, threshold)
    assert isinstance(raised.value.__cause__, ValueError)
    assert "NaN" in str(raised.value.__cause__)
    assert any(log["event"] == "context_retrieval.search.bad_threshold" for log in logs)
    assert (await store.search("", state, 0.0)).results, "a usable threshold still answers"


LONE_SURROGATE = "\ud800"


@pytest.mark.parametrize(
    "state",
    [
        {"events": [{"event": "user", "text": f"refund {LONE_SURROGATE} premium eu"}]},
        {
            "events": [
                {"event": "user", "text": f"what does premium cost{LONE_SURROGATE}"},
                {"event": "bot", "text": f"Premium {LONE_SURROGATE} costs 9.99."},
                {"event": "user", "text": "and refunds?"},
            ]
        },
        {
            "events": [{"event": "user", "text": "refund"}],
            "slots": {"plan": f"premium{LONE_SURROGATE}", f"x{LONE_SURROGATE}": [LONE_SURROGATE]},
        },
        {
            "events": [{"event": "user", "text": "refund"}],
            "latest_message": {"text": "refund", "metadata": {LONE_SURROGATE: LONE_SURROGATE}},
        },
    ],
    ids=["latest turn", "earlier turns", "slots", "channel metadata"],
)
async def test_a_lone_surrogate_anywhere_is_replaced_not_raised(
    store: ContextRetrieval, state: dict[str, Any]
):
    """``"\\ud800"`` is valid JSON but no valid text: the tokenizer used to refuse it."""
    result = await store.search("", state, 0.0)
    assert isinstance(result.results, list)
    assert LONE_SURROGATE not in result.metadata["query"]
    assert LONE_SURROGATE not in str(result.metadata.get("filter"))


class RecordingEmbedder:
    """Rasa's embedding client, recording every text it is asked to embed."""

    def __init__(self, client: Any) -> None:
        self._client = client
        self.texts: list[str] = []

    def __getattr__(self, name: str) -> Any:
        return getattr(self._client, name)

    def embed(self, texts: list[str]) -> Any:
        self.texts.extend(texts)
        return self._client.embed(texts)


async def test_twenty_one_megabyte_turns_cost_no_more_than_the_conversation_cap(
    tmp_path: Path, embedder: Any
):
    docs = write_docs(tmp_path)
    recorder = RecordingEmbedder(embedder)
    big_store = ContextRetrieval(embeddings=recorder)
    big_store.connect(
        EndpointConfig(docs=str(docs), index_path=str(tmp_path / "index"), query_embedder="rasa")
    )
    megabyte = "how do I get a refund on premium in the eu? " * 23_000
    events = [
        {"event": "user" if turn % 2 == 0 else "bot", "text": f"{turn} {megabyte}"}
        for turn in range(20)
    ]
    state = {"events": events, "latest_message": {"text": events[-2]["text"]}}
    recorder.texts.clear()

    result = await big_store.search("", state, 0.0)

    assert result.results
    conversation = Conversation.from_tracker_state(state)
    assert sum(len(turn.text) for turn in conversation.turns) <= MAX_CONVERSATION_CHARS
    assert all(len(turn.text) <= MAX_TURN_CHARS for turn in conversation.turns)
    assert recorder.texts, "the search embedded its query texts"
    assert sum(len(text) for text in recorder.texts) <= MAX_CONVERSATION_CHARS


def numbered_turns(count: int, length: int) -> dict[str, Any]:
    """A tracker state of ``count`` turns (user first), each ``turn<n> `` and filler to
    ``length`` characters, answering the last one."""
    events = [
        {"event": "user" if n % 2 == 0 else "bot", "text": f"turn{n} ".ljust(length, "x")}
        for n in range(count)
    ]
    return {"events": events, "latest_message": {"text": events[-1]["text"]}}


def test_the_history_caps_keep_the_latest_turns_within_each_cap():
    state = numbered_turns(10, 100)

    def turns(**caps: int) -> list[str]:
        read = Conversation.from_tracker_state(state, caps=HistoryCaps(**caps))
        return [turn.text.split()[0] for turn in read.turns]

    assert turns() == [f"turn{n}" for n in range(10)]
    assert turns(max_turns=3) == ["turn7", "turn8", "turn9"]
    assert turns(max_chars=250) == ["turn8", "turn9"], "two 100-character turns fit in 250"
    assert turns(max_chars=50) == ["turn9"], "the latest message is always kept"
    read = Conversation.from_tracker_state(state, caps=HistoryCaps(max_turn_chars=40))
    assert {len(turn.text) for turn in read.turns} == {40}


async def test_the_history_caps_in_the_configuration_bound_what_a_search_reads(
    tmp_path: Path, embedder: Any
):
    docs = write_docs(tmp_path)
    recorder = RecordingEmbedder(embedder)
    capped = connected_store(
        recorder,
        EndpointConfig(
            docs=str(docs),
            index_path=str(tmp_path / "index"),
            query_embedder="rasa",
            refresh_seconds=0,
            history={"max_turn_chars": 60, "max_turns": 2, "max_chars": 1000},
        ),
    )
    state = numbered_turns(9, 400)
    state["events"][-1]["text"] = "turn8 how do I get a refund on premium? ".ljust(400, "x")
    recorder.texts.clear()

    result = await capped.search("", state, 0.0)

    assert result.results
    assert recorder.texts, "the search embedded its query texts"
    assert all(len(text) <= 60 for text in recorder.texts)
    read_turns = {word for text in recorder.texts for word in text.split() if word[:4] == "turn"}
    assert read_turns <= {"turn7", "turn8"}, "only the two latest turns were read"


def test_slots_and_channel_metadata_reach_the_stages_encodable():
    """Slots become filters and metadata entitlements; both may end in a log line or a
    request body, which must be able to encode them."""
    state = {
        "events": [{"event": "user", "text": "refund"}],
        "slots": {"plan": [f"premium{LONE_SURROGATE}"]},
        "latest_message": {"text": "refund", "metadata": {"plan": f"free{LONE_SURROGATE}"}},
    }
    conversation = Conversation.from_tracker_state(state)
    assert conversation.slots == {"plan": ["premium\ufffd"]}
    assert conversation.channel.message == {"plan": "free\ufffd"}
