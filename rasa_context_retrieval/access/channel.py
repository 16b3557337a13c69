"""Channel metadata as Rasa records it, and which of it can be trusted.

A channel connector passes ``metadata`` with each message. Rasa keeps it in two places that
EnterpriseSearchPolicy hands to the plugin in ``tracker_state``:

* on the user's event, which is ``tracker_state["latest_message"]["metadata"]``;
* when a session starts, in the built-in slot ``session_started_metadata``
  (``MessageProcessor._record_session_start_metadata`` writes ``SlotSet(slot, metadata)``).

That slot is not safe by itself: built-in slots skip the active-flow guard, so a ``/SetSlots``
payload or the LLM command generator can write it. Those paths produce text and stamp the
``SlotSet`` with the extractor that filled it (``filled_by``). The session metadata is therefore
trusted only when the latest event that wrote the slot carries a mapping and no extractor, and
the slot still holds that same mapping.
"""

from __future__ import annotations

from collections.abc import Mapping
from dataclasses import dataclass
from typing import Any

SESSION_METADATA_SLOT = "session_started_metadata"


@dataclass(frozen=True)
class ChannelMetadata:
    """The metadata a connector attached, from the latest message and from the session start."""

    message: Mapping[str, Any] | None = None
    """Metadata of the latest user message; ``None`` when it carried none."""
    session: Mapping[str, Any] | None = None
    """Metadata recorded at session start by Rasa itself; ``None`` when absent or untrusted."""

    @classmethod
    def from_tracker_state(cls, tracker_state: Mapping[str, Any] | None) -> ChannelMetadata:
        """Read both places; anything malformed or user-written reads as absent, never raises."""
        state = tracker_state if isinstance(tracker_state, Mapping) else {}
        latest = state.get("latest_message")
        message = latest.get("metadata") if isinstance(latest, Mapping) else None
        return cls(
            message=message if isinstance(message, Mapping) else None,
            session=_trusted_session_metadata(state),
        )


def _trusted_session_metadata(state: Mapping[str, Any]) -> Mapping[str, Any] | None:
    slots = state.get("slots")
    held = slots.get(SESSION_METADATA_SLOT) if isinstance(slots, Mapping) else None
    if not isinstance(held, Mapping):
        return None
    written = _last_write(state.get("events"))
    if written is None or written.get("filled_by") is not None:
        return None
    value = written.get("value")
    return held if isinstance(value, Mapping) and dict(value) == dict(held) else None


def _last_write(events: Any) -> Mapping[str, Any] | None:
    """The latest ``slot`` event that wrote the session metadata slot, if any."""
    if not isinstance(events, list | tuple):
        return None
    for event in reversed(events):
        if (
            isinstance(event, Mapping)
            and event.get("event") == "slot"
            and event.get("name") == SESSION_METADATA_SLOT
        ):
            return event
    return None
