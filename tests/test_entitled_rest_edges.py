"""Over loopback HTTP: odd requests to the entitled channel never read beyond their own token.

The server, the knowledge base (premium, free and public documents) and the reply (the
conversation joined and the documents found) are those of ``tests/test_entitled_rest_channel.py``.
Here the requests are the ones a client can shape by hand: bodies whose fields have the wrong JSON
types or repeat a key, entitlement keys spelt to look like the configured one, tokens placed
anywhere but the ``Authorization: Bearer`` header, and two token holders posting with the same
body sender at the same time.
"""

from __future__ import annotations

import asyncio
import json
from typing import Any

import pytest

from tests.rasa_conversations import RasaConversations
from tests.test_entitled_rest_channel import (  # noqa: F401 (fixtures)
    FREE,
    PREMIUM,
    PUBLIC,
    QUESTION,
    WEBHOOK,
    Client,
    claims,
    client,
    conversations,
    hs256,
    hs256_credentials,
    store,
)


async def post(to: Client, body: bytes, headers: dict[str, str], query: str = "") -> Any:
    """The reply to a raw body: ``(conversation, sources)``, or the HTTP status when refused."""
    headers = {"Content-Type": "application/json", **headers}
    reply = await to.http.post(to.url + WEBHOOK + query, content=body, headers=headers)
    if reply.status_code != 200:
        return reply.status_code
    [message] = reply.json()
    answer = json.loads(message["text"])
    return answer["conversation"], set(answer["sources"])


def raw(**fields: Any) -> bytes:
    return json.dumps({"message": QUESTION, **fields}).encode()


LOOK_ALIKE_KEYS = {
    "Plan": "premium",
    "PLAN": "premium",
    "plan ": "premium",
    "\uff50\uff4c\uff41\uff4e": "premium",  # fullwidth "plan"
    "pla\u200bn": "premium",  # a zero-width space inside
    "plan\ud800": "premium",  # a lone surrogate, made U+FFFD when the store reads it
}
ODD_BODIES = {
    "sender an object": raw(sender={"sub": "victim-42"}),
    "sender a list": raw(sender=["user:victim-42"]),
    "sender a number": raw(sender=42),
    "sender true": raw(sender=True),
    "metadata a list": raw(sender="s", metadata=[["plan", "premium"]]),
    "metadata a string": raw(sender="s", metadata='{"plan": "premium"}'),
    "metadata a number": raw(sender="s", metadata=7),
    "look-alike keys": raw(sender="s", metadata=LOOK_ALIKE_KEYS),
    "nested plan": raw(sender="s", metadata={"metadata": {"plan": "premium"}}),
    "repeated metadata": (
        b'{"sender": "s", "message": "' + QUESTION.encode() + b'", '
        b'"metadata": {"plan": "premium"}, "metadata": {"plan": "premium", "user_id": "v"}}'
    ),
    "repeated plan": (
        b'{"sender": "s", "message": "' + QUESTION.encode() + b'", '
        b'"metadata": {"plan": "premium", "plan": "premium"}}'
    ),
    "repeated sender": (
        b'{"sender": "user:victim-42", "sender": "victim-42", "message": "'
        + QUESTION.encode()
        + b'"}'
    ),
}


@pytest.mark.parametrize("body", ODD_BODIES.values(), ids=ODD_BODIES.keys())
async def test_an_odd_body_reads_what_its_token_allows_and_no_more(
    client: Client,  # noqa: F811
    conversations: RasaConversations,  # noqa: F811
    body: bytes,
) -> None:
    victim, found = await client.say("victim-42", hs256(claims("victim-42")))
    assert found == PREMIUM | PUBLIC
    free = {"Authorization": f"Bearer {hs256(claims('f1', plan='free'))}"}
    assert await post(client, body, free) == ("user:f1", FREE | PUBLIC)
    anonymous = await post(client, body, {})
    assert anonymous[0].startswith("anonymous:") and anonymous[1] == PUBLIC
    assert conversations.user_texts(victim) == [QUESTION]


async def test_a_token_anywhere_but_the_bearer_header_grants_nothing(
    client: Client,  # noqa: F811
) -> None:
    token = hs256(claims("victim-42"))
    body = raw(sender="victim-42")
    elsewhere = [
        ({}, f"?token={token}"),
        ({}, f"?access_token={token}"),
        ({"X-Authorization": f"Bearer {token}"}, ""),
        ({"Authorization": f"Token {token}"}, ""),
        ({"Authorization": f"JWT {token}"}, ""),
        ({"Authorization": token}, ""),
        ({"Cookie": f"token={token}"}, ""),
    ]
    for headers, query in elsewhere:
        assert await post(client, body, headers, query) == ("anonymous:victim-42", PUBLIC)


async def test_two_token_holders_posting_the_same_sender_at_once_stay_apart(
    client: Client,  # noqa: F811
    conversations: RasaConversations,  # noqa: F811
) -> None:
    holders = {"alice": "premium", "bob": "free"}
    tokens = {name: hs256(claims(name, plan=plan)) for name, plan in holders.items()}
    anonymous: dict[str, str] = {}
    requests = [
        post(client, raw(sender="shared"), {"Authorization": f"Bearer {tokens[name]}"})
        for _ in range(6)
        for name in holders
    ]
    requests += [post(client, raw(sender="shared"), anonymous) for _ in range(4)]
    replies = await asyncio.gather(*requests)
    expected = {
        "user:alice": PREMIUM | PUBLIC,
        "user:bob": FREE | PUBLIC,
        "anonymous:shared": PUBLIC,
    }
    assert all(found == expected[conversation] for conversation, found in replies)
    assert [conversation for conversation, _ in replies] == ["user:alice", "user:bob"] * 6 + [
        "anonymous:shared"
    ] * 4
    for conversation in ("user:alice", "user:bob"):
        metadata = conversations.state(conversation)["latest_message"]["metadata"]
        assert metadata["user_id"] == conversation.removeprefix("user:")
