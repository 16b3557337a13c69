"""Filters that follow the conversation: what the user said earlier still scopes a follow-up.

"I live in Germany. Can I get my money back if I cancel?" and then "and how long does it take?":
the second message says nothing about a region, yet the user is still asking about the EU. So for
a follow-up, the conditions the rules find in the earlier user turns of the same subject are
kept as the *carried filter*, next to the filter of the latest message itself:

* the latest statement per attribute wins: an earlier turn adds only attributes that later turns
  did not mention;
* an attribute the latest message states again ("and in the US?") is replaced, not carried;
* a message that stands alone (a new subject) carries nothing, and the turns before the one that
  opened the current subject carry nothing either.

Whether a message is a follow-up is one swappable function (``FollowUpDetector``), so that a
context model can replace it. The default, ``is_follow_up``, is this stage's answer to the one
follow-up decision (``follow_up.follows_up`` with ``Stage.CARRIED_FILTERS``): anything but a
complete new question (``follow_up.is_complete_question``). A message leans on earlier turns when
it opens like a continuation ("and ...", "what about ..."), points back ("it", "there", "that
one") or names too little to stand alone ("and how long?").

A carried filter that still crosses a change of subject in a message that reads like a follow-up
("how do I contact support?" after "offline files on Android") is dropped by the search when it
hides every document the latest message finds confidently (``engine.search``).

Conditions are read from the user's own messages, never from the rewritten query: a rewrite that
copies "Germany" into the search text must not turn a replaced value back into a filter.
"""

from __future__ import annotations

from collections.abc import Callable
from dataclasses import dataclass

from langchain_core.structured_query import FilterDirective, StructuredQuery

from rasa_context_retrieval.conversation import Conversation
from rasa_context_retrieval.follow_up import Stage, follows_up
from rasa_context_retrieval.self_query.constraints import Constraint
from rasa_context_retrieval.self_query.rules import RuleQueryConstructor

FollowUpDetector = Callable[[str], bool]
MAX_CARRIED_TURNS = 6
"""Earlier user messages looked at, newest first; a subject rarely lasts longer."""


def is_follow_up(message: str) -> bool:
    """Whether ``message`` leans on earlier turns (see the module docstring)."""
    return follows_up(message, Stage.CARRIED_FILTERS)


@dataclass(frozen=True)
class ConversationFilters:
    """The filters of one search in a conversation."""

    structured: StructuredQuery
    """Search text (from the standalone query), the latest message's own filter and limit."""
    carried: FilterDirective | None
    """Conditions from earlier turns of the same subject that the latest message keeps."""


def conversation_filters(
    conversation: Conversation,
    standalone: str,
    rules: RuleQueryConstructor,
    follow_up: FollowUpDetector = is_follow_up,
) -> ConversationFilters:
    """The latest message's filter, the carried filter and the search text for ``standalone``."""
    latest = conversation.latest_user_text or standalone
    own = rules.constraints(latest)
    said = rules.construct(latest)
    query = said.query if standalone == latest else rules.construct(standalone).query
    structured = StructuredQuery(query=query, filter=said.filter, limit=said.limit)
    if not latest.strip() or not follow_up(latest):
        return ConversationFilters(structured, None)
    stated = {constraint.attribute for constraint in own}
    carried = [
        constraint
        for constraint in earlier_constraints(conversation, rules, follow_up)
        if constraint.attribute not in stated
    ]
    return ConversationFilters(structured, rules.filter_of(carried))


def earlier_constraints(
    conversation: Conversation, rules: RuleQueryConstructor, follow_up: FollowUpDetector
) -> list[Constraint]:
    """Conditions of the earlier user turns of the current subject, newest statement first."""
    earlier = [turn.text for turn in conversation.history if turn.role == "user"]
    kept: list[Constraint] = []
    said: set[str] = set()
    for text in reversed(earlier[-MAX_CARRIED_TURNS:]):
        found = rules.constraints(text)
        kept += [constraint for constraint in found if constraint.attribute not in said]
        said |= {constraint.attribute for constraint in found}
        if not follow_up(text):
            break  # this message opened the subject; older ones belong to another
    return kept
