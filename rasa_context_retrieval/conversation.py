"""The conversation as retrieval needs it, read defensively from Rasa's ``tracker_state``.

EnterpriseSearchPolicy hands us ``tracker.current_state(EventVerbosity.AFTER_RESTART)``: a dict
whose ``events`` hold user and bot turns (of every session since the last restart: only the turns
after the latest ``session_started`` event belong to the conversation, so context and carried
filters never cross into a new session), whose ``slots`` hold the user's scope, and whose
``latest_message`` holds the message being answered. Any of these may be missing or odd
(``None`` texts, non-string slot values), so reading never raises.

Everything read is outside text, so it is made encodable here (``encodable``: a lone surrogate
would fail the tokenizer) and bounded here: each turn is cut at ``HistoryCaps.max_turn_chars`` and
only the latest turns that fit in ``max_turns`` and ``max_chars`` are kept (the ``history:`` block
of the configuration; ``MAX_TURN_CHARS``, ``MAX_TURNS`` and ``MAX_CONVERSATION_CHARS`` by default).
Every later stage (rewrite, self-query, the embedder, an LLM prompt) then costs at most what these
caps allow, however long the tracker grew.
"""

from __future__ import annotations

from collections.abc import Mapping
from dataclasses import dataclass, field, replace
from typing import Any, Literal

from rasa_context_retrieval.access.channel import ChannelMetadata
from rasa_context_retrieval.encodable import encodable, encodable_values

MAX_TURN_CHARS = 4000
"""A longer message is cut: the embedding model reads about 1,000 characters of a query, and a
question is rarely longer; the rest would only slow every stage down."""
MAX_TURNS = 40
"""Turns kept, latest first; the rewrite and the carried filters look back six."""
MAX_CONVERSATION_CHARS = 20_000
"""Characters kept over all turns, latest first (twenty 1 MB turns cost no more than this)."""

EVENTS_READ_PER_TURN = 20
"""Events read from the end of the tracker per turn kept: slot, action and other events sit
between turns."""

Role = Literal["user", "bot"]


@dataclass(frozen=True)
class HistoryCaps:
    """How much of the conversation is read: characters of a turn, turns, characters in all."""

    max_turn_chars: int = MAX_TURN_CHARS
    max_turns: int = MAX_TURNS
    max_chars: int = MAX_CONVERSATION_CHARS

    @property
    def events_read(self) -> int:
        return EVENTS_READ_PER_TURN * self.max_turns


@dataclass(frozen=True)
class Turn:
    """One message of the conversation."""

    role: Role
    text: str


@dataclass(frozen=True)
class Conversation:
    """Turns in order (oldest first), the message being answered and the filled slots.

    ``latest_user_text`` is the last user message; ``history`` is every turn before it.
    """

    turns: tuple[Turn, ...] = ()
    slots: Mapping[str, Any] = field(default_factory=dict)
    channel: ChannelMetadata = field(default_factory=ChannelMetadata)
    """Metadata the channel connector attached (entitlements come from here, never from slots)."""

    @property
    def latest_user_index(self) -> int | None:
        for index in range(len(self.turns) - 1, -1, -1):
            if self.turns[index].role == "user":
                return index
        return None

    @property
    def latest_user_text(self) -> str:
        index = self.latest_user_index
        return "" if index is None else self.turns[index].text

    @property
    def history(self) -> tuple[Turn, ...]:
        """Turns before the latest user message (the context a follow-up leans on)."""
        index = self.latest_user_index
        return self.turns if index is None else self.turns[:index]

    @property
    def filled_slots(self) -> dict[str, Any]:
        """Slots with a value; Rasa's internal slots (``requested_slot`` ...) are left out."""
        return {
            name: value
            for name, value in self.slots.items()
            if value not in (None, "", []) and name not in RASA_INTERNAL_SLOTS
        }

    @classmethod
    def from_tracker_state(
        cls,
        tracker_state: Mapping[str, Any] | None,
        fallback_query: str = "",
        caps: HistoryCaps = HistoryCaps(),  # noqa: B008 (frozen: one shared default is safe)
    ) -> Conversation:
        """Read turns and slots from ``tracker_state`` within ``caps``; never raises.

        ``fallback_query`` (Rasa's own ``query`` argument) stands in for the user's message when
        the tracker holds no user turn at all.
        """
        state = tracker_state if isinstance(tracker_state, Mapping) else {}
        turns = _turns_from_events(state.get("events"), caps)
        latest = _text(_get(state.get("latest_message"), "text"), caps)
        if latest and not any(turn.role == "user" for turn in turns):
            turns.append(Turn("user", latest))
        if not any(turn.role == "user" for turn in turns) and _text(fallback_query, caps):
            turns.append(Turn("user", _text(fallback_query, caps)))
        slots = state.get("slots")
        channel = ChannelMetadata.from_tracker_state(state)
        return cls(
            turns=_latest_within_caps(turns, caps),
            slots=encodable_values(dict(slots)) if isinstance(slots, Mapping) else {},
            channel=replace(
                channel,
                message=encodable_values(channel.message),
                session=encodable_values(channel.session),
            ),
        )


RASA_INTERNAL_SLOTS = frozenset(
    {
        "requested_slot",
        "session_started_metadata",
        "dialogue_stack",
        "flow_hashes",
        "return_value",
        "active_loop",
    }
)


SESSION_START_EVENT = "session_started"
"""Rasa's event that opens a new session; the turns before it are a finished conversation."""


def _turns_from_events(events: Any, caps: HistoryCaps) -> list[Turn]:
    if not isinstance(events, list | tuple):
        return []
    turns: list[Turn] = []
    for event in events[-caps.events_read :]:
        kind = _get(event, "event")
        if kind == SESSION_START_EVENT:
            turns.clear()
            continue
        if kind not in ("user", "bot"):
            continue
        text = _text(_get(event, "text"), caps)
        if text:
            turns.append(Turn("user" if kind == "user" else "bot", text))
    return turns


def _get(container: Any, key: str) -> Any:
    return container.get(key) if isinstance(container, Mapping) else None


def _latest_within_caps(turns: list[Turn], caps: HistoryCaps) -> tuple[Turn, ...]:
    """The latest turns (the latest user message always) within the turn and character caps."""
    kept: list[Turn] = []
    chars = 0
    for turn in reversed(turns):
        chars += len(turn.text)
        if kept and (len(kept) >= caps.max_turns or chars > caps.max_chars):
            break
        kept.append(turn)
    return tuple(reversed(kept))


def _text(value: Any, caps: HistoryCaps) -> str:
    """A turn's text, stripped, cut at ``caps.max_turn_chars`` and encodable."""
    if not isinstance(value, str):
        return ""
    return encodable(value.strip()[: caps.max_turn_chars].strip())
