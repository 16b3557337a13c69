"""A follow-up becomes a query that stands alone; a standalone question is left as typed."""

from __future__ import annotations

from hypothesis import given
from hypothesis import strategies as st

from rasa_context_retrieval.conversation import Conversation, Turn
from rasa_context_retrieval.retrieve.lexical import LexicalIndex
from rasa_context_retrieval.rewrite.heuristic import (
    MAX_BOT_WORDS,
    MAX_CARRIED_WORDS,
    RewriteMode,
    looks_like_follow_up,
    standalone_query,
    swapped_facets,
    swapped_question,
)

PLAN_ANSWER = (
    "The Premium plan includes unlimited data, EU roaming and a streaming bundle with films, "
    "series, sport, music, podcasts and audiobooks; the bundle renews every month automatically."
)


def chat(*messages: str) -> Conversation:
    """Alternating user/bot messages, starting with the user."""
    roles = ("user", "bot")
    return Conversation(
        turns=tuple(Turn(roles[i % 2], text) for i, text in enumerate(messages))  # type: ignore[arg-type]
    )


def words(text: str) -> set[str]:
    return {word.strip("?.,!").lower() for word in text.split()}


def test_follow_up_about_it_carries_the_topic_of_the_earlier_turn() -> None:
    query = standalone_query(
        chat("What does the Premium plan include?", PLAN_ANSWER, "How much does it cost?")
    )

    assert query.startswith("How much does it cost?")
    assert {"premium", "plan"} <= words(query)


CHAIN = chat(
    "What does the Premium plan include?",
    PLAN_ANSWER,
    "Does it include roaming?",
    "Yes, EU roaming is included.",
    "And what is the cancellation period?",
)


def test_chained_mode_keeps_the_plan_discussed_two_turns_ago() -> None:
    query = standalone_query(CHAIN, RewriteMode.CHAINED_AND_BOT_WORDS)

    assert {"premium", "plan", "roaming"} <= words(query)


def test_the_default_carries_the_previous_question() -> None:
    assert "roaming" in words(standalone_query(CHAIN))


def test_elliptical_follow_up_carries_the_subject() -> None:
    query = standalone_query(
        chat("How do I install the banking app on iOS?", "Open the App Store ...", "and Android?")
    )

    assert {"install", "banking", "app"} <= words(query)


def test_a_facet_swapped_twice_keeps_the_subject_but_not_the_replaced_facet() -> None:
    offline = ("How do I make files available offline?", "Tap the three dots.")
    swapped = chat(*offline, "and on Android?", "In the Android app ...", "and on iOS?")
    priced = chat(*offline, "and on Android?", "In the Android app ...", "is it free there?")

    assert words(standalone_query(swapped, RewriteMode.CHAINED_WORDS)) == words(
        "and on iOS? make files available offline"
    )
    assert "android" in words(standalone_query(priced, RewriteMode.CHAINED_WORDS))


OVERDRAFT = (
    "What does a personal overdraft cost?",
    "The arranged overdraft on a personal account costs 39.9% EAR variable.",
)


def test_a_facet_swap_drops_the_facet_it_replaces() -> None:
    query = standalone_query(chat(*OVERDRAFT, "and for the business account?"))

    assert words(query) == words("and for the business account? overdraft cost")


def test_a_swap_replaces_what_an_earlier_text_names_beside_the_same_word() -> None:
    swap = "what about business accounts?"

    assert swapped_facets(swap, [OVERDRAFT[1]]) == {"personal": "business"}
    assert swapped_question(swap, OVERDRAFT[0], [OVERDRAFT[1]]) == (
        "What does a business overdraft cost?"
    )
    # Not a swap: no swap opening, or nothing earlier beside the same word.
    assert swapped_facets("is a business account cheaper?", [OVERDRAFT[1]]) == {}
    assert swapped_question("and for the business loan?", OVERDRAFT[0], [OVERDRAFT[1]]) is None
    # The swap names both: nothing is replaced.
    assert swapped_facets("and a personal business account?", [OVERDRAFT[1]]) == {}


def test_a_longer_message_that_opens_with_and_is_no_swap() -> None:
    """It asks something new; a word pair it shares with the question before is chance
    ("connect (ticket" and "cost? (ticket")."""
    earlier = "How much does the premium plan cost? (ticket 7)"
    assert swapped_facets("and how many devices can I connect? (ticket 5)", [earlier]) == {}
    assert swapped_facets("and the basic plan?", [earlier]) == {"premium": "basic"}


def test_a_shared_number_is_no_facet() -> None:
    """ "files 7" and "android 7" share a number, not a word that both modify."""
    assert swapped_facets("and on android 7?", ["How do I enable offline files 7?"]) == {}
    assert swapped_question("and on Android 14?", "How do I install it on iOS 14?", []) is None


def test_standalone_question_is_left_alone() -> None:
    message = "How do I reset the password of my home router?"

    assert standalone_query(chat("What does the Premium plan include?", PLAN_ANSWER, message)) == (
        message
    )


