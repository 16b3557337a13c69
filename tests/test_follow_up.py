"""One decision "is this message a follow-up?", asked by the rewrite and by carried filters.

Carried filters ask whether the message is a complete new question (either reading finds it
complete, and it does not open like a continuation); these tests pin what each stage decides and
the messages on which they are known to disagree.
"""

from __future__ import annotations

import pytest

from rasa_context_retrieval.conversation import Conversation, Turn
from rasa_context_retrieval.follow_up import Stage, decisions, follows_up, pointing_words
from rasa_context_retrieval.planning.carried_filters import is_follow_up
from rasa_context_retrieval.rewrite.heuristic import looks_like_follow_up, standalone_query

BUSINESS_TIER = "Is the same true for the business tier?"


@pytest.mark.parametrize(
    ("message", "rewrite", "carried_filters"),
    [
        ("and how long does it take?", True, True),
        ("what about refunds?", True, True),
        ("How do I share a folder with other people?", True, False),
        ("Which browsers does the web app support?", False, False),
        ("How do I build a cheap driveway?", False, False),
        (BUSINESS_TIER, True, False),
        ("What is the UK VAT rate?", False, False),
        ("what if I cancel after 30 days?", False, True),
    ],
)
def test_the_decision_gives_each_stage_its_answer(
    message: str, rewrite: bool, carried_filters: bool
) -> None:
    answers = decisions(message)
    assert answers.by_stage == {Stage.REWRITE: rewrite, Stage.CARRIED_FILTERS: carried_filters}
    assert answers.agree is (rewrite == carried_filters)
    assert looks_like_follow_up(message) is follows_up(message, Stage.REWRITE) is rewrite
    assert is_follow_up(message) is follows_up(message, Stage.CARRIED_FILTERS) is carried_filters


def test_known_disagreement_the_business_tier_follow_up() -> None:
    """'same' points back for the rewrite; carried filters see a message that names its subject.

    So the rewrite adds words from the earlier turn while the earlier turn's conditions are not
    carried. A later change picks one reading for both stages; until then this is pinned here.
    """
    assert not decisions(BUSINESS_TIER).agree
    conversation = Conversation(
        turns=(
            Turn(role="user", text="Can I export my invoices as PDF on the personal plan?"),
            Turn(role="bot", text="Yes, from the billing page."),
            Turn(role="user", text=BUSINESS_TIER),
        )
    )
    rewritten = standalone_query(conversation)
    assert rewritten.startswith(BUSINESS_TIER) and rewritten != BUSINESS_TIER
    assert not is_follow_up(BUSINESS_TIER)  # so no condition of the earlier turn is carried


@pytest.mark.parametrize(
    ("message", "pointing"),
    [
        ("how long does it take?", ["it"]),
        ("is there a fee for using it abroad?", ["it"]),
        ("will my gas get turned off while that happens?", ["that"]),
        ("is there any grant that can help clear my debt?", []),
        ("how much is it to ring my mum in poland", []),
        ("how long does it take to move my supply over", []),
        ("my old iphone is locked, can i use it on his network", []),
        ("is it going to be fixed?", ["it"]),
    ],
)
def test_only_words_that_point_at_an_earlier_turn_count(message: str, pointing: list[str]) -> None:
    assert pointing_words(message) == pointing
