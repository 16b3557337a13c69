"""Who sent a request and what they are entitled to, from a signed JSON Web Token.

A token is accepted only when all of these hold: it is signed by a configured key with that key's
algorithm (see :mod:`verification_keys`), it names a subject (``sub``), it has not expired
(``exp`` is required unless configured otherwise), and its ``aud`` and ``iss`` are the
configured ones when they are configured. PyJWT checks each of these; a rejected token is logged
with the reason only, never the token.
"""

from __future__ import annotations

from collections.abc import Mapping, Sequence
from dataclasses import dataclass, field
from typing import Any

import jwt
import structlog

from rasa_context_retrieval.channels.verification_keys import VerificationKey

logger = structlog.get_logger()

ENTITLEMENTS_CLAIM = "entitlements"
BEARER_SCHEME = "bearer"


@dataclass(frozen=True)
class Bearer:
    """The holder of a valid token: its subject and the entitlements it was issued."""

    subject: str
    entitlements: Mapping[str, Any]


@dataclass(frozen=True)
class TokenVerifier:
    """Checks ``Authorization: Bearer <token>`` headers against the configured keys and claims."""

    keys: tuple[VerificationKey, ...]
    audience: tuple[str, ...] = ()
    issuer: str | None = None
    require_exp: bool = True
    leeway_seconds: float = 0.0
    required_claims: tuple[str, ...] = field(init=False)

    def __post_init__(self) -> None:
        required = ["sub"]
        required += ["exp"] if self.require_exp else []
        required += ["aud"] if self.audience else []
        required += ["iss"] if self.issuer else []
        object.__setattr__(self, "required_claims", tuple(required))

    def bearer(self, authorization: str | None) -> Bearer | None:
        """The token's holder, or ``None`` when there is no token or it is not valid."""
        scheme, _, token = (authorization or "").strip().partition(" ")
        if scheme.lower() != BEARER_SCHEME or not token.strip():
            return None
        try:
            claims = self.claims(token.strip())
        except jwt.PyJWTError as error:
            logger.warning("entitled_rest.token.rejected", reason=type(error).__name__)
            return None
        subject = claims["sub"]
        if not isinstance(subject, str) or not subject.strip():
            logger.warning("entitled_rest.token.rejected", reason="EmptySubject")
            return None
        granted = claims.get(ENTITLEMENTS_CLAIM)
        return Bearer(subject, granted if isinstance(granted, Mapping) else {})

    def claims(self, token: str) -> dict[str, Any]:
        """The verified claims; raises a ``jwt.PyJWTError`` saying why the token is refused."""
        header = jwt.get_unverified_header(token)
        candidates = [
            key for key in self.keys if key.verifies(header.get("kid"), header.get("alg"))
        ]
        if not candidates:
            raise jwt.InvalidKeyError("no configured key verifies this token's kid and alg")
        refused: jwt.PyJWTError = jwt.InvalidSignatureError("no key verified the signature")
        for key in candidates:
            try:
                return self._decode(token, key)
            except jwt.InvalidSignatureError as error:  # another key may have signed it
                refused = error
        raise refused

    def _decode(self, token: str, key: VerificationKey) -> dict[str, Any]:
        # The signature is checked before any claim, so a claim error means this key signed it.
        return jwt.decode(
            token,
            key.material,
            algorithms=[key.algorithm],
            audience=list(self.audience) or None,
            issuer=self.issuer,
            leeway=self.leeway_seconds,
            options={"require": list(self.required_claims), "verify_exp": True},
        )


def entitlements_for(bearer: Bearer | None, keys: Sequence[str]) -> dict[str, Any]:
    """Every configured key, with the token's value or explicitly empty.

    A key that is present but empty entitles to nothing and, unlike an absent one, never falls
    back to what the conversation's start recorded (``access.entitlements``): a downgrade or a
    request without a valid token takes effect on that very message.
    """
    granted = bearer.entitlements if bearer is not None else {}
    return {key: granted.get(key, []) for key in keys}
