"""An evaluation case as Rasa would hand it to the plugin: a real tracker and its state.

EnterpriseSearchPolicy passes ``tracker.current_state(EventVerbosity.AFTER_RESTART)`` as
``tracker_state`` and, as ``query``, the last ``max_messages_in_query`` user and bot messages,
newest first. Both are built here from Rasa's own tracker and events, so the evaluation sees the
same shapes (event dicts, slot values, ``latest_message`` with the channel's metadata) that the
assistant does.
"""

from __future__ import annotations

from typing import Any

from rasa.core.policies.enterprise_search_policy_config import DEFAULT_MAX_MESSAGES_IN_QUERY
from rasa.shared.core.constants import ACTION_LISTEN_NAME
from rasa.shared.core.events import ActionExecuted, BotUttered, Event, SlotSet, UserUttered
from rasa.shared.core.slots import AnySlot
from rasa.shared.core.trackers import DialogueStateTracker, EventVerbosity
from rasa.shared.utils.llm import sanitize_message_for_prompt

from rasa_context_retrieval.evaluation.cases import EvalCase

SENDER_ID = "retrieval-evaluation"


def tracker_for(case: EvalCase) -> DialogueStateTracker:
    """The tracker at the moment the case's last user message is answered.

    Slots are set first (the way a form or an earlier message would have filled them); every user
    turn follows an ``action_listen``, as in a live conversation.
    """
    slots = [AnySlot(name, mappings=[]) for name in case.slots]
    events: list[Event] = [SlotSet(name, value) for name, value in case.slots.items()]
    for turn in case.turns:
        if turn.role == "user":
            events.append(ActionExecuted(ACTION_LISTEN_NAME))
            events.append(_user_uttered(turn.text, turn.metadata or {}))
        else:
            events.append(BotUttered(turn.text))
    return DialogueStateTracker.from_events(SENDER_ID, events, slots=slots)


def tracker_state(tracker: DialogueStateTracker) -> dict[str, Any]:
    """What EnterpriseSearchPolicy passes to ``search()`` as ``tracker_state``."""
    return tracker.current_state(EventVerbosity.AFTER_RESTART)


def rasa_default_query(
    tracker: DialogueStateTracker, messages: int = DEFAULT_MAX_MESSAGES_IN_QUERY
) -> str:
    """The ``query`` EnterpriseSearchPolicy builds: the last messages, newest first.

    Mirrors ``EnterpriseSearchPolicy._prepare_search_query`` (a method of a trained policy, which
    would need a model storage and an LLM configuration to instantiate).
    """
    transcript = [
        sanitize_message_for_prompt(event.text)
        for event in tracker.applied_events()
        if isinstance(event, UserUttered | BotUttered)
    ]
    return " ".join(transcript[-messages:][::-1])


def _user_uttered(text: str, metadata: dict[str, Any]) -> UserUttered:
    """A user message as a channel delivers it; NLU's parse data carries the metadata too."""
    parse_data: dict[str, Any] = {
        "text": text,
        "intent": {"name": None, "confidence": 0.0},
        "entities": [],
        "metadata": metadata,
    }
    return UserUttered(text, parse_data=parse_data, metadata=metadata)  # type: ignore[arg-type]
