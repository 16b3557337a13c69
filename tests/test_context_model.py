"""Follow-ups lean on their conversation through the query vectors, through ContextRetrieval.

Real example knowledge base (docs/), real all-MiniLM-L6-v2 embeddings, default configuration of
the example assistant's endpoints.yml (context model ``words_and_turns``).
"""

from __future__ import annotations

import itertools
from pathlib import Path
from typing import Any

import pytest
import yaml
from rasa.utils.endpoints import EndpointConfig

from rasa_context_retrieval.conversation import Conversation, Turn
from rasa_context_retrieval.rewrite.context import (
    ContextModel,
    QueryText,
    query_views,
    weighted_query_texts,
)
from rasa_context_retrieval.rewrite.heuristic import (
    RewriteMode,
    standalone_query,
    without_scope_statements,
)
from rasa_context_retrieval.store import ContextRetrieval
from tests.store_support import connected_store, tracker_state

REPO_ROOT = Path(__file__).resolve().parent.parent


@pytest.fixture(scope="module")
def index_path(example_index_path: Path) -> Path:
    """The run's one index of the example: a second store on it loads it instead of embedding."""
    return example_index_path


def open_store(embedder: Any, index_path: Path, **overrides: Any) -> ContextRetrieval:
    block = dict(yaml.safe_load((REPO_ROOT / "endpoints.yml").read_text())["vector_store"])
    block.update(docs=str(REPO_ROOT / "docs"), index_path=str(index_path), **overrides)
    store = connected_store(embedder, EndpointConfig(**block))
    return store


@pytest.fixture(scope="module")
def store(embedder: Any, index_path: Path) -> ContextRetrieval:
    return open_store(embedder, index_path)


async def search(store: ContextRetrieval, *messages: str) -> Any:
    """Alternating user/bot messages, starting and ending with the user."""
    turns = zip(itertools.cycle(("user", "bot")), messages, strict=False)
    return await store.search(messages[-1], tracker_state(*turns), 0.0)


def mixed_texts(result: Any) -> list[str]:
    return [part["text"] for part in result.metadata["query_texts"]]


def view_texts(result: Any) -> list[list[str]]:
    """The texts of each fused query vector, in order."""
    views: dict[int, list[str]] = {}
    for part in result.metadata["query_texts"]:
        views.setdefault(part["view"], []).append(part["text"])
    return [views[number] for number in sorted(views)]


async def test_a_scope_statement_does_not_leak_into_the_next_query(store: ContextRetrieval):
    result = await search(
        store,
        "I live in Germany. Can I get my money back if I cancel?",
        "Yes. In the EU you get a full refund if you cancel within 14 days.",
        "and how long does it take?",
    )

    assert not any("germany" in text.lower() for text in mixed_texts(result))
    assert "germany" not in result.metadata["standalone_query"].lower()
    assert "Can I get my money back if I cancel?" in mixed_texts(result)
    assert "refunds" in result.results[0].metadata["source"]


async def test_a_repeated_ellipsis_keeps_the_topic(store: ContextRetrieval):
    result = await search(
        store,
        "How do I make files available offline?",
        "On Android, tap the three dots next to a file and turn on Available offline.",
        "and on Android?",
        "In the Android app, tap the three dots next to a file or folder.",
        "and on iOS?",
    )

    turns, words = view_texts(result)
    # The words view names the topic, never the facet the ellipsis replaces.
    assert words == [result.metadata["standalone_query"]]
    assert words[0].startswith("and on iOS? make files available offline")
    assert "android" not in words[0].lower()
    assert turns[0].startswith("and on iOS? make files available offline")
    sources = [found.metadata["source"] for found in result.results]
    assert sources[0] == "sync/offline-files-ios.md"


async def test_a_facet_swapped_after_a_standalone_question_keeps_its_subject(
    store: ContextRetrieval,
):
    result = await store.search(
        "and on Android?",
        {
            "events": [
                {"event": "user", "text": "can I use offline files?"},
                {"event": "bot", "text": "No, offline files are not available on the Free plan."},
                {"event": "user", "text": "and on Android?"},
            ],
            "slots": {"plan": "free"},
        },
        0.0,
    )

    turns, words = view_texts(result)
    assert turns[0] == words[0] == "and on Android? use offline files"
    assert result.results[0].metadata["source"] == "plans/free.md"


