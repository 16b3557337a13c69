"""Conversations kept the way Rasa keeps them, for channel tests that need no trained model.

:class:`RasaConversations` does to a tracker what Rasa's ``MessageProcessor`` does when a message
arrives: on a new conversation it records the channel metadata with Rasa's own
``_record_session_start_metadata`` and applies Rasa's own ``action_session_start`` (which carries
the recorded slot into the new session), then logs the user's message with its metadata. The
tracker state handed to the store is the one EnterpriseSearchPolicy hands it
(``EventVerbosity.AFTER_RESTART``).

:func:`serve` runs an input channel on a real Sanic server on loopback, registered by Rasa's own
``channel.register``, so requests go through HTTP, Sanic's request parsing, the channel's
blueprint and its middleware exactly as in ``rasa run``.
"""

from __future__ import annotations

import json
import socket
import uuid
from collections.abc import AsyncIterator, Awaitable, Callable
from contextlib import asynccontextmanager
from types import SimpleNamespace
from typing import Any

from rasa.core.actions.action import ActionSessionStart
from rasa.core.channels import channel as rasa_channel
from rasa.core.channels.channel import CollectingOutputChannel, InputChannel, UserMessage
from rasa.core.processor import BaseMessageProcessor
from rasa.shared.core.domain import Domain
from rasa.shared.core.events import UserUttered
from rasa.shared.core.trackers import DialogueStateTracker, EventVerbosity
from sanic import Sanic

Search = Callable[[dict[str, Any]], Awaitable[list[str]]]
"""A tracker state to the sources the store returns for it."""


class RasaConversations:
    """Trackers by sender id, updated as Rasa's message processor updates them."""

    def __init__(self, domain: Domain, search: Search | None = None) -> None:
        self.domain = domain
        self.search = search
        self.trackers: dict[str, DialogueStateTracker] = {}
        self.cancelled: list[str] = []

    async def receive(self, message: UserMessage) -> DialogueStateTracker:
        tracker = self.trackers.setdefault(
            message.sender_id, DialogueStateTracker(message.sender_id, self.domain.slots)
        )
        if not tracker.applied_events():
            BaseMessageProcessor._record_session_start_metadata(  # noqa: SLF001
                SimpleNamespace(domain=self.domain),  # type: ignore[arg-type]
                tracker,
                message.metadata,
            )
            output = message.output_channel or CollectingOutputChannel()
            started = await ActionSessionStart().run(output, None, tracker, self.domain)  # type: ignore[arg-type]
            for event in started:
                tracker.update(event, self.domain)
        user = UserUttered(
            message.text, metadata=message.metadata, input_channel=message.input_channel
        )
        tracker.update(user, self.domain)
        return tracker

    def state(self, sender_id: str) -> dict[str, Any]:
        return self.trackers[sender_id].current_state(EventVerbosity.AFTER_RESTART)

    async def handle_message(self, message: UserMessage) -> None:
        """What ``app.ctx.agent.handle_message`` is to a channel: reply with what was found."""
        tracker = await self.receive(message)
        sources = await self.search(self.state(tracker.sender_id)) if self.search else []
        reply = json.dumps({"conversation": tracker.sender_id, "sources": sources})
        await message.output_channel.send_text_message(message.sender_id, reply)

    def cancel_background_tasks(self, sender_id: str) -> bool:
        self.cancelled.append(sender_id)
        return True

    def user_texts(self, sender_id: str) -> list[str]:
        tracker = self.trackers.get(sender_id)
        events = tracker.events if tracker else []
        return [event.text for event in events if isinstance(event, UserUttered)]


@asynccontextmanager
async def serve(channel: InputChannel, conversations: RasaConversations) -> AsyncIterator[str]:
    """The channel on a loopback Sanic server; yields its base URL."""
    app = Sanic(f"channel-test-{uuid.uuid4().hex[:12]}")
    # Touch-up rewrites Sanic's HTTP classes once per process; a second app in the same process
    # must not rewrite them again.
    app.config.TOUCHUP = False
    app.ctx.agent = conversations
    rasa_channel.register([channel], app, route="/webhooks/")
    port = _free_port()
    server = await app.create_server(
        host="127.0.0.1", port=port, return_asyncio_server=True, access_log=False
    )
    assert server is not None
    await server.startup()
    await server.before_start()
    await server.after_start()
    try:
        yield f"http://127.0.0.1:{port}"
    finally:
        await server.before_stop()
        await server.close()
        await server.after_stop()


def _free_port() -> int:
    with socket.socket() as probe:
        probe.bind(("127.0.0.1", 0))
        return int(probe.getsockname()[1])
