"""Over loopback HTTP: a token decides whose conversation a message joins and what it may read.

Each test runs the channel on a real Sanic server registered by Rasa's own ``channel.register``;
each message goes through Rasa's own session-start recording and ``action_session_start``
(``tests/rasa_conversations.py``) and is answered by the real store's ``search()`` over a small
knowledge base with premium, free and public documents. The reply names the conversation the
message joined and the documents found.
"""

from __future__ import annotations

import base64
import hashlib
import hmac
import json
import time
from collections.abc import AsyncIterator
from contextlib import asynccontextmanager
from pathlib import Path
from typing import Any

import httpx
import jwt
import pytest
from cryptography.hazmat.primitives import serialization
from cryptography.hazmat.primitives.asymmetric import rsa
from rasa.shared.core.events import Event
from rasa.utils.endpoints import EndpointConfig

from rasa_context_retrieval.access.channel import ChannelMetadata
from rasa_context_retrieval.channels.entitled_rest import EntitledRestInput
from rasa_context_retrieval.store import ContextRetrieval
from tests.rasa_conversations import RasaConversations, serve
from tests.test_enterprise_search_policy import DOMAIN

SECRET = "test-signing-secret-long-enough-for-hs256-0123456789"
AUDIENCE = "help-assistant"
ISSUER = "https://login.example.com"
WEBHOOK = "/webhooks/entitled_rest/webhook"
QUESTION = "How much storage do I get?"
HTTP_TIMEOUT_SECONDS = 120
"""Generous: the first search loads the embedding model, on a machine that may be busy."""

PREMIUM = {"premium/storage.md", "premium/support.md"}
FREE = {"free/storage.md"}
PUBLIC = {"help/storage.md", "help/quota.md"}
DOCUMENTS = {
    "premium/storage.md": "---\nplan: [premium]\n---\nPremium storage: 2 TB for all your files.",
    "premium/support.md": "---\nplan: [premium]\n---\nPremium support answers storage questions.",
    "free/storage.md": "---\nplan: [free]\n---\nFree storage: 5 GB for your files.",
    "help/storage.md": "How storage is counted: every file version counts.",
    "help/quota.md": "When your storage quota is full, uploads pause.",
}


@pytest.fixture(scope="module")
def store(embedder: Any, tmp_path_factory: pytest.TempPathFactory) -> ContextRetrieval:
    docs = tmp_path_factory.mktemp("docs")
    for name, text in DOCUMENTS.items():
        (docs / name).parent.mkdir(exist_ok=True)
        (docs / name).write_text(text, encoding="utf-8")
    block = {
        "docs": str(docs),
        "index_path": str(tmp_path_factory.mktemp("index")),
        "access_filters": {"plan": "plan"},
        "metadata_fields": [{"name": "plan", "type": "list[string]"}],
        "top_k": 10,
    }
    store = ContextRetrieval(embedder)
    store.connect(EndpointConfig(**block))
    return store


def answering_from(store: ContextRetrieval) -> RasaConversations:
    """Rasa-kept conversations whose every reply lists the sources ``store`` finds."""

    async def search(state: dict[str, Any]) -> list[str]:
        found = await store.search("", state, 0.0)
        return sorted(result.metadata["source"] for result in found.results)

    return RasaConversations(DOMAIN, search)


@asynccontextmanager
async def client_of(
    channel: EntitledRestInput, conversations: RasaConversations
) -> AsyncIterator[Client]:
    """A client of ``channel`` served on loopback HTTP in front of ``conversations``."""
    async with (
        serve(channel, conversations) as url,
        httpx.AsyncClient(timeout=HTTP_TIMEOUT_SECONDS) as http,
    ):
        yield Client(http, url)


@pytest.fixture
def conversations(store: ContextRetrieval) -> RasaConversations:
    return answering_from(store)


def hs256(claims: dict[str, Any], secret: str = SECRET, **header: Any) -> str:
    return jwt.encode(claims, secret, algorithm="HS256", headers=header or None)


def claims(subject: str, plan: Any = "premium", **extra: Any) -> dict[str, Any]:
    base = {"sub": subject, "exp": int(time.time()) + 600, "aud": AUDIENCE, "iss": ISSUER}
    if plan is not None:
        base["entitlements"] = {"plan": plan}
    return {**base, **extra}