async def test_a_follow_up_fuses_the_message_with_its_turns_and_the_words(
    store: ContextRetrieval,
):
    result = await search(
        store,
        "Can I get my money back if I cancel?",
        "Yes. In the EU you get a full refund if you cancel within 14 days.",
        "how long does the refund take?",
    )

    assert result.metadata["query_texts"] == [
        {"text": "how long does the refund take?", "weight": 1.0, "view": 0},
        {"text": "Can I get my money back if I cancel?", "weight": 0.1, "view": 0},
        {
            "text": "Yes. In the EU you get a full refund if you cancel within 14 days.",
            "weight": 0.1,
            "view": 0,
        },
        {"text": result.metadata["standalone_query"], "weight": 1.0, "view": 1},
    ]
    assert "money" in result.metadata["standalone_query"]  # what the refund is for
    assert "refunds" in result.results[0].metadata["source"]


async def test_the_weights_of_earlier_turns_are_configuration(
    embedder: Any, index_path: Path, store: ContextRetrieval
):
    store = open_store(embedder, index_path, context_weights={"last_bot": 0.5})

    result = await search(
        store,
        "Can I get my money back if I cancel?",
        "Yes. In the EU you get a full refund if you cancel within 14 days.",
        "how long does the refund take?",
    )

    weights = [(part["text"][:4], part["weight"]) for part in result.metadata["query_texts"]]
    assert weights[:3] == [("how ", 1.0), ("Can ", 0.1), ("Yes.", 0.5)]


async def test_a_standalone_question_is_searched_alone(store: ContextRetrieval):
    question = "How do I turn on two-factor authentication?"
    result = await search(store, "Can I use offline files?", "Yes, on Plus.", question)

    assert result.metadata["query_texts"] == [{"text": question, "weight": 1.0, "view": 0}]


async def test_the_words_model_stays_selectable(
    embedder: Any, index_path: Path, store: ContextRetrieval
):
    store = open_store(embedder, index_path, context_model="words")

    result = await search(store, "Can I use offline files?", "Yes, on Plus.", "and on iOS?")

    assert mixed_texts(result) == [result.metadata["query"]]
    assert result.metadata["query"].startswith("and on iOS?")


def test_the_previous_question_outweighs_the_bot_answer_and_the_latest_leads_all() -> None:
    conversation = Conversation(
        turns=(
            Turn("user", "What does the Premium plan include?"),
            Turn("bot", "Unlimited data and EU roaming."),
            Turn("user", "Does it include roaming?"),
            Turn("bot", "Yes, EU roaming is included."),
            Turn("user", "And what is the cancellation period?"),
        )
    )

    texts = weighted_query_texts(conversation)

    weights = {part.text: part.weight for part in texts}
    assert texts[0].text == "And what is the cancellation period?"
    assert texts[0].weight == max(weights.values())
    assert weights["Does it include roaming?"] > weights["Yes, EU roaming is included."]
    assert "What does the Premium plan include?" in weights


LONG_CHAIN = Conversation(
    turns=(
        Turn("user", "What does the Premium plan include?"),
        Turn("bot", "Unlimited data and EU roaming."),
        Turn("user", "Does it include roaming?"),
        Turn("bot", "Yes, EU roaming is included."),
        Turn("user", "And what is the cancellation period?"),
    )
)


def test_the_views_embed_no_more_texts_than_one_mixed_vector_did() -> None:
    words = standalone_query(LONG_CHAIN, RewriteMode.CHAINED_WORDS)

    views = query_views(LONG_CHAIN, words)
    old = weighted_query_texts(LONG_CHAIN)

    assert views == (
        (
            QueryText("And what is the cancellation period?", 1.0),
            QueryText("Does it include roaming?", 0.1),
            QueryText("Yes, EU roaming is included.", 0.1),
        ),
        (QueryText(words, 1.0),),
    )
    assert "Premium" in words  # the topic reaches the search through the words view
    assert len({part.text for view in views for part in view}) <= len(old)


def test_text_the_self_query_changed_leads_the_turns_instead_of_the_message() -> None:
    views = query_views(LONG_CHAIN, "cancellation period", message_searched=False)

    assert [view[0].text for view in views] == ["cancellation period", "cancellation period"]


def test_the_single_vector_models_stay_selectable() -> None:
    (mixed,) = query_views(LONG_CHAIN, "words", ContextModel.WEIGHTED_TURNS)
    assert [part.text for part in mixed] == [part.text for part in weighted_query_texts(LONG_CHAIN)]
    assert query_views(LONG_CHAIN, "words", ContextModel.WORDS) == ((QueryText("words", 1.0),),)


def test_only_short_statements_about_the_user_count_as_scope() -> None:
    assert without_scope_statements("I live in Germany. Can I get a refund?") == (
        "Can I get a refund?"
    )
    assert without_scope_statements("I'm on the Free plan.") == ""
    kept = "I remember Glasgow hosting COP26 last year, but I was out of the loop. What was it?"
    assert without_scope_statements(kept) == kept