def test_first_message_is_left_alone() -> None:
    assert standalone_query(chat("How much does it cost?")) == "How much does it cost?"


def test_bot_text_does_not_flood_the_query() -> None:
    query = standalone_query(
        chat("What does the Premium plan include?", PLAN_ANSWER, "How much does it cost?"),
        RewriteMode.CHAINED_AND_BOT_WORDS,
    )

    bot_only_words = words(PLAN_ANSWER) - words("What does the Premium plan include?")
    assert len(words(query) & bot_only_words) <= MAX_BOT_WORDS
    assert "bundle" in words(query)  # the word the answer repeats: its subject


def test_bot_text_is_ignored_when_asked_to() -> None:
    query = standalone_query(
        chat("What does the Premium plan include?", PLAN_ANSWER, "How much does it cost?"),
        RewriteMode.CHAINED_WORDS,
    )

    assert not words(query) & (words(PLAN_ANSWER) - words("What does the Premium plan include?"))


def test_long_history_is_capped() -> None:
    history = [f"Question about topic{i} subject{i} detail{i}?" for i in range(20)]
    messages: list[str] = []
    for question in history:
        messages += [question, "An answer."]
    follow_up = "What about it?"
    query = standalone_query(chat(*messages, follow_up))

    assert len(query.split()) <= len(follow_up.split()) + MAX_CARRIED_WORDS + MAX_BOT_WORDS


def test_empty_and_bot_only_conversations_give_an_empty_query() -> None:
    assert standalone_query(Conversation()) == ""
    assert standalone_query(Conversation(turns=(Turn("bot", "Hi! How can I help?"),))) == ""


def test_follow_up_detection() -> None:
    assert looks_like_follow_up("How deadly is it?")
    assert looks_like_follow_up("and for Android?")
    assert looks_like_follow_up("Give me some examples.")
    assert not looks_like_follow_up("How do I build a cheap driveway?")


def test_latest_mode_ignores_history() -> None:
    conversation = chat("What does the Premium plan include?", PLAN_ANSWER, "How much is it?")

    assert standalone_query(conversation, RewriteMode.LATEST) == "How much is it?"


messages = st.lists(st.tuples(st.sampled_from(["user", "bot"]), st.text(max_size=80)), max_size=8)


@given(messages=messages, mode=st.sampled_from(list(RewriteMode)))
def test_never_raises_and_always_keeps_the_users_own_words(
    messages: list[tuple[str, str]], mode: RewriteMode
) -> None:
    conversation = Conversation(turns=tuple(Turn(role, text) for role, text in messages))  # type: ignore[arg-type]

    query = standalone_query(conversation, mode)

    assert isinstance(query, str)
    assert query.startswith(conversation.latest_user_text)


BANK_CHUNKS = [
    "Using your current account abroad: card payments abroad cost 2.75% of the amount.",
    "Current account fees: the personal current account costs nothing to use in the UK.",
    "Credit card fees: use your credit card abroad without a foreign transaction fee.",
    "Cost of a personal loan: use our calculator to see what the loan would cost.",
    "Savings accounts: the easy access account pays interest monthly; use it as you like.",
]


def test_a_follow_up_carries_the_words_the_knowledge_base_finds_most_distinctive() -> None:
    rarity = LexicalIndex.build(BANK_CHUNKS).rarity
    conversation = chat(
        "What does it cost to use my current account abroad?",
        "Card payments abroad cost 2.75% of the amount.",
        "and for the credit card?",
    )

    without = standalone_query(conversation)
    query = standalone_query(conversation, rarity=rarity)

    assert "abroad" not in words(without)  # the first four words: cost use current account
    assert "abroad" in words(query)  # in one chunk in five, "use" in four of them
    assert "use" not in words(query)
    assert len(words(query) - words("and for the credit card?")) == MAX_CARRIED_WORDS


def test_without_knowledge_base_statistics_the_first_words_are_carried() -> None:
    conversation = chat("What does it cost to use my current account abroad?", "...", "and?")

    assert standalone_query(conversation, rarity=lambda word: 0.0) == standalone_query(conversation)


CLAIM_QUESTION = "Is the claim for your home or your car?"


def test_an_answer_to_the_bots_question_follows_up_however_much_it_names() -> None:
    conversation = chat(
        "how long have i got to make a claim",
        CLAIM_QUESTION,
        "home, storm knocked the fence down",
    )
    query = standalone_query(conversation)
    assert query.startswith("home, storm knocked the fence down")
    assert "long" in query.split() and "claim" in query.split()
    assert "car" not in query.split()


def test_a_closing_offer_is_no_question_to_answer() -> None:
    conversation = chat(
        "how do i turn off auto renew",
        "Go to Policy settings and switch Auto-renewal off. Anything else I can help with?",
        "lost my car keys on a night out, am i covered on car premier",
    )
    assert standalone_query(conversation) == conversation.latest_user_text
