"""A REST channel whose entitlements and conversation come from a signed token, not the body.

Rasa's ``rest`` channel copies ``sender`` and ``metadata`` from the client's JSON as they are, so
anyone who can post to it can claim any plan and write into anyone's conversation. This channel
keeps the same API but trusts only a JSON Web Token in the ``Authorization: Bearer`` header,
signed by the application that authenticated the user (HS256 with a shared secret, or RS256 /
ES256 with its public key; several keys at once to rotate them, see :mod:`credentials`):

* The conversation is the token's subject: the sender id is ``user:<sub>``, whatever the body's
  ``sender`` says, so a token for one user never reads or writes another user's conversation.
* Every message carries every configured entitlement key: the token's value, or explicitly
  empty. A key that is present never falls back to the metadata recorded when the conversation
  started, so a downgrade, an expired or forged token, or no token, takes effect on that message.
* A request without a valid token grants nothing and gets a conversation of its own,
  ``anonymous:<sender>``, which can never be a token holder's (or refused: ``anonymous: refuse``).
* Whatever the body's ``metadata`` claims for the entitlement keys or ``user_id`` (Rasa's user
  association) is discarded; other metadata passes unchanged.
* ``/cancel_background_tasks/<sender_id>`` only acts on the caller's own conversation.

credentials.yml (every key: :mod:`rasa_context_retrieval.channels.credentials`)::

    rasa_context_retrieval.channels.entitled_rest.EntitledRestInput:
      secret_env: ENTITLEMENTS_SECRET      # environment variable holding the signing secret
      entitlement_keys: [plan]             # the keys access_filters reads
"""

from __future__ import annotations

import uuid
from collections.abc import Awaitable, Callable, Mapping
from typing import Any

from rasa.core.channels.channel import UserMessage
from rasa.core.channels.rest import RestInput
from sanic import Blueprint, response
from sanic.request import Request
from sanic.response import BaseHTTPResponse, HTTPResponse, ResponseStream

from rasa_context_retrieval.channels.bearer_token import Bearer, entitlements_for
from rasa_context_retrieval.channels.credentials import (
    USER_ID_METADATA_KEY,
    ChannelSettings,
    channel_settings,
)

SUBJECT_SENDER_PREFIX = "user:"
ANONYMOUS_SENDER_PREFIX = "anonymous:"
CANCEL_ROUTE = "cancel_background_tasks"
_UNVERIFIED = object()


class EntitledRestInput(RestInput):
    """``/webhooks/entitled_rest/webhook``: the REST API, with identity and entitlements from a
    signed token."""

    def __init__(self, settings: ChannelSettings) -> None:
        self.settings = settings

    @classmethod
    def name(cls) -> str:
        return "entitled_rest"

    @classmethod
    def from_credentials(cls, credentials: Mapping[str, Any] | None) -> EntitledRestInput:
        return cls(channel_settings(credentials))

    @property
    def entitlement_keys(self) -> tuple[str, ...]:
        return self.settings.entitlement_keys

    def bearer(self, request: Request) -> Bearer | None:
        """The request's verified token holder, checked once per request."""
        context = getattr(request, "ctx", None)
        cached = getattr(context, "entitled_rest_bearer", _UNVERIFIED)
        if cached is not _UNVERIFIED:
            return cached  # type: ignore[return-value]
        bearer = self.settings.verifier.bearer(request.headers.get("Authorization"))
        if context is not None:
            context.entitled_rest_bearer = bearer
        return bearer

    def sender_id(self, request: Request) -> str:
        """``user:<sub>`` for a token holder, ``anonymous:<body sender>`` for anyone else."""
        bearer = self.bearer(request)
        if bearer is not None:
            return SUBJECT_SENDER_PREFIX + bearer.subject
        claimed = _body(request).get("sender")
        chosen = str(claimed) if claimed is not None and str(claimed) else uuid.uuid4().hex
        return ANONYMOUS_SENDER_PREFIX + chosen

    async def _extract_sender(self, req: Request) -> str:
        return self.sender_id(req)

    def get_metadata(self, request: Request) -> dict[str, Any]:
        claimed = _body(request).get("metadata")
        reserved = set(self.settings.metadata_keys)
        metadata = {
            key: value
            for key, value in (claimed.items() if isinstance(claimed, Mapping) else ())
            if key not in reserved
        }
        bearer = self.bearer(request)
        metadata.update(entitlements_for(bearer, self.entitlement_keys))
        if bearer is not None:
            metadata[USER_ID_METADATA_KEY] = bearer.subject
        return metadata

    async def receive_messages(
        self, request: Request, on_new_message: Callable[[UserMessage], Awaitable[None]]
    ) -> BaseHTTPResponse | ResponseStream:
        if self.settings.anonymous == "refuse" and self.bearer(request) is None:
            return _unauthorized()
        return await super().receive_messages(request, on_new_message)

    def blueprint(self, on_new_message: Callable[[UserMessage], Awaitable[Any]]) -> Blueprint:
        webhook = super().blueprint(on_new_message)

        @webhook.on_request
        async def own_conversation_only(request: Request) -> HTTPResponse | None:
            route = request.route.name if request.route else ""
            if not route.endswith("." + CANCEL_ROUTE):
                return None
            if request.match_info.get("sender_id") == self.sender_id(request):
                return None
            return _unauthorized()

        return webhook


def _body(request: Request) -> Mapping[str, Any]:
    body = request.json
    return body if isinstance(body, Mapping) else {}


def _unauthorized() -> HTTPResponse:
    return response.json(
        {"error": "a valid bearer token is required"},
        status=401,
        headers={"WWW-Authenticate": "Bearer"},
    )