class Client:
    """Posts to the webhook and reads the reply: the conversation joined, the documents found."""

    def __init__(self, http: httpx.AsyncClient, url: str) -> None:
        self.http = http
        self.url = url

    async def say(
        self, sender: str, token: str | None = None, metadata: Any = None
    ) -> tuple[str, set[str]]:
        body: dict[str, Any] = {"sender": sender, "message": QUESTION}
        if metadata is not None:
            body["metadata"] = metadata
        headers = {"Authorization": f"Bearer {token}"} if token else {}
        reply = await self.http.post(self.url + WEBHOOK, json=body, headers=headers)
        assert reply.status_code == 200, reply.text
        [message] = reply.json()
        answer = json.loads(message["text"])
        assert message["recipient_id"] == answer["conversation"]
        return answer["conversation"], set(answer["sources"])


@pytest.fixture
def hs256_credentials(monkeypatch: pytest.MonkeyPatch) -> dict[str, Any]:
    monkeypatch.setenv("ENTITLEMENTS_SECRET", SECRET)
    return {"entitlement_keys": ["plan"], "audience": AUDIENCE, "issuer": ISSUER}


@pytest.fixture
async def client(
    hs256_credentials: dict[str, Any], conversations: RasaConversations
) -> AsyncIterator[Client]:
    async with client_of(EntitledRestInput.from_credentials(hs256_credentials), conversations) as c:
        yield c


def forged_with_public_key(public_pem: bytes, claims: dict[str, Any]) -> str:
    """An HS256 token whose HMAC key is the RSA public key (the "alg confusion" forgery)."""

    def part(value: dict[str, Any]) -> bytes:
        return base64.urlsafe_b64encode(json.dumps(value).encode()).rstrip(b"=")

    signing_input = part({"alg": "HS256", "typ": "JWT"}) + b"." + part(claims)
    signature = hmac.new(public_pem, signing_input, hashlib.sha256).digest()
    return (signing_input + b"." + base64.urlsafe_b64encode(signature).rstrip(b"=")).decode()


UNSIGNED = (
    base64.urlsafe_b64encode(b'{"alg":"none","typ":"JWT"}').rstrip(b"=").decode()
    + "."
    + base64.urlsafe_b64encode(json.dumps(claims("victim-42")).encode()).rstrip(b"=").decode()
    + "."
)
NOT_VALID = {
    "no token": None,
    "garbage": "not-a-token",
    "wrong secret": hs256(claims("victim-42"), secret="someone-elses-secret-" + "x" * 40),
    "expired": hs256(claims("victim-42", exp=int(time.time()) - 60)),
    "without exp": hs256({k: v for k, v in claims("victim-42").items() if k != "exp"}),
    "wrong aud": hs256(claims("victim-42", aud="another-assistant")),
    "without aud": hs256({k: v for k, v in claims("victim-42").items() if k != "aud"}),
    "wrong iss": hs256(claims("victim-42", iss="https://evil.example.com")),
    "without sub": hs256({k: v for k, v in claims("victim-42").items() if k != "sub"}),
    "alg none": UNSIGNED,
}


@pytest.mark.parametrize("attempt", NOT_VALID.values(), ids=NOT_VALID.keys())
async def test_a_request_without_a_valid_token_finds_public_documents_in_a_conversation_of_its_own(
    client: Client, conversations: RasaConversations, attempt: str | None
) -> None:
    victim, found = await client.say("victim-42", hs256(claims("victim-42")))
    assert found == PREMIUM | PUBLIC
    joined = [victim]
    for sender in ("victim-42", victim) * 3:
        conversation, found = await client.say(sender, attempt, metadata={"plan": "premium"})
        assert found == PUBLIC
        joined.append(conversation)
    assert conversations.user_texts(victim) == [QUESTION]
    assert victim == "user:victim-42"
    assert set(joined[1:]) == {"anonymous:victim-42", "anonymous:user:victim-42"}


async def test_the_streaming_webhook_follows_the_same_rules(client: Client) -> None:
    victim, _ = await client.say("victim-42", hs256(claims("victim-42")))
    body = {"sender": "victim-42", "message": QUESTION}
    streamed = await client.http.post(client.url + WEBHOOK + "?stream=true", json=body)
    answer = json.loads(json.loads(streamed.text.splitlines()[0])["text"])
    assert set(answer["sources"]) == PUBLIC
    assert answer["conversation"] == "anonymous:victim-42"