@pytest.mark.parametrize(
    "request_", ["i want to cancel", "we want to leave kestrel", "I would like a refund"]
)
def test_what_the_user_wants_is_subject_not_scope(request_: str) -> None:
    assert without_scope_statements(request_) == request_
    conversation = Conversation(
        turns=(
            Turn("user", request_),
            Turn("bot", "Is that for your order or your membership?"),
            Turn("user", "the membership"),
        )
    )
    carried = standalone_query(conversation).removeprefix("the membership").split()
    assert carried and set(carried) <= set(request_.split())


# A bank help centre whose bot answers from its documents and asks clarifying questions
# (the knowledge base of bench/grounded.py).
BANK_DOCS = REPO_ROOT / "bench" / "data" / "grounded" / "docs"


@pytest.fixture(scope="module")
def bank(embedder: Any, tmp_path_factory: pytest.TempPathFactory) -> ContextRetrieval:
    index = tmp_path_factory.mktemp("bank-index")
    store = connected_store(embedder, EndpointConfig(docs=str(BANK_DOCS), index_path=str(index)))
    return store


async def test_after_the_bot_asks_which_card_the_gold_one_finds_the_gold_cards_fees(
    bank: ContextRetrieval,
):
    result = await search(
        bank,
        "What's the annual fee on my credit card?",
        "Which card do you have: Classic, Gold or Platinum?",
        "the gold one",
    )

    assert result.results[0].metadata["source"] == "cards/gold-card-fees.md"


async def test_an_answer_to_the_bots_question_qualifies_the_question_before_it(
    bank: ContextRetrieval,
):
    result = await search(
        bank,
        "How do I get a statement?",
        "Is it for your current account or your credit card?",
        "credit card",
    )

    turns, _ = view_texts(result)
    assert turns[0] == "credit card statement"  # the answer, then what it answers
    assert result.results[0].metadata["source"] == "digital/statements.md"


def test_a_short_follow_up_to_an_answer_is_not_read_as_an_answer_to_a_question() -> None:
    conversation = Conversation(
        turns=(
            Turn("user", "How do I get a statement?"),
            Turn("bot", "Download statements as PDF in the app under Account > Statements."),
            Turn("user", "paper ones?"),
        )
    )

    assert weighted_query_texts(conversation)[0].text == "paper ones? statement"  # elliptical
    conversation = Conversation(turns=(*conversation.turns[:2], Turn("user", "paper copies?")))
    assert weighted_query_texts(conversation)[0].text == "paper copies?"  # names two things


async def test_a_facet_swap_asks_the_question_before_about_the_thing_it_names(
    bank: ContextRetrieval,
):
    result = await search(
        bank,
        "What does a personal overdraft cost?",
        "The arranged overdraft on a personal account costs 39.9% EAR variable.",
        "and for the business account?",
    )

    turns, searched = view_texts(result)
    assert turns[:2] == [
        "and for the business account? What does a business overdraft cost?",
        "What does a business overdraft cost?",
    ]
    assert "personal" not in searched[0].lower()  # the facet the user moved away from
    assert result.results[0].metadata["source"] == "accounts/business-overdraft.md"


@pytest.fixture(scope="module")
def bank_with_prior(embedder: Any, bank: ContextRetrieval) -> ContextRetrieval:
    config = bank.engine.config
    endpoint = EndpointConfig(
        docs=str(BANK_DOCS),
        index_path=str(config.index_path),
        context_weights={"previous_answer": 1.0},
    )
    return connected_store(embedder, endpoint)


async def test_the_previous_answers_document_is_shown_when_it_weighs_in(
    bank: ContextRetrieval, bank_with_prior: ContextRetrieval
):
    messages = (
        "How do I report a lost card?",
        "Freeze the card straight away in the app under Cards > Freeze card, then call us on "
        "0800 555 0199, day or night. We cancel the card and send a replacement.",
        "will I get a new one?",
    )

    default = await search(bank, *messages)
    weighed = await search(bank_with_prior, *messages)

    assert default.metadata["previous_answer"] is None  # off unless configured
    bot_weights = [p["weight"] for p in default.metadata["query_texts"] if p["text"] == messages[1]]
    assert bot_weights == [0.2]  # quoted from a document: it weighs more than the default 0.1
    assert any("quotes cards/lost-or-stolen-card.md" in note for note in default.metadata["notes"])
    prior = weighed.metadata["previous_answer"]
    assert prior["source"] == "cards/lost-or-stolen-card.md"
    assert prior["weight"] == 1.0 and prior["match"] >= 0.6
    assert weighed.results[0].metadata["source"] == "cards/lost-or-stolen-card.md"


