"""The example channel takes entitlements from a signed token and never from the request body."""

from __future__ import annotations

import time
from types import SimpleNamespace
from typing import Any

import jwt
import pytest

from rasa_context_retrieval.channels.entitled_rest import EntitledRestInput

SECRET = "test-signing-secret-with-enough-length"


def request(body: dict[str, Any], token: str | None = None) -> Any:
    """The two things the channel reads from Sanic's request: the JSON body and the headers."""
    headers = {"Authorization": f"Bearer {token}"} if token else {}
    return SimpleNamespace(json=body, headers=headers)


def token(claims: dict[str, Any], secret: str = SECRET) -> str:
    return jwt.encode(claims, secret, algorithm="HS256")


@pytest.fixture
def channel(monkeypatch: pytest.MonkeyPatch) -> EntitledRestInput:
    monkeypatch.setenv("ENTITLEMENTS_SECRET", SECRET)
    return EntitledRestInput.from_credentials({"entitlement_keys": ["plan"]})


def test_a_signed_token_grants_its_entitlements_and_other_metadata_passes(channel):
    body = {"message": "hi", "metadata": {"plan": "business", "locale": "de"}}
    metadata = channel.get_metadata(request(body, token({"entitlements": {"plan": "free"}})))
    assert metadata == {"plan": "free", "locale": "de"}


@pytest.mark.parametrize(
    "bad_token",
    [
        None,
        "not-a-token",
        token({"entitlements": {"plan": "business"}}, secret="someone-elses-secret-of-length"),
        token({"entitlements": {"plan": "business"}, "exp": int(time.time()) - 60}),
        token({"entitlements": "business"}),
    ],
)
def test_a_missing_forged_or_expired_token_grants_nothing(channel, bad_token):
    body = {"message": "hi", "metadata": {"plan": "business"}}
    assert "plan" not in channel.get_metadata(request(body, bad_token))


def test_the_channel_refuses_to_start_without_a_secret(monkeypatch: pytest.MonkeyPatch):
    monkeypatch.delenv("ENTITLEMENTS_SECRET", raising=False)
    with pytest.raises(ValueError, match="signing secret"):
        EntitledRestInput.from_credentials({})