async def test_a_token_for_one_subject_never_joins_anothers_conversation(
    client: Client, conversations: RasaConversations
) -> None:
    bob, found = await client.say("bob", hs256(claims("bob", plan="free")))
    assert (bob, found) == ("user:bob", FREE | PUBLIC)
    alice, found = await client.say("bob", hs256(claims("alice")))
    assert (alice, found) == ("user:alice", PREMIUM | PUBLIC)
    assert conversations.user_texts("user:bob") == [QUESTION]
    assert await client.say("bob", hs256(claims("bob", plan="free"))) == (bob, FREE | PUBLIC)


async def test_a_downgrade_takes_effect_on_the_next_message(client: Client) -> None:
    assert await client.say("u", hs256(claims("u7"))) == ("user:u7", PREMIUM | PUBLIC)
    assert await client.say("u", hs256(claims("u7", plan="free"))) == ("user:u7", FREE | PUBLIC)
    assert await client.say("u", hs256(claims("u7", plan=None))) == ("user:u7", PUBLIC)
    assert (await client.say("u7"))[1] == PUBLIC
    assert await client.say("u", hs256(claims("u7", plan=[]))) == ("user:u7", PUBLIC)


async def test_the_body_cannot_claim_entitlements_or_a_user_id(
    client: Client, conversations: RasaConversations
) -> None:
    claimed = {"plan": "premium", "user_id": "victim-42", "locale": "de"}
    joined, found = await client.say("x", hs256(claims("u8", plan="free")), metadata=claimed)
    assert found == FREE | PUBLIC
    message = conversations.state(joined)["latest_message"]["metadata"]
    assert message == {"plan": "free", "user_id": "u8"}
    anonymous, found = await client.say("x", None, metadata=claimed)
    message = conversations.state(anonymous)["latest_message"]["metadata"]
    assert found == PUBLIC and message == {"plan": []}


async def test_only_the_client_metadata_keys_the_operator_lists_pass_from_the_body(
    hs256_credentials: dict[str, Any], conversations: RasaConversations
) -> None:
    """``client_metadata_keys: [locale]``: the assistant sees the body's ``locale`` on every
    message, with a token or without, and nothing else the body claims."""
    entry = {**hs256_credentials, "client_metadata_keys": ["locale"]}
    claimed = {"locale": "de", "page_url": "/pricing", "plan": "premium", "user_id": "victim-42"}
    channel = EntitledRestInput.from_credentials(entry)
    async with (
        serve(channel, conversations) as url,
        httpx.AsyncClient(timeout=HTTP_TIMEOUT_SECONDS) as http,
    ):
        client = Client(http, url)
        joined, found = await client.say("x", hs256(claims("u8", plan="free")), metadata=claimed)
        anonymous, public = await client.say("x", None, metadata=claimed)
        unclaimed, _ = await client.say("y", None, metadata={"page_url": "/pricing"})
    assert (found, public) == (FREE | PUBLIC, PUBLIC)
    latest = {
        conversation: conversations.state(conversation)["latest_message"]["metadata"]
        for conversation in (joined, anonymous, unclaimed)
    }
    assert latest == {
        "user:u8": {"locale": "de", "plan": "free", "user_id": "u8"},
        "anonymous:x": {"locale": "de", "plan": []},
        "anonymous:y": {"plan": []},
    }


async def test_session_metadata_written_through_rasas_http_api_grants_nothing_here(
    client: Client, conversations: RasaConversations
) -> None:
    """``POST /conversations/<id>/tracker/events`` with a ``slot`` event writes a mapping that the
    store trusts as recorded by Rasa; the channel's explicit keys leave it nothing to decide."""
    victim, _ = await client.say("v", hs256(claims("v9", plan="free")))
    written = {"event": "slot", "name": "session_started_metadata", "value": {"plan": "premium"}}
    conversations.trackers[victim].update(Event.from_parameters(written), DOMAIN)
    state = conversations.state(victim)
    assert ChannelMetadata.from_tracker_state(state).session == {"plan": "premium"}
    assert await client.say("v", hs256(claims("v9", plan="free"))) == (victim, FREE | PUBLIC)
    assert await client.say("v", hs256(claims("v9", plan=None))) == (victim, PUBLIC)