async def test_a_follow_up_that_swaps_a_facet_of_the_answer_asks_the_answer_again(
    store: ContextRetrieval,
):
    """The question before ("Can I get a refund?") does not name the facet; the answer does
    ("yearly subscriptions"): the follow-up restates that answer about the thing it names."""
    result = await search(
        store,
        "Can I get a refund?",
        "In the US, yearly subscriptions have a 30-day money-back guarantee for the first year "
        "only.",
        "what about monthly subscriptions?",
    )

    turns = view_texts(result)[0]
    assert turns[0] == (
        "what about monthly subscriptions? In the US, monthly subscriptions have a 30-day "
        "money-back guarantee for the first year only."
    )
    assert result.results[0].metadata["source"] == "billing/refunds-us.md"
    assert any("restated" in note for note in result.metadata["notes"])


@pytest.mark.parametrize("greeting", ["hello", "hi there", "good morning"])
def test_a_greeting_gives_the_question_after_it_no_context(greeting: str) -> None:
    conversation = Conversation(
        turns=(
            Turn("user", greeting),
            Turn("bot", "Hi, I'm the assistant. How can I help?"),
            Turn("user", "is there any grant that can help clear my gas and electric debt?"),
        )
    )

    latest = conversation.latest_user_text
    assert standalone_query(conversation) == latest
    assert query_views(conversation, latest) == ((QueryText(latest, 1.0),),)


@pytest.mark.parametrize(
    "switch",
    [
        "my dad is on a home dialysis machine, how does he sign up for the priority register?",
        "how much is it to ring my mum in poland from home",
        "is there a fee to close my savings account early?",
        "ok. separate thing, how do i book a smart meter install",
        "also how many bags can i check on a classic fare",
        "got it. what order do you board in, im on a flex ticket",
    ],
)
def test_a_new_question_that_names_its_own_subject_is_searched_alone(switch: str) -> None:
    """Its pronoun points at something it names itself ("my dad ... he"), or at nothing ("is
    it to ring", "is there"): no earlier words or turns join it."""
    conversation = Conversation(
        turns=(
            Turn("user", "do i get compensation for long power cuts?"),
            Turn("bot", "If your power is off for more than 12 hours you can claim £95."),
            Turn("user", switch),
        )
    )

    assert standalone_query(conversation) == switch
    assert query_views(conversation, switch) == ((QueryText(switch, 1.0),),)


def test_an_answer_to_the_bots_clarifying_question_is_searched_with_the_question() -> None:
    """ "home, storm knocked the fence down" names four things, yet it answers "Is the claim for
    your home or your car?": the user's question before it leads the turns view with it."""
    question = "how long have i got to make a claim"
    answer = "home, storm knocked the fence down"
    conversation = Conversation(
        turns=(
            Turn("user", question),
            Turn("bot", "Is the claim for your home or your car?"),
            Turn("user", answer),
        )
    )

    turns, words = query_views(conversation, standalone_query(conversation))
    assert turns[0].text.startswith(answer) and "claim" in turns[0].text.split()
    assert QueryText(question, 0.1) in turns
    assert QueryText("Is the claim for your home or your car?", 0.5) in turns
    assert words[0].text.startswith(answer) and "claim" in words[0].text.split()


def test_a_question_after_a_closing_offer_is_searched_alone() -> None:
    latest = "when do u send the renewal quote out"
    conversation = Conversation(
        turns=(
            Turn("user", "can i remove contents cover"),
            Turn("bot", "Yes, you can. Is there anything else I can help with?"),
            Turn("user", latest),
        )
    )

    assert query_views(conversation, standalone_query(conversation)) == ((QueryText(latest, 1.0),),)


def test_a_follow_up_after_an_offer_of_more_help_leads_its_turns_as_typed() -> None:
    """An offer ("Is there anything else I can help with?") asks nothing about the question
    before: "can my wife complain for me" after it is led by itself, not by the earlier
    subject's words ("repair take"), which searched it as the previous question."""
    latest = "can my wife complain for me"
    offer = "Repairs usually take 5 to 10 working days. Is there anything else I can help with?"
    conversation = Conversation(
        turns=(
            Turn("user", "how long does a repair take"),
            Turn("bot", offer),
            Turn("user", latest),
        )
    )

    turns, _ = query_views(conversation, standalone_query(conversation))
    assert turns[0] == QueryText(latest, 1.0)
    assert QueryText(offer, 0.1) in turns


async def test_an_answer_to_the_bots_question_is_explained_in_the_notes(store: ContextRetrieval):
    """The console shows why the bot's question weighs more: a note names it."""
    question = "Is that on Android or on iOS?"
    result = await search(store, "How do I use offline files?", question, "android")

    bot_weights = [p["weight"] for p in result.metadata["query_texts"] if p["text"] == question]
    assert bot_weights == [0.5]
    assert any(
        "answers the bot's question" in note and question in note
        for note in result.metadata["notes"]
    )
