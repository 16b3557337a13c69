"""The channel's ``credentials.yml`` entry, validated once at start-up into typed settings.

::

    rasa_context_retrieval.channels.entitled_rest.EntitledRestInput:
      entitlement_keys: [plan]       # every key access_filters reads
      secret_env: ENTITLEMENTS_SECRET  # one HS256 shared secret, from the environment
      keys:                          # and/or several keys at once, to rotate them
        - {id: "2026-11", public_key_file: keys/2026-11.pem}    # RS256 unless `algorithm`
        - {id: "2026-05", public_key_env: OLD_PUBLIC_KEY_PEM}
        - {secret_env: OTHER_SECRET, algorithm: HS512}
      audience: help-assistant       # optional; then tokens must carry this `aud`
      issuer: https://login.example.com  # optional; then tokens must carry this `iss`
      require_exp: true              # tokens without `exp` are refused (the default)
      leeway_seconds: 0              # clock skew allowed on exp / nbf / iat
      anonymous: public              # requests without a valid token: public (default) or refuse

Without ``secret_env`` and ``keys`` the secret is read from ``ENTITLEMENTS_SECRET``, as before.
Unknown keys are errors, so a misspelt ``requier_exp`` cannot silently leave a check off.
"""

from __future__ import annotations

from collections.abc import Iterable, Mapping
from dataclasses import dataclass
from pathlib import Path
from typing import Any, Literal

from pydantic import BaseModel, ConfigDict, Field, ValidationError, model_validator

from rasa_context_retrieval.channels.bearer_token import TokenVerifier
from rasa_context_retrieval.channels.verification_keys import (
    CredentialsError,
    VerificationKey,
    public_key_from_env,
    public_key_from_file,
    shared_secret,
)

DEFAULT_SECRET_ENV = "ENTITLEMENTS_SECRET"
USER_ID_METADATA_KEY = "user_id"
"""Rasa associates a conversation with ``metadata["user_id"]``; only a token may set it."""
MAX_LEEWAY_SECONDS = 300
Anonymous = Literal["public", "refuse"]


class KeyEntry(BaseModel):
    """One entry of ``keys``: exactly one source, an optional ``id`` (the token's ``kid``)."""

    model_config = ConfigDict(extra="forbid", frozen=True)

    id: str | None = None
    secret_env: str | None = None
    public_key_file: Path | None = None
    public_key_env: str | None = None
    algorithm: str | None = None

    @model_validator(mode="after")
    def _one_source(self) -> KeyEntry:
        given = [self.secret_env, self.public_key_file, self.public_key_env]
        if sum(source is not None for source in given) != 1:
            raise ValueError(
                "give exactly one of `secret_env`, `public_key_file` or `public_key_env`"
            )
        return self

    def load(self) -> VerificationKey:
        if self.secret_env is not None:
            return shared_secret(self.secret_env, self.id, self.algorithm)
        if self.public_key_file is not None:
            return public_key_from_file(self.public_key_file, self.id, self.algorithm)
        assert self.public_key_env is not None  # _one_source
        return public_key_from_env(self.public_key_env, self.id, self.algorithm)


class ChannelCredentials(BaseModel):
    """Everything the channel reads from its ``credentials.yml`` entry."""

    model_config = ConfigDict(extra="forbid", frozen=True)

    entitlement_keys: list[str] = Field(default_factory=lambda: ["plan"], min_length=1)
    secret_env: str | None = None
    keys: list[KeyEntry] = Field(default_factory=list)
    audience: str | list[str] | None = None
    issuer: str | None = None
    require_exp: bool = True
    leeway_seconds: float = Field(0.0, ge=0, le=MAX_LEEWAY_SECONDS)
    anonymous: Anonymous = "public"

    @model_validator(mode="after")
    def _distinct_key_ids(self) -> ChannelCredentials:
        ids = [entry.id for entry in self.keys if entry.id is not None]
        if len(ids) != len(set(ids)):
            raise ValueError("two entries of `keys` share an `id`: give each key its own")
        return self

    def verification_keys(self) -> tuple[VerificationKey, ...]:
        entries = list(self.keys)
        if self.secret_env is not None or not entries:
            entries.insert(0, KeyEntry(secret_env=self.secret_env or DEFAULT_SECRET_ENV))
        return tuple(entry.load() for entry in entries)

    def audiences(self) -> tuple[str, ...]:
        if self.audience is None:
            return ()
        return (self.audience,) if isinstance(self.audience, str) else tuple(self.audience)


@dataclass(frozen=True)
class ChannelSettings:
    """What the channel needs at run time, built once from ``credentials.yml``."""

    verifier: TokenVerifier
    entitlement_keys: tuple[str, ...]
    anonymous: Anonymous

    @property
    def metadata_keys(self) -> tuple[str, ...]:
        return token_metadata_keys(self.entitlement_keys)


def token_metadata_keys(entitlement_keys: Iterable[str]) -> tuple[str, ...]:
    """Every message metadata key the channel writes from the verified token alone, the body's
    claim to it discarded: the entitlement keys and ``user_id``. Any other key passes from the
    request body as the client wrote it."""
    return (*entitlement_keys, USER_ID_METADATA_KEY)


def channel_credentials(credentials: Mapping[str, Any] | None) -> ChannelCredentials:
    """The entry validated, its keys not loaded (the pre-flight check reads its metadata keys
    where the signing secrets may be absent); raise one-line :class:`CredentialsError`."""
    try:
        return ChannelCredentials.model_validate(dict(credentials or {}))
    except ValidationError as error:
        raise CredentialsError(_explain(error)) from None


def channel_settings(credentials: Mapping[str, Any] | None) -> ChannelSettings:
    """Validate the entry and load its keys; raise one-line :class:`CredentialsError` otherwise."""
    parsed = channel_credentials(credentials)
    verifier = TokenVerifier(
        keys=parsed.verification_keys(),
        audience=parsed.audiences(),
        issuer=parsed.issuer,
        require_exp=parsed.require_exp,
        leeway_seconds=parsed.leeway_seconds,
    )
    return ChannelSettings(verifier, tuple(parsed.entitlement_keys), parsed.anonymous)


def _explain(error: ValidationError) -> str:
    """The first fault as one line naming the key (values are not echoed: they may be secret)."""
    fault = error.errors()[0]
    where = ".".join(str(part) for part in fault["loc"]) or "the entry"
    if fault["type"] == "extra_forbidden":
        model = KeyEntry if fault["loc"][0] == "keys" else ChannelCredentials
        known = ", ".join(model.model_fields)
        return f"EntitledRestInput credentials: `{where}` is not a known key (known: {known})"
    message = fault["msg"].removeprefix("Value error, ")
    return f"EntitledRestInput credentials: `{where}`: {message}"
