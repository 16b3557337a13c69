"""A REST channel whose entitlements come from a signed token, not from the request body.

Rasa's ``rest`` channel copies ``metadata`` from the client's JSON as it is, so anyone who can
post to it can claim any plan. This channel keeps the same API but reads entitlements only from
a JSON Web Token in the ``Authorization: Bearer`` header, signed by the application that
authenticated the user (HS256 with a shared secret here; use RS256 and a public key the same
way). The token's ``entitlements`` claim becomes the message metadata that ``access_filters``
reads; whatever the body's ``metadata`` claims for those keys is discarded, and a missing,
expired or forged token grants nothing.

credentials.yml::

    rasa_context_retrieval.channels.entitled_rest.EntitledRestInput:
      secret_env: ENTITLEMENTS_SECRET      # environment variable holding the signing secret
      entitlement_keys: [plan]             # the keys access_filters reads
"""

from __future__ import annotations

import os
from collections.abc import Mapping, Sequence
from typing import Any

import jwt
import structlog
from rasa.core.channels.rest import RestInput
from sanic.request import Request

logger = structlog.get_logger()

ENTITLEMENTS_CLAIM = "entitlements"
ALGORITHMS = ["HS256"]


class EntitledRestInput(RestInput):
    """``/webhooks/entitled_rest/webhook``: the REST API, with entitlements from a signed token."""

    def __init__(self, secret: str, entitlement_keys: Sequence[str]) -> None:
        if not secret:
            raise ValueError("EntitledRestInput needs a signing secret (see `secret_env`)")
        self.secret = secret
        self.entitlement_keys = tuple(entitlement_keys)

    @classmethod
    def name(cls) -> str:
        return "entitled_rest"

    @classmethod
    def from_credentials(cls, credentials: Mapping[str, Any] | None) -> EntitledRestInput:
        credentials = credentials or {}
        secret_env = str(credentials.get("secret_env", "ENTITLEMENTS_SECRET"))
        return cls(os.environ.get(secret_env, ""), credentials.get("entitlement_keys", ["plan"]))

    def get_metadata(self, request: Request) -> dict[str, Any]:
        body = request.json if isinstance(request.json, Mapping) else {}
        claimed = body.get("metadata")
        metadata = {
            key: value
            for key, value in (claimed.items() if isinstance(claimed, Mapping) else ())
            if key not in self.entitlement_keys
        }
        metadata.update(self.verified_entitlements(request.headers.get("Authorization", "")))
        return metadata

    def verified_entitlements(self, authorization: str) -> dict[str, Any]:
        """The token's entitlements for the configured keys; nothing when the token is not valid."""
        scheme, _, token = authorization.partition(" ")
        if scheme.lower() != "bearer" or not token:
            return {}
        try:
            claims = jwt.decode(token, self.secret, algorithms=ALGORITHMS)
        except jwt.PyJWTError as error:
            logger.warning("entitled_rest.token.rejected", reason=type(error).__name__)
            return {}
        granted = claims.get(ENTITLEMENTS_CLAIM)
        if not isinstance(granted, Mapping):
            return {}
        return {key: granted[key] for key in self.entitlement_keys if key in granted}