async def test_background_tasks_are_cancelled_only_by_their_conversations_token(
    client: Client, conversations: RasaConversations
) -> None:
    cancel = client.url + "/webhooks/entitled_rest/cancel_background_tasks/user:victim-42"
    assert (await client.http.post(cancel)).status_code == 401
    other = {"Authorization": f"Bearer {hs256(claims('mallory'))}"}
    assert (await client.http.post(cancel, headers=other)).status_code == 401
    own = {"Authorization": f"Bearer {hs256(claims('victim-42'))}"}
    assert (await client.http.post(cancel, headers=own)).json() == {"cancelled": True}
    assert conversations.cancelled == ["user:victim-42"]


async def test_with_anonymous_refuse_a_request_without_a_valid_token_is_refused(
    hs256_credentials: dict[str, Any], conversations: RasaConversations
) -> None:
    channel = EntitledRestInput.from_credentials({**hs256_credentials, "anonymous": "refuse"})
    async with (
        serve(channel, conversations) as url,
        httpx.AsyncClient(timeout=HTTP_TIMEOUT_SECONDS) as http,
    ):
        for attempt in (None, NOT_VALID["expired"]):
            headers = {"Authorization": f"Bearer {attempt}"} if attempt else {}
            body = {"sender": "victim-42", "message": QUESTION}
            refused = await http.post(url + WEBHOOK, json=body, headers=headers)
            assert refused.status_code == 401
        assert await Client(http, url).say("s", hs256(claims("s1"))) == (
            "user:s1",
            PREMIUM | PUBLIC,
        )
    assert list(conversations.trackers) == ["user:s1"]


# --- RS256 and key rotation ---------------------------------------------------------------------


def rsa_pair() -> tuple[rsa.RSAPrivateKey, bytes]:
    private = rsa.generate_private_key(public_exponent=65537, key_size=2048)
    public = private.public_key().public_bytes(
        serialization.Encoding.PEM, serialization.PublicFormat.SubjectPublicKeyInfo
    )
    return private, public


def rs256(private: rsa.RSAPrivateKey, subject: str, kid: str | None = None) -> str:
    headers = {"kid": kid} if kid else None
    return jwt.encode(claims(subject), private, algorithm="RS256", headers=headers)


async def test_rs256_keys_rotate_old_and_new_accepted_a_removed_key_refused(
    tmp_path: Path, monkeypatch: pytest.MonkeyPatch, conversations: RasaConversations
) -> None:
    old, old_public = rsa_pair()
    new, new_public = rsa_pair()
    (tmp_path / "new.pem").write_bytes(new_public)
    monkeypatch.setenv("OLD_PUBLIC_KEY", old_public.decode())
    new_key = {"id": "2026-11", "public_key_file": str(tmp_path / "new.pem")}
    old_key = {"id": "2026-05", "public_key_env": "OLD_PUBLIC_KEY"}
    checks = {"audience": AUDIENCE, "issuer": ISSUER}
    rotating = EntitledRestInput.from_credentials({"keys": [new_key, old_key], **checks})
    async with (
        serve(rotating, conversations) as url,
        httpx.AsyncClient(timeout=HTTP_TIMEOUT_SECONDS) as http,
    ):
        client = Client(http, url)
        for token in (rs256(old, "r1", "2026-05"), rs256(new, "r1", "2026-11"), rs256(new, "r1")):
            assert await client.say("r1", token) == ("user:r1", PREMIUM | PUBLIC)
        for forged in (
            rs256(old, "r1", "2026-11"),  # names the new key, signed with the old one
            rs256(old, "r1", "unknown"),
            forged_with_public_key(new_public, claims("r1")),
        ):
            joined, found = await client.say("r1", forged)
            assert joined.startswith("anonymous:") and found == PUBLIC
    rotated = EntitledRestInput.from_credentials({"keys": [new_key], **checks})
    async with (
        serve(rotated, conversations) as url,
        httpx.AsyncClient(timeout=HTTP_TIMEOUT_SECONDS) as http,
    ):
        client = Client(http, url)
        assert (await client.say("r1", rs256(old, "r1", "2026-05")))[1] == PUBLIC
        assert (await client.say("r1", rs256(old, "r1")))[1] == PUBLIC
        assert await client.say("r1", rs256(new, "r1", "2026-11")) == ("user:r1", PREMIUM | PUBLIC)
    assert conversations.user_texts("user:r1") == [QUESTION] * 4
